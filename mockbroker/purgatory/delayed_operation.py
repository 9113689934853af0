"""Delayed operations and their purgatory (Kafka's ``DelayedOperation`` / ``DelayedOperationPurgatory``).

A delayed operation (an acks=-1 produce, a long-poll fetch, later a join or
heartbeat) completes when its condition is met or when its timeout passes,
whichever is first, and ``on_complete`` runs exactly once either way. The
purgatory files each operation under one or more watch keys (topic-partition
tuples now, group ids later) and in a ``Timer``; an event on a key
(``check_and_complete``) re-checks the operations watching it.

Purging. Completing an operation removes it from the timer at once (O(1)),
but not from the watcher lists of its other keys, nor from the list of a key
that never sees another event. Those completed-but-watched operations are
dropped by a purge, triggered by Kafka's estimated-count rule:

1. ``_estimated`` (Kafka's ``estimatedTotalOperations``) grows by one per
   operation that gets watched;
2. ``_estimated - num_delayed()`` estimates the completed operations still
   watched, because the timer holds exactly the pending ones;
3. when that exceeds ``purge_interval`` (``producer.purgatory.purge.interval.requests``
   / ``fetch.purgatory.purge.interval.requests``, default 1000) the estimate is
   reset to ``num_delayed()`` and every watcher list drops its completed
   operations; lists left empty are dropped with their key.

Where the check runs (there is no reaper thread): at the end of every
``try_complete_else_watch`` that watched (the only place the estimate grows,
so the number of completed-but-watched operations stays bounded by about
``purge_interval``), after every ``check_and_complete`` (where most
completions happen) and after every timer advance that expired something
(Kafka's reaper checks after each ``advanceClock``; this covers a quiet key
whose operations all expired, KAFKA-664). The check is one subtraction.

Concurrency contract: single event loop, no locks. Kafka's operation lock
and 512 watcher shards exist for threads; here a handler must not ``await``
between checking a condition and calling into the purgatory.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable

from .timer import Timer
from .timing_wheel import TimerTask

log = logging.getLogger(__name__)


class DelayedOperation(TimerTask):
    """An operation that completes on its condition or on its timeout (Kafka's ``DelayedOperation``).

    Subclasses implement ``try_complete`` (check the condition; when met, call
    ``force_complete`` and return its result), ``on_complete`` (build and send
    the answer; called exactly once) and ``on_expiration`` (called after
    ``on_complete`` when the timeout won).  ``expired`` tells ``on_complete``
    which won; ``PURGATORY`` names the purgatory the class waits in (the
    request journal reports it).
    """

    __slots__ = ("_completed", "expired")
    PURGATORY = ""

    def __init__(self, delay_ms: int) -> None:
        # TimerTask.__init__, inlined (one call less per operation).
        self.delay_ms = delay_ms
        self._entry = None
        self._completed = False
        self.expired = False

    def force_complete(self) -> bool:
        """Complete now; True only for the first caller (Kafka's CAS on ``completed``)."""
        if self._completed:
            return False
        self._completed = True
        # TimerTask.cancel and TimerTaskList.remove, inlined (once per operation completed before
        # its timeout): leave the timer in O(1), NumDelayedOperations drops at once.
        entry = self._entry
        if entry is not None:
            self._entry = None
            lst = entry.list
            if lst is not None:
                nxt = entry.next
                prev = entry.prev
                nxt.prev = prev  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
                prev.next = nxt  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
                entry.next = entry.prev = entry.list = None
                lst._counter.value -= 1
        self.on_complete()
        return True

    @property
    def is_completed(self) -> bool:
        return self._completed

    def safe_try_complete(self) -> bool:
        # Kafka takes the operation's lock here; the event loop already serialises.
        if self._completed:
            return False
        return self.try_complete()

    def run(self) -> None:
        """The timeout path, called by the timer."""
        if self._completed:
            return
        self.expired = True
        self.force_complete()
        self.on_expiration()

    def try_complete(self) -> bool:
        raise NotImplementedError

    def on_complete(self) -> None:
        raise NotImplementedError

    def on_expiration(self) -> None:
        raise NotImplementedError


def no_callback() -> None:
    """What a completed operation holds in place of its completion callback: dropping the callback
    drops the references it holds (a request's Deferred, which holds the operation), so a completed
    operation is freed by reference counting rather than left in a cycle to the cyclic GC."""


class DelayedDeadline(DelayedOperation):
    """A deadline, not an operation: never completes on a condition; when its time comes it calls
    ``expire`` (a group member's session or rebalance timeout, a group's initial rebalance delay).
    Watched under a key, it is cancelled by ``cancel_for_key`` when the member heartbeats in time
    (Kafka's group coordinators schedule these on their ``CoordinatorTimer``)."""

    __slots__ = ("expire",)

    def __init__(self, delay_ms: int, expire: Callable[[], None]) -> None:
        super().__init__(delay_ms)
        self.expire = expire

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.expire()


class DelayedOperationPurgatory:
    """Watcher lists by key plus a timer (Kafka's ``DelayedOperationPurgatory``).

    Give each purgatory its own ``Timer``, as Kafka gives each its own
    ``SystemTimer``: ``num_delayed`` is the timer's size and feeds the purge rule.
    """

    __slots__ = ("name", "timer", "purge_interval", "_watchers", "_estimated", "_purges", "_delayed", "_timer_add")

    def __init__(self, name: str, timer: Timer, purge_interval: int = 1000) -> None:
        self.name = name
        self.timer = timer
        self.purge_interval = purge_interval
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}
        self._estimated = 0
        self._purges = 0
        self._delayed = timer._counter  # timer.size(), read without a call on the hot path
        self._timer_add = timer.add
        timer.add_advance_listener(self._maybe_purge)

    def try_complete_else_watch(self, operation: DelayedOperation, watch_keys: Iterable[Hashable]) -> bool:
        """Complete ``operation`` now if it can; else watch it under every key and time it.

        Returns True if it completed during this call.
        """
        keys = watch_keys if type(watch_keys) is tuple else tuple(watch_keys)
        assert keys, "the watch key list can't be empty"
        # Kafka's order, kept on purpose:
        #   1. try_complete: most operations that can complete at once never
        #      touch a watcher list or the timer (the cheap path);
        #   2. watch under every key, then try again: once the operation is on
        #      every list, any later event finds it. With Kafka's threads a
        #      completion could otherwise slip in between:
        #        a. handler: try_complete -> False (high watermark 9, needs 10)
        #        b. replica fetch: high watermark -> 10, check_and_complete(key)
        #           finds no watcher yet
        #        c. handler: watch -> the op waits out its whole timeout
        #      On one event loop b cannot interleave unless a try_complete
        #      awaits or triggers events itself; the second try keeps the
        #      operation correct even then;
        #   3. the timer last: an operation that completed on the second try
        #      never enters it, and everything in the timer is watched, so
        #      estimated - timer size counts completed-but-watched operations.
        if not operation._completed and operation.try_complete():  # safe_try_complete, inlined
            return True
        watchers = self._watchers
        for key in keys:
            lst = watchers.get(key)
            if lst is None:
                watchers[key] = [operation]
            else:
                lst.append(operation)
        self._estimated += 1
        completed = not operation._completed and operation.try_complete()
        if not operation._completed:
            self._timer_add(operation)
        if self._estimated - self._delayed.value > self.purge_interval:
            self._purge()
        return completed

    def check_and_complete(self, key: Hashable) -> int:
        """Re-check the operations watching ``key``; returns how many completed now."""
        ops = self._watchers.get(key)
        if ops is None:
            return 0
        completed = 0
        for op in ops:
            if not op._completed and op.try_complete():  # safe_try_complete, inlined
                completed += 1
        # Drop the completed ones, including those completed elsewhere (another
        # key, the timeout): Kafka's tryCompleteWatched removes both as it goes.
        # Operations that callbacks watched under this key meanwhile were appended
        # to ``ops`` and visited above. If a callback replaced or dropped the list
        # (a purge, cancel_for_key), its version stands.
        watchers = self._watchers
        if watchers.get(key) is ops:
            keep = [op for op in ops if not op._completed]
            if keep:
                watchers[key] = keep
            else:
                del watchers[key]
        if self._estimated - self._delayed.value > self.purge_interval:
            self._purge()
        return completed

    def cancel_for_key(self, key: Hashable) -> list[DelayedOperation]:
        """Stop watching ``key``: its not-completed operations leave the timer (not completed) and are returned."""
        ops = self._watchers.pop(key, None)
        if ops is None:
            return []
        cancelled = []
        for op in ops:
            if not op._completed:
                op.cancel()
                cancelled.append(op)
        return cancelled

    def watched(self) -> int:
        """Watched entries over all keys, completed ones not yet purged included (PurgatorySize)."""
        return sum(len(ops) for ops in self._watchers.values())

    def num_delayed(self) -> int:
        """Operations waiting in the timer (NumDelayedOperations)."""
        return self.timer.size()

    def gauges(self) -> dict[str, int]:
        return {"PurgatorySize": self.watched(), "NumDelayedOperations": self.num_delayed()}

    def is_watching(self, key: Hashable) -> bool:
        """Whether an operation not yet completed watches ``key``."""
        return any(not op._completed for op in self._watchers.get(key, ()))

    def watch_keys(self) -> list[Hashable]:
        return list(self._watchers)

    @property
    def estimated_total(self) -> int:
        return self._estimated

    @property
    def purges(self) -> int:
        """Number of purges run so far (for tests and benchmarks)."""
        return self._purges

    def shutdown(self) -> None:
        """Disarm the timer: nothing expires any more (DelayedOperationPurgatory.shutdown)."""
        self.timer.close()

    def _maybe_purge(self) -> None:
        if self._estimated - self._delayed.value > self.purge_interval:
            self._purge()

    def _purge(self) -> None:
        # Reset first: operations watched by callbacks during the purge then
        # count on top (a small overestimate, which the rule tolerates).
        self._estimated = self._delayed.value
        self._purges += 1
        purged = 0
        watchers = self._watchers
        for key, ops in list(watchers.items()):
            # Most lists hold no completed operation (check_and_complete drops those of its
            # key as it goes): finding that out by a loop that stops at the first completed
            # one costs half of rebuilding the list, and leaves the list as it is.
            for op in ops:
                if op._completed:
                    break
            else:
                continue
            keep = [op for op in ops if not op._completed]
            purged += len(ops) - len(keep)
            if keep:
                watchers[key] = keep
            else:
                del watchers[key]
        log.debug("purgatory %s purged %d completed operations from its watcher lists", self.name, purged)

    def __repr__(self) -> str:
        return f"<DelayedOperationPurgatory {self.name} keys={len(self._watchers)} delayed={self.num_delayed()}>"
