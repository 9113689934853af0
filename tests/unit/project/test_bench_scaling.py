"""bench/scaling.py (issue 28): the scaling curves' benchmark stays out of CI; this smoke run (one
small point per dimension, mockbroker only) checks that each dimension still measures what it says:
records and requests answered, and a KIP-848 group of M members that reaches one stable epoch
(each member's join bumps the group epoch once: M + 1) with every partition owned once."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "bench" / "scaling.py"


def test_smoke_run_measures_every_dimension():
    r = subprocess.run([sys.executable, str(SCRIPT), "--seconds", "0.1", "--settle", "0.05",
                        "--partitions", "10", "--connections", "5", "--members", "3", "--brokers", "3"],
                       cwd=ROOT, capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {}
    for dim in ("partitions", "connections", "members", "brokers"):
        table = r.stdout.split(f"\n{dim}\n", 1)[1].split("\n\n", 1)[0]
        rows[dim] = [[c.strip() for c in line.split("|")] for line in table.splitlines()[2:]]
        assert [row[:2] for row in rows[dim]] == [
            [x, "mockbroker"] for x in {"partitions": ["10"], "connections": ["5"], "members": ["3"],
                                        "brokers": ["3"]}[dim]], r.stdout
    for dim in ("partitions", "connections", "brokers"):
        assert all(float(row[2].replace(",", "")) > 0 for row in rows[dim]), r.stdout  # records or requests/s
    # members: stable (a time, not nan) at epoch M + 1
    assert [(row[0], row[-1]) for row in rows["members"]] == [("3", "4")], r.stdout
    assert all(re.fullmatch(r"\d+\.\d\d", row[2]) for row in rows["members"]), r.stdout
    assert [row[-1] for row in rows["brokers"]] == ["3"], r.stdout  # leaders on each simulated broker
