"""In-memory partition log (Kafka's ``UnifiedLog`` / ``LocalLog`` / ``LogSegment``).

Batches are stored as the bytes the producer sent, with baseOffset and
partitionLeaderEpoch rewritten; they are served as those same bytes.  Segments
exist only so that retention drops whole segments as Kafka does
(``UnifiedLog.deleteRetentionMsBreachedSegments`` /
``deleteRetentionSizeBreachedSegments``) and the log start offset moves to the
first remaining segment.

Transactions (``UnifiedLog``): the log owns its ``ProducerStateManager``; the
last stable offset is the first unstable offset when below the high watermark,
else the high watermark (``lastStableOffset`` / ``fetchLastStableOffsetMetadata``).
Aborted transactions are kept in one list standing for the segments'
``TransactionIndex`` files (``AbortedTxn``: producer id, first offset, last
offset = the marker's, and the LSO when it was written); retention drops the
entries whose marker's segment went (last offset below the log start offset),
truncation those at or above the truncation point (``TransactionIndex.truncateTo``).
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

from protocol.records import BatchHeader, assign_offsets, record_timestamps

from .producer_state import CompletedTxn, ProducerStateManager


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One entry of a ``TransactionIndex`` (Kafka's ``AbortedTxn``)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def _int64s() -> array[int]:
    return array("q")


@dataclass(slots=True)
class LogSegment:
    """One segment: its batches as bytes, and per batch its last offset and max timestamp (the
    offset and time indexes' part that is kept) as int64 arrays, 8 bytes each instead of a list
    slot and an int object (48 bytes) each."""

    base_offset: int
    created_ms: int
    batches: list[bytes] = field(default_factory=list)
    last_offsets: array[int] = field(default_factory=_int64s)  # last offset of each batch
    max_timestamps: array[int] = field(default_factory=_int64s)
    size_bytes: int = 0
    largest_timestamp: int = -1

    @property
    def next_offset(self) -> int:
        return self.last_offsets[-1] + 1 if self.last_offsets else self.base_offset

    def batch_base(self, i: int) -> int:
        return self.last_offsets[i - 1] + 1 if i else self.base_offset


@dataclass(slots=True)
class FetchSlice:
    """What one partition read returns: batch bytes (the last may be a truncated tail)."""

    chunks: list[bytes]
    size_bytes: int
    # the offset after the last batch read (whole or cut): the upper bound for aborted transactions
    next_offset: int = -1


class PartitionLog:
    def __init__(self, now_ms: int) -> None:
        self.segments: list[LogSegment] = [LogSegment(0, now_ms)]
        self.log_start_offset = 0
        self.high_watermark = 0
        self.leader_epoch = 0
        # LeaderEpochFileCache: (epoch, start offset) in order
        self.epoch_starts: list[tuple[int, int]] = [(0, 0)]
        self.producer_state = ProducerStateManager()
        self.aborted_txns: list[AbortedTxn] = []  # in marker order, i.e. by last offset

    # -- offsets ----------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def last_stable_offset(self) -> int:
        """``UnifiedLog.lastStableOffset``: the first unstable offset if below the high watermark."""
        first_unstable = self.producer_state.first_unstable_offset(self.high_watermark)
        if first_unstable is not None and first_unstable < self.high_watermark:
            return first_unstable
        return self.high_watermark

    @property
    def size_bytes(self) -> int:
        return sum(s.size_bytes for s in self.segments)

    # -- append -----------------------------------------------------------------
    def append(
        self,
        batch: memoryview,
        header: BatchHeader,
        now_ms: int,
        segment_bytes: int,
        segment_ms: int,
        log_append_time: bool,
    ) -> tuple[int, int]:
        """Append a validated batch; returns (base_offset, last_offset)."""
        base = self.log_end_offset
        stored = assign_offsets(batch, base, self.leader_epoch, now_ms if log_append_time else None)
        seg = self.segments[-1]
        if seg.batches and (
            seg.size_bytes + len(stored) > segment_bytes or now_ms - seg.created_ms >= segment_ms
        ):
            seg = LogSegment(base, now_ms)
            self.segments.append(seg)
        last = base + header.last_offset_delta
        max_ts = now_ms if log_append_time else header.max_timestamp
        seg.batches.append(stored)
        seg.last_offsets.append(last)
        seg.max_timestamps.append(max_ts)
        seg.size_bytes += len(stored)
        seg.largest_timestamp = max(seg.largest_timestamp, max_ts)
        return base, last

    def complete_txn(self, completed: CompletedTxn) -> None:
        """``UnifiedLog.append`` for a marker that ended a transaction: an aborted one enters the
        transaction index with the LSO of that moment (``LogSegment.updateTxnIndex``), then
        ``ProducerStateManager.completeTxn``."""
        lso = self.producer_state.last_stable_offset(completed)
        if completed.is_aborted:
            self.aborted_txns.append(AbortedTxn(completed.producer_id, completed.first_offset,
                                                completed.last_offset, lso))
        self.producer_state.complete_txn(completed)

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """``collectAbortedTransactions``: the aborted transactions overlapping [start, upper bound)
        (``TransactionIndex.collectAbortedTxns``: last offset >= start and first offset < upper bound).
        The index is in marker order, so the entries ending before the start are skipped by bisection,
        as Kafka starts from the start offset's segment, rather than scanned on every fetch."""
        txns = self.aborted_txns
        first = bisect.bisect_left(txns, start_offset, key=lambda t: t.last_offset)
        return [t for t in txns[first:] if t.first_offset < upper_bound_offset]

    # -- read -------------------------------------------------------------------
    def _locate(self, offset: int) -> tuple[int, int]:
        """(segment index, batch index) of the batch holding ``offset``."""
        bases = [s.base_offset for s in self.segments]
        si = max(bisect.bisect_right(bases, offset) - 1, 0)
        while si < len(self.segments):
            seg = self.segments[si]
            bi = bisect.bisect_left(seg.last_offsets, offset)
            if bi < len(seg.batches):
                return si, bi
            si += 1
        return len(self.segments), 0

    def read(self, offset: int, max_bytes: int, upper_bound: int, min_one: bool) -> FetchSlice:
        """Batches from the one holding ``offset`` up to ``upper_bound`` (exclusive).

        Like ``LogSegment.read``: up to ``max_bytes`` of the log, whole batches
        and then a truncated tail; with ``min_one`` (KIP-74) the first batch is
        returned whole even when it exceeds ``max_bytes``.
        """
        chunks: list[bytes] = []
        total = 0
        if offset >= upper_bound:
            return FetchSlice(chunks, 0, offset)
        si, bi = self._locate(offset)
        next_offset = offset
        while si < len(self.segments):
            seg = self.segments[si]
            while bi < len(seg.batches):
                if seg.batch_base(bi) >= upper_bound:
                    return FetchSlice(chunks, total, next_offset)
                b = seg.batches[bi]
                if total + len(b) > max_bytes:
                    if not chunks and min_one:
                        chunks.append(b)
                        total += len(b)
                        next_offset = seg.last_offsets[bi] + 1
                    elif max_bytes - total > 0:
                        tail = b[: max_bytes - total]  # the partial batch a slab read ends with
                        chunks.append(tail)
                        total += len(tail)
                        next_offset = seg.last_offsets[bi] + 1
                    return FetchSlice(chunks, total, next_offset)
                chunks.append(b)
                total += len(b)
                next_offset = seg.last_offsets[bi] + 1
                bi += 1
            si += 1
            bi = 0
        return FetchSlice(chunks, total, next_offset)

    def bytes_available(self, offset: int, upper_bound: int, cap: int) -> int:
        """Bytes from ``offset`` to ``upper_bound``, at most ``cap`` (DelayedFetch's accumulatedSize)."""
        return self.read(offset, cap, upper_bound, min_one=False).size_bytes

    # -- offsets by time ----------------------------------------------------------
    def offset_for_timestamp(self, ts: int) -> tuple[int, int] | None:
        """First (offset, timestamp) whose timestamp >= ts, as Kafka finds it; None when there is
        none or when that record is at or above the high watermark.

        ``UnifiedLog.searchOffsetInLocalLog`` takes the first segment whose largest timestamp is
        >= ts and only that one; ``LogSegment.findOffsetByTimestamp`` /
        ``FileRecords.searchForTimestamp`` scan its batches and, in the first batch with a
        maxTimestamp >= ts, its records (a compressed batch decompressed), for the first with a
        timestamp >= ts and an offset >= the log start offset.  ``ReplicaManager.fetchOffset``
        then answers no offset when that record is at or above the last fetchable offset (the
        high watermark; the last stable offset for read_committed, the same here).  Raises
        ``CorruptRecordBatch`` when a batch it must read cannot be.
        """
        seg = next((s for s in self.segments if s.largest_timestamp >= ts), None)
        if seg is None:
            return None
        for i, b in enumerate(seg.batches):
            # below the log start offset entirely: Kafka starts at the offset index's position for it
            if seg.max_timestamps[i] < ts or seg.last_offsets[i] < self.log_start_offset:
                continue
            for off, rts in record_timestamps(b):
                if rts >= ts and off >= self.log_start_offset:
                    return (off, rts) if off < self.high_watermark else None
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (KIP-734), as Kafka finds it;
        None when the log is empty or that record is at or above the high watermark.

        ``UnifiedLog.fetchOffsetByTimestamp(MAX_TIMESTAMP)``: the first segment with the largest
        maxTimestampSoFar, in it the first batch whose maxTimestamp is that, and in that batch
        ``RecordBatch.offsetOfMaxTimestamp``: the first record whose timestamp equals the batch's
        maxTimestamp (with LogAppendTime, the first record).  The log start offset does not bound
        it; ``ReplicaManager.fetchOffset`` answers no offset at or above the high watermark.
        Raises ``CorruptRecordBatch`` when the batch cannot be read.
        """
        seg = max(self.segments, key=lambda s: s.largest_timestamp)  # the first of equals, as maxBy
        if not seg.batches:
            return None
        i = seg.max_timestamps.index(seg.largest_timestamp)
        found = next(((off, rts) for off, rts in record_timestamps(seg.batches[i])
                      if rts == seg.max_timestamps[i]), None)
        if found is None or found[0] >= self.high_watermark:
            return None
        return found

    # -- retention ------------------------------------------------------------------
    def enforce_retention(self, now_ms: int, retention_ms: int, retention_bytes: int) -> int:
        """Drop whole segments past retention; returns the number dropped."""
        dropped = 0
        if retention_ms >= 0:
            dropped += self._delete_while(lambda seg: now_ms - seg.largest_timestamp > retention_ms, now_ms)
        if retention_bytes >= 0:
            excess = [self.size_bytes - retention_bytes]

            def over(seg: LogSegment) -> bool:
                if excess[0] - seg.size_bytes >= 0:
                    excess[0] -= seg.size_bytes
                    return True
                return False

            dropped += self._delete_while(over, now_ms)
        return dropped

    def _delete_while(self, predicate: Callable[[LogSegment], bool], now_ms: int) -> int:
        n = 0
        now_end = self.log_end_offset
        while self.segments:
            seg = self.segments[0]
            if not seg.batches:
                break
            # only data below the high watermark may go (UnifiedLog.deletableSegments)
            if seg.next_offset > self.high_watermark:
                break
            if not predicate(seg):
                break
            self.segments.pop(0)
            n += 1
        if not self.segments:  # the active segment went too: roll an empty one (Kafka rolls first)
            self.segments.append(LogSegment(now_end, now_ms))
        if n:
            self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
            # the deleted segments' transaction indexes go with them
            self.aborted_txns = [t for t in self.aborted_txns if t.last_offset >= self.log_start_offset]
        return n

    # -- leadership -------------------------------------------------------------------
    def new_leader_epoch(self, epoch: int) -> None:
        """A new leader starts ``epoch`` at the current log end (LeaderEpochFileCache.assign)."""
        self.leader_epoch = epoch
        self.epoch_starts.append((epoch, self.log_end_offset))

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) as OffsetsForLeaderEpoch answers: the largest epoch <= the asked one
        and where the next epoch starts (or the log end for the current epoch); (-1, -1) if unknown."""
        best = None
        for i, (e, _start) in enumerate(self.epoch_starts):
            if e <= epoch:
                best = i
        if best is None or epoch > self.leader_epoch:
            return -1, -1
        e = self.epoch_starts[best][0]
        nxt = next((st for ep, st in self.epoch_starts[best + 1 :] if ep > e), None)
        return e, self.log_end_offset if nxt is None else nxt

    def truncate_to(self, offset: int) -> None:
        """Drop every batch at or above ``offset`` (a new leader truncates to its own log end)."""
        while self.segments and self.segments[-1].base_offset >= offset and len(self.segments) > 1:
            self.segments.pop()
        seg = self.segments[-1]
        while seg.batches and seg.batch_base(len(seg.batches) - 1) >= offset:
            b = seg.batches.pop()
            seg.last_offsets.pop()
            seg.max_timestamps.pop()
            seg.size_bytes -= len(b)
        seg.largest_timestamp = max(seg.max_timestamps, default=-1)
        if not seg.batches:
            seg.base_offset = max(min(seg.base_offset, offset), self.log_start_offset)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self.aborted_txns = [t for t in self.aborted_txns if t.last_offset < offset]  # TransactionIndex.truncateTo
