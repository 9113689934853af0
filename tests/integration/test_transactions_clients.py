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


def _commit_one_transaction(client: str, bootstrap: str, topic: str, tid: str) -> None:
    if client == "kafka-python":
        p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, client_id=tid, linger_ms=5)
        try:
            p.init_transactions()
            p.begin_transaction()
            for i, v in enumerate(values("tv", 10)):
                p.send(topic, v, partition=i % PARTITIONS)
            p.commit_transaction()
        finally:
            p.close()
        return
    ck = pytest.importorskip("confluent_kafka")
    p = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "client.id": tid, "linger.ms": 5})
    p.init_transactions(30)
    p.begin_transaction()
    for i, v in enumerate(values("tv", 10)):
        p.produce(topic, v, partition=i % PARTITIONS)
    p.commit_transaction(30)
    p.flush(10)


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
@pytest.mark.parametrize("transaction_version", ["2", "0"])
def test_tv1_clients_with_verification_at_either_transaction_version(mockbroker_factory, client,
                                                                     transaction_version):
    """The broker verifies every transactional produce with the coordinator (KIP-890 part 1, on by
    default) and finalizes transaction.version 2 by default: these TV1 clients still add their
    partitions with AddPartitionsToTxn, produce at v11 or below (verified, never added by Produce)
    and end with EndTxn below v5 or without the bump; the records commit either way."""
    broker = mockbroker_factory({"mock.transaction.version": transaction_version})
    topic, tid = f"txn-tv-{client}", f"tv-{client}"
    broker.create_topic(topic, PARTITIONS)
    assert broker.call(lambda cl: all(b.replica_manager.txn_verifier is not None for b in cl.brokers.values()))
    _commit_one_transaction(client, broker.bootstrap_servers, topic, tid)
    assert consume_all(broker.bootstrap_servers, topic, "read_committed", 10) == sorted(values("tv", 10))
    mine = broker.journal(client_id=tid)
    adds = [r for r in mine if r["api"] == "ADD_PARTITIONS_TO_TXN"]
    produces = [r for r in mine if r["api"] == "PRODUCE"]
    assert adds and produces and all(r["api_version"] <= 11 for r in produces)
    assert all(p["error_code"] == 0 for r in adds + produces for p in r["partitions"])
    ended = broker.call(lambda cl: cl.txn.txn_manager.transactions[tid])
    assert ended.state.state_name == "CompleteCommit"


def test_confluent_kafka_retries_concurrent_transactions_while_markers_travel(mockbroker_factory):
    """With the markers 40 ms on their way (mock.txn.marker.latency.ms, as Kafka's marker sender
    round trip), librdkafka's next transaction finds the previous one still completing: its
    AddPartitionsToTxn is answered CONCURRENT_TRANSACTIONS, it retries, and every transaction commits."""
    ck = pytest.importorskip("confluent_kafka")
    broker = mockbroker_factory({"mock.txn.marker.latency.ms": 40})
    topic, tid = "txn-marker-latency", "ck-latency"
    broker.create_topic(topic, PARTITIONS)
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid, "client.id": tid,
                     "linger.ms": 0})
    p.init_transactions(30)
    for t in range(5):
        p.begin_transaction()
        for i, v in enumerate(values(f"ml{t}", 4)):
            p.produce(topic, v, partition=i % PARTITIONS)
        p.commit_transaction(30)
    p.flush(10)
    expected = sorted(v for t in range(5) for v in values(f"ml{t}", 4))
    assert consume_all(broker.bootstrap_servers, topic, "read_committed", len(expected)) == expected
    errors = [p["error_code"] for r in broker.journal(api_key="ADD_PARTITIONS_TO_TXN", client_id=tid)
              for p in r["partitions"]]
    assert 51 in errors, errors  # CONCURRENT_TRANSACTIONS, then the retry went through
    assert errors[-1] == 0
