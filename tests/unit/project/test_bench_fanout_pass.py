"""bench/fanout_pass.py (issue 28): the long-poll completion pass timed on the broker's thread.

The benchmark stays out of CI; this smoke run (20 connections, 2 rounds) checks that its hooks
still find the pass (``SharedEncodings`` entered and left around the fetch purgatory's check, the
connection's ``write_frame``): every parked fetch answered in one timed pass, each send counted.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "bench" / "fanout_pass.py"


def test_smoke_run_times_one_pass_per_round_with_every_fetch_in_it():
    r = subprocess.run([sys.executable, str(SCRIPT), "--conns", "20", "--rounds", "2"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rounds = re.findall(r"round \d: (\d+) fetches answered in one pass: CPU ([\d.]+) ms .* sendmsg ([\d.]+) µs",
                        r.stdout)
    assert len(rounds) == 2, r.stdout
    for answered, cpu_ms, send_us in rounds:
        assert int(answered) == 20 and float(cpu_ms) > 0 and float(send_us) > 0, r.stdout
    assert "N=20, 2 rounds: CPU per woken fetch median" in r.stdout, r.stdout
