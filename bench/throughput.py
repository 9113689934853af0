"""Produce and consume throughput of ``mockbroker serve`` with confluent-kafka.

Set-up: the broker runs as a subprocess (``mockbroker serve --port 0``) with a
3-partition topic created at start; the client (librdkafka via
confluent-kafka) runs in this process.

Measured:

* produce: RECORDS records of RECORD_BYTES-byte values (no key), acks=1,
  linger.ms=5, batch.size ~1 MB, no compression, librdkafka's default local
  queue (100,000 messages; a full queue makes the loop poll and retry); wall
  time from the first ``produce()`` to the end of ``flush()``.  Stops
  producing at TIME_LIMIT_S.
* consume: a Consumer with group.id set, enable.auto.commit=false, assign()
  of all 3 partitions from offset 0; wall time from assign() to the last of
  the records delivered by the produce phase.  Bounded by TIME_LIMIT_S.
* MB/s counts value bytes (1 MB = 10^6 bytes); broker CPU % is the broker
  process's user+system CPU time over the phase's wall time (100 % = one core).
* client and broker share the machine's cores; the broker is one asyncio
  thread, so a broker CPU % well below 100 % means it spent that share of the
  phase waiting for the client.
* broker RSS (psutil): idle after the ready line, and the peak of a 100 ms
  sampler thread during each phase.  The broker keeps its log in memory, so
  the peak includes the stored records.

Comparing two versions side by side (``--baseline DIR``: another checkout of
mockbroker, e.g. a ``git worktree`` of an older commit): each run starts the
broker from this checkout and from DIR in turn (``python -m mockbroker`` with
the checkout as working directory), ``--runs`` times, alternating, so both
see the same machine at the same time; the medians and the ratio
candidate/baseline are printed.  ``-c key=value`` is passed to both brokers.

Measuring the produce-side record check (``--record-check``): each run starts
the broker with ``mock.produce.check.records=false`` (the batch header is
trusted) and with the check on (the default: every batch's record length
varints are walked, a compressed batch decompressed first), alternating; the
ratio is checked/unchecked.  ``--compression`` sets the producer's
compression.type (default none), so the check's cost on compressed batches,
which it decompresses, shows too.

Measuring the produce-side timestamp check (``--timestamp-check``): each run starts the
broker with ``log.message.timestamp.after.max.ms`` at Long.MAX_VALUE (with before.max.ms
at its default, Long.MAX_VALUE, no record can be refused, so nothing beyond the record
count is read) and at Kafka's default of one hour (the walk also reads every record's
timestamp delta), alternating; the ratio is checked/unchecked.  It also prints the
in-process cost per record of the walk: count only, with timestamp deltas, and with
timestamp deltas and key lengths (what a compacted topic adds).

Comparing two configurations of this checkout (``--compare-config key=value``,
repeatable, or ``--journal``): each run starts the broker without and with
those keys in turn (``-c`` goes to both), alternating as above; the ratio is
on/off.  ``--journal`` turns the on-disk request journal on
(``mock.journal.dir``, a fresh temporary directory per run, deleted after it)
and prints how many records and bytes each run wrote.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import psutil
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "bench"))
from brokers import serve_mockbroker  # bench/brokers.py

TOPIC = "bench"
PARTITIONS = 3
RECORDS = 1_000_000
RECORD_BYTES = 1024
TIME_LIMIT_S = 60.0
COMPRESSION = "none"
MB = 1e6


class RssSampler(threading.Thread):
    """Samples a process's RSS every 100 ms; ``peak()`` is the max since the last reset."""

    def __init__(self, proc: psutil.Process) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.stop = threading.Event()
        self._peak = 0

    def run(self) -> None:
        while not self.stop.wait(0.1):
            self._peak = max(self._peak, self.proc.memory_info().rss)

    def reset(self) -> None:
        self._peak = self.proc.memory_info().rss

    def peak(self) -> int:
        return max(self._peak, self.proc.memory_info().rss)


def cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def produce(bootstrap: str, topic: str = TOPIC, records: int | None = None,
            time_limit: float = TIME_LIMIT_S) -> tuple[int, float]:
    """(records acknowledged, seconds) for the produce phase: ``records`` (default RECORDS) values to
    ``topic``'s PARTITIONS partitions in turn (bench/sidebyside.py measures with it too)."""
    records = RECORDS if records is None else records
    errors: list[KafkaError] = []
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "acks": 1,
        "linger.ms": 5,
        "batch.size": 1_000_000,
        "compression.type": COMPRESSION,
        "delivery.report.only.error": True,
        "on_delivery": lambda err, _msg: errors.append(err),
    })
    # compressible but not trivially so: a repeating 64-byte pattern shifted per record
    pattern = bytes(range(64)) * (RECORD_BYTES // 64 + 2)
    sent = 0
    t0 = time.perf_counter()
    deadline = t0 + time_limit
    while sent < records and time.perf_counter() < deadline:
        try:
            producer.produce(topic, pattern[sent % 64:sent % 64 + RECORD_BYTES], partition=sent % PARTITIONS)
            sent += 1
        except BufferError:  # local queue full: let librdkafka send
            producer.poll(0.001)
    producer.flush(max(deadline - time.perf_counter(), 1.0))
    elapsed = time.perf_counter() - t0
    unacked = len(producer)
    if errors or unacked:
        print(f"produce: {len(errors)} delivery errors (first: {errors[:1]}), {unacked} not acknowledged")
    return sent - len(errors) - unacked, elapsed


def consume(bootstrap: str, expected: int) -> tuple[int, float]:
    """(records read, seconds) for the consume phase."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "bench",
        "enable.auto.commit": False,
    })
    got = 0
    t0 = time.perf_counter()
    deadline = t0 + TIME_LIMIT_S
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    while got < expected and time.perf_counter() < deadline:
        # at most what is still missing: a call asked for more waits out its timeout for them
        for msg in consumer.consume(num_messages=min(10_000, expected - got), timeout=1.0):
            if msg.error():
                raise RuntimeError(f"consume error: {msg.error()}")
            got += 1
    elapsed = time.perf_counter() - t0
    consumer.close()
    return got, elapsed


Row = tuple[str, int, float, float, int]  # phase, records, seconds, broker CPU seconds, peak RSS


def run_once(source: Path, extra_config: list[str]) -> tuple[int, list[Row]]:
    """Start ``mockbroker serve`` from the checkout ``source``, produce then consume: (idle RSS, rows)."""
    with serve_mockbroker([f"mock.topics={TOPIC}:{PARTITIONS}", *extra_config], cwd=source) as (proc, bootstrap):
        broker = psutil.Process(proc.pid)
        time.sleep(1.0)  # let start-up settle before the idle reading
        idle_rss = broker.memory_info().rss
        sampler = RssSampler(broker)
        sampler.start()

        rows: list[Row] = []

        def phase(name: str, run: Callable[[], tuple[int, float]]) -> int:
            sampler.reset()
            cpu0 = cpu_seconds(broker)
            records, seconds = run()
            rows.append((name, records, seconds, cpu_seconds(broker) - cpu0, sampler.peak()))
            return records

        produced = phase("produce", lambda: produce(bootstrap))
        phase("consume", lambda: consume(bootstrap, produced))
        sampler.stop.set()
    return idle_rss, rows


def print_rows(label: str, idle_rss: int, rows: list[Row]) -> None:
    print(f"[{label}] broker RSS idle after start: {idle_rss / 2**20:.1f} MiB")
    head = (f"{'phase':<8} {'records':>9} {'seconds':>8} {'MB/s':>7} {'records/s':>10} "
            f"{'broker CPU %':>13} {'peak RSS MiB':>13}")
    print(head)
    print("-" * len(head))
    for name, records, seconds, cpu, peak in rows:
        print(f"{name:<8} {records:>9,} {seconds:>8.2f} {records * RECORD_BYTES / seconds / MB:>7.1f} "
              f"{records / seconds:>10,.0f} {100 * cpu / seconds:>13.0f} {peak / 2**20:>13.1f}")


def record_check_cost(compression: str, records: int = 1000) -> float:
    """µs per record of ``check_record_count`` on one batch shaped as this bench's (``records``
    values of RECORD_BYTES, compressed as the producer would), measured in this process."""
    import gzip

    import cramjam
    import lz4.frame

    sys.path.insert(0, str(HERE))
    from protocol.records import build_batch, check_record_count, parse_header

    pattern = bytes(range(64)) * (RECORD_BYTES // 64 + 2)
    recs = [(None, pattern[i % 64:i % 64 + RECORD_BYTES], []) for i in range(records)]
    plain = build_batch(recs)
    # the framings Kafka reads: lz4 with independent blocks (Kafka refuses dependent ones)
    compress = {"gzip": (1, gzip.compress), "snappy": (2, lambda d: bytes(cramjam.snappy.compress_raw(d))),
                "lz4": (3, lambda d: lz4.frame.compress(d, block_linked=False)),
                "zstd": (4, lambda d: bytes(cramjam.zstd.compress(d)))}
    batch = plain if compression == "none" else build_batch(
        recs, payload=compress[compression][1](plain[61:]), attributes=compress[compression][0])
    view = memoryview(batch)
    header = parse_header(view)
    reps = 30
    t0 = time.perf_counter()
    for _ in range(reps):
        check_record_count(view, header)
    return (time.perf_counter() - t0) / reps / records * 1e6


def walk_costs(compression: str, records: int = 1000) -> dict[str, float]:
    """µs per record of ``check_record_count`` on one batch shaped as this bench's, reading the count
    only, also the timestamp deltas, and also the key lengths (keyed records, as a compacted topic's)."""
    import gzip

    import cramjam
    import lz4.frame

    sys.path.insert(0, str(HERE))
    from protocol.records import build_batch, check_record_count, parse_header

    pattern = bytes(range(64)) * (RECORD_BYTES // 64 + 2)
    recs = [(b"key-%d" % i, pattern[i % 64:i % 64 + RECORD_BYTES], []) for i in range(records)]
    stamps = [1_700_000_000_000 + i // 10 for i in range(records)]  # a producer's ms clock over the batch
    plain = build_batch(recs, base_timestamp=stamps[0], timestamps=stamps)
    compress = {"gzip": (1, gzip.compress), "snappy": (2, lambda d: bytes(cramjam.snappy.compress_raw(d))),
                "lz4": (3, lambda d: lz4.frame.compress(d, block_linked=False)),
                "zstd": (4, lambda d: bytes(cramjam.zstd.compress(d)))}
    batch = plain if compression == "none" else build_batch(
        recs, base_timestamp=stamps[0], timestamps=stamps, payload=compress[compression][1](plain[61:]),
        attributes=compress[compression][0])
    view = memoryview(batch)
    header = parse_header(view)
    out = {}
    for label, kw in (("count", {}), ("count+timestamps", {"timestamps": True}),
                      ("count+timestamps+keys", {"timestamps": True, "keys": True})):
        reps = 30
        t0 = time.perf_counter()
        for _ in range(reps):
            check_record_count(view, header, **kw)
        out[label] = (time.perf_counter() - t0) / reps / records * 1e6
    return out


def journal_size(directory: Path) -> tuple[int, int]:
    """(records, bytes on disk) of the journal a run wrote."""
    from mockbroker.journal_reader import read_journal

    on_disk = sum(p.stat().st_size for p in directory.iterdir())
    return sum(1 for _ in read_journal(directory, warn=lambda w: print(f"journal: {w}"))), on_disk


def main() -> None:
    global RECORDS, COMPRESSION
    ap = argparse.ArgumentParser(description="produce/consume throughput of mockbroker serve (confluent-kafka)")
    ap.add_argument("--baseline", type=Path, help="another mockbroker checkout to measure side by side")
    ap.add_argument("--compare-config", action="append", default=[], metavar="KEY=VALUE",
                    help="measure this checkout without and with these keys side by side (repeatable)")
    ap.add_argument("--record-check", action="store_true",
                    help="measure this checkout with mock.produce.check.records=false and with the check on")
    ap.add_argument("--timestamp-check", action="store_true",
                    help="measure this checkout with message.timestamp.after.max.ms unbounded and at Kafka's "
                         "default (the record walk then reads every timestamp delta)")
    ap.add_argument("--compression", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd"),
                    help="the producer's compression.type (default none)")
    ap.add_argument("--journal", action="store_true",
                    help="measure this checkout without and with the on-disk journal (mock.journal.dir)")
    ap.add_argument("--runs", type=int, default=1, help="runs per variant, alternating (default 1)")
    ap.add_argument("--records", type=int, default=RECORDS, help=f"records per run (default {RECORDS:,})")
    ap.add_argument("-c", dest="config", action="append", default=[], metavar="KEY=VALUE",
                    help="broker configuration for every run (repeatable)")
    args = ap.parse_args()
    RECORDS = args.records
    COMPRESSION = args.compression
    compare = bool(args.compare_config or args.journal)
    if sum((compare, bool(args.baseline), args.record_check, args.timestamp_check)) > 1:
        ap.error("--baseline compares checkouts, --compare-config/--journal configurations, --record-check "
                 "the record check, --timestamp-check the timestamp check: one at a time")
    # (label, checkout, extra config, journal on)
    variants: list[tuple[str, Path, list[str], bool]]
    if args.record_check:
        variants = [("unchecked", HERE, args.config + ["mock.produce.check.records=false"], False),
                    ("checked", HERE, args.config, False)]
        first, second = "checked", "unchecked"
    elif args.timestamp_check:
        variants = [("unbounded", HERE, args.config + [f"log.message.timestamp.after.max.ms={2**63 - 1}"], False),
                    ("checked", HERE, args.config, False)]
        first, second = "checked", "unbounded"
    elif compare:
        variants = [("off", HERE, args.config, False), ("on", HERE, args.config + args.compare_config, args.journal)]
        first, second = "on", "off"
    else:
        variants = [("candidate", HERE, args.config, False)]
        if args.baseline:
            variants.append(("baseline", args.baseline.resolve(), args.config, False))
        first, second = "candidate", "baseline"
    print(f"{RECORDS:,} records x {RECORD_BYTES} B asked, {PARTITIONS} partitions, acks=1, "
          f"linger.ms=5, batch.size=1000000, compression {COMPRESSION}, time limit {TIME_LIMIT_S:.0f}s per phase"
          + (f", config {' '.join(args.config)}" if args.config else "")
          + (f"; on: {' '.join(args.compare_config + (['mock.journal.dir=<fresh>'] if args.journal else []))}"
             if compare else ""))
    if args.record_check:
        print(f"check_record_count in this process, 1000 x {RECORD_BYTES} B records, compression {COMPRESSION}: "
              f"{record_check_cost(COMPRESSION):.3f} µs per record")
    if args.timestamp_check:
        costs = walk_costs(COMPRESSION)
        print(f"check_record_count in this process, 1000 x {RECORD_BYTES} B keyed records, compression "
              f"{COMPRESSION}, µs per record: " + ", ".join(f"{k} {v:.3f}" for k, v in costs.items()))
    rates: dict[str, dict[str, list[float]]] = {v[0]: {"produce": [], "consume": []} for v in variants}
    cpu_us: dict[str, dict[str, list[float]]] = {v[0]: {"produce": [], "consume": []} for v in variants}
    for run in range(args.runs):
        for label, source, config, journal in (variants if run % 2 == 0 else variants[::-1]):
            tmp = Path(tempfile.mkdtemp(prefix="bench-journal-")) if journal else None
            try:
                idle, rows = run_once(source, config + ([f"mock.journal.dir={tmp}"] if tmp else []))
                print_rows(f"{label} run {run + 1}: {source}", idle, rows)
                if tmp is not None:
                    n, size = journal_size(tmp)
                    print(f"[{label} run {run + 1}] journal: {n:,} records, {size / 2**20:.2f} MiB on disk")
            finally:
                if tmp is not None:
                    shutil.rmtree(tmp, ignore_errors=True)
            for name, records, seconds, cpu, _peak in rows:
                rates[label][name].append(records / seconds)
                cpu_us[label][name].append(cpu / records * 1e6)
    print()
    print(f"medians over {args.runs} run(s), records/s:")
    for name in ("produce", "consume"):
        a = statistics.median(rates[first][name])
        line = f"  {name:<8} {first} {a:>10,.0f}"
        if second in rates:
            b = statistics.median(rates[second][name])
            line += f"   {second} {b:>10,.0f}   ratio {first}/{second} {a / b:.3f}"
        print(line)
    if second in rates:
        # Run i of each variant ran back to back: the ratio within a pair cancels what the machine did
        # at the time (other processes on shared cores), which the ratio of the medians does not.
        print(f"per-run ratio {first}/{second} (median, min..max) and broker CPU per record (medians):")
        for name in ("produce", "consume"):
            pairs = sorted(x / y for x, y in zip(rates[first][name], rates[second][name]))
            a_cpu, b_cpu = statistics.median(cpu_us[first][name]), statistics.median(cpu_us[second][name])
            print(f"  {name:<8} {statistics.median(pairs):.3f} ({pairs[0]:.3f}..{pairs[-1]:.3f})   "
                  f"CPU µs/record {first} {a_cpu:.2f} {second} {b_cpu:.2f} ratio {a_cpu / b_cpu:.3f}")


if __name__ == "__main__":
    main()
