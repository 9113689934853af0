"""Where mockbroker's time goes on the produce and the consume paths (issue 28): cProfile or py-spy.

The broker runs in this process (``MockBroker``, its asyncio loop on its own thread) with a topic of
3 partitions; the client runs in a child interpreter (bench/sidebyside.py's ``produce`` and
``consume``: confluent-kafka, 1 KiB values, acks=1, linger.ms=5, batch.size 1 MB), so the only
Python running here during a phase is the broker's (this thread waits for the child).

* default, cProfile: a ``cProfile.Profile`` timed by ``time.thread_time`` (the loop thread's CPU
  time, so that waiting in ``epoll.poll`` for the client is not counted) is enabled on the broker's
  loop thread (``MockBroker.call``) for one phase and disabled after it; the functions with the most
  own time (``tottime``) are printed
  with their share of the phase's profiled time, their own and cumulative µs per record, and calls
  per record.  cProfile's hook runs on every Python call and return: the shares and the calls per
  record are the figures to read, the µs are somewhat inflated (most calls here are per batch or per
  request, not per record).  ``--stats DIR`` keeps the .prof files.
* ``--py-spy DIR``: no cProfile; ``py-spy record --pid <this process>`` samples (``--rate``, default 500 Hz; native
  frames off) for the length of each phase and writes ``DIR/produce.svg`` and ``DIR/consume.svg``
  (flame graphs; py-spy's own output).  Needs py-spy on PATH or in the venv (``pip install py-spy``)
  and ptrace (root, or ptrace_scope 0).

Bounded: ``--records`` (default 200,000) per phase, ``--time-limit`` seconds per phase.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mockbroker import MockBroker

RECORDS = 200_000
TIME_LIMIT_S = 60.0
TOP = 25
CLIENT = """
import sys
sys.path.insert(0, {bench!r})
import sidebyside
phase, bootstrap, n, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
if phase == "produce":
    got, secs = sidebyside.produce(bootstrap, n, limit)
else:
    got, secs, _marks = sidebyside.consume(bootstrap, n, limit)
print(got, secs)
"""


def run_client(phase: str, bootstrap: str, records: int, time_limit: float) -> tuple[int, float]:
    # output to files and a plain wait(): this thread sleeps in waitpid, which a sampler sees as idle
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-c", CLIENT.format(bench=str(ROOT / "bench")), phase, bootstrap,
                                 str(records), str(time_limit)], stdout=out, stderr=err, text=True)
        try:
            proc.wait(timeout=time_limit + 60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{phase} client exited {proc.returncode}:\n{err.read()[-2000:]}")
        got, secs = out.read().split()[-2:]
    return int(got), float(secs)


def where(func: tuple[str, int, str]) -> str:
    filename, line, name = func
    path = Path(filename)
    try:
        filename = str(path.relative_to(ROOT))
    except ValueError:
        filename = path.name if filename.startswith(("/", "~")) else filename
    return f"{filename}:{line}({name})" if line else name


def summary(stats: pstats.Stats, records: int, top: int) -> list[str]:
    table = stats.stats  # type: ignore[attr-defined]  # pstats keeps its table in an undocumented attribute
    total = sum(tt for (_cc, _nc, tt, _ct, _callers) in table.values())
    rows = sorted(table.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    out = [f"profiled CPU time of the loop thread {total:.2f} s = {total / records * 1e6:.2f} µs per record",
           f"{'own %':>6} {'own µs/rec':>11} {'cum µs/rec':>11} {'calls/rec':>10}  function"]
    for func, (_cc, nc, tt, ct, _callers) in rows:
        out.append(f"{100 * tt / total:>6.1f} {tt / records * 1e6:>11.3f} {ct / records * 1e6:>11.3f} "
                   f"{nc / records:>10.4f}  {where(func)}")
    return out


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(found).is_file():
        raise SystemExit("py-spy not found: pip install py-spy")
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description="cProfile (or py-spy) of mockbroker's produce and consume paths")
    ap.add_argument("--records", type=int, default=RECORDS, help=f"1 KiB records (default {RECORDS:,})")
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT_S, help="seconds per phase")
    ap.add_argument("--top", type=int, default=TOP, help=f"functions listed per phase (default {TOP})")
    ap.add_argument("--rate", type=int, default=500, help="py-spy samples per second (default 500)")
    ap.add_argument("--stats", type=Path, help="write produce.prof and consume.prof here")
    ap.add_argument("--py-spy", dest="pyspy", type=Path, help="flame graphs with py-spy into this directory instead")
    args = ap.parse_args()
    spy = py_spy() if args.pyspy else None
    with MockBroker(config={"mock.topics": "sidebyside:3"}) as broker:
        bootstrap = broker.bootstrap_servers
        produced = args.records
        for phase in ("produce", "consume"):
            prof = cProfile.Profile(time.thread_time)  # the loop thread's CPU: waiting in epoll is not a cost
            sampler = None
            if spy is not None:
                args.pyspy.mkdir(parents=True, exist_ok=True)
                sampler = subprocess.Popen([spy, "record", "--pid", str(os.getpid()), "--rate", str(args.rate),
                                            "--format", "flamegraph", "--output", str(args.pyspy / f"{phase}.svg")],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                time.sleep(1.0)  # py-spy attaches
            else:
                broker.call(lambda _c: prof.enable())
            try:
                got, secs = run_client(phase, bootstrap, produced, args.time_limit)
            finally:
                if sampler is not None:
                    sampler.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
                    _, err = sampler.communicate(timeout=60)
                    if sampler.returncode not in (0, -signal.SIGINT):
                        print(f"py-spy exited {sampler.returncode}: {err[-1000:]}")
                else:
                    broker.call(lambda _c: prof.disable())
            if phase == "produce":
                produced = got
            print(f"== {phase}: {got:,} records x 1 KiB in {secs:.2f} s ({got * 1024 / secs / 1e6:.0f} MB/s"
                  f"{', under cProfile' if spy is None else ', sampled by py-spy'})")
            if spy is None:
                if args.stats:
                    args.stats.mkdir(parents=True, exist_ok=True)
                    prof.dump_stats(args.stats / f"{phase}.prof")
                print("\n".join(summary(pstats.Stats(prof), got, args.top)))
            else:
                print(f"   flame graph: {args.pyspy / (phase + '.svg')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
