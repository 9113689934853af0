"""One broker's ``ReplicaManager``: appending produced records and reading them for fetches.

Mirrors Kafka's ``kafka.server.ReplicaManager`` as ``KafkaApis`` uses it: the
Produce handler makes one call down, ``append_records(entries, acks, timeout,
on_done)``, and the Fetch handler one, ``fetch_messages(params, partitions,
on_done)``; each answers through its callback, at once or later from this
broker's purgatory (``DelayedProduce``, ``DelayedFetch``).  The handlers only
map the wire to these calls and the results back to the wire.

``append_records`` first verifies the transactional partitions of a Produce
naming a transactional id with the coordinator (``handleProduceAppend``, KIP-890,
below), then checks, in Kafka's order: the required acks (-1, 0 or 1,
else INVALID_REQUIRED_ACKS for every partition and nothing appended), then
per partition: leadership (``getPartitionOrException``:
NOT_LEADER_OR_FOLLOWER), exactly one v2 batch (INVALID_RECORD), zstd below
Produce v7 (UNSUPPORTED_COMPRESSION_TYPE), a compression id above 4
(UNKNOWN_SERVER_ERROR), the batch itself
(``protocol.records.validate_batch``: base offset 0, max.message.bytes,
CRC32C, offset range and record count, no control batch from a client, a
sequence with a producer id), the records (``check_record_count``, Kafka's
``LogValidator`` iterating them: the count must be the records'; off with
``mock.produce.check.records=false``), min.insync.replicas
for acks=-1 (``Partition.appendRecordsToLeader``: NOT_ENOUGH_REPLICAS, nothing
appended), the records ``LogValidator.validateRecord`` refuses (read in the same walk
as their count, ``_validate_records``: a null key on a compacted topic, INVALID_RECORD;
a timestamp outside message.timestamp.before/after.max.ms on a CreateTime topic, or a
LogAppendTime attribute set by the client where Kafka refuses it, INVALID_TIMESTAMP;
one RecordError per refused record, the whole batch refused; a client batch saying
LogAppendTime that passes is stored as CreateTime), then the producer's sequence, epoch and transaction state
(``ProducerStateManager``, with the request's verification guard; a duplicate of
one of the last five batches is answered with its original offsets).  A
transactional batch opens its producer's transaction in the partition.  A
partition that fails appends nothing; the others still append.

KIP-890 produce-time verification (``ReplicaManager.handleProduceAppend`` and
``maybeSendPartitionsToTransactionCoordinator``): when the Produce names a
transactional id, each partition whose batch is transactional starts a
verification in its log (``maybe_start_transaction_verification``: not the leader,
NOT_LEADER_OR_FOLLOWER; an epoch below the producer's, INVALID_PRODUCER_EPOCH; a
transaction already open at the batch's epoch needs none), and the partitions
that need one go to the coordinator in one call (``txn_verifier``,
``txn/verification.py``: at Produce v0-11 only while
transaction.partition.verification.enable is on; at v12+ always, since that call
adds the partitions to the transaction).  A request whose transactional batches
carry more than one producer id is INVALID_PRODUCER_ID_MAPPING for every partition.
At Produce v12+ an answer with CONCURRENT_TRANSACTIONS (the last transaction's
markers are still being written) is asked again after
add.partitions.to.txn.retry.backoff.ms, as long as
min(add.partitions.to.txn.retry.backoff.max.ms, request.timeout.ms) has not passed
since the first ask (``maybeRetryOnConcurrentTransactions``, on the broker's
clock); the request waits meanwhile, and so do the requests pipelined behind it on
its connection (one request per connection at a time, as Kafka's muted channel).
Then the partitions that failed get their error (``verification_failure``: the
coordinator errors older clients do not retry become NOT_ENOUGH_REPLICAS) and
append nothing; the others are appended with the verification guard.

``append_txn_marker`` is the log side of WriteTxnMarkers
(``appendRecords`` with origin COORDINATOR and acks=-1): it writes a COMMIT
or ABORT control batch, completes the producer's transaction (the aborted
transaction index, the last stable offset) and reports when the high
watermark passes the marker, through the produce purgatory.
The batch is stored as bytes with its offsets assigned (LogAppendTime: the
broker's time written and the CRC recomputed); records are never decoded.

Appends and high-watermark moves complete delayed operations through the
``ActionQueue``: after the current request's response is sent, as Kafka runs
``ReplicaManager.tryCompleteActions`` in the ``finally`` of
``KafkaApis.handle``, so a Produce is acknowledged before the fetches it
wakes are answered.

Over 500 lines on purpose: as Kafka's ``ReplicaManager``, the produce checks (in Kafka's order),
the transaction markers and the fetch reads work on the same partitions, purgatories and action
queue; each path is a few methods.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from protocol.errors import CorruptRecordBatch, ErrorCode
from protocol.gather import RecordChunks
from protocol.records import (
    COMPRESSION_MASK,
    LONG_MAX,
    LONG_MIN,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG,
    BatchHeader,
    Compression,
    build_end_txn_marker,
    check_record_count,
    clear_log_append_time,
    parse_header,
    record_fields,
    split_batches,
    validate_batch,
    wrap64,
)

from ..common.clock import Clock
from ..state.cluster_view import TopicPartition
from .delayed_fetch import READ_COMMITTED, DelayedFetch
from .delayed_produce import DelayedProduce, PartitionResponse, ProducePartitionStatus
from .fetch_session import CachedPartition
from ..storage.producer_state import SENTINEL_GUARD
from ..storage.log import AbortedTxn, FetchSlice, OffsetOutOfRange, PartitionLog
from ..state.metadata import INTERNAL_TOPICS, ClusterMetadata, Partition
from ..purgatory import DelayedOperationPurgatory, Timer
from ..state.replication import ReplicationSimulator
from ..common.shared_encodings import SharedEncodings

# a partition's record set in a fetch: one stored batch, or several sent unjoined
Records = bytes | memoryview | RecordChunks

log = logging.getLogger("mockbroker.replica_manager")

# KIP-890: AddPartitionsToTxnManager.addOrVerifyTransaction as the produce path calls it:
# (transactional id, producer id, producer epoch, partitions, Produce version, callback); the callback
# gets the partitions that failed and their errors (none: every partition is in the ongoing
# transaction, or at Produce v12+ was just added to it)
TxnVerifier = Callable[[str, int, int, list[TopicPartition], int,
                        Callable[[dict[TopicPartition, ErrorCode]], None]], None]

# Kafka's request.timeout.ms default: it bounds the in-broker retries of CONCURRENT_TRANSACTIONS
# (retryTimeoutMs = min(add.partitions.to.txn.retry.backoff.max.ms, request.timeout.ms))
REQUEST_TIMEOUT_MS = 30_000

# the coordinator errors ReplicaManager.handleProduceAppend turns into NOT_ENOUGH_REPLICAS: older
# clients would not retry them, and NOT_ENOUGH_REPLICAS is retried without a metadata refresh
_VERIFICATION_RETRIABLE = frozenset({ErrorCode.network_exception, ErrorCode.coordinator_load_in_progress,
                                     ErrorCode.coordinator_not_available, ErrorCode.not_coordinator})


def verification_failure(error: ErrorCode, produce_version: int) -> PartitionResponse:
    """The partition's answer when verification failed (``ReplicaManager.handleProduceAppend``'s
    postVerificationCallback): CONCURRENT_TRANSACTIONS stays itself only for clients that add
    partitions through Produce (v12+, transaction version 2), where it is common while the last
    transaction's markers are written."""
    if error in _VERIFICATION_RETRIABLE or (error is ErrorCode.concurrent_transactions and produce_version <= 11):
        return PartitionResponse(ErrorCode.not_enough_replicas, error_message=(
            f"Unable to verify the partition has been added to the transaction. Underlying error: "
            f"{error.name.upper()}"))
    if error is ErrorCode.invalid_txn_state:
        return PartitionResponse(error, error_message="Partition was not added to the transaction")
    return PartitionResponse(error)


