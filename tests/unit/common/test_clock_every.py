"""The one periodic scheduler (mockbroker.clock.every, Kafka's KafkaScheduler with a period) on the
ManualClock: one timer per task however long it runs, a failing run logged and the schedule kept,
cancel for good; the cluster's and the transaction coordinator's housekeeping use it."""

from __future__ import annotations

import logging

from mockbroker import ManualClock, MockBroker
from mockbroker.common.clock import every


def test_a_task_runs_every_interval_with_one_timer():
    clock = ManualClock()
    start = clock.monotonic_ms()
    runs: list[int] = []
    task = every(clock, 15_000, lambda: runs.append(clock.monotonic_ms()), "t")
    clock.advance(14_999)
    assert runs == []
    clock.advance(30 * 24 * 3600 * 1000)  # thirty days
    assert len(runs) == 30 * 24 * 240 == task.runs
    assert runs[:3] == [start + 15_000, start + 30_000, start + 45_000]  # at its own instants
    assert clock.pending_timers == 1  # not one handle per tick


def test_a_failing_run_is_logged_and_the_schedule_kept(caplog):
    clock = ManualClock()
    calls = []

    def task() -> None:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("boom")

    every(clock, 100, task, "flaky")
    with caplog.at_level(logging.ERROR, logger="mockbroker.clock"):
        clock.advance(500)
    assert len(calls) == 5
    assert [r.getMessage() for r in caplog.records] == ["Uncaught exception in scheduled task 'flaky'"]


def test_cancel_stops_it_for_good():
    clock = ManualClock()
    calls = []
    task = every(clock, 100, lambda: calls.append(1), "t")
    clock.advance(250)
    task.cancel()
    clock.advance(10_000)
    assert len(calls) == 2 and clock.pending_timers == 0


def test_cancelled_from_within_its_own_run():
    clock = ManualClock()
    box = {}
    box["task"] = every(clock, 100, lambda: box["task"].cancel(), "once")
    clock.advance(1000)
    assert box["task"].runs == 1 and clock.pending_timers == 0


def test_the_broker_keeps_one_handle_per_housekeeping_task_over_a_month():
    """The cluster's and the transaction coordinator's periodic tasks: as many handles after a month on
    the manual clock as at the start (each used to append a handle per tick: ~170k for a 15 s task)."""
    clock = ManualClock()
    with MockBroker(clock=clock) as b:
        def handles(c) -> tuple[int, int]:
            return len(c._timers), len(c.txn._timers)

        before = b.call(handles)
        b.advance(30 * 24 * 3600 * 1000)
        after = b.call(handles)
    assert after == before and before[0] >= 5 and before[1] == 2, (before, after)
