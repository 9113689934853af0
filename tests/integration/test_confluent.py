"""confluent-kafka (librdkafka) against the broker: produce 10,000 records per acks x codec, read back.

librdkafka insists on a group.id even for assign() and then sends
FindCoordinator and OffsetFetch: the broker answers as Kafka does for a group
without committed offsets.
"""

from __future__ import annotations

import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from .records import N_PARTITIONS, N_RECORDS, assert_consumed, assert_stored_codec, record  # noqa: E402

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def create_topic(bootstrap, topic):
    a = AdminClient({"bootstrap.servers": bootstrap})
    for f in a.create_topics([NewTopic(topic, N_PARTITIONS, 1)]).values():
        f.result(timeout=30)


def produce(bootstrap, topic, acks, codec):
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "compression.type": codec,
                  "enable.idempotence": acks == "all", "linger.ms": 5})
    delivered: dict[int, list[int]] = {q: [] for q in range(N_PARTITIONS)}
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            delivered[msg.partition()].append(msg.offset())

    for i in range(N_RECORDS):
        k, v, h = record(i)
        while True:
            try:
                p.produce(topic, key=k, value=v, headers=h, partition=i % N_PARTITIONS, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(60) == 0
    assert errors == []
    if acks != "0":  # acks=0 reports no offsets
        for q in range(N_PARTITIONS):
            assert delivered[q] == list(range(len(delivered[q])))


def consume(bootstrap, topic, deadline_s=60.0):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(N_PARTITIONS)])
    got: dict[int, list] = {p: [] for p in range(N_PARTITIONS)}
    n = 0
    end = time.monotonic() + deadline_s
    try:
        while n < N_RECORDS and time.monotonic() < end:
            for m in c.consume(num_messages=1000, timeout=0.5):
                assert m.error() is None, m.error()
                got[m.partition()].append((m.key(), m.value(), list(m.headers() or [])))
                n += 1
    finally:
        c.close()
    return got


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_produce_consume_roundtrip(broker, acks, codec):
    topic = f"ck-{acks}-{codec}"
    create_topic(broker.bootstrap_servers, topic)
    produce(broker.bootstrap_servers, topic, acks, codec)
    assert_stored_codec(broker, topic, codec)
    assert_consumed(consume(broker.bootstrap_servers, topic))
