"""Spark batch jobs (``spark.read`` / ``df.write`` with format kafka) against mockbroker.

The write goes through Spark's Kafka sink (Java kafka-clients, idempotent producer by default); the
reads through Spark's Admin-based offset reader (ListOffsets, Metadata) and its consumers' assign/seek.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from kafka import KafkaConsumer

from tests.integration.spark_jobs import kafka_batch, keys_of, produce, read_all

BASE_TS = 1_750_000_000_000


def test_write_with_headers_and_partitions_then_read_back(spark, broker):
    """df.write.format("kafka") with key, value, headers and an explicit partition column: kafka-python
    reads every row back byte for byte, in the partition Spark named; spark.read finds them all."""
    from pyspark.sql import Row

    b = broker.bootstrap_servers
    broker.create_topic("bw-out", 3)
    rows = [Row(key=f"bw-{i}", value=f"payload-{i}" * (1 + i % 5), partition=i % 3,
                headers=[("idx", str(i).encode()), ("kind", b"batch")]) for i in range(1500)]
    df = spark.createDataFrame(rows, "key string, value string, partition int, headers array<struct<key:string,value:binary>>")
    df.write.format("kafka").option("kafka.bootstrap.servers", b).option("topic", "bw-out").save()
    got = read_all(b, "bw-out")
    assert len(got) == 1500
    for r in got:
        i = int(r.key.decode().split("-")[1])
        assert r.partition == i % 3
        assert r.value == (f"payload-{i}" * (1 + i % 5)).encode()
        assert [(k, bytes(v)) for k, v in r.headers] == [("idx", str(i).encode()), ("kind", b"batch")]
    back = kafka_batch(spark, b, subscribe="bw-out", includeHeaders="true").collect()
    assert Counter(r.key.decode() for r in back) == Counter(f"bw-{i}" for i in range(1500))
    assert all([(h.key, bytes(h.value)) for h in r.headers][1] == ("kind", b"batch") for r in back)


def test_the_sink_producer_is_idempotent(spark, broker):
    """Spark's sink producer (kafka-clients 3.9, enable.idempotence by default) gets a producer id and
    writes sequenced batches: the stored batches carry a producer id and base sequences from 0."""
    from protocol.records import parse_header

    b = broker.bootstrap_servers
    broker.create_topic("idem-out", 1)
    spark.createDataFrame([(f"id-{i}", "v") for i in range(200)], "key string, value string") \
        .write.format("kafka").option("kafka.bootstrap.servers", b).option("topic", "idem-out").save()
    headers = [parse_header(x) for x in broker.partition_records("idem-out", 0)]
    assert headers and all(h.producer_id >= 0 for h in headers), headers
    assert headers[0].base_sequence == 0
    assert sum(h.records_count for h in headers) == 200
    inits = broker.journal("INIT_PRODUCER_ID")
    assert inits and all(j["error_code"] == 0 for j in inits)


def test_offset_ranges_earliest_latest_and_json(spark, broker):
    """startingOffsets/endingOffsets as earliest/latest and as per-partition JSON (-2 earliest, -1 latest)."""
    b = broker.bootstrap_servers
    broker.create_topic("br-in", 2)
    keys = [f"br-{i}" for i in range(200)]
    produce(b, "br-in", keys, partition_of=lambda n: n % 2)
    all_rows = kafka_batch(spark, b, subscribe="br-in", startingOffsets="earliest", endingOffsets="latest")
    assert all_rows.count() == 200
    part = kafka_batch(spark, b, subscribe="br-in",
                       startingOffsets=json.dumps({"br-in": {"0": 10, "1": -2}}),
                       endingOffsets=json.dumps({"br-in": {"0": 20, "1": -1}})) \
        .selectExpr("CAST(key AS STRING) AS key", "partition", "offset").collect()
    want = {k for n, k in enumerate(keys) if (n % 2 == 0 and 10 <= n // 2 < 20) or n % 2 == 1}
    assert {r.key for r in part} == want and len(part) == len(want)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_offsets_by_timestamp_are_exact_in_every_codec(spark, broker, codec):
    """startingOffsetsByTimestamp / endingOffsetsByTimestamp over records in batches of many records,
    compressed with each codec: Spark gets exactly the records whose timestamp is in [start, end)."""
    b = broker.bootstrap_servers
    topic = f"bts-{codec}"
    broker.create_topic(topic, 2)
    n = 600
    keys = [f"{codec}-{i}" for i in range(n)]
    stamps = [BASE_TS + 7 * i for i in range(n)]
    produce(b, topic, keys, timestamps=stamps, partition_of=lambda i: i % 2,
            compression_type=None if codec == "none" else codec, linger_ms=300, batch_size=1 << 20)
    start = {0: BASE_TS + 7 * 101, 1: BASE_TS + 7 * 300 + 1}
    end = {0: BASE_TS + 7 * 451 + 2, 1: BASE_TS + 7 * 555}
    rows = kafka_batch(spark, b, subscribe=topic,
                       startingOffsetsByTimestamp=json.dumps({topic: {str(p): t for p, t in start.items()}}),
                       endingOffsetsByTimestamp=json.dumps({topic: {str(p): t for p, t in end.items()}})) \
        .selectExpr("CAST(key AS STRING) AS key", "timestamp").collect()
    want = Counter(k for i, (k, t) in enumerate(zip(keys, stamps)) if start[i % 2] <= t < end[i % 2])
    assert Counter(r.key for r in rows) == want
    # the producer really wrote multi-record batches in that codec
    batches = broker.partition_records(topic, 0)
    assert len(batches) < n // 2 // 4, f"{len(batches)} batches: too few records per batch to test the lookup"


def test_global_starting_timestamp_and_min_partitions(spark, broker):
    """startingTimestamp (one timestamp for every partition) with minPartitions 8 over 2 partitions:
    the read is split into at least 8 Spark partitions and returns each record once."""
    b = broker.bootstrap_servers
    broker.create_topic("bmp-in", 2)
    keys = [f"bmp-{i}" for i in range(1000)]
    stamps = [BASE_TS + i for i in range(1000)]
    produce(b, "bmp-in", keys, timestamps=stamps, partition_of=lambda i: i % 2)
    df = kafka_batch(spark, b, subscribe="bmp-in", startingTimestamp=str(BASE_TS + 400), minPartitions="8")
    assert df.rdd.getNumPartitions() >= 8
    got = Counter(r.key.decode() for r in df.select("key").collect())
    assert got == Counter(keys[400:])


def test_read_committed_batch_read_and_a_consumer_group_sees_nothing_of_spark(spark, broker):
    """isolation.level read_committed: every (non-transactional) record is visible up to the high
    watermark; Spark's source assigns partitions itself and commits no offsets to a group."""
    b = broker.bootstrap_servers
    broker.create_topic("rc-in", 3)
    produce(b, "rc-in", [f"rc-{i}" for i in range(300)])
    df = kafka_batch(spark, b, subscribe="rc-in", **{"kafka.isolation.level": "read_committed",
                                                     "kafka.group.id": "spark-rc"})
    assert keys_of([_KV(r.key) for r in df.select("key").collect()]) == Counter(f"rc-{i}" for i in range(300))
    c = KafkaConsumer(bootstrap_servers=b, group_id="spark-rc", enable_auto_commit=False)
    try:
        from kafka import TopicPartition
        assert all(c.committed(TopicPartition("rc-in", p)) is None for p in range(3))
    finally:
        c.close()


