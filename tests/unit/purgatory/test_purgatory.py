"""DelayedOperation / DelayedOperationPurgatory (Kafka's DelayedOperation.scala contract) on the ManualClock."""

from __future__ import annotations

import pytest

from mockbroker.common.clock import ManualClock
from mockbroker.purgatory import DelayedOperation, DelayedOperationPurgatory, Timer


class FakeOperation(DelayedOperation):
    """Completes once ``ready`` is set; counts every callback."""

    def __init__(self, delay_ms: int, ready: bool = False, ready_on_try: int | None = None) -> None:
        super().__init__(delay_ms)
        self.ready = ready
        self.ready_on_try = ready_on_try
        self.tries = 0
        self.completions = 0
        self.expirations = 0

    def try_complete(self) -> bool:
        self.tries += 1
        if self.ready or self.tries == self.ready_on_try:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.completions += 1

    def on_expiration(self) -> None:
        assert self.completions == 1  # Kafka: onComplete runs before onExpiration
        self.expirations += 1


def make(purge_interval: int = 1000) -> tuple[ManualClock, DelayedOperationPurgatory]:
    clock = ManualClock()
    return clock, DelayedOperationPurgatory("Produce", Timer(clock), purge_interval=purge_interval)


def test_completes_immediately_without_watching() -> None:
    clock, p = make()
    op = FakeOperation(100, ready=True)
    assert p.try_complete_else_watch(op, [("t", 0)]) is True
    assert (op.completions, op.tries, op.is_completed) == (1, 1, True)
    assert p.gauges() == {"PurgatorySize": 0, "NumDelayedOperations": 0}
    assert clock.pending_timers == 0


def test_completes_on_the_second_try_after_watching() -> None:
    clock, p = make()
    op = FakeOperation(100, ready_on_try=2)
    assert p.try_complete_else_watch(op, [("t", 0)]) is True
    assert op.completions == 1
    # Watched but never timed, as in Kafka: it stays listed until an event or a purge.
    assert p.gauges() == {"PurgatorySize": 1, "NumDelayedOperations": 0}
    assert p.check_and_complete(("t", 0)) == 0
    assert p.watched() == 0


def test_completes_on_check_and_complete() -> None:
    clock, p = make()
    op = FakeOperation(100)
    assert p.try_complete_else_watch(op, [("t", 0)]) is False
    assert op.tries == 2 and not op.is_completed
    assert p.gauges() == {"PurgatorySize": 1, "NumDelayedOperations": 1}
    assert p.check_and_complete(("t", 0)) == 0  # not ready yet: stays watched
    assert p.gauges() == {"PurgatorySize": 1, "NumDelayedOperations": 1}
    op.ready = True
    assert p.check_and_complete(("t", 1)) == 0  # another key
    assert p.check_and_complete(("t", 0)) == 1
    assert (op.completions, op.expirations) == (1, 0)
    assert p.gauges() == {"PurgatorySize": 0, "NumDelayedOperations": 0}
    clock.advance(1000)
    assert (op.completions, op.expirations) == (1, 0)
    assert clock.pending_timers <= 1  # an emptied bucket may stay queued until its time
    clock.advance(1000)
    assert clock.pending_timers == 0


def test_expires_through_the_timer_once() -> None:
    clock, p = make()
    op = FakeOperation(100)
    p.try_complete_else_watch(op, [("t", 0)])
    clock.advance(99)
    assert op.completions == 0
    clock.advance(1)
    assert (op.completions, op.expirations, op.is_completed) == (1, 1, True)
    assert p.num_delayed() == 0
    assert p.watched() == 1  # completed but still watched until an event or a purge
    op.ready = True
    assert op.force_complete() is False
    assert p.check_and_complete(("t", 0)) == 0
    clock.advance(1000)
    assert (op.completions, op.expirations, p.watched()) == (1, 1, 0)


def test_force_complete_first_caller_wins() -> None:
    clock, p = make()
    op = FakeOperation(50)
    p.try_complete_else_watch(op, ["k"])
    assert op.force_complete() is True
    assert op.force_complete() is False
    assert p.num_delayed() == 0  # left the timer at once
    clock.advance(100)
    assert (op.completions, op.expirations) == (1, 0)
    assert op.safe_try_complete() is False


def test_operation_watched_under_several_keys_completes_once() -> None:
    clock, p = make()
    keys = [("t", 0), ("t", 1), "group-a"]
    op = FakeOperation(500)
    other = FakeOperation(500)
    p.try_complete_else_watch(op, keys)
    p.try_complete_else_watch(other, [("t", 1)])
    assert p.gauges() == {"PurgatorySize": 4, "NumDelayedOperations": 2}
    assert p.estimated_total == 2  # once per operation, not per key
    op.ready = True
    assert p.check_and_complete(("t", 1)) == 1
    assert p.check_and_complete(("t", 0)) == 0
    assert p.check_and_complete("group-a") == 0
    assert op.completions == 1
    assert p.gauges() == {"PurgatorySize": 1, "NumDelayedOperations": 1}
    clock.advance(500)
    assert (op.completions, op.expirations) == (1, 0)
    assert (other.completions, other.expirations) == (1, 1)