def record_errors(batch: memoryview, h: BatchHeader, topic_partition: str, now_ms: int, compacted: bool,
                  log_append_topic: bool, before_ms: int, after_ms: int) -> PartitionResponse | None:
    """``LogValidator.validateRecord`` for each record (``validateKey``, then ``validateTimestamp``)
    and ``processRecordErrors``: None when every record passes, else the partition's answer with one
    record error per refused record -- INVALID_TIMESTAMP when one of them is a timestamp's, else
    INVALID_RECORD naming the first three.  Times in Java's long arithmetic (the bounds printed may
    wrap, as Kafka's do)."""
    lat_batch = bool(h.attributes & TIMESTAMP_TYPE_MASK)
    errors: list[tuple[int, str]] = []
    timestamp_error = False
    for i, (offset, ts, has_key) in enumerate(record_fields(batch, h)):
        if compacted and not has_key:
            errors.append((i, f"Compacted topic cannot accept message without key in topic partition "
                              f"{topic_partition}"))
        elif not log_append_topic and ts != -1:
            diff = wrap64(now_ms - ts)
            if diff > before_ms or wrap64(-diff) > after_ms:
                timestamp_error = True
                errors.append((i, f"Timestamp {ts} of message with offset {offset} is out of range. The timestamp "
                                  f"should be within [{wrap64(now_ms - before_ms)}, {wrap64(now_ms + after_ms)}]"))
        elif lat_batch:
            timestamp_error = True
            errors.append((i, f"Invalid timestamp type in message with offset delta {offset}. Producer should not "
                              "set timestamp type to LogAppendTime."))
    if not errors:
        return None
    if timestamp_error:
        return PartitionResponse(ErrorCode.invalid_timestamp, record_errors=errors,
                                 error_message="One or more records have been rejected due to invalid timestamp")
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    return PartitionResponse(ErrorCode.invalid_record, record_errors=errors, error_message=(
        f"One or more records have been rejected due to {len(errors)} record errors in total, and only showing "
        f"the first three errors at most: [{shown}]"))


class ActionQueue:
    """Delayed operations to re-check once the current request is answered (Kafka's ``ActionQueue``).

    Appends and replication events add the partitions they touched; one pass
    per event-loop turn asks every broker's ``ReplicaManager`` to complete
    what now can (a leader change must also answer the old leader's waiters).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.completers: list[Callable[[TopicPartition], None]] = []
        self._pending: set[TopicPartition] = set()
        self._scheduled = False

    def add(self, partition: Partition) -> None:
        self._pending.add((partition.topic.name, partition.index))
        if not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self.try_complete_actions)

    def try_complete_actions(self) -> None:
        """Each completer for each partition, each guarded as Kafka's ``DelayedActionQueue.tryCompleteActions``
        guards each action: one that raises is logged and the others still run."""
        self._scheduled = False
        keys, self._pending = self._pending, set()
        for key in keys:
            for complete in self.completers:
                try:
                    complete(key)
                except Exception:  # noqa: BLE001 - a broker bug in one completion must not drop the rest
                    log.exception("Failed to complete the delayed operations of %s-%d", *key)


@dataclass(slots=True)
class ProduceEntry:
    """One partition of a Produce request: its partition (known to exist) and its records."""

    partition: Partition
    records: bytes | memoryview | None


@dataclass(slots=True)
class FetchParams:
    """Kafka's ``FetchParams``: how long and for how much a fetch may wait, and how much it reads."""

    max_wait_ms: int
    min_bytes: int
    max_bytes: int          # min(request max_bytes, fetch.max.bytes, the consumer quota's window)
    isolation_level: int
    by_topic_id: bool
    replica_id: int = -1    # FetchRequest.replicaId(): 0 or more from a follower


