"""The throttle-conformance report's PySpark job (docs/report.md).

DataFrame API throughout (and one partition-wise Python pass, the quota windows); only aggregates
reach the driver, and the few unreadable lines for their warnings.

One pass over the input: the lines are read and parsed once into the columns the tables use and
cached; one aggregate per file checks them (unreadable lines, records without or with an unknown
``schema_version``, the earliest record of a file whose name carries no run).  Then the records are
windowed once per connection (the next request after each throttled response, the connection's
client software) and cached, and every table is an aggregate of that.  The tables are small, cached
sorted in one partition, and materialised together in one Spark job (``Report.materialise``), so
the Parquet writes and the driver's rows read them from memory.

Line numbers, only when a line must be named (a warning or an error): ``spark.read.text`` with the
file's path and the start of its split from the hidden ``_metadata`` column, and
``monotonically_increasing_id`` taken in the scan.  Hadoop's line reader gives every line to exactly
one split, and a split is read in order by one task, so within a (file, split start) the ids grow
with the line; a split's lines are consecutive in its partition, so a line's index in its split is
its id minus the split's smallest id.  A small aggregate (lines per split, cumulated per file in
split order) turns that into the line number in the file, without sorting the lines.  A gzip file
is one split.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..journal_reader import SEGMENT_RE, SUPPORTED, JournalSchemaError, JournalWarning
from ..quota import verdict as verdict_rule

#: The next request counts as pipelined (sent before the client could have seen the throttled
#: response) when it arrived within this long after the response was sent: the broker stamps a
#: request that was already waiting as it takes it, right after the response goes out.
PIPELINED_NS = 200_000
#: Broker and client clocks tick in whole ms (mockbroker/quota/verdict.py): a request this much or less
#: before the deadline is not early.
EARLY_TOLERANCE_NS = verdict_rule.EARLY_TOLERANCE_MS * 1_000_000
#: Kafka's defaults of the broker configs the quota windows are replayed with (docs/report.md).
QUOTA_WINDOW_NUM = 11
QUOTA_WINDOW_SIZE_SECONDS = 1
#: The byte-rate quotas and the API whose bytes each charges (kafka-semantics.md §1.1): Produce
#: the request size, Fetch the response size (a throttled fetch's bytes are unrecorded).
BYTE_QUOTAS = (("producer_byte_rate", "PRODUCE"), ("consumer_byte_rate", "FETCH"))
#: Inputs up to this size make a small job: fewer shuffle partitions, a JVM tuned for start-up.
SMALL_INPUT_BYTES = 256 << 20

CLIENT = ["client_software_name", "client_software_version", "client_id", "principal"]
KEY = ["run", *CLIENT]

_ENTITY = T.StructType([T.StructField("user", T.StringType()), T.StructField("client_id", T.StringType())])
#: The record fields the tables use (from_json skips the others).
SCHEMA = T.StructType([
    T.StructField("schema_version", T.LongType()), T.StructField("broker", T.LongType()),
    T.StructField("connection", T.LongType()),
    T.StructField("client_id", T.StringType()), T.StructField("principal", T.StringType()),
    T.StructField("client_software_name", T.StringType()), T.StructField("client_software_version", T.StringType()),
    T.StructField("api", T.StringType()),
    T.StructField("api_version", T.LongType()), T.StructField("request_bytes", T.LongType()),
    T.StructField("arrived_clock_ns", T.LongType()), T.StructField("received_clock_ns", T.LongType()),
    T.StructField("received_wall_ns", T.LongType()), T.StructField("handled_clock_ns", T.LongType()),
    T.StructField("sent_clock_ns", T.LongType()),
    T.StructField("outcome", T.StringType()), T.StructField("response_bytes", T.LongType()),
    T.StructField("throttle_time_ms", T.LongType()), T.StructField("throttle_mode", T.StringType()),
    T.StructField("quota_type", T.StringType()), T.StructField("client_throttles", T.BooleanType()),
    T.StructField("mute_end_clock_ns", T.LongType()),
    T.StructField("parked_ms", T.DoubleType()), T.StructField("purgatory", T.StringType()),
    T.StructField("completed_by", T.StringType()), T.StructField("error_code", T.LongType()),
    T.StructField("quota_entity", _ENTITY),
    T.StructField("quotas", T.MapType(T.StringType(), T.DoubleType())),
    T.StructField("details", T.StructType([
        T.StructField("acks", T.LongType()), T.StructField("max_wait_ms", T.LongType()),
        T.StructField("min_bytes", T.LongType())])),
    T.StructField("seq", T.LongType()),
    T.StructField("after_throttle", T.StructType([
        T.StructField("early_ms", T.LongType()), T.StructField("pipelined", T.BooleanType()),
        T.StructField("judged", T.BooleanType()), T.StructField("violation", T.BooleanType())])),
    T.StructField("_corrupt", T.StringType()),
])

#: The report's stages, in order, as the progress line names them (progress.py).
STAGES = ("starting Spark", "reading the journals", "aggregating", "writing the tables and plots",
          "writing report.md and report.html")


class ReportInputError(ValueError):
    """No input, or an input without a single record."""


@dataclass
class Report:
    """The aggregates of one report: DataFrames until ``materialise``, then also their rows."""
    tables: dict[str, DataFrame]
    warnings: list[JournalWarning] = field(default_factory=list)
    records: int = 0
    quota_window_num: int = QUOTA_WINDOW_NUM
    quota_window_size_seconds: int = QUOTA_WINDOW_SIZE_SECONDS
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def materialise(self) -> dict[str, list[dict[str, Any]]]:
        """Every table's rows (dicts, in the table's order), computed in one Spark job: the tables
        (cached) are unioned as JSON lines and collected, which fills their caches for the Parquet
        writes too."""
        if not self.rows:
            names = list(self.tables)
            parts = [df.select(F.lit(i).alias("_t"), F.to_json(F.struct(*df.columns), _JSON).alias("_j"))
                     for i, df in enumerate(self.tables.values())]
            rows: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
            decoders = {n: _decoder(df.schema) for n, df in self.tables.items()}
            for r in reduce(DataFrame.unionAll, parts).collect():
                name = names[r[0]]
                rows[name].append(decoders[name](json.loads(r[1])))
            self.rows = rows
        return self.rows


#: to_json's options for ``Report.materialise``: timestamps as Python reads them, nulls kept.
_JSON = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS", "ignoreNullFields": "false"}


def _decoder(schema: T.StructType) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A JSON object of a table's row to the row as a dict (timestamps as naive UTC datetimes)."""
    stamps = [f.name for f in schema.fields if isinstance(f.dataType, T.TimestampType)]

    def decode(obj: dict[str, Any]) -> dict[str, Any]:
        for n in stamps:
            if obj[n] is not None:
                obj[n] = dt.datetime.fromisoformat(obj[n])
        return obj
    return decode


