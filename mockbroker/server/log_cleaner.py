"""The log cleaner: compaction of cleanup.policy=compact logs on the broker's clock.

Mirrors Kafka 4.4's ``LogCleaner`` (the cleaner thread's loop), ``LogCleanerManager`` (which log
to clean, from which offset to which), ``Cleaner`` (the offset map, then each group of segments
cleaned into one), ``CleanedTransactionMetadata`` and ``MemoryRecords.filterTo`` (what becomes of
each batch), all in ``org.apache.kafka.storage.internals.log``.

One pass (``LogCleaner.run``, every ``log.cleaner.backoff.ms`` of the injectable clock, as the
cleaner thread sleeps that long when nothing was dirty enough):

* ``grab_filthiest``: of the compacted logs (cleanup.policy has compact), the one with the largest
  dirty ratio -- the bytes of the segments from the first dirty offset (the cleaner checkpoint, or
  the log start offset) up to the first uncleanable one (the segment holding the smallest of the
  last stable offset, the active segment's base and, with min.compaction.lag.ms, the first segment
  with a record newer than that), over the bytes of the whole log up to there -- above its
  min.cleanable.dirty.ratio, or any dirty bytes once a dirty segment's first batch is older than
  max.compaction.lag.ms.  The active segment is never cleaned.
* ``Cleaner.clean``: the offset map (key -> its last offset) of the dirty section's records with a
  key, aborted transactions' batches left out, at most ``log.cleaner.dedupe.buffer.size`` / 24
  keys times ``log.cleaner.io.buffer.load.factor`` (SkimpyOffsetMap's 16-byte MD5 and 8-byte
  offset per slot): a full map ends the pass's range at the last key it took.  Then every segment
  from the first up to that end, in groups of at most segment.bytes, is cleaned into one:
  a record is kept when it is past the map's range or the latest of its key, a tombstone (null
  value) only until its batch's delete horizon -- set to the time of the cleaning that first kept
  it plus delete.retention.ms -- has passed, a record without a key never.  A batch whose records
  all stay is kept as it is; one that lost records, or gains a delete horizon, is written again
  with the same base and last offset, producer id, epoch, base sequence, transactional and control
  flags, leader epoch and compression (``MemoryRecords.buildRetainedRecordsInto``): offsets keep
  their gaps.  An emptied batch goes, unless it is its producer's last (the producer state needs it)
  or ends at the high watermark: those stay as empty batches (``BatchRetention.RETAIN_EMPTY``).
* Transactions (``CleanedTransactionMetadata``): an aborted transaction's batches go; its ABORT
  marker stays while any of its batches does, then gets a delete horizon and goes after it (as does
  a COMMIT marker once none of its transaction's batches is left); the cleaned segment's transaction
  index keeps the aborted transactions that still have batches.
* The checkpoint moves to the end of the cleaned range; after each cleaning attempt, every compacted
  log also goes through ``UnifiedLog.deleteOldSegments`` (retention when cleanup.policy has delete
  too, else only the segments below the log start offset), which the retention task leaves to the
  cleaner for compacted logs (``LogManager.cleanupLogs``).

A log whose cleaning raises is marked uncleanable and left alone, as Kafka's
``markPartitionUncleanable`` (one log line).  Records are decoded here only, off the produce and
fetch path.  What differs from Kafka is in docs/differences.md.

Over 500 lines on purpose: one cleaning pass runs through what Kafka splits over four classes
(the manager's choice of log, the offset map, the groups of segments, the batch filter), which
share that pass's state; apart they would hand it around.
"""

from __future__ import annotations

import heapq
import logging
import struct
import uuid
from dataclasses import dataclass, field

from protocol.records import (
    DELETE_HORIZON_FLAG,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    Record,
    decode_records,
    empty_batch,
    encode_batch,
    parse_header,
)

from ..storage.log import AbortedTxn, LogSegment, PartitionLog
from ..state.metadata import ClusterMetadata, Partition

log = logging.getLogger("mockbroker.log_cleaner")

