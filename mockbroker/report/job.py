"""The throttle-conformance report's PySpark job (docs/report.md).

DataFrame API throughout; only aggregates (and the few unreadable lines, for their warnings) reach
the driver.

Lines and their numbers: ``spark.read.text`` (plain and gzip, any Hadoop URI) with the file's path
and the start of its split from the hidden ``_metadata`` column, and ``monotonically_increasing_id``
taken in the scan.  Hadoop's line reader gives every line to exactly one split, and a split is read
in order by one task, so within a (file, split start) the ids grow with the line; a split's lines are
consecutive in its partition, so a line's index in its split is its id minus the split's smallest
id.  A small aggregate (lines per split, cumulated per file in split order) turns that into the
line number in the file, without sorting the lines.  A gzip file is one split.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..journal_reader import SUPPORTED, JournalSchemaError, JournalWarning
from ..quota import verdict as verdict_rule

#: The next request counts as pipelined (sent before the client could have seen the throttled
#: response) when it arrived within this long after the response was sent: the broker stamps a
#: request that was already waiting as it takes it, right after the response goes out.
PIPELINED_NS = 200_000
#: Broker and client clocks tick in whole ms (mockbroker/quota/verdict.py): a request this much or less
#: before the deadline is not early.
EARLY_TOLERANCE_NS = verdict_rule.EARLY_TOLERANCE_MS * 1_000_000

CLIENT = ["client_software_name", "client_software_version", "client_id", "principal"]

_PARTITION = T.StructType([T.StructField("topic", T.StringType()), T.StructField("partition", T.LongType()),
                           T.StructField("error_code", T.LongType()), T.StructField("bytes", T.LongType())])
SCHEMA = T.StructType([
    T.StructField("schema_version", T.LongType()), T.StructField("broker", T.LongType()),
    T.StructField("connection", T.LongType()), T.StructField("peer", T.StringType()),
    T.StructField("client_id", T.StringType()), T.StructField("principal", T.StringType()),
    T.StructField("client_software_name", T.StringType()), T.StructField("client_software_version", T.StringType()),
    T.StructField("api_key", T.LongType()), T.StructField("api", T.StringType()),
    T.StructField("api_version", T.LongType()), T.StructField("request_bytes", T.LongType()),
    T.StructField("arrived_clock_ns", T.LongType()), T.StructField("received_clock_ns", T.LongType()),
    T.StructField("received_wall_ns", T.LongType()), T.StructField("sent_clock_ns", T.LongType()),
    T.StructField("outcome", T.StringType()), T.StructField("response_bytes", T.LongType()),
    T.StructField("throttle_time_ms", T.LongType()), T.StructField("throttle_mode", T.StringType()),
    T.StructField("quota_type", T.StringType()), T.StructField("client_throttles", T.BooleanType()),
    T.StructField("mute_start_clock_ns", T.LongType()), T.StructField("mute_end_clock_ns", T.LongType()),
    T.StructField("parked_ms", T.DoubleType()), T.StructField("purgatory", T.StringType()),
    T.StructField("completed_by", T.StringType()), T.StructField("error_code", T.LongType()),
    T.StructField("partitions", T.ArrayType(_PARTITION)),
    T.StructField("quotas", T.MapType(T.StringType(), T.DoubleType())),
    T.StructField("details", T.StructType([
        T.StructField("acks", T.LongType()), T.StructField("timeout_ms", T.LongType()),
        T.StructField("max_wait_ms", T.LongType()), T.StructField("min_bytes", T.LongType())])),
    T.StructField("seq", T.LongType()),
    T.StructField("after_throttle", T.StructType([
        T.StructField("throttle_ms", T.LongType()), T.StructField("mode", T.StringType()),
        T.StructField("client_throttles", T.BooleanType()), T.StructField("gap_ms", T.LongType()),
        T.StructField("early_ms", T.LongType()), T.StructField("pipelined", T.BooleanType()),
        T.StructField("judged", T.BooleanType()), T.StructField("violation", T.BooleanType())])),
    T.StructField("_corrupt", T.StringType()),
])


class ReportInputError(ValueError):
    """No input, or an input without a single record."""


@dataclass
class Report:
    """The aggregates (DataFrames, not collected) and the warnings of one report."""
    tables: dict[str, DataFrame]
    warnings: list[JournalWarning] = field(default_factory=list)
    records: int = 0


def spark_session(master: str = "local[*]", app: str = "mockbroker-report", **conf: str) -> SparkSession:
    """A SparkSession for the report; a local master binds to 127.0.0.1."""
    b = SparkSession.builder.master(master).appName(app)
    settings = {"spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": "8",
                "spark.ui.showConsoleProgress": "false"}  # the report prints its own (progress.py)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    for k, v in (settings | conf).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _is_uri(p: str) -> bool:
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", p) is not None or p.startswith("file:")


def input_paths(paths: Sequence[str]) -> list[str]:
    """Local files, directories and globs as journal_reader lists them; URIs are passed to Spark."""
    from ..journal_reader import journal_files
    out: list[str] = []
    for p in paths:
        if _is_uri(p):
            out.append(p)
        else:
            out.extend(os.path.abspath(f) for f in journal_files([p]))
    if not out:
        raise ReportInputError(f"no journal files in {', '.join(paths) or '(nothing given)'}")
    return out


def read_lines(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """file, line (from 1), last (the file's last line), value: one row per line."""
    raw = (spark.read.option("pathGlobFilter", "*.{jsonl,jsonl.gz}").text(list(paths))
           .select(F.col("_metadata.file_path").alias("file"),
                   F.col("_metadata.file_block_start").alias("block"),
                   F.monotonically_increasing_id().alias("_id"), "value"))
    blocks = raw.groupBy("file", "block").agg(F.count("*").alias("_n"), F.min("_id").alias("_first"))
    w = Window.partitionBy("file").orderBy("block")
    blocks = (blocks.withColumn("_before", F.sum("_n").over(w) - F.col("_n"))
              .withColumn("_lines", F.sum("_n").over(Window.partitionBy("file"))))
    return (raw.join(F.broadcast(blocks), ["file", "block"])
            .select("file", (F.col("_before") + F.col("_id") - F.col("_first") + 1).alias("line"),
                    (F.col("_before") + F.col("_id") - F.col("_first") + 1 == F.col("_lines")).alias("last"),
                    "value"))


def parse(lines: DataFrame) -> DataFrame:
    rec = F.from_json("value", SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"})
    return lines.where(F.trim("value") != "").select("file", "line", "last", rec.alias("r"))


def bad_lines(parsed: DataFrame, limit: int = 1000) -> list[JournalWarning]:
    """Lines that are not a JSON object: cut (a file's last line) or corrupt."""
    rows = (parsed.where(F.col("r").isNull() | F.col("r._corrupt").isNotNull())
            .select("file", "line", "last").orderBy("file", "line").limit(limit).collect())
    return [JournalWarning(r.file, r.line, "cut" if r.last else "corrupt",
                           "the last line of the file is not a complete JSON object (the broker stopped while "
                           "writing it)" if r.last else "not a JSON object") for r in rows]


def check_schema(parsed: DataFrame) -> None:
    ok = F.col("r.schema_version").isin(*sorted(SUPPORTED))
    bad = (parsed.where(F.col("r").isNotNull() & F.col("r._corrupt").isNull() & ~F.coalesce(ok, F.lit(False)))
           .select("file", "line", F.col("r.schema_version").alias("v")).orderBy("file", "line").limit(1).collect())
    if bad:
        b = bad[0]
        what = "no schema_version" if b.v is None else f"schema_version {b.v}"
        known = ", ".join(str(v) for v in sorted(SUPPORTED))
        raise JournalSchemaError(f"{b.file}:{b.line}: {what}; this report knows schema_version {known} "
                                 f"(docs/journal.md); read it with a newer mockbroker")


def records(parsed: DataFrame) -> DataFrame:
    """The good records, flattened, with run (the broker start in the file name) and the connection's
    client software (from its ApiVersions request, for the records before it too)."""
    df = (parsed.where(F.col("r").isNotNull() & F.col("r._corrupt").isNull())
          .select("file", "line", "r.*").drop("_corrupt")
          .withColumn("run", F.regexp_extract("file", r"journal-(\d+)-\d+\.jsonl", 1)))
    df = df.withColumn("run", F.when(F.col("run") == "", F.col("file")).otherwise(F.col("run")))
    conn = ["run", "broker", "connection"]
    sw = df.groupBy(*conn).agg(F.max("client_software_name").alias("_sn"),
                               F.max("client_software_version").alias("_sv"))
    return (df.join(sw, conn, "left")
            .withColumn("client_software_name", F.coalesce("client_software_name", "_sn", F.lit("unknown")))
            .withColumn("client_software_version", F.coalesce("client_software_version", "_sv", F.lit("unknown")))
            .withColumn("client_id", F.coalesce("client_id", F.lit("")))
            .withColumn("principal", F.coalesce("principal", F.lit("")))
            .drop("_sn", "_sv"))


def throttles(df: DataFrame) -> DataFrame:
    """One row per throttled response: the next request on its connection, the gap, early ms, verdict."""
    w = Window.partitionBy("run", "broker", "connection").orderBy("arrived_clock_ns", "seq")
    nxt = df.select("*", F.lead("arrived_clock_ns").over(w).alias("next_arrived_ns"),
                    F.lead("api").over(w).alias("next_api"), F.lead("after_throttle").over(w).alias("_at"))
    t = nxt.where((F.col("throttle_time_ms") > 0) & F.col("sent_clock_ns").isNotNull())
    deadline = (F.when(F.col("throttle_mode") == "mute", F.col("mute_end_clock_ns"))
                .when(F.col("throttle_mode") == "delay", F.col("sent_clock_ns"))
                .otherwise(F.col("sent_clock_ns") + F.col("throttle_time_ms") * 1_000_000))
    t = t.withColumn("deadline_ns", deadline)
    has_next = F.col("next_arrived_ns").isNotNull()
    # the broker's own verdict on the next request (after_throttle, by quota/verdict.py's rule, in
    # every mode), when the journal has it; derived from the clocks otherwise (observe mode only)
    at = F.col("_at")
    has_at = has_next & at.isNotNull()
    early_ns = F.col("deadline_ns") - F.col("next_arrived_ns")
    pipelined = F.when(has_at, F.coalesce(at["pipelined"], F.lit(False))).otherwise(
        has_next & (F.col("next_arrived_ns") < F.col("sent_clock_ns") + PIPELINED_NS))
    mode = F.col("throttle_mode")
    # journals from before after_throttle had "judged": mute judged from it, delay never
    judged_before = has_next & ~pipelined & ((mode == "observe") | ((mode == "mute") & has_at))
    judged = F.when(has_at & at["judged"].isNotNull(), at["judged"]).otherwise(judged_before)
    early = judged & F.when(has_at, F.coalesce(at["violation"], F.lit(False))).otherwise(
        early_ns > EARLY_TOLERANCE_NS)
    early_ms = F.when(has_at, at["early_ms"].cast("double")).when(
        has_next, F.greatest(early_ns / 1e6, F.lit(0.0)))
    return t.select(
        "run", *CLIENT, "broker", "connection", "api", "api_version", "client_throttles", "throttle_mode",
        "quota_type", "throttle_time_ms", "sent_clock_ns", "received_wall_ns", "next_api",
        has_next.alias("has_next"), pipelined.alias("pipelined"),
        ((F.col("next_arrived_ns") - F.col("sent_clock_ns")) / 1e6).alias("gap_ms"),
        early_ms.alias("early_ms"), judged.alias("judged"), early.alias("early"),
        (has_next & ~pipelined & (mode == "mute") & ~has_at).alias("undetermined"))


def build(spark: SparkSession, paths: Sequence[str], warn: Any = None) -> Report:
    """Read, check and aggregate; raises ReportInputError / JournalSchemaError."""
    files = input_paths(paths)
    parsed = parse(read_lines(spark, files)).cache()
    warns = bad_lines(parsed)
    for w in warns:
        if warn:
            warn(w)
    check_schema(parsed)
    df = records(parsed).cache()
    n = df.count()
    if n == 0:
        raise ReportInputError(f"no records in {', '.join(paths)}" + (" (every line was unreadable)" if warns else ""))
    key = ["run", *CLIENT]
    api = [*key, "api", "api_version"]
    tables: dict[str, DataFrame] = {}
    tables["requests"] = df.groupBy(*api).agg(
        F.count("*").alias("requests"), F.sum("request_bytes").alias("request_bytes"),
        F.sum(F.coalesce("response_bytes", F.lit(0))).alias("response_bytes"),
        F.sum(F.when(F.coalesce("error_code", F.lit(0)) != 0, 1).otherwise(0)).alias("errors"),
        F.sum(F.when(F.col("throttle_time_ms") > 0, 1).otherwise(0)).alias("throttled"),
        F.sum("throttle_time_ms").alias("throttle_ms_total"))
    tables["error_codes"] = (df.where(F.coalesce("error_code", F.lit(0)) != 0)
                             .groupBy(*api, "error_code").agg(F.count("*").alias("count")))
    t = throttles(df).cache()  # the window over the connections, used by three tables
    tables["throttles"] = t.groupBy(*api, "client_throttles", "throttle_mode", "quota_type").agg(
        F.count("*").alias("throttles"), cnt(F.col("has_next")).alias("with_next"),
        cnt(F.col("pipelined")).alias("pipelined"), cnt(F.col("judged")).alias("judged"),
        cnt(F.col("early")).alias("early"), cnt(F.col("undetermined")).alias("undetermined"),
        F.sum("throttle_time_ms").alias("throttle_ms_total"),
        F.avg("gap_ms").alias("avg_gap_ms"), F.min("gap_ms").alias("min_gap_ms"),
        F.avg(F.col("gap_ms") - F.col("throttle_time_ms")).alias("avg_gap_minus_throttle_ms"),
        F.max(F.when(F.col("early"), F.col("early_ms"))).alias("worst_early_ms"))
    fetch = df.where(F.col("api") == "FETCH")
    tables["long_poll"] = fetch.groupBy(*key, "api_version").agg(
        F.count("*").alias("fetches"), F.avg("details.max_wait_ms").alias("avg_max_wait_ms"),
        F.max("details.max_wait_ms").alias("max_max_wait_ms"), F.avg("details.min_bytes").alias("avg_min_bytes"),
        cnt(F.col("purgatory") == "Fetch").alias("parked"), F.avg("parked_ms").alias("avg_parked_ms"),
        F.max("parked_ms").alias("max_parked_ms"), cnt(F.col("completed_by") == "timeout").alias("timed_out"))
    produce = df.where((F.col("api") == "PRODUCE") & (F.col("details.acks") == -1))
    tables["acks_all"] = produce.groupBy(*key, "api_version").agg(
        F.count("*").alias("produces"), cnt(F.col("purgatory") == "Produce").alias("parked"),
        F.avg("parked_ms").alias("avg_parked_ms"), F.max("parked_ms").alias("max_parked_ms"),
        cnt(F.col("completed_by") == "timeout").alias("timed_out"))
    tables["connections"] = df.groupBy(*key).agg(
        F.countDistinct("broker", "connection").alias("connections"),
        F.countDistinct("broker").alias("brokers")).withColumn(
        "reconnects", F.greatest(F.col("connections") - F.col("brokers"), F.lit(0)))
    sec = (F.col("received_wall_ns") / 1_000_000_000).cast("long")
    tables["rate"] = df.groupBy(*key, sec.alias("second")).agg(
        F.count("*").alias("requests"), F.sum("request_bytes").alias("request_bytes"),
        F.sum(F.coalesce("response_bytes", F.lit(0))).alias("response_bytes"),
        F.max(F.col("quotas")["producer_byte_rate"]).alias("producer_byte_rate"),
        F.max(F.col("quotas")["consumer_byte_rate"]).alias("consumer_byte_rate"),
        F.sum("throttle_time_ms").alias("throttle_ms"))
    tables["early_over_time"] = t.groupBy(*key, (F.col("received_wall_ns") / 1e9).cast("long").alias("second")).agg(
        F.count("*").alias("throttles"), cnt(F.col("early")).alias("early"),
        F.sum("throttle_time_ms").alias("throttle_ms"))
    tables["verdicts"] = verdicts(tables["requests"], tables["throttles"])
    tables["api_verdicts"] = verdicts(tables["requests"], tables["throttles"], by=["api"])
    return Report(tables, warns, n)


def cnt(c: Any) -> Any:
    """How many rows ``c`` holds for."""
    return F.sum(F.when(c, 1).otherwise(0))


def verdicts(requests: DataFrame, th: DataFrame, by: Sequence[str] = ()) -> DataFrame:
    """Per client (software name and version, client id, principal), and per ``by`` (``["api"]``:
    the cells of the client x API matrix): the verdict and its evidence, from the throttles of API
    versions that oblige the client to back off (KIP-219)."""
    key = ["run", *CLIENT, *by]
    ob = F.col("client_throttles")
    g = th.groupBy(*key).agg(
        F.sum("throttles").alias("throttles"),
        F.sum(F.when(ob, F.col("judged")).otherwise(0)).alias("judged"),
        F.sum(F.when(ob, F.col("early")).otherwise(0)).alias("violations_obliged"),
        F.sum(F.when(~ob, F.col("early")).otherwise(0)).alias("violations_not_obliged"),
        F.sum("undetermined").alias("undetermined"), F.sum("pipelined").alias("pipelined"),
        F.max(F.when(ob, F.col("worst_early_ms"))).alias("worst_early_ms"),
        F.array_sort(F.collect_set(F.when(ob & (F.col("early") > 0),
                                          F.concat_ws(" v", "api", F.col("api_version").cast("string"))))
                     ).alias("versions_early"))
    clients = requests.groupBy(*key).agg(F.sum("requests").alias("requests"))
    g = clients.join(g, key, "left").fillna(0, ["throttles", "judged", "violations_obliged",
                                                 "violations_not_obliged", "undetermined", "pipelined"])
    return g.withColumn("verdict", verdict_column(F.col("throttles"), F.col("judged"), F.col("violations_obliged"),
                                                  F.col("undetermined")))


def verdict_column(throttles: Any, judged: Any, violations: Any, undetermined: Any) -> Any:
    """``quota.verdict.verdict`` (the broker's ``/throttles/violations`` verdict) as a column
    (tests/unit/test_report.py checks the two agree)."""
    r = verdict_rule
    return (F.when(throttles == 0, F.lit(r.NOT_THROTTLED))
            .when(judged == 0, F.when(undetermined > 0, F.lit(r.UNDETERMINED)).otherwise(F.lit(r.NO_JUDGED)))
            .when(violations == 0, F.lit(r.HONOURS))
            .when(violations >= judged * r.IGNORES_SHARE, F.lit(r.IGNORES))
            .otherwise(F.lit(r.PARTLY)))
