"""Spark Structured Streaming (PySpark 4.1, Spark's Kafka source and sink) against mockbroker.

Each test writes input with kafka-python, runs a streaming query on the session-wide local[2] Spark
(tests/integration/conftest.py) and compares what Spark read or wrote back with the input, by key.
Spark's Kafka sink is at-least-once; with no faults every record must come out exactly once.
"""

from __future__ import annotations

import json
from collections import Counter

from tests.integration.spark_jobs import (
    caught_up,
    kafka_stream,
    keys_of,
    produce,
    read_all,
    rows_read,
    wait_for,
)


def memory_rows(spark, name: str) -> list:
    return spark.sql(f"SELECT * FROM {name}").collect()


def _to_kafka(spark, b: str, source: str, sink: str, checkpoint: str, trigger: dict, max_offsets: int):
    """subscribe ``source`` → value prefixed with 'out:' → Kafka sink ``sink``, with a checkpoint."""
    src = kafka_stream(spark, b, subscribe=source, startingOffsets="earliest", maxOffsetsPerTrigger=max_offsets)
    out = src.selectExpr("key", "concat('out:', CAST(value AS STRING)) AS value")
    return (out.writeStream.format("kafka").option("kafka.bootstrap.servers", b).option("topic", sink)
            .option("checkpointLocation", checkpoint).trigger(**trigger).start())


def test_stream_to_kafka_stopped_and_restarted_from_its_checkpoint(spark, broker, tmp_path):
    """subscribe → transformation → Kafka sink.  The job stops after the first 2,000 of 3,000 records
    (availableNow: it ends between micro-batches) and restarts from its checkpoint when the rest has
    arrived: with no fault, every input record is in the output exactly once, transformed."""
    b = broker.bootstrap_servers
    broker.create_topic("st-in", 3)
    broker.create_topic("st-out", 3)
    keys = [f"st-{i}" for i in range(3000)]
    produce(b, "st-in", keys[:2000])
    checkpoint = str(tmp_path / "checkpoint")
    q = _to_kafka(spark, b, "st-in", "st-out", checkpoint, {"availableNow": True}, 300)
    assert q.awaitTermination(120), "the first run did not finish"
    first_run = [p["numInputRows"] for p in q.recentProgress]
    assert sum(first_run) == 2000 and max(first_run) <= 300, first_run  # maxOffsetsPerTrigger
    produce(b, "st-in", keys[2000:])
    q = _to_kafka(spark, b, "st-in", "st-out", checkpoint, {"processingTime": "100 milliseconds"}, 300)
    try:
        wait_for(q, caught_up(3000), what="the restarted query to reach the end of st-in")
    finally:
        q.stop()
    second_run = [p["numInputRows"] for p in q.recentProgress]
    assert sum(second_run) == 1000 and max(second_run) <= 300, second_run  # resumed where it stopped
    out = read_all(b, "st-out")
    assert keys_of(out) == Counter(keys)
    assert all(r.value == b"out:" + r.key.ljust(40, b".") for r in out)


def test_stream_stopped_in_the_middle_of_a_batch_is_at_least_once(spark, broker, tmp_path):
    """query.stop() while a micro-batch is being written, restart from the checkpoint: that batch was
    not committed, so Spark runs it again -- every record is in the output, and the only duplicates
    are from that one batch (Spark's Kafka sink is at-least-once)."""
    b = broker.bootstrap_servers
    broker.create_topic("hs-in", 3)
    broker.create_topic("hs-out", 3)
    keys = [f"hs-{i}" for i in range(2000)]
    produce(b, "hs-in", keys)
    checkpoint = str(tmp_path / "checkpoint")
    q = _to_kafka(spark, b, "hs-in", "hs-out", checkpoint, {"processingTime": "100 milliseconds"}, 300)
    wait_for(q, lambda q: rows_read(q) >= 600, what="two batches")
    q.stop()
    assert rows_read(q) < 2000
    q = _to_kafka(spark, b, "hs-in", "hs-out", checkpoint, {"availableNow": True}, 300)
    assert q.awaitTermination(120)
    out = keys_of(read_all(b, "hs-out"))
    assert set(out) == set(keys)
    assert sum(out.values()) - len(keys) <= 300, sum(out.values()) - len(keys)


def test_subscribe_pattern_with_headers_to_kafka(spark, broker, tmp_path):
    """subscribePattern over two topics, includeHeaders: the sink writes each record's headers back."""
    b = broker.bootstrap_servers
    for t in ("pat-a", "pat-b", "pat-out"):
        broker.create_topic(t, 2)
    produce(b, "pat-a", [f"a-{i}" for i in range(300)], headers=True)
    produce(b, "pat-b", [f"b-{i}" for i in range(200)], headers=True)
    src = kafka_stream(spark, b, subscribePattern="pat-[ab]", startingOffsets="earliest", includeHeaders="true")
    out = src.selectExpr("key", "concat(topic, '/', CAST(value AS STRING)) AS value", "headers")
    q = (out.writeStream.format("kafka").option("kafka.bootstrap.servers", b).option("topic", "pat-out")
         .option("checkpointLocation", str(tmp_path / "c")).trigger(availableNow=True).start())
    assert q.awaitTermination(120), "availableNow query did not finish"
    assert q.exception() is None
    got = read_all(b, "pat-out")
    assert keys_of(got) == Counter([f"a-{i}" for i in range(300)] + [f"b-{i}" for i in range(200)])
    for r in got:
        key = r.key.decode()
        topic = "pat-a" if key.startswith("a-") else "pat-b"
        assert r.value.startswith(f"{topic}/{key}".encode()), r.value
        assert [(h, bytes(v)) for h, v in r.headers][0] == ("src", r.key), r.headers


