"""One share-partition: a share group's delivery state of one topic partition, on its leader.

Mirrors Kafka 4.4's ``SharePartition`` (``kafka.server.share``):

* the share-partition start and end offsets (SPSO/SPEO, ``start_offset``/``end_offset``) and the
  in-flight batches between them (``cached``, by first offset), loaded from the share coordinator
  (``SharePersister.read``) on the first fetch; a start offset of -1 there is resolved by the group's
  share.auto.offset.reset (latest by default, earliest, or by_duration);
* ``acquire``: the records a fetch read become Acquired by the member under a lock of the group's
  share.record.lock.duration.ms (on the broker's timing wheel), their delivery count increased;
  at most share.partition.max.record.locks in flight; records on their last delivery attempt go
  alone, records past half the limit are throttled (``acquireSubsetBatchRecords``); KIP-1206's
  record_limit acquires at most max_records, splitting a batch; read_committed archives the
  batches of aborted transactions (``filterAbortedTransactionalAcquiredRecords``);
* ``acknowledge``: ACCEPT (Acknowledged), RELEASE (Available again, or Archived at the delivery
  count limit), REJECT (Archived), GAP (Archived) and KIP-1222's RENEW (a fresh lock), for whole
  batches or per offset, by the member holding them (else INVALID_RECORD_STATE), each written to the
  share coordinator before it holds (a refused write rolls it back);
* a lock that expires, or a member's session that ends (``release_acquired_records``), returns its
  records to Available (Archived past share.delivery.count.limit);
* the start offset moves past every terminal record at the front, and to the log start offset when
  retention or DeleteRecords moves that (``update_cache_and_offsets``).

Not simulated: the DLQ (ARCHIVING, KIP-1191's errors.deadletterqueue.topic.name) and remote storage.
Over 500 lines on purpose: as Kafka's class, acquiring, acknowledging, releasing and the lock
timeouts change the same in-flight batches and offsets, each a few methods.
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from protocol.errors import ErrorCode

from ..purgatory import Timer
from .inflight import (
    EMPTY_MEMBER_ID,
    TERMINAL,
    AcquisitionLock,
    DeliveryCountOps,
    InFlightBatch,
    InFlightState,
    RecordState,
)
from .persister import SharePersister, StateBatch

log = logging.getLogger("mockbroker.share")

# AcknowledgeType ids, and the record state each leads to (ACK_TYPE_TO_RECORD_STATE); 0 is a gap
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
ACK_STATE = {GAP: RecordState.ARCHIVED, ACCEPT: RecordState.ACKNOWLEDGED, RELEASE: RecordState.AVAILABLE,
             REJECT: RecordState.ARCHIVED}
RECORD_LIMIT = 1  # ShareAcquireMode.RECORD_LIMIT (0: BATCH_OPTIMIZED)


class ShareError(Exception):
    """An error a share-partition answers with (Kafka's exceptions, as their error codes)."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message


class State(enum.Enum):
    EMPTY = "EMPTY"
    ACTIVE = "ACTIVE"
    FAILED = "FAILED"
    FENCED = "FENCED"


@dataclass(slots=True)
class FetchedBatch:
    """What acquiring needs of one record batch a fetch read (its offsets, producer, flags)."""

    base_offset: int
    last_offset: int
    producer_id: int
    transactional: bool
    control_abort: bool  # an ABORT marker (a control batch whose first record is one)
    size_bytes: int


@dataclass(slots=True)
class Acquired:
    """AcquiredRecords: a range of offsets acquired together, with their delivery count."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(slots=True)
class GroupSettings:
    """What a share-partition reads of its group's configs at each use (ShareGroupConfigProvider:
    the group's value, else the broker's)."""

    record_lock_duration_ms: Callable[[], int]
    delivery_count_limit: Callable[[], int]
    max_record_locks: Callable[[], int]
    renew_enabled: Callable[[], bool]
    auto_offset_reset: Callable[[], str]


@dataclass(slots=True)
class _PersisterBatch:
    updated: InFlightState
    batch: StateBatch


@dataclass(slots=True)
class Offsets:
    """What the share-partition needs of the log it serves (PartitionMetadataProvider)."""

    earliest: Callable[[], int]
    latest: Callable[[], int]
    for_timestamp: Callable[[int], int]
    now_ms: Callable[[], int]


@dataclass(slots=True)
class _GapWindow:
    end_offset: int
    gap_start: int


def throttle_limit(max_delivery_count: int) -> int:
    """throttleRecordsDeliveryLimit: past half the delivery count limit records go a few at a time."""
    return max(2, -(-max_delivery_count // 2))


class SharePartition:
    def __init__(self, group_id: str, topic: str, topic_id: uuid.UUID, partition: int, leader_epoch: int,
                 settings: GroupSettings, timer: Timer, persister: SharePersister, offsets: Offsets,
                 notify: Callable[[], None]) -> None:
        self.group_id = group_id
        self.topic = topic
        self.topic_id = topic_id
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.settings = settings
        self.timer = timer
        self.persister = persister
        self.offsets = offsets
        self.notify = notify  # a delayed share fetch of the group may now complete
        self.cached: dict[int, InFlightBatch] = {}  # by first offset, ascending
        self.start_offset = 0
        self.end_offset = 0
        self.state_epoch = 0
        self.state = State.EMPTY
        self.find_next = False
        self.delivery_complete_count = 0
        self.gap: _GapWindow | None = None
        self.lock_timeouts = 0  # AcquisitionLockTimeoutPerSec, counted

    @property
    def key(self) -> tuple[str, uuid.UUID, int]:
        return self.group_id, self.topic_id, self.partition

    def __repr__(self) -> str:
        return (f"<SharePartition {self.group_id} {self.topic}-{self.partition} {self.state.value} "
                f"[{self.start_offset}, {self.end_offset}] {list(self.cached.values())}>")

    # -- loading ----------------------------------------------------------------------------------
    def maybe_initialize(self) -> ShareError | None:
        """maybeInitialize: read the persisted state once (None: ready; else why not)."""
        if self.state is State.ACTIVE:
            return None
        if self.state is State.FAILED:
            return ShareError(ErrorCode.unknown_server_error, f"Share partition failed to load {self.group_id}-"
                              f"{self.topic}-{self.partition}")
        if self.state is State.FENCED:
            return ShareError(ErrorCode.leader_not_available, "Share partition is fenced")
        r = self.persister.read(self.key, self.leader_epoch)
        if r.error is not ErrorCode.none:
            self.state = State.FAILED
            return ShareError(_persister_error(r.error), r.message)
        self.start_offset = r.start_offset if r.start_offset != -1 else self._reset_offset()
        self.state_epoch = r.state_epoch
        gap_start, previous_last = -1, self.start_offset - 1
        for first, last, state, count in r.batches:
            if first < self.start_offset or last < first:
                self.state = State.FAILED
                return ShareError(ErrorCode.unknown_server_error, "Failed to initialize the share partition")
            if gap_start == -1 and first > previous_last + 1:
                gap_start = previous_last + 1
            previous_last = last
            rs = RecordState(state)
            if rs is RecordState.ARCHIVING:
                rs = RecordState.ARCHIVED  # no DLQ here: what was being dead-lettered is archived
            self.cached[first] = InFlightBatch(EMPTY_MEMBER_ID, first, last, rs, count, None)
            if rs in TERMINAL:
                self.delivery_complete_count += last - first + 1
        if self.cached:
            self.find_next = True
            self.end_offset = self._last_cached().last
            if gap_start != -1:
                self.gap = _GapWindow(self.end_offset, gap_start)
            self._maybe_update_cached_state_and_offsets()
        else:
            self.end_offset = self.start_offset
        self.state = State.ACTIVE
        return None

    def _reset_offset(self) -> int:
        """startOffsetDuringInitialization: share.auto.offset.reset for a partition never consumed."""
        reset = self.settings.auto_offset_reset().strip().lower()
        if reset == "earliest":
            return self.offsets.earliest()
        if reset.startswith("by_duration:"):
            return self.offsets.for_timestamp(self.offsets.now_ms() - _iso_duration_ms(reset.split(":", 1)[1]))
        return self.offsets.latest()

    def fence(self) -> None:
        self.state = State.FENCED

    # -- where the next fetch reads ------------------------------------------------------------------
    def _last_cached(self) -> InFlightBatch:
        return self.cached[next(reversed(self.cached))]

    def _gap_active(self) -> bool:
        return self.gap is not None and self.gap.end_offset == self.end_offset

    def next_fetch_offset(self) -> int:
        """nextFetchOffset: the first Available offset in flight, else the one after the end."""
        if not self.find_next:
            if self.cached and self.start_offset <= self._last_cached().last:
                return self.end_offset + 1
            return self.end_offset
        if not self.cached or self.start_offset > self._last_cached().last:
            self.find_next = False
            return self.end_offset
        gap_start = self.gap.gap_start if self.gap is not None and self._gap_active() else -1
        for first, b in self.cached.items():
            if self._gap_active():
                if first > gap_start:
                    return gap_start
                gap_start = max(b.last + 1, gap_start)
            for offset, _last, s in b.states():
                if s.state is RecordState.AVAILABLE and not s.in_transition:
                    return offset
        self.find_next = False
        return self.end_offset + 1

    def in_flight_records(self) -> int:
        return self.end_offset - self.start_offset + 1 if self.cached else 0

    def can_acquire(self) -> bool:
        """canAcquireRecords."""
        if self.state is not State.ACTIVE:
            return False
        if self.next_fetch_offset() != self.end_offset + 1:
            return True
        return self.in_flight_records() < self.settings.max_record_locks()

    # -- acquiring ----------------------------------------------------------------------------------------
    def acquire(self, member_id: str, mode: int, batch_size: int, max_records: int, fetch_offset: int,
                batches: list[FetchedBatch], aborted: list[tuple[int, int]] | None) -> tuple[list[Acquired], int]:
        """acquire: the records of ``batches`` (read from ``fetch_offset``) this member may have, and
        how many; ``aborted`` are read_committed's (producer id, first offset) of aborted transactions."""
        if self.state is not State.ACTIVE or max_records <= 0 or not batches:
            return [], 0
        last_batch = batches[-1]
        if last_batch.last_offset < self.start_offset:
            return [], 0
        last_to_acquire, max_to_acquire = self._last_offset_and_max_records(fetch_offset, max_records,
                                                                          last_batch.last_offset)
        if max_to_acquire <= 0:
            return [], 0
        record_limit = mode == RECORD_LIMIT
        first_base = batches[0].base_offset
        base = first_base
        self._maybe_archive_stale(fetch_offset, base)
        floor = self._floor(base)
        if floor is None:
            if base < self.start_offset:
                base = self.start_offset
        elif floor.last >= base:
            base = floor.first
        sub = [b for f, b in self.cached.items() if min(first_base, base) <= f <= last_to_acquire]
        if not sub:
            acquired, count = self._acquire_new(member_id, batches, record_limit, base, last_to_acquire, batch_size,
                                                max_to_acquire)
            return self._filter_aborted(batches, aborted, acquired, count)
        result: list[Acquired] = []
        count = 0
        maybe_gap_start = base
        for b in sub:
            if count >= max_to_acquire:
                break
            if self._gap_active():
                if maybe_gap_start < b.first:
                    got, n = self._acquire_new(member_id, batches, record_limit, maybe_gap_start, b.first - 1,
                                               batch_size, max_to_acquire - count)
                    result += got
                    count += n
                maybe_gap_start = b.last + 1
                if count >= max_to_acquire:
                    break
            full = b.first >= first_base and b.last <= last_to_acquire
            subset_limit = record_limit and b.last - b.first + 1 > max_to_acquire - count
            throttle = self._should_throttle(b, first_base, last_to_acquire)
            if throttle and count > 0:
                max_to_acquire = 0
                break
            if full and b.offsets is None and not subset_limit and not throttle:
                s = b.state
                if s.state is RecordState.AVAILABLE and not s.in_transition:
                    updated = s.try_update(RecordState.ACQUIRED, DeliveryCountOps.INCREASE,
                                           self.settings.delivery_count_limit(), member_id)
                    if updated is not None and updated.state is RecordState.ACQUIRED:
                        updated.set_lock(self._schedule_lock(member_id, b.first, b.last))
                        result.append(Acquired(b.first, b.last, updated.delivery_count))
                        count += b.last - b.first + 1
                continue
            if b.offsets is None:
                s = b.state
                if s.state is not RecordState.AVAILABLE or s.in_transition:
                    continue
                b.initialize_offset_states(self.timer, self.offsets.now_ms(), self._make_lock)
            got_n = self._acquire_subset(member_id, record_limit, max_to_acquire - count, first_base,
                                         last_to_acquire, b, result)
            count += got_n
            if throttle and got_n > 0:
                max_to_acquire = 0
                break
        if count < max_to_acquire and sub[-1].last < last_to_acquire:
            got, n = self._acquire_new(member_id, batches, record_limit, sub[-1].last + 1, last_to_acquire,
                                       batch_size, max_to_acquire - count)
            result += got
            count += n
        if not result:
            return result, count
        self._maybe_update_gap_start(result[-1].last_offset + 1)
        return self._filter_aborted(batches, aborted, result, count)

    def _floor(self, offset: int) -> InFlightBatch | None:
        found = None
        for first, b in self.cached.items():
            if first > offset:
                break
            found = b
        return found

    def _last_offset_and_max_records(self, fetch_offset: int, max_records: int, last_offset: int) -> tuple[int, int]:
        """lastOffsetAndMaxRecordsToAcquire: bounded by share.partition.max.record.locks."""
        max_in_flight = self.settings.max_record_locks()
        to_acquire = min(max_records, max_in_flight - self.in_flight_records())
        if to_acquire <= 0 and fetch_offset <= self.end_offset:
            return min(last_offset, self.end_offset), min(max_records, self.end_offset - fetch_offset + 1)
        return last_offset, to_acquire

    def _acquire_new(self, member_id: str, batches: list[FetchedBatch], record_limit: bool, first: int, last: int,
                     batch_size: int, max_records: int) -> tuple[list[Acquired], int]:
        """acquireNewBatchRecords: records beyond what is in flight, acquired in batches of about
        ``batch_size`` cut at the log's batch boundaries (one batch in record_limit mode)."""
        first_acquired = first
        if not self.cached and self.end_offset > first:
            first_acquired = self.end_offset
        last_acquired = last
        if max_records < last - first_acquired + 1:
            last_acquired = _last_offset_of_batch(batches, first_acquired + max_records - 1)
            if self._gap_active() and last_acquired > last:
                last_acquired = last
        acquired = self._create_batches(member_id, batches, record_limit, max_records, first_acquired, last_acquired,
                                        batch_size)
        if next(iter(self.cached)) == first_acquired:
            self.start_offset = first_acquired
        if last_acquired > self.end_offset:
            self.end_offset = last_acquired
        if record_limit:
            last_acquired = acquired[0].last_offset
        self._maybe_update_gap_start(last_acquired + 1)
        return acquired, last_acquired - first_acquired + 1

    def _create_batches(self, member_id: str, batches: list[FetchedBatch], record_limit: bool, max_records: int,
                        first: int, last: int, batch_size: int) -> list[Acquired]:
        out: list[Acquired] = []
        current = first
        if not record_limit and last - first + 1 > batch_size:
            for b in batches:
                if b.base_offset > last:
                    break
                if b.base_offset - current >= batch_size:
                    out.append(Acquired(current, b.base_offset - 1, 1))
                    current = b.base_offset
        out.append(Acquired(current, last, 1))
        if record_limit and out[0].last_offset - out[0].first_offset + 1 > max_records:
            a = out[0]
            batch = InFlightBatch(member_id, a.first_offset, a.last_offset, RecordState.ACQUIRED, 1, None)
            limit_last = a.first_offset + max_records - 1
            batch.initialize_offset_states_up_to(limit_last, self.settings.record_lock_duration_ms(), self.timer,
                                                 self._make_lock)
            self.find_next = True
            self._put(batch)
            return [Acquired(a.first_offset, limit_last, 1)]
        for a in out:
            self._put(InFlightBatch(member_id, a.first_offset, a.last_offset, RecordState.ACQUIRED, 1,
                                    self._schedule_lock(member_id, a.first_offset, a.last_offset)))
        return out

    def _put(self, batch: InFlightBatch) -> None:
        """Keep ``cached`` ordered by first offset (new batches are nearly always the last)."""
        self.cached[batch.first] = batch
        if len(self.cached) > 1 and next(reversed(self.cached)) != max(self.cached):
            self.cached = dict(sorted(self.cached.items()))

    def _acquire_subset(self, member_id: str, record_limit: bool, max_records: int, first: int, last: int,
                        b: InFlightBatch, result: list[Acquired]) -> int:
        """acquireSubsetBatchRecords: offset by offset, a record on its last attempt alone, records past
        the throttle limit a halving share of the batch at a time."""
        assert b.offsets is not None
        count = 0
        max_while_throttled = -1
        throttled = False
        limit = self.settings.delivery_count_limit()
        throttle_from = throttle_limit(limit)
        got: list[Acquired] = []
        for offset, s in b.offsets.items():
            if offset < first:
                continue
            if offset > last:
                break
            if s.state is not RecordState.AVAILABLE or s.in_transition:
                continue
            if limit > 2 and s.delivery_count == limit - 1 and count > 0:
                break  # on its last delivery attempt: alone in the next fetch
            if s.delivery_count >= throttle_from and max_while_throttled < 0:
                max_while_throttled = max(1, len(b.offsets) >> (s.delivery_count - throttle_from + 1))
                throttled = True
            updated = s.try_update(RecordState.ACQUIRED, DeliveryCountOps.INCREASE, limit, member_id)
            if updated is None or updated.state is not RecordState.ACQUIRED:
                continue
            updated.set_lock(self._schedule_lock(member_id, offset, offset))
            got.append(Acquired(offset, offset, updated.delivery_count))
            count += 1
            if updated.delivery_count == limit and limit > 2:
                break
            if record_limit and count == max_records:
                break
            if throttled and count == max_while_throttled:
                break
        result += _accumulate(got)
        return count

    def _should_throttle(self, b: InFlightBatch, first: int, last: int) -> bool:
        limit = throttle_limit(self.settings.delivery_count_limit())
        if b.offsets is None:
            s = b.state
            return s.state is RecordState.AVAILABLE and not s.in_transition and s.delivery_count >= limit
        counts = [s.delivery_count for o, s in b.offsets.items()
                  if first <= o <= last and s.state is RecordState.AVAILABLE and not s.in_transition]
        return max(counts, default=0) >= limit

    def _maybe_update_gap_start(self, offset: int) -> None:
        gap = self.gap
        if gap is not None:
            if gap.end_offset == self.end_offset and offset <= gap.end_offset:
                gap.gap_start = offset
            else:
                self.gap = None

    def _maybe_archive_stale(self, fetch_offset: int, base_offset: int) -> None:
        """maybeArchiveStaleBatches: Available records below what the log returned (compacted or
        deleted away) are archived."""
        if not self.cached or fetch_offset >= base_offset:
            return
        floor = self._floor(fetch_offset)
        lo = floor.first if floor is not None and floor.last >= fetch_offset else fetch_offset
        sub = [b for f, b in self.cached.items() if lo <= f < base_offset]
        if sub and self._archive(fetch_offset, base_offset, sub, RecordState.AVAILABLE, True):
            self.find_next = True

    def _archive(self, start: int, end: int, batches: list[InFlightBatch], initial: RecordState,
                 count_complete: bool) -> bool:
        """archiveRecords: records in ``initial`` state between ``start`` and ``end`` (exclusive)."""
        any_archived = False
        for b in batches:
            if b.first >= end:
                break
            if b.first >= start and b.last <= end - 1 and b.offsets is None:
                if b.state.state is initial:
                    b.state.archive()
                    if count_complete:
                        self.delivery_complete_count += b.last - b.first + 1
                    any_archived = True
                continue
            if b.offsets is None:
                if b.state.state is not initial:
                    continue
                b.initialize_offset_states(self.timer, self.offsets.now_ms(), self._make_lock)
            assert b.offsets is not None
            for offset, s in b.offsets.items():
                if offset < start:
                    continue
                if offset > end - 1:
                    break
                if s.state is initial:
                    s.archive()
                    if count_complete:
                        self.delivery_complete_count += 1
                    any_archived = True
        return any_archived

    def _filter_aborted(self, batches: list[FetchedBatch], aborted: list[tuple[int, int]] | None,
                        acquired: list[Acquired], count: int) -> tuple[list[Acquired], int]:
        """maybeFilterAbortedTransactionalAcquiredRecords (read_committed): the batches of aborted
        transactions are archived and left out of what is acquired."""
        if not aborted:
            return acquired, count
        ordered = sorted(aborted, key=lambda t: t[1])
        aborted_pids: set[int] = set()
        to_archive: list[FetchedBatch] = []
        for b in batches:
            if b.producer_id < 0:
                continue
            while ordered and ordered[0][1] <= b.last_offset:
                aborted_pids.add(ordered.pop(0)[0])
            if b.control_abort:
                aborted_pids.discard(b.producer_id)
            elif b.transactional and b.producer_id in aborted_pids:
                to_archive.append(b)
        if not to_archive:
            return acquired, count
        for b in to_archive:
            floor = self._floor(b.base_offset)
            sub = [x for f, x in self.cached.items() if floor is not None and floor.first <= f <= b.last_offset]
            self._archive(b.base_offset, b.last_offset + 1, sub, RecordState.ACQUIRED, True)
        out: list[Acquired] = []
        for a in acquired:
            pieces = [(a.first_offset, a.last_offset)]
            for b in to_archive:
                next_pieces = []
                for lo, hi in pieces:
                    if hi < b.base_offset or lo > b.last_offset:
                        next_pieces.append((lo, hi))
                        continue
                    if lo < b.base_offset:
                        next_pieces.append((lo, b.base_offset - 1))
                    if hi > b.last_offset:
                        next_pieces.append((b.last_offset + 1, hi))
                pieces = next_pieces
            out += [Acquired(lo, hi, a.delivery_count) for lo, hi in pieces]
        return out, sum(a.last_offset - a.first_offset + 1 for a in out)

    # -- locks --------------------------------------------------------------------------------------------
    def _make_lock(self, member_id: str, first: int, last: int, delay_ms: int) -> AcquisitionLock:
        return AcquisitionLock(self.offsets.now_ms(), max(0, delay_ms), member_id, first, last, self._on_lock_timeout)

    def _schedule_lock(self, member_id: str, first: int, last: int) -> AcquisitionLock:
        lock = self._make_lock(member_id, first, last, self.settings.record_lock_duration_ms())
        self.timer.add(lock)
        return lock

    def _on_lock_timeout(self, member_id: str, first: int, last: int, lock: AcquisitionLock) -> None:
        """releaseAcquisitionLockOnTimeout: the records still Acquired go back (or are archived)."""
        if lock.cancelled:
            return
        self.lock_timeouts += last - first + 1
        floor = self._floor(first)
        if floor is None:
            return
        state_batches: list[StateBatch] = []
        limit = self.settings.delivery_count_limit()
        for b in [x for f, x in self.cached.items() if floor.first <= f <= last]:
            if b.offsets is None and b.state.state is RecordState.ACQUIRED and b.first < self.start_offset <= b.last:
                b.initialize_offset_states(self.timer, self.offsets.now_ms(), self._make_lock)
            targets = [(b.first, b.last, b.state)] if b.offsets is None else \
                [(o, o, s) for o, s in b.offsets.items() if first <= o <= last]
            for lo, hi, s in targets:
                if s.state is not RecordState.ACQUIRED:
                    continue
                new = RecordState.ARCHIVED if hi < self.start_offset else RecordState.AVAILABLE
                updated = s.try_update(new, DeliveryCountOps.NO_OP, limit, EMPTY_MEMBER_ID)
                if updated is None:
                    continue
                state_batches.append((lo, hi, int(updated.state), updated.delivery_count))
                updated.clear_lock()
                if updated.state is not RecordState.ARCHIVED:
                    self.find_next = True
                if updated.state in TERMINAL:
                    self.delivery_complete_count += self._in_flight_in(lo, hi)
        if state_batches:
            self._write(state_batches)
            self._maybe_update_cached_state_and_offsets()
            self.notify()

    # -- acknowledging ------------------------------------------------------------------------------------
    def acknowledge(self, member_id: str, batches: list[tuple[int, int, list[int]]]) -> ShareError | None:
        """acknowledge: each (first, last, types) batch of a ShareAcknowledge or a piggy-backed one."""
        pending: list[_PersisterBatch] = []
        error: ShareError | None = None
        for first, last, types in batches:
            if any(t not in (GAP, ACCEPT, RELEASE, REJECT, RENEW) for t in types):
                error = ShareError(ErrorCode.invalid_request, f"Invalid acknowledge type: {types}")
                break
            if last < self.start_offset:
                continue
            try:
                sub = self._sub_for_ack(first, last)
            except ShareError as e:
                error = e
                break
            error = self._ack_batches(member_id, first, last, types, sub, pending)
            if error is not None:
                break
        return self._rollback_or_write(error, pending)

    def _sub_for_ack(self, first: int, last: int) -> list[InFlightBatch]:
        """fetchSubMapForAcknowledgementBatch."""
        floor = self._floor(first)
        if floor is None:
            if not first < self.start_offset <= last:
                raise ShareError(ErrorCode.invalid_record_state,
                                 "Batch record not found. The request batch offsets are not found in the cache.")
            floor = self._floor(self.start_offset)
            if floor is None:
                raise ShareError(ErrorCode.invalid_record_state,
                                 "Batch record not found. The request batch offsets are not found in the cache.")
        sub = [b for f, b in self.cached.items() if floor.first <= f <= last]
        if sub[-1].last < first:
            raise ShareError(ErrorCode.invalid_request,
                             "Batch record not found. The first offset in request is past acquired records.")
        if last > sub[-1].last:
            raise ShareError(ErrorCode.invalid_request,
                             "Batch record not found. The last offset in request is past acquired records.")
        return sub

    def _ack_batches(self, member_id: str, first: int, last: int, types: list[int], sub: list[InFlightBatch],
                     pending: list[_PersisterBatch]) -> ShareError | None:
        """acknowledgeBatchRecords."""
        per_offset_types = {first + i: t for i, t in enumerate(types)}
        for b in sub:
            if b.last < self.start_offset:
                continue
            if b.offsets is None:
                s = b.state
                if s.member_id == EMPTY_MEMBER_ID:
                    return ShareError(ErrorCode.invalid_record_state,
                                      "The batch cannot be acknowledged. The batch is not in the acquired state.")
                if s.member_id != member_id:
                    return ShareError(ErrorCode.invalid_record_state, "Member is not the owner of batch record")
                if s.in_transition:
                    return ShareError(ErrorCode.invalid_record_state,
                                      "The record state is invalid. The acknowledgement of delivery could not be "
                                      "completed.")
            full = b.first >= first and b.last <= last
            moved = b.first < self.start_offset <= b.last
            if full and b.offsets is None and len(types) == 1 and not moved:
                err = self._ack_whole(b, types[0], member_id, pending)
            else:
                if b.offsets is None:
                    if b.state.state is not RecordState.ACQUIRED:
                        return ShareError(ErrorCode.invalid_record_state, "The batch cannot be acknowledged. The "
                                          "subset batch is not in the acquired state.")
                    b.initialize_offset_states(self.timer, self.offsets.now_ms(), self._make_lock)
                err = self._ack_offsets(member_id, first, last, types, per_offset_types, b, pending)
            if err is not None:
                return err
        return None

    def _ack_whole(self, b: InFlightBatch, ack: int, member_id: str, pending: list[_PersisterBatch]) -> ShareError | None:
        s = b.state
        if s.state is not RecordState.ACQUIRED:
            return ShareError(ErrorCode.invalid_record_state,
                              "The batch cannot be acknowledged. The batch is not in the acquired state.")
        if ack == RENEW:
            if not self.settings.renew_enabled():
                return ShareError(ErrorCode.invalid_record_state,
                                  "Renewing acquisition locks is not enabled for the group.")
            s.clear_lock()
            s.set_lock(self._schedule_lock(member_id, b.first, b.last))
            return None
        updated = s.start_transition(ACK_STATE[ack], DeliveryCountOps.NO_OP, self.settings.delivery_count_limit(),
                                     EMPTY_MEMBER_ID)
        if updated is None:
            return ShareError(ErrorCode.invalid_record_state, "Unable to acknowledge records for the batch")
        pending.append(_PersisterBatch(updated, (b.first, b.last, int(updated.state), updated.delivery_count)))
        if updated.state in TERMINAL:
            self.delivery_complete_count += b.last - b.first + 1
        return None

    def _ack_offsets(self, member_id: str, first: int, last: int, types: list[int], per_offset: dict[int, int],
                     b: InFlightBatch, pending: list[_PersisterBatch]) -> ShareError | None:
        """acknowledgePerOffsetBatchRecords."""
        assert b.offsets is not None
        for offset, s in b.offsets.items():
            if offset < first or offset < self.start_offset:
                continue
            if offset > last:
                return None
            if s.state is not RecordState.ACQUIRED:
                return ShareError(ErrorCode.invalid_record_state,
                                  "The offset cannot be acknowledged. The offset is not acquired.")
            if s.in_transition:
                return ShareError(ErrorCode.invalid_record_state, "The record state is invalid. The acknowledgement "
                                  "of delivery could not be completed.")
            if s.member_id != member_id:
                return ShareError(ErrorCode.invalid_record_state, "Member is not the owner of offset")
            ack = per_offset[offset] if len(types) > 1 else types[0]
            if ack == RENEW:
                if not self.settings.renew_enabled():
                    return ShareError(ErrorCode.invalid_record_state,
                                      "Renewing acquisition locks is not enabled for the group.")
                s.clear_lock()
                s.set_lock(self._schedule_lock(member_id, offset, offset))
                continue
            updated = s.start_transition(ACK_STATE[ack], DeliveryCountOps.NO_OP,
                                         self.settings.delivery_count_limit(), EMPTY_MEMBER_ID)
            if updated is None:
                return ShareError(ErrorCode.invalid_record_state, "Unable to acknowledge records for the batch")
            pending.append(_PersisterBatch(updated, (offset, offset, int(updated.state), updated.delivery_count)))
            if updated.state in TERMINAL:
                self.delivery_complete_count += 1
        return None

    def release_acquired_records(self, member_id: str) -> ShareError | None:
        """releaseAcquiredRecords: a member's session ended: what it holds is Available again."""
        pending: list[_PersisterBatch] = []
        error: ShareError | None = None
        limit = self.settings.delivery_count_limit()
        for b in list(self.cached.values()):
            if b.offsets is None and b.state.state is RecordState.ACQUIRED and b.state.member_id == member_id \
                    and b.first < self.start_offset <= b.last:
                b.initialize_offset_states(self.timer, self.offsets.now_ms(), self._make_lock)
            for lo, hi, s in b.states():
                if s.member_id not in (member_id, EMPTY_MEMBER_ID) or s.state is not RecordState.ACQUIRED:
                    continue
                new = RecordState.ARCHIVED if hi < self.start_offset else RecordState.AVAILABLE
                updated = s.start_transition(new, DeliveryCountOps.NO_OP, limit, EMPTY_MEMBER_ID)
                if updated is None:
                    error = ShareError(ErrorCode.invalid_record_state, "Unable to release acquired records")
                    break
                pending.append(_PersisterBatch(updated, (lo, hi, int(updated.state), updated.delivery_count)))
                if updated.state in TERMINAL:
                    self.delivery_complete_count += self._in_flight_in(lo, hi)
            if error is not None:
                break
        return self._rollback_or_write(error, pending)

    def _rollback_or_write(self, error: ShareError | None, pending: list[_PersisterBatch]) -> ShareError | None:
        """rollbackOrProcessStateUpdates: on an error every change of the request is undone; else the
        changes are written to the share coordinator, and hold only if it takes them."""
        if error is None and pending:
            error = self._write([p.batch for p in pending])
            commit = error is None
        else:
            commit = False
        if error is not None or not commit:
            for p in pending:
                before_terminal = RecordState(p.batch[2]) in TERMINAL
                p.updated.complete_transition(False)
                if p.updated.state is RecordState.AVAILABLE:
                    self.find_next = True
                if before_terminal and p.updated.state not in TERMINAL:
                    self.delivery_complete_count -= self._in_flight_in(p.batch[0], p.batch[1])
            return error
        for p in pending:
            p.updated.complete_transition(True)
            if p.updated.state is RecordState.AVAILABLE:
                self.find_next = True
        self._maybe_update_cached_state_and_offsets()
        self.notify()
        return None

    def _write(self, batches: list[StateBatch]) -> ShareError | None:
        """writeShareGroupState."""
        err, message = self.persister.write(self.key, self.state_epoch, self.leader_epoch, self.start_offset,
                                            self.delivery_complete_count, batches)
        if err is ErrorCode.none:
            return None
        return ShareError(_persister_error(err), message)

    def _in_flight_in(self, first: int, last: int) -> int:
        return last - max(self.start_offset, first) + 1 if last >= self.start_offset else 0

    # -- moving the start offset ---------------------------------------------------------------------------
    def _maybe_update_cached_state_and_offsets(self) -> bool:
        """maybeUpdateCachedStateAndOffsets: past every terminal record at the front."""
        if not self._can_move_start():
            return False
        last_acked, terminal = self._last_acknowledged()
        if last_acked == -1:
            return False
        last_cached = self._last_cached().last
        if last_acked == last_cached:
            self.start_offset = self.end_offset = last_cached + 1
            self.cached.clear()
            self.delivery_complete_count = 0
            return True
        keys = list(self.cached)
        floor = self._floor(last_acked)
        assert floor is not None
        if last_acked == floor.last:
            higher = keys[keys.index(floor.first) + 1]
            if higher > self.start_offset:
                self.start_offset = higher
            if self._gap_active() and self.gap is not None:
                self.start_offset = min(self.gap.gap_start, self.start_offset)
            drop_until = floor.first
        else:
            self.start_offset = max(self.start_offset, last_acked + 1)
            i = keys.index(floor.first)
            drop_until = keys[i - 1] if i > 0 else -1
        self.delivery_complete_count -= terminal
        if drop_until != -1:
            for k in keys:
                if k > drop_until:
                    break
                del self.cached[k]
        return True

    def _can_move_start(self) -> bool:
        if not self.cached:
            return False
        floor = self._floor(self.start_offset)
        if floor is None:
            return False
        s = floor.state if floor.offsets is None else floor.offsets.get(self.start_offset)
        return s is not None and not s.in_transition and s.state in TERMINAL

    def _last_acknowledged(self) -> tuple[int, int]:
        """findLastOffsetAcknowledgedAndMetadata: the last offset of the terminal run at the front,
        and how many terminal records at or past the start offset that run holds."""
        last, terminal = -1, 0
        for b in self.cached.values():
            if self._gap_active() and self.gap is not None and b.last >= self.gap.gap_start:
                return last, terminal
            if b.offsets is None:
                if b.state.in_transition or b.state.state not in TERMINAL:
                    return last, terminal
                last = b.last
                terminal += self._in_flight_in(b.first, b.last)
            else:
                for offset, s in b.offsets.items():
                    if s.in_transition or s.state not in TERMINAL:
                        return last, terminal
                    last = offset
                    if offset >= self.start_offset:
                        terminal += 1
        return last, terminal

    def update_cache_and_offsets(self, log_start_offset: int) -> None:
        """updateCacheAndOffsets: the log start offset moved past the start offset (retention,
        DeleteRecords): Available records below it are archived and the start offset follows."""
        if log_start_offset <= self.start_offset:
            return
        if self.cached:
            removed = 0
            for b in self.cached.values():
                if b.first >= log_start_offset:
                    break
                for lo, hi, s in b.states():
                    if s.state in TERMINAL:
                        lo2, hi2 = max(self.start_offset, lo), min(log_start_offset - 1, hi)
                        removed += max(0, hi2 - lo2 + 1)
            if self._archive(self.start_offset, log_start_offset, list(self.cached.values()), RecordState.AVAILABLE,
                             False):
                self.find_next = True
            self.start_offset = log_start_offset
            self.delivery_complete_count -= removed
            if self.end_offset < self.start_offset:
                self.end_offset = self.start_offset
            return
        self.start_offset = self.end_offset = log_start_offset
        self.delivery_complete_count = 0

    # -- observing ---------------------------------------------------------------------------------------
    def view(self) -> dict[str, Any]:
        """Every in-flight record's state, delivery count, owner and lock deadline (monotonic ms)."""
        records = []
        for b in self.cached.values():
            for lo, hi, s in b.states():
                if hi < self.start_offset:
                    continue  # below the start offset: no longer in flight
                records.append({"first_offset": max(lo, self.start_offset), "last_offset": hi, "state": s.state.name,
                                "delivery_count": s.delivery_count, "member_id": s.member_id or None,
                                "lock_deadline_ms": s.lock.expiration_ms if s.lock is not None else None})
        return {"topic": self.topic, "partition": self.partition, "state": self.state.value,
                "start_offset": self.start_offset, "end_offset": self.end_offset, "leader_epoch": self.leader_epoch,
                "state_epoch": self.state_epoch, "in_flight_records": self.in_flight_records(),
                "delivery_complete_count": self.delivery_complete_count, "records": records}


