"""The throttle-conformance report (mockbroker/report, docs/report.md): a synthetic journal with known
answers gives exactly the expected counts and verdicts; cut and corrupt lines are warnings naming file
and line, the rest is read; an unknown schema_version, no input and empty input are errors with their
exit codes; the CLI end to end in a subprocess; the broker never imports pyspark.

One SparkSession (local[2], bound to 127.0.0.1) for the module; inputs are small."""

from __future__ import annotations

import gzip
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from mockbroker.report import synthetic as S
from tests.toolchains import unavailable

CLIENTS = [S.SyntheticClient("at-deadline", "deadline", "kafka-python", "2.0"),
           S.SyntheticClient("early", "early", "librdkafka", "2.11"),
           S.SyntheticClient("quiet", "never", "librdkafka", "2.11")]


def _need_spark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        unavailable("the report tests cannot run: pyspark is not installed (pip install -e '.[report]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        unavailable("the report tests cannot run: java not found on PATH (Spark needs a JDK 17+)")


@pytest.fixture(scope="module")
def spark():
    _need_spark()
    from mockbroker.report import job
    s = job.spark_session("local[2]", "test-report")
    yield s
    s.stop()


def _verdicts(report):
    return {r.client_id: r.asDict() for r in report.tables["verdicts"].collect()}


def _build(spark, paths):
    from mockbroker.report import job
    warns = []
    return job.build(spark, paths, warn=warns.append), warns


def test_synthetic_known_answers(spark, tmp_path):
    """Two connections per client, gzip segments of 7 records (segments end mid-connection)."""
    S.write_journal(tmp_path, CLIENTS, requests=6, connections=2, gzip_segments=True, segment_records=7)
    report, warns = _build(spark, [str(tmp_path)])
    assert warns == []
    want = S.expected(CLIENTS, requests=6, connections=2)
    got = _verdicts(report)
    assert set(got) == set(want)
    for cid, w in want.items():
        g = got[cid]
        assert (g["requests"], g["throttles"], g["judged"], g["violations_obliged"], g["verdict"]) == \
               (w["requests"], w["throttles"], w["with_next"], w["violations"], w["verdict"]), cid
        assert g["violations_not_obliged"] == 0 and g["pipelined"] == 0 and g["undetermined"] == 0
    assert got["early"]["worst_early_ms"] == pytest.approx(100.0)
    assert got["early"]["versions_early"] == ["PRODUCE v9"]
    assert got["at-deadline"]["worst_early_ms"] is None
    assert (got["early"]["client_software_name"], got["early"]["client_software_version"]) == ("librdkafka", "2.11")
    th = {r.client_id: r for r in report.tables["throttles"].collect()}
    assert th["at-deadline"].avg_gap_minus_throttle_ms == pytest.approx(0.0)
    assert th["early"].avg_gap_minus_throttle_ms == pytest.approx(-100.0)
    assert "quiet" not in th
    conns = {r.client_id: (r.connections, r.reconnects) for r in report.tables["connections"].collect()}
    assert conns == {c.client_id: (2, 1) for c in CLIENTS}
    req = {(r.client_id, r.api): r.requests for r in report.tables["requests"].collect()}
    assert req[("quiet", "PRODUCE")] == 12 and req[("quiet", "API_VERSIONS")] == 2
    cells = {(r.client_id, r.api): (r.verdict, r.judged, r.violations_obliged)
             for r in report.tables["api_verdicts"].collect()}
    assert cells == {("at-deadline", "PRODUCE"): ("honours", 10, 0), ("early", "PRODUCE"): ("ignores", 10, 10),
                     ("quiet", "PRODUCE"): ("not throttled", 0, 0),
                     **{(c.client_id, "API_VERSIONS"): ("not throttled", 0, 0) for c in CLIENTS}}


def test_two_runs_and_mute_mode(spark, tmp_path):
    """Two runs in one directory (the same connection ids) are told apart by the start ms in the
    names; a run throttled in mute mode is undetermined from the clocks alone, and judged by the
    broker's after_throttle where the journal has it."""
    S.write_journal(tmp_path, CLIENTS[:2], requests=5, start_wall_ms=1_000)
    S.write_journal(tmp_path, CLIENTS[:2], requests=5, start_wall_ms=2_000, mode="mute")
    S.write_journal(tmp_path, CLIENTS[:2], requests=5, start_wall_ms=3_000, mode="mute", after_throttle=True)
    report, _ = _build(spark, [str(tmp_path)])
    got = {(r.run, r.client_id): (r.throttles, r.judged, r.violations_obliged, r.undetermined, r.verdict)
           for r in report.tables["verdicts"].collect()}
    assert got == {("1000", "at-deadline"): (5, 4, 0, 0, "honours"), ("1000", "early"): (5, 4, 4, 0, "ignores"),
                   ("2000", "at-deadline"): (5, 0, 0, 4, "undetermined"),
                   ("2000", "early"): (5, 0, 0, 4, "undetermined"),
                   # with the broker's after_throttle, mute mode is judged
                   ("3000", "at-deadline"): (5, 4, 0, 0, "honours"), ("3000", "early"): (5, 4, 4, 0, "ignores")}


def test_verdict_column_is_the_brokers_rule(spark):
    """The report's verdict column and the broker's /throttles/violations verdict are one rule
    (mockbroker/quota/verdict.py), at every boundary of it."""
    from pyspark.sql import functions as F

    from mockbroker.quota.verdict import verdict
    from mockbroker.report import job
    grid = [(t, j, v, u) for t in (0, 3, 20) for j in (0, 1, 9, 10, 20) for v in range(0, j + 1) for u in (0, 2)
            if j <= t and u <= t]
    df = spark.createDataFrame(grid, "throttles long, judged long, violations long, undetermined long")
    got = {tuple(r[:4]): r.verdict for r in df.withColumn("verdict", job.verdict_column(
        F.col("throttles"), F.col("judged"), F.col("violations"), F.col("undetermined"))).collect()}
    assert got == {g: verdict(*g) for g in grid}
    assert {"honours", "partly", "ignores", "not throttled", "no judged throttles", "undetermined"} <= set(got.values())


def test_a_brokers_journal_gives_the_brokers_verdicts(spark, tmp_path):
    """The raw clients of tests/unit/test_throttle_oracle.py (one never waits, one sleeps for the
    throttle) on three brokers, on the ManualClock, with the journal on disk, one run per throttle
    mode: the report's verdicts and counts per client and run are the broker's own
    (/throttles/violations by entity)."""
    from tests.unit.test_throttle_oracle import HONOURS, IGNORES, run_once
    runs = {}
    for mode in ("mute", "delay", "observe"):
        d = tmp_path / mode
        got = run_once(mode, 3, manual=True, **{"mock.journal.dir": str(d)})
        [run] = {re.match(r"journal-(\d+)-", f.name).group(1) for f in d.iterdir()}
        runs[run] = (mode, got)
    assert len(runs) == 3  # three runs told apart by their start ms
    report, warns = _build(spark, [str(tmp_path / m) for m in ("mute", "delay", "observe")])
    assert warns == []
    rows = {(r.run, r.client_id): r.asDict() for r in report.tables["verdicts"].collect()}
    for run, (mode, got) in runs.items():
        for cid, want in ((IGNORES, "ignores"), (HONOURS, "honours")):
            counts = got[cid]["counts"]
            assert got[cid]["verdict"] == want
            r = rows[(run, cid)]
            assert (r["verdict"], r["throttles"], r["judged"], r["violations_obliged"], r["violations_not_obliged"]) \
                == (want, counts["throttles"], counts["judged"], counts["violations_obliged"],
                    counts["violations_not_obliged"]), (mode, r)
            assert (r["worst_early_ms"] or 0) == got[cid]["worst_early_ms"], (mode, r)


def test_cut_and_corrupt_lines_named_with_line_numbers(spark, tmp_path):
    """A plain file read in several splits (tiny maxPartitionBytes): line numbers are still the file's."""
    (f,) = S.write_journal(tmp_path, CLIENTS[:1], requests=40)
    lines = pathlib.Path(f).read_text().splitlines(keepends=True)
    assert len(lines) == 41
    lines[16] = '{"schema_version": 1, "broker": \n'  # line 17
    lines[-1] = lines[-1][:50]  # cut mid-line, no newline
    pathlib.Path(f).write_text("".join(lines))
    spark.conf.set("spark.sql.files.maxPartitionBytes", "4096")
    spark.conf.set("spark.sql.files.openCostInBytes", "0")
    try:
        assert spark.read.text(f).rdd.getNumPartitions() > 3  # the file is read in several splits
        report, warns = _build(spark, [f])
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.conf.unset("spark.sql.files.openCostInBytes")
    assert [(os.path.basename(w.path), w.line, w.kind) for w in warns] == \
           [(os.path.basename(f), 17, "corrupt"), (os.path.basename(f), 41, "cut")]
    assert f in str(warns[0])  # the path is named
    assert report.records == 39
    assert _verdicts(report)["at-deadline"]["requests"] == 39


def test_unknown_schema_version_is_an_error(spark, tmp_path):
    from mockbroker.journal_reader import JournalSchemaError
    (f,) = S.write_journal(tmp_path, CLIENTS[:1], requests=3)
    lines = pathlib.Path(f).read_text().splitlines(keepends=True)
    rec = json.loads(lines[2])
    rec["schema_version"] = 99
    lines[2] = json.dumps(rec) + "\n"
    pathlib.Path(f).write_text("".join(lines))
    with pytest.raises(JournalSchemaError, match=r":3: schema_version 99"):
        _build(spark, [f])
    from mockbroker import cli
    assert cli.main(["report", f, "--out", str(tmp_path / "out")]) == 3


def test_no_input_and_empty_input_are_errors(spark, tmp_path, capsys):
    from mockbroker import cli
    assert cli.main(["report", str(tmp_path / "nothing-here"), "--out", str(tmp_path / "o1")]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["report", str(empty), "--out", str(tmp_path / "o2")]) == 2  # a directory without segments
    (empty / "journal-1-000000.jsonl").write_text("")
    with gzip.open(empty / "journal-1-000001.jsonl.gz", "wt") as g:
        g.write("")
    assert cli.main(["report", str(empty), "--out", str(tmp_path / "o3")]) == 2
    err = capsys.readouterr().err
    assert "no journal files" in err and "no records" in err and "Traceback" not in err


def test_cli_end_to_end(spark, tmp_path):
    """`mockbroker report` in a subprocess on a small journal: exit 0, report.md with the verdicts,
    Parquet tables partitioned by run and client, and (with matplotlib) report.html and PNGs."""
    j = tmp_path / "j"
    S.write_journal(j, CLIENTS, requests=4)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "SPARK_LOCAL_IP": "127.0.0.1"}
    p = subprocess.run([sys.executable, "-m", "mockbroker", "report", str(j), "--out", str(out),
                        "--master", "local[1]", "--progress-every", "0.2"],
                       check=False, capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    # the progress line while Spark works (stderr is not a terminal: one line each time)
    assert re.search(r"^mockbroker report: \d+ s, stage \d+ \S+.*: \d+/\d+ tasks done, \d+ running$",
                     p.stderr, re.MULTILINE), p.stderr[-3000:]
    assert "[Stage " not in p.stderr  # Spark's own console progress bar is off
    md = (out / "report.md").read_text()
    assert "| kafka-python 2.0 / at-deadline / ANONYMOUS | honours |" in md.replace("| 1790000000000 ", "")
    assert "librdkafka 2.11 / early / ANONYMOUS | ignores |" in md
    assert "librdkafka 2.11 / quiet / ANONYMOUS | not throttled |" in md
    assert (out / "tables" / "verdicts" / "run=1790000000000" / "client_id=early").is_dir()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    page = (out / "report.html").read_text()
    assert "ignores" in page and "id='verdict-matrix' " in page and page.count("class='client-plot'") == 3
    assert "![verdict-matrix.png](verdict-matrix.png)" in md
    pngs = sorted(out.glob("client-*.png"))
    assert len(pngs) == 3 and all(p.stat().st_size > 1000 for p in pngs)
    from mockbroker.report.render import VERDICT_COLOURS
    for p in pngs:  # the producer_byte_rate line ('r--') is drawn on every client's plot
        assert _pixels(p, "#ff0000") > 200, p
    matrix = out / "verdict-matrix.png"
    for verdict in ("honours", "ignores", "not throttled"):  # a cell of each verdict the journal has
        assert _pixels(matrix, VERDICT_COLOURS[verdict]) > 1000, verdict
    assert _pixels(matrix, VERDICT_COLOURS["partly"]) < 500  # its legend patch only


def _pixels(png: pathlib.Path, colour: str) -> int:
    """How many pixels of ``png`` have ``colour`` (#rrggbb), within a little of anti-aliasing."""
    import matplotlib.image
    import numpy as np
    want = np.array([int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    rgb = matplotlib.image.imread(png)[..., :3]
    return int((np.abs(rgb - want).max(axis=-1) < 0.03).sum())


def test_progress_describe():
    from types import SimpleNamespace as St

    from mockbroker.report.progress import describe
    assert describe([], 3.2) == "mockbroker report: 3 s, between stages"
    stages = [St(stageId=7, name="parquet at NativeMethodAccessorImpl.java:0", numTasks=8, numCompletedTasks=3,
                 numActiveTasks=2),
              St(stageId=9, name="count at x", numTasks=4, numCompletedTasks=0, numActiveTasks=0)]
    assert describe(stages, 61.0) == "mockbroker report: 61 s, stage 7 parquet (+1 more): 3/12 tasks done, 2 running"


def test_the_broker_never_imports_pyspark():
    code = ("import sys; from mockbroker import MockBroker; import mockbroker.cli\n"
            "with MockBroker() as b:\n"
            "    pass\n"
            "mockbroker.cli._parser().parse_args(['report', 'x', '--out', 'y'])\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'matplotlib') "
            "or m.startswith('mockbroker.report')))\n")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
