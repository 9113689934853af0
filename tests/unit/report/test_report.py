"""The throttle-conformance report (mockbroker/report, docs/report.md): a synthetic journal with known
answers gives exactly the expected counts and verdicts; runs are kept apart and named by their start
time; the windowed rates are Kafka's; parked, reconnects and the per-second rows count what they
say; cut and corrupt lines are warnings naming file and line, the rest is read; a file that is not a
journal, an unknown schema_version, no input, empty input and an --out that is a file are errors with
their exit codes and one line; the CLI end to end in a subprocess, with the report's own stages as
its progress; the broker never imports pyspark.

One SparkSession (local[2], bound to 127.0.0.1) for the module; inputs are small."""

from __future__ import annotations

import calendar
import datetime as dt
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
    s = job.spark_session("local[2]", "test-report", small=True)  # the journals here are small
    yield s
    s.stop()


def _run(ms: int) -> dt.datetime:
    """The run of a journal started at ``ms`` (its name's start time), as the tables hold it."""
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)


def _verdicts(report):
    return {r["client_id"]: r for r in report.materialise()["verdicts"]}


def _build(spark, paths, **kw):
    from mockbroker.report import job
    warns = []
    return job.build(spark, paths, warn=warns.append, **kw), warns


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.run([sys.executable, "-m", "mockbroker", "report", *args], check=False, capture_output=True,
                          text=True, timeout=timeout, env=env)


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
        assert g["run"] == _run(S.START_WALL_MS)
    assert got["early"]["worst_early_ms"] == pytest.approx(100.0)
    assert got["early"]["versions_early"] == ["PRODUCE v9"]
    assert got["at-deadline"]["worst_early_ms"] is None
    assert (got["early"]["client_software_name"], got["early"]["client_software_version"]) == ("librdkafka", "2.11")
    # the throttle mode and the quota beside the verdict
    assert got["early"]["throttle_modes"] == ["observe"] and got["quiet"]["throttle_modes"] is None
    assert got["early"]["quotas"] == ["producer_byte_rate=1048576"]
    assert got["early"]["quota_entities"] == ["client-id=early"]
    rows = report.materialise()
    th = {r["client_id"]: r for r in rows["throttles"]}
    assert th["at-deadline"]["avg_gap_minus_throttle_ms"] == pytest.approx(0.0)
    assert th["early"]["avg_gap_minus_throttle_ms"] == pytest.approx(-100.0)
    assert "quiet" not in th
    conns = {r["client_id"]: (r["connections"], r["bootstrap"], r["reconnects"]) for r in rows["connections"]}
    assert conns == {c.client_id: (2, 0, 1) for c in CLIENTS}  # two connections to broker 1: one reconnect
    req = {(r["client_id"], r["api"]): r["requests"] for r in rows["requests"]}
    assert req[("quiet", "PRODUCE")] == 12 and req[("quiet", "API_VERSIONS")] == 2
    cells = {(r["client_id"], r["api"]): (r["verdict"], r["judged"], r["violations_obliged"])
             for r in rows["api_verdicts"]}
    assert cells == {("at-deadline", "PRODUCE"): ("honours", 10, 0), ("early", "PRODUCE"): ("ignores", 10, 10),
                     ("quiet", "PRODUCE"): ("not throttled", 0, 0),
                     **{(c.client_id, "API_VERSIONS"): ("not throttled", 0, 0) for c in CLIENTS}}


def test_two_runs_and_mute_mode(spark, tmp_path):
    """Two runs in one directory (the same connection ids) are told apart by the start ms in the
    names; a run throttled in mute mode is undetermined from the clocks alone, and judged by the
    broker's after_throttle where the journal has it."""
    clients = [*CLIENTS[:2], S.SyntheticClient("half", "partly")]
    S.write_journal(tmp_path, clients, requests=5, start_wall_ms=1_000)
    S.write_journal(tmp_path, clients, requests=5, start_wall_ms=2_000, mode="mute")
    S.write_journal(tmp_path, clients, requests=5, start_wall_ms=3_000, mode="mute", after_throttle=True)
    report, _ = _build(spark, [str(tmp_path)])
    got = {(r["run"], r["client_id"]): (r["throttles"], r["judged"], r["violations_obliged"], r["undetermined"],
                                        r["verdict"]) for r in report.materialise()["verdicts"]}
    first, second, third = _run(1_000), _run(2_000), _run(3_000)
    assert got == {(first, "at-deadline"): (5, 4, 0, 0, "honours"), (first, "early"): (5, 4, 4, 0, "ignores"),
                   (first, "half"): (5, 4, 2, 0, "partly"),
                   (second, "at-deadline"): (5, 0, 0, 4, "undetermined"),
                   (second, "early"): (5, 0, 0, 4, "undetermined"), (second, "half"): (5, 0, 0, 4, "undetermined"),
                   # with the broker's after_throttle, mute mode is judged
                   (third, "at-deadline"): (5, 4, 0, 0, "honours"), (third, "early"): (5, 4, 4, 0, "ignores"),
                   (third, "half"): (5, 4, 2, 0, "partly")}


