"""Idempotent producers survive lost Produce responses without duplicates.

The broker appends the batch, then loses the response: ``close`` drops the
connection instead of answering, ``drop`` never answers so the client's
request times out.  Either way the client resends the same batch (same
producer id, epoch and sequence); the broker must acknowledge it with the
original offset and not append it again.  A non-idempotent producer under
the same fault shows duplicates, which proves the fault really forces a retry.
"""

from __future__ import annotations

import time

import pytest

from protocol.registry import ApiKey

from .records import N_PARTITIONS

N = 3000


def fired(broker, rule) -> int:
    """How often a fault rule fired so far (MockBroker.faults())."""
    return next(r["fired"] for r in broker.faults() if r["id"] == rule["id"])


def rec(i):
    return b"k%05d" % i, b"v%05d" % i


def read_back_kafka_python(bootstrap, topic):
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                      consumer_timeout_ms=3000)
    c.assign([TopicPartition(topic, p) for p in range(N_PARTITIONS)])
    got: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in range(N_PARTITIONS)}
    end = time.monotonic() + 30
    for m in c:
        got[m.partition].append((m.key, m.value))
        if time.monotonic() > end:
            break
    c.close()
    return got


def assert_exactly_once(got):
    for p in range(N_PARTITIONS):
        want = [rec(i) for i in range(N) if i % N_PARTITIONS == p]
        assert got[p] == want, f"partition {p}: {len(got[p])} records, want {len(want)}"


def kafka_python_produce(bootstrap, topic, idempotent):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=idempotent, retries=5,
                      max_in_flight_requests_per_connection=1 if not idempotent else 5,
                      request_timeout_ms=3000, retry_backoff_ms=50, linger_ms=20)
    futs = [p.send(topic, key=k, value=v, partition=i % N_PARTITIONS) for i, (k, v) in enumerate(map(rec, range(N)))]
    p.flush(60)
    for f in futs:
        f.get(timeout=30)
    p.close()


@pytest.mark.parametrize("action", ["close", "drop"])
def test_kafka_python_idempotent_no_duplicates(broker, action):
    topic = f"idem-kp-{action}"
    broker.create_topic(topic, N_PARTITIONS)
    rule = broker.lose_response(ApiKey.PRODUCE, action, count=2)
    kafka_python_produce(broker.bootstrap_servers, topic, idempotent=True)
    assert fired(broker, rule) == 2
    assert_exactly_once(read_back_kafka_python(broker.bootstrap_servers, topic))


def test_non_idempotent_retry_duplicates_control(broker):
    topic = "idem-kp-control"
    broker.create_topic(topic, N_PARTITIONS)
    rule = broker.lose_response(ApiKey.PRODUCE, "close", count=1)
    kafka_python_produce(broker.bootstrap_servers, topic, idempotent=False)
    assert fired(broker, rule) == 1
    got = read_back_kafka_python(broker.bootstrap_servers, topic)
    assert sum(len(v) for v in got.values()) > N  # the retried batch was appended twice


@pytest.mark.parametrize("action", ["close", "drop"])
def test_confluent_idempotent_no_duplicates(broker, action):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic = f"idem-ck-{action}"
    broker.create_topic(topic, N_PARTITIONS)
    rule = broker.lose_response(ApiKey.PRODUCE, action, count=2)
    p = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                                  "linger.ms": 20, "socket.timeout.ms": 3000, "retry.backoff.ms": 50})
    errors = []
    for i in range(N):
        k, v = rec(i)
        p.produce(topic, key=k, value=v, partition=i % N_PARTITIONS,
                  on_delivery=lambda err, msg: err and errors.append(err))
    assert p.flush(60) == 0
    assert errors == []
    assert fired(broker, rule) == 2
    assert_exactly_once(read_back_kafka_python(broker.bootstrap_servers, topic))


def test_aiokafka_idempotent_no_duplicates(broker):
    import asyncio

    from aiokafka import AIOKafkaProducer

    topic = "idem-ak"
    broker.create_topic(topic, N_PARTITIONS)
    rule = broker.lose_response(ApiKey.PRODUCE, "close", count=2)

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True, linger_ms=20,
                             request_timeout_ms=3000, retry_backoff_ms=50)
        await p.start()
        try:
            futs = [await p.send(topic, key=k, value=v, partition=i % N_PARTITIONS)
                    for i, (k, v) in enumerate(map(rec, range(N)))]
            await asyncio.gather(*futs)
        finally:
            await p.stop()

    asyncio.run(run())
    assert fired(broker, rule) == 2
    assert_exactly_once(read_back_kafka_python(broker.bootstrap_servers, topic))