def _accumulate(acquired: list[Acquired]) -> list[Acquired]:
    """ShareFetchUtils.accumulateAcquiredRecords: neighbours with the same delivery count merge."""
    out: list[Acquired] = []
    for a in acquired:
        if out and out[-1].last_offset + 1 == a.first_offset and out[-1].delivery_count == a.delivery_count:
            out[-1] = Acquired(out[-1].first_offset, a.last_offset, a.delivery_count)
        else:
            out.append(a)
    return out


def _last_offset_of_batch(batches: list[FetchedBatch], offset: int) -> int:
    """lastOffsetFromBatchWithRequestOffset: a batch is acquired whole."""
    previous = None
    for b in batches:
        if offset < b.base_offset:
            break
        previous = b
    return previous.last_offset if previous is not None and offset <= previous.last_offset else offset


def _persister_error(error: ErrorCode) -> ErrorCode:
    """fetchPersisterError: the share coordinator's errors as the share-partition reports them."""
    if error in (ErrorCode.not_coordinator, ErrorCode.coordinator_not_available,
                 ErrorCode.coordinator_load_in_progress):
        return ErrorCode.coordinator_not_available
    if error in (ErrorCode.group_id_not_found, ErrorCode.unknown_topic_or_partition):
        return error
    if error in (ErrorCode.fenced_leader_epoch, ErrorCode.fenced_state_epoch):
        return ErrorCode.not_leader_or_follower
    return ErrorCode.unknown_server_error


def _iso_duration_ms(text: str) -> int:
    """An ISO-8601 duration (ShareGroupAutoOffsetResetStrategy's by_duration:PnDTnHnMn.nS) in ms."""
    import re

    m = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", text.strip().upper())
    if m is None:
        return 0
    d, h, mi, s = (float(x) if x else 0.0 for x in m.groups())
    return int(((d * 24 + h) * 60 + mi) * 60_000 + s * 1000)

