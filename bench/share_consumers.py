"""Several share consumers (KIP-932) side by side: how long a share group takes to consume, on mockbroker
and on a real Kafka 4.4.0 in one run.

The scenarios and their shape are those of librdkafka's share consumer concurrency test
(tests/0174-share_consumer_concurrency.c), with confluent-kafka's ``ShareConsumer`` (librdkafka's share
consumer) and ``Producer``:

* the topics are created, the C consumers created and subscribed (the group's share.auto.offset.reset set
  to earliest after the first, with IncrementalAlterConfigs on the GROUP resource), then 2 s pass;
* the P producers start, one thread each, each producing its share of the records: one record to each
  partition of each topic in turn, then ``flush(1.0)``, until its count is produced;
* meanwhile this thread polls the consumers in turn, ``poll(1.0)`` each (librdkafka's
  ``rd_kafka_share_consume_batch`` with a 1 s timeout), counting the records (with explicit
  acknowledgement each one is acknowledged ACCEPT, sent with that consumer's next poll), until every record
  was consumed.

The figure is the time from the subscriptions to the poll that returned the last record (the members after
it in that round are not polled: they would only wait out their 1 s each).  Every broker config is the
default on both brokers (bench/brokers.py's RealKafka sets group.initial.rebalance.delay.ms=0, which share
groups do not read); the only group config set is share.auto.offset.reset.  Also printed per run: when the
producers finished, the first record, records delivered more than once, how the records were spread
over the members, and which member got offset 0 of the first partition.  With one partition that decides
most of the figure on either broker: the first member whose assignment arrives (librdkafka's timing)
acquires offsets 0-499; the other members' acknowledgements cannot move the share-partition start offset
past it, so with share.partition.max.record.locks 2000 taken by 4 x 500 records the next records are
acquired only at that member's next poll, up to three 1 s polls later: in scenario 2 a run is about 4 s
longer with member 2 or 3 holding offset 0 than with member 0, on Kafka too (the same SharePartition rules).

Each round runs every scenario on mockbroker (``mockbroker serve`` from this checkout), with
``--baseline DIR`` on another checkout too (before and after a change, in the same run), then on a fresh
single-node Kafka 4.4.0 (the order of the brokers alternates by round), after one warm-up scenario on each
(a broker's first share group creates its internal state); the table gives the median over the rounds, the
ratio mockbroker / Kafka, and the broker's CPU time (user + system, the whole process: under a loaded
machine the steadier figure).

Run: ``.venv/bin/python bench/share_consumers.py [--rounds R] [--only mockbroker|kafka] [--scenarios 1,3]
[--baseline DIR]`` (one round: about 4 minutes per broker).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402

JOIN_WAIT_S = 2.0  # the test's rd_sleep(2) between the subscriptions and the producers
POLL_S = 1.0  # rd_kafka_share_consume_batch(..., 1000, ...)
DEADLINE_S = 180.0


@dataclass(frozen=True)
class Scenario:
    name: str
    producers: int
    consumers: int
    partitions: tuple[int, ...]  # per topic
    per_partition: int
    explicit: bool = False

    @property
    def records(self) -> int:
        return sum(self.partitions) * self.per_partition


SCENARIOS = [
    Scenario("1 producer, 1 consumer, 1 partition, 5,000", 1, 1, (1,), 5000),
    Scenario("1 producer, 4 consumers, 1 partition, 5,000", 1, 4, (1,), 5000),
    Scenario("2 producers, 6 consumers, 2 partitions, 30,000", 2, 6, (2,), 15000),
    Scenario("2 producers, 8 consumers, 4 partitions, 40,000", 2, 8, (4,), 10000),
    Scenario("explicit acks, 4 producers, 4 consumers, 2x2 partitions, 20,000", 4, 4, (2, 2), 5000,
             explicit=True),
    Scenario("20,000 records, 4 producers, 4 consumers, 4 partitions", 4, 4, (4,), 5000),
]
WARM_UP = Scenario("warm-up", 1, 1, (1,), 100)


@dataclass
class Outcome:
    seconds: float
    first_s: float
    produced_s: float
    duplicates: int
    per_member: list[int] = field(default_factory=list)
    broker_cpu_s: float = float("nan")
    front: int = -1  # the member that got offset 0 of the first partition


def create(bootstrap: str, topics: list[tuple[str, int]], group: str) -> None:
    """The topics (every partition with a leader, as test_create_topic_wait_exists) and the group's
    share.auto.offset.reset=earliest (test_share_set_auto_offset_reset)."""
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic,
                                       ResourceType)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, n, 1) for t, n in topics]).values():
        f.result(30)
    deadline = time.monotonic() + 30
    for t, n in topics:
        while True:
            md = admin.list_topics(t, timeout=10).topics.get(t)
            if md is not None and md.error is None and len(md.partitions) == n and \
                    all(p.leader >= 0 for p in md.partitions.values()):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {t} has no leaders after 30 s")
            time.sleep(0.1)
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    for f in admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group,
                                                             incremental_configs=[entry])]).values():
        f.result(30)


def produce(bootstrap: str, topics: list[tuple[str, int]], j: int, n: int) -> None:
    """One producer, in a process of its own (librdkafka's test runs its producers in C threads, which no
    GIL ties to the thread polling the consumers): once told to go (a line on stdin), one record to each
    partition of each topic in turn, then flush(1.0), until ``n`` are produced; prints the wall-clock
    time it finished."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    p.list_topics(timeout=10)  # connected and ready before the go
    print("ready", flush=True)
    sys.stdin.readline()
    done = 0
    while done < n:
        for t, parts in topics:
            for part in range(parts):
                if done >= n:
                    break
                p.produce(t, b"prod%d-msg%d" % (j, done), partition=part)
                done += 1
        p.flush(1.0)
    if p.flush(10) != 0:
        raise SystemExit(f"producer {j}: records left unsent")
    print(time.time(), flush=True)


