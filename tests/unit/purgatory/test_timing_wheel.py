"""The timing wheel and its timer (Kafka's TimingWheel / SystemTimer), driven by the ManualClock.

The model test runs random add / cancel / advance sequences against the
wheel and against ``HeapTimer``, a heapq timer simple enough to be obviously
right (Kafka keeps ``MockTimer`` on a PriorityQueue for the same purpose).
"""

from __future__ import annotations

import asyncio
import doctest
import heapq
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockbroker.common.clock import ManualClock, SystemClock
from mockbroker.purgatory import Timer, TimerTask, TimingWheel, timing_wheel
from mockbroker.purgatory.timing_wheel import TaskCounter, TimerTaskEntry


class Recorder(TimerTask):
    """Records (name, clock ms) into ``log`` when it runs."""

    __slots__ = ("name", "clock", "log")

    def __init__(self, delay_ms: int, name: object, clock: ManualClock, log: list) -> None:
        super().__init__(delay_ms)
        self.name = name
        self.clock = clock
        self.log = log

    def run(self) -> None:
        self.log.append((self.name, self.clock.monotonic_ms()))


def make(tick_ms: int = 1, wheel_size: int = 20, start_mono_ms: int = 1_000_000) -> tuple[ManualClock, Timer]:
    clock = ManualClock(start_mono_ms=start_mono_ms)
    return clock, Timer(clock, tick_ms=tick_ms, wheel_size=wheel_size)


def test_module_docstring_example_runs() -> None:
    result = doctest.testmod(timing_wheel)
    assert result.attempted > 5 and result.failed == 0


def test_tasks_expire_in_deadline_order_at_their_deadline() -> None:
    clock, timer = make()
    t0 = clock.monotonic_ms()
    log: list = []
    delays = [37, 1, 250, 19, 20, 21, 399, 400, 401, 5, 0, 1234, 8000, 7999]
    for d in delays:
        timer.add(Recorder(d, d, clock, log))
    assert log == [(0, t0)]  # already due: ran inside add()
    assert timer.size() == len(delays) - 1
    for _ in range(9000):
        clock.advance(1)
    assert [name for name, _ in log] == sorted(delays)
    assert all(at - t0 == name for name, at in log)
    assert timer.size() == 0


def test_overflow_wheels_expire_in_order_and_on_time() -> None:
    # Gaps of 1 ms, 25 ms, 500 ms, 10 s and 200 s need levels 1 through 5
    # (intervals 20 ms, 400 ms, 8 s, 160 s, 3200 s at tick 1 ms, size 20).
    clock, timer = make()
    t0 = clock.monotonic_ms()
    deadlines = list(itertools.accumulate([1, 25, 500, 10_000, 200_000]))
    log: list = []
    for d in reversed(deadlines):
        timer.add(Recorder(d, d, clock, log))
    assert len(timer.wheel.levels()) == 5
    assert [w.tick_ms for w in timer.wheel.levels()] == [1, 20, 400, 8000, 160_000]
    clock.advance(deadlines[-1] + 1000)  # one big step: callbacks fire at their own instants
    assert log == [(d, t0 + d) for d in deadlines]


def test_overflow_in_small_steps_never_runs_early() -> None:
    clock, timer = make(start_mono_ms=1_234_567)
    t0 = clock.monotonic_ms()
    deadlines = [1, 26, 526, 10_526, 210_526]
    log: list = []
    for d in deadlines:
        timer.add(Recorder(d, d, clock, log))
    while len(log) < len(deadlines):
        clock.advance(97)
        for name, at in log:
            assert at == t0 + name
    assert [n for n, _ in log] == deadlines


def test_cancel_removes_from_bucket_at_once() -> None:
    clock, timer = make()
    log: list = []
    keep = Recorder(50, "keep", clock, log)
    gone = Recorder(50, "gone", clock, log)
    timer.add(keep)
    timer.add(gone)
    bucket = gone._entry.list
    assert bucket is keep._entry.list and len(bucket) == 2
    gone.cancel()
    assert len(bucket) == 1 and timer.size() == 1
    assert gone._entry is None
    gone.cancel()  # idempotent
    clock.advance(1000)
    assert [n for n, _ in log] == ["keep"]
    assert timer.size() == 0


def test_readding_a_task_replaces_its_entry() -> None:
    clock, timer = make()
    log: list = []
    task = Recorder(300, "t", clock, log)
    timer.add(task)
    first = task._entry
    task.delay_ms = 40
    timer.add(task)
    assert first.list is None and first.cancelled and timer.size() == 1
    clock.advance(1000)
    assert log == [("t", 1_000_040)]


class Periodic(TimerTask):
    """Re-adds itself from run(), i.e. from inside the timer's flush."""

    __slots__ = ("timer", "clock", "log", "left")

    def __init__(self, delay_ms: int, timer: Timer, clock: ManualClock, log: list, times: int) -> None:
        super().__init__(delay_ms)
        self.timer, self.clock, self.log, self.left = timer, clock, log, times

    def run(self) -> None:
        self.log.append(self.clock.monotonic_ms())
        self.left -= 1
        if self.left:
            self.timer.add(self)


