"""Transactional produce throughput with confluent-kafka (librdkafka): mockbroker and a real Apache Kafka 4.4.0.

Per broker, three producers in turn, each on a topic of its own (``--partitions``, default 1),
all with acks=all, enable.idempotence=true, linger.ms=5, no compression and RECORD_BYTES-byte
values (an 8-byte record number, then padding; no key):

* ``idempotent``: produce ``--records`` records, then ``flush()``; the timed span is first
  ``produce()`` -> end of ``flush()``.  No commits: the commit columns are empty.
* ``flush/100``: the same producer, ``flush()`` after every 100 records: each 100 waits for its
  acknowledgement as a transaction's commit does, without the transaction protocol.  Its "commit"
  latency is that ``flush()``'s.  ``transactional / flush/100`` is then the cost of the protocol
  itself (AddPartitionsToTxn, EndTxn, the markers written and the LSO they move), and
  ``transactional / idempotent`` that cost plus the loss of pipelining across transactions.
* ``transactional``: ``transactional.id`` set; ``init_transactions()`` (timed apart, in the
  ``init ms`` column), then ``begin_transaction()``, 100 ``produce()``, ``commit_transaction()``
  until ``--records``; commit latency is ``commit_transaction()``'s wall time (it flushes the 100
  records first, as Kafka's producer does).  After the timed transactions, one transaction of
  100 records is aborted (untimed) so that the verification sees an aborted transaction too.

Requests per transaction: librdkafka's statistics (``statistics.interval.ms``, the per-broker
``req`` counters; on for all three producers so their configurations differ only as described)
count the AddPartitionsToTxn, Produce and EndTxn requests the transactional producer sent while
timed.  More than one AddPartitionsToTxn per transaction means retries: Kafka's
TransactionCoordinator.handleAddPartitionsToTransaction answers CONCURRENT_TRANSACTIONS while the
previous transaction is still PrepareCommit, i.e. its markers are not all written yet (EndTxn is
answered once PrepareCommit is in the transaction log, before the markers;
core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala), and librdkafka
backs off and sends it again.

Warm-up: each broker first gets ``--warmup-runs`` untimed rounds of the three producers (default
1; a cold Kafka JVM ran the transactional phase about twice as slowly in its first round as in its
third, here), and every producer first sends ``--warmup`` records (default 1,000, in transactions
of 100 for the transactional one) untimed, so that its metadata and coordinator lookups are out of
the measurement.  All of them count in the verification.  Each timed phase stops early at ``--time-limit``
seconds (at a transaction boundary); the table then shows the records actually sent.

``--runs N`` repeats the three producers N times on each broker (one broker process per broker for
all runs, the order of the producers turning by one each run, the transactional producer's
``transactional.id`` the same every run): the table shows the medians of the runs, and the commit
latency quantiles of all their commits together.  A phase of 20,000 records lasts well under a
second on mockbroker, so one run on a shared machine is noisy: the pipelined ``idempotent`` row most.

Verification (the run exits 1 and says why when it fails): a read_committed consumer reads every
topic from the start and must see exactly the committed (or acknowledged) record numbers, each
once, and none of the aborted transaction's; a read_uncommitted consumer on the transactional
topic must see the committed and the aborted records.

mockbroker runs as ``mockbroker serve`` in a subprocess (bench/brokers.py ``serve_mockbroker``),
so that, like Kafka's JVM, it does not share this process's interpreter with the client; Kafka is
bench/brokers.py's ``RealKafka`` (single-node KRaft broker+controller; its server.properties
there: Kafka's defaults but for the replication factors of one node, __transaction_state's among them).  The brokers run one after the other, never at once.  The
client and the broker share the machine's cores.

Usage: .venv/bin/python bench/transactions.py [--records 20000] [--brokers mock,kafka] [--runs 1]
       [--warmup-runs 1] [--partitions 1] [--warmup 1000] [--time-limit 60]
Without java or mvn, or when Maven cannot resolve Kafka, it says why and measures mockbroker only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from brokers import (  # bench/brokers.py
    RealKafka,
    Unavailable,
    kafka_classpath,
    serve_mockbroker,
)
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaException,
    Producer,
    TopicPartition,
)

RECORDS = 20_000
RECORD_BYTES = 1024
TXN_RECORDS = 100
WARMUP = 1_000
WARMUP_RUNS = 1
TIME_LIMIT_S = 60.0
INIT_TIMEOUT_S = 60.0
VERIFY_TIMEOUT_S = 60.0
MODES = ("idempotent", "flush/100", "transactional")
TOPICS = {"idempotent": "txn-bench-idempotent", "flush/100": "txn-bench-flush100",
          "transactional": "txn-bench-transactional"}
BROKER_LABELS = {"mock": "mockbroker", "kafka": "Kafka 4.4.0"}
MIB = 2**20
STATS_INTERVAL_MS = 100


@dataclass
class Result:
    broker: str
    mode: str
    records: int = 0  # timed records acknowledged (or committed)
    seconds: float = 0.0
    commits_ms: list[float] = field(default_factory=list)  # commit_transaction() or flush() latencies
    init_ms: float | None = None
    committed: set[int] = field(default_factory=set)  # record numbers that must be readable
    aborted: set[int] = field(default_factory=set)  # record numbers of the aborted transaction
    requests: dict[str, int] = field(default_factory=dict)  # transactional: requests sent while timed, by API
    warmup: bool = False  # a --warmup-runs round: verified, not reported


def value(n: int, pad: bytes = b"x" * (RECORD_BYTES - 8)) -> bytes:
    return struct.pack(">Q", n) + pad


def producer_config(bootstrap: str, transactional_id: str | None, errors: list, stats: list) -> dict:
    config = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
        "compression.type": "none",
        "delivery.report.only.error": True,
        "on_delivery": lambda err, _msg: errors.append(err),
        # librdkafka's statistics (JSON, served by poll()): the requests it sent, by API (see request_counts)
        "statistics.interval.ms": STATS_INTERVAL_MS,
        "stats_cb": stats.append,
    }
    if transactional_id is not None:
        config["transactional.id"] = transactional_id
    return config


def send(producer: Producer, topic: str, partitions: int, n: int) -> None:
    while True:
        try:
            producer.produce(topic, value(n), partition=n % partitions)
            return
        except BufferError:  # local queue full: let librdkafka send
            producer.poll(0.001)


def run_idempotent(bootstrap: str, partitions: int, records: int, warmup: int, time_limit: float,
                   res: Result, every: int | None, base: int) -> None:
    """The non-transactional producer: flush at the end (``every`` None) or after every ``every`` records.
    Record numbers from ``base`` on."""
    errors: list = []
    p = Producer(producer_config(bootstrap, None, errors, []))
    topic = TOPICS[res.mode]
    for n in range(base, base + warmup):
        send(p, topic, partitions, n)
    if p.flush(INIT_TIMEOUT_S):
        raise RuntimeError(f"{res.broker} {res.mode}: warm-up records not acknowledged in {INIT_TIMEOUT_S:.0f}s")
    n = base + warmup
    t0 = time.perf_counter()
    deadline = t0 + time_limit
    while n < base + warmup + records and time.perf_counter() < deadline:
        chunk = min(every or 1000, base + warmup + records - n)  # the deadline is looked at every 1000 at least
        for _ in range(chunk):
            send(p, topic, partitions, n)
            n += 1
        if every is not None:
            c0 = time.perf_counter()
            left = p.flush(max(deadline - c0, 1.0))
            res.commits_ms.append((time.perf_counter() - c0) * 1e3)
            if left:
                break
    left = p.flush(max(deadline - time.perf_counter(), 1.0))
    res.seconds = time.perf_counter() - t0
    if errors or left:
        raise RuntimeError(f"{res.broker} {res.mode}: {len(errors)} delivery errors (first: {errors[:1]}), "
                           f"{left} records not acknowledged")
    res.records = n - base - warmup
    res.committed = set(range(base, n))


def request_counts(p: Producer, stats: list[str]) -> dict[str, int]:
    """Requests the producer sent so far, by API name, summed over brokers: from the first statistics
    librdkafka emits after this call (so none of what was sent before is missing)."""
    while p.poll(0):  # serve what is queued: the statistics wanted are those emitted from now on
        pass
    seen = len(stats)
    deadline = time.monotonic() + 5 * STATS_INTERVAL_MS / 1000
    while len(stats) == seen and time.monotonic() < deadline:
        p.poll(STATS_INTERVAL_MS / 1000 / 4)
    if len(stats) == seen:
        raise RuntimeError("librdkafka emitted no statistics")
    counts: dict[str, int] = {}
    for broker in json.loads(stats[-1])["brokers"].values():
        for api, n in (broker.get("req") or {}).items():
            counts[api] = counts.get(api, 0) + n
    return counts


def run_transactional(bootstrap: str, partitions: int, records: int, warmup: int, time_limit: float,
                      res: Result, base: int) -> None:
    """The transactional producer, record numbers from ``base`` on."""
    errors: list = []
    stats: list[str] = []
    p = Producer(producer_config(bootstrap, f"txn-bench-{res.broker}", errors, stats))
    topic = TOPICS[res.mode]
    t = time.perf_counter()
    p.init_transactions(INIT_TIMEOUT_S)
    res.init_ms = (time.perf_counter() - t) * 1e3

    def transaction(first: int, count: int, commit: bool = True) -> float:
        """One transaction of records ``first`` .. ``first + count - 1``: the commit's (or abort's) ms."""
        p.begin_transaction()
        for n in range(first, first + count):
            send(p, topic, partitions, n)
        if not commit:
            p.flush()  # the records are in the log before the abort: read_committed must skip them
        c0 = time.perf_counter()
        if commit:
            p.commit_transaction()
        else:
            p.abort_transaction()
        return (time.perf_counter() - c0) * 1e3

    n = base
    while n < base + warmup:
        count = min(TXN_RECORDS, base + warmup - n)
        transaction(n, count)
        n += count
    before = request_counts(p, stats)
    t0 = time.perf_counter()
    deadline = t0 + time_limit
    while n < base + warmup + records and time.perf_counter() < deadline:
        count = min(TXN_RECORDS, base + warmup + records - n)
        res.commits_ms.append(transaction(n, count))
        n += count
    res.seconds = time.perf_counter() - t0
    after = request_counts(p, stats)
    res.requests = {api: after.get(api, 0) - before.get(api, 0) for api in after}
    res.records = n - base - warmup
    res.committed = set(range(base, n))
    transaction(n, TXN_RECORDS, commit=False)
    res.aborted = set(range(n, n + TXN_RECORDS))
    if errors:
        raise RuntimeError(f"{res.broker} transactional: {len(errors)} delivery errors (first: {errors[:1]})")
    p.flush(10)


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str, expect: int) -> list[int]:
    """Every record number of ``topic`` from the start, read with ``isolation.level=isolation``: until
    ``expect`` came and then a quiet second (to catch anything extra), or VERIFY_TIMEOUT_S."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"txn-bench-verify-{topic}-{isolation}",
                  "enable.auto.commit": False, "isolation.level": isolation})
    got: list[int] = []
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline = time.monotonic() + VERIFY_TIMEOUT_S
        while time.monotonic() < deadline:
            msgs = c.consume(num_messages=10_000, timeout=1.0)
            for m in msgs:
                if m.error():
                    raise KafkaException(m.error())
                got.append(struct.unpack(">Q", m.value()[:8])[0])
            if not msgs and len(got) >= expect:
                break
    finally:
        c.close()
    return got


