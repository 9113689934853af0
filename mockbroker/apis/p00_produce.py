"""Produce (key 0): v3-13 (advertised from v0 as Kafka 4.x does; v0-2 close the connection).

Behavior:
* As ``KafkaApis.handleProduceRequest``, which keys each partition by its TopicIdPartition in maps:
  a partition listed twice is answered once and only its last entry is appended; a topic with no
  partitions is not answered.  Before anything else the first batch of each partition is read
  (``RequestUtils.hasTransactionalRecords``): a size field below 14 or a magic above 2 there is
  CORRUPT_MESSAGE for the whole request (``ProduceRequest.getErrorResponse``: every partition once,
  nothing appended; acks=0 closes the connection).  Then ``ProduceRequest.validateRecords`` per
  partition: no batch, more than one, or not magic 2 is INVALID_RECORD, zstd below v7
  UNSUPPORTED_COMPRESSION_TYPE (these answers carry no message and every offset -1), and an unknown
  compression id below v7 is UNKNOWN_SERVER_ERROR for the whole request.
* A topic that does not exist
  (UNKNOWN_TOPIC_OR_PARTITION, or UNKNOWN_TOPIC_ID at v13) or a partition it
  does not have (UNKNOWN_TOPIC_OR_PARTITION) is answered here; every other
  partition goes down in one call, ``ReplicaManager.append_records``, which
  owns the rest of the validation, the append, the idempotent-producer state
  and the wait (see ``replica_manager.py`` for the order of its checks).
* Transactional records (the first batch of some partition) in a request
  without a transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every
  partition, nothing appended, as ``KafkaApis.handleProduceRequest``.
* acks must be -1, 0 or 1, else every partition that exists gets
  INVALID_REQUIRED_ACKS and nothing is appended.
* acks=0: no response at all; any partition error closes the connection, as
  Kafka does.  acks=1 answers once appended.  acks=-1 first needs an ISR of
  at least min.insync.replicas (NOT_ENOUGH_REPLICAS, nothing appended), then
  waits in the produce purgatory (``DelayedProduce``) until the high
  watermark passes its records, answering REQUEST_TIMED_OUT for partitions
  still waiting at the request's timeout.
* NOT_LEADER_OR_FOLLOWER carries the current leader and its endpoint from
  v10 (KIP-951), added here as Kafka's response callback adds them.
* A transactional batch opens (or continues) its producer's transaction in the
  partition.  KIP-890 (transaction.partition.verification.enable, default
  true): when the request names a transactional id and the producer has no
  transaction open in the partition at the batch's epoch, the coordinator is
  asked first (``txn/verification.py``): v0-10 a partition not in the
  transaction is INVALID_TXN_STATE, v11 TRANSACTION_ABORTABLE; v12+ adds the
  partition to the transaction (transaction version 2 clients send no
  AddPartitionsToTxn), whatever the config says.  At v12+ CONCURRENT_TRANSACTIONS
  (the last transaction's markers pending) is asked again inside the broker
  every add.partitions.to.txn.retry.backoff.ms for up to
  add.partitions.to.txn.retry.backoff.max.ms, the request waiting, before it is
  answered.  NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
  COORDINATOR_LOAD_IN_PROGRESS (and before v12 CONCURRENT_TRANSACTIONS) from
  the coordinator are answered NOT_ENOUGH_REPLICAS; PRODUCER_FENCED is
  INVALID_PRODUCER_EPOCH.
* An injected error (``faults.py``) goes to the partitions its rule names
  (every partition when it names none), which append nothing; the others are
  served as usual.

Version notes:
* v3 transactional id, magic 2 only.  v5 log_start_offset.  v6 clients back off (KIP-219).
* v7 zstd allowed.  v8 record_errors and error_message.  v9 flexible.
* v10 current_leader and node_endpoints on NOT_LEADER_OR_FOLLOWER (KIP-951).
* v11 TRANSACTION_ABORTABLE from verification (KIP-890 part 1).  v12 the partition is added to
  the transaction (transaction version 2, KIP-890 part 2).  v13 topic ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.codec import timedelta_ms
from protocol.errors import CorruptRecordBatch, ErrorCode
from protocol.records import COMPRESSION_MASK, TRANSACTIONAL_FLAG, Compression, first_batch, split_batches
from protocol.registry import ApiKey

from ..server.delayed_produce import DelayedProduce, PartitionResponse
from ..state.metadata import Partition
from ..server.replica_manager import ProduceEntry
from ..observe.journal import PartitionRecord
from ..request import Answer, CloseConnection, Deferred, NoResponse, Outcome, RequestContext, Response
from ..security.authorizer import AclOperation, ResourceType
from .common import authorized, leader_info, node_endpoints, partition_errors, resolve_topic

if TYPE_CHECKING:
    from protocol.request_types import ProduceRequest

API_KEY = ApiKey.PRODUCE


def _partition(index: int, r: PartitionResponse) -> dict[str, Any]:
    return {"index": index, "error_code": r.error, "base_offset": r.base_offset,
            "log_append_time": r.log_append_time_ms, "log_start_offset": r.log_start_offset,
            "error_message": r.error_message,
            "record_errors": [{"batch_index": i, "batch_index_error_message": m} for i, m in r.record_errors]}


def _has_transactional_records(req: ProduceRequest) -> bool:
    """``RequestUtils.hasTransactionalRecords``: the first batch of some partition is transactional
    (partitions after the first transactional one are not looked at).  Reading a first batch whose
    size field is below 14 or whose magic is not 0-2 raises CorruptRecordBatch, which Kafka gives
    the whole request."""
    for td in req.topic_data:
        for pd in td.partition_data:
            if pd.records is None:
                continue
            batch = first_batch(pd.records)
            if batch is not None and batch[16] >= 2 and len(batch) > 22 and batch[22] & TRANSACTIONAL_FLAG:
                return True
    return False


class _WholeRequest(Exception):
    """An exception Kafka lets out of ``handleProduceRequest``: the whole request gets its error."""

    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def _validate_records(version: int, records: bytes | memoryview | None) -> PartitionResponse | None:
    """``ProduceRequest.validateRecords`` for one partition: its error (an ApiException), or None.
    Raises ``_WholeRequest`` where Kafka's check throws something else (an unknown compression id
    read below v7: IllegalArgumentException, UNKNOWN_SERVER_ERROR for the whole request)."""
    if records is None:
        return None
    # KafkaApis answers these PartitionResponse(Errors.forException(e)): no message, offsets -1
    try:
        batches = split_batches(records)
    except CorruptRecordBatch as e:
        return PartitionResponse(e.error)
    if not batches or batches[0][16] != 2:  # none, or not magic 2
        return PartitionResponse(ErrorCode.invalid_record)
    if version < 7:
        batch = batches[0]
        codec = batch[22] & COMPRESSION_MASK if len(batch) > 22 else 0
        if codec > Compression.ZSTD:
            raise _WholeRequest(ErrorCode.unknown_server_error, None)
        if codec == Compression.ZSTD:
            return PartitionResponse(ErrorCode.unsupported_compression_type)
    if len(batches) > 1:
        return PartitionResponse(ErrorCode.invalid_record)
    return None


def _error_response(req: ProduceRequest, v: int, error: ErrorCode, message: str | None) -> Outcome:
    """``ProduceRequest.getErrorResponse``: every partition the request names, once (its
    ``partitionSizes`` map), with the error; acks=0 has no response, so the connection is closed."""
    if req.acks == 0:
        return CloseConnection(f"a produce request with acks=0 failed: {error.name}")
    seen: dict[tuple[str | None, Any, int], None] = {}
    for td in req.topic_data:
        for pd in td.partition_data:
            seen[(td.name if v < 13 else None, td.topic_id, pd.index)] = None
    failed = PartitionResponse(error, error_message=message)
    topics: dict[tuple[str | None, Any], list[dict[str, Any]]] = {}
    for name, topic_id, index in seen:
        topics.setdefault((name, topic_id), []).append(_partition(index, failed))
    body = {"responses": [{"name": name, "topic_id": topic_id, "partition_responses": parts}
                          for (name, topic_id), parts in topics.items()], "node_endpoints": []}
    return Response(body, partition_errors(body["responses"], "partition_responses", "index"))


def handle(ctx: RequestContext, req: ProduceRequest) -> Outcome:
    v = ctx.version
    metadata = ctx.metadata
    injected = ctx.injected
    tid = req.transactional_id
    try:
        transactional = _has_transactional_records(req)
    except CorruptRecordBatch as e:  # KafkaApis.handle's error path: the whole request
        return _error_response(req, v, e.error, str(e))
    if transactional and (tid is None or not authorized(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                                         tid)):
        # KafkaApis.handleProduceRequest: transactional records need a transactional id the client
        # may write; the whole request gets the error (ProduceRequest.getErrorResponse)
        return _error_response(req, v, ErrorCode.transactional_id_authorization_failed, None)
    # KafkaApis keys each partition by its TopicIdPartition in maps: a partition listed twice is
    # answered once, and its last entry is the one appended.  Each key's answer, in the order
    # Kafka merges its maps (appended, unauthorized, non-existing, invalid): a later one wins.
    # key: (topic name or None, topic id, index) -> (partition if known, ProduceEntry or error)
    Key = tuple[str, Any, int]  # noqa: N806 - Kafka's TopicIdPartition: (topic name, topic id, index)
    answers: dict[Key, Partition | None] = {}  # every partition named, once
    # KafkaApis' maps, in the order it merges them (a later one's answer wins): unauthorized,
    # non-existing, invalid (and partitions an injected fault fails, which append nothing)
    unauthorized: dict[Key, PartitionResponse] = {}
    non_existing: dict[Key, PartitionResponse] = {}
    invalid: dict[Key, PartitionResponse] = {}
    appended: dict[Key, ProduceEntry] = {}
    try:
        for td in req.topic_data:
            name = td.name if v < 13 else None
            topic_id = td.topic_id
            topic, terr = resolve_topic(metadata, name, topic_id, v >= 13)
            shown = name if topic is None else topic.name
            key_name = shown if shown is not None else ""
            key_id = topic.topic_id if topic is not None else topic_id
            for pd in td.partition_data:
                key = (key_name, key_id, pd.index)
                partition = topic.partitions[pd.index] if topic is not None and 0 <= pd.index < len(
                    topic.partitions) else None
                answers[key] = partition
                if topic is None and v >= 13:
                    non_existing[key] = PartitionResponse(ErrorCode.unknown_topic_id)
                elif shown is not None and not authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC, shown):
                    unauthorized[key] = PartitionResponse(ErrorCode.topic_authorization_failed)
                elif partition is None:
                    non_existing[key] = PartitionResponse(terr if topic is None else ErrorCode.unknown_topic_or_partition)
                elif pd.records is None:
                    # Kafka's bug: null records of a partition it would append to throw a
                    # NullPointerException and Kafka 4.4.0 never answers, writing nothing
                    # (docs/differences.md).  The sensible answer that keeps what is written the
                    # same: every partition INVALID_RECORD, none appended.
                    raise _WholeRequest(ErrorCode.invalid_record, None)
                else:
                    error = _validate_records(v, pd.records)
                    if error is None and injected is not None and injected.applies(partition.topic.name, pd.index):
                        error = PartitionResponse(injected.error)  # nothing appended
                    if error is not None:
                        invalid[key] = error
                    else:
                        appended[key] = ProduceEntry(partition, pd.records)
    except _WholeRequest as e:
        return _error_response(req, v, e.error, e.message)
    entries = list(appended.values())
    acks = req.acks
    sizes = {(e.partition.topic.name, e.partition.index): len(e.records or b"") for e in entries}

    def respond(responses: list[PartitionResponse]) -> Answer:
        """KafkaApis' sendResponseCallback: map the results back to the wire."""
        results = dict(zip(appended, responses))
        leaders: dict[int, Any] = {}
        topics: dict[tuple[str | None, Any], list[dict[str, Any]]] = {}
        any_error = False
        for key, partition in answers.items():
            r = invalid.get(key) or non_existing.get(key) or unauthorized.get(key) or results[key]
            entry = _partition(key[2], r)
            if r.error is ErrorCode.not_leader_or_follower and v >= 10 and partition is not None:
                entry["current_leader"] = leader_info(partition)  # KIP-951
                node = metadata.brokers.get(partition.leader_id)
                if node is not None and node.alive:
                    leaders[node.node_id] = node
            any_error = any_error or r.error is not ErrorCode.none
            topics.setdefault((key[0], key[1]), []).append(entry)
        if acks == 0:
            if any_error:
                return CloseConnection("a partition of a produce request with acks=0 failed")
            return NoResponse([PartitionRecord(t, p, 0, n) for (t, p), n in sizes.items()])
        body = [{"name": name, "topic_id": topic_id, "partition_responses": parts}
                for (name, topic_id), parts in topics.items()]
        return Response({"responses": body, "node_endpoints": node_endpoints(leaders.values(), ctx.listener_name)},
                        partition_errors(body, "partition_responses", "index", sizes=sizes))

    if not entries:
        return respond([])
    deferred = Deferred()
    deferred.partitions = [PartitionRecord(t, p, 0, n) for (t, p), n in sizes.items()]

    def parked(op: DelayedProduce) -> None:  # appended after the coordinator verified it: the wait
        deferred.delayed = op

    deferred.delayed = ctx.broker.replica_manager.append_records(
        entries, acks, timedelta_ms(req.timeout), v, lambda responses: deferred.complete_with(lambda: respond(responses)),
        transactional_id=req.transactional_id, on_parked=parked)
    return deferred


# Produce gives an injected error to the partitions it applies to and appends the others.
HANDLES_INJECTED_ERRORS = True