def test_readding_from_run_after_flush() -> None:
    clock, timer = make()
    log: list = []
    timer.add(Periodic(30, timer, clock, log, times=5))
    timer.add(Periodic(450, timer, clock, log, times=2))
    clock.advance(2000)
    assert log == [1_000_030, 1_000_060, 1_000_090, 1_000_120, 1_000_150, 1_000_450, 1_000_900]
    assert timer.size() == 0 and clock.pending_timers == 0


class AddsOnRun(TimerTask):
    def __init__(self, delay_ms: int, timer: Timer, then: TimerTask) -> None:
        super().__init__(delay_ms)
        self.timer, self.then = timer, then

    def run(self) -> None:
        self.timer.add(self.then)


def test_add_from_run_while_the_timer_lags_keeps_pending_buckets_intact() -> None:
    # The loop was busy: when the timer finally advances, buckets 5 and 15 are
    # both overdue. Task A (bucket 5) adds C (15 ms from now = 35, the slot of
    # bucket 15 one turn later). The wheel must not jump to now under the
    # flush, or C would take over bucket 15 and B would wait until 35.
    clock, timer = make(start_mono_ms=0)
    log: list = []
    c = Recorder(15, "C", clock, log)
    timer.add(AddsOnRun(5, timer, c))
    timer.add(Recorder(15, "B", clock, log))
    clock._elapsed_ns += 20_000_000  # time passes without the armed callback firing
    assert timer.advance_clock() is True
    assert log == [("B", 20)]
    clock.advance(15)
    assert log == [("B", 20), ("C", 35)]


def test_already_expired_task_runs_inside_add_even_after_idle_time() -> None:
    clock, timer = make()
    log: list = []
    timer.add(Recorder(500, "later", clock, log))
    clock.advance(10_000)  # the wheel has not been touched for a long time
    clock.advance(123)
    timer.add(Recorder(0, "zero", clock, log))
    timer.add(Recorder(-5, "negative", clock, log))
    assert [n for n, _ in log] == ["later", "zero", "negative"]
    assert timer.size() == 0 and clock.pending_timers == 0


def test_exactly_one_clock_handle_armed_for_the_earliest_bucket() -> None:
    clock, timer = make()
    log: list = []
    assert clock.pending_timers == 0
    tasks = [Recorder(d, d, clock, log) for d in (700, 5, 90, 3, 20_000, 64)]
    for t in tasks:
        timer.add(t)
        assert clock.pending_timers == 1
    assert timer.queued_buckets > 1
    while timer.size():
        clock.advance(1)
        assert clock.pending_timers == (1 if timer.queued_buckets else 0)
    assert clock.pending_timers == 0 and timer.queued_buckets == 0
    # Cancelled tasks leave empty buckets queued (as in Kafka) until their time; then nothing is armed.
    t = Recorder(50, "x", clock, log)
    timer.add(t)
    t.cancel()
    assert timer.size() == 0 and clock.pending_timers == 1
    clock.advance(50)
    assert clock.pending_timers == 0 and log[-1][0] != "x"


class CountingClock(ManualClock):
    def __init__(self) -> None:
        super().__init__()
        self.scheduled = 0

    def call_later(self, delay_ms, callback):
        self.scheduled += 1
        return super().call_later(delay_ms, callback)


def test_no_busy_ticking() -> None:
    clock = CountingClock()
    timer = Timer(clock)
    fired: list = []
    timer.add(Recorder(10_000, "ten seconds", clock, fired))
    clock.advance(20_000)
    assert fired == [("ten seconds", 1_010_000)]
    # One wake-up per level the task cascades through, not one per millisecond.
    assert clock.scheduled <= len(timer.wheel.levels()) == 4


def test_advance_clock_direct_and_close() -> None:
    clock, timer = make()
    log: list = []
    timer.add(Recorder(5, "a", clock, log))
    assert timer.advance_clock() is False
    clock._elapsed_ns += 5_000_000  # move time without firing the armed callback
    assert timer.advance_clock() is True and log == [("a", 1_000_005)]
    timer.add(Recorder(5, "b", clock, log))
    timer.close()
    assert clock.pending_timers == 0
    clock.advance(100)
    assert [n for n, _ in log] == ["a"]


def test_failing_task_does_not_stop_the_others() -> None:
    clock, timer = make()
    log: list = []

    class Boom(TimerTask):
        def run(self) -> None:
            raise RuntimeError("boom")

    timer.add(Boom(10))
    timer.add(Recorder(10, "after", clock, log))
    clock.advance(10)
    assert log == [("after", 1_000_010)]


def test_wheel_add_refuses_expired_and_cancelled() -> None:
    queued: list = []
    wheel = TimingWheel(1, 20, 100, TaskCounter(), queued.append)
    t = Recorder(0, "x", ManualClock(), [])
    assert wheel.add(TimerTaskEntry(t, 100)) is False  # within the current tick
    entry = TimerTaskEntry(t, 150)
    t.cancel()
    assert wheel.add(entry) is False
    t2 = Recorder(0, "y", ManualClock(), [])
    assert wheel.add(TimerTaskEntry(t2, 101)) is True and len(queued) == 1
    assert queued[0].set_expiration(101) is False and queued[0].set_expiration(102) is True