def check(label: str, got: list[int], want: set[int]) -> str | None:
    """None when ``got`` is exactly ``want``, each once; else what is wrong."""
    seen = set(got)
    dups = len(got) - len(seen)
    missing, extra = want - seen, seen - want
    if not (dups or missing or extra):
        return None
    return (f"{label}: read {len(got)} records, expected {len(want)}: {len(missing)} missing "
            f"(e.g. {sorted(missing)[:3]}), {len(extra)} unexpected (e.g. {sorted(extra)[:3]}), {dups} duplicates")


def verify(bootstrap: str, partitions: int, runs: list[Result]) -> tuple[list[str], str]:
    """(what is wrong, what was read) on the topic of ``runs`` (one mode's runs on one broker)."""
    label = f"{runs[0].broker} {runs[0].mode}"
    topic = TOPICS[runs[0].mode]
    committed = set().union(*(r.committed for r in runs))
    aborted = set().union(*(r.aborted for r in runs))
    problems = []
    got = read_all(bootstrap, topic, partitions, "read_committed", len(committed))
    if (p := check(f"{label} read_committed", got, committed)) is not None:
        problems.append(p)
    read = f"read_committed {len(got)}"
    if aborted:
        everything = committed | aborted
        got = read_all(bootstrap, topic, partitions, "read_uncommitted", len(everything))
        if (p := check(f"{label} read_uncommitted", got, everything)) is not None:
            problems.append(p)
        read += f", read_uncommitted {len(got)}"
    return problems, read