BYTES_PER_ENTRY = 16 + 8  # SkimpyOffsetMap: an MD5 of the key and its offset
INT_MAX = (1 << 31) - 1
LONG_MAX = (1 << 63) - 1
_CONTROL_KEY = struct.Struct(">hh")  # ControlRecordType key: version, type
CONTROL_ABORT, CONTROL_COMMIT = 0, 1

# MemoryRecords.RecordFilter.BatchRetention
DELETE, RETAIN_EMPTY, DELETE_EMPTY = "DELETE", "RETAIN_EMPTY", "DELETE_EMPTY"


class OffsetMap:
    """``SkimpyOffsetMap``: key -> its latest offset in the dirty section, bounded by the dedupe
    buffer (the number of entries a pass may take is ``max_entries``), and the latest offset read."""

    def __init__(self, memory: int, load_factor: float) -> None:
        self.slots = memory // BYTES_PER_ENTRY
        self.max_entries = int(self.slots * load_factor)
        self.offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def clear(self) -> None:
        self.offsets.clear()
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        self.offsets[key] = offset
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        return self.offsets.get(key, -1)

    @property
    def size(self) -> int:
        return len(self.offsets)


@dataclass(slots=True)
class _AbortedTxnState:
    txn: AbortedTxn
    last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    """``CleanedTransactionMetadata``: which transactions are aborted or committed at the point the
    cleaner reads, so that aborted batches go and markers stay while their transaction has batches."""

    def __init__(self) -> None:
        self.ongoing_committed: set[int] = set()
        self.ongoing_aborted: dict[int, _AbortedTxnState] = {}
        self.aborted: list[tuple[int, int, AbortedTxn]] = []  # a heap by first offset
        self._seq = 0
        self.cleaned_index: list[AbortedTxn] | None = None  # the cleaned segment's TransactionIndex

    def add_aborted_transactions(self, txns: list[AbortedTxn]) -> None:
        for t in txns:
            self._seq += 1
            heapq.heappush(self.aborted, (t.first_offset, self._seq, t))

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self.aborted and self.aborted[0][0] <= offset:
            t = heapq.heappop(self.aborted)[2]
            self.ongoing_aborted.setdefault(t.producer_id, _AbortedTxnState(t))

    def on_control_batch_read(self, h: BatchHeader, records: list[Record]) -> bool:
        """A marker: True when it may be discarded (its transaction has no batch left)."""
        self._consume_aborted_up_to(h.base_offset + h.last_offset_delta)
        if not records:
            return True
        key = records[0].key or b""
        kind = _CONTROL_KEY.unpack_from(key)[1] if len(key) >= 4 else -1
        if kind == CONTROL_ABORT:
            state = self.ongoing_aborted.pop(h.producer_id, None)
            if state is not None and state.last_observed_batch_offset is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(state.txn)
                return False
            return True
        if kind == CONTROL_COMMIT:
            if h.producer_id in self.ongoing_committed:
                self.ongoing_committed.discard(h.producer_id)
                return False
            return True
        return False

    def on_batch_read(self, h: BatchHeader) -> bool:
        """A data batch: True when it belongs to an aborted transaction."""
        last = h.base_offset + h.last_offset_delta
        self._consume_aborted_up_to(last)
        if not h.is_transactional:
            return False
        state = self.ongoing_aborted.get(h.producer_id)
        if state is not None:
            state.last_observed_batch_offset = last
            return True
        self.ongoing_committed.add(h.producer_id)
        return False


@dataclass(slots=True)
class CleanConfig:
    """The topic configs one cleaning of a log reads (``LogConfig``)."""

    delete_retention_ms: int
    segment_bytes: int
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    min_cleanable_ratio: float


@dataclass(slots=True)
class LogToClean:
    """``LogToClean``: a log's clean and cleanable bytes and dirty ratio."""

    partition: Partition
    first_dirty_offset: int
    first_uncleanable_offset: int
    need_compaction_now: bool
    clean_bytes: int
    cleanable_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes


def log_segments(plog: PartitionLog, start: int, end: int) -> list[LogSegment]:
    """``LogSegments.values(from, to)``: the segments from the one holding ``start`` (its floor) whose
    base offset is below ``end``."""
    if start == end:
        return []
    segs = plog.segments
    first = 0
    for i, seg in enumerate(segs):
        if seg.base_offset <= start:
            first = i
    return [seg for seg in segs[first:] if seg.base_offset < end]


