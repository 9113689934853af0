"""bench/sidebyside.py (issue 28): mockbroker, Kafka 4.4.0 and librdkafka's mock side by side.

The benchmark itself stays out of CI; this runs its ``--quick`` mode on mockbroker only (a Kafka
start, a JVM format and a JVM boot, does not fit a smoke test's second or two, and librdkafka's mock
loses the records a consumer would read: see the second test), and checks how a short read is
reported: as a finding with its figures left out, never as a zero rate or a zero ratio.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "bench" / "sidebyside.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_sidebyside", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_quick_run_on_mockbroker_prints_every_row():
    r = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--only", "mockbroker"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "FINDING" not in r.stdout, r.stdout
    m = re.search(r"round 1 mockbroker .*produce (\d[\d,]*) in .* consume (\d[\d,]*) in", r.stdout)
    assert m is not None and m.group(1) == m.group(2) == "5,000", r.stdout
    for row in ("start-up to first Metadata (s)", "idle RSS (MiB)", "produce (MB/s)", "consume (MB/s)",
                "broker CPU s per GB produced", "broker CPU s per GB consumed"):
        line = next(ln for ln in r.stdout.splitlines() if ln.startswith(row))
        value = float(line[len(row):].split()[0])
        assert value > 0, line


def test_a_short_read_is_a_finding_not_a_zero_ratio(capsys):
    sbs = _load()
    res = sbs.Results()
    full = sbs.Round(0.5, 40 << 20, 1000, 0.01, 0.02, 1000, 0.02, 0.03)
    short = sbs.Round(0.1, 30 << 20, 1000, 0.005, 0.01, 0, 5.0, 0.0, watermarks="p0 (300, 334)")
    sbs.record(res, "mockbroker", 0, full)
    sbs.record(res, "librdkafka-mock", 0, short)
    assert len(res.findings) == 1 and "got 0 of the 1,000 records acknowledged by librdkafka-mock" in res.findings[0]
    assert "p0 (300, 334)" in res.findings[0]
    sbs.report(res, ["mockbroker", "librdkafka-mock"])
    out = capsys.readouterr().out
    consume = next(ln for ln in out.splitlines() if ln.startswith("consume (MB/s)")).split()
    # mockbroker's 51 MB/s (1000 x 1024 B in 0.02 s); the mock's column and the ratio say nothing
    assert consume[2:] == ["51", "-", "n/a"], consume
    produce = next(ln for ln in out.splitlines() if ln.startswith("produce (MB/s)")).split()
    assert produce[2:] == ["102", "205", "0.50"], produce
    assert "FINDING: round 1: a confluent-kafka consumer got 0" in out


def test_cpu_below_a_clock_tick_gives_no_ratio(capsys):
    sbs = _load()
    res = sbs.Results()
    sbs.record(res, "mockbroker", 0, sbs.Round(0.5, 40 << 20, 1000, 0.01, 0.02, 1000, 0.02, 0.03))
    sbs.record(res, "librdkafka-mock", 0, sbs.Round(0.1, 30 << 20, 1000, 0.01, 0.0, 1000, 0.02, 0.0))
    sbs.report(res, ["mockbroker", "librdkafka-mock"])
    out = capsys.readouterr().out
    for row in ("broker CPU s per GB produced", "broker CPU s per GB consumed"):
        assert next(ln for ln in out.splitlines() if ln.startswith(row)).split()[-1] == "n/a", out
