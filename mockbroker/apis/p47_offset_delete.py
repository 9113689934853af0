"""OffsetDelete (key 47): v0-0.

Behavior (Kafka's ``KafkaApis.handleOffsetDeleteRequest`` and ``OffsetMetadataManager.deleteOffsets``):
* With an authorizer: DELETE on the group (GROUP_AUTHORIZATION_FAILED, the whole request), then READ
  on each topic: TOPIC_AUTHORIZATION_FAILED for the partitions of a topic the client may not read.
* A topic the cluster does not have, or a partition it lacks: UNKNOWN_TOPIC_OR_PARTITION for those
  partitions, answered by the broker; the rest go to the group's coordinator.
* The group's own errors are the top-level error code with no topics: INVALID_GROUP_ID (empty id),
  NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND (no such group), NON_EMPTY_GROUP
  (a classic group with members whose protocol type is not ``consumer``).
* Per partition: GROUP_SUBSCRIBED_TO_TOPIC while a member subscribes to the topic (a classic
  consumer group's members' subscriptions at its last generation, a KIP-848 group's members' topic
  names and regexes), else the committed offset (and any transactional offset waiting for its
  marker) is removed: OffsetFetch answers -1 and a consumer starts by its auto.offset.reset.

Version notes:
* v0 only; clients back off on the throttle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..authorizer import AclOperation, ResourceType
from ..cluster_view import TopicPartition
from ..request import RequestContext, Response
from .common import authorized, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import OffsetDeleteRequest

API_KEY = ApiKey.OFFSET_DELETE


def handle(ctx: RequestContext, req: OffsetDeleteRequest) -> Response:
    metadata = ctx.metadata
    answered: dict[TopicPartition, ErrorCode] = {}  # the broker's own answers
    valid: list[tuple[str, list[int]]] = []
    for t in req.topics:
        if not authorized(ctx, AclOperation.READ, ResourceType.TOPIC, t.name):
            answered.update({(t.name, p.partition_index): ErrorCode.topic_authorization_failed for p in t.partitions})
            continue
        if t.name not in metadata.topics:
            answered.update({(t.name, p.partition_index): ErrorCode.unknown_topic_or_partition for p in t.partitions})
            continue
        indexes: list[int] = []
        for p in t.partitions:
            if metadata.partition(t.name, p.partition_index) is None:
                answered[(t.name, p.partition_index)] = ErrorCode.unknown_topic_or_partition
            else:
                indexes.append(p.partition_index)
        if indexes:
            valid.append((str(t.name), indexes))
    error, deleted = ctx.broker.groups.delete_offsets(ctx.node_id, req.group_id, valid)
    if error is not ErrorCode.none:  # OffsetDeleteResponse.Builder.merge: the error replaces the rest
        return Response({"error_code": error, "topics": []})
    answered.update(deleted)
    topics: list[dict[str, Any]] = []
    for t in req.topics:
        parts = [{"partition_index": p.partition_index, "error_code": answered[(t.name, p.partition_index)]}
                 for p in t.partitions]
        topics.append({"name": t.name, "partitions": parts})
    return Response({"error_code": ErrorCode.none, "topics": topics}, partition_errors(topics, "partitions"))


def error_response(ctx: RequestContext, req: OffsetDeleteRequest, error: ErrorCode) -> Response:
    return Response({"error_code": error, "topics": []})
