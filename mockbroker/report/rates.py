"""Kafka's windowed rate of each byte-rate quota sensor, replayed from the journal (docs/report.md): the
broker's own ``mockbroker/quota/rate.py`` ``Rate`` per run, broker, quota entity and quota, each request
charged what ``charge_quotas`` charges and when it charges it, read at the end of every second (on a
copy: a measure purges); and each client's quota against the rate it achieved."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, Row, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .reading import CLIENT, KEY, cnt

#: The byte-rate quotas and the API whose bytes each charges (kafka-semantics.md §1.1): Produce
#: the request size, Fetch the response size (a throttled fetch's bytes are unrecorded).
BYTE_QUOTAS = (("producer_byte_rate", "PRODUCE"), ("consumer_byte_rate", "FETCH"))


def charged() -> tuple[Any, Any]:
    """(bytes, ns): what a record charges to its byte-rate quota and when, as the broker charges
    it (quota/throttle.py apply_quotas, kafka_apis.py): a Produce answered, its request size; a Fetch
    answered unthrottled, its response size without the length prefix; at the handler's return,
    or its completion when it was parked."""
    answered = F.col("outcome") == "response"
    produce = F.when(answered & (F.col("api") == "PRODUCE"), F.col("request_bytes"))
    fetch = F.when(answered & (F.col("api") == "FETCH") & (F.col("throttle_time_ms") == 0),
                   F.col("response_bytes") - 4)
    at = F.col("handled_clock_ns") + F.coalesce(F.col("parked_ms") * 1e6, F.lit(0.0)).cast("long")
    return F.coalesce(produce, fetch, F.lit(0)), at


def windowed_rates(df: DataFrame, samples: int, window_s: int) -> DataFrame:
    """Kafka's windowed rate of each byte-rate quota sensor, per second: the broker's Rate
    (mockbroker/quota/rate.py, Kafka's SampledStat + Rate) replayed over the bytes each request
    charged, per (run, broker, quota entity, quota) as each broker keeps a sensor per entity.
    Measured at the end of every second from the entity's first charge to ``samples`` windows
    after its last (a reader of the metric once a second); ``bytes`` is what the second charged.
    One row per second for each client the sensor served (its client key columns)."""
    nbytes, at_ns = charged()
    ent = F.col("quota_entity")
    parts = []
    for quota, api in BYTE_QUOTAS:
        # every answered request of the API: a throttled fetch charges 0 bytes but still records
        # (and unrecords) at its time, which may start a new sample (quota/throttle.py)
        parts.append(df.where(ent.isNotNull() & (F.col("api") == api) & (F.col("outcome") == "response")).select(
            F.unix_micros("run").alias("run"), "broker", ent["user"].alias("quota_user"),
            ent["client_id"].alias("quota_client_id"), F.lit(quota).alias("quota"), *CLIENT, at_ns.alias("at_ns"),
            (F.col("received_wall_ns") - F.col("received_clock_ns")).alias("wall_offset_ns"),
            nbytes.alias("bytes"), F.col("quotas")[quota].alias("bound"), "seq"))
    events = reduce(DataFrame.unionAll, parts)
    group = ["run", "broker", "quota_user", "quota_client_id", "quota"]
    ordered = events.repartition(*group).sortWithinPartitions(*group, "at_ns", "seq")
    schema = T.StructType([
        T.StructField("run", T.LongType()), *[T.StructField(c, T.StringType()) for c in CLIENT],
        T.StructField("broker", T.LongType()),
        T.StructField("quota_user", T.StringType()), T.StructField("quota_client_id", T.StringType()),
        T.StructField("quota", T.StringType()), T.StructField("second", T.LongType()),
        T.StructField("bytes", T.LongType()), T.StructField("windowed_rate", T.DoubleType()),
        T.StructField("quota_bound", T.DoubleType())])
    rdd = ordered.rdd.mapPartitions(_replay(samples, window_s * 1000))
    return ordered.sparkSession.createDataFrame(rdd, schema).select(
        F.timestamp_micros("run").alias("run"), *[c for c in schema.names if c not in ("run", "second")],
        F.timestamp_seconds("second").alias("time"))


def _replay(samples: int, window_ms: int) -> Callable[[Iterable[Row]], Iterable[tuple[Any, ...]]]:
    """The partition function of ``windowed_rates`` (rows sorted by sensor, then time)."""
    idle_s = samples * window_ms // 1000 + 1  # after its last record a sensor's samples all expire

    def replay(rows: Iterable[Row]) -> Iterator[tuple[Any, ...]]:
        from mockbroker.quota.rate import Rate  # on the executor
        sensor: tuple[Any, ...] | None = None
        rate = Rate(samples, window_ms)
        seconds: list[tuple[Any, ...]] = []  # (second, bytes, windowed rate, bound) of the sensor so far
        clients: dict[tuple[Any, ...], None] = {}
        sec = nbytes = offset = 0
        bound: float | None = None

        def close(upto: int | None) -> None:
            """The second ``sec`` and the idle ones after it, up to ``upto`` (excluded) or until
            the samples have all expired: the rate at each one's end, as a reader would measure it
            (on a copy: a measure purges, and the broker's own measures are at its records)."""
            s, b = sec, nbytes
            end = sec + idle_s if upto is None else min(upto, sec + idle_s)
            while s < end:
                end_ms = ((s + 1) * 1_000_000_000 - offset) // 1_000_000  # the second's end, broker clock
                seconds.append((s, b, copy.deepcopy(rate).measure(end_ms), bound))
                s, b = s + 1, 0

        def flush() -> Iterator[tuple[Any, ...]]:
            assert sensor is not None
            run, broker, user, cid, quota = sensor
            for client in clients:
                for s, b, w, q in seconds:
                    yield (run, *client, broker, user, cid, quota, s, b, w, q)

        for r in rows:
            k = (r.run, r.broker, r.quota_user, r.quota_client_id, r.quota)
            s = (r.at_ns + r.wall_offset_ns) // 1_000_000_000
            if k != sensor:
                if sensor is not None:
                    close(None)
                    yield from flush()
                sensor, rate, seconds, clients = k, Rate(samples, window_ms), [], {}
                sec, nbytes = s, 0
            elif s != sec:
                close(s)
                sec, nbytes = s, 0
            clients[(r.client_software_name, r.client_software_version, r.client_id, r.principal)] = None
            now_ms = r.at_ns // 1_000_000
            rate.record(float(r.bytes), now_ms)
            rate.measure(now_ms)  # Sensor.record checks the quota: the measure (and its purge) happens here too
            nbytes += r.bytes
            bound = r.bound
            offset = r.wall_offset_ns
        if sensor is not None:
            close(None)
            yield from flush()
    return replay


def quota_rates(wr: DataFrame) -> DataFrame:
    """Each client's byte-rate quota against the windowed rate it achieved, per broker and entity,
    over the seconds from its first to its last charged request: the quota, the mean and peak
    windowed rate, mean / quota, the seconds the windowed rate ended above the quota, the bytes.
    Sensors without a quota (the entity of a client with none, while another has one) are left out."""
    w = Window.partitionBy(*KEY, "broker", "quota_user", "quota_client_id", "quota")
    active = (wr.withColumn("_last", F.max(F.when(F.col("bytes") > 0, F.col("time"))).over(w))
              .where(F.col("time") <= F.col("_last")))
    g = active.groupBy(*KEY, "broker", "quota_user", "quota_client_id", "quota").agg(
        F.max("quota_bound").alias("quota_bound"), F.count("*").alias("seconds"), F.sum("bytes").alias("bytes"),
        F.avg("windowed_rate").alias("mean_windowed_rate"), F.max("windowed_rate").alias("peak_windowed_rate"),
        cnt(F.col("windowed_rate") > F.col("quota_bound")).alias("seconds_above_quota"))
    return g.where(F.col("quota_bound").isNotNull()).withColumn(
        "mean_over_quota", F.col("mean_windowed_rate") / F.col("quota_bound"))
