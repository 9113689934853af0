"""One broker's share-partitions and share sessions: Kafka 4.4's ``SharePartitionManager``.

What ShareFetch and ShareAcknowledge call (``KafkaApis.handleShareFetchRequest`` /
``handleShareAcknowledgeRequest`` through the handlers): the session (``new_context``,
``acknowledge_session_update``), ``fetch_messages`` (a ``DelayedShareFetch`` in this broker's
ShareFetch purgatory), ``acknowledge`` and ``release_session``.  The share-partitions this broker
leads are created on the first fetch and loaded from the share coordinator (``SharePersister``);
one that stops being led here, or whose leader epoch changed, is fenced and dropped (Kafka's
``SharePartitionListener``), as is every share-partition of a group whose last session on this
broker ended.  The acquisition locks run on this broker's own timer (the share-group-lock-timeout
``SystemTimer``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from protocol.errors import ErrorCode
from protocol.records import CONTROL_ABORT, LOG_OVERHEAD, parse_header, decode_records

from ..common.clock import Clock
from ..server.fetch_session import CachedPartition
from ..state.metadata import ClusterMetadata, Partition
from ..purgatory import DelayedOperation, DelayedOperationPurgatory, Timer
from ..server.replica_manager import FetchParams, LogReadResult, ReplicaManager
from .config import ShareGroupConfigs
from .partition import Acquired, FetchedBatch, GroupSettings, Offsets, ShareError, SharePartition
from .persister import SharePersister
from .session import SharePartitionId, ShareSessionCache

log = logging.getLogger("mockbroker.share")

READ_COMMITTED = 1
PartitionKey = tuple[str, uuid.UUID, int]  # (group, topic id, partition): SharePartitionKey


@dataclass(slots=True)
class PartitionResult:
    """ShareFetchResponseData.PartitionData as the manager answers it."""

    error: ErrorCode = ErrorCode.none
    message: str | None = None
    records: bytes | memoryview = b""
    acquired: list[Acquired] = field(default_factory=list)


@dataclass(slots=True)
class ShareFetch:
    """Kafka's ``ShareFetch``: one ShareFetch request's fetch, its share-partitions and results."""

    group_id: str
    member_id: str
    params: FetchParams
    mode: int
    batch_size: int
    max_records: int
    partitions: list[tuple[SharePartitionId, str]]
    share_partitions: dict[SharePartitionId, SharePartition] = field(default_factory=dict)
    erroneous: dict[SharePartitionId, tuple[ErrorCode, str | None]] = field(default_factory=dict)
    results: dict[SharePartitionId, PartitionResult] = field(default_factory=dict)


@dataclass(slots=True)
class PartitionRead:
    key: SharePartitionId
    sp: SharePartition
    fetch_offset: int
    result: LogReadResult


class DelayedShareFetch(DelayedOperation):
    """DelayedShareFetch: a ShareFetch waits in the ShareFetch purgatory until records can be
    acquired (local logs only).  ``try_complete`` takes the share-partitions that can acquire
    records (``acquirablePartitions``), reads them from their next fetch offsets (the request's max
    bytes split evenly, ``PartitionMaxBytesStrategy.UNIFORM``) and completes when a read failed or
    min_bytes are readable.  It is woken by an append to one of its partitions (the partition key,
    through the ``ActionQueue``) and by anything that makes records acquirable again (the group
    key: an acknowledgement, a release, a lock that expired).  On completion (or when max_wait
    passes) the logs are read again if nothing was kept, the records acquired
    (``ShareFetchUtils.processFetchResponse``) and the handler's callback answered."""

    PURGATORY = "ShareFetch"

    def __init__(self, manager: SharePartitionManager, fetch: ShareFetch, on_complete: Callable[[], None]) -> None:
        super().__init__(fetch.params.max_wait_ms)
        self.manager = manager
        self.fetch = fetch
        self._on_complete = on_complete
        self.reads: list[PartitionRead] | None = None  # what try_complete read and kept for the completion

    def try_complete(self) -> bool:
        reads = self.manager.read_acquirable(self.fetch)
        if not reads:
            return False
        if any(r.result.error for r in reads) or self.manager.min_bytes_satisfied(self.fetch, reads):
            self.reads = reads
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.manager.complete_fetch(self.fetch, self.reads)
        self._on_complete()

    def on_expiration(self) -> None:
        self.manager.expired_fetches += 1  # DelayedShareFetchMetrics.ExpiresPerSec


def group_key(group_id: str, topic: str, partition: int) -> tuple[str, str, str, int]:
    """DelayedShareFetchGroupKey (the partition key is the (topic, partition) the ActionQueue uses)."""
    return ("share-group", group_id, topic, partition)


