"""Purgatory enqueue benchmark: the timing wheel vs a heap timer with full-scan purges.

Reproduces, in-process and in real time, the benchmark of Confluent's article
"Apache Kafka, Purgatory, and Hierarchical Timing Wheels" (2015), which
introduced Kafka's timing-wheel purgatory:

* requests arrive with exponential inter-arrival times at a target rate;
* each has a 200 ms timeout and a completion time drawn from a log-normal
  distribution; low-timeout case p50 20 ms / p75 60 ms, high-timeout case
  p50 200 ms / p75 400 ms; a request carries 100 bytes of data;
* a request whose completion time comes before its timeout is completed at
  that time by ``check_and_complete`` on its watch key (one of ``--keys``
  keys, uniform); the others expire through the timer;
* tick 1 ms, wheel size 20, purge interval 1000 (Kafka's defaults).

Implementations, each fed the same generated workload in the same run:

* ``wheel``: ``mockbroker.purgatory`` (``Timer`` on ``SystemClock``, so its
  single armed ``loop.call_later`` drives expiry; estimated-count purge);
* ``heap+count``: the old design as the 0.8 wiki describes it: a heap of
  (deadline, request) with lazy deletion (a completed request stays queued
  until its deadline), one ``call_later`` for the earliest deadline (the
  reaper), and every ``purge_interval`` newly watched requests a full scan of
  the heap and of all watcher lists;
* ``heap+size``: the same, with the trigger that article describes for
  the old purgatory: after each reaper wake-up, scan the heap when it holds
  >= ``purge_interval`` entries and the watcher lists when they do.
  (Kafka 0.8 checked after every expired request; batching all expirations
  due at one wake-up favours the baseline.)

Both use the same ``DelayedOperation`` subclass, the same
``try_complete_else_watch`` steps and the same ``check_and_complete`` loop,
so the difference is the timer and the purge.

``--complete force`` completes with ``force_complete()`` instead, as Kafka's
own ``TestPurgatoryPerformance`` does (it also watches every request under
the same 3 keys); completed requests then stay watched until a purge.

The driver runs on the asyncio loop: each turn it submits every request whose
arrival time has passed and completes every request whose completion time has
passed (at most ``BATCH`` events per turn), then sleeps until the next event.
When an implementation cannot keep up, requests are submitted late and the
achieved rate drops below the target. Each (case, rate, implementation) runs
in a forked child so that RSS and CPU are its own.

Reported per step: achieved rate = requests submitted / time of the last
submission; CPU s = ``time.process_time`` of the child from the first
submission until every request has completed or expired; peak RSS growth
(psutil, sampled every 50 ms, over the child's RSS at start); peak entries =
watcher-list entries + timer (or heap) entries, sampled likewise; mean expiry
lateness (mean/max, ms); purges run. ``blocks+k`` is the peak growth of
``sys.getallocatedblocks()`` (live Python allocations, thousands): unlike RSS
it does not depend on which freed pages the allocator happens to reuse, so it
is the memory column to compare. Ratios are wheel / baseline.

Run: ``.venv/bin/python bench/purgatory.py`` (about 2 s of traffic per step,
under 4 minutes in all) or ``--full`` (1,000,000 requests per step).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import itertools
import math
import multiprocessing as mp
import random
import sys
import time
from array import array
from collections.abc import Hashable, Iterable
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mockbroker.common.clock import SystemClock  # noqa: E402
from mockbroker.purgatory import DelayedOperation, DelayedOperationPurgatory, Timer  # noqa: E402

TIMEOUT_MS = 200
DATA_BYTES = 100
PURGE_INTERVAL = 1000
BATCH = 2000  # events per loop turn before yielding to timer callbacks
CASES = {"low": (20.0, 60.0), "high": (200.0, 400.0)}  # (p50, p75) of the completion time, ms
Z75 = 0.6744897501960817  # standard normal 75th percentile


class Stats:
    __slots__ = ("done", "expired", "late_ms_sum", "late_ms_max")

    def __init__(self) -> None:
        self.done = 0
        self.expired = 0
        self.late_ms_sum = 0.0
        self.late_ms_max = 0.0


STATS = Stats()
_mono_ns = time.monotonic_ns


class BenchOp(DelayedOperation):
    """A fake request: completes once ``ready`` is set, carries 100 bytes."""

    __slots__ = ("key", "ready", "deadline_ns", "data")

    def __init__(self, delay_ms: int, key: int) -> None:
        super().__init__(delay_ms)
        self.key = key
        self.ready = False
        self.deadline_ns = _mono_ns() + delay_ms * 1_000_000
        self.data = bytes(DATA_BYTES)

    def try_complete(self) -> bool:
        if self.ready:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        STATS.done += 1

    def on_expiration(self) -> None:
        s = STATS
        s.expired += 1
        late_ms = (_mono_ns() - self.deadline_ns) / 1e6
        s.late_ms_sum += late_ms
        if late_ms > s.late_ms_max:
            s.late_ms_max = late_ms


class HeapPurgatory:
    """The old purgatory: heap timer with lazy deletion plus full-scan purges (see module doc)."""

    __slots__ = ("clock", "purge_interval", "trigger", "_heap", "_seq", "_watchers", "_added", "_handle",
                 "_armed_ms", "purges", "_now_ms")

    def __init__(self, clock: SystemClock, purge_interval: int, trigger: str) -> None:
        self.clock = clock
        self._now_ms = clock.monotonic_ms
        self.purge_interval = purge_interval
        self.trigger = trigger
        self._heap: list[tuple[int, int, BenchOp]] = []
        self._seq = itertools.count()
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}
        self._added = 0
        self._handle = None
        self._armed_ms: int | None = None
        self.purges = 0

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        # The same steps and micro-optimisations as DelayedOperationPurgatory's; only the timer differs.
        if not op._completed and op.try_complete():
            return True
        watchers = self._watchers
        for key in keys:
            lst = watchers.get(key)
            if lst is None:
                watchers[key] = [op]
            else:
                lst.append(op)
        self._added += 1
        if not op._completed and op.try_complete():
            return True
        deadline_ms = self._now_ms() + op.delay_ms
        heapq.heappush(self._heap, (deadline_ms, next(self._seq), op))  # type: ignore[arg-type]
        if self._armed_ms is None or deadline_ms < self._armed_ms:
            self._arm()
        return False

    def check_and_complete(self, key: Hashable) -> int:  # the same loop as DelayedOperationPurgatory's
        ops = self._watchers.get(key)
        if ops is None:
            return 0
        completed = 0
        for op in ops:
            if not op._completed and op.try_complete():
                completed += 1
        watchers = self._watchers
        if watchers.get(key) is ops:
            keep = [op for op in ops if not op._completed]
            if keep:
                watchers[key] = keep
            else:
                del watchers[key]
        return completed

    def watched(self) -> int:
        return sum(len(ops) for ops in self._watchers.values())

    def num_delayed(self) -> int:
        return len(self._heap)  # completed ones included: the old design cannot delete

    def _arm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed_ms = self._heap[0][0] if self._heap else None
        if self._armed_ms is not None:
            self._handle = self.clock.call_later(max(self._armed_ms - self.clock.monotonic_ms(), 0), self._reap)
        else:
            self._handle = None

    def _reap(self) -> None:
        self._handle = None
        now_ms = self.clock.monotonic_ms()
        heap = self._heap
        while heap and heap[0][0] <= now_ms:
            op = heapq.heappop(heap)[2]
            if not op._completed:
                op.run()
        if self.trigger == "count":
            if self._added >= self.purge_interval:
                self._added = 0
                self.purges += 1
                self._purge_heap()
                self._purge_watchers()
        else:
            scan_heap = len(heap) >= self.purge_interval
            scan_watchers = self.watched() >= self.purge_interval
            self.purges += scan_heap or scan_watchers
            if scan_heap:
                self._purge_heap()
            if scan_watchers:
                self._purge_watchers()
        self._armed_ms = None
        self._arm()

    def _purge_heap(self) -> None:
        self._heap = [e for e in self._heap if not e[2]._completed]
        heapq.heapify(self._heap)

    def _purge_watchers(self) -> None:
        watchers = self._watchers
        for key in list(watchers):
            keep = [op for op in watchers[key] if not op._completed]
            if keep:
                watchers[key] = keep
            else:
                del watchers[key]


class Workload:
    """Arrival offsets, completion times and keys, generated once per (case, rate).

    Held in ``array`` buffers, not lists of Python objects, so that the
    children's memory figures are not blurred by the workload.
    """

    def __init__(self, case: str, rate: int, n: int, keys: int, seed: int) -> None:
        rng = random.Random(f"{seed}/{case}/{rate}")
        p50, p75 = CASES[case]
        mu = math.log(p50)
        sigma = (math.log(p75) - mu) / Z75
        per_ms = rate / 1000.0
        t = 0.0
        self.arrival_ms = arrival = array("d", bytes(8 * n))
        self.key = array("i", (rng.randrange(keys) for _ in range(n)))
        done_at = array("d")
        done_idx = array("i")
        for i in range(n):
            t += rng.expovariate(per_ms)
            arrival[i] = t
            latency = rng.lognormvariate(mu, sigma)
            if latency < TIMEOUT_MS:
                done_at.append(t + latency)
                done_idx.append(i)
        order = sorted(range(len(done_at)), key=done_at.__getitem__)
        self.done_ms = array("d", (done_at[k] for k in order))
        self.done_idx = array("i", (done_idx[k] for k in order))
        self.n = n
        del order
        gc.collect()


async def drive(impl: str, wl: Workload, limit_s: float, complete: str = "check") -> dict:
    loop = asyncio.get_running_loop()
    clock = SystemClock(loop)
    purgatory: DelayedOperationPurgatory | HeapPurgatory
    if impl == "wheel":
        purgatory = DelayedOperationPurgatory("Bench", Timer(clock, tick_ms=1, wheel_size=20), PURGE_INTERVAL)
    else:
        purgatory = HeapPurgatory(clock, PURGE_INTERVAL, impl.split("+")[1])

    def entries() -> int:
        return purgatory.watched() + purgatory.num_delayed()

    watch = purgatory.try_complete_else_watch
    by_check = complete == "check"
    check = purgatory.check_and_complete
    proc = psutil.Process()
    entries_peak = 0
    arrival, keys, done_ms, done_idx = wl.arrival_ms, wl.key, wl.done_ms, wl.done_idx
    n, m = wl.n, len(done_ms)
    # Only requests that will be completed are remembered (until then), so the
    # driver itself retains nothing once a request is done.
    will_complete = bytearray(n)
    for idx in done_idx:
        will_complete[idx] = 1
    ops: list[BenchOp | None] = [None] * n
    perf = time.perf_counter
    inf = math.inf
    i = j = 0
    max_lag_ms = 0.0
    rss0 = rss_peak = proc.memory_info().rss
    blocks0 = blocks_peak = sys.getallocatedblocks()
    cpu0 = time.process_time()
    t0 = perf()
    next_sample = 0.0
    t_last_submit: float | None = None
    limit_ms = limit_s * 1000.0
    next_arrival = arrival[0] if n else inf
    next_done = done_ms[0] if m else inf
    while next_arrival < inf or next_done < inf:
        now_ms = (perf() - t0) * 1000.0
        if next_arrival < inf and now_ms > limit_ms:  # cannot keep up: stop submitting, drain the rest
            n = i
            next_arrival = inf
            t_last_submit = perf()
        # Events in time order, arrivals and completions merged, at most BATCH per turn.
        budget = BATCH
        while budget:
            if next_arrival <= next_done:
                if next_arrival > now_ms:
                    break
                op = BenchOp(TIMEOUT_MS, keys[i])
                if will_complete[i]:
                    ops[i] = op
                watch(op, (op.key,))
                lag = now_ms - next_arrival
                if lag > max_lag_ms:
                    max_lag_ms = lag
                i += 1
                if i < n:
                    next_arrival = arrival[i]
                else:
                    next_arrival = inf
                    t_last_submit = perf()
            else:
                if next_done > now_ms:
                    break
                idx = done_idx[j]
                op = ops[idx]
                j += 1
                next_done = done_ms[j] if j < m else inf
                if op is not None:
                    ops[idx] = None
                    if by_check:
                        op.ready = True
                        check(op.key)
                    else:
                        op.force_complete()
                elif idx >= n:  # its request was never submitted (time limit)
                    continue
            budget -= 1
        if now_ms >= next_sample:
            next_sample = now_ms + 50.0
            rss_peak = max(rss_peak, proc.memory_info().rss)
            blocks_peak = max(blocks_peak, sys.getallocatedblocks())
            entries_peak = max(entries_peak, entries())
        if not budget:
            await asyncio.sleep(0)  # let the timer's callbacks run
            continue
        nxt = min(next_arrival, next_done)
        if nxt < inf:
            await asyncio.sleep(max(nxt - (perf() - t0) * 1000.0, 0.0) / 1000.0)
    while STATS.done < n:  # the rest expire through the timer
        await asyncio.sleep(0.005)
        rss_peak = max(rss_peak, proc.memory_info().rss)
        blocks_peak = max(blocks_peak, sys.getallocatedblocks())
        entries_peak = max(entries_peak, entries())
        if perf() - t0 > limit_s + 30:
            break
    cpu_s = time.process_time() - cpu0
    wall_s = perf() - t0
    submit_s = max((t_last_submit or perf()) - t0, 1e-9)
    return {
        "submitted": n, "achieved": n / submit_s, "cpu_s": cpu_s, "wall_s": wall_s,
        "rss_mb": (rss_peak - rss0) / 1e6, "blocks_k": (blocks_peak - blocks0) / 1e3, "entries": entries_peak,
        "expired": STATS.expired,
        "done": STATS.done, "late_mean_ms": STATS.late_ms_sum / max(STATS.expired, 1),
        "late_max_ms": STATS.late_ms_max, "max_lag_ms": max_lag_ms, "purges": purgatory.purges,
    }


def _child(impl: str, wl: Workload, limit_s: float, complete: str, conn) -> None:  # type: ignore[no-untyped-def]
    gc.collect()
    gc.freeze()  # the workload is not the benchmark's garbage
    conn.send(asyncio.run(drive(impl, wl, limit_s, complete)))
    conn.close()


def run_step(impl: str, wl: Workload, limit_s: float, complete: str) -> dict:
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(impl, wl, limit_s, complete, child))
    p.start()
    result = parent.recv()
    p.join()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="25000,50000,100000,150000,200000", help="target rates, ops/s")
    ap.add_argument("--cases", default="low,high", help="low and/or high timeout rate")
    ap.add_argument("--impls", default="wheel,heap+count,heap+size")
    ap.add_argument("--seconds", type=float, default=2.0, help="traffic per step (ops = rate * seconds)")
    ap.add_argument("--max-ops", type=int, default=1_000_000)
    ap.add_argument("--limit-s", type=float, default=None, help="stop submitting after this (default 2.5x)")
    ap.add_argument("--full", action="store_true", help="1,000,000 requests per step (several minutes)")
    ap.add_argument("--keys", type=int, default=1000, help="watch keys (partitions)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--complete", choices=("check", "force"), default="check",
                    help="check: ready + check_and_complete(key) (default); force: force_complete() directly, "
                         "as Kafka's TestPurgatoryPerformance does, leaving completed requests watched until a purge")
    args = ap.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    impls = args.impls.split(",")
    print(f"python {sys.version.split()[0]}, {psutil.cpu_count()} CPUs, timeout {TIMEOUT_MS} ms, "
          f"tick 1 ms x 20, purge interval {PURGE_INTERVAL}, {args.keys} keys, {DATA_BYTES} B per request, "
          f"completion by {args.complete}")
    hdr = (f"{'case':4} {'target/s':>8} {'impl':10} {'achieved/s':>10} {'%tgt':>4} {'CPU s':>5} {'CPU%':>4} "
           f"{'RSS+MB':>6} {'blocks+k':>8} {'entries':>7} {'exp%':>5} {'late ms':>9} {'purges':>6} "
           f"{'w/b rate':>8} {'w/b CPU':>7} {'w/b blocks':>10}")
    print(hdr)
    print("-" * len(hdr))
    t_start = time.perf_counter()
    for case in args.cases.split(","):
        for rate in rates:
            n = args.max_ops if args.full else min(args.max_ops, int(rate * args.seconds))
            limit_s = args.limit_s or (max(n / rate * 1.5, 10.0) if args.full else n / rate * 2.5)
            wl = Workload(case, rate, n, args.keys, args.seed)
            results = {impl: run_step(impl, wl, limit_s, args.complete) for impl in impls}
            del wl
            w = results.get("wheel")
            for impl, r in results.items():
                ratios = ""
                if w is not None and impl != "wheel":
                    ratios = (f"{w['achieved'] / r['achieved']:8.2f} {w['cpu_s'] / r['cpu_s']:7.2f} "
                              f"{w['blocks_k'] / r['blocks_k'] if r['blocks_k'] > 0 else math.nan:10.2f}")
                late = f"{r['late_mean_ms']:.1f}/{r['late_max_ms']:.0f}"
                print(f"{case:4} {rate:8d} {impl:10} {r['achieved']:10.0f} {100 * r['achieved'] / rate:4.0f} "
                      f"{r['cpu_s']:5.2f} {100 * r['cpu_s'] / r['wall_s']:4.0f} {r['rss_mb']:6.1f} "
                      f"{r['blocks_k']:8.1f} {r['entries']:7d} {100 * r['expired'] / max(r['submitted'], 1):5.1f} "
                      f"{late:>9} {r['purges']:6d} {ratios}", flush=True)
    print(f"total {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
