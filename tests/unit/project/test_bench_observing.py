"""bench/observing.py (issue 28, the cost of observing): a smoke run of one round, the broker
without observers and with the admin listener scraped, on a few records.  The benchmark's figures
are docs/performance.md's; this checks that every run moved every record, that the scrapes were
made and answered, and that the table prints each variant's ratio to the unobserved run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "bench" / "observing.py"


def test_one_round_with_scrapes_prints_the_ratios():
    r = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "1", "--records", "1000", "--only", "scrape",
                        "--scrape-interval", "0.05"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = re.findall(r"^round 1 (\w+) +produce 1,000 in .* consume 1,000 in", r.stdout, re.M)
    assert runs == ["none", "scrape"], r.stdout
    scrapes = re.search(r"(\d+) scrapes of GET /metrics", r.stdout)
    assert scrapes is not None and int(scrapes.group(1)) >= 1, r.stdout
    rows = {tuple(ln.split()[:2]): ln.split() for ln in r.stdout.splitlines() if re.match(r"^(none|scrape) ", ln)}
    assert set(rows) == {("none", "produce"), ("none", "consume"), ("scrape", "produce"), ("scrape", "consume")}
    assert rows[("none", "consume")][4] == "1.000"  # the unobserved run against itself
    assert float(rows[("scrape", "consume")][4]) > 0, rows
