"""The purgatory: delayed operations on a hierarchical timing wheel.

Mirrors Kafka's ``org.apache.kafka.server.util.timer`` (``TimerTask``,
``TimerTaskEntry``, ``TimerTaskList``, ``TimingWheel``, ``SystemTimer`` as
``Timer``) and ``DelayedOperation`` / ``DelayedOperationPurgatory``. All of it
runs on the broker's single asyncio event loop, without locks.
"""

from __future__ import annotations

from .delayed_operation import DelayedDeadline, DelayedOperation, DelayedOperationPurgatory, no_callback
from .timer import Timer
from .timing_wheel import (
    TaskCounter,
    TimerTask,
    TimerTaskEntry,
    TimerTaskList,
    TimingWheel,
)

__all__ = [
    "DelayedDeadline",
    "DelayedOperation",
    "DelayedOperationPurgatory",
    "TaskCounter",
    "Timer",
    "TimerTask",
    "TimerTaskEntry",
    "TimerTaskList",
    "TimingWheel",
    "no_callback",
]
