"""What ShareFetch (78) and ShareAcknowledge (79) share: Kafka's ``KafkaApis.handleAcknowledgements``
(the acknowledgement batches by share-partition, checked by ``validateAcknowledgementBatches``, then
``SharePartitionManager.acknowledge``), ``isMemberIdValid`` and the response's partition entries."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from protocol.errors import ErrorCode

from ..security.authorizer import AclOperation, ResourceType
from ..observe.journal import PartitionRecord
from ..state.metadata import ClusterMetadata
from ..request import RequestContext, Response
from ..share.partition import RENEW, REJECT
from ..share.session import SharePartitionId
from .common import ZERO_UUID, authorized, leader_info

# (partition key, topic name or None): an acknowledgement's partition and its topic
AckBatches = dict[SharePartitionId, list[tuple[int, int, list[int]]]]
AckResults = dict[SharePartitionId, tuple[ErrorCode, str | None]]
# LeaderIdAndEpoch as Share{Fetch,Acknowledge}ResponseData builds it: the schema gives no defaults, so 0, 0
NO_LEADER = {"leader_id": 0, "leader_epoch": 0}


def error_response_body(error: ErrorCode) -> Response:
    """A ShareFetch or ShareAcknowledge answered with a top-level error only: Share{Fetch,Acknowledge}
    Request.getErrorResponse, which keeps the error's code and drops the exception's message (the
    broker logs it), so no such answer carries an error_message."""
    return Response({"error_code": error, "error_message": None, "acquisition_lock_timeout": 0,
                     "responses": [], "node_endpoints": []})


def invalid_ids(group_id: str | None, member_id: str | None) -> str | None:
    """Why ShareFetch/ShareAcknowledge's ids are refused (INVALID_REQUEST), None when they are not: a null
    group id, or a member id that is not valid (KafkaApis.isMemberIdValid: null, empty, over 36 chars)."""
    if group_id is None:
        return "Invalid group id in the request."
    if member_id is None or member_id == "" or len(member_id) > 36:
        return "Invalid member id in the request."
    return None


def refused(ctx: RequestContext, group_id: str | None, member_id: str | None) -> Response | None:
    """The top-level answer to a ShareFetch/ShareAcknowledge refused before any partition, in Kafka's
    order: a null group id (INVALID_REQUEST), no READ on the group (GROUP_AUTHORIZATION_FAILED), a
    member id that is not valid (INVALID_REQUEST); None when it goes on."""
    if group_id is not None and not authorized(ctx, AclOperation.READ, ResourceType.GROUP, group_id):
        return error_response_body(ErrorCode.group_authorization_failed)
    return None if invalid_ids(group_id, member_id) is None else error_response_body(ErrorCode.invalid_request)


def readable_topics(ctx: RequestContext) -> Callable[[str], bool]:
    """Whether the client may READ a topic (the request's ``authorizedTopics``), decided once per name."""
    seen: dict[str, bool] = {}

    def readable(name: str) -> bool:
        if name not in seen:
            seen[name] = authorized(ctx, AclOperation.READ, ResourceType.TOPIC, name)
        return seen[name]
    return readable


def acknowledgements(topics: Iterable[Any], metadata: ClusterMetadata, erroneous: AckResults) -> AckBatches:
    """getAcknowledgeBatchesFrom...Request: the batches of every partition named (an unknown topic id:
    UNKNOWN_TOPIC_ID in ``erroneous``)."""
    out: AckBatches = {}
    for t in topics:
        topic_id = t.topic_id or ZERO_UUID
        known = topic_id in metadata.topics_by_id
        for p in t.partitions:
            batches = getattr(p, "acknowledgement_batches", ())
            key = (topic_id, p.partition_index)
            if not known:
                if batches:
                    erroneous[key] = (ErrorCode.unknown_topic_id, None)
                continue
            if batches:
                out.setdefault(key, []).extend(
                    (b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in batches)
    return out


def _valid(batches: list[tuple[int, int, list[int]]], supports_renew: bool) -> bool:
    """validateAcknowledgementBatches for one partition."""
    previous_last = -1
    top = RENEW if supports_renew else REJECT
    for first, last, types in batches:
        if first > last or first <= previous_last or not types:
            return False
        if len(types) > 1 and last - first + 1 != len(types):
            return False
        if any(t < 0 or t > top for t in types):
            return False
        previous_last = last
    return True


def handle_acknowledgements(broker: Any, group_id: str, member_id: str, batches: AckBatches, erroneous: AckResults,
                            supports_renew: bool, readable: Callable[[str], bool]) -> AckResults:
    """handleAcknowledgements: INVALID_REQUEST for a partition's malformed batches,
    TOPIC_AUTHORIZATION_FAILED for a topic the client may not read, UNKNOWN_TOPIC_OR_PARTITION for a
    partition the topic lacks, else what the share-partition answers."""
    results: AckResults = dict(erroneous)
    interested: AckBatches = {}
    for key, acks in batches.items():
        topic_id, index = key
        topic = broker.metadata.topics_by_id.get(topic_id)
        if not _valid(acks, supports_renew):
            results[key] = (ErrorCode.invalid_request, None)
        elif topic is not None and not readable(topic.name):
            results[key] = (ErrorCode.topic_authorization_failed, None)
        elif topic is None or not 0 <= index < len(topic.partitions):
            results[key] = (ErrorCode.unknown_topic_or_partition, None)
        else:
            interested[key] = acks
    if interested:
        results.update(broker.share_partitions.acknowledge(member_id, group_id, interested))
    return results


def current_leader(metadata: ClusterMetadata, topic_id: uuid.UUID, index: int, error: ErrorCode,
                   leaders: dict[int, Any]) -> dict[str, int]:
    """A partition's current_leader: its leader and epoch after NOT_LEADER_OR_FOLLOWER or
    FENCED_LEADER_EPOCH (the leader's node added to ``leaders`` for node_endpoints), else the schema's
    0, 0 (processShare{Fetch,Acknowledge}Response sets it only on those errors)."""
    if error not in (ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch):
        return dict(NO_LEADER)
    topic = metadata.topics_by_id.get(topic_id)
    if topic is None or not 0 <= index < len(topic.partitions):
        return {"leader_id": -1, "leader_epoch": -1}  # getCurrentLeader: no leader known
    p = topic.partitions[index]
    node = metadata.brokers.get(p.leader_id)
    if node is not None and node.alive:
        leaders[node.node_id] = node
    return leader_info(p)


def journal_partitions(metadata: ClusterMetadata, entries: Iterable[tuple[uuid.UUID, int, int, int]]
                       ) -> list[PartitionRecord]:
    """The journal's partitions of a share response: (topic id, partition, error, bytes), named."""
    out = []
    for topic_id, index, error, size in entries:
        topic = metadata.topics_by_id.get(topic_id)
        if topic is not None:
            out.append(PartitionRecord(topic.name, index, error, size))
    return out