@dataclass(slots=True)
class LogReadResult:
    """One partition's read (Kafka's ``LogReadResult``); ``partition`` is set once it was found."""

    error: ErrorCode = ErrorCode.none
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    # the stored batch read, or several as ``RecordChunks`` (sent unjoined, as FileRecords.writeTo)
    records: bytes | memoryview | RecordChunks = b""
    size_bytes: int = 0
    partition: Partition | None = None
    # read_committed: the aborted transactions overlapping what was read (else None, null on the wire)
    aborted_transactions: list[AbortedTxn] | None = None
    # Partition.readRecords: the last fetched epoch diverges from the log: (epoch, end offset)
    diverging_epoch: tuple[int, int] | None = None

    def records_bytes(self) -> bytes | memoryview:
        """The records read as one buffer (several batches joined)."""
        records = self.records
        return bytes(records) if isinstance(records, RecordChunks) else records


@dataclass(slots=True)
class DeleteRecordsResult:
    """One partition's answer to DeleteRecords (``LogDeleteRecordsResult`` and its error)."""

    error: ErrorCode = ErrorCode.none
    low_watermark: int = -1  # DeleteRecordsResponse.INVALID_LOW_WATERMARK on an error
    message: str | None = None  # the exception's message (Kafka logs it; the response has no field)


@dataclass(slots=True)
class _Appended:
    response: PartitionResponse
    next_offset: int = -1  # the offset acks=-1 waits for the high watermark to reach
    produced: bool = False  # appended now or before (a duplicate): acks=-1 waits for it


@dataclass(frozen=True, slots=True)
class VerificationConfig:
    """What the produce path's KIP-890 verification reads of the broker's configuration (Kafka's
    ``AddPartitionsToTxnConfig`` and transaction.partition.verification.enable)."""

    enabled: bool = True                # transaction.partition.verification.enable
    retry_backoff_ms: int = 20          # add.partitions.to.txn.retry.backoff.ms
    retry_backoff_max_ms: int = 100     # add.partitions.to.txn.retry.backoff.max.ms

    @property
    def retry_timeout_ms(self) -> int:
        return min(self.retry_backoff_max_ms, REQUEST_TIMEOUT_MS)


