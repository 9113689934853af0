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

import datetime as dt
import json
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..journal_reader import JournalWarning
from ..quota import verdict as verdict_rule
from .rates import charged, quota_rates, windowed_rates
from .reading import (
    KEY,
    check,
    cnt,
    file_checks,
    input_paths,
    parse,
    read_lines,
    run_column,
)

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
#: Inputs up to this size make a small job: fewer shuffle partitions, a JVM tuned for start-up.
SMALL_INPUT_BYTES = 256 << 20


#: The report's stages, in order, as the progress line names them (progress.py).
STAGES = ("starting Spark", "reading the journals", "aggregating", "writing the tables and plots",
          "writing report.md and report.html")


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
    nbytes, _ = charged()
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
    (tests/unit/report/test_report.py checks the two agree)."""
    r = verdict_rule
    return (F.when(throttles == 0, F.lit(r.NOT_THROTTLED))
            .when(judged == 0, F.when(undetermined > 0, F.lit(r.UNDETERMINED)).otherwise(F.lit(r.NO_JUDGED)))
            .when(violations == 0, F.lit(r.HONOURS))
            .when(violations >= judged * r.IGNORES_SHARE, F.lit(r.IGNORES))
            .otherwise(F.lit(r.PARTLY)))