def start_producer(bootstrap: str, topics: list[tuple[str, int]], j: int, n: int) -> subprocess.Popen[str]:
    spec = ",".join(f"{t}:{parts}" for t, parts in topics)
    proc = subprocess.Popen([sys.executable, __file__, "--produce", bootstrap, spec, str(j), str(n)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError(f"producer {j} did not start")
    return proc


def run(bootstrap: str, s: Scenario, name: str) -> Outcome:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    topics = [(f"{name}-t{i}", n) for i, n in enumerate(s.partitions)]
    create(bootstrap, topics, name)
    counts = [s.records // s.producers + (s.records % s.producers if j == s.producers - 1 else 0)
              for j in range(s.producers)]
    producers = [start_producer(bootstrap, topics, j, n) for j, n in enumerate(counts)]
    conf = {"bootstrap.servers": bootstrap, "group.id": name}
    if s.explicit:
        conf["share.acknowledgement.mode"] = "explicit"
    consumers = [ShareConsumer(conf) for _ in range(s.consumers)]
    produced: list[float] = []
    errors: list[str] = []
    seen: set[tuple[str, int, int]] = set()
    per_member = [0] * s.consumers
    duplicates = 0
    first = float("nan")
    front = -1
    try:
        t0, wall0 = time.perf_counter(), time.time()
        for c in consumers:
            c.subscribe([t for t, _ in topics])
        time.sleep(JOIN_WAIT_S)
        for proc in producers:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        deadline = time.monotonic() + DEADLINE_S
        last = float("nan")
        while len(seen) < s.records and time.monotonic() < deadline:
            for i, c in enumerate(consumers):  # round-robin, as the test's consume_batch(c, 1000 ms) loop
                if len(seen) >= s.records:
                    break  # the last record is in: the other members' polls would only wait out POLL_S
                for m in c.poll(POLL_S):
                    if m.error() is not None:
                        errors.append(str(m.error()))
                        continue
                    key = (m.topic(), m.partition(), m.offset())
                    if key == (topics[0][0], 0, 0):
                        front = i
                    if key in seen:
                        duplicates += 1
                    else:
                        seen.add(key)
                        per_member[i] += 1
                    if s.explicit:
                        c.acknowledge(m, AcknowledgeType.ACCEPT)
                if first != first and seen:
                    first = time.perf_counter() - t0
                if last != last and len(seen) >= s.records:
                    last = time.perf_counter() - t0
        seconds = last
    finally:
        for proc in producers:
            try:
                out, _ = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            if proc.returncode != 0 or not out.strip():
                errors.append(f"producer exited {proc.returncode}")
            else:
                produced.append(float(out.split()[-1]) - wall0)
        closers = [threading.Thread(target=c.close) for c in consumers]
        for t in closers:
            t.start()
        for t in closers:
            t.join(60)
    if errors:
        raise RuntimeError(f"{s.name}: {errors[:5]}")
    return Outcome(seconds, first, max(produced, default=float("nan")), duplicates, per_member, front=front)


def cpu_seconds(pid: int) -> float:
    """The user + system CPU time of process ``pid`` so far (the broker's: what it spent, whatever else ran)."""
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def run_all(broker: str, bootstrap: str, pid: int, scenarios: list[tuple[int, Scenario]], rnd: int,
            results: dict[tuple[str, int], list[Outcome]]) -> None:
    run(bootstrap, WARM_UP, f"share-{rnd}-warm")
    for idx, s in scenarios:
        cpu0 = cpu_seconds(pid)
        o = run(bootstrap, s, f"share-{rnd}-{idx}")
        o.broker_cpu_s = cpu_seconds(pid) - cpu0
        results.setdefault((broker, idx), []).append(o)
        print(f"  round {rnd} {broker:10} {idx}. {s.name:66} {o.seconds:6.2f} s  (produced {o.produced_s:5.2f} s, "
              f"first record {o.first_s:5.2f} s, broker CPU {o.broker_cpu_s:5.2f} s, {o.duplicates} twice, "
              f"per member {o.per_member}, offset 0 to member {o.front})", flush=True)


def on_mockbroker(name: str, scenarios: list[tuple[int, Scenario]], rnd: int,
                  results: dict[tuple[str, int], list[Outcome]], config: list[str], checkout: Path) -> None:
    with brokers.serve_mockbroker(config, cwd=checkout) as (proc, bootstrap):
        run_all(name, bootstrap, proc.pid, scenarios, rnd, results)


def on_kafka(cp: str, scenarios: list[tuple[int, Scenario]], rnd: int,
             results: dict[tuple[str, int], list[Outcome]]) -> None:
    k = brokers.RealKafka(cp)
    try:
        k.start()
        assert k.proc is not None
        run_all("kafka", k.bootstrap, k.proc.pid, scenarios, rnd, results)
    finally:
        k.stop(kill=True)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--produce":
        _, _, bootstrap, spec, j, n = sys.argv
        topics = [(t, int(parts)) for t, parts in (x.rsplit(":", 1) for x in spec.split(","))]
        produce(bootstrap, topics, int(j), int(n))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--only", choices=["mockbroker", "kafka"])
    ap.add_argument("--scenarios", help="comma-separated scenario numbers (1-based; default all)")
    ap.add_argument("-c", dest="config", action="append", default=[], help="a mockbroker config key=value")
    ap.add_argument("--baseline", type=Path,
                    help="another mockbroker checkout (e.g. a `git worktree` of main), served side by side as 'baseline'")
    args = ap.parse_args()
    chosen = [int(x) for x in args.scenarios.split(",")] if args.scenarios else range(1, len(SCENARIOS) + 1)
    scenarios = [(i, SCENARIOS[i - 1]) for i in chosen]
    cp = None
    if args.only != "mockbroker":
        try:
            cp = brokers.kafka_classpath()
        except brokers.Unavailable as e:
            print(f"Kafka unavailable ({e}): mockbroker only")
    results: dict[tuple[str, int], list[Outcome]] = {}
    names = ["mockbroker"] * (args.only != "kafka") + ["baseline"] * (args.baseline is not None) + \
        ["kafka"] * (cp is not None and args.only != "mockbroker")
    for rnd in range(1, args.rounds + 1):
        for broker in names if rnd % 2 else names[::-1]:
            if broker == "kafka":
                assert cp is not None
                on_kafka(cp, scenarios, rnd, results)
            else:
                on_mockbroker(broker, scenarios, rnd, results, args.config,
                              brokers.ROOT if broker == "mockbroker" else args.baseline)
    print()
    base = args.baseline is not None
    print(f"| scenario (median of {args.rounds} round(s)) | mockbroker s |" + (" baseline s |" if base else "") +
          " Kafka 4.4.0 s | mockbroker / Kafka |" + (" baseline / Kafka |" if base else "") +
          " broker CPU s, mockbroker" + (" / baseline" if base else "") + " / Kafka |")
    print("|---" * (5 + 2 * base) + "|")
    for idx, s in scenarios:
        got = {n: results.get((n, idx), []) for n in ("mockbroker", "baseline", "kafka")}
        t = {n: median([o.seconds for o in v]) for n, v in got.items()}
        cpu = {n: median([o.broker_cpu_s for o in v]) for n, v in got.items()}
        row = [f"{idx}. {s.name}", f"{t['mockbroker']:.1f}"] + ([f"{t['baseline']:.1f}"] if base else []) + \
            [f"{t['kafka']:.1f}", f"{t['mockbroker'] / t['kafka']:.2f}"] + \
            ([f"{t['baseline'] / t['kafka']:.2f}"] if base else []) + \
            [" / ".join(f"{cpu[n]:.1f}" for n in ("mockbroker", "baseline", "kafka") if n != "baseline" or base)]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
