"""TxnOffsetCommit (key 28): v0-6.

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
  the group coordinator maps it).  v5 adds the partition instead (KIP-890
  part 2: a TV2 client sends no AddOffsetsToTxn), whatever the config says.
* v6 names topics by id: an id the cluster does not know (or the zero id) is
  UNKNOWN_TOPIC_ID for its partitions, answered by the broker.
* The member is checked as OffsetCommit checks it (unknown member,
  generation, FENCED_INSTANCE_ID), but not the group's state: no
  REBALANCE_IN_PROGRESS; generation -1 without a member id is accepted from
  the v0-2 producers that send no group metadata (KIP-447 came with v3), also
  by a consumer group with members.  A consumer group's stale member epoch is
  ILLEGAL_GENERATION before v6, STALE_MEMBER_EPOCH from v6; a generation for a
  group that does not exist ILLEGAL_GENERATION before v6, GROUP_ID_NOT_FOUND
  from v6.
* The offsets wait under the producer id until the transaction's marker
  reaches the ``__consumer_offsets`` partition: COMMIT commits them, ABORT
  drops them; until then OffsetFetch with require_stable answers
  UNSTABLE_OFFSET_COMMIT for them.

Version notes:
* v1 clients back off on throttle.  v2 committed leader epoch.
* v3 flexible; member id, generation, group instance id (KIP-447).
* v4 TRANSACTION_ABORTABLE (KIP-890).  v5 adds the offsets partition (KIP-890
  part 2, by the request version as Kafka decides it: a client sends v5 only to
  a cluster at transaction.version 2).
* v6 topic ids instead of names, GROUP_ID_NOT_FOUND, STALE_MEMBER_EPOCH and
  UNKNOWN_TOPIC_ID (KIP-1319).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..state.cluster_view import TopicPartition
from ..group.group import OffsetAndMetadata
from ..request import RequestContext, Response
from ..txn.coordinator import GROUP_METADATA_TOPIC
from ..txn.verification import (
    AddPartitionsToTxnManager,
    operation_for_txn_offset_commit_version,
)
from .common import ZERO_UUID, AnsweredTopics, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import TxnOffsetCommitRequest

API_KEY = ApiKey.TXN_OFFSET_COMMIT

# what the verifying broker's answer becomes for the group coordinator: the coordinator errors are
# NOT_ENOUGH_REPLICAS from ReplicaManager, which CoordinatorOperationExceptionHelper answers as
# COORDINATOR_NOT_AVAILABLE
_COORDINATOR_ERRORS = frozenset({ErrorCode.coordinator_not_available, ErrorCode.not_coordinator,
                                 ErrorCode.coordinator_load_in_progress, ErrorCode.network_exception})


def _verified(ctx: RequestContext, req: TxnOffsetCommitRequest) -> ErrorCode:
    """The coordinator runtime's scheduleTransactionalWriteOperation: is the group's offsets
    partition in the transaction (v5+: add it, as Produce v12+ does)?  Below v5 only while
    transaction.partition.verification.enable is on; v5+ always (ReplicaManager's
    maybeSendPartitionToTransactionCoordinator: nothing else adds the partition)."""
    txn = ctx.broker.txn
    operation = operation_for_txn_offset_commit_version(ctx.version)
    if not operation.supports_epoch_bump and not txn.config.partition_verification_enable:
        return ErrorCode.none
    tp = (GROUP_METADATA_TOPIC, ctx.broker.groups.registry.partition_for(req.group_id))
    error = AddPartitionsToTxnManager(txn).verify(req.transactional_id, tp, req.producer_id, req.producer_epoch,
                                                   operation)
    return ErrorCode.coordinator_not_available if error in _COORDINATOR_ERRORS else error


USE_TOPIC_IDS_SINCE = 6  # TxnOffsetCommitResponse.useTopicIds


def handle(ctx: RequestContext, req: TxnOffsetCommitRequest) -> Response:
    now = ctx.broker.clock.time_ms()
    by_id = ctx.version >= USE_TOPIC_IDS_SINCE
    offsets: dict[TopicPartition, OffsetAndMetadata | ErrorCode] = {}
    layout: list[tuple[str, uuid.UUID, list[tuple[int, TopicPartition]]]] = []
    for t in req.topics:
        parts: list[tuple[int, TopicPartition]] = []
        if by_id:
            asked = t.topic_id or ZERO_UUID
            topic = ctx.metadata.topics_by_id.get(asked) if asked != ZERO_UUID else None
            name, topic_id = (topic.name, topic.topic_id) if topic is not None else ("", asked)
        else:
            topic = ctx.metadata.topics.get(t.name)
            name, topic_id = t.name, topic.topic_id if topic is not None else ZERO_UUID
        for p in t.partitions:
            # a topic id the cluster does not know: keyed by the id, so two of them stay apart
            key: TopicPartition = (name or str(topic_id), p.partition_index)
            if by_id and topic is None:
                offsets[key] = ErrorCode.unknown_topic_id
            elif ctx.metadata.partition(name, p.partition_index) is None:
                offsets[key] = ErrorCode.unknown_topic_or_partition
            else:
                offsets[key] = OffsetAndMetadata(p.committed_offset, p.committed_leader_epoch,
                                                 p.committed_metadata or "", now)
            parts.append((p.partition_index, key))
        layout.append((name, topic_id, parts))
    if not any(isinstance(om, OffsetAndMetadata) for om in offsets.values()):
        errors: dict[TopicPartition, ErrorCode] = {k: om for k, om in offsets.items() if isinstance(om, ErrorCode)}
    else:
        # no verification for a request this broker will not serve
        error = ctx.broker.groups.registry.validate_group_status(req.group_id, ctx.node_id) or _verified(ctx, req)
        if error is not ErrorCode.none:
            errors = {k: om if isinstance(om, ErrorCode) else error for k, om in offsets.items()}
        else:
            errors = ctx.broker.groups.commit_transactional_offsets(
                ctx.node_id, req.group_id, req.producer_id, req.member_id,
                req.group_instance_id, req.generation_id, offsets, ctx.version)
    # KafkaApis.handleTxnOffsetCommitRequest: what the broker answers itself (unknown topics and
    # partitions) goes into TxnOffsetCommitResponse.Builder, one entry per topic (by id from v6, else by
    # name; an unknown topic is listed even without partitions), and the coordinator's topics are merged
    # after it; a topic the cluster has, asked with no partitions, goes neither to the coordinator nor
    # into the answer
    answered = AnsweredTopics(by_id)
    coordinator: list[dict[str, Any]] = []
    for name, topic_id, parts in layout:
        known = ctx.metadata.topics.get(name) is not None if name else False
        mine = [(i, key) for i, key in parts if isinstance(offsets[key], ErrorCode)]
        if mine or not known:
            answered.topic(name, topic_id)["partitions"].extend(
                {"partition_index": i, "error_code": errors[key]} for i, key in mine)
        sent = [{"partition_index": i, "error_code": errors[key]} for i, key in parts
                if not isinstance(offsets[key], ErrorCode)]
        if sent:
            coordinator.append({"name": name, "topic_id": topic_id, "partitions": sent})
    topics = answered.merge(coordinator)
    return Response({"topics": topics}, partition_errors(topics, "partitions"))


def error_response(ctx: RequestContext, req: TxnOffsetCommitRequest, error: ErrorCode) -> Response:
    topics = [{"name": t.name, "topic_id": t.topic_id, "partitions": [
        {"partition_index": p.partition_index, "error_code": error} for p in t.partitions]} for t in req.topics]
    return Response({"topics": topics}, partition_errors(topics, "partitions"))
