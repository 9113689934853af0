"""The delivery state of in-flight records of a share-partition.

Mirrors Kafka 4.4's ``RecordState``, ``DeliveryCountOps``, ``InFlightState``, ``InFlightBatch`` and
``AcquisitionLockTimerTask`` (``org.apache.kafka.server.share.fetch``): a batch of records acquired
together keeps one state until a request touches part of it, then a state per offset
(``maybe_initialize_offset_state``).  A state moves through ``start_transition`` (the update is kept
with what to roll back to) and ``complete_transition`` once the persister answered, as Kafka's
share-partition does around its writes to the share coordinator.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from ..purgatory import Timer, TimerTask

EMPTY_MEMBER_ID = ""


class RecordState(enum.IntEnum):
    """RecordState: the ids are the ones persisted (the share coordinator's state batches)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3
    ARCHIVED = 4

    def validate_transition(self, new: RecordState) -> RecordState:
        """RecordState.validateTransition: None when the move is illegal (Kafka throws)."""
        if self is new or self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
            raise ValueError(f"The state transition is invalid from {self.name} to {new.name}")
        if self is RecordState.AVAILABLE and new is not RecordState.ACQUIRED:
            raise ValueError("The state can only be transitioned to ACQUIRED from AVAILABLE")
        return new


TERMINAL = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})


class DeliveryCountOps(enum.Enum):
    INCREASE = 1
    DECREASE = -1
    NO_OP = 0


# AcquisitionLockTimeoutHandler: (member id, first offset, last offset, the task)
TimeoutHandler = Callable[[str, int, int, "AcquisitionLock"], None]


class AcquisitionLock(TimerTask):
    """AcquisitionLockTimerTask: the records' lock; when it runs they go back to Available (or are
    archived past the delivery count limit) through the share-partition's handler."""

    __slots__ = ("expiration_ms", "member_id", "first_offset", "last_offset", "handler", "expired", "cancelled")

    def __init__(self, now_ms: int, delay_ms: int, member_id: str, first_offset: int, last_offset: int,
                 handler: TimeoutHandler) -> None:
        super().__init__(delay_ms)
        self.expiration_ms = now_ms + delay_ms
        self.member_id = member_id
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.handler = handler
        self.expired = False
        self.cancelled = False

    def run(self) -> None:
        self.expired = True
        self.handler(self.member_id, self.first_offset, self.last_offset, self)

    def cancel(self) -> None:
        self.cancelled = True
        super().cancel()


class InFlightState:
    """InFlightState: one record's (or one whole batch's) state, delivery count, owner and lock."""

    __slots__ = ("state", "delivery_count", "member_id", "lock", "_rollback", "terminal")

    def __init__(self, state: RecordState, delivery_count: int, member_id: str,
                 lock: AcquisitionLock | None = None) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.lock = lock
        self._rollback: tuple[InFlightState, int] | None = None
        self.terminal = False

    def __repr__(self) -> str:
        return f"InFlightState({self.state.name}, deliveries={self.delivery_count}, member={self.member_id!r})"

    def set_lock(self, lock: AcquisitionLock) -> None:
        if self.lock is not None:
            raise ValueError("Existing acquisition lock timeout exists, cannot override.")
        self.lock = lock

    def clear_lock(self) -> None:
        """cancelAndClearAcquisitionLockTimeoutTask."""
        if self.lock is not None:
            self.lock.cancel()
            self.lock = None

    @property
    def in_transition(self) -> bool:
        return self._rollback is not None

    def try_update(self, new: RecordState, ops: DeliveryCountOps, max_delivery_count: int,
                   member_id: str) -> InFlightState | None:
        """tryUpdateState: Available past the delivery count limit becomes Archived (no DLQ here)."""
        if self.in_transition:
            return None
        if new is RecordState.AVAILABLE and ops is not DeliveryCountOps.DECREASE \
                and self.delivery_count >= max_delivery_count:
            new = RecordState.ARCHIVED
        try:
            self.state = self.state.validate_transition(new)
        except ValueError:
            return None
        if new is not RecordState.ARCHIVED:
            self.delivery_count += ops.value
        self.member_id = member_id
        return self

    def archive(self) -> None:
        self.terminal = True
        self.state = RecordState.ARCHIVED
        self.member_id = EMPTY_MEMBER_ID
        self.clear_lock()

    def start_transition(self, new: RecordState, ops: DeliveryCountOps, max_delivery_count: int,
                         member_id: str) -> InFlightState | None:
        before = InFlightState(self.state, self.delivery_count, self.member_id, self.lock)
        updated = self.try_update(new, ops, max_delivery_count, member_id)
        if updated is not None:
            self._rollback = (before, max_delivery_count)
        return updated

    def complete_transition(self, commit: bool) -> None:
        rollback = self._rollback
        self._rollback = None
        if commit or self.terminal or rollback is None:
            self.clear_lock()
            return
        previous, max_delivery_count = rollback
        if self.lock is not None and self.lock.expired:
            self.state = RecordState.ARCHIVED if previous.delivery_count >= max_delivery_count \
                else RecordState.AVAILABLE
            self.member_id = EMPTY_MEMBER_ID
            self.clear_lock()
        else:
            self.state = previous.state
            self.member_id = previous.member_id


