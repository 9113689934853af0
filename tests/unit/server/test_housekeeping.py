"""Time-driven housekeeping through the injectable clock: retention and idle connections."""

from __future__ import annotations

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.records import build_batch


def manual_broker(**cfg):
    clock = ManualClock()
    return MockBroker(config={"log.retention.check.interval.ms": 1000, **cfg}, clock=clock), clock


@pytest.fixture
def manual():
    b, clock = manual_broker()
    with b:
        yield b, clock


@pytest.fixture
def manual_idle():
    b, clock = manual_broker(**{"connections.max.idle.ms": 5000})
    with b:
        yield b, clock


def produce(c, topic, ts, n=2):
    body = {"acks": 1, "timeout": 1000, "topic_data": [{"name": topic, "partition_data": [
        {"index": 0, "records": build_batch([(b"k", b"v" * 100, [])] * n, base_timestamp=ts)}]}]}
    assert c.request(0, 9, body).responses[0].partition_responses[0].error_code == 0


def earliest(c, topic):
    r = c.request(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -2}]}]})
    return r.topics[0].partitions[0].offset


def test_retention_by_time_on_the_check_interval(manual):
    b, clock = manual
    b.create_topic("ret-t", 1, configs={"retention.ms": "10000", "internal.segment.bytes": "100"})
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        now = clock.time_ms()
        produce(c, "ret-t", now - 20_000)  # already past retention, in its own segment
        produce(c, "ret-t", now)
        assert earliest(c, "ret-t") == 0
        b.advance(999)
        assert earliest(c, "ret-t") == 0  # the check has not run yet
        b.advance(1)
        assert earliest(c, "ret-t") == 2
        b.advance(10_001)  # the second batch expires too
        assert earliest(c, "ret-t") == 4 and b.log_end_offset("ret-t", 0) == 4


def test_retention_by_bytes(manual):
    b, clock = manual
    b.create_topic("ret-b", 1, configs={"retention.bytes": "300", "internal.segment.bytes": "100"})
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        for _ in range(5):
            produce(c, "ret-b", clock.time_ms())
        b.advance(1000)
        # Each ~281-byte batch is its own segment.  Kafka deletes the oldest segments while
        # size - retention.bytes >= the segment's size, so it may keep up to one segment more.
        batches = b.partition_records("ret-b", 0)
        seg = len(batches[0])
        kept = sum(map(len, batches))
        assert len(batches) == 2 and kept - seg < 300 <= kept
        assert earliest(c, "ret-b") == 6


def test_idle_connection_closed_after_connections_max_idle_ms(manual_idle):
    b, clock = manual_idle
    with RawKafkaClient.connect(b.bootstrap_servers) as idle, RawKafkaClient.connect(b.bootstrap_servers) as busy:
        idle.request(3, 12, {"topics": None})
        for _ in range(3):
            b.advance(2000)
            busy.request(3, 12, {"topics": None})
        assert idle.is_closed_by_peer(timeout=2)
        assert busy.request(3, 12, {"topics": None}).brokers


def test_a_steady_producer_under_retention_reaches_a_plateau(manual):
    """retention.ms with segment.ms rolling (Kafka's LogManager cleanup on
    log.retention.check.interval.ms, here 1 s of the ManualClock): one batch per 100 ms for 60 s of
    broker time.  Once retention.ms + segment.ms have passed, whole segments go as fast as batches
    come: the log holds at most (retention.ms + segment.ms + the check interval) of batches, and
    its start offset keeps moving.  With the default segment.ms (7 days) the one active segment
    would keep everything, as in Kafka."""
    b, clock = manual
    b.create_topic("plateau", 1, configs={"retention.ms": "10000", "segment.ms": "2000"})
    held = []
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        for i in range(600):
            produce(c, "plateau", clock.time_ms(), n=1)
            b.advance(100)
            if i >= 200 and i % 50 == 0:
                held.append(len(b.partition_records("plateau", 0)))
    per_s = 10  # batches per second of broker time
    assert max(held) <= (10 + 2 + 1) * per_s, held
    assert min(held) >= 10 * per_s - per_s, held  # nothing younger than retention.ms went
    assert earliest_offset(b) >= 600 - max(held)


def earliest_offset(b) -> int:
    return int(b.partition_state("plateau", 0)["log_start_offset"])
