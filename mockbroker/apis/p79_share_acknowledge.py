"""ShareAcknowledge (key 79): v1-2 (KIP-932).

Behavior (Kafka 4.4's ``KafkaApis.handleShareAcknowledgeRequest``):
* A null group id, or a member id null, empty or longer than 36 characters: INVALID_REQUEST.
* The share session must exist (SHARE_SESSION_NOT_FOUND) and the epoch be its (INVALID_SHARE_SESSION_EPOCH;
  0 is never valid here); the epoch then advances.  Epoch -1 acknowledges and closes the session,
  releasing whatever the member still holds.
* Per partition: INVALID_REQUEST for malformed batches (first > last, overlapping or unordered batches,
  no types, a types list not one per offset, an unknown type), UNKNOWN_TOPIC_ID,
  UNKNOWN_TOPIC_OR_PARTITION, INVALID_RECORD_STATE for records the member does not hold; each
  outcome is written to the share coordinator's state before it holds.

Version notes:
* v1: ACCEPT (1), RELEASE (2), REJECT (3) and gaps (0).  v2 (KIP-1222): RENEW (4) and is_renew_ack.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import Body, RequestContext, Response
from ..share.session import FINAL_EPOCH, ShareError
from .common import leader_info, node_endpoints
from .share_acks import NO_LEADER, AckResults, acknowledgements, handle_acknowledgements, journal_partitions, \
    member_id_valid

if TYPE_CHECKING:
    from protocol.request_types import ShareAcknowledgeRequest

API_KEY = ApiKey.SHARE_ACKNOWLEDGE


def _error(error: ErrorCode, message: str | None = None) -> Response:
    return Response({"error_code": error, "error_message": message, "acquisition_lock_timeout": 0,
                     "responses": [], "node_endpoints": []})


def handle(ctx: RequestContext, req: ShareAcknowledgeRequest) -> Response:
    broker = ctx.broker
    group_id = req.group_id
    if group_id is None:
        return _error(ErrorCode.invalid_request, "Invalid group id in the request.")
    member_id = req.member_id
    if member_id is None or not member_id_valid(member_id):
        return _error(ErrorCode.invalid_request, "Invalid member id in the request.")
    manager = broker.share_partitions
    try:
        manager.sessions.acknowledge_session_update(group_id, member_id, req.share_session_epoch)
    except ShareError as e:
        return _error(e.error)
    erroneous: AckResults = {}
    batches = acknowledgements(req.topics, ctx.metadata, erroneous)
    results = handle_acknowledgements(broker, group_id, member_id, batches, erroneous, ctx.version >= 2)
    if req.share_session_epoch == FINAL_EPOCH:
        manager.release_session(group_id, member_id)
    leaders: dict[int, Any] = {}
    topics: list[Body] = []
    by_topic: dict[uuid.UUID, Body] = {}
    journal = []
    for (topic_id, index), (error, message) in results.items():
        entry: Body = {"partition_index": index, "error_code": error, "error_message": message,
                       "current_leader": NO_LEADER}
        if error in (ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch):
            topic = ctx.metadata.topics_by_id.get(topic_id)
            if topic is not None and 0 <= index < len(topic.partitions):
                p = topic.partitions[index]
                entry["current_leader"] = leader_info(p)
                node = ctx.metadata.brokers.get(p.leader_id)
                if node is not None and node.alive:
                    leaders[node.node_id] = node
        t = by_topic.get(topic_id)
        if t is None:
            t = by_topic[topic_id] = {"topic_id": topic_id, "partitions": []}
            topics.append(t)
        t["partitions"].append(entry)
        journal.append((topic_id, index, int(error), 0))
    return Response({"error_code": ErrorCode.none, "error_message": None,
                     "acquisition_lock_timeout": manager.configs.record_lock_duration_ms(group_id),
                     "responses": topics, "node_endpoints": node_endpoints(leaders.values(), ctx.listener_name)},
                    journal_partitions(ctx.metadata, journal))
