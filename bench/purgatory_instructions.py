"""Purgatory cost in instructions per operation: bench/purgatory.py's workload on a ManualClock.

bench/purgatory.py measures throughput at saturation in real time, which on a shared machine swings
more than a few per cent between runs.  This replays the same workload (``Workload``, ``BenchOp``,
completion by ``check_and_complete``) on a ``ManualClock`` stepped 1 ms at a time, with no event
loop, and counts the instructions the replay takes under valgrind's callgrind: the count of a
process that replays once minus that of the same process that only builds the workload, divided
by the operations.  The count does not depend on the load; ``PYTHONHASHSEED=0`` keeps it exact.

Implementations, side by side in one run: ``wheel`` (``DelayedOperationPurgatory``), ``heap+count``
(bench/purgatory.py's baseline, its reaper on the same ManualClock) and ``null`` (a purgatory that
does nothing: the replay's own cost, so ``wheel - null`` is the purgatory's).

Run: ``.venv/bin/python bench/purgatory_instructions.py`` (needs valgrind; about a minute per
implementation and case), or ``--no-valgrind`` for CPU microseconds per operation instead.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from purgatory import TIMEOUT_MS, BenchOp, HeapPurgatory, Workload  # noqa: E402

from mockbroker.common.clock import ManualClock  # noqa: E402
from mockbroker.purgatory import DelayedOperationPurgatory, Timer  # noqa: E402


class NullPurgatory:
    """Watches nothing, completes nothing: what the replay costs by itself."""

    purges = 0

    def try_complete_else_watch(self, op: BenchOp, keys: tuple[int, ...]) -> bool:
        return False

    def check_and_complete(self, key: int) -> int:
        return 0


def replay(impl: str, wl: Workload) -> float:
    """Submit and complete every request of ``wl`` in simulated time; returns CPU seconds."""
    clock = ManualClock()
    p: DelayedOperationPurgatory | HeapPurgatory | NullPurgatory
    if impl == "wheel":
        p = DelayedOperationPurgatory("Bench", Timer(clock, tick_ms=1, wheel_size=20), 1000)
    elif impl == "null":
        p = NullPurgatory()
    else:
        p = HeapPurgatory(clock, 1000, impl.split("+")[1])  # type: ignore[arg-type]  # a ManualClock has SystemClock's surface
    watch, check = p.try_complete_else_watch, p.check_and_complete
    arrival, keys, done_ms, done_idx = wl.arrival_ms, wl.key, wl.done_ms, wl.done_idx
    n, m = wl.n, len(done_ms)
    ops: list[BenchOp | None] = [None] * n
    will_complete = bytearray(n)
    for idx in done_idx:
        will_complete[idx] = 1
    i = j = 0
    now = 0
    t0 = time.process_time()
    while i < n or j < m:
        now += 1
        clock.advance(1)
        while i < n and arrival[i] <= now:
            op = BenchOp(TIMEOUT_MS, keys[i])
            if will_complete[i]:
                ops[i] = op
            watch(op, (op.key,))
            i += 1
        while j < m and done_ms[j] <= now:
            idx = done_idx[j]
            j += 1
            op = ops[idx]
            ops[idx] = None
            if op is not None:
                op.ready = True
                check(op.key)
    clock.advance(TIMEOUT_MS + 100)  # the rest expire
    return time.process_time() - t0


def _instructions(args: argparse.Namespace, impl: str, case: str, replays: int) -> int:
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
           "--child", impl, case, str(replays), "--ops", str(args.ops)]
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}, check=True)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from valgrind: {out.stderr[-500:]}")
    return int(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--impls", default="wheel,heap+count,null")
    ap.add_argument("--cases", default="low,high")
    ap.add_argument("--ops", type=int, default=60_000, help="requests per replay")
    ap.add_argument("--rate", type=int, default=100_000, help="arrival rate of the workload, ops/s")
    ap.add_argument("--no-valgrind", action="store_true", help="CPU us per operation (best of 5) instead")
    ap.add_argument("--child", nargs=3, metavar=("IMPL", "CASE", "REPLAYS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        impl, case, replays = args.child
        wl = Workload(case, args.rate, args.ops, 1000, 1)
        gc.collect()
        gc.freeze()
        cpu = [replay(impl, wl) for _ in range(int(replays))]
        if cpu:
            print(f"{min(cpu) / args.ops * 1e6:.2f}")
        return
    unit = "CPU us/op (best of 5)" if args.no_valgrind else "instructions/op"
    print(f"python {sys.version.split()[0]}, {args.ops} requests at {args.rate}/s, 1000 keys, timeout {TIMEOUT_MS} ms, "
          f"ManualClock; {unit}; ratios are to heap+count")
    for case in args.cases.split(","):
        cost: dict[str, float] = {}
        for impl in args.impls.split(","):
            if args.no_valgrind:
                out = subprocess.run([sys.executable, __file__, "--child", impl, case, "5", "--ops", str(args.ops)],
                                     capture_output=True, text=True, check=True)
                cost[impl] = float(out.stdout.split()[-1])
            else:
                cost[impl] = (_instructions(args, impl, case, 1) - _instructions(args, impl, case, 0)) / args.ops
        base = cost.get("heap+count")
        for impl, c in cost.items():
            ratio = f"{c / base:6.2f}" if base and impl != "heap+count" else ""
            print(f"{case:4} {impl:10} {c:10.2f} {ratio}", flush=True)
        if "wheel" in cost and "null" in cost:
            print(f"{case:4} wheel - null (the purgatory's own) {cost['wheel'] - cost['null']:.2f}", flush=True)


if __name__ == "__main__":
    main()
