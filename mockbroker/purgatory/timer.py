"""The timer that drives the timing wheel from a ``Clock`` (Kafka's ``SystemTimer``).

Kafka's ``SystemTimer`` keeps a ``DelayQueue`` of *buckets* (never of
individual tasks) and an ``ExpirationReaper`` thread that polls it every
200 ms. Here the queue is a ``heapq`` of ``(expiration_ms, seq, bucket)`` and
the reaper is exactly one ``clock.call_later`` handle, armed for the earliest
bucket. When it fires the timer advances the wheel to that bucket's start,
flushes the bucket re-adding every entry (it lands in a finer bucket or runs
because it is due), and re-arms for the next earliest bucket. Nothing runs
while no bucket is due: no ticking every millisecond, no polling.

The heap holds at most one item per bucket and turn, so its size is bounded
by the number of buckets (``wheel_size`` per level) however many tasks are
pending. Buckets whose tasks were all cancelled stay queued until their
time and are then popped empty, as in Kafka.

Expired tasks run synchronously on the loop (``task.run()``), in deadline
order; Kafka hands them to a single-thread executor. An exception from a
task is logged and does not stop the others.

Concurrency contract: single event loop, no locks. ``add`` may be called
from inside a task's ``run`` (a completion that schedules new work); the
entry is filed relative to the bucket being processed and the loop that is
flushing picks it up if it is already due.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable

from ..common.clock import Clock, TimerHandle
from .timing_wheel import (
    TaskCounter,
    TimerTask,
    TimerTaskEntry,
    TimerTaskList,
    TimingWheel,
)

log = logging.getLogger(__name__)
_new_entry = object.__new__


class Timer:
    """``add`` / ``advance_clock`` / ``size`` as Kafka's ``Timer`` interface, plus ``close``."""

    __slots__ = ("_clock", "_now_ms", "_counter", "_heap", "_seq", "_wheel", "_handle", "_armed_ms",
                 "_advancing", "_closed", "_listeners", "tick_ms", "wheel_size")

    def __init__(self, clock: Clock, tick_ms: int = 1, wheel_size: int = 20) -> None:
        self._clock = clock
        self._now_ms = clock.monotonic_ms
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self._counter = TaskCounter()
        self._heap: list[tuple[int, int, TimerTaskList]] = []
        self._seq = itertools.count()  # tie-break: buckets themselves are not orderable
        self._wheel = TimingWheel(tick_ms, wheel_size, clock.monotonic_ms(), self._counter, self._offer)
        self._handle: TimerHandle | None = None
        self._armed_ms: int | None = None
        self._advancing = False
        self._closed = False
        self._listeners: list[Callable[[], None]] = []

    # -- Kafka's Timer interface ------------------------------------------------------
    def add(self, task: TimerTask) -> None:
        """Schedule ``task`` to run ``task.delay_ms`` from now; a task already due runs at once."""
        now_ms = self._now_ms()
        wheel = self._wheel
        # Bring the wheel up to now when no bucket is pending before now, so the
        # task is filed relative to the present (fewer cascades) and a due task
        # is recognised as due. Moving the wheel past a pending bucket would let
        # its slot be reused before it is flushed, so otherwise leave it; and
        # never move it under the flush loop (``_advancing``).
        if now_ms >= wheel.current_time_ms + wheel.tick_ms and not self._advancing:
            heap = self._heap
            if not heap or heap[0][0] > now_ms:
                wheel.advance_clock(now_ms)
        # TimerTaskEntry(task, expiration), its __init__ inlined (once per operation): a task is
        # filed by one entry at most, so a re-added task leaves its old bucket.
        entry = _new_entry(TimerTaskEntry)
        entry.task = task
        entry.expiration_ms = expiration_ms = now_ms + task.delay_ms
        entry.list = entry.next = entry.prev = None
        old = task._entry
        if old is not None and old.list is not None:
            old.list.remove(old)
        task._entry = entry
        if expiration_ms <= now_ms or not wheel.add(entry):
            # Already expired (Kafka: wheel.add returns false -> executor) or cancelled.
            if task._entry is entry:
                self._run(task)

    def advance_clock(self) -> bool:
        """Process every bucket due at the clock's now; True if any was.

        The armed clock callback calls this; tests and benchmarks may too.
        """
        if self._advancing:  # from a task's run(): the outer loop will get there
            return False
        now_ms = self._now_ms()
        heap = self._heap
        if not heap or heap[0][0] > now_ms:
            self._rearm()
            return False
        wheel = self._wheel
        wheel_add = wheel.add
        counter = self._counter
        heappop = heapq.heappop
        self._advancing = True
        try:
            while heap and heap[0][0] <= now_ms:
                expiration_ms, _, bucket = heappop(heap)
                if bucket.expiration_ms != expiration_ms:
                    continue  # stale: the bucket was flushed and queued again since
                wheel.advance_clock(expiration_ms)
                # TimerTaskList.flush with Kafka's addTimerTaskEntry as its callback, inlined: one
                # Python call less per expiring or cascading entry. Each entry is unlinked, then
                # re-filed (it lands in a finer bucket) or, when due, run. The wheel does not move
                # during the flush (``add`` leaves it alone while ``_advancing``), so "due" is one
                # bound; testing it first spares expiring entries a call to wheel.add, which would
                # refuse them for the same reason.
                due_ms = wheel.current_time_ms + wheel.tick_ms
                root = bucket._root
                head = root.next
                while head is not root:
                    nxt = head.next  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
                    nxt.prev = root  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
                    root.next = nxt
                    head.next = head.prev = head.list = None  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
                    counter.value -= 1
                    if head.expiration_ms < due_ms or not wheel_add(head):  # type: ignore[union-attr, arg-type]  # circular through the root: a linked entry's next/prev are never None
                        task = head.task  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
                        if task is not None and task._entry is head:
                            try:  # _run, inlined: once per expiring operation
                                task.run()
                            except Exception:
                                log.exception("timer task %r failed", task)
                    head = root.next
                bucket.expiration_ms = -1
        finally:
            self._advancing = False
            self._rearm()
        for listener in self._listeners:
            listener()
        return True

    def size(self) -> int:
        """Tasks filed in the wheel (pending and not cancelled): Kafka's ``NumDelayedOperations``."""
        return self._counter.value

    def close(self) -> None:
        """Disarm the clock callback for good (shutdown); idempotent.

        Filed tasks then never expire by themselves; ``add`` still runs a task
        that is already due, and ``advance_clock`` still works when called.
        """
        self._closed = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
            self._armed_ms = None

    # -- extras -------------------------------------------------------------------------
    def add_advance_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after every ``advance_clock`` that processed a bucket.

        The purgatory hooks its purge check here, where Kafka's reaper thread
        checks it after each ``advanceClock``.
        """
        self._listeners.append(listener)

    @property
    def wheel(self) -> TimingWheel:
        return self._wheel

    @property
    def queued_buckets(self) -> int:
        """Items in the bucket priority queue (Kafka's ``DelayQueue`` size)."""
        return len(self._heap)

    def __len__(self) -> int:
        return self._counter.value

    def __repr__(self) -> str:
        return (f"<Timer tasks={self._counter.value} buckets={len(self._heap)} "
                f"armed_ms={self._armed_ms} closed={self._closed}>")

    # -- internals --------------------------------------------------------------------
    @staticmethod
    def _run(task: TimerTask) -> None:
        try:
            task.run()
        except Exception:
            log.exception("timer task %r failed", task)

    def _offer(self, bucket: TimerTaskList) -> None:
        # The wheel's queue callback (Kafka's DelayQueue.offer), called when a bucket starts a turn.
        expiration_ms = bucket.expiration_ms
        heapq.heappush(self._heap, (expiration_ms, next(self._seq), bucket))
        if not self._advancing and (self._armed_ms is None or expiration_ms < self._armed_ms):
            self._rearm()

    def _rearm(self) -> None:
        # Exactly one handle, for the earliest queued bucket.
        heap = self._heap
        due_ms = heap[0][0] if heap and not self._closed else None
        if due_ms == self._armed_ms:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._armed_ms = due_ms
        if due_ms is not None:
            self._handle = self._clock.call_later(max(due_ms - self._now_ms(), 0), self._on_clock)

    def _on_clock(self) -> None:
        self._handle = None
        self._armed_ms = None
        self.advance_clock()