class InFlightBatch:
    """InFlightBatch: offsets ``first``..``last`` with one state, or with a state per offset once a
    request touched part of the batch (``offsets``, ascending)."""

    __slots__ = ("first", "last", "batch", "offsets")

    def __init__(self, member_id: str, first: int, last: int, state: RecordState, delivery_count: int,
                 lock: AcquisitionLock | None) -> None:
        self.first = first
        self.last = last
        self.batch: InFlightState | None = InFlightState(state, delivery_count, member_id, lock)
        self.offsets: dict[int, InFlightState] | None = None

    def __repr__(self) -> str:
        return f"InFlightBatch({self.first}-{self.last}, {self.batch if self.offsets is None else self.offsets})"

    @property
    def state(self) -> InFlightState:
        assert self.batch is not None, "the batch state is not kept: the offset states are"
        return self.batch

    def initialize_offset_states(self, timer: Timer, now_ms: int, make_lock: Callable[[str, int, int, int],
                                                                                     AcquisitionLock]) -> None:
        """maybeInitializeOffsetStateUpdate(): each offset gets the batch's state, and its own lock
        for what is left of the batch's."""
        if self.offsets is not None:
            return
        batch = self.state
        offsets: dict[int, InFlightState] = {}
        for offset in range(self.first, self.last + 1):
            lock = None
            if batch.lock is not None:
                lock = make_lock(batch.member_id, offset, offset, batch.lock.expiration_ms - now_ms)
                timer.add(lock)
            offsets[offset] = InFlightState(batch.state, batch.delivery_count, batch.member_id, lock)
        batch.clear_lock()
        self.offsets = offsets
        self.batch = None

    def initialize_offset_states_up_to(self, target: int, delay_ms: int, timer: Timer,
                                       make_lock: Callable[[str, int, int, int], AcquisitionLock]) -> None:
        """maybeInitializeOffsetStateUpdate(targetOffset, delayMs): KIP-1206's record_limit -- the
        offsets up to ``target`` acquired, each with its lock, the rest Available again."""
        if self.offsets is not None:
            return
        batch = self.state
        offsets: dict[int, InFlightState] = {}
        for offset in range(self.first, self.last + 1):
            if offset <= target:
                lock = make_lock(batch.member_id, offset, offset, delay_ms)
                timer.add(lock)
                offsets[offset] = InFlightState(batch.state, batch.delivery_count, batch.member_id, lock)
            else:
                offsets[offset] = InFlightState(RecordState.AVAILABLE, batch.delivery_count - 1, EMPTY_MEMBER_ID)
        self.offsets = offsets
        self.batch = None

    def states(self) -> list[tuple[int, int, InFlightState]]:
        """(first, last, state) of the batch as one, or per offset."""
        if self.offsets is None:
            return [(self.first, self.last, self.state)]
        return [(o, o, s) for o, s in self.offsets.items()]