def test_assign_from_json_offsets(spark, broker):
    """assign two of three partitions, startingOffsets as JSON (an offset, and -2 = earliest)."""
    b = broker.bootstrap_servers
    broker.create_topic("as-in", 3)
    keys = [f"as-{i}" for i in range(90)]
    produce(b, "as-in", keys, partition_of=lambda n: n % 3)
    src = kafka_stream(spark, b, assign=json.dumps({"as-in": [0, 2]}),
                       startingOffsets=json.dumps({"as-in": {"0": 5, "2": -2}}))
    q = (src.selectExpr("CAST(key AS STRING) AS key", "partition", "offset")
         .writeStream.format("memory").queryName("assigned").trigger(availableNow=True).start())
    assert q.awaitTermination(120)
    rows = memory_rows(spark, "assigned")
    want = {k for n, k in enumerate(keys) if (n % 3 == 0 and n // 3 >= 5) or n % 3 == 2}
    assert {r.key for r in rows} == want and len(rows) == len(want)
    assert {r.partition for r in rows} == {0, 2}


def test_latest_reads_only_what_comes_after_the_start_read_committed(spark, broker):
    """startingOffsets latest with isolation.level read_committed: what was there before the query
    started is not read, what is written after is."""
    b = broker.bootstrap_servers
    broker.create_topic("lt-in", 2)
    produce(b, "lt-in", [f"old-{i}" for i in range(100)])
    src = kafka_stream(spark, b, subscribe="lt-in", startingOffsets="latest",
                       **{"kafka.isolation.level": "read_committed"})
    q = (src.selectExpr("CAST(key AS STRING) AS key").writeStream.format("memory").queryName("latest")
         .trigger(processingTime="100 milliseconds").start())
    try:
        wait_for(q, lambda q: bool(q.recentProgress), what="the first batch (offsets resolved)")
        produce(b, "lt-in", [f"new-{i}" for i in range(50)])
        wait_for(q, caught_up(150), what="the new records")
    finally:
        q.stop()
    assert sorted(r.key for r in memory_rows(spark, "latest")) == sorted(f"new-{i}" for i in range(50))


def test_starting_offsets_by_timestamp_in_compressed_batches(spark, broker):
    """startingOffsetsByTimestamp: Spark asks ListOffsets for each partition's first offset at or after
    the timestamp; the records sit in lz4 batches of many records, so the broker must look inside."""
    b = broker.bootstrap_servers
    broker.create_topic("ts-in", 2)
    base = 1_700_000_000_000
    keys = [f"ts-{i}" for i in range(400)]
    stamps = [base + 10 * i for i in range(400)]
    produce(b, "ts-in", keys, timestamps=stamps, partition_of=lambda n: n % 2, compression_type="lz4",
            linger_ms=200, batch_size=1 << 20)
    # record n is in partition n % 2 at offset n // 2.  Partition 0: record 137's time (137 is in
    # partition 1), so record 138 at offset 69; partition 1: just after record 250's, so record 251, offset 125
    cut = {0: base + 10 * 137, 1: base + 10 * 250 + 3}
    src = kafka_stream(spark, b, subscribe="ts-in",
                       startingOffsetsByTimestamp=json.dumps({"ts-in": {str(p): t for p, t in cut.items()}}))
    q = (src.selectExpr("CAST(key AS STRING) AS key", "partition", "offset", "timestamp")
         .writeStream.format("memory").queryName("by_ts").trigger(availableNow=True).start())
    assert q.awaitTermination(120)
    rows = memory_rows(spark, "by_ts")
    want = {k for n, (k, t) in enumerate(zip(keys, stamps)) if t >= cut[n % 2]}
    assert {r.key for r in rows} == want and len(rows) == len(want)
    first = {p: min(r.offset for r in rows if r.partition == p) for p in (0, 1)}
    assert first == {0: 69, 1: 125}, first


def test_min_partitions_splits_the_input(spark, broker):
    """minPartitions 6 over 2 Kafka partitions: each micro-batch is read by at least 6 Spark tasks,
    and every record is read once."""
    b = broker.bootstrap_servers
    broker.create_topic("mp-in", 2)
    keys = [f"mp-{i}" for i in range(600)]
    produce(b, "mp-in", keys)
    seen: list[tuple[int, int]] = []

    def each(df, _batch_id):  # noqa: ANN001
        rows = df.selectExpr("CAST(key AS STRING) AS key").collect()
        seen.append((df.rdd.getNumPartitions(), len(rows)))
        keys_seen.extend(r.key for r in rows)

    keys_seen: list[str] = []
    src = kafka_stream(spark, b, subscribe="mp-in", startingOffsets="earliest", minPartitions=6)
    q = src.writeStream.foreachBatch(each).trigger(availableNow=True).start()
    assert q.awaitTermination(120)
    assert Counter(keys_seen) == Counter(keys)
    assert all(n >= 6 for n, rows in seen if rows), seen
