"""Transactional producers against the broker: kafka-python 3.0.x and confluent-kafka (librdkafka)
commit and abort transactions; a read_committed consumer sees exactly the committed records, a
read_uncommitted one every record."""

from __future__ import annotations

import time

import pytest

kafka = pytest.importorskip("kafka")
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.errors import InvalidProducerEpochError, ProducerFencedError  # noqa: E402

PARTITIONS = 2


def consume_all(bootstrap: str, topic: str, isolation: str, expect: int, deadline_s: float = 20.0) -> list[bytes]:
    """Every value of the topic's partitions from the start, read with kafka-python until ``expect``
    values came (then one more poll, to catch anything extra)."""
    c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                      isolation_level=isolation)
    try:
        c.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        got: list[bytes] = []
        end = time.monotonic() + deadline_s
        while len(got) < expect and time.monotonic() < end:
            for msgs in c.poll(timeout_ms=300).values():
                got.extend(m.value for m in msgs)
        for msgs in c.poll(timeout_ms=300).values():
            got.extend(m.value for m in msgs)
        return sorted(got)
    finally:
        c.close()


def values(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


def test_kafka_python_commit_and_abort(broker):
    topic = "txn-kafka-python"
    broker.create_topic(topic, PARTITIONS)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id="kp-txn", linger_ms=5)
    try:
        p.init_transactions()
        for prefix, commit in (("c1", True), ("a1", False), ("c2", True), ("a2", False)):
            p.begin_transaction()
            for i, v in enumerate(values(prefix, 20)):
                p.send(topic, v, partition=i % PARTITIONS)
            if commit:
                p.commit_transaction()
            else:
                p.flush()  # the records are in the log before the abort
                p.abort_transaction()
    finally:
        p.close()
    committed = sorted(values("c1", 20) + values("c2", 20))
    assert consume_all(broker.bootstrap_servers, topic, "read_committed", len(committed)) == committed
    everything = sorted(committed + values("a1", 20) + values("a2", 20))
    assert consume_all(broker.bootstrap_servers, topic, "read_uncommitted", len(everything)) == everything


def test_kafka_python_fenced_by_a_new_producer(broker):
    topic = "txn-kafka-python-fence"
    broker.create_topic(topic, PARTITIONS)
    old = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id="kp-fence")
    new = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id="kp-fence")
    try:
        old.init_transactions()
        old.begin_transaction()
        old.send(topic, b"old", partition=0)
        old.flush()
        new.init_transactions()  # aborts the old producer's transaction and bumps the epoch
        new.begin_transaction()
        new.send(topic, b"new", partition=1)
        new.commit_transaction()
        with pytest.raises((ProducerFencedError, InvalidProducerEpochError)):
            old.commit_transaction()
    finally:
        old.close(timeout=1)
        new.close()
    assert consume_all(broker.bootstrap_servers, topic, "read_committed", 1) == [b"new"]


def test_confluent_kafka_commit_and_abort(broker):
    ck = pytest.importorskip("confluent_kafka")
    topic = "txn-confluent"
    broker.create_topic(topic, PARTITIONS)
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "ck-txn",
                     "linger.ms": 5})
    p.init_transactions(30)
    for prefix, commit in (("c1", True), ("a1", False), ("c2", True)):
        p.begin_transaction()
        for i, v in enumerate(values(prefix, 20)):
            p.produce(topic, v, partition=i % PARTITIONS)
        if commit:
            p.commit_transaction(30)
        else:
            p.flush(30)
            p.abort_transaction(30)
    p.flush(10)
    committed = sorted(values("c1", 20) + values("c2", 20))
    assert consume_all(broker.bootstrap_servers, topic, "read_committed", len(committed)) == committed
    everything = sorted(committed + values("a1", 20))
    assert consume_all(broker.bootstrap_servers, topic, "read_uncommitted", len(everything)) == everything