def test_timer_on_the_asyncio_loop_with_system_clock() -> None:
    async def main() -> list:
        clock = SystemClock(asyncio.get_running_loop())
        timer = Timer(clock)
        log: list = []
        start = clock.monotonic_ms()
        for d in (30, 5, 15, 0):
            timer.add(Recorder(d, d, clock, log))  # type: ignore[arg-type]
        while timer.size():
            await asyncio.sleep(0.005)
        timer.close()
        return [(n, at - start) for n, at in log]

    log = asyncio.run(main())
    assert [n for n, _ in log] == [0, 5, 15, 30]
    assert all(elapsed >= n for n, elapsed in log)


# -- model-based test against a heapq reference ---------------------------------------------------

class HeapTimer:
    """The reference: a heap of (deadline, seq, id) with cancelled flags (lazy deletion)."""

    def __init__(self) -> None:
        self.heap: list[tuple[int, int, int]] = []
        self.cancelled: set[int] = set()
        self.fired: list[int] = []
        self.seq = itertools.count()

    def add(self, task_id: int, deadline_ms: int) -> None:
        heapq.heappush(self.heap, (deadline_ms, next(self.seq), task_id))

    def cancel(self, task_id: int) -> None:
        self.cancelled.add(task_id)

    def advance(self, now_ms: int) -> None:
        while self.heap and self.heap[0][0] <= now_ms:
            _, _, task_id = heapq.heappop(self.heap)
            if task_id not in self.cancelled:
                self.fired.append(task_id)


delays = st.one_of(st.integers(-3, 25), st.integers(0, 450), st.integers(0, 9000), st.integers(0, 200_000))
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), delays),
        st.tuples(st.just("cancel"), st.integers(0, 200)),
        st.tuples(st.just("advance"), st.one_of(st.integers(0, 30), st.integers(0, 3000), st.integers(0, 60_000))),
        st.tuples(st.just("poll"), st.just(0)),
    ),
    max_size=80,
)


@given(steps=steps, wheel_size=st.sampled_from([2, 3, 8, 20]), start_mono_ms=st.integers(0, 10_000_000))
def test_wheel_matches_heap_timer(steps, wheel_size, start_mono_ms) -> None:
    clock, timer = make(tick_ms=1, wheel_size=wheel_size, start_mono_ms=start_mono_ms)
    ref = HeapTimer()
    log: list = []
    tasks: list[Recorder] = []
    deadline: dict[int, int] = {}
    for op, arg in steps:
        now = clock.monotonic_ms()
        if op == "add":
            task_id = len(tasks)
            task = Recorder(arg, task_id, clock, log)
            tasks.append(task)
            deadline[task_id] = now + max(arg, 0)  # a negative delay is due now
            ref.add(task_id, now + arg)
            timer.add(task)
        elif op == "cancel" and tasks:
            task_id = arg % len(tasks)
            tasks[task_id].cancel()
            ref.cancel(task_id)
        elif op == "advance":
            clock.advance(arg)
        else:
            timer.advance_clock()
        ref.advance(clock.monotonic_ms())
        assert sorted(n for n, _ in log) == sorted(ref.fired)
        assert timer.size() == sum(
            1 for i in range(len(tasks)) if i not in ref.cancelled and i not in set(ref.fired))
        # Each runs no earlier than its deadline and no later than deadline + tick.
        for task_id, at in log:
            assert deadline[task_id] <= at <= deadline[task_id] + 1
        assert clock.pending_timers == (1 if timer.queued_buckets else 0)
    clock.advance(250_000)
    ref.advance(clock.monotonic_ms())
    assert sorted(n for n, _ in log) == sorted(ref.fired)
    assert len(log) == len(set(n for n, _ in log))  # nothing runs twice
    assert timer.size() == 0 and clock.pending_timers == 0


@given(
    delay_list=st.lists(st.integers(0, 5000), min_size=1, max_size=40),
    tick_ms=st.sampled_from([2, 5, 10]),
    start_mono_ms=st.integers(0, 1_000_000),
)
def test_coarse_tick_runs_within_the_tick_of_the_deadline(delay_list, tick_ms, start_mono_ms) -> None:
    # Kafka semantics for tick_ms > 1: a task runs when the tick holding its deadline starts.
    clock, timer = make(tick_ms=tick_ms, start_mono_ms=start_mono_ms)
    t0 = clock.monotonic_ms()
    log: list = []
    for i, d in enumerate(delay_list):
        timer.add(Recorder(d, i, clock, log))
    clock.advance(6000)
    assert sorted(n for n, _ in log) == list(range(len(delay_list)))
    for i, at in log:
        dl = t0 + delay_list[i]
        assert dl - tick_ms < at <= dl
        assert at == max(t0, dl - dl % tick_ms)


def test_heap_timer_reference_sanity() -> None:
    ref = HeapTimer()
    ref.add(1, 10)
    ref.add(2, 5)
    ref.cancel(1)
    ref.advance(20)
    assert ref.fired == [2]


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-q"])
