"""Real clients under a producer_byte_rate quota: their own throttle signals fire, and the
broker's throttle record tells which of them honour KIP-219 (observe mode).

Short windows (quota.window.num=2, 1 s samples) keep the burst allowance small, so a few
hundred KB are enough to be throttled for a few seconds.
"""

from __future__ import annotations

import json
import time

import pytest

from mockbroker import MockBroker

QUOTA_BPS = 20_000
PAYLOAD = b"x" * 1000
N = 100  # 100 KB: ~5x the quota's burst allowance


@pytest.fixture(scope="module")
def throttling():
    cfg = {"quota.window.num": 2, "mock.throttle.mode": "observe", "num.partitions": 1,
           "mock.quotas": "clients/kp-q:producer_byte_rate=%d;clients/ck-q:producer_byte_rate=%d" % (QUOTA_BPS, QUOTA_BPS)}
    with MockBroker(config=cfg) as b:
        yield b


def produce_events(b, client_id):
    return [e for e in b.throttle_events(client_id) if e["api_key"] == 0]


def test_kafka_python_reports_and_honours_throttle(throttling):
    from kafka import KafkaProducer

    throttling.create_topic("thr-kp", 1)
    p = KafkaProducer(bootstrap_servers=throttling.bootstrap_servers, client_id="kp-q", acks=1, linger_ms=5,
                      batch_size=4096, max_in_flight_requests_per_connection=1)  # no pipelining
    t0 = time.monotonic()
    for _ in range(N):
        p.send("thr-kp", PAYLOAD)
    p.flush(60)
    elapsed = time.monotonic() - t0
    metrics = p.metrics()
    p.close()
    assert metrics["producer-metrics"]["throttle-time-max"] > 0  # kafka-python 3.0 names it so
    events = produce_events(throttling, "kp-q")
    assert events and all(e["client_should_throttle"] for e in events)  # Produce v9 >= v6
    # kafka-python backs off itself (KIP-219): with one request in flight (a pipelined request
    # was sent before the throttled response arrived, so it cannot count), its next request
    # never comes before the deadline
    answered = [e for e in events if e["next_request_ms"] is not None]
    assert answered and all((e["early_ms"] or 0) <= 5 for e in answered), answered
    # and the throttling paces it near the quota (tolerance: one window of slack)
    assert elapsed >= (N * len(PAYLOAD) - 2 * QUOTA_BPS) / QUOTA_BPS - 1.0


def test_confluent_throttle_callback_fires_and_it_sends_early(throttling):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    throttling.create_topic("thr-ck", 1)
    seen: list[float] = []
    stats: list[dict] = []
    p = confluent_kafka.Producer({"bootstrap.servers": throttling.bootstrap_servers, "client.id": "ck-q",
                                  "statistics.interval.ms": 500, "stats_cb": lambda s: stats.append(json.loads(s)),
                                  "acks": 1, "linger.ms": 5, "batch.size": 4096,
                                  "max.in.flight.requests.per.connection": 1,
                                  "throttle_cb": lambda ev: seen.append(ev.throttle_time)})
    for _ in range(N):
        p.produce("thr-ck", PAYLOAD)
        p.poll(0)
    assert p.flush(60) == 0
    p.poll(0.5)
    assert seen and max(seen) > 0  # ThrottleEvent.throttle_time is in seconds
    # librdkafka's statistics: the broker's throttle window counts the non-zero throttles
    p.poll(0.6)
    assert any(b["throttle"]["cnt"] > 0 and b["throttle"]["max"] > 0
               for st in stats for b in st["brokers"].values() if b["nodeid"] >= 0)
    events = produce_events(throttling, "ck-q")
    assert events
    # librdkafka has no KIP-219 back-off: even with one request in flight it sends the next
    # as soon as the throttled response arrives, before the deadline
    assert any((e["early_ms"] or 0) > 5 for e in events), events