def run_broker(broker: str, bootstrap: str, args: argparse.Namespace) -> tuple[list[Result], list[str]]:
    """``args.runs`` rounds of the three producers (the order turns by one each round), then the verification."""
    results, problems = [], []
    span = args.warmup + args.records + TXN_RECORDS  # record numbers one run may use
    for run in range(args.warmup_runs + args.runs):
        warm = run < args.warmup_runs
        name = f"warm-up {run + 1}" if warm else f"run {run - args.warmup_runs + 1}"
        for i in range(len(MODES)):
            mode = MODES[(i + run) % len(MODES)]
            res = Result(broker, mode, warmup=warm)
            base = run * span
            if mode == "transactional":
                run_transactional(bootstrap, args.partitions, args.records, args.warmup, args.time_limit, res, base)
            else:
                every = TXN_RECORDS if mode == "flush/100" else None
                run_idempotent(bootstrap, args.partitions, args.records, args.warmup, args.time_limit, res, every,
                               base)
            print(f"  {BROKER_LABELS[broker]} {name} {mode}: {res.records:,} records in {res.seconds:.2f}s",
                  flush=True)
            results.append(res)
    for mode in MODES:
        found, read = verify(bootstrap, args.partitions, [r for r in results if r.mode == mode])
        problems += found
        print(f"  {BROKER_LABELS[broker]} {mode} verified: {read}", flush=True)
    return results, problems