def test_cancel_for_key() -> None:
    clock, p = make()
    a = FakeOperation(100)
    b = FakeOperation(100)
    done = FakeOperation(100)
    p.try_complete_else_watch(a, [("t", 0)])
    p.try_complete_else_watch(b, [("t", 0), ("t", 1)])
    p.try_complete_else_watch(done, [("t", 0)])
    done.force_complete()
    cancelled = p.cancel_for_key(("t", 0))
    assert cancelled == [a, b]
    assert p.cancel_for_key(("t", 0)) == []
    # Kafka's cancel only stops the timer; it does not complete the operation.
    assert not a.is_completed and not b.is_completed
    assert p.gauges() == {"PurgatorySize": 1, "NumDelayedOperations": 0}
    clock.advance(200)
    assert (a.completions, a.expirations, b.completions, b.expirations) == (0, 0, 0, 0)
    b.ready = True
    assert p.check_and_complete(("t", 1)) == 1  # still watched under its other key


def test_purge_by_estimated_count_after_completions() -> None:
    clock, p = make(purge_interval=10)
    ops = [FakeOperation(10_000) for _ in range(100)]
    for i, op in enumerate(ops):
        p.try_complete_else_watch(op, [("a", i), ("b", i)])
    assert p.gauges() == {"PurgatorySize": 200, "NumDelayedOperations": 100}
    assert p.estimated_total == 100 and p.purges == 0
    sizes = []
    for i, op in enumerate(ops):
        op.ready = True
        assert p.check_and_complete(("a", i)) == 1  # leaves ("b", i) holding a completed op
        sizes.append(p.watched())
    # E - num_delayed passes 10 at every 11th completion: 9 purges, each
    # resetting E to num_delayed and emptying the completed "b" lists.
    assert p.purges == 9
    # Just before the first purge: 90 "a" + 100 "b" entries; at it: 89 + 89.
    assert sizes[9] == 190 and sizes[10] == 178
    # Completed-but-watched entries never exceed the interval by more than one.
    assert all(size - 2 * (99 - i) <= 10 + 1 for i, size in enumerate(sizes))
    assert p.gauges() == {"PurgatorySize": 1, "NumDelayedOperations": 0}
    assert sorted(p.watch_keys()) == [("b", 99)]
    assert all(op.completions == 1 and op.expirations == 0 for op in ops)


def test_no_purge_while_operations_are_pending() -> None:
    clock, p = make(purge_interval=10)
    for i in range(100):
        p.try_complete_else_watch(FakeOperation(10_000), [("t", i % 7)])
    # All pending: E == num_delayed, nothing to purge however many are watched.
    assert p.purges == 0 and p.watched() == 100


def test_purge_after_expirations_on_quiet_keys() -> None:
    # KAFKA-664: operations that expire on keys that never see another event
    # must not stay watched forever; the check runs after the timer advances.
    clock, p = make(purge_interval=10)
    ops = [FakeOperation(100 + i) for i in range(50)]
    for i, op in enumerate(ops):
        p.try_complete_else_watch(op, [("quiet", i)])
    assert p.watched() == 50
    clock.advance(110)
    assert p.purges == 1 and p.watched() == 39  # purged the 11 expired when 11 > 10
    clock.advance(100)
    assert all(op.expirations == 1 for op in ops)
    assert p.watched() <= 10
    assert p.gauges()["NumDelayedOperations"] == 0


def test_watch_during_completion_callback_is_kept() -> None:
    clock, p = make()
    follow_up = FakeOperation(100)

    class Chained(FakeOperation):
        def on_complete(self) -> None:
            super().on_complete()
            p.try_complete_else_watch(follow_up, [("t", 0)])

    first = Chained(100)
    p.try_complete_else_watch(first, [("t", 0)])
    first.ready = True
    assert p.check_and_complete(("t", 0)) == 1
    assert p.watched() == 1 and p.num_delayed() == 1
    follow_up.ready = True
    assert p.check_and_complete(("t", 0)) == 1


def test_empty_watch_keys_rejected() -> None:
    clock, p = make()
    with pytest.raises(AssertionError):
        p.try_complete_else_watch(FakeOperation(10), [])


def test_shutdown_disarms_the_timer() -> None:
    clock, p = make()
    op = FakeOperation(10)
    p.try_complete_else_watch(op, ["k"])
    p.shutdown()
    clock.advance(100)
    assert op.expirations == 0 and clock.pending_timers == 0
