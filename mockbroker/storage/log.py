"""In-memory partition log (Kafka's ``UnifiedLog`` / ``LocalLog`` / ``LogSegment``).

Batches are stored as the bytes the producer sent, with baseOffset and
partitionLeaderEpoch rewritten; they are served as those same bytes.  Segments
exist so that retention drops whole segments as Kafka does
(``UnifiedLog.deleteOldSegments``: the log start offset breached, then
``deleteRetentionSizeBreachedSegments`` and ``deleteRetentionMsBreachedSegments``
when cleanup.policy has delete), the log start offset moving to the first
remaining segment, and so that the log cleaner (``log_cleaner.py``) compacts the
segments below the active one and swaps them for cleaned ones
(``replace_segments``, ``UnifiedLog.replaceSegments``).  A cleaned segment's
batches keep their offsets but may leave gaps between them (removed records and
batches); their base offsets are then read from the batches themselves.
DeleteRecords moves the log start offset inside the log
(``maybe_increment_log_start_offset``); the segments wholly below it go at the next
retention pass.

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
import struct
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

from protocol.records import BatchHeader, assign_offsets, record_timestamps

from .producer_state import CompletedTxn, ProducerStateManager

_I64 = struct.Struct(">q")


class OffsetOutOfRange(Exception):
    """``OffsetOutOfRangeException`` from the log: OFFSET_OUT_OF_RANGE for the partition."""


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
    slot and an int object (48 bytes) each.  ``last_modified_ms`` stands for the file's mtime (the
    last append; a cleaned segment takes its last source segment's); ``cleaned`` says its batches
    may leave gaps between them (a batch's base offset is then read from the batch)."""

    base_offset: int
    created_ms: int
    batches: list[bytes] = field(default_factory=list)
    last_offsets: array[int] = field(default_factory=_int64s)  # last offset of each batch
    max_timestamps: array[int] = field(default_factory=_int64s)
    size_bytes: int = 0
    largest_timestamp: int = -1
    last_modified_ms: int = -1
    cleaned: bool = False

    @property
    def next_offset(self) -> int:
        """``LogSegment.readNextOffset``: after the last batch, or the base offset when empty."""
        return self.last_offsets[-1] + 1 if self.last_offsets else self.base_offset

    def batch_base(self, i: int) -> int:
        if self.cleaned:
            base: int = _I64.unpack_from(self.batches[i], 0)[0]
            return base
        return self.last_offsets[i - 1] + 1 if i else self.base_offset

    @property
    def retention_timestamp(self) -> int:
        """``LogSegment.largestTimestamp``: the largest record timestamp, else the last-modified time."""
        return self.largest_timestamp if self.largest_timestamp >= 0 else self.last_modified_ms

    def add(self, batch: bytes, last_offset: int, max_timestamp: int) -> None:
        self.batches.append(batch)
        self.last_offsets.append(last_offset)
        self.max_timestamps.append(max_timestamp)
        self.size_bytes += len(batch)
        self.largest_timestamp = max(self.largest_timestamp, max_timestamp)


@dataclass(slots=True)
class FetchSlice:
    """What one partition read returns: batch bytes (the last may be a truncated tail)."""

    chunks: list[bytes]
    size_bytes: int
    # the offset after the last batch read (whole or cut): the upper bound for aborted transactions
    next_offset: int = -1
    # FetchDataInfo.firstEntryIncomplete: the batch at the offset read did not fit (only a cut of it)
    first_entry_incomplete: bool = False