class _KV:
    def __init__(self, key: bytes) -> None:
        self.key = key


def test_everything_spark_sent_was_served_without_error(broker):
    """Last in this module: every request Spark's Java clients (the Admin-based offset reader, the
    source's consumers, the sink's idempotent producer) sent to this module's broker was answered
    without an error code -- nothing Spark needs is missing or answered differently from Kafka."""
    java = [j for j in broker.journal() if j["client_software_name"] == "apache-kafka-java"]
    apis = {j["api"] for j in java}
    assert {"API_VERSIONS", "METADATA", "LIST_OFFSETS", "FETCH", "PRODUCE", "INIT_PRODUCER_ID"} <= apis, apis
    failed = [(j["api"], j["api_version"], j["error_code"], [p for p in j["partitions"] if p["error_code"]])
              for j in java if j["error_code"] or any(p["error_code"] for p in j["partitions"])]
    print(f"\nSpark sent {len(java)} requests: {sorted(apis)}")
    assert not failed, failed[:10]


def test_read_committed_skips_aborted_transactions_and_markers(spark, broker):
    """Transactions written by librdkafka, committed and aborted in turn over two partitions: Spark's
    reader with kafka.isolation.level=read_committed gets exactly the committed rows (the aborted
    records and the control batches leave gaps in the offsets it must step over), read_uncommitted
    every record; an open transaction's records stay out of the committed read (the LSO)."""
    ck = pytest.importorskip("confluent_kafka")
    b = broker.bootstrap_servers
    broker.create_topic("btx-in", 2)
    p = ck.Producer({"bootstrap.servers": b, "transactional.id": "spark-btx", "linger.ms": 5})
    p.init_transactions(30)
    committed, aborted = [], []
    for t in range(6):
        keys = [f"t{t}-{i}" for i in range(25)]
        p.begin_transaction()
        for i, k in enumerate(keys):
            p.produce("btx-in", b"v", key=k.encode(), partition=i % 2)
        p.flush(30)
        if t % 2 == 0:
            p.commit_transaction(30)
            committed += keys
        else:
            p.abort_transaction(30)
            aborted += keys
    p.begin_transaction()  # left open: below the LSO nothing of it
    p.produce("btx-in", b"v", key=b"open-0", partition=0)
    p.flush(30)

    def keys(isolation: str) -> Counter:
        df = kafka_batch(spark, b, subscribe="btx-in", startingOffsets="earliest", endingOffsets="latest",
                         **{"kafka.isolation.level": isolation})
        return Counter(r.key.decode() for r in df.select("key").collect())

    assert keys("read_committed") == Counter(committed)
    assert keys("read_uncommitted") == Counter(committed + aborted + ["open-0"])
    p.abort_transaction(30)