def rotate(partitions: list[tuple[SharePartitionId, str]], epoch: int) -> list[tuple[SharePartitionId, str]]:
    """PartitionRotateStrategy.ROUND_ROBIN by the session epoch."""
    n = len(partitions)
    if n <= 1 or epoch < 1 or epoch % n == 0:
        return partitions
    k = epoch % n
    return partitions[k:] + partitions[:k]


class SharePartitionManager:
    def __init__(self, node_id: int, metadata: ClusterMetadata, replica_manager: ReplicaManager,
                 persister: SharePersister, configs: ShareGroupConfigs, clock: Clock, max_sessions: int) -> None:
        self.node_id = node_id
        self.metadata = metadata
        self.replica_manager = replica_manager
        self.persister = persister
        self.configs = configs
        self.clock = clock
        self.timer = Timer(clock)  # share-group-lock-timeout
        # the ShareFetch purgatory (its own timer, as Kafka's): woken by appends through the ActionQueue
        self.purgatory = DelayedOperationPurgatory(DelayedShareFetch.PURGATORY, Timer(clock))
        replica_manager.actions.completers.append(self._appended)
        self.sessions = ShareSessionCache(max_sessions)
        self.partitions: dict[PartitionKey, SharePartition] = {}
        self.expired_fetches = 0
        # ShareGroupMetrics: acknowledgements by type, partition load times
        self.acknowledgements: dict[tuple[str, int], int] = {}  # (group, acknowledge type) -> records
        self.failed_acknowledgements = 0
        self.fetches = 0

    # -- share-partitions ----------------------------------------------------------------------
    def _partition_of(self, topic_id: uuid.UUID, index: int) -> Partition | None:
        topic = self.metadata.topics_by_id.get(topic_id)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def cached(self, group_id: str, topic_id: uuid.UUID, index: int) -> SharePartition | None:
        """The share-partition led here, None once it is not (fenced and dropped on the way)."""
        key = (group_id, topic_id, index)
        sp = self.partitions.get(key)
        if sp is None:
            return None
        p = self._partition_of(topic_id, index)
        if p is None or p.leader_id != self.node_id or p.leader_epoch != sp.leader_epoch:
            self._remove(key)
            return None
        return sp

    def _remove(self, key: PartitionKey) -> None:
        """removeSharePartitionFromCache: fenced, and the fetches waiting on it woken."""
        sp = self.partitions.pop(key, None)
        if sp is not None:
            sp.fence()
            self.purgatory.check_and_complete(group_key(key[0], sp.topic, key[2]))

    def _get_or_create(self, group_id: str, topic_id: uuid.UUID, index: int) -> SharePartition:
        sp = self.cached(group_id, topic_id, index)
        if sp is not None:
            return sp
        p = self._partition_of(topic_id, index)
        if p is None:
            raise ShareError(ErrorCode.unknown_topic_or_partition)
        if p.leader_id != self.node_id:
            raise ShareError(ErrorCode.not_leader_or_follower,
                             f"Leader not local for partition {p.topic.name}-{index} on broker {self.node_id}")
        cfg = self.configs
        log_ = p.log
        settings = GroupSettings(
            record_lock_duration_ms=lambda: cfg.record_lock_duration_ms(group_id),
            delivery_count_limit=lambda: cfg.delivery_count_limit(group_id),
            max_record_locks=lambda: cfg.max_record_locks(group_id),
            renew_enabled=lambda: cfg.renew_enabled(group_id),
            auto_offset_reset=lambda: cfg.auto_offset_reset(group_id))

        def for_timestamp(ts: int) -> int:
            found = log_.offset_for_timestamp(ts)
            return found[0] if found is not None else log_.high_watermark

        offsets = Offsets(earliest=lambda: log_.log_start_offset, latest=lambda: log_.high_watermark,
                          for_timestamp=for_timestamp, now_ms=self.clock.monotonic_ms)
        topic = p.topic.name
        sp = SharePartition(group_id, topic, topic_id, index, p.leader_epoch, settings, self.timer, self.persister,
                            offsets, lambda: self._notify(group_id, topic, index))
        self.partitions[(group_id, topic_id, index)] = sp
        return sp

    def _appended(self, key: tuple[str, int]) -> None:
        """Records appended to (or the high watermark moved on) a partition: the share fetches
        waiting on it may complete."""
        self.purgatory.check_and_complete(key)

    def _notify(self, group_id: str, topic: str, index: int) -> None:
        self.purgatory.check_and_complete(group_key(group_id, topic, index))

    # -- ShareFetch -------------------------------------------------------------------------------
    def fetch_messages(self, fetch: ShareFetch, epoch: int, on_done: Callable[[], None]) -> DelayedShareFetch | None:
        """fetchMessages / processShareFetch: ``fetch.results`` is filled when ``on_done`` is called."""
        if not fetch.partitions or fetch.max_records == 0 or fetch.params.max_bytes == 0:
            on_done()
            return None
        self.fetches += 1
        keys: list[object] = []
        for key, topic in rotate(fetch.partitions, epoch):
            topic_id, index = key
            try:
                sp = self._get_or_create(fetch.group_id, topic_id, index)
                err = sp.maybe_initialize()
                if err is not None:
                    if err.error is not ErrorCode.leader_not_available:
                        self._remove((fetch.group_id, topic_id, index))
                    raise err
            except ShareError as e:
                fetch.erroneous[key] = (e.error, e.message)
                continue
            fetch.share_partitions[key] = sp
            keys += [group_key(fetch.group_id, topic, index), (topic, index)]
        if len(fetch.erroneous) == len(fetch.partitions):
            self._add_erroneous(fetch)
            on_done()
            return None
        op = DelayedShareFetch(self, fetch, on_done)
        self.purgatory.try_complete_else_watch(op, keys)
        return op

    def read_acquirable(self, fetch: ShareFetch) -> list[PartitionRead]:
        """acquirablePartitions + readFromLog: each share-partition that can acquire records, read
        from its next fetch offset."""
        chosen = []
        for key, sp in fetch.share_partitions.items():
            if key in fetch.erroneous or sp.state.value != "ACTIVE":
                continue
            if sp.can_acquire():
                chosen.append((key, sp, sp.next_fetch_offset()))
        if not chosen:
            return []
        share = max(fetch.params.max_bytes // len(chosen), 1)  # PartitionMaxBytesStrategy.UNIFORM
        cps = [CachedPartition(topic=sp.topic, topic_id=sp.topic_id, partition=sp.partition, fetch_offset=offset,
                               max_bytes=share) for _, sp, offset in chosen]
        results = self.replica_manager.read_from_local_log(fetch.params, cps)
        return [PartitionRead(key, sp, offset, r) for (key, sp, offset), r in zip(chosen, results)]

    def min_bytes_satisfied(self, fetch: ShareFetch, reads: list[PartitionRead]) -> bool:
        """isMinBytesSatisfied: each partition's bytes from its fetch offset to the end, at most its
        share of max_bytes.  What the reads returned is a lower bound of that (each read is bounded by
        the share too), enough when it reaches min_bytes (a fetch with records: nothing read twice);
        else the bytes are counted in the logs."""
        share = max(fetch.params.max_bytes // len(reads), 1)
        if sum(min(r.result.size_bytes, share) for r in reads) >= fetch.params.min_bytes and \
                all(r.result.partition is not None for r in reads):
            return True
        total = 0
        for r in reads:
            p = r.result.partition
            if p is None:
                return True
            log_ = p.log
            end = log_.last_stable_offset if fetch.params.isolation_level == READ_COMMITTED else log_.high_watermark
            if r.fetch_offset < end:
                total += log_.bytes_available(r.fetch_offset, end, share)
        return total >= fetch.params.min_bytes

    def complete_fetch(self, fetch: ShareFetch, reads: list[PartitionRead] | None) -> None:
        """DelayedShareFetch.onComplete + ShareFetchUtils.processFetchResponse."""
        if reads is None:
            reads = self.read_acquirable(fetch)
        acquired_count = 0
        for r in reads:
            res = r.result
            out = PartitionResult()
            if res.error is not ErrorCode.none:
                if res.error is ErrorCode.offset_out_of_range and res.partition is not None:
                    r.sp.update_cache_and_offsets(res.partition.log.log_start_offset)
                else:
                    out.error = res.error
                fetch.results[r.key] = out
                continue
            records = res.records_bytes()
            batches = fetched_batches(records)
            acquired, count = r.sp.acquire(fetch.member_id, fetch.mode, fetch.batch_size,
                                           fetch.max_records - acquired_count, r.fetch_offset, batches,
                                           [(t.producer_id, t.first_offset) for t in res.aborted_transactions or []])
            if acquired:
                out.records = slice_records(records, batches, acquired)
                out.acquired = acquired
                acquired_count += count
            fetch.results[r.key] = out
        self._add_erroneous(fetch)

    @staticmethod
    def _add_erroneous(fetch: ShareFetch) -> None:
        for key, (error, message) in fetch.erroneous.items():
            fetch.results[key] = PartitionResult(error, message)

    # -- acknowledgements and sessions ---------------------------------------------------------------
    def acknowledge(self, member_id: str, group_id: str,
                    batches: dict[SharePartitionId, list[tuple[int, int, list[int]]]]
                    ) -> dict[SharePartitionId, tuple[ErrorCode, str | None]]:
        """acknowledge: per partition, NONE or why not (UNKNOWN_TOPIC_OR_PARTITION when this broker has
        no such share-partition)."""
        out: dict[SharePartitionId, tuple[ErrorCode, str | None]] = {}
        for key, acks in batches.items():
            topic_id, index = key
            sp = self.cached(group_id, topic_id, index)
            if sp is None:
                out[key] = (ErrorCode.unknown_topic_or_partition, "This server does not host this topic-partition.")
                self.failed_acknowledgements += 1
                continue
            err = sp.acknowledge(member_id, acks)
            self._notify(group_id, sp.topic, index)
            if err is None:
                counts = self.acknowledgements
                for first, last, types in acks:
                    if len(types) == 1:
                        counts[group_id, types[0]] = counts.get((group_id, types[0]), 0) + last - first + 1
                    else:
                        for t in types:
                            counts[group_id, t] = counts.get((group_id, t), 0) + 1
                out[key] = (ErrorCode.none, None)
                continue
            self.failed_acknowledgements += 1
            if err.error in (ErrorCode.not_leader_or_follower, ErrorCode.unknown_topic_or_partition,
                             ErrorCode.group_id_not_found):
                self._remove((group_id, topic_id, index))
            out[key] = (err.error, err.message)
        return out

    def release_session(self, group_id: str, member_id: str) -> ErrorCode:
        """releaseSession: the session goes and the member's acquired records are released."""
        session = self.sessions.remove(group_id, member_id)
        if session is None:
            return ErrorCode.share_session_not_found
        for (topic_id, index), _cp in session.partitions.items():
            sp = self.cached(group_id, topic_id, index)
            if sp is None:
                continue
            err = sp.release_acquired_records(member_id)
            if err is not None and err.error in (ErrorCode.not_leader_or_follower,
                                                 ErrorCode.unknown_topic_or_partition):
                self._remove((group_id, topic_id, index))
            self._notify(group_id, sp.topic, index)
        return ErrorCode.none

    def connection_closed(self, conn_id: int) -> None:
        """ShareSessionCache's ClientConnectionDisconnectListener."""
        entry = self.sessions.by_conn.pop(conn_id, None)
        if entry is None:
            return
        (group_id, member_id), stale = entry
        if not stale and self.sessions.get(group_id, member_id) is not None:
            self.sessions.evictions += 1
            self.release_session(group_id, member_id)
        if self.sessions.members(group_id) == 0:  # onGroupEmpty
            for key in [k for k in self.partitions if k[0] == group_id]:
                self._remove(key)

    def shutdown(self) -> None:
        """The process stops: nothing expires any more."""
        self.broker_stopped()
        self.purgatory.shutdown()
        self.timer.close()

    def broker_stopped(self) -> None:
        """The broker stopped: its sessions, share-partitions and locks are gone with it (the state
        written to the share coordinator stays)."""
        for sp in self.partitions.values():
            sp.fence()
            for b in sp.cached.values():
                for _lo, _hi, s in b.states():
                    s.clear_lock()
        self.partitions.clear()
        self.sessions.clear()

    # -- observing --------------------------------------------------------------------------------------
    def group_partitions(self, group_id: str) -> list[SharePartition]:
        return [sp for (g, _t, _p), sp in self.partitions.items() if g == group_id]


def fetched_batches(records: bytes | memoryview) -> list[FetchedBatch]:
    """The record batches of a read (a trailing partial batch is left out, as Kafka's batch iterator
    does); a control batch's first record tells an ABORT marker."""
    out = []
    view = memoryview(records)
    pos = 0
    while pos + LOG_OVERHEAD + 49 <= len(view):
        h = parse_header(view, pos)
        end = pos + h.size_bytes
        if end > len(view):
            break
        abort = False
        if h.is_control:
            try:
                _, recs = decode_records(view[pos:end])
                key = recs[0].key if recs else None
                abort = key is not None and len(key) >= 4 and int.from_bytes(key[2:4], "big") == CONTROL_ABORT
            except Exception:  # noqa: BLE001 - a marker that does not decode is not an abort
                abort = False
        out.append(FetchedBatch(h.base_offset, h.base_offset + h.last_offset_delta, h.producer_id,
                                h.is_transactional, abort, h.size_bytes))
        pos = end
    return out


def slice_records(records: bytes | memoryview, batches: list[FetchedBatch], acquired: list[Acquired]) -> bytes | memoryview:
    """ShareFetchUtils.maybeSliceFetchRecords: only the batches the acquired records are in."""
    if len(batches) <= 1:
        return records
    first, last = acquired[0].first_offset, acquired[-1].last_offset
    start = size = 0
    first_overlap = batches[0]
    for b in batches[1:]:
        if b.base_offset <= first:
            start += first_overlap.size_bytes
            first_overlap = b
        elif b.base_offset > last:
            break
        else:
            size += b.size_bytes
    size += first_overlap.size_bytes
    if start == 0 and size == len(records):
        return records
    return memoryview(records)[start:start + size]
