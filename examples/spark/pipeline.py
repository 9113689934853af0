"""A small PySpark Structured Streaming job: per-user totals over event-time windows, Kafka in and out.

Input (``in_topic``): JSON values ``{"user": "alice", "amount": 12, "ts": "2024-05-01T10:00:03.250Z"}``.
Output (``out_topic``): one record per user and closed window, key = the user, value =
``{"user": ..., "window_start": ..., "window_end": ..., "count": N, "sum": S}`` (ISO-8601 UTC times).

Windows are tumbling in event time (``ts``); the watermark trails the largest event time seen by
``watermark``, and the query runs in *append* mode, so each window is written once, with its final
count and sum, when the watermark passes its end.  Records later than the watermark are dropped
(Spark's rule), so pick a watermark wider than the disorder of your input.  A window closes only when
a later event arrives: a test ends its input with a "flush" event far ahead in time (``flush_event``).

Kafka settings: ``kafka.*`` options go to the Kafka clients (``kafka.bootstrap.servers``,
``kafka.client.id``, ...).  The source's client id is what a broker's client quotas match; the sink
gets its own.

As a script (Spark fetches the Kafka connector matching PySpark through ``spark.jars.packages``)::

    python examples/spark/pipeline.py --bootstrap 127.0.0.1:9092 --in-topic events --out-topic totals \\
        --checkpoint /tmp/totals-ckpt [--available-now] [--max-offsets-per-trigger 1000]
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

#: what the input values hold
INPUT_SCHEMA = "user STRING, amount BIGINT, ts TIMESTAMP"
SOURCE_CLIENT_ID = "totals-source"
SINK_CLIENT_ID = "totals-sink"


def totals(events: DataFrame, window: str = "1 minute", watermark: str = "1 hour") -> DataFrame:
    """Kafka source rows (``value`` bytes) -> per user and window: count and sum of ``amount``, as
    Kafka sink rows (``key``, ``value`` strings).  Pure transformation: no Kafka in here."""
    from pyspark.sql import functions as F

    parsed = (events
              .select(F.from_json(F.col("value").cast("string"), INPUT_SCHEMA).alias("e"))
              .select("e.*")
              .where(F.col("user").isNotNull() & F.col("ts").isNotNull()))
    agg = (parsed
           .withWatermark("ts", watermark)
           .groupBy(F.col("user"), F.window("ts", window).alias("w"))
           .agg(F.count(F.lit(1)).alias("count"), F.sum("amount").alias("sum")))
    fmt = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"
    return agg.select(
        F.col("user").alias("key"),
        F.to_json(F.struct(
            F.col("user"),
            F.date_format("w.start", fmt).alias("window_start"),
            F.date_format("w.end", fmt).alias("window_end"),
            F.col("count"),
            F.col("sum"),
        )).alias("value"))


def build_query(spark: SparkSession, bootstrap: str, in_topic: str, out_topic: str, checkpoint: str, *,
                trigger: dict | None = None, window: str = "1 minute", watermark: str = "1 hour",
                source_client_id: str = SOURCE_CLIENT_ID, sink_client_id: str = SINK_CLIENT_ID,
                max_offsets_per_trigger: int | None = None, query_name: str | None = None,
                source_options: dict[str, str] | None = None) -> StreamingQuery:
    """Start the job: read ``in_topic`` from the earliest offset, write the closed windows' totals to
    ``out_topic``.  ``trigger`` is passed to ``DataStreamWriter.trigger`` (e.g. ``{"availableNow": True}``
    or ``{"processingTime": "5 seconds"}``; None: a micro-batch as soon as the last one ends)."""
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("kafka.client.id", source_client_id)
              .option("subscribe", in_topic)
              .option("startingOffsets", "earliest")
              .option("failOnDataLoss", "true"))
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    for key, value in (source_options or {}).items():
        reader = reader.option(key, value)
    writer = (totals(reader.load(), window, watermark).writeStream
              .format("kafka")
              .outputMode("append")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("kafka.client.id", sink_client_id)
              .option("topic", out_topic)
              .option("checkpointLocation", checkpoint))
    if query_name:
        writer = writer.queryName(query_name)
    if trigger:
        writer = writer.trigger(**trigger)
    return writer.start()


def event(user: str, amount: int, ts: datetime) -> bytes:
    """One input value, as the job reads it."""
    iso = ts.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return json.dumps({"user": user, "amount": amount, "ts": iso}, separators=(",", ":")).encode()


def flush_event(last_ts: datetime, window: timedelta = timedelta(minutes=1),
                watermark: timedelta = timedelta(hours=1)) -> bytes:
    """An event late enough in event time that the watermark passes every window up to ``last_ts``'s
    (its own window stays open: it is never written)."""
    return event("__flush__", 0, last_ts + watermark + 2 * window)


def connector_package() -> str:
    """Maven coordinates of Spark's Kafka connector for the installed PySpark (the Scala 2.13 build
    PySpark 4 ships), for ``spark.jars.packages``: Spark downloads it and its dependencies with Ivy."""
    import pyspark

    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers, e.g. 127.0.0.1:9092")
    ap.add_argument("--in-topic", required=True)
    ap.add_argument("--out-topic", required=True)
    ap.add_argument("--checkpoint", required=True, help="checkpoint directory (keep it to resume)")
    ap.add_argument("--window", default="1 minute")
    ap.add_argument("--watermark", default="1 hour")
    ap.add_argument("--max-offsets-per-trigger", type=int)
    ap.add_argument("--available-now", action="store_true",
                    help="process what is in the topic now, then stop (default: run until interrupted)")
    args = ap.parse_args()

    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.appName("totals")
             .config("spark.jars.packages", connector_package())
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    query = build_query(spark, args.bootstrap, args.in_topic, args.out_topic, args.checkpoint,
                        trigger={"availableNow": True} if args.available_now else None, window=args.window,
                        watermark=args.watermark, max_offsets_per_trigger=args.max_offsets_per_trigger)
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