def test_runs_are_named_by_start_time_and_kept_apart(spark, tmp_path):
    """Every table and plot keeps the runs apart: the same client in two runs (the same connection
    ids, ten minutes apart) has a verdict, a matrix row and a plot in each, on its own run's timeline;
    the runs are named by their start time; run and time are timestamps in the Parquet tables too."""
    from pyspark.sql import types as T

    from mockbroker.report import render
    start = 1_790_000_000_000
    S.write_journal(tmp_path / "j", CLIENTS, requests=4, start_wall_ms=start)
    S.write_journal(tmp_path / "j", CLIENTS[:2], requests=4, start_wall_ms=start + 600_000, mode="mute",
                    after_throttle=True)
    report, _ = _build(spark, [str(tmp_path / "j")])
    out = tmp_path / "out"
    render.write(report, str(out), [str(tmp_path / "j")])
    rows = report.materialise()
    runs = sorted({r["run"] for r in rows["verdicts"]})
    assert runs == [_run(start), _run(start + 600_000)]
    assert [(r["run"], r["client_id"]) for r in rows["verdicts"]] == \
           [(runs[0], c.client_id) for c in CLIENTS] + [(runs[1], c.client_id) for c in CLIENTS[:2]]
    # the per-second rows of a client stay within its run: no timeline spans the ten minutes between them
    for run in runs:
        times = [r["time"] for r in rows["rate"] if r["run"] == run and r["client_id"] == "early"]
        assert times and run <= min(times) and max(times) < run + dt.timedelta(seconds=60), (run, times[0], times[-1])
    md = (out / "report.md").read_text()
    names = ["2026-09-21 14:13:20 UTC", "2026-09-21 14:23:20 UTC"]
    assert [m.group(1) for m in re.finditer(r"^### Run (.*)$", md, re.MULTILINE)] == names
    assert "1790000000000" not in md  # no run is named by its epoch ms
    # one plot per client and run, named in report.md with its run and client
    pngs = sorted(p.name for p in out.glob("client-*.png"))
    assert pngs == ["client-1-1.png", "client-1-2.png", "client-1-3.png", "client-2-1.png", "client-2-2.png"]
    assert f"### {names[1]} · librdkafka 2.11 / early / ANONYMOUS · ignores" in md
    assert "![librdkafka 2.11 / early / ANONYMOUS](client-2-2.png)" in md
    for name in ("verdicts", "rate", "windowed_rate"):
        schema = spark.read.parquet(str(out / "tables" / name)).schema
        assert isinstance(schema["run"].dataType, T.TimestampType), name
        if name != "verdicts":
            assert isinstance(schema["time"].dataType, T.TimestampType), name
    assert spark.read.parquet(str(out / "tables" / "verdicts")).select("run").distinct().count() == 2


def test_run_names():
    from mockbroker.report.views import run_names
    a = dt.datetime(2026, 11, 24, 10, 31, 5, 123_000)
    b = dt.datetime(2026, 11, 24, 10, 31, 5, 456_000)
    c = dt.datetime(2026, 11, 24, 10, 40, 0)
    assert run_names([c, a, b]) == {a: "2026-11-24 10:31:05.123 UTC", b: "2026-11-24 10:31:05.456 UTC",
                                    c: "2026-11-24 10:40:00 UTC"}


def test_rate_has_a_row_for_every_second(spark, tmp_path):
    """Seconds without requests are zero rows of the rate table, the quota in force carried over them."""
    S.write_journal(tmp_path, [CLIENTS[2]], requests=5, gap_ms=2_500)  # a request every 2.5 s
    report, _ = _build(spark, [str(tmp_path)])
    rows = [r for r in report.materialise()["rate"] if r["client_id"] == "quiet"]
    seconds = [(r["time"] - rows[0]["time"]).total_seconds() for r in rows]
    assert seconds == list(range(len(rows)))  # consecutive, none left out
    # the ApiVersions at 1 s and Produce at 1.005, 3.506, 6.007, 8.508 and 11.009 s
    assert [r["requests"] for r in rows] == [2, 0, 1, 0, 0, 1, 0, 1, 0, 0, 1]
    assert [r["produce_bytes"] for r in rows] == [1100 if i in (0, 2, 5, 7, 10) else 0 for i in range(11)]
    assert {r["producer_byte_rate"] for r in rows} == {S.PRODUCE_BYTE_RATE}