def non_active_segments_from(plog: PartitionLog, start: int) -> list[LogSegment]:
    """``nonActiveLogSegmentsFrom``."""
    active = plog.segments[-1].base_offset
    return [] if start > active else log_segments(plog, start, active)


def cleanable_offsets(plog: PartitionLog, checkpoint: int | None, now_ms: int,
                      min_compaction_lag_ms: int) -> tuple[int, int, bool]:
    """``LogCleanerManager.cleanableOffsets``: (first dirty offset, first uncleanable dirty offset,
    whether the checkpoint must be rewritten)."""
    start = plog.log_start_offset
    dirty = start if checkpoint is None else checkpoint
    force = False
    if dirty < start or dirty > plog.log_end_offset:
        dirty, force = start, True
    candidates = [plog.last_stable_offset, plog.segments[-1].base_offset]
    lag = max(min_compaction_lag_ms, 0)
    if lag > 0:
        for seg in non_active_segments_from(plog, dirty):
            if seg.retention_timestamp > now_ms - lag:  # LogSegment.largestTimestamp
                candidates.append(seg.base_offset)
                break
    return dirty, max(dirty, min(candidates)), force


def calculate_cleanable_bytes(plog: PartitionLog, first_dirty: int, uncleanable: int) -> tuple[int, int]:
    """``LogCleanerManager.calculateCleanableBytes``: (the first uncleanable segment's base offset,
    the bytes from the first dirty offset's segment up to it)."""
    non_active = non_active_segments_from(plog, uncleanable)
    first_uncleanable = (non_active[0] if non_active else plog.segments[-1]).base_offset
    cleanable = sum(s.size_bytes for s in log_segments(plog, min(first_dirty, first_uncleanable), first_uncleanable))
    return first_uncleanable, cleanable


