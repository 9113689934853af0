"""``python -m tests.differential [--full] [--seed N] [--per-version N] [--keys 0,1] [--only K:V:I]
[--kafka HOST:PORT --mockbroker HOST:PORT | --release 4.1]``

Without addresses it starts both brokers itself: a real Kafka 4.4.0 (bench/brokers.py's RealKafka,
one KRaft node) and ``mockbroker serve`` from this checkout, both configured as ``BROKER_CONFIG``
says.  ``--full`` sends ``--per-version`` (50) requests for every version of every key both
advertise; without it, the slice CI runs: the oldest, the newest and one seeded version between
of each key, ``SLICE_PER_VERSION`` requests each.  Exit status 0 when every difference found is
one docs/differences.md lists.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator

from .run import Differential, main_report

SLICE_PER_VERSION = 8
# Both brokers: node 1 (Kafka's first node id in bench/brokers.py), one partition by default, no
# wait for a new classic group's first rebalance (Kafka's group.initial.rebalance.delay.ms: the
# side-by-side brokers set it to 0), Kafka's defaults for the rest.
BROKER_CONFIG = {"node.id": "1", "num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
                 "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
                 "transaction.state.log.min.isr": "1"}


@contextlib.contextmanager
def started_brokers(release: str | None = None) -> Iterator[tuple[str, str]]:
    """A real Kafka (4.4.0, or the recorded ``release`` line: "4.1") and a mockbroker as that release."""
    from tests.integration.realkafka import brokers  # noqa: PLC0415 - only when starting

    kafka = brokers.RealKafka(nodes=1, version=release or brokers.KAFKA_VERSION, jvm_opts=brokers.JVM_OPTS)
    kafka.start()
    config = {**BROKER_CONFIG, **({"mock.kafka.version": release} if release else {})}
    try:
        with brokers.serve_mockbroker([f"{k}={v}" for k, v in config.items()]) as (_proc, bootstrap):
            yield kafka.bootstrap, bootstrap
    finally:
        kafka.stop(kill=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.differential", description=__doc__.split("\n\n")[0])
    p.add_argument("--kafka", help="a running Kafka 4.4.0 (HOST:PORT); started when absent")
    p.add_argument("--mockbroker", help="a running mockbroker (HOST:PORT); started when absent")
    p.add_argument("--full", action="store_true", help="every version, --per-version requests each")
    p.add_argument("--per-version", type=int, default=None, help="requests per (key, version) (default: 50 "
                   f"with --full, {SLICE_PER_VERSION} otherwise)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keys", help="only these API keys (comma-separated)")
    p.add_argument("--only", help="KEY:VERSION:CASE: reproduce one case alone")
    p.add_argument("--release", help="start Kafka of this recorded release line (e.g. 4.1) and mockbroker with "
                   "mock.kafka.version set to it, instead of 4.4")
    p.add_argument("--quiet", action="store_true", help="only the differences and the table")
    p.add_argument("--verbose", action="store_true", help="every place each answer differs, and both answers")
    args = p.parse_args(argv)
    per_version = args.per_version or (50 if args.full or args.only else SLICE_PER_VERSION)
    only = tuple(int(x) for x in args.only.split(":")) if args.only else None
    keys = [int(k) for k in args.keys.split(",")] if args.keys else None

    def run(kafka: str, mock: str) -> int:
        started = time.monotonic()
        d = Differential(kafka, mock, seed=args.seed, per_version=per_version, keys=keys,
                         only=only, versions="all" if args.full or only else "slice",  # type: ignore[arg-type]
                         log=(lambda s: None) if args.quiet else print)
        d.run()
        rc = main_report(d, verbose=args.verbose)
        print(f"{len(d.results)} requests in {time.monotonic() - started:.0f} s", file=sys.stderr)
        return rc

    if args.kafka and args.mockbroker:
        return run(args.kafka, args.mockbroker)
    with started_brokers(args.release) as (kafka, mock):
        return run(args.kafka or kafka, args.mockbroker or mock)


if __name__ == "__main__":
    sys.exit(main())
