"""Spark streaming queries under quotas, a leader failover and replication lag.

What a Kafka container cannot do on demand: a consumer_byte_rate quota on the query's source, a
producer_byte_rate quota on its sink, a leader stopped and restarted in the middle of a query, and
acks=all waiting for slow followers -- each observed both from Spark's own StreamingQueryProgress and
from the broker (throttle events, KIP-219 conformance, the journal).

Tolerances come from Kafka's quota formula (ClientQuotaManager): the rate is measured over
``quota.window.num`` samples of ``quota.window.size.seconds``, so once the first window has passed a
client that honours its throttles reads at the quota, give or take what the window lets it carry
over: at most (window.num - 1) x window.size x quota bytes, so over a span S the rate is within
±(window.num - 1) x window.size / S of the quota.  These tests use 3 one-second samples (±2 s) and
measure over ~25 s of micro-batches of ~4 s each, so that Spark's fixed per-batch work (planning,
ListOffsets, the commit) is a small part of each batch's time.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter

import pytest

from mockbroker import MockBroker
from tests.integration.spark_jobs import (
    caught_up,
    kafka_batch,
    kafka_stream,
    keys_of,
    produce,
    read_all,
    rows_read,
    wait_for,
)

QUOTA_CONF = {"quota.window.num": 3, "quota.window.size.seconds": 1, "num.partitions": 2}


def hw_total(broker: MockBroker, topic: str, partitions: int) -> int:
    return sum(broker.partition_state(topic, p)["high_watermark"] for p in range(partitions))


def steady_rate(progress: list[dict], key: str) -> float:
    """Rows per second over the batches after the first two (the quota's first window lets a burst
    through), weighting each batch by its rows: total rows / total time, as Spark reports each batch."""
    batches = [p for p in progress[2:] if p["numInputRows"] > 0 and p.get(key)]
    assert len(batches) >= 4, f"only {len(batches)} steady batches: {[p['numInputRows'] for p in progress]}"
    rows = sum(p["numInputRows"] for p in batches)
    return rows / sum(p["numInputRows"] / p[key] for p in batches)


def test_consumer_quota_sets_the_query_input_rate(spark, tmp_path):
    """A consumer_byte_rate quota on the source's client id: Spark's processedRowsPerSecond and
    inputRowsPerSecond converge to the quota (in rows/s, from the bytes per row the broker measured)
    within ±10 %; every throttle was on Fetch, and the broker's KIP-219 record of what Spark's consumer
    (Java kafka-clients 3.9) sent while throttled is printed (its verdict: test_spark_source_verdict)."""
    quota = 150_000
    client = "spark-quota-src"
    with MockBroker(QUOTA_CONF) as broker:
        b = broker.bootstrap_servers
        broker.create_topic("q-in", 2)
        produce(b, "q-in", [f"q-{i}" for i in range(6000)], value_bytes=1000)
        broker.set_quota(client_id=client, consumer_byte_rate=quota)
        src = kafka_stream(spark, b, subscribe="q-in", startingOffsets="earliest", maxOffsetsPerTrigger=600,
                           **{"kafka.client.id": client, "kafka.max.partition.fetch.bytes": 16384,
                              "kafka.fetch.max.bytes": 32768})
        q = src.selectExpr("key").writeStream.format("noop").trigger(processingTime="0 seconds").start()
        try:
            wait_for(q, lambda q: len(q.recentProgress) >= 9, timeout_s=150, what="9 batches")
        finally:
            q.stop()
        progress = list(q.recentProgress)
        fetches = broker.journal("FETCH", client_id=client)
        fetched_bytes = sum(j["response_bytes"] or 0 for j in fetches)
        rows = rows_read(q)
        events = broker.throttle_events(client)
        conformance = [v for v in broker.violations(by="entity") if v["client_id"] == client]
    bytes_per_row = fetched_bytes / rows
    want = quota / bytes_per_row
    processed = steady_rate(progress, "processedRowsPerSecond")
    arrived = steady_rate(progress, "inputRowsPerSecond")
    print("\nbatches (rows, ms, processed/s, input/s):", [
        (p["numInputRows"], p["durationMs"].get("triggerExecution"), round(p.get("processedRowsPerSecond") or 0),
         round(p.get("inputRowsPerSecond") or 0)) for p in progress])
    print(f"\nquota {quota} B/s = {want:.0f} rows/s at {bytes_per_row:.0f} B/row; Spark processed "
          f"{processed:.0f} rows/s ({processed / want:.3f}), input {arrived:.0f} rows/s ({arrived / want:.3f}); "
          f"{len(events)} throttles; conformance {conformance}")
    assert 0.9 * want <= processed <= 1.1 * want, (processed, want)
    assert 0.9 * want <= arrived <= 1.1 * want, (arrived, want)
    assert events and {e["api_key"] for e in events} == {1}, events[:3]
    assert all(e["mode"] == "mute" and e["client_should_throttle"] for e in events)
    [row] = conformance
    assert row["throttles"] > 0 and row["violations_not_obliged"] == 0, row


@pytest.mark.parametrize("mode", ["mute", "delay", "observe"])
def test_spark_source_verdict(spark, mode):
    """Spark's Kafka source (Java kafka-clients 3.9's KafkaConsumer in InternalKafkaConsumer) under a
    consumer_byte_rate quota, in each throttle mode: it waits out every throttled Fetch, but a
    ListOffsets may go out on the same connection a few ms after one, before its throttle ends -- the
    broker judges it early, rightly: the Java client sent it then.  Spark's InternalKafkaConsumer.fetch
    calls getAvailableOffsetRange() (seekToBeginning/seekToEnd + position(): two ListOffsets) right
    after every poll(); that poll returned with the next Fetch already in flight
    (ClassicKafkaConsumer.poll: sendFetches() + transmitSends() before returning records); when the
    broker has answered that Fetch with a throttle, ConsumerNetworkClient.poll's trySend() still finds
    the node ready (NetworkClient throttles a node in handleCompletedReceives -> maybeThrottle, after
    Selector.poll) and hands the ListOffsets to NetworkClient.send; Selector.pollSelectionKeys then
    reads the throttled response (attemptRead) and writes the ListOffsets (attemptWrite) in the same
    poll.  A Fetch never does this (Fetcher sends none to a node with a Fetch pending), so the verdict is
    honours or partly, and every early request is a ListOffsets right after a throttled Fetch."""
    client = f"spark-verdict-{mode}"
    with MockBroker({**QUOTA_CONF, "mock.throttle.mode": mode}) as broker:
        b = broker.bootstrap_servers
        broker.create_topic("sv-in", 2)
        produce(b, "sv-in", [f"sv-{i}" for i in range(1200)], value_bytes=1000)
        broker.set_quota(client_id=client, consumer_byte_rate=300_000)
        df = kafka_batch(spark, b, subscribe="sv-in", startingOffsets="earliest", endingOffsets="latest",
                         **{"kafka.client.id": client, "kafka.max.partition.fetch.bytes": 16384,
                            "kafka.fetch.max.bytes": 32768})
        assert df.count() == 1200
        [row] = [v for v in broker.violations(by="entity") if v["client_id"] == client]
        journal = broker.journal(client_id=client)
    print(f"\nSpark source, {mode}: {row}")
    # How many throttles are judged depends on timing, not on the client: a ListOffsets written while
    # the response was held (delay) or in flight is pipelined, so not judged -- on a loaded machine
    # 22 of 24 were (CI under a CPU hog).  The quota must bite (throttles) and the verdict rest on at
    # least one judged throttle.
    assert row["throttles"] >= 10 and row["judged"] >= 1 and row["verdict"] in ("honours", "partly"), row
    assert all(api.startswith("FETCH ") for api in row["apis"]), row  # early only after a throttled Fetch
    by_conn: dict[tuple[int, int], list[dict]] = {}
    for j in sorted(journal, key=lambda j: (j["arrived_clock_ns"], j["seq"])):
        by_conn.setdefault((j["broker"], j["connection"]), []).append(j)
    early = 0
    for records in by_conn.values():
        for before, j in zip(records, records[1:]):
            if j["after_throttle"] and j["after_throttle"]["violation"]:
                early += 1
                assert (before["api"], before["throttle_time_ms"] > 0, j["api"]) == ("FETCH", True, "LIST_OFFSETS"), \
                    (before, j)
    assert early == row["violations_obliged"] + row["violations_not_obliged"], (early, row)


def test_producer_quota_slows_the_sink_and_loses_nothing(spark, tmp_path):
    """A producer_byte_rate quota on the sink's client id: the query takes at least as long as Kafka's
    formula allows for the bytes it wrote, the sink was throttled, and every record is in the output."""
    quota = 250_000
    client = "spark-quota-sink"
    with MockBroker(QUOTA_CONF) as broker:
        b = broker.bootstrap_servers
        broker.create_topic("pq-in", 2)
        broker.create_topic("pq-out", 2)
        keys = [f"pq-{i}" for i in range(3000)]
        produce(b, "pq-in", keys, value_bytes=1000)
        broker.set_quota(client_id=client, producer_byte_rate=quota)
        src = kafka_stream(spark, b, subscribe="pq-in", startingOffsets="earliest", maxOffsetsPerTrigger=500)
        t0 = time.monotonic()
        q = (src.selectExpr("key", "value").writeStream.format("kafka").option("kafka.bootstrap.servers", b)
             .option("topic", "pq-out").option("kafka.client.id", client)
             .option("checkpointLocation", str(tmp_path / "c")).trigger(availableNow=True).start())
        assert q.awaitTermination(120), "the throttled query did not finish in 120 s"
        elapsed = time.monotonic() - t0
        assert q.exception() is None
        produced = sum(j["request_bytes"] for j in broker.journal("PRODUCE", client_id=client))
        events = broker.throttle_events(client)
        out = read_all(b, "pq-out")
    # Kafka lets a client run ahead by at most (window.num - 1) samples' worth before throttling
    floor = produced / quota - (QUOTA_CONF["quota.window.num"] - 1) * QUOTA_CONF["quota.window.size.seconds"]
    print(f"\nsink wrote {produced} B in {elapsed:.1f} s under {quota} B/s (floor {floor:.1f} s), "
          f"{len(events)} throttles")
    assert elapsed >= 0.9 * floor, (elapsed, floor)
    assert events and {e["api_key"] for e in events} == {0}
    assert keys_of(out) == Counter(keys)


def test_leader_stopped_and_restarted_in_the_middle_of_a_query(spark, tmp_path):
    """Three brokers, RF 3: the leader of an input partition (and of output partitions) stops while
    the query runs and restarts later; the query keeps running, nothing the producer had acknowledged
    is lost, and the output covers the input (at-least-once: duplicates allowed, counted)."""
    with MockBroker({"mock.num.brokers": 3, "default.replication.factor": 3}) as broker:
        b = broker.bootstrap_servers
        broker.create_topic("fo-in", 3, replication_factor=3)
        broker.create_topic("fo-out", 3, replication_factor=3)
        first = [f"fo-{i}" for i in range(900)]
        produce(b, "fo-in", first)
        src = kafka_stream(spark, b, subscribe="fo-in", startingOffsets="earliest", maxOffsetsPerTrigger=150)
        q = (src.selectExpr("key", "value").writeStream.format("kafka").option("kafka.bootstrap.servers", b)
             .option("topic", "fo-out").option("checkpointLocation", str(tmp_path / "c"))
             .trigger(processingTime="200 milliseconds").start())
        try:
            wait_for(q, lambda q: rows_read(q) >= 300, what="300 rows before the failover")
            leader = broker.partition_state("fo-in", 0)["leader"]
            broker.stop_broker(leader)
            assert broker.partition_state("fo-in", 0)["leader"] not in (leader, -1)
            second = [f"fo-{i}" for i in range(900, 1500)]
            produce(b, "fo-in", second)  # acknowledged by the new leaders
            wait_for(q, lambda q: rows_read(q) >= 1200, what="rows while the old leader is down")
            broker.start_broker(leader)
            third = [f"fo-{i}" for i in range(1500, 1800)]
            produce(b, "fo-in", third)
            wait_for(q, caught_up(lambda: hw_total(broker, "fo-in", 3)), what="the end of fo-in")
        finally:
            q.stop()
        assert q.exception() is None
        acked = keys_of(read_all(b, "fo-in"))
        out = keys_of(read_all(b, "fo-out"))
    want = Counter(first + second + third)
    assert set(acked) == set(want), "an acknowledged input record is missing from fo-in"
    assert set(out) == set(want), sorted(set(want) - set(out))[:10]
    print(f"\nfailover: {sum(out.values())} output records for {len(want)} inputs "
          f"({sum(out.values()) - len(want)} duplicates)")


def test_replication_lag_adds_to_the_sink_batch_time(spark, tmp_path):
    """acks=all (the sink producer's default) on RF 3: with followers lagging L ms, each of the sink's
    Produce requests waits about L in the Produce purgatory, and each micro-batch's addBatch (the sink's
    write and flush) takes at least L longer than without lag."""
    lag = 400
    with MockBroker({"mock.num.brokers": 3}) as broker:
        b = broker.bootstrap_servers
        broker.create_topic("lag-in", 2, replication_factor=3)
        broker.create_topic("lag-out", 2, replication_factor=3)
        src = kafka_stream(spark, b, subscribe="lag-in", startingOffsets="earliest", maxOffsetsPerTrigger=100)
        q = (src.selectExpr("key", "value").writeStream.format("kafka").option("kafka.bootstrap.servers", b)
             .option("topic", "lag-out").option("checkpointLocation", str(tmp_path / "c"))
             .trigger(processingTime="100 milliseconds").start())

        def add_batch_ms(keys: list[str], total: int) -> list[int]:
            seen = len(q.recentProgress)
            produce(b, "lag-in", keys)
            wait_for(q, caught_up(total), what=f"{total} rows")
            return [p["durationMs"]["addBatch"] for p in q.recentProgress[seen:] if p["numInputRows"] > 0]

        try:
            add_batch_ms([f"warm-{i}" for i in range(200)], 200)   # producer connections, metadata
            fast = add_batch_ms([f"fast-{i}" for i in range(600)], 800)
            broker.set_replication_lag(lag)
            lagged_from = len(broker.journal())
            slow = add_batch_ms([f"slow-{i}" for i in range(600)], 1400)
        finally:
            q.stop()
        sink = [j for j in broker.journal()[lagged_from:]
                if j["api"] == "PRODUCE" and j["client_software_name"] == "apache-kafka-java"]
        out = keys_of(read_all(b, "lag-out"))
    grew = statistics.median(slow) - statistics.median(fast)
    parked = sorted(j["parked_ms"] for j in sink)
    print(f"\naddBatch median {statistics.median(fast)} ms without lag, {statistics.median(slow)} ms with "
          f"{lag} ms lag (+{grew:.0f} ms); batches {fast} / {slow}; the sink's {len(sink)} acks=all Produce "
          f"requests waited {parked[0]:.0f}-{parked[-1]:.0f} ms (median {statistics.median(parked):.0f})")
    # each of the sink's produce requests waited in the Produce purgatory for the followers: the lag
    assert sink and all(j["details"]["acks"] == -1 and j["purgatory"] == "Produce" for j in sink)
    assert 0.9 * lag <= statistics.median(parked) <= 1.5 * lag, parked
    # and each micro-batch's write took at least that much longer (a batch's requests may wait in turn)
    assert grew >= 0.8 * lag, (fast, slow)
    assert len(out) == 1400 and sum(out.values()) == 1400