def test_windowed_rate_is_kafkas(spark, tmp_path):
    """The windowed rate of the quota sensor at the end of every second equals Kafka's Rate over
    the bytes each Produce charged at the time the broker charged them (an independent reference,
    test_quotas_wire.ReferenceRate), with quota.window.num and quota.window.size.seconds as given;
    after the last request it decays to 0 once every sample has expired."""
    from ..quota.test_quotas_wire import ReferenceRate
    recs = list(S.records([CLIENTS[1]], requests=30))
    S.write_journal(tmp_path, [CLIENTS[1]], requests=30)
    for samples, window_s in ((11, 1), (4, 2)):
        report, _ = _build(spark, [str(tmp_path)], quota_window_num=samples, quota_window_size_seconds=window_s)
        rows = report.materialise()["windowed_rate"]
        assert {(r["quota"], r["broker"], r["quota_user"], r["quota_client_id"], r["client_id"]) for r in rows} == \
               {("producer_byte_rate", 1, "", "early", "early")}
        offset = S.START_WALL_MS * 1_000_000  # synthetic: wall = start + the broker clock
        ref = ReferenceRate(samples, window_s * 1000)
        events = [(r["handled_clock_ns"] // 1_000_000, r["request_bytes"]) for r in recs if r["api"] == "PRODUCE"]
        first = (events[0][0] * 1_000_000 + offset) // 1_000_000_000
        assert rows[0]["time"] == dt.datetime(1970, 1, 1) + dt.timedelta(seconds=first)
        pending = list(events)
        for i, row in enumerate(rows):
            s = first + i
            assert row["time"] == dt.datetime(1970, 1, 1) + dt.timedelta(seconds=s)
            end_ms = ((s + 1) * 1_000_000_000 - offset) // 1_000_000
            charged = 0
            while pending and pending[0][0] < end_ms:
                ref.record(pending[0][1], pending[0][0])
                charged += pending[0][1]
                pending.pop(0)
            assert row["bytes"] == charged, s
            if any(end_ms - x[2] < samples * window_s * 1000 for x in ref.samples):
                assert row["windowed_rate"] == pytest.approx(ref.measure(end_ms)[0], rel=1e-12), (samples, s)
            else:
                assert row["windowed_rate"] == 0.0
        assert not pending and rows[-1]["windowed_rate"] == 0.0
        assert all(r["quota_bound"] == S.PRODUCE_BYTE_RATE for r in rows)
        (q,) = report.materialise()["quota_rates"]
        active = [r for r in rows if r["time"] <= max(x["time"] for x in rows if x["bytes"])]
        assert q["seconds"] == len(active) and q["bytes"] == sum(e[1] for e in events)
        assert q["mean_windowed_rate"] == pytest.approx(sum(r["windowed_rate"] for r in active) / len(active))
        assert q["peak_windowed_rate"] == max(r["windowed_rate"] for r in rows)
        assert q["mean_over_quota"] == pytest.approx(q["mean_windowed_rate"] / S.PRODUCE_BYTE_RATE)


def test_parked_counts_only_requests_that_waited(spark, tmp_path):
    """A Fetch that went through the Fetch purgatory but was answered at once (parked_ms null) is not
    parked; one that waited is, and only its parked_ms make the averages."""
    recs = list(S.records([CLIENTS[2]], requests=4))
    for i, r in enumerate(r for r in recs if r["api"] == "PRODUCE"):
        r.update(api="FETCH", api_key=1, api_version=12, purgatory="Fetch", completed_by="condition",
                 details={"max_wait_ms": 500, "min_bytes": 1}, parked_ms=[None, 120.0, None, 480.0][i])
        if i == 3:
            r["completed_by"] = "timeout"
    (tmp_path / "journal-1000-000000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    report, _ = _build(spark, [str(tmp_path)])
    (lp,) = report.materialise()["long_poll"]
    assert (lp["fetches"], lp["parked"], lp["avg_parked_ms"], lp["max_parked_ms"], lp["timed_out"]) == \
           (4, 2, 300.0, 480.0, 1)


def test_bootstrap_connection_is_no_reconnect(spark, tmp_path):
    """A client's bootstrap connection (opened before its first Metadata response) is not a
    reconnect; a second connection to the same broker after its first is."""
    S.write_journal(tmp_path / "a", CLIENTS[:1], requests=3, bootstrap=True)
    S.write_journal(tmp_path / "b", CLIENTS[:1], requests=3, connections=2, bootstrap=True)
    for d, want in (("a", (2, 1, 0)), ("b", (3, 1, 1))):
        report, _ = _build(spark, [str(tmp_path / d)])
        (c,) = report.materialise()["connections"]
        assert (c["connections"], c["bootstrap"], c["reconnects"]) == want, d
        assert _verdicts(report)["at-deadline"]["requests"] == \
               S.expected(CLIENTS[:1], 3, int(d == "b") + 1, bootstrap=True)["at-deadline"]["requests"]


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
    """The raw clients of tests/unit/quota/test_throttle_oracle.py (one never waits, one sleeps for the
    throttle) on three brokers, on the ManualClock, with the journal on disk, one run per throttle
    mode: the report's verdicts and counts per client and run are the broker's own
    (/throttles/violations by entity)."""
    from ..quota.test_throttle_oracle import HONOURS, IGNORES, run_once
    runs = {}
    for mode in ("mute", "delay", "observe"):
        d = tmp_path / mode
        got = run_once(mode, 3, manual=True, **{"mock.journal.dir": str(d)})
        [run] = {re.match(r"journal-(\d+)-", f.name).group(1) for f in d.iterdir()}
        runs[run] = (mode, got)
    assert len(runs) == 3  # three runs told apart by their start ms
    report, warns = _build(spark, [str(tmp_path / m) for m in ("mute", "delay", "observe")])
    assert warns == []
    # a run is the broker's start as a timestamp (UTC, the session's time zone): back to the ms in the name
    rows = {(str(calendar.timegm(r.run.timetuple()) * 1000 + r.run.microsecond // 1000), r.client_id): r.asDict()
            for r in report.tables["verdicts"].collect()}
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


def test_not_a_journal(spark, tmp_path, capsys):
    """A JSON file that is not a journal (any name, one object or pretty-printed) is "not a
    mockbroker journal", and so is a record line of a journal without schema_version: exit 3, one
    line naming the file (and line), not "read it with a newer mockbroker"."""
    from mockbroker import cli
    one = tmp_path / "package.json"
    one.write_text('{"name": "x", "version": "1.0"}\n')
    pretty = tmp_path / "settings.json"
    pretty.write_text(json.dumps({"a": 1, "b": [1, 2]}, indent=2))
    (seg,) = S.write_journal(tmp_path / "j", CLIENTS[:1], requests=3)
    lines = pathlib.Path(seg).read_text().splitlines(keepends=True)
    lines[1] = json.dumps({k: v for k, v in json.loads(lines[1]).items() if k != "schema_version"}) + "\n"
    pathlib.Path(seg).write_text("".join(lines))
    for path, where in ((one, f"{one}: "), (pretty, f"{pretty}: "), (pathlib.Path(seg), f"{seg}:2: ")):
        assert cli.main(["report", str(path), "--out", str(tmp_path / "out"), "--progress-every", "0"]) == 3
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("mockbroker report: error")]
        assert len(err) == 1 and err[0].startswith(f"mockbroker report: error: {where}not a mockbroker journal"), err
        assert "newer mockbroker" not in err[0]


def test_out_naming_a_file_is_one_line(tmp_path):
    """--out naming an existing file: exit 1 and one line on stderr, before Spark starts."""
    S.write_journal(tmp_path / "j", CLIENTS[:1], requests=2)
    target = tmp_path / "report.txt"
    target.write_text("keep me")
    p = _cli(str(tmp_path / "j"), "--out", str(target), timeout=60)
    assert p.returncode == 1
    assert p.stderr.splitlines() == [f"mockbroker report: error: --out {target} is a file; give a directory "
                                     f"(created if missing)"], p.stderr
    assert target.read_text() == "keep me"


def test_no_input_and_empty_input_are_errors(spark, tmp_path, capsys):
    from mockbroker import cli
    assert cli.main(["report", str(tmp_path / "nothing-here"), "--out", str(tmp_path / "o1")]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["report", str(empty), "--out", str(tmp_path / "o2")]) == 2  # a directory without segments
    (empty / "journal-1-000000.jsonl").write_text("")
    with gzip.open(empty / "journal-1-000001.jsonl.gz", "wt") as g:
        g.write("")
    assert cli.main(["report", str(empty), "--out", str(tmp_path / "o3"), "--progress-every", "0"]) == 2
    err = capsys.readouterr().err
    assert "no journal files" in err and "no records" in err and "Traceback" not in err


def test_cli_end_to_end(spark, tmp_path):
    """`mockbroker report` in a subprocess on a small journal: exit 0, progress naming the report's
    own stages (not Spark's call sites), report.md with the verdicts, one Parquet file per table,
    and (with matplotlib) report.html and a PNG per client."""
    j = tmp_path / "j"
    S.write_journal(j, CLIENTS, requests=4)
    out = tmp_path / "out"
    p = _cli(str(j), "--out", str(out), "--master", "local[1]", "--progress-every", "0.2")
    assert p.returncode == 0, p.stderr[-3000:]
    # the progress line while Spark works (stderr is not a terminal: one line each time)
    stages = re.findall(r"^mockbroker report: \d+ s, (\d)/5 ([a-zA-Z. ]+?)(?:: \d+/\d+ tasks done, \d+ running)?$",
                        p.stderr, re.MULTILINE)
    assert {"reading the journals", "aggregating"} <= {s for _, s in stages}, p.stderr[-3000:]
    assert [int(n) for n, _ in stages] == sorted(int(n) for n, _ in stages)  # in order
    assert re.search(r"^mockbroker report: \d+ s, 3/5 aggregating: \d+/\d+ tasks done, \d+ running$", p.stderr,
                     re.MULTILINE), p.stderr[-3000:]
    assert "$anonfun" not in p.stderr
    progress = [ln for ln in p.stderr.splitlines() if re.match(r"mockbroker report: \d+ s, ", ln)]
    assert len(progress) == len(stages), progress  # every progress line names one of the report's stages
    assert "[Stage " not in p.stderr  # Spark's own console progress bar is off
    assert re.search(r"and tables/ in [\d.]+ s \(starting Spark [\d.]+ s, reading the journals [\d.]+ s, aggregating",
                     p.stderr), p.stderr[-1000:]
    md = (out / "report.md").read_text()
    assert "| kafka-python 2.0 / at-deadline / ANONYMOUS | honours 0/3 | observe | producer_byte_rate=1048576 |" in md
    assert "| librdkafka 2.11 / early / ANONYMOUS | ignores 3/3 |" in md
    assert "| librdkafka 2.11 / quiet / ANONYMOUS | not throttled |" in md
    for table in ("verdicts", "rate", "windowed_rate", "quota_rates", "connections"):
        assert len(list((out / "tables" / table).glob("*.parquet"))) == 1, table
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    page = (out / "report.html").read_text()
    assert page.count("class='client-plot'") == 3 and "src='data:image/png;base64," in page
    pngs = sorted(out.glob("client-*.png"))
    assert [p.name for p in pngs] == ["client-1-1.png", "client-1-2.png", "client-1-3.png"]
    from mockbroker.report.plots import EARLY_COLOUR, QUOTA_COLOUR, THROTTLE_COLOUR
    for png in pngs:  # the quota line on every plot (each client has a producer_byte_rate in force)
        assert _pixels(png, QUOTA_COLOUR) > 200, png
    # no empty panel: the throttle panel only for the clients that were throttled, the early
    # requests' marks only for the one that sent them
    import matplotlib.image
    heights = [matplotlib.image.imread(p).shape[0] for p in pngs]
    assert heights[0] == heights[1] > heights[2], heights
    assert _pixels(pngs[0], THROTTLE_COLOUR) > 500 and _pixels(pngs[2], THROTTLE_COLOUR) == 0
    assert _pixels(pngs[0], EARLY_COLOUR) == 0 and _pixels(pngs[1], EARLY_COLOUR) > 50


def _pixels(png: pathlib.Path, colour: str) -> int:
    """How many pixels of ``png`` have ``colour`` (#rrggbb), within a little of anti-aliasing."""
    import matplotlib.image
    import numpy as np
    want = np.array([int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    rgb = matplotlib.image.imread(png)[..., :3]
    return int((np.abs(rgb - want).max(axis=-1) < 0.03).sum())


def test_progress_describe():
    from mockbroker.report.progress import describe
    assert describe("reading the journals", 2, 5, None, 3.2) == "mockbroker report: 3 s, 2/5 reading the journals"
    assert describe("aggregating", 3, 5, (12, 3, 2), 61.0) == \
           "mockbroker report: 61 s, 3/5 aggregating: 3/12 tasks done, 2 running"


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
