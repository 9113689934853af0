"""The streaming job of pipeline.py against mockbroker, its Kafka source held to a consumer quota.

The test writes 4,000 events (~240 KB of JSON: 5 users, 10 minutes of event time) to a 2-partition
topic, then one "flush" event far ahead in event time, caps the job's source client id
(``kafka.client.id``) at 18 KB/s of fetched bytes, runs the job until it has processed everything
(its first micro-batch reads all the events and the flush; the watermark then passes every window
and the next micro-batch writes them) and reads the output topic.  It checks:

* the answer: one record per user and 1-minute window, with exactly the count and sum the test
  computes itself from the events it generated;
* the quota: the broker throttled the job's Fetch requests (``broker.throttle_events``), for
  seconds in all.

How a consumer quota bites (Kafka's rule, which mockbroker follows): the rate is measured over 11
one-second samples and a young client counts as 10 s old, so about 10 s worth of the quota (~180 KB
here) is read at full speed; then Fetch requests get empty responses with a throttle time until
that burst's sample leaves the window ~11 s later.  ``kafka.max.partition.fetch.bytes`` keeps each
Fetch small so the burst is many requests, not two.  Everything is bounded in time: a stuck query
fails the test with its last progress instead of hanging.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from pipeline import SOURCE_CLIENT_ID, build_query, event, flush_event

USERS = ["alice", "bob", "carol", "dave", "erin"]
EVENTS = 4_000
START = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
SPAN = timedelta(minutes=10)
WINDOW = timedelta(minutes=1)
CONSUMER_QUOTA = 18_432        # bytes/s the job's source may fetch
QUERY_TIMEOUT_S = 120         # a hang guard: the query takes ~15-40 s


def generate(seed: int = 20240501) -> list[tuple[str, int, datetime]]:
    """The input, in random event-time order (the watermark, 1 h, is far wider than the 10 min span)."""
    rng = random.Random(seed)
    return [(rng.choice(USERS), rng.randint(1, 1000), START + timedelta(milliseconds=rng.randrange(
        int(SPAN.total_seconds() * 1000)))) for _ in range(EVENTS)]


def expected_totals(events) -> dict[tuple[str, datetime], tuple[int, int]]:
    """(user, window start) -> (count, sum), computed without Spark."""
    acc: dict[tuple[str, datetime], list[int]] = defaultdict(lambda: [0, 0])
    for user, amount, ts in events:
        start = START + WINDOW * ((ts - START) // WINDOW)
        acc[user, start][0] += 1
        acc[user, start][1] += amount
    return {k: (c, s) for k, (c, s) in acc.items()}


def produce(bootstrap: str, topic: str, values: list[tuple[str, bytes]]) -> int:
    """Send (key, value) records; every one acknowledged. Returns the value bytes sent."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20)
    try:
        futures = [producer.send(topic, key=k.encode(), value=v) for k, v in values]
        producer.flush(timeout=30)
        for f in futures:
            f.get(timeout=1)
    finally:
        producer.close(timeout=5)
    return sum(len(v) for _, v in values)


def drain(query, timeout_s: float) -> None:
    """``query.processAllAvailable()`` bounded in time: on timeout the query is stopped and the test
    fails with its last progress.  Raises the query's own error when it failed."""
    errors: list[BaseException] = []

    def run():
        try:
            query.processAllAvailable()
        except Exception as e:  # noqa: BLE001 -- StreamingQueryException and all: re-raised below
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        progress = query.lastProgress
        query.stop()
        pytest.fail(f"the query had not caught up after {timeout_s:.0f}s; last progress: {progress}")
    if errors:
        raise errors[0]


def read_all(bootstrap: str, topic: str, timeout_s: float = 20) -> list[dict]:
    """Every record of ``topic`` up to its end offsets now, values decoded from JSON."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=500)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        end = consumer.end_offsets(parts)
        out: list[dict] = []
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < end[tp] for tp in parts):
            assert time.monotonic() < deadline, f"could not read {topic} to {end} in {timeout_s}s"
            for records in consumer.poll(timeout_ms=200).values():
                out += [json.loads(r.value) | {"_key": r.key.decode()} for r in records]
        return out
    finally:
        consumer.close()


def test_windowed_totals_under_a_consumer_quota(broker, spark, tmp_path):
    in_topic, out_topic = "events", "totals"
    broker.create_topic(in_topic, 2)
    broker.create_topic(out_topic, 2)
    broker.set_quota(client_id=SOURCE_CLIENT_ID, consumer_byte_rate=CONSUMER_QUOTA)

    events = generate()
    values = [(u, event(u, a, ts)) for u, a, ts in events]
    sent = produce(broker.bootstrap_servers, in_topic, values)
    assert sent > 12 * CONSUMER_QUOTA  # past the ~10 s worth a young client may read at full speed
    # then the flush: the query's first micro-batch reads everything the topic holds when it starts
    # (no maxOffsetsPerTrigger), so no event can come after the flush and be dropped as late
    produce(broker.bootstrap_servers, in_topic, [("__flush__", flush_event(max(ts for _, _, ts in events)))])

    started = time.monotonic()
    query = build_query(spark, broker.bootstrap_servers, in_topic, out_topic, str(tmp_path / "checkpoint"),
                        # small Fetch requests (Spark's default: up to 1 MiB per partition)
                        source_options={"kafka.max.partition.fetch.bytes": "8192"})
    try:
        drain(query, QUERY_TIMEOUT_S)
        progress = query.recentProgress
    finally:
        query.stop()
    elapsed = time.monotonic() - started
    assert [p["numInputRows"] for p in progress if p["numInputRows"]] == [EVENTS + 1], progress

    out = read_all(broker.bootstrap_servers, out_topic)
    got: dict[tuple[str, datetime], tuple[int, int]] = {}
    for r in out:
        assert r["_key"] == r["user"]
        key = (r["user"], datetime.fromisoformat(r["window_start"]))
        assert datetime.fromisoformat(r["window_end"]) - key[1] == WINDOW
        assert key not in got, f"window {key} written twice: {got[key]} and {(r['count'], r['sum'])}"
        got[key] = (r["count"], r["sum"])
    assert got == expected_totals(events)

    throttles = broker.throttle_events(SOURCE_CLIENT_ID)
    assert throttles, "the broker never throttled the job: the quota did not bite"
    assert {t["quota_type"] for t in throttles} == {"Fetch"}
    assert all(t["client_should_throttle"] for t in throttles)
    throttled_ms = sum(t["throttle_ms"] for t in throttles)
    assert throttled_ms >= 2000, throttles  # the job waited out the burst (~10 s over its connections)
    print(f"\n{EVENTS} events ({sent} B) -> {len(got)} windows in {elapsed:.1f}s, {len(progress)} micro-batches; "
          f"{len(throttles)} throttled Fetch responses, {throttled_ms} ms of throttle in all")
