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


def test_a_group_whose_committed_offset_was_deleted_resets_by_auto_offset_reset(broker):
    """DeleteRecords past a group's committed offset: the next Fetch from it gets OFFSET_OUT_OF_RANGE;
    auto.offset.reset=earliest resumes at the new log start (every record left, once), and
    auto.offset.reset=error surfaces librdkafka's _AUTO_OFFSET_RESET error."""
    b = broker.bootstrap_servers
    topic, n, cut = "dr-reset", 60, 25
    admin = AdminClient({"bootstrap.servers": b})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    p = Producer({"bootstrap.servers": b, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=b"%d" % i, partition=0)
    assert p.flush(30) == 0
    for group in ("dr-earliest", "dr-error"):
        c = Consumer({"bootstrap.servers": b, "group.id": group})
        c.commit(offsets=[TopicPartition(topic, 0, 10)], asynchronous=False)
        c.close()
    tp = TopicPartition(topic, 0, cut)
    assert admin.delete_records([tp])[tp].result(timeout=30).low_watermark == cut

    def consume(group: str, reset: str) -> tuple[list[int], list[str]]:
        c = Consumer({"bootstrap.servers": b, "group.id": group, "auto.offset.reset": reset,
                      "enable.auto.commit": False})
        c.assign([TopicPartition(topic, 0)])  # from the committed offset 10: below the log start
        got, errors = [], []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(got) < n - cut and not errors:
            m = c.poll(0.1)
            if m is None:
                continue
            if m.error() is None:
                got.append(int(m.value()))
            elif m.error().code() != confluent_kafka.KafkaError._PARTITION_EOF:
                errors.append(m.error().name())
        c.close()
        return got, errors

    assert consume("dr-earliest", "earliest") == (list(range(cut, n)), [])
    got, errors = consume("dr-error", "error")
    assert (got, errors) == ([], ["_AUTO_OFFSET_RESET"])
    assert any(q["error_code"] == 1 for j in broker.journal("FETCH") for q in j["partitions"])  # OFFSET_OUT_OF_RANGE
