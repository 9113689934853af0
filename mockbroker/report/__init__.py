"""The throttle-conformance report (docs/report.md): ``mockbroker report JOURNAL... --out DIR``.

Needs the ``report`` extra (PySpark, matplotlib); the broker never imports this package.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

#: Exit codes of ``mockbroker report`` (docs/report.md).
EXIT_OK = 0
EXIT_FAILED = 1         # Spark or the output failed
EXIT_NO_INPUT = 2       # no journal files, or no record in them
EXIT_SCHEMA = 3         # a record of a schema_version this report does not know
EXIT_NOT_INSTALLED = 4  # the report extra (pyspark) is not installed


def run(args: argparse.Namespace) -> int:
    err = sys.stderr
    try:
        from . import job, progress, render
    except ImportError as e:
        print(f"mockbroker report: needs the report extra (pip install 'mockbroker[report]'): {e}", file=err)
        return EXIT_NOT_INSTALLED
    from ..journal_reader import JournalSchemaError

    try:
        files = job.input_paths(args.paths)
    except (job.ReportInputError, FileNotFoundError) as e:
        print(f"mockbroker report: error: {e}", file=err)
        return EXIT_NO_INPUT
    print(f"mockbroker report: {len(files)} journal file(s), Spark master {args.master}", file=err)
    from pyspark.sql import SparkSession
    own = SparkSession.getActiveSession() is None  # in process (tests): a session already running is kept
    spark = job.spark_session(args.master)
    every = getattr(args, "progress_every", None)
    try:
        with progress.ProgressLine(spark.sparkContext, err, every) if every != 0 else contextlib.nullcontext():
            report = job.build(spark, files, warn=lambda w: print(f"warning: {w}", file=err))
            written = render.write(report, args.out, list(args.paths))
    except job.ReportInputError as e:
        print(f"mockbroker report: error: {e}", file=err)
        return EXIT_NO_INPUT
    except JournalSchemaError as e:
        print(f"mockbroker report: error: {e}", file=err)
        return EXIT_SCHEMA
    except Exception as e:  # noqa: BLE001 - Spark's errors: one line, not a stack trace
        print(f"mockbroker report: failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=err)
        return EXIT_FAILED
    finally:
        if own:
            spark.stop()
    print(f"mockbroker report: {report.records} records; wrote {', '.join(written)} and tables/", file=err)
    return EXIT_OK
