"""Real clients against the purgatory: acks=all waits for simulated followers, fetches long-poll.

Timing bounds come from the mechanism, not from hope: an acks=all produce
cannot complete before the followers' lag; a long-poll Fetch is held for
max_wait (the timing wheel fires on its 1 ms tick, the loop adds scheduling
slack, so the band is [max_wait - 1 ms, max_wait + 150 ms]); a Fetch woken by
an append answers within the time the broker takes to handle that Produce.
"""

from __future__ import annotations

import threading
import time

import pytest

from mockbroker import MockBroker
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

LAG_MS = 300


@pytest.fixture(scope="module")
def cluster():
    cfg = {"mock.num.brokers": 3, "default.replication.factor": 3, "num.partitions": 1,
           "mock.replication.lag.ms": LAG_MS}
    with MockBroker(config=cfg) as b:
        yield b


def test_kafka_python_acks_all_waits_for_the_replication_lag(cluster):
    from kafka import KafkaProducer

    cluster.create_topic("lag-kp", 1, 3)
    p = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=0)
    p.send("lag-kp", b"warm-up").get(timeout=30)  # metadata, connection, producer id
    for i in range(3):
        t0 = time.monotonic()
        md = p.send("lag-kp", b"v%d" % i).get(timeout=30)
        elapsed_ms = (time.monotonic() - t0) * 1000
        assert md.offset == i + 1
        assert LAG_MS <= elapsed_ms < LAG_MS + 1000, elapsed_ms
    p.close()
    held = [e["held_ms"] for e in cluster.journal(ApiKey.PRODUCE, client_id=p.config["client_id"])]
    assert len(held) == 4 and min(held) >= LAG_MS - 1


def test_confluent_acks_all_waits_for_the_replication_lag(cluster):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    cluster.create_topic("lag-ck", 1, 3)
    p = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                                  "linger.ms": 0, "client.id": "lag-ck"})
    acked: list[float] = []
    p.produce("lag-ck", b"warm-up")
    p.flush(30)
    t0 = time.monotonic()
    p.produce("lag-ck", b"x", on_delivery=lambda err, msg: acked.append(time.monotonic() - t0) if not err else None)
    assert p.flush(30) == 0
    assert len(acked) == 1 and LAG_MS <= acked[0] * 1000 < LAG_MS + 1000


def test_lag_beyond_the_request_timeout_fails_the_client_without_duplicates(cluster):
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError, RequestTimedOutError

    cluster.create_topic("lag-timeout", 1, 3)
    p = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", enable_idempotence=True,
                      request_timeout_ms=1000, delivery_timeout_ms=3500, retry_backoff_ms=100, linger_ms=0,
                      client_id="lag-timeout")
    p.send("lag-timeout", b"warm-up").get(timeout=30)
    cluster.set_replication_lag(20_000, topic="lag-timeout")
    with pytest.raises((KafkaTimeoutError, RequestTimedOutError)):
        p.send("lag-timeout", b"late").get(timeout=30)
    p.close(timeout=5)
    produced = [e for e in cluster.journal(ApiKey.PRODUCE, client_id="lag-timeout")]
    assert len(produced) >= 3  # the warm-up, the first try, and at least one retry of the same batch
    # No try is answered before its timeout: each is either answered REQUEST_TIMED_OUT once the broker
    # held it for the request's timeout (1000 ms from its receipt, on the broker's clock), or never
    # answered because the client gave up first and closed the connection (its own 1000 ms count from
    # sending, which a loaded loop may read later than it was sent: no lower bound on the broker's side).
    for e in produced[1:]:
        assert e["outcome"] in ("response", "closed"), e
        if e["outcome"] == "response":
            assert [p["error_code"] for p in e["partitions"]] == [ErrorCode.request_timed_out], e
            assert e["held_ms"] >= e["details"]["timeout_ms"] - 1, e
    st = cluster.partition_state("lag-timeout", 0)
    assert st["log_end_offset"] == 2 and st["high_watermark"] == 1  # the retried batch is in the log once


def test_kafka_python_consumer_long_polls_idle_topic_and_wakes_on_produce():
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    with MockBroker(config={"num.partitions": 1}) as b:
        b.create_topic("idle", 1)
        c = KafkaConsumer(bootstrap_servers=b.bootstrap_servers, fetch_max_wait_ms=500, client_id="idle-consumer",
                          enable_auto_commit=False, auto_offset_reset="earliest")
        c.assign([TopicPartition("idle", 0)])
        end = time.monotonic() + 2.6
        while time.monotonic() < end:
            assert c.poll(timeout_ms=100) == {}
        idle = [e["held_ms"] for e in b.journal(ApiKey.FETCH, client_id="idle-consumer")]
        assert 3 <= len(idle) <= 6  # ~5 fetches in 2.6 s, not a hot loop
        for held in idle[1:]:  # the first may start before the partition position is known
            assert 499 <= held <= 650, idle

        # a record produced while a fetch waits wakes it at once: produce from another thread
        # while the consumer polls (kafka-python sends its next fetch only inside poll())
        p = KafkaProducer(bootstrap_servers=b.bootstrap_servers, acks=1, linger_ms=0)
        p.partitions_for("idle")  # metadata and connection up front
        sent: list = []
        t = threading.Timer(0.3, lambda: sent.append(p.send("idle", b"wake").get(timeout=10)))
        t.start()
        got = None
        end = time.monotonic() + 5
        while got is None and time.monotonic() < end:
            for msgs in c.poll(timeout_ms=100).values():
                got = msgs[0]
        t.join()
        assert got is not None and got.value == b"wake" and got.offset == sent[0].offset
        fetches = b.journal(ApiKey.FETCH, client_id="idle-consumer")
        produce = b.journal(ApiKey.PRODUCE)[-1]
        # the append completes the parked fetch inside the Produce's own handling
        woken = [e for e in fetches if e["received_ns"] < produce["received_ns"] <= e["responded_ns"]]
        assert len(woken) == 1
        assert (woken[0]["responded_ns"] - produce["received_ns"]) / 1e6 < 50
        assert woken[0]["held_ms"] < 499
        p.close()
        c.close()
