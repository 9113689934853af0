"""Reading the journals for the report (docs/report.md, docs/journal.md): which files, their lines with
their numbers, each line parsed into the record schema the report's tables use, the checks that name
an unreadable line or a file that is not a journal, and each record's run.

Line numbers, only when a line must be named (a warning or an error): ``spark.read.text`` with the
file's path and the start of its split from the hidden ``_metadata`` column, and
``monotonically_increasing_id`` taken in the scan (job.py's docstring tells how they become the line
in the file)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..journal_reader import SEGMENT_RE, SUPPORTED, JournalSchemaError, JournalWarning

#: The columns that name a client, and with the run the key of every per-client table.
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



class ReportInputError(ValueError):
    """No input, or an input without a single record."""


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


def cnt(c: Any) -> Any:
    """How many rows ``c`` holds for."""
    return F.sum(F.when(c, 1).otherwise(0))
