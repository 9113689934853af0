"""Where a long-running broker's memory goes, and a soak with retention reaching a plateau.

Everything runs in this process (a ``MockBroker`` on a ManualClock, a raw wire client), measured
with tracemalloc (Python allocations: what RSS grows by, without the allocator's slack), bounded
in count and time (TIME_LIMIT_S per section).

1. Bytes per stored batch and per stored record: ``PartitionLog.append`` of COUNT batches of 1
   and of 10 records of 100-byte values, minus the batches' own bytes (what is not the log).
2. Bytes per journal entry: COUNT Metadata requests (nothing stored), over ``mock.journal.max.entries``.
3. Bytes per metric series: COUNT client ids, each producing once under a default client quota
   (its quota sensors: byte rate, request time, throttle time, the Prometheus series of each).
4. The soak: one client producing one 1-record batch per request while the clock moves 10 ms per
   request (100 requests/s of broker time), with ``retention.ms`` 60 s, ``segment.ms`` 10 s and the
   retention check every 5 s, the journal bounded at 20,000 entries: traced memory every 3,000
   requests.  Once retention drops as fast as records arrive and the journal is full, it is flat.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from mockbroker import ManualClock, MockBroker  # noqa: E402
from mockbroker.storage.log import PartitionLog  # noqa: E402
from protocol.client import RawKafkaClient  # noqa: E402
from protocol.records import build_batch, parse_header  # noqa: E402

COUNT = 5000
TIME_LIMIT_S = 60.0


def traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def per_stored(records_per_batch: int, count: int) -> tuple[float, float]:
    """(bytes per batch over its own bytes, bytes per record in all) of ``count`` appended batches."""
    batch = build_batch([(None, b"x" * 100, [])] * records_per_batch, base_timestamp=1000)
    header = parse_header(batch)
    log = PartitionLog(0)
    before = traced()
    for i in range(count):
        log.append(memoryview(batch), header, 1000 + i, 1 << 30, 1 << 62, False)
    grown = traced() - before
    return grown / count - len(batch), grown / (count * records_per_batch)


def produce_body(topic: str, value: bytes, ts: int) -> dict:
    return {"acks": 1, "timeout": 30_000, "topic_data": [{"name": topic, "partition_data": [
        {"index": 0, "records": build_batch([(None, value, [])], base_timestamp=ts)}]}]}


def per_journal_entry(count: int) -> float:
    with MockBroker(config={"mock.journal.max.entries": count * 2}) as b, \
            RawKafkaClient.connect(b.bootstrap_servers) as c:
        c.request(3, 12, {"topics": []})
        before = traced()
        deadline = time.monotonic() + TIME_LIMIT_S
        n = 0
        while n < count and time.monotonic() < deadline:
            c.request(3, 12, {"topics": []})
            n += 1
        return (traced() - before) / n


def per_metric_series(count: int) -> float:
    with MockBroker(config={"mock.quotas": "clients/<default>:producer_byte_rate=1000000000"},
                    clock=ManualClock()) as b:
        b.create_topic("series", 1)
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="warm") as c:
            c.request(0, 9, produce_body("series", b"x", 0))
        before = traced()
        deadline = time.monotonic() + TIME_LIMIT_S
        n = 0
        while n < count and time.monotonic() < deadline:
            with RawKafkaClient.connect(b.bootstrap_servers, client_id=f"client-{n}") as c:
                c.request(0, 9, produce_body("series", b"x", 0))
            n += 1
        grown = traced() - before
        return grown / n


def soak(requests: int) -> None:
    clock = ManualClock()
    cfg = {"mock.journal.max.entries": 20_000, "log.retention.check.interval.ms": 5000}
    with MockBroker(config=cfg, clock=clock) as b, RawKafkaClient.connect(b.bootstrap_servers) as c:
        b.create_topic("soak", 1, configs={"retention.ms": "60000", "segment.ms": "10000"})
        base = traced()
        print(f"{'requests':>9} {'broker s':>9} {'traced MiB':>11} {'log KiB':>8} {'log start':>10} {'log end':>8}")
        deadline = time.monotonic() + TIME_LIMIT_S
        for i in range(1, requests + 1):
            c.request(0, 9, produce_body("soak", b"v" * 100, clock.time_ms()))
            b.advance(10)
            if i % 3000 == 0 or time.monotonic() > deadline:
                state = b.partition_state("soak", 0)
                log_bytes = sum(map(len, b.partition_records("soak", 0)))
                print(f"{i:>9,} {i / 100:>9.0f} {(traced() - base) / 2**20:>11.2f} {log_bytes / 1024:>8.0f} "
                      f"{state['log_start_offset']:>10,} {state['log_end_offset']:>8,}")
                if time.monotonic() > deadline:
                    print("(time limit)")
                    break


def main() -> None:
    ap = argparse.ArgumentParser(description="memory per stored record, journal entry, metric series; a soak")
    ap.add_argument("--count", type=int, default=COUNT)
    ap.add_argument("--soak-requests", type=int, default=30_000)
    args = ap.parse_args()
    tracemalloc.start()
    for n in (1, 10):
        over, per_record = per_stored(n, args.count)
        print(f"stored batches of {n:>2} record(s) of 100 B: {over:6.1f} B per batch besides the batch's own "
              f"bytes; {per_record:6.1f} B per record in all")
    print(f"journal entry (Metadata v12, kept in memory): {per_journal_entry(args.count):,.0f} B")
    print(f"metric series: a new client id producing once under a default quota: "
          f"{per_metric_series(min(args.count, 2000)):,.0f} B")
    print()
    soak(args.soak_requests)


if __name__ == "__main__":
    main()
