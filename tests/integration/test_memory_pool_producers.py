"""KIP-72 under load: 50 concurrent confluent-kafka (librdkafka) producers send ~1 MiB Produce
requests to a broker whose request memory pool is 10 MiB.

* The pool is really exhausted (allocations refused, connections muted for memory), so the
  bound below is tested under pressure, not by a run that never needed it.
* MemoryPoolUsed never exceeds queued.max.request.bytes + socket.request.max.bytes - 1: checked
  on the pool's own peak (updated at every allocation) and on a sampler thread's readings.
* Every producer finishes (nobody starves behind the others) and every acknowledged record is
  fetched back by a consumer at its acknowledged offset, byte for byte.

Bounded: 50 x 2 requests, every wait capped in time.
"""

from __future__ import annotations

import threading
import time
import zlib

import pytest

from mockbroker import MockBroker

confluent_kafka = pytest.importorskip("confluent_kafka")

MiB = 1 << 20
POOL = 10 * MiB
MAX_REQUEST = 2 * MiB              # socket.request.max.bytes: the largest single allocation
BOUND = POOL + MAX_REQUEST - 1     # KIP-72's bound for a non-strict pool
PRODUCERS = 50
REQUESTS = 2                       # per producer
RECORDS_PER_REQUEST = 8
VALUE = MiB // RECORDS_PER_REQUEST  # 8 x 128 KiB: one ~1 MiB batch per request
PARTITIONS = 5
TOPIC = "pool-load"
TIME_LIMIT_S = 60.0


def value(p: int, seq: int) -> bytes:
    head = b"%03d-%05d|" % (p, seq)
    return head + bytes([65 + (p + seq) % 26]) * (VALUE - len(head))


@pytest.fixture(scope="module")
def broker():
    cfg = {"queued.max.request.bytes": POOL, "socket.request.max.bytes": MAX_REQUEST,
           "message.max.bytes": MAX_REQUEST, "num.partitions": PARTITIONS}
    with MockBroker(config=cfg) as b:
        b.create_topic(TOPIC, PARTITIONS)
        yield b


class PoolSampler(threading.Thread):
    """Reads the broker's pool metrics in a loop until stopped (bounded by TIME_LIMIT_S)."""

    def __init__(self, broker: MockBroker) -> None:
        super().__init__(daemon=True)
        self.broker = broker
        self.stop = threading.Event()
        self.max_used = 0
        self.max_muted = 0
        self.samples = 0

    def run(self) -> None:
        deadline = time.monotonic() + TIME_LIMIT_S
        while not self.stop.is_set() and time.monotonic() < deadline:
            m = self.broker.memory_pool_metrics()
            self.max_used = max(self.max_used, m["MemoryPoolUsed"])
            self.max_muted = max(self.max_muted, m["memory_muted"])
            self.samples += 1
            self.stop.wait(0.002)


def test_fifty_producers_of_1mib_requests_stay_within_the_pool_bound(broker):
    acked: dict[tuple[int, int], tuple[int, int]] = {}  # (producer, seq) -> (partition, offset)
    errors: list[str] = []
    lock = threading.Lock()

    def on_delivery(err, msg):
        p, seq = (int(x) for x in msg.value()[:9].split(b"-"))
        with lock:
            if err is not None:
                errors.append(f"{p}-{seq}: {err}")
            else:
                acked[(p, seq)] = (msg.partition(), msg.offset())

    producers = [confluent_kafka.Producer({
        "bootstrap.servers": broker.bootstrap_servers, "client.id": f"pool-{p}", "acks": 1,
        "linger.ms": 100, "batch.size": 1_100_000, "message.max.bytes": 1_200_000,
        "compression.type": "none", "request.timeout.ms": 60_000,
    }) for p in range(PRODUCERS)]
    try:
        # warm-up: every producer has its metadata and its connection before the burst
        for p, prod in enumerate(producers):
            prod.produce(TOPIC, value(p, 0)[:100], partition=p % PARTITIONS, on_delivery=on_delivery)
        for prod in producers:
            assert prod.flush(30) == 0
        assert not errors, errors[:3]
        assert broker.memory_pool_metrics()["refused"] == 0  # small requests: no pressure yet

        sampler = PoolSampler(broker)
        sampler.start()
        t0 = time.monotonic()
        for p, prod in enumerate(producers):  # the burst: 50 x 2 requests of ~1 MiB
            for seq in range(1, 1 + REQUESTS * RECORDS_PER_REQUEST):
                prod.produce(TOPIC, value(p, seq), partition=p % PARTITIONS, on_delivery=on_delivery)
        finished: list[float] = []
        for prod in producers:  # every producer finishes: nothing left unacknowledged
            left = prod.flush(max(TIME_LIMIT_S - (time.monotonic() - t0), 1.0))
            assert left == 0, f"a producer still has {left} records after {time.monotonic() - t0:.1f} s"
            finished.append(time.monotonic() - t0)
        sampler.stop.set()
        sampler.join(5)
    finally:
        for prod in producers:
            prod.flush(1)

    assert not errors, errors[:3]
    total = PRODUCERS * (1 + REQUESTS * RECORDS_PER_REQUEST)
    assert len(acked) == total
    m = broker.memory_pool_metrics()
    print(f"\n{PRODUCERS} producers x {REQUESTS} requests of {RECORDS_PER_REQUEST} x {VALUE} B: "
          f"all acknowledged in {max(finished):.2f} s; pool {POOL} B, bound {BOUND} B, "
          f"peak used {m['peak_used']} B (sampled max {sampler.max_used} B over {sampler.samples} samples), "
          f"{m['refused']} allocations refused, up to {sampler.max_muted} connections muted for memory, "
          f"depleted {m['MemoryPoolDepletedTimeTotal']:.1f} ms")
    # the pool was exhausted: refusals happened and the memory in use reached the pool size
    assert m["refused"] > 0 and m["peak_used"] >= POOL
    # ... and never went past KIP-72's bound
    assert m["peak_used"] <= BOUND and sampler.max_used <= BOUND
    assert m["MemoryPoolDepletedTimeTotal"] > 0
    assert (m["MemoryPoolUsed"], m["memory_muted"]) == (0, 0)  # everything given back

    # every acknowledged record is fetched back at its acknowledged offset
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": broker.bootstrap_servers, "group.id": "pool-readback",
        "enable.auto.commit": False, "fetch.max.bytes": 50 * MiB,
    })
    want = {(part, off): key for key, (part, off) in acked.items()}
    got = 0
    deadline = time.monotonic() + TIME_LIMIT_S
    try:
        consumer.assign([confluent_kafka.TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        while got < total and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=500, timeout=1.0):
                assert not msg.error(), msg.error()
                key = want.pop((msg.partition(), msg.offset()), None)
                if key is None:
                    continue
                p, seq = key
                expected = value(p, seq) if seq else value(p, 0)[:100]
                v = msg.value()
                assert len(v) == len(expected) and zlib.crc32(v) == zlib.crc32(expected), key
                got += 1
    finally:
        consumer.close()
    assert got == total and not want, f"{len(want)} acknowledged records not fetched back"
