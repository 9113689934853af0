"""Hierarchical timing wheel (Kafka's ``org.apache.kafka.server.util.timer``).

Mirrors Kafka's ``TimerTask``, ``TimerTaskEntry``, ``TimerTaskList`` and
``TimingWheel``; the driver that owns the clock (Kafka's ``SystemTimer``) is
``mockbroker.purgatory.timer.Timer``.

Why a wheel: a heap-based timer (``heapq``, Java's ``DelayQueue``) pays
O(log n) per insert and cannot delete from the middle, so a completed delayed
operation stays queued until its deadline. A wheel files a task into a bucket
in O(1) (O(levels) at worst) and, because every bucket is a doubly linked list
and every entry knows its bucket, a completed task leaves the wheel in O(1).

Shape: a wheel of ``wheel_size`` buckets, each ``tick_ms`` wide, covers
``interval_ms = tick_ms * wheel_size`` ahead of its ``current_time_ms``.
Deadlines beyond that go to an overflow wheel whose tick is the whole
interval of the wheel below; overflow wheels are created on demand. A bucket
expires when the clock reaches the *start* of its time range; the timer then
re-adds its entries, so each lands in a finer wheel or, when its deadline is
within the current tick, runs. With ``tick_ms=1`` a task runs exactly at its
deadline (whole milliseconds); with a coarser tick it runs at the start of
the tick holding its deadline, i.e. up to ``tick_ms - 1`` early, as in Kafka.

Worked example, one time unit per tick and three buckets per wheel, starting
at c = 0. Each wheel lists its buckets from the current one on, as the
``[first, last]`` millisecond of each range; ``queued`` plays the timer's
priority queue of buckets:

>>> queued = []
>>> wheel = TimingWheel(tick_ms=1, wheel_size=3, start_ms=0, task_counter=TaskCounter(), queue=queued.append)
>>> for deadline_ms in (2, 5, 20):  # level 1, 2 and 3: both overflow wheels are created
...     _ = wheel.add(TimerTaskEntry(_Noop(0), deadline_ms))
>>> print(wheel.describe())
level 1 tick 1: [0,0] [1,1] [2,2]
level 2 tick 3: [0,2] [3,5] [6,8]
level 3 tick 9: [0,8] [9,17] [18,26]
>>> [bucket.expiration_ms for bucket in queued]  # a bucket is due at the start of its range
[2, 3, 18]

Bucket [0,2] of level 2 and [0,8] of level 3 never receive a task: the level
below covers them. That wastes one bucket per level but keeps the maths to a
division and a modulo. At c+1 level 1 turns one bucket and [3,3] reuses the
slot of [0,0]; levels 2 and 3 move in steps of 3 and 9, so they stay put:

>>> wheel.advance_clock(1)
>>> print(wheel.describe())
level 1 tick 1: [1,1] [2,2] [3,3]
level 2 tick 3: [0,2] [3,5] [6,8]
level 3 tick 9: [0,8] [9,17] [18,26]

At c+3 the timer takes the due buckets in expiration order, moves the wheel
to each one's start and re-adds its entries. Deadline 2 is within the current
tick, so ``add`` refuses it and it runs; deadline 5 drops from level 2 into
level 1, whose window now reaches 5 ([9,11] reused the slot of [0,2]):

>>> ran = []
>>> def re_add(entry):
...     if not wheel.add(entry):
...         ran.append(entry.expiration_ms)
>>> for bucket in [queued.pop(0), queued.pop(0)]:
...     wheel.advance_clock(bucket.expiration_ms)
...     bucket.flush(re_add)
>>> ran
[2]
>>> print(wheel.describe())
level 1 tick 1: [3,3] [4,4] [5,5]
level 2 tick 3: [3,5] [6,8] [9,11]
level 3 tick 9: [0,8] [9,17] [18,26]
>>> [bucket.expiration_ms for bucket in queued]
[18, 5]

Concurrency contract: everything here runs on the broker's single asyncio
event loop, without locks (Kafka guards the same structures with a
read/write lock and per-entry monitors). The one re-entrant path is
``flush`` calling back into ``add``; it never refills the bucket being
flushed because the wheel stands at that bucket's start, so its slot now
means one full turn later, which belongs to the next wheel up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator


class TaskCounter:
    """Number of entries in all buckets of one timer (Kafka's shared ``AtomicInteger taskCounter``)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class TimerTask:
    """A task to run after ``delay_ms`` (Kafka's ``TimerTask``).

    The task holds the entry that files it in a bucket so that ``cancel`` can
    unlink it in O(1). Adding the task again replaces (and unlinks) the old entry.
    """

    __slots__ = ("delay_ms", "_entry")

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._entry: TimerTaskEntry | None = None

    def run(self) -> None:
        raise NotImplementedError

    def cancel(self) -> None:
        """Leave the timer at once; the task will not run (unless it is already running)."""
        entry = self._entry
        if entry is not None:
            lst = entry.list
            if lst is not None:
                lst.remove(entry)
            self._entry = None


class TimerTaskEntry:
    """A node of a bucket's list; it knows its list (Kafka's ``TimerTaskEntry``)."""

    __slots__ = ("task", "expiration_ms", "list", "next", "prev")

    def __init__(self, task: TimerTask | None, expiration_ms: int) -> None:
        self.task = task
        self.expiration_ms = expiration_ms
        self.list: TimerTaskList | None = None
        self.next: TimerTaskEntry | None = None
        self.prev: TimerTaskEntry | None = None
        if task is not None:
            # Kafka's TimerTask.setTimerTaskEntry, inlined (one entry per operation):
            # a task is filed by one entry at most, so a re-added task leaves its old bucket.
            old = task._entry
            if old is not None and old.list is not None:
                old.list.remove(old)
            task._entry = self

    @property
    def cancelled(self) -> bool:
        # Cancelling (or re-adding) the task detaches this entry from it.
        return self.task is None or self.task._entry is not self

    def remove(self) -> None:
        if self.list is not None:
            self.list.remove(self)


class TimerTaskList:
    """One bucket: a circular doubly linked list with a sentinel root (Kafka's ``TimerTaskList``).

    ``expiration_ms`` is -1 while the bucket is not queued in the timer;
    ``set_expiration`` returns True only when the value changed, which is the
    signal to queue the bucket (once per turn of its wheel).
    """

    __slots__ = ("_root", "_counter", "expiration_ms")

    def __init__(self, task_counter: TaskCounter) -> None:
        root = TimerTaskEntry(None, -1)
        root.next = root
        root.prev = root
        self._root = root
        self._counter = task_counter
        self.expiration_ms = -1

    def set_expiration(self, expiration_ms: int) -> bool:
        changed = self.expiration_ms != expiration_ms
        self.expiration_ms = expiration_ms
        return changed

    def add(self, entry: TimerTaskEntry) -> None:
        if entry.list is not None:  # filed elsewhere: move it (Kafka loops on entry.remove())
            entry.list.remove(entry)
        root = self._root
        tail = root.prev
        entry.next = root
        entry.prev = tail
        entry.list = self
        tail.next = entry  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
        root.prev = entry
        self._counter.value += 1

    def remove(self, entry: TimerTaskEntry) -> None:
        if entry.list is self:
            entry.next.prev = entry.prev  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
            entry.prev.next = entry.next  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
            entry.next = entry.prev = None
            entry.list = None
            self._counter.value -= 1

    def flush(self, f: Callable[[TimerTaskEntry], None]) -> None:
        """Remove every entry and pass it to ``f`` (the timer re-adds it), then un-queue the bucket."""
        root = self._root
        counter = self._counter
        head = root.next
        while head is not root:
            # remove(head), inlined: the timer flushes every expiring operation
            nxt = head.next  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
            nxt.prev = root  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
            root.next = nxt
            head.next = head.prev = head.list = None  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
            counter.value -= 1
            f(head)  # type: ignore[arg-type]  # circular through the root: a linked entry's next/prev are never None
            head = root.next
        self.expiration_ms = -1

    def __iter__(self) -> Iterator[TimerTaskEntry]:
        root = self._root
        e = root.next
        while e is not root:
            nxt = e.next  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
            yield e  # type: ignore[misc]  # circular through the root: a linked entry's next/prev are never None
            e = nxt

    def __len__(self) -> int:
        """Entries in this bucket; O(n), for tests and debugging (Kafka keeps only the global count)."""
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"<TimerTaskList expiration_ms={self.expiration_ms} entries={len(self)}>"


class TimingWheel:
    """One level of the hierarchy (Kafka's ``TimingWheel``): bucket maths and the overflow wheel only.

    ``queue`` is called with a bucket whenever its expiration changes (the
    timer's priority queue of buckets, Kafka's ``DelayQueue.offer``).
    """

    __slots__ = ("tick_ms", "wheel_size", "interval_ms", "current_time_ms", "_counter", "_queue",
                 "_buckets", "_overflow")

    def __init__(self, tick_ms: int, wheel_size: int, start_ms: int, task_counter: TaskCounter,
                 queue: Callable[[TimerTaskList], None]) -> None:
        if tick_ms < 1 or wheel_size < 2:
            raise ValueError(f"tick_ms must be >= 1 and wheel_size >= 2, got {tick_ms}, {wheel_size}")
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval_ms = tick_ms * wheel_size
        # Rounded down to a tick so buckets start on tick boundaries.
        self.current_time_ms = start_ms - start_ms % tick_ms
        self._counter = task_counter
        self._queue = queue
        self._buckets = [TimerTaskList(task_counter) for _ in range(wheel_size)]
        self._overflow: TimingWheel | None = None

    def _add_overflow_wheel(self) -> TimingWheel:
        # Created lazily: most deadlines (a 200 ms produce timeout at tick 1, size 20) need two levels.
        if self._overflow is None:
            self._overflow = TimingWheel(self.interval_ms, self.wheel_size, self.current_time_ms,
                                         self._counter, self._queue)
        return self._overflow

    def add(self, entry: TimerTaskEntry) -> bool:
        """File ``entry``; False means already expired (the caller runs it) or cancelled."""
        task = entry.task
        if task is None or task._entry is not entry:
            return False
        expiration_ms = entry.expiration_ms
        # Kafka recurses into the overflow wheel; a loop saves a call per level.
        wheel = self
        while True:
            tick_ms = wheel.tick_ms
            current_ms = wheel.current_time_ms
            if expiration_ms < current_ms + tick_ms:
                return False
            if expiration_ms < current_ms + wheel.interval_ms:
                break
            overflow = wheel._overflow
            wheel = overflow if overflow is not None else wheel._add_overflow_wheel()
        virtual_id = expiration_ms // tick_ms
        bucket = wheel._buckets[virtual_id % wheel.wheel_size]
        # TimerTaskList.add, inlined (once per operation).
        if entry.list is not None:
            entry.list.remove(entry)
        root = bucket._root
        tail = root.prev
        entry.next = root
        entry.prev = tail
        entry.list = bucket
        tail.next = entry  # type: ignore[union-attr]  # circular through the root: a linked entry's next/prev are never None
        root.prev = entry
        self._counter.value += 1
        # Queue the bucket only when it starts a new turn (TimerTaskList.setExpiration
        # returning true): entries joining a queued bucket ride along with it.
        bucket_ms = virtual_id * tick_ms
        if bucket.expiration_ms != bucket_ms:
            bucket.expiration_ms = bucket_ms
            wheel._queue(bucket)
        return True

    def advance_clock(self, time_ms: int) -> None:
        """Move this wheel (and the ones above) to the tick holding ``time_ms``; never backwards."""
        if time_ms >= self.current_time_ms + self.tick_ms:
            self.current_time_ms = time_ms - time_ms % self.tick_ms
            if self._overflow is not None:
                self._overflow.advance_clock(self.current_time_ms)

    def levels(self) -> list[TimingWheel]:
        wheels: list[TimingWheel] = []
        w: TimingWheel | None = self
        while w is not None:
            wheels.append(w)
            w = w._overflow
        return wheels

    def describe(self) -> str:
        """The time range of each bucket of each level, from the current bucket on."""
        lines = []
        for level, w in enumerate(self.levels(), 1):
            ranges = " ".join(
                f"[{w.current_time_ms + i * w.tick_ms},{w.current_time_ms + (i + 1) * w.tick_ms - 1}]"
                for i in range(w.wheel_size)
            )
            lines.append(f"level {level} tick {w.tick_ms}: {ranges}")
        return "\n".join(lines)


class _Noop(TimerTask):
    """A task that does nothing (doctest and tests)."""

    __slots__ = ()

    def run(self) -> None:
        pass
