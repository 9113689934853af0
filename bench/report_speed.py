"""`mockbroker report` over a one-minute journal of real clients, today's report against the report as it
was before issue 22 (``--baseline``, a commit of this repository), side by side in one run, on
``local[2]``: where the time goes, and whether a report takes at most 15 s here (docs/report.md, "Speed").

Input: bench/report_journal.py records one run of ``--seconds`` (60) seconds: seven clients under
quotas in mute mode (a raw loop that never waits, one that sleeps the throttle, kafka-python's
producer and consumer, confluent-kafka, aiokafka, a client without a quota), about 4 MB of plain
journal.  It is recorded once into ``--dir`` and reused while its parameters match (``bench.json``).

Each report is a child process, ``python -m mockbroker report DIR --out ... --master local[2]
--progress-every 0``, with PYTHONPATH at this tree ("now") or at the baseline's files, extracted
with ``git archive`` ("before").  The two alternate, ``--rounds`` times each, after one unmeasured
run of each (the page cache, and now's JVM class archive: mockbroker/report/jvm.py, whose making is
measured apart as "now, first run").  Figures: wall time from start to exit, CPU seconds of the
Python processes and of the JVM, medians and the fastest; for now, each of the report's stages (its
own summary line); for both, the same command over a one-record journal ("fixed cost": Spark's
start-up and every stage's fixed work, whatever the input).

Usage: .venv/bin/python bench/report_speed.py [--rounds 3] [--seconds 60] [--dir /tmp/mockbroker-report-speed]
       [--baseline fffd33c]
Needs the report and test extras (pip install -e '.[report,test]'), a JDK and git; without them it
says why and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.report_scaling import measure, requirements  # noqa: E402

#: main before issue 22: the report as it was
BASELINE = "fffd33c"
TARGET_S = 15.0


def journal(directory: str, seconds: float) -> tuple[int, int]:
    """Record (or reuse) the journal: (records, bytes)."""
    from bench import report_journal
    params = {"seconds": seconds, "mode": "mute", "clients": list(report_journal.CLIENTS), "version": 1}
    marker = os.path.join(directory, "bench.json")
    if os.path.exists(marker):
        with open(marker) as f:
            same = json.load(f) == params
    else:
        same = False
    if not same:
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        report_journal.record_run(directory, seconds, "mute")
        with open(marker, "w") as f:
            json.dump(params, f)
    files = [os.path.join(directory, f) for f in os.listdir(directory) if ".jsonl" in f]
    return sum(sum(1 for _ in open(f, "rb")) for f in files), sum(os.path.getsize(f) for f in files)


def baseline_tree(ref: str, into: str) -> str:
    """The baseline's mockbroker and protocol packages, extracted from git into ``into``."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", ref, "mockbroker", "protocol"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return into


def report(tree: str, journal_dir: str, out: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": tree, "SPARK_LOCAL_IP": "127.0.0.1"}
    shutil.rmtree(out, ignore_errors=True)
    # run in the tree: ``python -m`` puts the working directory first on sys.path, before PYTHONPATH
    # and this checkout's editable install
    m = measure([sys.executable, "-m", "mockbroker", "report", journal_dir, "--out", out, "--master", "local[2]",
                 "--progress-every", "0"], env, cwd=tree)
    if tree != ROOT and "and tables/ in " in m["stderr"]:
        raise RuntimeError(f"the baseline run in {tree} ran this checkout's report")
    # now's last line: "... and tables/ in 12.3 s (starting Spark 3.1 s, reading the journals 2.0 s, ...)"
    summary = re.search(r"and tables/ in [\d.]+ s \((.*)\)$", m["stderr"], re.MULTILINE)
    m["stages"] = {k: float(v) for k, v in (part.rsplit(" ", 2)[:2] for part in summary.group(1).split(", "))
                   } if summary else {}
    return m


def _requirements() -> str | None:
    missing = requirements((("pyspark", "report"), ("matplotlib", "report"), ("psutil", "test"), ("kafka", "test"),
                            ("confluent_kafka", "test"), ("aiokafka", "test")))
    if missing is None and (shutil.which("git") is None or not os.path.exists(os.path.join(ROOT, ".git"))):
        return "not a git checkout (the baseline is extracted with git archive)"
    return missing


def _med(ms: list[dict[str, Any]], key: str) -> float:
    return statistics.median(m[key] for m in ms)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "mockbroker-report-speed"))
    ap.add_argument("--baseline", default=BASELINE)
    args = ap.parse_args()
    missing = _requirements()
    if missing:
        print(f"bench/report_speed.py: skipped: {missing}")
        return 0
    t = time.monotonic()
    n, size = journal(args.dir, args.seconds)
    print(f"journal: {n:,} records, {size / 2**20:.1f} MiB in {args.dir} ({time.monotonic() - t:.0f} s to record or "
          f"reuse); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    from mockbroker.report import synthetic as S
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "now": []}
    fixed: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        before = os.path.join(tmp, "before")
        os.makedirs(before)
        trees = {"before": baseline_tree(args.baseline, before), "now": ROOT}
        tiny = os.path.join(tmp, "tiny")
        S.write_journal(tiny, [S.SyntheticClient("one", "never")], 0)
        first = report(trees["now"], args.dir, os.path.join(tmp, "out"))
        print(f"now, first run (makes the JVM class archive if there is none): {first['wall']:.1f} s", flush=True)
        report(trees["before"], args.dir, os.path.join(tmp, "out"))  # warm-up, not measured
        for label in ("before", "now"):
            fixed[label] = report(trees[label], tiny, os.path.join(tmp, "out"))
            print(f"{label}, a one-record journal: {fixed[label]['wall']:.1f} s", flush=True)
        for i in range(args.rounds):
            for label in ("before", "now"):
                m = report(trees[label], args.dir, os.path.join(tmp, "out"))
                runs[label].append(m)
                print(f"round {i + 1} {label}: {m['wall']:.1f} s wall, CPU python {m['cpu_python_s']:.1f} s, "
                      f"JVM {m['cpu_jvm_s']:.1f} s" + (f"; {m['stages']}" if m["stages"] else ""), flush=True)
    print(f"\n{'report':<9} {'wall median':>11} {'fastest':>8} {'CPU python':>11} {'CPU JVM':>8} "
          f"{'1-record journal':>17}")
    for label in ("before", "now"):
        ms = runs[label]
        print(f"{label:<9} {_med(ms, 'wall'):>10.1f}s {min(m['wall'] for m in ms):>7.1f}s "
              f"{_med(ms, 'cpu_python_s'):>10.1f}s {_med(ms, 'cpu_jvm_s'):>7.1f}s {fixed[label]['wall']:>16.1f}s")
    stages: dict[str, list[float]] = {}
    for m in runs["now"]:
        for k, v in m["stages"].items():
            stages.setdefault(k, []).append(v)
    print("now, median of each stage: " + ", ".join(f"{k} {statistics.median(v):.1f} s" for k, v in stages.items()))
    ratio = _med(runs["before"], "wall") / _med(runs["now"], "wall")
    now = _med(runs["now"], "wall")
    print(f"before / now (median wall): {ratio:.2f}x; now {'within' if now <= TARGET_S else 'over'} the "
          f"{TARGET_S:.0f} s target ({now:.1f} s); load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
