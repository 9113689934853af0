"""Compacted logs as real consumers read them, on the ManualClock: batches the cleaner wrote again, with
each codec in the framing it writes (gzip, snappy's xerial framing, lz4 frames, zstd), empty batches it kept
for an idempotent producer, and the offset gaps between batches, read by confluent-kafka (librdkafka) and
kafka-python.  (tests/integration/test_compaction_kafka.py compares the view with a real Kafka's.)"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KPTopicPartition

from mockbroker import ManualClock, MockBroker
from protocol.records import parse_header

CODECS = ("gzip", "snappy", "lz4", "zstd")


def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes | None]], codec: str) -> None:
    """All ``records`` in one batch (linger, flushed once), idempotent: the producer has an id."""
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 1000,
                  "enable.idempotence": True, "batch.num.messages": 1000})
    for k, v in records:
        p.produce(topic, value=v, key=k)
    assert p.flush(30) == 0


def confluent_view(bootstrap: str, topic: str, end: int) -> list[tuple[int, bytes, bytes | None]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "view", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    out: list[tuple[int, bytes, bytes | None]] = []
    try:
        for _ in range(40):  # bounded: each poll up to 0.5 s
            msg = c.poll(0.5)
            if msg is None:
                if c.position([TopicPartition(topic, 0)])[0].offset >= end:
                    break
                continue
            assert msg.error() is None, msg.error()
            out.append((msg.offset(), msg.key(), msg.value()))
    finally:
        c.close()
    return out


def kafka_python_view(bootstrap: str, topic: str, end: int) -> list[tuple[int, bytes, bytes | None]]:
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = KPTopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    out = []
    try:
        for _ in range(40):
            for records in c.poll(timeout_ms=500).values():
                out += [(r.offset, r.key, r.value) for r in records]
            if c.position(tp) >= end:
                break
    finally:
        c.close()
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_consumers_read_rewritten_batches(codec):
    v1, v2, v0 = b"one " * 200, b"two " * 200, b"zero " * 200  # compressible: librdkafka sends small batches plain
    first = [(b"a", v1), (b"b", v1), (b"c", v1), (b"d", v1)]
    second = [(b"b", v2), (b"d", None)]
    with MockBroker(config={"log.cleaner.backoff.ms": 1000}, clock=ManualClock()) as b:
        topic = f"compacted-{codec}"
        b.create_topic(topic, 1, configs={"cleanup.policy": "compact", "internal.segment.bytes": "1",
                                          "min.cleanable.dirty.ratio": "0.01"})
        produce(b.bootstrap_servers, topic, first, codec)   # offsets 0-3, one batch
        produce(b.bootstrap_servers, topic, second, codec)  # 4-5: this producer's last batch
        produce(b.bootstrap_servers, topic, [(b"z", v0)], codec)  # 6, another producer: the active segment
        b.advance(1000)
        batches = [parse_header(raw) for raw in b.partition_records(topic, 0)]
        # the first batch lost b@1 and d@3 (written again, its codec kept); the second keeps its
        # records (the tombstone now with a delete horizon)
        assert [(h.base_offset, h.last_offset_delta, h.records_count, h.compression) for h in batches] == [
            (0, 3, 2, CODECS.index(codec) + 1), (4, 1, 2, CODECS.index(codec) + 1), (6, 0, 1, CODECS.index(codec) + 1)]
        want = [(0, b"a", v1), (2, b"c", v1), (4, b"b", v2), (5, b"d", None), (6, b"z", v0)]
        assert confluent_view(b.bootstrap_servers, topic, 7) == want
        assert kafka_python_view(b.bootstrap_servers, topic, 7) == want


def test_consumers_skip_an_empty_batch():
    """An idempotent producer's last batch is kept empty when all its records go (BatchRetention.RETAIN_EMPTY):
    consumers step over it."""
    with MockBroker(config={"log.cleaner.backoff.ms": 1000}, clock=ManualClock()) as b:
        b.create_topic("emptied", 1, configs={"cleanup.policy": "compact", "internal.segment.bytes": "1",
                                              "min.cleanable.dirty.ratio": "0.01"})
        produce(b.bootstrap_servers, "emptied", [(b"k", b"1"), (b"j", b"1")], "none")  # 0-1, producer A's last
        produce(b.bootstrap_servers, "emptied", [(b"k", b"2"), (b"j", b"2")], "none")  # 2-3, producer B's last
        produce(b.bootstrap_servers, "emptied", [(b"z", b"0")], "none")                 # 4: the active segment
        b.advance(1000)
        batches = [parse_header(raw) for raw in b.partition_records("emptied", 0)]
        assert [(h.base_offset, h.records_count, h.has_producer_id) for h in batches] == [(0, 0, True), (2, 2, True),
                                                                                          (4, 1, True)]
        want = [(2, b"k", b"2"), (3, b"j", b"2"), (4, b"z", b"0")]
        assert confluent_view(b.bootstrap_servers, "emptied", 5) == want
        assert kafka_python_view(b.bootstrap_servers, "emptied", 5) == want
