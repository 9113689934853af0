"""kafka-python 3.0.x against the broker: produce 10,000 records per acks x codec, read back."""

from __future__ import annotations


import pytest

kafka = pytest.importorskip("kafka")
from kafka import KafkaProducer  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

from .records import (  # noqa: E402
    N_PARTITIONS, N_RECORDS, assert_consumed, assert_stored_codec, consume_with_kafka_python, record,
)

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture(scope="module")
def admin(broker):
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    yield a
    a.close()


def produce(bootstrap, topic, acks, codec, **extra):
    p = KafkaProducer(
        bootstrap_servers=bootstrap, acks=acks, compression_type=codec,
        enable_idempotence=(acks == "all"), linger_ms=5, batch_size=64 * 1024, **extra,
    )
    futures = []
    for i in range(N_RECORDS):
        k, v, h = record(i)
        futures.append(p.send(topic, key=k, value=v, headers=h, partition=i % N_PARTITIONS))
    p.flush(timeout=60)
    if acks != 0:
        offsets = [f.get(timeout=30).offset for f in futures]
        for part in range(N_PARTITIONS):
            assert offsets[part::N_PARTITIONS] == list(range(len(offsets[part::N_PARTITIONS])))
    p.close()


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c or "none")
@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_produce_consume_roundtrip(broker, admin, acks, codec):
    topic = f"kp-{acks}-{codec or 'none'}"
    admin.create_topics([NewTopic(topic, N_PARTITIONS, 1)])
    produce(broker.bootstrap_servers, topic, acks, codec)
    assert_stored_codec(broker, topic, codec)
    assert_consumed(consume_with_kafka_python(broker.bootstrap_servers, topic))