def test_a_read_from_before_the_log_start_after_delete_records(spark, broker):
    """DeleteRecords (confluent-kafka's Admin) moves the log start of both partitions; a batch read asked
    to start at offset 0: with failOnDataLoss=false Spark's consumer gets OFFSET_OUT_OF_RANGE, finds the
    new log start and reads from there (every record left, once); with failOnDataLoss=true the job fails
    with Spark's data-loss message.  After the module's no-error check: these Fetches answer an error."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    b = broker.bootstrap_servers
    broker.create_topic("bdr-in", 2)
    keys = [f"bdr-{i}" for i in range(200)]
    produce(b, "bdr-in", keys, partition_of=lambda n: n % 2)
    cut = {0: 40, 1: 65}
    admin = AdminClient({"bootstrap.servers": b})
    done = admin.delete_records([ck.TopicPartition("bdr-in", p, o) for p, o in cut.items()])
    assert sorted((tp.partition, f.result(10).low_watermark) for tp, f in done.items()) == sorted(cut.items())
    from_zero = {"startingOffsets": json.dumps({"bdr-in": {"0": 0, "1": 0}}), "endingOffsets": "latest"}
    rows = kafka_batch(spark, b, subscribe="bdr-in", failOnDataLoss="false", **from_zero) \
        .selectExpr("CAST(key AS STRING) AS key", "partition", "offset").collect()
    left = Counter(k for n, k in enumerate(keys) if n // 2 >= cut[n % 2])
    assert Counter(r.key for r in rows) == left and len(left) == 200 - 40 - 65
    assert {p: min(r.offset for r in rows if r.partition == p) for p in cut} == cut
    lost = [j for j in broker.journal("FETCH") if any(p["error_code"] == 1 for p in j["partitions"])]
    assert lost, "Spark's consumer never fetched below the log start"  # OFFSET_OUT_OF_RANGE
    with pytest.raises(Exception, match="Some data may have been lost because they are not available in Kafka") as e:
        kafka_batch(spark, b, subscribe="bdr-in", failOnDataLoss="true", **from_zero).count()
    reason = re.search(r"Reason: Could not read records in offset \[0, 100\) for topic partition bdr-in-[01]", str(e.value))
    assert reason, str(e.value)[:2000]
    print(f"\nfailOnDataLoss=true: {reason.group(0)}")