def quantile(samples: list[float], q: float) -> float:
    """The q-quantile, linear between the closest ranks (numpy's default)."""
    s = sorted(samples)
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


@dataclass
class Row:
    """One (broker, mode) over its runs: medians of the per-run figures, commit latencies pooled."""

    broker: str
    mode: str
    runs: list[Result]

    def rate(self) -> float:
        return statistics.median(r.records / r.seconds for r in self.runs)

    def commits(self) -> list[float]:
        return [ms for r in self.runs for ms in r.commits_ms]


def report(results: list[Result], runs: int) -> None:
    rows = {}
    for r in results:
        if r.warmup:
            continue
        rows.setdefault((r.broker, r.mode), Row(r.broker, r.mode, [])).runs.append(r)
    order = list(BROKER_LABELS)
    rows = dict(sorted(rows.items(), key=lambda kv: (order.index(kv[0][0]), MODES.index(kv[0][1]))))
    print()
    if runs > 1:
        print(f"medians of {runs} runs (records, seconds, records/s, MiB/s, txn/s, init ms); commit latencies of all runs")
    head = (f"{'broker':<12} {'mode':<14} {'records':>8} {'seconds':>8} {'records/s':>10} {'MiB/s':>7} "
            f"{'txn/s':>7} {'commit p50 ms':>13} {'commit p99 ms':>13} {'init ms':>8}")
    print(head)
    print("-" * len(head))
    for row in rows.values():
        rate, commits = row.rate(), row.commits()
        records = statistics.median(r.records for r in row.runs)
        seconds = statistics.median(r.seconds for r in row.runs)
        txn = (f"{statistics.median(len(r.commits_ms) / r.seconds for r in row.runs):>7.1f}"
               if row.mode == "transactional" else f"{'-':>7}")
        p50 = f"{statistics.median(commits):>13.2f}" if commits else f"{'-':>13}"
        p99 = f"{quantile(commits, 0.99):>13.2f}" if commits else f"{'-':>13}"
        inits = [r.init_ms for r in row.runs if r.init_ms is not None]
        init = f"{statistics.median(inits):>8.1f}" if inits else f"{'-':>8}"
        print(f"{BROKER_LABELS[row.broker]:<12} {row.mode:<14} {records:>8,.0f} {seconds:>8.2f} {rate:>10,.0f} "
              f"{rate * RECORD_BYTES / MIB:>7.2f} {txn} {p50} {p99} {init}")
    print("(flush/100: 'commit' = the flush() after each 100 records; MiB/s of record values, 1 MiB = 2^20 B)")
    for row in rows.values():
        if row.mode == "transactional" and row.commits():
            sent = {api: sum(r.requests.get(api, 0) for r in row.runs) for api in ("AddPartitionsToTxn", "Produce",
                                                                                  "EndTxn")}
            per = ", ".join(f"{api} {n / len(row.commits()):.2f}" for api, n in sent.items())
            print(f"{BROKER_LABELS[row.broker]} transactional, requests per transaction (librdkafka statistics): {per}")

    def rate(broker: str, mode: str) -> float | None:
        row = rows.get((broker, mode))
        return row.rate() if row else None

    print()
    print("ratios of records/s:")
    for broker, label in BROKER_LABELS.items():
        txn, idem, sync = rate(broker, "transactional"), rate(broker, "idempotent"), rate(broker, "flush/100")
        if txn and idem and sync:
            print(f"  {label:<12} transactional/idempotent {txn / idem:.3f}   "
                  f"transactional/flush-100 {txn / sync:.3f}")
    for mode in MODES:
        m, k = rows.get(("mock", mode)), rows.get(("kafka", mode))
        if m is None or k is None:
            continue
        line = f"  mockbroker/Kafka {mode:<14} records/s {m.rate() / k.rate():.3f}"
        mc, kc = m.commits(), k.commits()
        if mc and kc:
            line += (f"   commit p50 {statistics.median(mc) / statistics.median(kc):.3f}"
                     f"   p99 {quantile(mc, 0.99) / quantile(kc, 0.99):.3f}")
        print(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=RECORDS, help=f"timed records per producer (default {RECORDS:,})")
    ap.add_argument("--brokers", default="mock,kafka", help="comma-separated, of mock,kafka (default both)")
    ap.add_argument("--runs", type=int, default=1,
                    help="rounds of the three producers per broker; medians are shown (default 1)")
    ap.add_argument("--warmup-runs", type=int, default=WARMUP_RUNS,
                    help=f"untimed rounds of the three producers first, per broker (default {WARMUP_RUNS})")
    ap.add_argument("--partitions", type=int, default=1, help="partitions of each topic (default 1)")
    ap.add_argument("--marker-latency-ms", type=int, default=0,
                    help="mockbroker's mock.txn.marker.latency.ms: how long its transaction markers take to reach "
                         "the leaders, as Kafka's inter-broker WriteTxnMarkers round trip (default 0: at once)")
    ap.add_argument("--warmup", type=int, default=WARMUP, help=f"untimed records first (default {WARMUP:,})")
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT_S,
                    help=f"seconds per timed phase at most (default {TIME_LIMIT_S:.0f})")
    args = ap.parse_args()
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    unknown = [b for b in brokers if b not in BROKER_LABELS]
    if unknown or not brokers:
        ap.error(f"unknown brokers {unknown}; known: {list(BROKER_LABELS)}")
    if args.records < 1 or args.partitions < 1 or args.runs < 1 or args.warmup < 0 or args.warmup_runs < 0:
        ap.error("--records, --partitions and --runs must be at least 1, --warmup and --warmup-runs at least 0")

    print(f"{args.records:,} records x {RECORD_BYTES} B per producer (+{args.warmup:,} untimed), {args.runs} run(s) "
          f"after {args.warmup_runs} untimed, "
          f"{TXN_RECORDS} per transaction, {args.partitions} partition(s), acks=all, idempotence on, linger.ms=5, "
          f"time limit {args.time_limit:.0f}s per phase, mockbroker marker latency {args.marker_latency_ms} ms",
          flush=True)
    results: list[Result] = []
    problems: list[str] = []
    for broker in brokers:
        print(f"{BROKER_LABELS[broker]}:", flush=True)
        if broker == "mock":
            topics = ",".join(f"{t}:{args.partitions}" for t in TOPICS.values())
            config = [f"mock.topics={topics}", f"mock.txn.marker.latency.ms={args.marker_latency_ms}"]
            with serve_mockbroker(config) as (_proc, bootstrap):
                r, p = run_broker(broker, bootstrap, args)
        else:
            try:
                cp = kafka_classpath()
            except Unavailable as e:
                print(f"  real Kafka unavailable, not measured: {e}")
                continue
            kafka = RealKafka(cp)
            try:
                t0 = time.monotonic()
                kafka.start()
                print(f"  Kafka {kafka.version} ready at {kafka.bootstrap} in {time.monotonic() - t0:.1f}s", flush=True)
                for topic in TOPICS.values():
                    kafka.create_topic(topic, args.partitions)
                r, p = run_broker(broker, kafka.bootstrap, args)
            except Exception as e:
                print(f"  Kafka run failed: {e!r}\n{kafka.log_tail()}", flush=True)
                raise
            finally:
                kafka.stop()
        results += r
        problems += p
    report(results, args.runs)
    if problems:
        print("\nVERIFICATION FAILED:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    print("\nverified: each read_committed consumer read exactly the committed records, each once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