class ReplicaManager:
    def __init__(self, node_id: int, metadata: ClusterMetadata, replication: ReplicationSimulator,
                 actions: ActionQueue, clock: Clock, produce_purge_interval: int, fetch_purge_interval: int,
                 txn_verifier: TxnVerifier | None = None, check_records: bool = True,
                 verification: VerificationConfig = VerificationConfig()) -> None:
        self.node_id = node_id
        self.metadata = metadata
        self.replication = replication
        self.actions = actions
        self.clock = clock
        # One timer per purgatory, as Kafka gives each DelayedOperationPurgatory its own SystemTimer.
        self.produce_purgatory = DelayedOperationPurgatory("Produce", Timer(clock), purge_interval=produce_purge_interval)
        self.fetch_purgatory = DelayedOperationPurgatory("Fetch", Timer(clock), purge_interval=fetch_purge_interval)
        self.shared_encodings = SharedEncodings()
        self.txn_verifier = txn_verifier
        self.verification = verification
        # mock.produce.check.records: walk each batch's records to check its count (LogValidator)
        self.check_records = check_records
        actions.completers.append(self.try_complete_delayed)

    def try_complete_delayed(self, key: TopicPartition) -> None:
        """Complete the delayed produces and fetches watching ``key`` that now can.  The fetches
        complete in one pass (``checkAndComplete``); the responses built in it share what they have
        in common (``shared_encodings``: one encoding for the fetches parked at the same offset)."""
        self.produce_purgatory.check_and_complete(key)
        with self.shared_encodings:
            self.fetch_purgatory.check_and_complete(key)

    # -- produce ---------------------------------------------------------------------------------
    def append_records(self, entries: list[ProduceEntry], acks: int, timeout_ms: int, api_version: int,
                       on_done: Callable[[list[PartitionResponse]], None],
                       transactional_id: str | None = None,
                       on_parked: Callable[[DelayedProduce], None] | None = None) -> DelayedProduce | None:
        """Append every entry (those that fail append nothing) and call ``on_done`` with one
        response per entry, in order: at once, or once the coordinator verified the transactional
        ones (``handleProduceAppend``), and for acks=-1 once the ISR has the records or ``timeout_ms``
        passed.  The ``DelayedProduce`` waiting for that is returned when it is parked at once, else
        handed to ``on_parked`` when it is."""
        txn = self._transactional_batches(entries) if transactional_id is not None else {}
        if len({(pid, epoch) for pid, epoch, _seq in txn.values()}) > 1:
            # handleProduceAppend's InvalidPidMappingException: the request fails as a whole
            on_done([PartitionResponse(ErrorCode.invalid_producer_id_mapping, error_message=(
                "Transactional records contained more than one producer ID")) for _ in entries])
            return None
        add_partition = api_version > 11  # TransactionSupportedOperation.ADD_PARTITION (supportsEpochBump)
        verifier = self.txn_verifier
        if not txn or transactional_id is None or verifier is None or not (add_partition or self.verification.enabled):
            return self._append_verified(entries, {}, {}, acks, timeout_ms, api_version, on_done)
        producer_id, producer_epoch, _seq = next(iter(txn.values()))
        started_ms = self.clock.monotonic_ms()
        tid = transactional_id
        answered_at_once = True  # the first ask answered before append_records returns
        parked_at_once: DelayedProduce | None = None

        def attempt() -> None:
            """maybeSendPartitionsToTransactionCoordinator: start each partition's verification in its
            log, then ask the coordinator about those that need it."""
            errors: dict[int, ErrorCode] = {}
            guards: dict[int, int] = {}
            now_ms = self.clock.time_ms()
            for i, (pid, epoch, seq) in txn.items():
                p = entries[i].partition
                if p.leader_id != self.node_id:
                    errors[i] = ErrorCode.not_leader_or_follower
                    continue
                err, _message, guard = p.producers.maybe_start_transaction_verification(
                    pid, seq, epoch, add_partition, now_ms)
                if err is not ErrorCode.none:
                    errors[i] = err
                elif guard != SENTINEL_GUARD:
                    guards[i] = guard
            if not guards:
                verified(errors, guards)
                return
            index = {(entries[i].partition.topic.name, entries[i].partition.index): i for i in guards}

            def answered(unverified: dict[TopicPartition, ErrorCode]) -> None:
                verified({**errors, **{index[tp]: e for tp, e in unverified.items() if tp in index}}, guards)

            verifier(tid, producer_id, producer_epoch, list(index), api_version, answered)

        def verified(errors: dict[int, ErrorCode], guards: dict[int, int]) -> None:
            """maybeRetryOnConcurrentTransactions (Produce v12+), then postVerificationCallback."""
            if add_partition and ErrorCode.concurrent_transactions in errors.values() \
                    and self.clock.monotonic_ms() - started_ms < self.verification.retry_timeout_ms:
                self.clock.call_later(self.verification.retry_backoff_ms, retry)
                return
            nonlocal parked_at_once
            op = self._append_verified(entries, errors, guards, acks, timeout_ms, api_version, on_done)
            if answered_at_once:
                parked_at_once = op
            elif op is not None and on_parked is not None:
                on_parked(op)

        def retry() -> None:
            try:
                attempt()
            except Exception:  # noqa: BLE001 - a broker bug answers this request, not the clock's loop
                log.exception("Failed to verify a transactional produce of %s", tid)
                on_done([PartitionResponse(ErrorCode.unknown_server_error) for _ in entries])

        attempt()
        answered_at_once = False
        return parked_at_once

    def _transactional_batches(self, entries: list[ProduceEntry]) -> dict[int, tuple[int, int, int]]:
        """``handleProduceAppend``: the entries whose (single) batch is transactional, with its producer
        id, epoch and first sequence (``topicPartitionBatchInfo``); a batch the append would refuse as
        malformed is left to it."""
        out = {}
        for i, e in enumerate(entries):
            records = e.records
            if records is None or len(records) < 61 or records[16] != 2 or not records[22] & TRANSACTIONAL_FLAG:
                continue
            try:
                batches = split_batches(records)
            except CorruptRecordBatch:
                continue
            if len(batches) != 1:
                continue
            h = parse_header(batches[0])
            if h.has_producer_id:
                out[i] = (h.producer_id, h.producer_epoch, h.base_sequence)
        return out

    def _append_verified(self, entries: list[ProduceEntry], errors: dict[int, ErrorCode], guards: dict[int, int],
                         acks: int, timeout_ms: int, api_version: int,
                         on_done: Callable[[list[PartitionResponse]], None]) -> DelayedProduce | None:
        """``postVerificationCallback`` and ``appendRecords``: the entries that failed verification get
        their error; the others are appended with their verification guards."""
        if acks not in (-1, 0, 1):
            on_done([verification_failure(errors[i], api_version) if i in errors
                     else PartitionResponse(ErrorCode.invalid_required_acks) for i in range(len(entries))])
            return None
        now_ms = self.clock.time_ms()
        appended = [_Appended(verification_failure(errors[i], api_version)) if i in errors
                    else self._append_to_leader(e, acks, api_version, now_ms, guards.get(i, SENTINEL_GUARD))
                    for i, e in enumerate(entries)]
        return self._complete_or_watch([e.partition for e in entries], appended, acks, timeout_ms, on_done)

    def _complete_or_watch(self, partitions: list[Partition], appended: list[_Appended], acks: int, timeout_ms: int,
                           on_done: Callable[[list[PartitionResponse]], None]) -> DelayedProduce | None:
        """Answer at once, or (acks=-1) park a ``DelayedProduce`` until the high watermarks pass."""
        responses = [a.response for a in appended]
        waiting = [ProducePartitionStatus(p, a.next_offset, a.response)
                   for p, a in zip(partitions, appended) if acks == -1 and a.produced]
        if not waiting:
            on_done(responses)
            return None
        op = DelayedProduce(timeout_ms, waiting, self.node_id, self.metadata, lambda: on_done(responses))
        keys = [(st.partition.topic.name, st.partition.index) for st in waiting]
        self.produce_purgatory.try_complete_else_watch(op, keys)
        return op

    def _append_to_leader(self, entry: ProduceEntry, acks: int, api_version: int, now_ms: int,
                          guard: int) -> _Appended:
        p = entry.partition
        metadata = self.metadata
        topic = p.topic
        if p.leader_id != self.node_id:
            return _Appended(PartitionResponse(ErrorCode.not_leader_or_follower))
        if entry.records is None:
            return _Appended(PartitionResponse(ErrorCode.invalid_record, error_message="Produce request has no records"))
        try:
            batches = split_batches(entry.records)
            if len(batches) != 1:
                return _Appended(PartitionResponse(
                    ErrorCode.invalid_record, error_message=(
                        "Produce requests with version 3 and above must have exactly one record batch per partition")))
            batch = batches[0]
            codec = batch[22] & COMPRESSION_MASK if len(batch) > 22 and batch[16] == 2 else Compression.NONE
            if codec > Compression.ZSTD:
                # CompressionType.forId throws IllegalArgumentException in LogValidator (below v7 already
                # in ProduceRequest.validateRecords, which Kafka gives the whole request): any other
                # throwable, the log start offset and no message (appendToLocalLog)
                return _Appended(PartitionResponse(ErrorCode.unknown_server_error,
                                                   log_start_offset=p.log.log_start_offset))
            if api_version < 7 and codec == Compression.ZSTD:
                return _Appended(PartitionResponse(
                    ErrorCode.unsupported_compression_type,
                    error_message="Produce requests with version below 7 cannot use ZStandard compression"))
            header = validate_batch(batch, metadata.topic_config(topic, "max.message.bytes"))
            # LogValidator's records: their count, and what validateKey / validateTimestamp read of them
            rejected = self._validate_records(p, batch, header, now_ms)
        except CorruptRecordBatch as e:
            # ReplicaManager.appendToLocalLog: a CorruptRecordException or a record (batch) too large
            # answers -1 as the log start offset; any other throwable (an InvalidRecordException from
            # LogValidator's checks) the log start offset; neither carries a message
            known = e.error in (ErrorCode.corrupt_message, ErrorCode.message_too_large, ErrorCode.record_list_too_large)
            return _Appended(PartitionResponse(e.error, log_start_offset=-1 if known else p.log.log_start_offset))
        log_append = metadata.topic_config(topic, "message.timestamp.type") == "LogAppendTime"
        if header.attributes & TIMESTAMP_TYPE_MASK and rejected is None:
            # a client batch saying LogAppendTime that LogValidator let through (a CreateTime topic, a
            # maxTimestamp in range): stored as CreateTime (DefaultRecordBatch.setMaxTimestamp)
            batch = memoryview(clear_log_append_time(batch))
            header.attributes &= ~TIMESTAMP_TYPE_MASK
        log = p.log
        min_isr = metadata.topic_config(topic, "min.insync.replicas")
        if acks == -1 and len(p.isr) < min_isr:
            # Partition.appendRecordsToLeader's NotEnoughReplicasException: no custom message in the answer
            return _Appended(PartitionResponse(ErrorCode.not_enough_replicas, log_start_offset=log.log_start_offset))
        if rejected is not None:
            # UnifiedLog.append runs LogValidator after Partition.appendRecordsToLeader's min ISR check:
            # a RecordValidationException answers the partition with its records' errors (nothing appended)
            rejected.log_start_offset = log.log_start_offset
            return _Appended(rejected)
        err, duplicate, message = p.producers.check(header, guard, self.verification.enabled)
        if err is not ErrorCode.none:
            # LogAppendResult.errorMessage: Kafka sends the message of these exceptions
            # (OutOfOrderSequenceException, InvalidProducerEpochException, InvalidTxnStateException)
            # to no client (hasCustomErrorMessage=false): it logs them
            logging.getLogger("mockbroker.replica_manager").debug("Produce to %s-%d refused: %s", topic.name, p.index, message)
            return _Appended(PartitionResponse(err, log_start_offset=log.log_start_offset))
        if duplicate is not None:
            # ProducerStateManager found the batch among the last 5: answer with the original offsets,
            # and (UnifiedLog.append: appendInfo.setLogAppendTime(duplicate.timestamp())) the original's
            # timestamp as the log append time whatever the topic's timestamp type: with CreateTime, the
            # batch's max timestamp where a first append answers -1
            return _Appended(PartitionResponse(
                base_offset=duplicate.first_offset, log_append_time_ms=duplicate.timestamp,
                log_start_offset=log.log_start_offset), duplicate.last_offset + 1, produced=True)
        base, last = self._append_to_log(p, batch, header, now_ms, log_append,
                                         lambda base, last: p.producers.update(
                                             header, base, last, now_ms if log_append else header.max_timestamp))
        return _Appended(PartitionResponse(base_offset=base, log_append_time_ms=now_ms if log_append else -1,
                                           log_start_offset=log.log_start_offset), last + 1, produced=True)

    def _append_to_log(self, p: Partition, batch: memoryview, header: BatchHeader, now_ms: int, log_append: bool,
                       update_producer_state: Callable[[int, int], None]) -> tuple[int, int]:
        """The tail of every leader append (``Partition.appendRecordsToLeader``): the batch into the
        log, the producer state updated with its offsets (``update_producer_state(base, last)``),
        the followers told, the delayed operations on the partition re-checked; (base, last)."""
        topic = p.topic
        base, last = p.log.append(batch, header, now_ms, self.metadata.segment_bytes(topic),
                                  self.metadata.segment_roll_ms(topic), log_append)
        update_producer_state(base, last)
        self.replication.on_leader_append(p)
        self.actions.add(p)
        return base, last

    def _validate_records(self, p: Partition, batch: memoryview, h: BatchHeader,
                          now_ms: int) -> PartitionResponse | None:
        """``LogValidator.validateMessagesAndAssignOffsets`` (origin CLIENT) over the records of a
        batch ``validate_batch`` accepted: their count (``check_record_count``, raising
        ``CorruptRecordBatch``), then per record ``validateKey`` (a compacted topic refuses a null key)
        and ``validateTimestamp`` (on a CreateTime topic a timestamp other than -1 must lie within
        [now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]; a batch saying
        LogAppendTime is refused unless that check applies).  Returns the partition's answer when a
        record is refused (``processRecordErrors``: the whole batch goes), else None.

        The cheap part runs on every batch: the walk ``check_record_count`` does anyway also reads
        each record's timestamp delta (only when the topic's bounds can refuse one: a LogAppendTime
        topic, or both bounds at Long.MAX_VALUE, cannot) and, on a compacted topic, its key length.
        When the smallest and largest timestamps lie within the bounds and no key is null, no record
        can be refused; only then is each record read whole (``record_fields``) to name the refused
        ones.  With ``mock.produce.check.records=false`` nothing is walked: the header's base and max
        timestamps stand for the records' and keys are not checked."""
        metadata = self.metadata
        topic = p.topic
        compacted = metadata.is_compacted(topic)
        log_append_topic = metadata.topic_config(topic, "message.timestamp.type") == "LogAppendTime"
        log_append_batch = bool(h.attributes & TIMESTAMP_TYPE_MASK)
        before = metadata.topic_config(topic, "message.timestamp.before.max.ms")
        after = metadata.topic_config(topic, "message.timestamp.after.max.ms")
        bounded = not log_append_topic and (before < LONG_MAX or after < LONG_MAX)
        walk_timestamps = bounded and not log_append_batch  # a LogAppendTime batch's records read as its max
        keyless = False
        if self.check_records:
            scan = check_record_count(batch, h, timestamps=walk_timestamps, keys=compacted)
            keyless = scan.keyless
            lo, hi = h.base_timestamp + scan.min_timestamp_delta, h.base_timestamp + scan.max_timestamp_delta
        else:
            lo, hi = h.base_timestamp, h.max_timestamp
        if log_append_batch:
            lo = hi = h.max_timestamp
            suspect = log_append_topic or hi == -1 or bounded
        else:
            suspect = walk_timestamps
        if suspect and not log_append_topic and hi != -1:
            # every timestamp within the bounds (and within a long: no wrap-around in Java's arithmetic)
            suspect = not (max(now_ms - before, LONG_MIN) <= lo and hi <= min(now_ms + after, LONG_MAX))
        if not keyless and not suspect:
            return None
        return record_errors(batch, h, f"{topic.name}-{p.index}", now_ms, compacted, log_append_topic,
                             before, after)

    # -- transaction markers (WriteTxnMarkers, origin COORDINATOR) ---------------------------------
    def append_txn_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                          coordinator_epoch: int, on_done: Callable[[ErrorCode], None] | None = None,
                          transaction_version: int = 0, timeout_ms: int = 30_000) -> ErrorCode:
        """Write a COMMIT (``commit``) or ABORT marker for ``producer_id`` into a partition this broker
        leads, as ``KafkaApis.handleWriteTxnMarkersRequest`` does through ``appendRecords`` (acks=-1,
        origin COORDINATOR, request.timeout.ms): returns the append's error (NONE: written), and
        ``on_done`` gets the final one once the high watermark passed the marker (or the wait timed out,
        REQUEST_TIMED_OUT; leadership lost, NOT_LEADER_OR_FOLLOWER)."""
        appended = self._append_marker(topic, partition, producer_id, producer_epoch, commit,
                                       coordinator_epoch, transaction_version)
        p = self.metadata.partition(topic, partition)
        error = appended.response.error
        if p is None or not appended.produced:
            if on_done is not None:
                on_done(error)
            return error
        self._complete_or_watch([p], [appended], -1, timeout_ms,
                                lambda responses: on_done(responses[0].error) if on_done is not None else None)
        return error

    def _append_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                       coordinator_epoch: int, transaction_version: int) -> _Appended:
        metadata = self.metadata
        p = metadata.partition(topic, partition)
        if p is None:
            return _Appended(PartitionResponse(ErrorCode.unknown_topic_or_partition))
        if p.leader_id != self.node_id:
            return _Appended(PartitionResponse(ErrorCode.not_leader_or_follower))
        log = p.log
        if producer_id == -1 or producer_epoch == -1:
            # MemoryRecordsBuilder.validateProducerState: "Cannot write transactional messages without a
            # valid producer ID" / "Invalid negative producer epoch" (IllegalArgumentException): any other
            # throwable, UNKNOWN_SERVER_ERROR
            return _Appended(PartitionResponse(ErrorCode.unknown_server_error, log_start_offset=log.log_start_offset))
        min_isr = metadata.topic_config(p.topic, "min.insync.replicas")
        if len(p.isr) < min_isr:
            return _Appended(PartitionResponse(ErrorCode.not_enough_replicas, log_start_offset=log.log_start_offset))
        err, message = p.producers.check_end_txn_marker(producer_id, producer_epoch, coordinator_epoch,
                                                        transaction_version)
        if err is not ErrorCode.none:
            return _Appended(PartitionResponse(err, log_start_offset=log.log_start_offset, error_message=message))
        now_ms = self.clock.time_ms()
        batch = build_end_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit, now_ms)
        log_append = metadata.topic_config(p.topic, "message.timestamp.type") == "LogAppendTime"

        def complete_txn(base: int, _last: int) -> None:
            completed = p.producers.append_end_txn_marker(producer_id, producer_epoch, coordinator_epoch, not commit,
                                                          base, now_ms)
            if completed is not None:
                log.complete_txn(completed)

        base, last = self._append_to_log(p, memoryview(batch), parse_header(batch), now_ms, log_append, complete_txn)
        return _Appended(PartitionResponse(base_offset=base, log_start_offset=log.log_start_offset), last + 1,
                         produced=True)

    # -- DeleteRecords ---------------------------------------------------------------------------
    def delete_records(self, topic: str, partition: int, offset: int) -> DeleteRecordsResult:
        """``ReplicaManager.deleteRecords`` for one partition (``deleteRecordsOnLocalLog`` and
        ``Partition.deleteRecordsOnLeader``): an internal topic is INVALID_TOPIC_EXCEPTION, an unknown
        partition UNKNOWN_TOPIC_OR_PARTITION, one led elsewhere NOT_LEADER_OR_FOLLOWER, a compacted topic
        without delete in its cleanup.policy POLICY_VIOLATION; offset -1 means the high watermark; a
        negative offset, or one above the high watermark, is OFFSET_OUT_OF_RANGE.  Otherwise the log start
        offset moves up to ``offset`` (never down; ``UnifiedLog.maybeIncrementLogStartOffset``): fetches
        below it get OFFSET_OUT_OF_RANGE, ListOffsets earliest answers it, and the segments wholly below
        it go at the next retention pass.  The answer is the low watermark: the log start offset of the
        partition's replicas, which share the leader's log here (Kafka's ``DelayedDeleteRecords`` waits
        until every live follower has fetched the new log start offset; this answers at once)."""
        tp = f"{topic}-{partition}"
        if topic in INTERNAL_TOPICS:
            return DeleteRecordsResult(ErrorCode.invalid_topic_exception,
                                       message=f"Cannot delete records of internal topic {topic}")
        p = self.metadata.partition(topic, partition)
        if p is None:
            return DeleteRecordsResult(ErrorCode.unknown_topic_or_partition,
                                       message=f"Partition {tp} is unknown to broker {self.node_id}")
        if p.leader_id != self.node_id:
            return DeleteRecordsResult(ErrorCode.not_leader_or_follower,
                                       message=f"Leader not local for partition {tp} on broker {self.node_id}")
        policy = self.metadata.topic_config(p.topic, "cleanup.policy")
        if "compact" in policy and "delete" not in policy:
            return DeleteRecordsResult(ErrorCode.policy_violation, message=(
                f"Records of partition {tp} can not be deleted due to the configured policy"))
        log = p.log
        converted = log.high_watermark if offset == -1 else offset
        if converted < 0:
            return DeleteRecordsResult(ErrorCode.offset_out_of_range,
                                       message=f"The offset {converted} for partition {tp} is not valid")
        try:
            log.maybe_increment_log_start_offset(converted)
        except OffsetOutOfRange:
            return DeleteRecordsResult(ErrorCode.offset_out_of_range, message=(
                f"Cannot increment the log start offset to {converted} of partition {tp} since it is larger "
                f"than the high watermark {log.high_watermark}"))
        return DeleteRecordsResult(low_watermark=log.log_start_offset)

    # -- fetch -----------------------------------------------------------------------------------
    def fetch_messages(self, params: FetchParams, partitions: list[CachedPartition],
                       on_done: Callable[[list[LogReadResult]], None]) -> DelayedFetch | None:
        """Read every partition and call ``on_done`` with one result per partition, in order: at
        once when nothing is worth waiting for (``ReplicaManager.fetchMessages``: max_wait 0,
        min_bytes readable, an error or a diverging epoch, or nothing asked), else from the fetch purgatory when
        min_bytes become readable or max_wait passes (read again then)."""
        results = self.read_from_local_log(params, partitions)
        readable = sum(r.size_bytes for r in results)
        errors = any(r.error is not ErrorCode.none or r.diverging_epoch is not None for r in results)
        if params.max_wait_ms <= 0 or not partitions or readable >= params.min_bytes or errors:
            on_done(results)
            return None
        op = DelayedFetch(params.max_wait_ms, list(partitions), params.by_topic_id, params.isolation_level,
                          params.min_bytes, self.node_id, self.metadata,
                          lambda: on_done(self.read_from_local_log(params, partitions)), self.bytes_available)
        self.fetch_purgatory.try_complete_else_watch(op, [(cp.topic, cp.partition) for cp in partitions])
        return op

    def read_from_local_log(self, params: FetchParams, partitions: list[CachedPartition]) -> list[LogReadResult]:
        """``ReplicaManager.readFromLocalLog``: the response is bounded by ``params.max_bytes``,
        each partition by its partition_max_bytes and what is left; the first partition with data
        returns at least one whole batch (KIP-74)."""
        limit = params.max_bytes
        min_one = True
        out = []
        for cp in partitions:
            r = self._read_partition(cp, params, max(limit, 0), min_one)
            if r.size_bytes:
                min_one = False
                limit -= r.size_bytes
            out.append(r)
        return out

    def _read_partition(self, cp: CachedPartition, params: FetchParams, limit: int, min_one: bool) -> LogReadResult:
        """``ReplicaManager.readFromLog`` for one partition: an error result has every offset -1
        (``createLogReadResult``)."""
        metadata = self.metadata
        topic = metadata.topics_by_id.get(cp.topic_id) if params.by_topic_id else metadata.topics.get(cp.topic)
        if topic is None:
            return LogReadResult(ErrorCode.unknown_topic_id if params.by_topic_id
                                 else ErrorCode.unknown_topic_or_partition)
        if not 0 <= cp.partition < len(topic.partitions):
            return LogReadResult(ErrorCode.unknown_topic_or_partition)
        p = topic.partitions[cp.partition]
        if p.leader_id != self.node_id:
            return LogReadResult(ErrorCode.not_leader_or_follower, partition=p)
        req_epoch = cp.current_leader_epoch
        if req_epoch >= 0 and req_epoch != p.leader_epoch:
            return LogReadResult(ErrorCode.fenced_leader_epoch if req_epoch < p.leader_epoch
                                 else ErrorCode.unknown_leader_epoch, partition=p)
        if params.replica_id >= 0 and (params.replica_id == p.leader_id or params.replica_id not in p.replicas):
            # Partition.followerReplicaOrThrow: a fetch from a replica id that is not one of the
            # partition's followers
            return LogReadResult(ErrorCode.unknown_leader_epoch if req_epoch >= 0
                                 else ErrorCode.not_leader_or_follower, partition=p)
        if cp.last_fetched_epoch >= 0:
            # Partition.readRecords: the end offset of the last fetched epoch (lastOffsetForLeaderEpoch)
            log = p.log
            epoch, end = log.end_offset_for_epoch(cp.last_fetched_epoch)
            if end == -1 or epoch == -1 or cp.fetch_offset < log.log_start_offset:
                return LogReadResult(ErrorCode.offset_out_of_range, partition=p)
            if epoch < cp.last_fetched_epoch or end < cp.fetch_offset:
                return LogReadResult(high_watermark=log.high_watermark, last_stable_offset=log.last_stable_offset,
                                     log_start_offset=log.log_start_offset, partition=p, diverging_epoch=(epoch, end))
        log = p.log
        offset, isolation = cp.fetch_offset, params.isolation_level
        if offset == (log.last_stable_offset if isolation == READ_COMMITTED else log.high_watermark) and \
                offset >= log.log_start_offset:
            # at the bound: nothing to read, what the read would answer without reading (Kafka's delayed
            # fetches compare offset metadata before they read: a fetch parked at the end, woken by
            # every append to the partition or acknowledgement of its share group, reads nothing)
            return LogReadResult(high_watermark=log.high_watermark, last_stable_offset=log.last_stable_offset,
                                 log_start_offset=log.log_start_offset, partition=p,
                                 aborted_transactions=[] if isolation == READ_COMMITTED else None)
        max_bytes = min(cp.max_bytes, limit)

        def read() -> tuple[LogReadResult, PartitionLog]:
            result = LogReadResult(high_watermark=log.high_watermark, last_stable_offset=log.last_stable_offset,
                                   log_start_offset=log.log_start_offset, partition=p)
            if offset < log.log_start_offset or offset > log.log_end_offset:
                return LogReadResult(ErrorCode.offset_out_of_range, partition=p), log
            upper = log.last_stable_offset if isolation == READ_COMMITTED else log.high_watermark
            sl, records = self._read_log(log, offset, max_bytes, upper, min_one)
            if sl.size_bytes:
                result.records = records
                result.size_bytes = sl.size_bytes
            if isolation == READ_COMMITTED:
                # LocalLog.read with FetchIsolation.TXN_COMMITTED: nothing read, an empty list; else the
                # aborted transactions from the fetch offset up to the offset after the data read
                result.aborted_transactions = (
                    log.collect_aborted_transactions(offset, sl.next_offset) if sl.size_bytes else [])
            return result, log  # the log held: its id in the key is not reused in the pass

        # the fetches of one completion pass parked at the same place share their result (the
        # response builder then finds it by identity); the key holds what the result reads from the
        # log, so a result read before the log moved is not reused
        result: LogReadResult
        result, _log = self.shared_encodings.read(
            ("partition", id(log), offset, max_bytes, min_one, isolation, log.log_end_offset, log.log_start_offset,
             log.high_watermark, log.last_stable_offset), read)
        return result

    def _read_log(self, log: PartitionLog, offset: int, max_bytes: int, upper: int,
                  min_one: bool) -> tuple[FetchSlice, Records]:
        """``log.read`` and the record set it gives, read once per completion pass for the fetches
        woken at the same offset with the same bounds (outside a pass: read each time).  The key
        holds the log's end, start and upper bound, so a read made before the log moved is not reused."""
        def read() -> tuple[FetchSlice, Records, PartitionLog]:
            sl = log.read(offset, max_bytes, upper, min_one)
            # ReplicaManager.readFromLog: "For FetchRequest version 3, we replace incomplete message sets
            # with an empty one" (every Fetch version served is >= 4: no hard max bytes limit) -- a
            # partition whose first batch does not fit in what the response has left answers no records
            # (a consumer fails on records without one complete batch), and takes nothing from the limit
            if sl.first_entry_incomplete:
                sl = FetchSlice([], 0, offset)
            records: Records = b""
            if sl.size_bytes:
                records = sl.chunks[0] if len(sl.chunks) == 1 else RecordChunks(sl.chunks, sl.size_bytes)
            return sl, records, log  # the log held: its id in the key is not reused in the pass

        sl, records, _log = self.shared_encodings.read(
            ("read", id(log), offset, max_bytes, upper, min_one, log.log_end_offset, log.log_start_offset), read)
        return sl, records

    def bytes_available(self, log: PartitionLog, offset: int, upper: int, cap: int) -> int:
        """``log.bytes_available`` (DelayedFetch's accumulatedSize), once per completion pass for the
        fetches parked at the same offset with the same cap."""
        return int(self.shared_encodings.read(
            ("available", id(log), offset, upper, cap, log.log_end_offset, log.log_start_offset),
            lambda: log.bytes_available(offset, upper, cap)))

    def shutdown(self) -> None:
        """The process stops: nothing in the purgatories expires any more."""
        self.produce_purgatory.shutdown()
        self.fetch_purgatory.shutdown()

    def gauges(self) -> dict[str, dict[str, int]]:
        """PurgatorySize and NumDelayedOperations of this broker's purgatories."""
        return {"Produce": self.produce_purgatory.gauges(), "Fetch": self.fetch_purgatory.gauges()}
