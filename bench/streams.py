"""A Kafka Streams 4.4 application's end-to-end throughput and rebalance time on mockbroker and on
Apache Kafka 4.4.0, side by side in one run (issue 26).

Each round starts one broker, runs bench/java/StreamsBench.java against it in a JVM of its own,
stops the broker, and does the same with the other (the order alternates per round, so that machine
noise and warm caches fall on each alike; bench/sidebyside.py's pattern):

* ``mockbroker``: ``mockbroker serve --port 0`` from this checkout (bench/brokers.py
  ``serve_mockbroker``);
* ``kafka``: a single-node KRaft Kafka ``KAFKA_VERSION`` (bench/brokers.py ``RealKafka``).

Both get the same group settings, those of docs/streams.md's test fixture: no initial rebalance
delay (``group.streams.initial.rebalance.delay.ms=0``), a 500 ms streams heartbeat interval (Kafka
needs ``group.streams.min.heartbeat.interval.ms`` lowered for it; mockbroker has no such floor) and
Kafka's assignment interval (1000 ms) on both.

The application is a word count under ``group.protocol=streams`` (a repartition topic and a
changelog, created by the broker): ``--records`` one-word records (1000 distinct words) are produced
to an input topic of ``--partitions`` partitions first; then, measured by the JVM:

* start: ``KafkaStreams.start()`` to the first output record (the group join, the broker creating
  the internal topics, the assignment, the tasks' initialisation);
* throughput: records / (first to last output record), read by a read_committed consumer until every
  word has its final count (the cache is on: Kafka Streams' default, so not every update is written);
* rebalance: a second instance of the application joins; its ``start()`` until both instances hold
  active tasks (the new target assignment, the revocation by the first, the handover).

Medians and ranges (min..max) over the rounds are printed, and the ratios mockbroker/kafka of the
medians (below 1: mockbroker is quicker; for records/s above 1: mockbroker is faster).
``--guarantee exactly_once_v2`` runs the same under transactions.  ``--quick``: one round, mockbroker
only, 2000 records.  Without java/mvn, or when Maven cannot resolve Kafka, Kafka's column says why.
Out of CI.

  python bench/streams.py [--rounds 3] [--records 20000] [--partitions 4]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import RealKafka, Unavailable, kafka_classpath, serve_mockbroker, tail  # bench/brokers.py

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "bench" / "java" / "StreamsBench.java"
CLIENT_CP = ROOT / "tests" / "integration" / "java" / "cp.txt"  # kafka-streams 4.4.0 (toolchain_maven)
JVM_TIMEOUT_S = 300
GROUP_CONFIG = {"group.initial.rebalance.delay.ms": "0", "group.streams.initial.rebalance.delay.ms": "0",
                "group.streams.heartbeat.interval.ms": "500"}
KAFKA_ONLY = {"group.streams.min.heartbeat.interval.ms": "500"}
ROWS = [("start (ms)", "start_ms"), ("throughput (records/s)", "rate"), ("rebalance (ms)", "rebalance_ms")]


def compile_bench(out: Path) -> str:
    """The classpath to run StreamsBench (compiled into ``out``)."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        raise Unavailable("needs java and javac on PATH")
    if not CLIENT_CP.is_file():
        raise Unavailable(f"{CLIENT_CP} missing: bash -c 'source scripts/toolchains.sh; toolchain_maven'")
    cp = CLIENT_CP.read_text().strip()
    r = subprocess.run(["javac", "-cp", cp, "-d", str(out), str(SOURCE)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"javac failed:\n{r.stdout}\n{r.stderr}")
    return f"{cp}:{out}"


def run_app(cp: str, bootstrap: str, args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-streams-") as state:
        r = subprocess.run(["java", "-Xmx512m", "-cp", cp, "StreamsBench", bootstrap, str(args.records), state,
                            str(args.partitions), args.guarantee], capture_output=True, text=True,
                           timeout=JVM_TIMEOUT_S, stdin=subprocess.DEVNULL)
    lines = [line for line in r.stdout.splitlines() if line.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"StreamsBench exited {r.returncode}:\n{tail(r.stdout)}\n{tail(r.stderr)}")
    res = json.loads(lines[-1].split(" ", 1)[1])
    if "error" in res:
        raise RuntimeError(res["error"])
    res["rate"] = res["records"] / max(res["process_ms"], 1.0) * 1000.0
    return res


def on_mockbroker(cp: str, args: argparse.Namespace) -> dict[str, float]:
    with serve_mockbroker([f"{k}={v}" for k, v in GROUP_CONFIG.items()]) as (_proc, bootstrap):
        return run_app(cp, bootstrap, args)


def on_kafka(cp: str, args: argparse.Namespace, kafka_cp: str) -> dict[str, float]:
    kafka = RealKafka(kafka_cp, extra_props={**GROUP_CONFIG, **KAFKA_ONLY})
    try:
        kafka.start()
        return run_app(cp, kafka.bootstrap, args)
    finally:
        kafka.stop()


def fmt(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}..{max(values):,.0f})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--guarantee", default="at_least_once", choices=["at_least_once", "exactly_once_v2"])
    ap.add_argument("--quick", action="store_true", help="one round, mockbroker only, 2000 records")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.records = 1, 2000
    with tempfile.TemporaryDirectory(prefix="bench-streams-classes-") as classes:
        cp = compile_bench(Path(classes))
        brokers = ["mockbroker"]
        kafka_cp, why = "", ""
        if not args.quick:
            try:
                kafka_cp = kafka_classpath()
                brokers.append("kafka")
            except Unavailable as e:
                why = str(e)
        results: dict[str, list[dict[str, float]]] = {b: [] for b in ["mockbroker", "kafka"]}
        for rnd in range(args.rounds):
            order = brokers if rnd % 2 == 0 else brokers[::-1]
            for name in order:
                try:
                    res = on_mockbroker(cp, args) if name == "mockbroker" else on_kafka(cp, args, kafka_cp)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print(f"round {rnd + 1} {name}: FAILED {e}", flush=True)
                    continue
                results[name].append(res)
                print(f"round {rnd + 1} {name}: start {res['start_ms']:.0f} ms, {res['rate']:,.0f} records/s, "
                      f"rebalance {res['rebalance_ms']} ms", flush=True)
    print(f"\nKafka Streams 4.4 word count, group.protocol=streams, {args.guarantee}, {args.records:,} records, "
          f"{args.partitions} partitions; medians (min..max) over {args.rounds} round(s)")
    print(f"{'':24} {'mockbroker':>24} {'kafka 4.4.0':>24} {'mockbroker/kafka':>17}")
    for label, key in ROWS:
        m = [r[key] for r in results["mockbroker"] if r.get(key) is not None]
        k = [r[key] for r in results["kafka"] if r.get(key) is not None]
        ratio = f"{statistics.median(m) / statistics.median(k):.2f}" if m and k else "-"
        print(f"{label:24} {fmt(m):>24} {fmt(k) if k else (why and 'unavailable') or '-':>24} {ratio:>17}")
    if why:
        print(f"kafka: {why.splitlines()[0]}")
    return 0 if results["mockbroker"] else 1


if __name__ == "__main__":
    sys.exit(main())
