"""The cost of observing (issue 28): produce and consume throughput of ``mockbroker serve`` with
nothing observing it, with the on-disk journal, with the admin listener, with ``GET /metrics``
scraped every second, and with all of them, in interleaved rounds of one run.

Set-up and workload are bench/throughput.py's (its ``produce`` and ``consume``: confluent-kafka in
this process, ``--records`` values of 1 KiB to a 3-partition topic, acks=1, linger.ms=5, then one
consumer reading them back from offset 0); a fresh broker per variant and round.  The variants:

* ``none``: the defaults (the in-memory request journal, ``mock.journal.max.entries`` records, is
  always kept: it is what the admin API and the tests read, and it cannot be turned off);
* ``journal``: ``mock.journal.dir`` set (a fresh temporary directory per run, deleted after it):
  every request's record also written to JSON Lines files by the journal's writer thread;
* ``admin``: ``mock.admin.listener=127.0.0.1:0`` (aiohttp on the broker's loop), nobody asking it;
* ``scrape``: the admin listener and a thread of this process that sends ``GET /metrics`` every
  ``--scrape-interval`` seconds (1 s) on one keep-alive HTTP connection, from the ready line to
  the end of the consume phase (each scrape checked: status 200, a Prometheus text body);
* ``all``: the journal directory, the admin listener and the scrapes together.

Each round runs every variant once, the order rotated from round to round so that machine noise
hits all alike.  Printed per run: records/s of each phase and the broker's CPU per record
(psutil, user+system); then per variant and phase the median and range of records/s, and the ratio
to ``none`` of the same round (median, min..max): a ratio of 0.9 is 10 % off throughput; and the
broker's CPU per record (median) with its ratio to ``none``'s, steadier than the rates when other
processes share the cores.

    .venv/bin/python bench/observing.py [--rounds 3] [--records 200000]
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import throughput  # bench/throughput.py: its workload
from brokers import serve_mockbroker  # bench/brokers.py

ROUNDS = 3
RECORDS = 200_000
SCRAPE_INTERVAL_S = 1.0
ADMIN = "mock.admin.listener=127.0.0.1:0"
# name -> (on-disk journal, admin listener, scrapes)
VARIANTS = {
    "none": (False, False, False),
    "journal": (True, False, False),
    "admin": (False, True, False),
    "scrape": (False, True, True),
    "all": (True, True, True),
}
PHASES = ("produce", "consume")


class Scraper(threading.Thread):
    """``GET /metrics`` every ``interval`` seconds until stopped; counts the scrapes and their time."""

    def __init__(self, address: str, interval: float) -> None:
        super().__init__(daemon=True)
        host, _, port = address.rpartition(":")
        self.conn = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=30)
        self.interval = interval
        self.stop = threading.Event()
        self.seconds: list[float] = []
        self.error: BaseException | None = None

    def scrape(self) -> None:
        t0 = time.perf_counter()
        self.conn.request("GET", "/metrics")
        r = self.conn.getresponse()
        body = r.read()
        if r.status != 200 or b"# TYPE" not in body:
            raise RuntimeError(f"GET /metrics answered {r.status}: {body[:200]!r}")
        self.seconds.append(time.perf_counter() - t0)

    def run(self) -> None:
        try:
            while True:
                self.scrape()
                if self.stop.wait(self.interval):
                    return
        except BaseException as e:  # reported by the run that started it
            self.error = e
        finally:
            self.conn.close()


def addresses(rest: str) -> tuple[str, str | None]:
    """(bootstrap, admin address or None) from what follows ``bootstrap=`` on the ready line."""
    words = rest.split()
    admin = next((w.split("=", 1)[1] for w in words[1:] if w.startswith("admin=")), None)
    return words[0], admin


def run_once(variant: str, records: int, interval: float) -> tuple[dict[str, tuple[int, float, float]], str]:
    """One broker with ``variant``'s observers: (phase -> (records, seconds, broker CPU seconds), what
    the scrapes took or "")."""
    journal, admin, scrapes = VARIANTS[variant]
    tmp = Path(tempfile.mkdtemp(prefix="bench-observing-")) if journal else None
    config = [f"mock.topics={throughput.TOPIC}:{throughput.PARTITIONS}"]
    config += [f"mock.journal.dir={tmp}"] if tmp else []
    config += [ADMIN] if admin else []
    out: dict[str, tuple[int, float, float]] = {}
    note = ""
    try:
        with serve_mockbroker(config, cwd=HERE.parent) as (proc, rest):
            bootstrap, admin_address = addresses(rest)
            broker = psutil.Process(proc.pid)
            scraper = None
            if scrapes:
                assert admin_address is not None, rest
                scraper = Scraper(admin_address, interval)
                scraper.start()
            try:
                cpu0 = throughput.cpu_seconds(broker)
                produced, seconds = throughput.produce(bootstrap, records=records)
                cpu1 = throughput.cpu_seconds(broker)
                out["produce"] = (produced, seconds, cpu1 - cpu0)
                got, seconds = throughput.consume(bootstrap, produced)
                out["consume"] = (got, seconds, throughput.cpu_seconds(broker) - cpu1)
                if got != produced:
                    raise RuntimeError(f"{variant}: consumed {got:,} of {produced:,} records")
            finally:
                if scraper is not None:
                    scraper.stop.set()
                    scraper.join(30)
            if scraper is not None:
                if scraper.error is not None:
                    raise RuntimeError(f"{variant}: scrape failed: {scraper.error!r}")
                s = scraper.seconds
                note = (f"   {len(s)} scrapes of GET /metrics, median {statistics.median(s) * 1e3:.1f} ms, "
                        f"max {max(s) * 1e3:.1f} ms")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return out, note


def main() -> None:
    ap = argparse.ArgumentParser(description="throughput of mockbroker serve with and without its observers")
    ap.add_argument("--rounds", type=int, default=ROUNDS, help=f"rounds of every variant (default {ROUNDS})")
    ap.add_argument("--records", type=int, default=RECORDS, help=f"records per run (default {RECORDS:,})")
    ap.add_argument("--scrape-interval", type=float, default=SCRAPE_INTERVAL_S,
                    help=f"seconds between two GET /metrics (default {SCRAPE_INTERVAL_S})")
    ap.add_argument("--only", action="append", choices=tuple(VARIANTS),
                    help="measure these variants (repeatable; default all; none is always measured)")
    args = ap.parse_args()
    names = [v for v in VARIANTS if v == "none" or not args.only or v in args.only]
    print(f"{args.records:,} records x {throughput.RECORD_BYTES} B, {throughput.PARTITIONS} partitions, acks=1, "
          f"linger.ms=5; produce then consume; scrape every {args.scrape_interval:g} s; "
          f"{args.rounds} round(s), order rotated per round; load {' '.join(f'{x:.2f}' for x in psutil.getloadavg())}")
    rates: dict[str, dict[str, list[float]]] = {v: {p: [] for p in PHASES} for v in names}
    cpu_us: dict[str, dict[str, list[float]]] = {v: {p: [] for p in PHASES} for v in names}
    for rnd in range(args.rounds):
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for variant in order:
            rows, note = run_once(variant, args.records, args.scrape_interval)
            print(f"round {rnd + 1} {variant:<8} " + "   ".join(
                f"{p} {n:,} in {s:.2f} s ({n / s:,.0f}/s, broker CPU {cpu / n * 1e6:.2f} µs/record)"
                for p, (n, s, cpu) in rows.items()) + note)
            for p, (n, s, cpu) in rows.items():
                rates[variant][p].append(n / s)
                cpu_us[variant][p].append(cpu / n * 1e6)
    print()
    print(f"records/s over {args.rounds} round(s): median (min..max); ratio to none in the same round: "
          "median (min..max); the broker's CPU µs per record: median, and its ratio to none's median")
    head = (f"{'variant':<8} {'phase':<8} {'records/s':>10} {'range':>21} {'ratio':>6} {'ratio range':>13} "
            f"{'CPU µs/rec':>10} {'ratio':>6}")
    print(head)
    print("-" * len(head))
    for variant in names:
        for p in PHASES:
            r = rates[variant][p]
            ratios = sorted(x / y for x, y in zip(r, rates["none"][p]))
            cpu = statistics.median(cpu_us[variant][p])
            print(f"{variant:<8} {p:<8} {statistics.median(r):>10,.0f} {min(r):>10,.0f}..{max(r):<10,.0f} "
                  f"{statistics.median(ratios):>6.3f} {ratios[0]:>6.3f}..{ratios[-1]:<6.3f} "
                  f"{cpu:>10.2f} {cpu / statistics.median(cpu_us['none'][p]):>6.3f}")


if __name__ == "__main__":
    main()
