"""Produce (key 0): v3-13 (advertised from v0 as Kafka 4.x does; v0-2 close the connection).

Behavior:
* As ``KafkaApis.handleProduceRequest``: a topic that does not exist
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
from protocol.errors import ErrorCode
from protocol.records import TRANSACTIONAL_FLAG
from protocol.registry import ApiKey

from ..delayed_produce import DelayedProduce, PartitionResponse
from ..metadata import Partition
from ..replica_manager import ProduceEntry
from ..journal import PartitionRecord
from ..request import Answer, CloseConnection, Deferred, NoResponse, Outcome, RequestContext, Response
from ..authorizer import AclOperation, ResourceType
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
    """``RequestUtils.hasTransactionalRecords``: the first batch of some partition is transactional."""
    return any(pd.records is not None and len(pd.records) > 22 and pd.records[16] == 2
               and pd.records[22] & TRANSACTIONAL_FLAG
               for td in req.topic_data for pd in td.partition_data)


def handle(ctx: RequestContext, req: ProduceRequest) -> Outcome:
    v = ctx.version
    metadata = ctx.metadata
    injected = ctx.injected
    tid = req.transactional_id
    if (tid is None and _has_transactional_records(req)) or (
            tid is not None and not authorized(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid)):
        # KafkaApis.handleProduceRequest: transactional records need a transactional id the client
        # may write; the whole request gets the error (ProduceRequest.getErrorResponse)
        if req.acks == 0:
            return CloseConnection("a produce request with acks=0 failed: transactional records without a "
                                   "transactional id")
        error = PartitionResponse(ErrorCode.transactional_id_authorization_failed)
        body = {"responses": [{"name": td.name if v < 13 else None, "topic_id": td.topic_id,
                               "partition_responses": [_partition(pd.index, error) for pd in td.partition_data]}
                              for td in req.topic_data], "node_endpoints": []}
        return Response(body, partition_errors(body["responses"], "partition_responses", "index"))
    # (topic response, [(partition index, its partition if known, ProduceEntry or the error it gets
    # here)]) in request order
    layout: list[tuple[dict[str, Any], list[tuple[int, Partition | None, ProduceEntry | ErrorCode]]]] = []
    entries: list[ProduceEntry] = []
    for td in req.topic_data:
        name = td.name if v < 13 else None
        topic_id = td.topic_id
        topic, terr = resolve_topic(metadata, name, topic_id, v >= 13)
        shown = name if topic is None else topic.name
        if shown is not None and not authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC, shown):
            topic, terr = None, ErrorCode.topic_authorization_failed  # before existence, as KafkaApis
        parts: list[tuple[int, Partition | None, ProduceEntry | ErrorCode]] = []
        for pd in td.partition_data:
            if topic is None:
                parts.append((pd.index, None, terr))
            elif not 0 <= pd.index < len(topic.partitions):
                parts.append((pd.index, None, ErrorCode.unknown_topic_or_partition))
            elif injected is not None and injected.applies(topic.name, pd.index):
                parts.append((pd.index, topic.partitions[pd.index], injected.error))  # nothing appended
            else:
                entry = ProduceEntry(topic.partitions[pd.index], pd.records)
                entries.append(entry)
                parts.append((pd.index, entry.partition, entry))
        layout.append(({"name": name if topic is None else topic.name,
                        "topic_id": topic_id if topic is None else topic.topic_id}, parts))

    acks = req.acks
    sizes = {(e.partition.topic.name, e.partition.index): len(e.records or b"") for e in entries}

    def respond(responses: list[PartitionResponse]) -> Answer:
        """KafkaApis' sendResponseCallback: map the results back to the wire."""
        by_entry = {id(e): r for e, r in zip(entries, responses)}
        leaders: dict[int, Any] = {}
        topics = []
        any_error = False
        for head, parts in layout:
            out = []
            for index, partition, item in parts:
                r = PartitionResponse(item) if isinstance(item, ErrorCode) else by_entry[id(item)]
                entry = _partition(index, r)
                if r.error is ErrorCode.not_leader_or_follower and v >= 10 and partition is not None:
                    entry["current_leader"] = leader_info(partition)  # KIP-951
                    node = metadata.brokers.get(partition.leader_id)
                    if node is not None and node.alive:
                        leaders[node.node_id] = node
                any_error = any_error or r.error is not ErrorCode.none
                out.append(entry)
            topics.append({**head, "partition_responses": out})
        if acks == 0:
            if any_error:
                return CloseConnection("a partition of a produce request with acks=0 failed")
            return NoResponse([PartitionRecord(t, p, 0, n) for (t, p), n in sizes.items()])
        return Response({"responses": topics, "node_endpoints": node_endpoints(leaders.values(), ctx.listener_name)},
                        partition_errors(topics, "partition_responses", "index", sizes=sizes))

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
