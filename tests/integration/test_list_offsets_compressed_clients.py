"""offsets_for_times against compressed batches from real clients: kafka-python and confluent-kafka
(librdkafka) produce records with explicit, increasing timestamps in two large compressed batches per
topic; both clients' offsets_for_times must get the exact first record whose timestamp reaches the
target (ListOffsets by timestamp), and librdkafka's ListOffsets max timestamp (-3) the exact record.
The batch base offsets those lookups would get without decompressing are checked to differ."""

from __future__ import annotations

import pytest

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, OffsetSpec  # noqa: E402
from kafka import KafkaConsumer, KafkaProducer  # noqa: E402
from kafka import TopicPartition as KTopicPartition  # noqa: E402

from protocol.records import parse_header  # noqa: E402

CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
T0 = 1_700_000_000_000
N = 400  # two batches of 200


def ts_of(i: int) -> int:
    # increasing by 10 ms; the very last record goes back in time, so the largest timestamp (N - 2)
    # is not the last offset of its batch
    return T0 + 5 if i == N - 1 else T0 + 10 * i


SAMPLE = [1, 2, 37, 150, 199, 200, 201, 255, 333, N - 2]


def expected_lookups() -> list[tuple[int, int | None]]:
    """(target, first offset whose timestamp reaches it) -- None: no such record."""
    out: list[tuple[int, int | None]] = [(T0 - 1, 0), (T0, 0)]
    out += [(ts_of(i) - 5, i) for i in SAMPLE]
    out += [(ts_of(i), i) for i in SAMPLE]
    out.append((ts_of(N - 2) + 1, None))
    return out


def value(i: int) -> bytes:
    return b"value-%04d|" % i * 6


def check_stored(broker, topic: str, codec: str) -> list[int]:
    """The partition holds a few compressed batches of the codec; their base offsets."""
    batches = [parse_header(b) for b in broker.partition_records(topic, 0)]
    assert sum(h.records_count for h in batches) == N
    assert 2 <= len(batches) <= 4, [h.records_count for h in batches]
    assert {h.compression for h in batches} == {CODECS[codec]}
    bases = [h.base_offset for h in batches]
    # without decompressing, a lookup could only answer a batch's base offset: most of ours are not
    assert sum(1 for _, off in expected_lookups() if off is not None and off not in bases) >= 15
    return bases


def produce_kafka_python(bootstrap: str, topic: str, codec: str) -> None:
    p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, acks="all", linger_ms=50,
                      batch_size=1 << 20)
    try:
        for half in (range(N // 2), range(N // 2, N)):
            futures = [p.send(topic, key=b"k%d" % i, value=value(i), partition=0, timestamp_ms=ts_of(i))
                       for i in half]
            p.flush(timeout=30)
            assert [f.get(timeout=10).offset for f in futures] == list(half)
    finally:
        p.close()


def produce_confluent(bootstrap: str, topic: str, codec: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "acks": "all",
                  "linger.ms": 50, "batch.size": 1 << 20})
    delivered: list[int] = []
    errors: list = []

    def on_delivery(err, msg):
        (errors if err is not None else delivered).append(err if err is not None else msg.offset())

    for half in (range(N // 2), range(N // 2, N)):
        for i in half:
            p.produce(topic, key=b"k%d" % i, value=value(i), partition=0, timestamp=ts_of(i), on_delivery=on_delivery)
        assert p.flush(30) == 0
    assert errors == []
    assert delivered == list(range(N))


def lookups_kafka_python(bootstrap: str, topic: str) -> list[tuple[int, int | None]]:
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tp = KTopicPartition(topic, 0)
        out = []
        for target, _ in expected_lookups():
            found = c.offsets_for_times({tp: target})[tp]
            if found is not None:
                assert found.timestamp == ts_of(found.offset)
            out.append((target, None if found is None else found.offset))
        return out
    finally:
        c.close()


def lookups_confluent(bootstrap: str, topic: str) -> list[tuple[int, int | None]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "enable.auto.commit": False})
    try:
        targets = [t for t, _ in expected_lookups()]
        out = []
        for target in targets:
            (r,) = c.offsets_for_times([TopicPartition(topic, 0, target)], timeout=10)
            assert r.error is None, r.error
            out.append((target, None if r.offset < 0 else r.offset))
        return out
    finally:
        c.close()


def max_timestamp_confluent(bootstrap: str, topic: str) -> tuple[int, int]:
    a = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0)
    res = a.list_offsets({tp: OffsetSpec.max_timestamp()}, request_timeout=10)[tp].result(timeout=10)
    return res.offset, res.timestamp


@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_offsets_for_times_exact_in_compressed_batches(broker, client, codec):
    topic = f"loct-{client}-{codec}"
    broker.create_topic(topic, 1)
    bootstrap = broker.bootstrap_servers
    (produce_kafka_python if client == "kafka-python" else produce_confluent)(bootstrap, topic, codec)
    bases = check_stored(broker, topic, codec)

    want = expected_lookups()
    assert lookups_kafka_python(bootstrap, topic) == want
    assert lookups_confluent(bootstrap, topic) == want
    # KIP-734: the record with the largest timestamp, not the last offset of its batch (N - 1)
    assert max_timestamp_confluent(bootstrap, topic) == (N - 2, ts_of(N - 2))
    assert N - 2 not in bases
