"""The throttle-conformance report (docs/report.md): ``mockbroker report JOURNAL... --out DIR``.

Needs the ``report`` extra (PySpark, matplotlib); the broker never imports this package.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import zipfile
from typing import Any

#: Exit codes of ``mockbroker report`` (docs/report.md).
EXIT_OK = 0
EXIT_FAILED = 1         # Spark or the output failed, or --out is not a directory
EXIT_NO_INPUT = 2       # no journal files, or no record in them
EXIT_SCHEMA = 3         # not a mockbroker journal, or a record of a schema_version this report does not know
EXIT_NOT_INSTALLED = 4  # the report extra (pyspark) is not installed


def _ship_package(sc: Any) -> None:
    """On a cluster the executors import mockbroker.quota.rate (the quota windows): send them this
    mockbroker's Python files (SparkContext.addPyFile), so a cluster needs only PySpark."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    fd, path = tempfile.mkstemp(prefix="mockbroker-", suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for d, _, names in os.walk(root):
            for n in names:
                if n.endswith(".py"):
                    full = os.path.join(d, n)
                    z.write(full, os.path.relpath(full, os.path.dirname(root)))
    sc.addPyFile(path)


def run(args: argparse.Namespace) -> int:
    err = sys.stderr
    try:
        from . import job, jvm, plots, progress, reading, render
    except ImportError as e:
        print(f"mockbroker report: needs the report extra (pip install 'mockbroker[report]'): {e}", file=err)
        return EXIT_NOT_INSTALLED
    from ..journal_reader import JournalSchemaError

    if os.path.exists(args.out) and not os.path.isdir(args.out):
        print(f"mockbroker report: error: --out {args.out} is a file; give a directory (created if missing)", file=err)
        return EXIT_FAILED
    try:
        files = reading.input_paths(args.paths)
    except (reading.ReportInputError, FileNotFoundError) as e:
        print(f"mockbroker report: error: {e}", file=err)
        return EXIT_NO_INPUT
    size = reading.input_bytes(files)
    print(f"mockbroker report: {len(files)} journal file(s)" + (f", {size / 2**20:.1f} MiB" if size is not None else "")
          + f", Spark master {args.master}", file=err)
    # matplotlib's import (about half a second) while the JVM starts, not after the tables
    threading.Thread(target=plots.import_plotting, name="report-import", daemon=True).start()
    from pyspark.sql import SparkSession
    own = SparkSession.getActiveSession() is None  # in process (tests): a session already running is kept
    every = getattr(args, "progress_every", None)
    line = progress.ProgressLine(err, job.STAGES, every)  # every 0: no line, the stages still timed
    report = None
    with line:
        small = size is not None and size < job.SMALL_INPUT_BYTES
        try:
            spark = job.spark_session(args.master, small=small and own)
        except Exception as e:  # noqa: BLE001 - no JVM, no master: one line, not a stack trace
            print(f"mockbroker report: failed to start Spark ({args.master}): {type(e).__name__}: {_first_line(e)}",
                  file=err)
            return EXIT_FAILED
        line.attach(spark.sparkContext)
        try:
            if not args.master.startswith("local"):
                _ship_package(spark.sparkContext)
            report = job.build(spark, files, warn=lambda w: print(f"warning: {w}", file=err), stage=line.stage,
                               quota_window_num=args.quota_window_num,
                               quota_window_size_seconds=args.quota_window_size_seconds)
            with line.stage("aggregating"):
                report.materialise()
            written = render.write(report, args.out, list(args.paths), stage=line.stage)
        except reading.ReportInputError as e:
            print(f"mockbroker report: error: {e}", file=err)
            return EXIT_NO_INPUT
        except JournalSchemaError as e:
            print(f"mockbroker report: error: {e}", file=err)
            return EXIT_SCHEMA
        except Exception as e:  # noqa: BLE001 - Spark's errors: one line, not a stack trace
            print(f"mockbroker report: failed: {type(e).__name__}: {_first_line(e)}", file=err)
            return EXIT_FAILED
        finally:
            if own:
                spark.stop()
                jvm.finish_archive()
    print(f"mockbroker report: {report.records} records; wrote {', '.join(written)} and tables/ in {line.summary()}",
          file=err)
    return EXIT_OK


def _first_line(e: BaseException) -> str:
    """The first non-empty line of an error's text (a Py4J error's first line is its Java class and message)."""
    for line in str(e).splitlines():
        if line.strip():
            return line.strip()
    return ""
