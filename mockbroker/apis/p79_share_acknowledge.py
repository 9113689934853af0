"""ShareAcknowledge (key 79): v1-2 (KIP-932).

Behavior (Kafka 4.4's ``KafkaApis.handleShareAcknowledgeRequest``):
* A null group id, or a member id null, empty or longer than 36 characters: INVALID_REQUEST; with an
  authorizer, no READ on the group: GROUP_AUTHORIZATION_FAILED (after the group id's check, before
  the member id's); a topic the client may not READ: TOPIC_AUTHORIZATION_FAILED for its partitions.
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
from ..share.partition import ShareError
from ..share.session import FINAL_EPOCH
from ..controller.features import SHARE_VERSION
from .common import node_endpoints
from .share_acks import (
    AckResults,
    acknowledgements,
    current_leader,
    error_response_body,
    handle_acknowledgements,
    journal_partitions,
    readable_topics,
    refused,
)

if TYPE_CHECKING:
    from protocol.request_types import ShareAcknowledgeRequest

API_KEY = ApiKey.SHARE_ACKNOWLEDGE


def handle(ctx: RequestContext, req: ShareAcknowledgeRequest) -> Response:
    if not ctx.broker.features.enables(SHARE_VERSION):  # share groups off (4.1's default)
        return error_response_body(ErrorCode.unsupported_version)
    broker = ctx.broker
    group_id, member_id = req.group_id, req.member_id
    answer = refused(ctx, group_id, member_id)
    if answer is not None or group_id is None or member_id is None:
        return answer or error_response_body(ErrorCode.invalid_request)
    readable = readable_topics(ctx)
    manager = broker.share_partitions
    try:
        manager.sessions.acknowledge_session_update(group_id, member_id, req.share_session_epoch)
    except ShareError as e:
        return error_response_body(e.error)
    erroneous: AckResults = {}
    batches = acknowledgements(req.topics, ctx.metadata, erroneous)
    results = handle_acknowledgements(broker, group_id, member_id, batches, erroneous, ctx.version >= 2,
                                      readable)
    if req.share_session_epoch == FINAL_EPOCH:
        manager.release_session(group_id, member_id)
    leaders: dict[int, Any] = {}
    topics: list[Body] = []
    by_topic: dict[uuid.UUID, Body] = {}
    journal = []
    for (topic_id, index), (error, message) in results.items():
        entry: Body = {"partition_index": index, "error_code": error, "error_message": message,
                       "current_leader": current_leader(ctx.metadata, topic_id, index, error, leaders)}
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