def spark_session(master: str = "local[*]", app: str = "mockbroker-report", small: bool = False,
                  **conf: str) -> SparkSession:
    """A SparkSession for the report; a local master binds to 127.0.0.1.  ``small`` (an input below
    ``SMALL_INPUT_BYTES``): two shuffle partitions, no adaptive execution or code generation, and a
    driver JVM tuned for start-up (C1 only, the serial collector, a class-data archive of Spark's
    classes: ``jvm_options``)."""
    b = SparkSession.builder.master(master).appName(app)
    settings = {"spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": "2" if small else "8",
                "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
                "spark.ui.showConsoleProgress": "false"}  # the report prints its own (progress.py)
    if small:
        # a small job's time is the JVM's: re-planning (adaptive execution) and compiling generated
        # code (whole-stage code generation, and the expressions': the internal factoryMode) cost
        # more than they save on a few thousand rows (bench/report_speed.py: about 2 s of CPU of 16)
        settings |= {"spark.sql.adaptive.enabled": "false", "spark.sql.codegen.wholeStage": "false",
                     "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
        opts = jvm_options()
        if opts:
            settings["spark.driver.extraJavaOptions"] = opts
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    for k, v in (settings | conf).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def jvm_options() -> str:
    """The driver JVM's options for a small report: C1 only and the serial collector (a short job
    is mostly start-up), and an AppCDS archive of the classes Spark loads (``jvm.class_archive``)."""
    from . import jvm
    return " ".join(["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", *jvm.class_archive_options()])


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


def input_bytes(files: Sequence[str]) -> int | None:
    """The size of the local input files; None when a URI is among them (its size is Spark's to find)."""
    if any(_is_uri(f) for f in files):
        return None
    return sum(os.path.getsize(f) for f in files)


def read_lines(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """file, block (the start of its split), _id (grows with the line within a split), value.
    Local files are read as named (a file given by name is read whatever its name); a URI may be a
    directory, of which the journal segments are read."""
    local = [p for p in paths if not _is_uri(p)]
    uris = [p for p in paths if _is_uri(p)]
    reads = ([spark.read.text(local)] if local else []) + \
            ([spark.read.option("pathGlobFilter", "*.{jsonl,jsonl.gz}").text(uris)] if uris else [])
    return reduce(DataFrame.unionAll, [
        r.select(F.col("_metadata.file_path").alias("file"), F.col("_metadata.file_block_start").alias("block"),
                 F.monotonically_increasing_id().alias("_id"), "value") for r in reads])


def line_numbers(lines: DataFrame) -> DataFrame:
    """``lines`` (file, block, _id, ...) with ``line`` (from 1) and ``last`` (the file's last line)."""
    blocks = lines.groupBy("file", "block").agg(F.count("*").alias("_n"), F.min("_id").alias("_first"))
    w = Window.partitionBy("file").orderBy("block")
    blocks = (blocks.withColumn("_before", F.sum("_n").over(w) - F.col("_n"))
              .withColumn("_lines", F.sum("_n").over(Window.partitionBy("file"))))
    n = F.col("_before") + F.col("_id") - F.col("_first") + 1
    return (lines.join(F.broadcast(blocks), ["file", "block"])
            .withColumn("line", n).withColumn("last", n == F.col("_lines"))
            .drop("_n", "_first", "_before", "_lines"))


def parse(lines: DataFrame) -> DataFrame:
    """file, block, _id, kind (record | bad | unversioned | unknown), and the record's fields flat."""
    rec = F.from_json("value", SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"})
    r = F.col("r")
    version = r["schema_version"]
    kind = (F.when(r.isNull() | r["_corrupt"].isNotNull(), F.lit("bad"))
            .when(version.isNull(), F.lit("unversioned"))
            .when(version.isin(*sorted(SUPPORTED)), F.lit("record"))
            .otherwise(F.lit("unknown")))
    return (lines.where(F.trim("value") != "").select("file", "block", "_id", rec.alias("r"))
            .select("file", "block", "_id", kind.alias("kind"), "r.*").drop("_corrupt"))


def file_checks(parsed: DataFrame) -> list[Row]:
    """One row per file: lines, records, bad / unversioned / unknown-version lines, and an unknown
    version found."""
    k = F.col("kind")
    return sorted(parsed.groupBy("file").agg(
        F.count("*").alias("lines"), cnt(k == "record").alias("records"), cnt(k == "bad").alias("bad"),
        cnt(k == "unversioned").alias("unversioned"), cnt(k == "unknown").alias("unknown"),
        F.max(F.when(k == "unknown", F.col("schema_version"))).alias("version"))
        .collect(), key=lambda r: r.file)


def named_lines(lines: DataFrame, parsed: DataFrame, kinds: Sequence[str], limit: int = 1000) -> list[Row]:
    """The lines of ``kinds`` with their numbers: file, line, last, kind, schema_version (in file order)."""
    which = parsed.where(F.col("kind").isin(*kinds)).select("file", "block", "_id", "kind", "schema_version")
    return (line_numbers(lines).join(which, ["file", "block", "_id"])
            .select("file", "line", "last", "kind", "schema_version").orderBy("file", "line").limit(limit).collect())


def check(lines: DataFrame, parsed: DataFrame, checks: list[Row], warn: Callable[[JournalWarning], None] | None,
          paths: Sequence[str]) -> list[JournalWarning]:
    """Warnings for unreadable lines; JournalSchemaError for a file that is not a journal or a record
    of an unknown ``schema_version``; ReportInputError when no record is left."""
    bad = [c for c in checks if c.bad or c.unversioned or c.unknown]
    warns: list[JournalWarning] = []
    if not bad:
        if not sum(c.records for c in checks):
            raise ReportInputError(f"no records in {', '.join(paths)}")
        return warns
    not_journal = [c.file for c in checks if not c.records and (c.unversioned or not _segment_name(c.file))]
    if not_journal:
        raise JournalSchemaError(f"{local_path(not_journal[0])}: not a mockbroker journal (no line is a JSON object "
                                 f"with a schema_version; docs/journal.md)")
    named = named_lines(lines, parsed, ["bad", "unversioned", "unknown"])
    for r in named:
        if r.kind == "unversioned":
            raise JournalSchemaError(f"{local_path(r.file)}:{r.line}: not a mockbroker journal record (a JSON object "
                                     f"without schema_version; docs/journal.md)")
        if r.kind == "unknown":
            known = ", ".join(str(v) for v in sorted(SUPPORTED))
            raise JournalSchemaError(f"{local_path(r.file)}:{r.line}: schema_version {r.schema_version}; this report "
                                     f"knows schema_version {known} (docs/journal.md); read it with a newer mockbroker")
    for r in named:
        w = JournalWarning(local_path(r.file), r.line, "cut" if r.last else "corrupt",
                           "the last line of the file is not a complete JSON object (the broker stopped while "
                           "writing it)" if r.last else "not a JSON object")
        warns.append(w)
        if warn:
            warn(w)
    if not sum(c.records for c in checks):
        raise ReportInputError(f"no records in {', '.join(paths)} (every line was unreadable)")
    return warns


def local_path(path: str) -> str:
    """A local file's path as Spark names it (``file:/tmp/a%20b``) as its user does (``/tmp/a b``)."""
    if path.startswith("file:"):
        from urllib.parse import unquote, urlparse
        return unquote(urlparse(path).path)
    return path


def _segment_name(path: str) -> re.Match[str] | None:
    return SEGMENT_RE.match(os.path.basename(path))


def run_column(files: Sequence[str]) -> Any:
    """The run of a record as a timestamp: the broker's start (ms) in the segment's name, or for a
    file named otherwise (or a URI, whose files are not known here) the wall time of its earliest
    record."""
    ms = F.regexp_extract("file", r"journal-(\d+)-\d+\.jsonl(\.gz)?$", 1)
    ms = F.when(ms != "", ms.cast("long"))
    if any(_is_uri(f) or not _segment_name(f) for f in files):
        ms = F.coalesce(ms, F.floor(F.min("received_wall_ns").over(Window.partitionBy("file")) / 1_000_000))
    return F.timestamp_millis(ms)


def records(parsed: DataFrame, files: Sequence[str]) -> DataFrame:
    """The good records with ``run`` (a timestamp), the connection's client software (from its
    ApiVersions request, for the records before it too), the next request on the connection
    (``next_arrived_ns``, ``next_api``, ``next_at``) and when the connection opened (its first arrival)."""
    df = parsed.where(F.col("kind") == "record").drop("kind", "block", "_id", "schema_version") \
        .withColumn("run", run_column(files)).drop("file")
    conn = Window.partitionBy("run", "broker", "connection")
    ordered = conn.orderBy("arrived_clock_ns", "seq")
    return df.select(
        *[c for c in df.columns if c not in ("client_software_name", "client_software_version",
                                             "client_id", "principal")],
        F.coalesce("client_software_name", F.max("client_software_name").over(conn), F.lit("unknown"))
        .alias("client_software_name"),
        F.coalesce("client_software_version", F.max("client_software_version").over(conn), F.lit("unknown"))
        .alias("client_software_version"),
        F.coalesce("client_id", F.lit("")).alias("client_id"), F.coalesce("principal", F.lit("")).alias("principal"),
        F.min("arrived_clock_ns").over(conn).alias("opened_ns"),
        F.lead("arrived_clock_ns").over(ordered).alias("next_arrived_ns"),
        F.lead("api").over(ordered).alias("next_api"), F.lead("after_throttle").over(ordered).alias("next_at"))


def judge(df: DataFrame) -> DataFrame:
    """Every record with the judgement of its throttle (false / null when not throttled): the next
    request on its connection, the gap, early ms, pipelined, judged, early, undetermined."""
    throttled = (F.col("throttle_time_ms") > 0) & F.col("sent_clock_ns").isNotNull()
    deadline = (F.when(F.col("throttle_mode") == "mute", F.col("mute_end_clock_ns"))
                .when(F.col("throttle_mode") == "delay", F.col("sent_clock_ns"))
                .otherwise(F.col("sent_clock_ns") + F.col("throttle_time_ms") * 1_000_000))
    has_next = throttled & F.col("next_arrived_ns").isNotNull()
    # the broker's own verdict on the next request (after_throttle, by quota/verdict.py's rule, in
    # every mode), when the journal has it; derived from the clocks otherwise (observe mode only)
    at = F.col("next_at")
    has_at = has_next & at.isNotNull()
    early_ns = deadline - F.col("next_arrived_ns")
    pipelined = has_next & F.when(has_at, F.coalesce(at["pipelined"], F.lit(False))).otherwise(
        F.col("next_arrived_ns") < F.col("sent_clock_ns") + PIPELINED_NS)
    mode = F.col("throttle_mode")
    # journals from before after_throttle had "judged": mute judged from it, delay never
    judged_before = has_next & ~pipelined & ((mode == "observe") | ((mode == "mute") & has_at))
    judged = F.when(has_at & at["judged"].isNotNull(), at["judged"]).otherwise(judged_before)
    early = judged & F.when(has_at, F.coalesce(at["violation"], F.lit(False))).otherwise(
        early_ns > EARLY_TOLERANCE_NS)
    early_ms = F.when(has_at, at["early_ms"].cast("double")).when(has_next, F.greatest(early_ns / 1e6, F.lit(0.0)))
    return df.select(
        "*", throttled.alias("throttled"), has_next.alias("has_next"), pipelined.alias("pipelined"),
        F.when(has_next, (F.col("next_arrived_ns") - F.col("sent_clock_ns")) / 1e6).alias("gap_ms"),
        early_ms.alias("early_ms"), judged.alias("judged"), early.alias("early"),
        (has_next & ~pipelined & (mode == "mute") & ~has_at).alias("undetermined"))


def cnt(c: Any) -> Any:
    """How many rows ``c`` holds for."""
    return F.sum(F.when(c, 1).otherwise(0))


def _charged() -> tuple[Any, Any]:
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
    nbytes, at_ns = _charged()
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


def build(spark: SparkSession, paths: Sequence[str], warn: Any = None,
          stage: Callable[[str], AbstractContextManager[Any]] | None = None,
          quota_window_num: int = QUOTA_WINDOW_NUM, quota_window_size_seconds: int = QUOTA_WINDOW_SIZE_SECONDS,
          ) -> Report:
    """Read, check and aggregate; raises ReportInputError / JournalSchemaError.  ``stage(name)``
    brackets the Spark jobs of each of the report's stages (progress.py); the tables are
    computed by ``Report.materialise``."""
    stage = stage or (lambda name: nullcontext())
    files = input_paths(paths)
    with stage("reading the journals"):
        lines = read_lines(spark, files)
        parsed = parse(lines).cache()
        # the files are checked by a Spark job in a second thread while this one plans the tables
        # (the driver's planning and the job's tasks use both cores); a table is computed only
        # once the checks have passed
        from pyspark import InheritableThread  # the job group (progress.py) goes with it
        done: list[Any] = []

        def checking() -> None:
            try:
                done.append(file_checks(parsed))
            except BaseException as e:  # noqa: BLE001 - raised in this thread below
                done.append(e)
        checker = InheritableThread(target=checking, name="report-checks")
        checker.start()
        try:
            df = judge(records(parsed, files)).cache()
            tables = aggregate(df, quota_window_num, quota_window_size_seconds)
        finally:
            checker.join()
        if isinstance(done[0], BaseException):
            raise done[0]
        checks: list[Row] = done[0]
        warns = check(lines, parsed, checks, warn, paths)
    return Report(tables, warns, sum(c.records for c in checks), quota_window_num, quota_window_size_seconds)


#: The order of each table's rows (after the client key), and so of its Parquet file.
ORDER = {"requests": ["api", "api_version"], "error_codes": ["api", "api_version", "error_code"],
         "throttles": ["api", "api_version", "client_throttles", "throttle_mode", "quota_type"],
         "long_poll": ["api_version"], "acks_all": ["api_version"], "connections": [],
         "rate": ["time"], "windowed_rate": ["quota", "broker", "quota_user", "quota_client_id", "time"],
         "quota_rates": ["quota", "broker", "quota_user", "quota_client_id"],
         "verdicts": [], "api_verdicts": ["api"]}


def aggregate(df: DataFrame, samples: int = QUOTA_WINDOW_NUM, window_s: int = QUOTA_WINDOW_SIZE_SECONDS
              ) -> dict[str, DataFrame]:
    """The report's tables from the judged records, each sorted (``ORDER``) in one cached partition.

    Six passes over the records (each a shuffle): per client and API version (``requests``,
    ``long_poll``, ``acks_all`` and the quotas in force), per error code, per throttle kind, per
    connection, per second, and the quota sensors' replay; every other table is computed from
    those small aggregates."""
    api = [*KEY, "api", "api_version"]
    # parked: only the requests that really waited in that purgatory (a delayed operation completed
    # at once is in it for no time: parked_ms null)
    parked = F.col("parked_ms").isNotNull()
    in_fetch = F.col("purgatory") == "Fetch"
    acks_all = (F.col("api") == "PRODUCE") & (F.col("details.acks") == -1)
    in_produce = acks_all & (F.col("purgatory") == "Produce")
    ent = F.col("quota_entity")
    base = (df.groupBy(*api).agg(
        F.count("*").alias("requests"), F.sum("request_bytes").alias("request_bytes"),
        F.sum(F.coalesce("response_bytes", F.lit(0))).alias("response_bytes"),
        cnt(F.coalesce("error_code", F.lit(0)) != 0).alias("errors"),
        cnt(F.col("throttle_time_ms") > 0).alias("throttled"),
        F.sum("throttle_time_ms").alias("throttle_ms_total"),
        # long_poll (the Fetch rows)
        F.avg("details.max_wait_ms").alias("avg_max_wait_ms"), F.max("details.max_wait_ms").alias("max_max_wait_ms"),
        F.avg("details.min_bytes").alias("avg_min_bytes"), cnt(in_fetch & parked).alias("fetch_parked"),
        F.avg(F.when(in_fetch, F.col("parked_ms"))).alias("fetch_avg_parked_ms"),
        F.max(F.when(in_fetch, F.col("parked_ms"))).alias("fetch_max_parked_ms"),
        cnt(F.col("completed_by") == "timeout").alias("timed_out"),
        # acks_all (the Produce rows with acks=-1)
        cnt(acks_all).alias("produces"), cnt(in_produce & parked).alias("produce_parked"),
        F.avg(F.when(in_produce, F.col("parked_ms"))).alias("produce_avg_parked_ms"),
        F.max(F.when(in_produce, F.col("parked_ms"))).alias("produce_max_parked_ms"),
        cnt(acks_all & (F.col("completed_by") == "timeout")).alias("produce_timed_out"),
        # beside the verdicts: the quotas in force and the entities the sensors are tagged with
        F.collect_set(F.to_json("quotas")).alias("_quotas"),
        F.collect_set(_entity_name(ent)).alias("_entities"))).cache()
    tables: dict[str, DataFrame] = {}
    tables["requests"] = base.select(*api, "requests", "request_bytes", "response_bytes", "errors", "throttled",
                                     "throttle_ms_total")
    tables["long_poll"] = base.where(F.col("api") == "FETCH").select(
        *KEY, "api_version", F.col("requests").alias("fetches"), "avg_max_wait_ms", "max_max_wait_ms",
        "avg_min_bytes", F.col("fetch_parked").alias("parked"), F.col("fetch_avg_parked_ms").alias("avg_parked_ms"),
        F.col("fetch_max_parked_ms").alias("max_parked_ms"), "timed_out")
    tables["acks_all"] = base.where((F.col("api") == "PRODUCE") & (F.col("produces") > 0)).select(
        *KEY, "api_version", "produces", F.col("produce_parked").alias("parked"),
        F.col("produce_avg_parked_ms").alias("avg_parked_ms"), F.col("produce_max_parked_ms").alias("max_parked_ms"),
        F.col("produce_timed_out").alias("timed_out"))
    tables["error_codes"] = (df.where(F.coalesce("error_code", F.lit(0)) != 0)
                             .groupBy(*api, "error_code").agg(F.count("*").alias("count")))
    throttles = (df.where("throttled").groupBy(*api, "client_throttles", "throttle_mode", "quota_type").agg(
        F.count("*").alias("throttles"), cnt(F.col("has_next")).alias("with_next"),
        cnt(F.col("pipelined")).alias("pipelined"), cnt(F.col("judged")).alias("judged"),
        cnt(F.col("early")).alias("early"), cnt(F.col("undetermined")).alias("undetermined"),
        F.sum("throttle_time_ms").alias("throttle_ms_total"),
        F.avg("gap_ms").alias("avg_gap_ms"), F.min("gap_ms").alias("min_gap_ms"),
        F.avg(F.col("gap_ms") - F.col("throttle_time_ms")).alias("avg_gap_minus_throttle_ms"),
        F.max(F.when(F.col("early"), F.col("early_ms"))).alias("worst_early_ms"))).cache()
    tables["throttles"] = throttles
    tables["connections"] = connections(df)
    tables["rate"] = rate(df)
    tables["windowed_rate"] = windowed_rates(df, samples, window_s)
    out = {name: _final(name, d) for name, d in tables.items()}
    out["quota_rates"] = _final("quota_rates", quota_rates(out["windowed_rate"]))
    out["verdicts"] = _final("verdicts", verdicts(base, throttles).join(extras(base, throttles), KEY, "left"))
    out["api_verdicts"] = _final("api_verdicts", verdicts(base, throttles, by=["api"]))
    return out


def _entity_name(ent: Any) -> Any:
    """A quota entity as its sensor's tags read: ``user=alice, client-id=app`` (the empty tags left
    out; ``(default)`` when both are empty); null without one."""
    tags = F.concat_ws(", ", F.when(ent["user"] != "", F.concat(F.lit("user="), ent["user"])),
                       F.when(ent["client_id"] != "", F.concat(F.lit("client-id="), ent["client_id"])))
    return F.when(ent.isNotNull(), F.when(tags == "", F.lit("(default)")).otherwise(tags))


def _final(name: str, df: DataFrame) -> DataFrame:
    """A table as written and collected: one partition, sorted (``ORDER``), cached."""
    return df.coalesce(1).sortWithinPartitions(*KEY, *ORDER[name]).cache()


def connections(df: DataFrame) -> DataFrame:
    """Per client: connections, brokers, bootstrap connections, reconnects.  A bootstrap connection
    opened before the client's first Metadata response was sent (the client could not yet know a
    broker by its node id: it dialled a bootstrap address); a reconnect is a connection to a broker
    after the client's first (not bootstrap) connection to it."""
    conns = df.groupBy(*KEY, "broker", "connection").agg(
        F.min("opened_ns").alias("opened_ns"),
        F.min(F.when((F.col("api") == "METADATA"), F.col("sent_clock_ns"))).alias("metadata_ns"))
    c = conns.withColumn("bootstrap", F.coalesce(
        F.col("opened_ns") < F.min("metadata_ns").over(Window.partitionBy(*KEY)), F.lit(False)))
    per_broker = c.groupBy(*KEY, "broker").agg(
        F.count("*").alias("connections"), cnt(F.col("bootstrap")).alias("bootstrap"))
    return per_broker.groupBy(*KEY).agg(
        F.sum("connections").alias("connections"), F.count("*").alias("brokers"),
        F.sum("bootstrap").alias("bootstrap"),
        F.sum(F.greatest(F.col("connections") - F.col("bootstrap") - 1, F.lit(0))).alias("reconnects"))


def rate(df: DataFrame) -> DataFrame:
    """Per client and second (``time``, the wall clock of ``received_wall_ns``), from its first
    second to its last, seconds without requests as zero rows: requests, bytes, the bytes charged
    to the byte-rate quotas, the quotas in force (carried over quiet seconds), throttles, early
    requests, throttle ms."""
    nbytes, _ = _charged()
    sec = F.floor(F.col("received_wall_ns") / 1_000_000_000).cast("long")
    per = df.groupBy(*KEY, sec.alias("second")).agg(
        F.count("*").alias("requests"), F.sum("request_bytes").alias("request_bytes"),
        F.sum(F.coalesce("response_bytes", F.lit(0))).alias("response_bytes"),
        F.sum(F.when(F.col("api") == "PRODUCE", nbytes).otherwise(0)).alias("produce_bytes"),
        F.sum(F.when(F.col("api") == "FETCH", nbytes).otherwise(0)).alias("fetch_bytes"),
        F.max(F.col("quotas")["producer_byte_rate"]).alias("producer_byte_rate"),
        F.max(F.col("quotas")["consumer_byte_rate"]).alias("consumer_byte_rate"),
        cnt(F.col("throttled")).alias("throttles"), cnt(F.col("early")).alias("early"),
        F.sum("throttle_time_ms").alias("throttle_ms"))
    # every second from the client's first to its last: the seconds it sent nothing are zero rows
    ordered = Window.partitionBy(*KEY).orderBy("second")
    full = (per.select("*", F.lead("second").over(ordered).alias("_next"))
            .select("*", F.explode(F.sequence("second", F.coalesce(F.col("_next") - 1, "second"))).alias("_s")))
    counts = ["requests", "request_bytes", "response_bytes", "produce_bytes", "fetch_bytes", "throttles", "early",
              "throttle_ms"]
    real = F.col("_s") == F.col("second")
    return full.select(
        *KEY, F.timestamp_seconds("_s").alias("time"),
        *[F.when(real, F.col(c)).otherwise(F.lit(0)).alias(c) for c in counts],
        "producer_byte_rate", "consumer_byte_rate")


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


def extras(base: DataFrame, throttles: DataFrame) -> DataFrame:
    """Per client, beside its verdict: the throttle modes its responses were throttled in, the
    quota entities its sensors are tagged with and the quotas in force (``key=value``)."""
    modes = throttles.groupBy(*KEY).agg(F.array_sort(F.collect_set("throttle_mode")).alias("throttle_modes"))
    quotas_type: Any = T.MapType(T.StringType(), T.DoubleType())  # from_json takes a MapType; pyspark's stub omits it
    kv = F.flatten(F.transform(F.array_distinct(F.flatten(F.collect_list("_quotas"))), lambda j: F.transform(
        F.map_entries(F.from_json(j, quotas_type)),
        lambda e: F.concat(e["key"], F.lit("="), F.when(e["value"] == F.floor(e["value"]), e["value"].cast("long")
                                                        .cast("string")).otherwise(e["value"].cast("string"))))))
    q = base.groupBy(*KEY).agg(
        F.array_sort(F.array_distinct(kv)).alias("quotas"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("_entities")))).alias("quota_entities"))
    return q.join(modes, KEY, "left")


def verdicts(requests: DataFrame, th: DataFrame, by: Sequence[str] = ()) -> DataFrame:
    """Per client (software name and version, client id, principal), and per ``by`` (``["api"]``:
    the cells of the client x API matrix): the verdict and its evidence, from the throttles of API
    versions that oblige the client to back off (KIP-219)."""
    key = [*KEY, *by]
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
