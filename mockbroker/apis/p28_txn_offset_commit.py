"""TxnOffsetCommit (key 28): v0-5.

Behavior (Kafka's KafkaApis.handleTxnOffsetCommitRequest,
GroupCoordinatorService.commitTransactionalOffsets and
OffsetMetadataManager.commitTransactionalOffset; see ``mockbroker/group/offsets.py``):
* A partition the cluster does not have is UNKNOWN_TOPIC_OR_PARTITION; the
  rest go to the group's coordinator (INVALID_GROUP_ID for an empty id,
  NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE elsewhere).
* With transaction.partition.verification.enable (KIP-890 part 1) the group's
  ``__consumer_offsets`` partition must already be in the producer's
  transaction (AddOffsetsToTxn): the transaction coordinator is asked, as
  the coordinator runtime's transactional write asks it.  Not in it:
  TRANSACTION_ABORTABLE from v4, INVALID_TXN_STATE before; a fenced epoch
  INVALID_PRODUCER_EPOCH; no live transaction coordinator
  COORDINATOR_NOT_AVAILABLE (NOT_ENOUGH_REPLICAS from the verification, as
  the group coordinator maps it).  v5 on a cluster at transaction.version 2
  adds the partition instead (KIP-890 part 2: no AddOffsetsToTxn).
* The member is checked as OffsetCommit checks it (unknown member,
  generation, FENCED_INSTANCE_ID), but not the group's state: no
  REBALANCE_IN_PROGRESS; generation -1 without a member id is accepted from
  the v0-2 producers that send no group metadata (KIP-447 came with v3).
  A consumer group's stale member epoch is ILLEGAL_GENERATION.
* The offsets wait under the producer id until the transaction's marker
  reaches the ``__consumer_offsets`` partition: COMMIT commits them, ABORT
  drops them; until then OffsetFetch with require_stable answers
  UNSTABLE_OFFSET_COMMIT for them.

Version notes:
* v1 clients back off on throttle.  v2 committed leader epoch.
* v3 flexible; member id, generation, group instance id (KIP-447).
* v4 TRANSACTION_ABORTABLE (KIP-890).  v5 implicit add at transaction version 2.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..group.group import OffsetAndMetadata
from ..request import Deferred, RequestContext
from ..txn.coordinator import GROUP_METADATA_TOPIC
from ..txn.metadata import TV_2, TopicPartition

API_KEY = ApiKey.TXN_OFFSET_COMMIT

# what the verification's answer becomes for the group coordinator (AddPartitionsToTxnManager, then
# CoordinatorOperationExceptionHelper: NOT_ENOUGH_REPLICAS -> COORDINATOR_NOT_AVAILABLE)
_VERIFY_ERRORS = {
    ErrorCode.producer_fenced: ErrorCode.invalid_producer_epoch,
    ErrorCode.coordinator_not_available: ErrorCode.coordinator_not_available,
    ErrorCode.not_coordinator: ErrorCode.coordinator_not_available,
    ErrorCode.coordinator_load_in_progress: ErrorCode.coordinator_not_available,
}


def _verified(ctx: RequestContext, req: Any, done: Callable[[ErrorCode], None]) -> None:
    """The coordinator runtime's scheduleTransactionalWriteOperation: is the group's offsets
    partition in the transaction (or, TV2 v5+, add it)?"""
    txn = ctx.broker.txn
    if not txn.txn_manager.config.partition_verification_enable:
        done(ErrorCode.none)
        return
    tp = (GROUP_METADATA_TOPIC, ctx.broker.groups.registry.partition_for(req.group_id))
    v = ctx.version

    def mapped(error: ErrorCode) -> None:
        if error is ErrorCode.transaction_abortable and v < 4:
            error = ErrorCode.invalid_txn_state
        done(_VERIFY_ERRORS.get(error, error))

    if v >= 5 and txn.txn_manager.config.transaction_version >= TV_2:
        txn.handle_add_partitions(req.transactional_id, req.producer_id, req.producer_epoch, [tp], mapped, TV_2)
    else:
        txn.handle_verify_partitions(req.transactional_id, req.producer_id, req.producer_epoch, [tp],
                                     lambda errors: mapped(errors[tp]))


def handle(ctx: RequestContext, req: Any) -> Deferred:
    now = ctx.broker.clock.time_ms()
    offsets: dict[TopicPartition, OffsetAndMetadata | ErrorCode] = {}
    layout: list[tuple[str, list[tuple[int, TopicPartition]]]] = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            key = (t.name, p.partition_index)
            if ctx.metadata.partition(t.name, p.partition_index) is None:
                offsets[key] = ErrorCode.unknown_topic_or_partition
            else:
                offsets[key] = OffsetAndMetadata(p.committed_offset, getattr(p, "committed_leader_epoch", -1),
                                                 p.committed_metadata or "", now)
            parts.append((p.partition_index, key))
        layout.append((t.name, parts))
    deferred = Deferred()

    def answer(errors: dict[TopicPartition, ErrorCode]) -> None:
        deferred.complete({"topics": [
            {"name": name, "partitions": [{"partition_index": i, "error_code": errors[key]} for i, key in parts]}
            for name, parts in layout]})

    def commit(error: ErrorCode) -> None:
        if error is not ErrorCode.none:
            answer({key: om if isinstance(om, ErrorCode) else error for key, om in offsets.items()})
            return
        answer(ctx.broker.groups.commit_transactional_offsets(
            ctx.node_id, req.group_id, req.producer_id, getattr(req, "member_id", ""),
            getattr(req, "group_instance_id", None), getattr(req, "generation_id", -1), offsets))

    if not any(isinstance(om, OffsetAndMetadata) for om in offsets.values()):
        answer({key: om for key, om in offsets.items() if isinstance(om, ErrorCode)})
        return deferred
    status = ctx.broker.groups.registry.validate_group_status(req.group_id, ctx.node_id)
    if status is not None:  # no verification for a request this broker will not serve
        commit(status)
        return deferred
    _verified(ctx, req, commit)
    return deferred


def error_response(ctx: RequestContext, req: Any, error: ErrorCode) -> dict[str, Any]:
    return {"topics": [{"name": t.name, "partitions": [
        {"partition_index": p.partition_index, "error_code": error} for p in t.partitions]} for t in req.topics]}
