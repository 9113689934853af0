"""DescribeTopicPartitions (key 75): v0-0 (KIP-966).

Behavior (Kafka's ``DescribeTopicPartitionsRequestHandler`` and ``KRaftMetadataCache.describeTopicResponse``):
* The topics asked for (an empty list: every topic), from the cursor's topic on, in name order, each
  with its id, is_internal, and its partitions from the cursor's partition on: leader (-1 when it is
  down or lacks the request's listener), leader epoch, replicas and ISR, offline replicas, and the
  eligible leader replicas and last known ELR (empty: replicas leave the ISR only by lagging or
  stopping here, and mockbroker keeps no ELR).
* Paging: at most min(response_partition_limit, max.request.partition.size.limit) partitions (at
  least 1); when a topic does not fit, ``next_cursor`` names the topic and partition to go on from
  (a whole topic left out starts at partition 0).
* A named topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for an
  illegal name (when listing every topic there are none).
* A cursor whose topic is not among the named topics, or with a negative partition:
  INVALID_REQUEST for every topic asked for (Kafka's error response).
* With an authorizer: only the topics the client may DESCRIBE are described; a named one it may not
  comes after the others with TOPIC_AUTHORIZATION_FAILED (Kafka: in a HashSet's order, here in name
  order).  Authorized operations: the client's on the topic (AuthHelper.authorizedOperations).

Version notes:
* v0 only (flexible); clients never back off on the throttle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import AclOperation, ResourceType
from ..state.metadata import INTERNAL_TOPICS, validate_topic_name
from ..request import RequestContext, Response
from .common import ZERO_UUID, authorized, authorized_operations, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import DescribeTopicPartitionsRequest

API_KEY = ApiKey.DESCRIBE_TOPIC_PARTITIONS


def handle(ctx: RequestContext, req: DescribeTopicPartitionsRequest) -> Response:
    metadata = ctx.metadata
    cursor = req.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    fetch_all = not req.topics
    names = set(metadata.topics) if fetch_all else {t.name for t in req.topics}
    names = {n for n in names if _java_order(n) >= _java_order(cursor_topic)}  # String.compareTo
    if cursor is not None and ((not fetch_all and cursor.topic_name not in names) or cursor.partition_index < 0):
        return error_response(ctx, req, ErrorCode.invalid_request)
    denied = sorted((n for n in names if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, n)),
                    key=_java_order)
    names.difference_update(denied)
    alive = {b.node_id for b in metadata.live_brokers()}
    reachable = {b.node_id for b in metadata.live_brokers(ctx.listener_name)}
    remaining = max(min(metadata.config["max.request.partition.size.limit"], req.response_partition_limit), 1)
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in sorted(names, key=_java_order):
        if remaining <= 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = metadata.topics.get(name)
        if topic is None:
            if not fetch_all:
                error = (ErrorCode.invalid_topic_exception if validate_topic_name(name) is not None
                         else ErrorCode.unknown_topic_or_partition)
                topics.append({"error_code": error, "name": name, "topic_id": ZERO_UUID,
                               "is_internal": name in INTERNAL_TOPICS, "partitions": [],
                               "topic_authorized_operations": authorized_operations(ctx, ResourceType.TOPIC, name)})
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        upper = min(len(topic.partitions), start + remaining)
        parts = []
        for p in topic.partitions[start:upper]:
            parts.append({
                "error_code": ErrorCode.none, "partition_index": p.index,
                "leader_id": p.leader_id if p.leader_id in reachable else -1,
                "leader_epoch": p.leader_epoch,
                "replica_nodes": list(p.replicas), "isr_nodes": list(p.isr),
                "eligible_leader_replicas": [], "last_known_elr": [],
                "offline_replicas": [r for r in p.replicas if r not in alive or r not in reachable],
            })
        topics.append({"error_code": ErrorCode.none, "name": name, "topic_id": topic.topic_id,
                       "is_internal": name in INTERNAL_TOPICS, "partitions": parts,
                       "topic_authorized_operations": authorized_operations(ctx, ResourceType.TOPIC, name)})
        if upper < len(topic.partitions):
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= len(parts)
    if not fetch_all:
        topics += [{"error_code": ErrorCode.topic_authorization_failed, "name": n, "topic_id": ZERO_UUID,
                    "is_internal": False, "partitions": []} for n in denied]
    return Response({"topics": topics, "next_cursor": next_cursor},
                    partition_errors(topics, "partitions", topic_errors=True))


def _java_order(name: str) -> bytes:
    """Java's String order (UTF-16 code units), for names of any characters a request may carry."""
    return name.encode("utf-16-be")


def error_response(ctx: RequestContext, req: DescribeTopicPartitionsRequest, error: ErrorCode) -> Response:
    """DescribeTopicPartitionsRequest.getErrorResponse: every topic asked for with the error."""
    topics: list[dict[str, Any]] = [{"error_code": error, "name": t.name, "topic_id": ZERO_UUID, "is_internal": False,
                                     "partitions": []} for t in req.topics]
    return Response({"topics": topics, "next_cursor": None},
                    partition_errors(topics, "partitions", topic_errors=True))
