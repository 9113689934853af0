"""The one clock everything time-based reads (Kafka's ``org.apache.kafka.common.utils.Time``).

``SystemClock`` reads the OS clocks and schedules on the asyncio loop.
``ManualClock`` only moves when a test calls ``advance``; callbacks scheduled
on it fire then, in deadline order, so tests drive time deterministically.
No other module calls ``time.time``/``time.monotonic`` or ``loop.call_later``
for broker behaviour.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from collections.abc import Callable
from typing import Protocol


def wall_time_ns() -> int:
    """The host's wall clock, for records that are lined up with other logs (the request journal);
    never for behaviour, which reads the injectable ``Clock``."""
    return time.time_ns()


log = logging.getLogger("mockbroker.clock")


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class PeriodicTask:
    """A task run every ``interval_ms`` of a clock until cancelled (Kafka's ``KafkaScheduler.schedule``
    with a period).  One timer handle at a time, however long it runs; a task that raises is logged
    ("Uncaught exception in scheduled task", as Kafka's scheduler wraps each run) and runs again at its
    next period, so one failure does not stop it for good."""

    __slots__ = ("clock", "interval_ms", "task", "name", "_handle", "cancelled", "runs")

    def __init__(self, clock: Clock, interval_ms: float, task: Callable[[], object], name: str) -> None:
        self.clock = clock
        self.interval_ms = interval_ms
        self.task = task
        self.name = name
        self.cancelled = False
        self.runs = 0
        self._handle: TimerHandle = clock.call_later(interval_ms, self._run)

    def _run(self) -> None:
        if self.cancelled:
            return
        self.runs += 1
        try:
            self.task()
        except Exception:  # noqa: BLE001 - KafkaScheduler logs a task's failure and keeps its schedule
            log.exception("Uncaught exception in scheduled task '%s'", self.name)
        if not self.cancelled:
            self._handle = self.clock.call_later(self.interval_ms, self._run)

    def cancel(self) -> None:
        self.cancelled = True
        self._handle.cancel()


def every(clock: Clock, interval_ms: float, task: Callable[[], object], name: str) -> PeriodicTask:
    """Run ``task`` on ``clock`` every ``interval_ms`` (first after one interval) until the returned
    task is cancelled: the one periodic scheduler of the broker."""
    return PeriodicTask(clock, interval_ms, task, name)


class Clock(Protocol):
    def time_ms(self) -> int:
        """Wall-clock milliseconds since the epoch (record timestamps, LogAppendTime)."""

    def monotonic_ms(self) -> int:
        """Monotonic milliseconds (timeouts, quota windows, throttle deadlines)."""

    def monotonic_ns(self) -> int: ...

    def call_later(self, delay_ms: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` on the broker's loop after ``delay_ms`` of this clock."""


class SystemClock:
    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def time_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def monotonic_ns(self) -> int:
        return time.monotonic_ns()

    def call_later(self, delay_ms: float, callback: Callable[[], None]) -> TimerHandle:
        assert self._loop is not None, "SystemClock not bound to a loop"
        return self._loop.call_later(max(delay_ms, 0) / 1000.0, callback)


class _ManualHandle:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that moves only on ``advance``/``set``; wall time = start + elapsed.

    The wall time starts at the host's when the clock is made (``start_wall_ms`` unless given), so
    that records real clients stamp with their own clocks fall within the broker's
    message.timestamp.after.max.ms (one hour by default, as Kafka 4's) and retention measures them
    against the time a test advanced to; give ``start_wall_ms`` for absolute times."""

    def __init__(self, start_wall_ms: int | None = None, start_mono_ms: int = 1_000_000) -> None:
        self._wall0 = wall_time_ns() // 1_000_000 if start_wall_ms is None else start_wall_ms
        self._mono0 = start_mono_ms
        self._elapsed_ns = 0
        self._timers: list[tuple[int, int, _ManualHandle, Callable[[], None]]] = []
        self._seq = itertools.count()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:  # same surface as SystemClock
        pass

    def time_ms(self) -> int:
        return self._wall0 + self._elapsed_ns // 1_000_000

    def monotonic_ms(self) -> int:
        return self._mono0 + self._elapsed_ns // 1_000_000

    def monotonic_ns(self) -> int:
        return self._mono0 * 1_000_000 + self._elapsed_ns

    def call_later(self, delay_ms: float, callback: Callable[[], None]) -> TimerHandle:
        h = _ManualHandle()
        due = self._elapsed_ns + int(max(delay_ms, 0) * 1_000_000)
        heapq.heappush(self._timers, (due, next(self._seq), h, callback))
        return h

    def advance(self, ms: float) -> None:
        """Move time forward, firing due callbacks in order at their own instants."""
        target = self._elapsed_ns + int(ms * 1_000_000)
        while self._timers and self._timers[0][0] <= target:
            due, _, h, cb = heapq.heappop(self._timers)
            if h.cancelled:
                continue
            self._elapsed_ns = max(self._elapsed_ns, due)
            cb()
        self._elapsed_ns = target

    @property
    def pending_timers(self) -> int:
        return sum(1 for t in self._timers if not t[2].cancelled)
