"""confluent-kafka's ShareConsumer (librdkafka's preview share consumer, KIP-932) on a broker whose
clock the test drives: records a consumer holds go to another only when their acquisition lock
expires (``advance``), a RELEASE is redelivered with its delivery count increased, a REJECT never.

This is the example of docs/share-groups.md.
"""

from __future__ import annotations

import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
if not hasattr(confluent_kafka, "ShareConsumer"):
    pytest.skip("this confluent-kafka has no ShareConsumer", allow_module_level=True)
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer  # noqa: E402

LOCK_MS = 30_000  # share.record.lock.duration.ms: Kafka's default


def poll_until(consumer: ShareConsumer, n: int, timeout_s: float = 20.0) -> list:
    """What ``consumer`` is given, once it is at least ``n`` records (the first poll of a new member
    waits for its assignment: a share member gets its partitions on its second heartbeat)."""
    got: list = []
    deadline = time.monotonic() + timeout_s
    while len(got) < n and time.monotonic() < deadline:
        got += [m for m in consumer.poll(0.5) if m.error() is None]
    return got


def test_lock_expiry_release_and_reject(mockbroker_manual):
    broker = mockbroker_manual
    broker.create_topic("jobs", 1)
    broker.call(lambda c: c.config_catalog.groups.setdefault("workers", {}).update(
        {"share.auto.offset.reset": "earliest"}))  # as kafka-configs --entity-type groups would set it
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(3):
        producer.produce("jobs", value=b"job-%d" % i)
    producer.flush(10)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "group.id": "workers",
            "share.acknowledgement.mode": "explicit"}
    slow, fast = ShareConsumer(conf), ShareConsumer(conf)
    try:
        slow.subscribe(["jobs"])
        held = poll_until(slow, 3)
        assert [(m.value(), m.delivery_count()) for m in held] == [(b"job-0", 1), (b"job-1", 1), (b"job-2", 1)]

        fast.subscribe(["jobs"])
        assert poll_until(fast, 1, timeout_s=6.0) == []  # held by slow: never two consumers at once
        broker.advance(LOCK_MS)  # slow's lock expires
        again = poll_until(fast, 3)
        assert [(m.value(), m.delivery_count()) for m in again] == [(b"job-0", 2), (b"job-1", 2), (b"job-2", 2)]

        for m, how in zip(again, (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT)):
            fast.acknowledge(m, how)
        fast.commit_sync()
        redelivered = poll_until(fast, 1)
        assert [(m.value(), m.delivery_count()) for m in redelivered] == [(b"job-1", 3)]  # job-2 never again
        fast.acknowledge(redelivered[0])
        fast.commit_sync()

        group = broker.share_group("workers")
        assert group["acknowledgements"] == {"ACCEPT": 2, "RELEASE": 1, "REJECT": 1}
        assert group["share_partitions"][0]["start_offset"] == 3  # every record done
    finally:
        fast.close()
        slow.close()