class PartitionLog:
    def __init__(self, now_ms: int) -> None:
        self.segments: list[LogSegment] = [LogSegment(0, now_ms, last_modified_ms=now_ms)]
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

    def size_below(self, offset: int) -> int:
        """The bytes of the batches that end below ``offset``: the size of a follower's copy of this
        log whose log end offset is ``offset`` (``UnifiedLog.size`` on that replica)."""
        total = 0
        for seg in self.segments:
            if seg.next_offset <= offset:
                total += seg.size_bytes
                continue
            n = bisect.bisect_left(seg.last_offsets, offset)  # batches whose last offset is below it
            total += sum(len(b) for b in seg.batches[:n])
            break
        return total

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
        seg.add(stored, last, now_ms if log_append_time else header.max_timestamp)
        seg.last_modified_ms = now_ms
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
                        incomplete = not chunks
                        chunks.append(tail)
                        total += len(tail)
                        next_offset = seg.last_offsets[bi] + 1
                        return FetchSlice(chunks, total, next_offset, incomplete)
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
    def offset_for_timestamp(self, ts: int, last_fetchable: int | None = None) -> tuple[int, int] | None:
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
                    upper = self.high_watermark if last_fetchable is None else last_fetchable
                    return (off, rts) if off < upper else None
        return None

    def max_timestamp_offset(self, last_fetchable: int | None = None) -> tuple[int, int] | None:
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
        if found is None or found[0] >= (self.high_watermark if last_fetchable is None else last_fetchable):
            return None
        return found

    # -- retention ------------------------------------------------------------------
    def delete_old_segments(self, now_ms: int, delete: bool, retention_ms: int, retention_bytes: int) -> int:
        """``UnifiedLog.deleteOldSegments``: the segments wholly below the log start offset (after
        DeleteRecords), then, when cleanup.policy has delete, by size (retention.bytes) and by time
        (retention.ms against each segment's largest timestamp); returns the number dropped."""
        dropped = self._delete_while(lambda seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset,
                                     now_ms)
        if not delete:
            return dropped
        size = self.size_bytes
        if retention_bytes >= 0 and size >= retention_bytes:
            excess = [size - retention_bytes]

            def over(seg: LogSegment, _nxt: LogSegment | None) -> bool:
                if excess[0] - seg.size_bytes >= 0:
                    excess[0] -= seg.size_bytes
                    return True
                return False

            dropped += self._delete_while(over, now_ms)
        if retention_ms >= 0:
            dropped += self._delete_while(lambda seg, _nxt: now_ms - seg.retention_timestamp > retention_ms, now_ms)
        return dropped

    def enforce_retention(self, now_ms: int, retention_ms: int, retention_bytes: int) -> int:
        """Retention of a delete-policy log (``delete_old_segments`` with delete on)."""
        return self.delete_old_segments(now_ms, True, retention_ms, retention_bytes)

    def _delete_while(self, predicate: Callable[[LogSegment, LogSegment | None], bool], now_ms: int) -> int:
        """``UnifiedLog.deletableSegments`` and ``deleteSegments``: leading segments while ``predicate``
        holds and the high watermark has passed them (their upper bound: the next segment's base
        offset, or the log end offset); never the last segment when it is empty.  When every segment
        goes a new active one is rolled at the log end (Kafka rolls first); the log start offset moves
        to the first segment left."""
        n = 0
        segs = self.segments
        while n < len(segs):
            seg = segs[n]
            nxt = segs[n + 1] if n + 1 < len(segs) else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if nxt is None and not seg.batches:
                break
            if self.high_watermark < upper or not predicate(seg, nxt):
                break
            n += 1
        if not n:
            return 0
        now_end = self.log_end_offset
        del segs[:n]
        if not segs:
            segs.append(LogSegment(now_end, now_ms, last_modified_ms=now_ms))
        self._log_start_moved(max(self.log_start_offset, segs[0].base_offset))
        # the deleted segments' transaction indexes go with them
        self.aborted_txns = [t for t in self.aborted_txns if t.last_offset >= segs[0].base_offset]
        return n

    def maybe_increment_log_start_offset(self, new_start: int) -> bool:
        """``UnifiedLog.maybeIncrementLogStartOffset`` (DeleteRecords): above the high watermark is
        ``OffsetOutOfRange``; a larger offset becomes the log start offset (its segments stay until the
        next retention pass deletes those wholly below it).  True when it moved."""
        if new_start > self.high_watermark:
            raise OffsetOutOfRange(f"Cannot increment the log start offset to {new_start} since it is larger than "
                                   f"the high watermark {self.high_watermark}")
        if new_start <= self.log_start_offset:
            return False
        self._log_start_moved(new_start)
        return True

    def _log_start_moved(self, start: int) -> None:
        """``updateLogStartOffset`` and what follows it: the leader epoch cache forgets the epochs
        wholly below the new start (``LeaderEpochFileCache.truncateFromStart``: the last of them
        begins at the start) and the producer state its completed transactions below it."""
        if start <= self.log_start_offset:
            return
        self.log_start_offset = start
        starts = self.epoch_starts
        keep = [i for i, (_e, st) in enumerate(starts) if st > start]
        first = keep[0] if keep else len(starts)
        if first > 0:
            self.epoch_starts = [(starts[first - 1][0], start)] + starts[first:]
        self.producer_state.on_log_start_offset_incremented(start)

    # -- cleaning (log_cleaner.py) --------------------------------------------------------
    def replace_segments(self, cleaned: LogSegment, old: list[LogSegment], aborted: list[AbortedTxn]) -> None:
        """``UnifiedLog.replaceSegments``: ``cleaned`` takes the place of ``old`` (consecutive
        segments), and the aborted transactions whose markers were in them become ``aborted`` (the
        cleaned segment's transaction index)."""
        i = next(k for k, seg in enumerate(self.segments) if seg is old[0])
        self.segments[i:i + len(old)] = [cleaned]
        lo = old[0].base_offset
        hi = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else self.log_end_offset
        kept = [t for t in self.aborted_txns if not lo <= t.last_offset < hi]
        self.aborted_txns = sorted(kept + aborted, key=lambda t: t.last_offset)

    # -- leadership -------------------------------------------------------------------
    def new_leader_epoch(self, epoch: int) -> None:
        """A new leader starts ``epoch`` at the current log end (``Partition.makeLeader``:
        ``maybeAssignEpochStartOffset``, ``LeaderEpochFileCache.assign``)."""
        self.leader_epoch = epoch
        starts = self.epoch_starts
        start = self.log_end_offset
        if starts and starts[-1][0] == epoch and start >= starts[-1][1]:
            return  # isUpdateNeeded: the same epoch at or after its start
        # maybeTruncateNonMonotonicEntries: from the newest, drop those at or after the new one
        while starts and (starts[-1][0] >= epoch or starts[-1][1] >= start):
            starts.pop()
        starts.append((epoch, start))

    def epoch_for_offset(self, offset: int) -> int:
        """``LeaderEpochFileCache.epochForOffset``: the epoch whose range holds ``offset`` (-1: none)."""
        previous = -1
        for e, start in self.epoch_starts:
            if start == offset:
                return e
            if start > offset:
                return previous
            previous = e
        return previous

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) as ``LeaderEpochFileCache.endOffsetFor`` answers OffsetsForLeaderEpoch:
        -1 or an epoch after the newest: (-1, -1); the newest: (it, log end); else the start of
        the first epoch above the asked one, with the largest epoch not above it (or the asked
        epoch itself when none is)."""
        starts = self.epoch_starts
        if epoch == -1:
            return -1, -1
        if starts and starts[-1][0] == epoch:
            return epoch, self.log_end_offset
        higher = next((st for e, st in starts if e > epoch), None)
        if higher is None:
            return -1, -1
        floor = None
        for e, _st in starts:
            if e <= epoch:
                floor = e
        return (epoch if floor is None else floor), higher

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
