"""Helpers of the PySpark tests: input written with kafka-python, output read back, bounded query waits.

Record ``i`` of a run has key ``<prefix>-<i>`` and a value naming it, so that every test can compare
what Spark wrote against what it was given, by key.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

QUERY_TIMEOUT_S = 90.0
#: Kafka client options of every Spark source here: a consumer call (position, offsetsForTimes) against
#: a broker that is gone gives up after 20 s instead of 60 s, so a failed test's tasks end soon
CLIENT_TIMEOUTS = {"kafka.default.api.timeout.ms": 20000, "kafka.request.timeout.ms": 15000}


def produce(bootstrap: str, topic: str, keys: list[str], *, value_bytes: int = 40,
            timestamps: list[int] | None = None, partition_of=None, headers: bool = False,
            **producer_conf: Any) -> None:
    """Write one record per key (value: the key padded to ``value_bytes``), acks=all, then flush."""
    p = KafkaProducer(**{"bootstrap_servers": bootstrap, "acks": "all", "linger_ms": 5, **producer_conf})
    try:
        for n, key in enumerate(keys):
            value = key.encode().ljust(value_bytes, b".")
            kw: dict[str, Any] = {}
            if timestamps is not None:
                kw["timestamp_ms"] = timestamps[n]
            if partition_of is not None:
                kw["partition"] = partition_of(n)
            if headers:
                kw["headers"] = [("src", key.encode()), ("n", str(n).encode())]
            p.send(topic, key=key.encode(), value=value, **kw)
        p.flush(timeout=30)
    finally:
        p.close(timeout=5)


def read_all(bootstrap: str, topic: str, *, timeout_s: float = 30.0) -> list[Any]:
    """Every record of ``topic`` up to its end offsets now (kafka-python ConsumerRecords)."""
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=1000)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(c.partitions_for_topic(topic) or [])]
        c.assign(parts)
        c.seek_to_beginning(*parts)
        end = c.end_offsets(parts)
        out: list[Any] = []
        deadline = time.monotonic() + timeout_s
        while any(c.position(tp) < end[tp] for tp in parts):
            assert time.monotonic() < deadline, f"{topic}: not all records read in {timeout_s}s"
            for recs in c.poll(timeout_ms=500).values():
                out.extend(recs)
        return out
    finally:
        c.close()


def keys_of(records: list[Any]) -> Counter[str]:
    return Counter(r.key.decode() for r in records)


def wait_for(query, condition, *, timeout_s: float = QUERY_TIMEOUT_S, what: str = "") -> None:
    """Poll a running streaming query until ``condition(query)``; its exception, or a timeout, fails."""
    deadline = time.monotonic() + timeout_s
    while not condition(query):
        err = query.exception()
        assert err is None, f"query failed: {err}"
        assert query.isActive, "query stopped"
        assert time.monotonic() < deadline, f"timed out after {timeout_s}s waiting for {what or condition}"
        time.sleep(0.2)


def _offsets(o) -> dict:
    return json.loads(o) if isinstance(o, str) else (o or {})


def caught_up(total: int | Callable[[], int]):
    """The query's last batch ended at ``total`` records (or ``total()``, evaluated each poll) over its
    source's partitions, and there is nothing newer (end offset == latest offset)."""
    def check(query) -> bool:
        p = query.lastProgress
        if not p or not p["sources"]:
            return False
        src = p["sources"][0]
        end = _offsets(src["endOffset"])
        ends = sum(int(o) for parts in end.values() for o in parts.values())
        want = total() if callable(total) else total
        return ends == want and end == _offsets(src.get("latestOffset") or src["endOffset"])
    return check


def rows_read(query) -> int:
    return sum(p["numInputRows"] for p in query.recentProgress)


def kafka_stream(spark, bootstrap: str, **options: Any):
    """``readStream.format("kafka")`` with ``options`` (``kafka.``-prefixed ones go to the consumer)."""
    reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in {**CLIENT_TIMEOUTS, **options}.items():
        reader = reader.option(k, v)
    return reader.load()


def kafka_batch(spark, bootstrap: str, **options: Any):
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in {**CLIENT_TIMEOUTS, **options}.items():
        reader = reader.option(k, v)
    return reader.load()