def max_compaction_delay(plog: PartitionLog, first_dirty: int, now_ms: int, max_compaction_lag_ms: int) -> int:
    """``LogCleanerManager.maxCompactionDelay``: how far the oldest dirty non-active segment's first
    batch is past max.compaction.lag.ms (0: not yet)."""
    firsts = [s.max_timestamps[0] for s in non_active_segments_from(plog, first_dirty) if s.batches]
    earliest = min((t for t in firsts if t > 0), default=LONG_MAX)
    clean_until = now_ms - max(max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


def last_records_of_active_producers(plog: PartitionLog) -> dict[int, tuple[int | None, int]]:
    """``UnifiedLog.lastRecordsOfActiveProducers``: producer id -> (last data offset or None, epoch)."""
    out = {}
    for pid, entry in plog.producer_state.producers.items():
        last_data = entry.batches[-1].last_offset if entry.batches else -1
        out[pid] = (last_data if last_data >= 0 else None, entry.epoch)
    return out


class Cleaner:
    """``Cleaner``: one pass over one log, with its offset map."""

    def __init__(self, dedupe_buffer_size: int, load_factor: float) -> None:
        self.offset_map = OffsetMap(min(dedupe_buffer_size, INT_MAX), load_factor)
        if self.offset_map.slots * load_factor <= 1:
            raise ValueError("log.cleaner.dedupe.buffer.size is too small to fit in even a single message: "
                             "log cleaning will never make progress")

    def clean(self, plog: PartitionLog, first_dirty: int, first_uncleanable: int, cfg: CleanConfig,
              now_ms: int) -> int:
        """``Cleaner.doClean``: build the offset map of [first dirty, first uncleanable), clean every
        segment up to the map's end; returns that end (the next first dirty offset)."""
        self.build_offset_map(plog, first_dirty, first_uncleanable)
        end = self.offset_map.latest_offset + 1
        txn = CleanedTransactionMetadata()
        for group in group_segments_by_size(log_segments(plog, 0, end), cfg.segment_bytes, first_uncleanable):
            self.clean_segments(plog, group, txn, cfg, now_ms)
        return end

    def build_offset_map(self, plog: PartitionLog, start: int, end: int) -> None:
        """``Cleaner.buildOffsetMap`` / ``buildOffsetMapForSegment``."""
        m = self.offset_map
        m.clear()
        dirty = log_segments(plog, start, end)
        txn = CleanedTransactionMetadata()
        txn.add_aborted_transactions(plog.collect_aborted_transactions(start, end))
        for i, seg in enumerate(dirty):
            next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            first = next((k for k in range(len(seg.batches)) if seg.last_offsets[k] >= start), len(seg.batches))
            for k in range(first, len(seg.batches)):
                h, records = decode_records(seg.batches[k])
                last = seg.last_offsets[k]
                if h.is_control:
                    txn.on_control_batch_read(h, records)
                elif not txn.on_batch_read(h):
                    for r in records:
                        offset = h.base_offset + r.offset_delta
                        if r.key is not None and offset >= start:
                            if m.size >= m.max_entries:
                                return  # full: the map ends at the last key it took
                            m.put(r.key, offset)
                if last >= start:
                    m.latest_offset = last
            m.latest_offset = next_start - 1

    def clean_segments(self, plog: PartitionLog, group: list[LogSegment], txn: CleanedTransactionMetadata,
                       cfg: CleanConfig, now_ms: int) -> None:
        """``Cleaner.cleanSegments``: ``group`` cleaned into one segment that replaces it."""
        cleaned = LogSegment(group[0].base_offset, group[0].created_ms, cleaned=True)
        txn.cleaned_index = []
        last_records = last_records_of_active_producers(plog)
        for i, seg in enumerate(group):
            upper = group[i + 1].base_offset if i + 1 < len(group) else seg.next_offset
            txn.add_aborted_transactions(plog.collect_aborted_transactions(seg.base_offset, upper))
            self.clean_into(seg, cleaned, txn, last_records, plog.high_watermark, cfg.delete_retention_ms, now_ms)
        cleaned.last_modified_ms = group[-1].last_modified_ms
        plog.replace_segments(cleaned, group, txn.cleaned_index)

    def clean_into(self, source: LogSegment, dest: LogSegment, txn: CleanedTransactionMetadata,
                   last_records: dict[int, tuple[int | None, int]], high_watermark: int, delete_retention_ms: int,
                   now_ms: int) -> None:
        """``Cleaner.cleanInto`` with its ``RecordFilter`` and ``MemoryRecords.filterTo``."""
        m = self.offset_map
        for k, batch in enumerate(source.batches):
            h, records = decode_records(batch)
            last = h.base_offset + h.last_offset_delta
            can_discard = txn.on_control_batch_read(h, records) if h.is_control else txn.on_batch_read(h)
            horizon = h.delete_horizon_ms
            if h.is_control:
                discard_records = can_discard and horizon is not None and horizon <= now_ms
            else:
                discard_records = can_discard
            last_record = last_records.get(h.producer_id)
            is_last_of_producer = False
            if last_record is not None:
                last_data, epoch = last_record
                is_last_of_producer = (last == last_data if last_data is not None
                                       else h.is_control and h.producer_epoch == epoch)
            if h.has_producer_id and is_last_of_producer:
                retention = RETAIN_EMPTY
            elif last + 1 == high_watermark:
                retention = RETAIN_EMPTY
            elif discard_records:
                retention = DELETE
            else:
                retention = DELETE_EMPTY
            if retention == DELETE:
                continue
            retained: list[Record] = []
            write_original = True
            tombstones = False
            for r in records:
                offset = h.base_offset + r.offset_delta
                if discard_records:
                    keep = False
                elif h.is_control:
                    keep = True
                elif offset > m.latest_offset:
                    keep = True
                elif r.key is None:
                    keep = False  # an invalid record for a compacted log (stats.invalidMessage)
                else:
                    retain_deletes = horizon is None or now_ms < horizon
                    keep = offset >= m.get(r.key) and (r.value is not None or retain_deletes)
                if keep:
                    retained.append(r)
                    tombstones = tombstones or r.value is None
                else:
                    write_original = False
            if retained:
                need_horizon = (tombstones or (can_discard and h.is_control)) and horizon is None
                if write_original and not need_horizon:
                    dest.add(batch, last, source.max_timestamps[k])
                else:
                    out = rebuild_batch(h, retained, now_ms + delete_retention_ms if need_horizon
                                        else (horizon if horizon is not None else -1))
                    dest.add(out, last, parse_header(out).max_timestamp)
            elif retention == RETAIN_EMPTY:
                dest.add(empty_batch(h), last, h.max_timestamp)


def rebuild_batch(h: BatchHeader, retained: list[Record], delete_horizon_ms: int) -> bytes:
    """``MemoryRecords.buildRetainedRecordsInto``: the retained records in a batch with the original's
    base and last offset, producer id, epoch, base sequence, flags, leader epoch, compression and
    timestamp type; the base timestamp is the delete horizon when there is one (the attribute says
    so), else the first record's; the max timestamp the records' (LogAppendTime: the batch's, which
    every record reads as)."""
    log_append = bool(h.attributes & TIMESTAMP_TYPE_MASK)
    if log_append:
        retained = [Record(r.offset_delta, h.max_timestamp, r.key, r.value, r.headers) for r in retained]
    attributes = h.attributes & 0x3F  # compression, timestamp type, transactional, control (no delete horizon)
    if delete_horizon_ms >= 0:
        attributes |= DELETE_HORIZON_FLAG
        base_ts = delete_horizon_ms
    else:
        base_ts = retained[0].timestamp
    max_ts = h.max_timestamp if log_append else max(r.timestamp for r in retained)
    return encode_batch(retained, base_offset=h.base_offset, last_offset_delta=h.last_offset_delta,
                        attributes=attributes, base_timestamp=base_ts, max_timestamp=max_ts,
                        producer_id=h.producer_id, producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                        partition_leader_epoch=h.partition_leader_epoch)


def group_segments_by_size(segments: list[LogSegment], max_size: int, first_uncleanable: int) -> list[list[LogSegment]]:
    """``Cleaner.groupSegmentsBySize``: consecutive segments whose sizes add up to at most segment.bytes
    (and whose offsets fit one segment's 32-bit relative offsets) are cleaned into one.  The index sizes
    Kafka also bounds a group by are not kept here."""
    groups = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        size = segments[i].size_bytes
        i += 1
        while i < len(segments):
            nxt = segments[i]
            last_of_next = segments[i + 1].base_offset - 1 if i + 1 < len(segments) else first_uncleanable - 1
            if size + nxt.size_bytes > max_size:
                break
            if nxt.size_bytes and last_of_next - group[0].base_offset > INT_MAX:
                break
            group.append(nxt)
            size += nxt.size_bytes
            i += 1
        groups.append(group)
    return groups


@dataclass(slots=True)
class LogCleanerStats:
    """What the cleaner did, for tests and the log (``CleanerStats`` in part)."""

    cleanings: int = 0
    last_cleaned: tuple[str, int, int, int] | None = None  # (topic, partition, first dirty, end)
    uncleanable: set[tuple[uuid.UUID, int]] = field(default_factory=set)


class LogCleaner:
    """``LogCleaner`` with one cleaner thread and its ``LogCleanerManager``, for every compacted log
    of the cluster (one log per partition here, where each Kafka broker cleans its own replicas)."""

    def __init__(self, metadata: ClusterMetadata) -> None:
        self.metadata = metadata
        cfg = metadata.config
        self._buffer = (cfg["log.cleaner.dedupe.buffer.size"], cfg["log.cleaner.io.buffer.load.factor"])
        self.cleaner = Cleaner(*self._buffer)
        # cleaner-offset-checkpoint: (topic id, partition) -> the first dirty offset
        self.checkpoints: dict[tuple[uuid.UUID, int], int] = {}
        self.stats = LogCleanerStats()

    def run(self) -> int:
        """One wake-up of the cleaner thread: clean the filthiest log while one is dirty enough
        (``doWork`` loops without sleeping after a cleaning), each attempt followed by the compacted
        logs' ``deleteOldSegments``; returns the number of logs cleaned.  A changed dedupe buffer (a
        dynamic broker config) gives the cleaner a new offset map first (``LogCleaner.reconfigure``)."""
        cfg = self.metadata.config
        memory, load_factor = cfg["log.cleaner.dedupe.buffer.size"], cfg["log.cleaner.io.buffer.load.factor"]
        if (memory, load_factor) != self._buffer:
            self.cleaner = Cleaner(memory, load_factor)
            self._buffer = (memory, load_factor)
        cleaned = 0
        for _ in range(max(4 * self._compacted_partition_count(), 1)):  # a bound, never reached in practice
            done = self.clean_filthiest_log()
            self.delete_old_segments()
            if not done:
                break
            cleaned += 1
        return cleaned

    def _compacted_partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.metadata.topics.values() if self.metadata.is_compacted(t))

    def _config(self, p: Partition) -> CleanConfig:
        md, t = self.metadata, p.topic
        return CleanConfig(md.topic_config(t, "delete.retention.ms"), md.segment_bytes(t),
                           md.topic_config(t, "min.compaction.lag.ms"), md.topic_config(t, "max.compaction.lag.ms"),
                           md.topic_config(t, "min.cleanable.dirty.ratio"))

    def grab_filthiest(self, now_ms: int) -> tuple[LogToClean, CleanConfig] | None:
        """``LogCleanerManager.grabFilthiestCompactedLog``."""
        best: tuple[LogToClean, CleanConfig] | None = None
        for t in list(self.metadata.topics.values()):
            if not self.metadata.is_compacted(t):
                continue
            for p in t.partitions:
                key = (t.topic_id, p.index)
                if key in self.stats.uncleanable:
                    continue
                cfg = self._config(p)
                plog = p.log
                dirty, uncleanable, force = cleanable_offsets(plog, self.checkpoints.get(key), now_ms,
                                                              cfg.min_compaction_lag_ms)
                if force:
                    self.checkpoints[key] = dirty
                delay = max_compaction_delay(plog, dirty, now_ms, cfg.max_compaction_lag_ms)
                first_uncleanable, cleanable = calculate_cleanable_bytes(plog, dirty, uncleanable)
                clean = sum(s.size_bytes for s in log_segments(plog, -1, dirty))
                ltc = LogToClean(p, dirty, first_uncleanable, delay > 0, clean, cleanable)
                if ltc.total_bytes <= 0:
                    continue
                if not ((ltc.need_compaction_now and ltc.cleanable_bytes > 0)
                        or ltc.cleanable_ratio > cfg.min_cleanable_ratio):
                    continue
                if best is None or ltc.cleanable_ratio > best[0].cleanable_ratio:
                    best = (ltc, cfg)
        return best

    def clean_filthiest_log(self) -> bool:
        """``CleanerThread.cleanFilthiestLog`` for the cleaning part: True when a log was cleaned."""
        now_ms = self.metadata.clock.time_ms()
        found = self.grab_filthiest(now_ms)
        if found is None:
            return False
        ltc, cfg = found
        p = ltc.partition
        key = (p.topic.topic_id, p.index)
        try:
            end = self.cleaner.clean(p.log, ltc.first_dirty_offset, ltc.first_uncleanable_offset, cfg, now_ms)
        except Exception:  # noqa: BLE001 - LogCleaner.tryCleanFilthiestLog: the partition is marked uncleanable
            log.exception("Unexpected exception thrown when cleaning log %s-%d. Marking its partition as uncleanable",
                          p.topic.name, p.index)
            self.stats.uncleanable.add(key)
            return False
        self.checkpoints[key] = end
        self.stats.cleanings += 1
        self.stats.last_cleaned = (p.topic.name, p.index, ltc.first_dirty_offset, end)
        log.debug("cleaned %s-%d, dirty section [%d, %d)", p.topic.name, p.index, ltc.first_dirty_offset, end)
        return True

    def delete_old_segments(self) -> int:
        """``deletableLogs`` -> ``UnifiedLog.deleteOldSegments`` for every compacted log."""
        md = self.metadata
        now_ms = md.clock.time_ms()
        dropped = 0
        for t in list(md.topics.values()):
            if not md.is_compacted(t):
                continue
            delete = "delete" in md.topic_config(t, "cleanup.policy")
            r_ms, r_bytes = md.topic_config(t, "retention.ms"), md.topic_config(t, "retention.bytes")
            for p in t.partitions:
                dropped += p.log.delete_old_segments(now_ms, delete, r_ms, r_bytes)
        return dropped
