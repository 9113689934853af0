"""DeleteTopics (key 20): v1-6.

Behavior:
* ``delete.topic.enable=false``: every topic of the request TOPIC_DELETION_DISABLED (v3+; INVALID_REQUEST
  before), no message, nothing deleted.
* Topics by name (v1-6) or by id (v6).  Unknown names get
  UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID; a v6 entry with
  both a name and an id is INVALID_REQUEST.  The topic and its logs are gone
  when the response is sent.

Version notes:
* v1 throttle.  v2 clients back off.  v3 TOPIC_DELETION_DISABLED.  v4 flexible.  v5 error message,
  THROTTLING_QUOTA_EXCEEDED from a strict controller_mutation_rate quota (KIP-599).  v6 topic ids.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..authorizer import AclOperation, ResourceType
from ..request import RequestContext, Response
from .common import (
    THROTTLING_QUOTA_EXCEEDED,
    authorized,
    controller_quota_record,
    controller_quota_refused,
)

if TYPE_CHECKING:
    from protocol.request_types import DeleteTopicsRequest

API_KEY = ApiKey.DELETE_TOPICS
STRICT_SINCE = 5  # KafkaApis: newQuotaFor(request, strictSinceVersion = 5)
ZERO = uuid.UUID(int=0)


def handle(ctx: RequestContext, req: DeleteTopicsRequest) -> Response:
    cluster = ctx.metadata
    if not cluster.config["delete.topic.enable"]:  # ControllerApis.deleteTopics: the whole request
        return error_response(ctx, req, ErrorCode.invalid_request if ctx.version < 3
                              else ErrorCode.topic_deletion_disabled)
    throttle_ms = 0  # KIP-599: the controller mutation quota's throttle, the largest met
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(n, None) for n in req.topic_names]
    out = []
    for name, topic_id in wanted:
        res: dict[str, Any] = {"name": name, "topic_id": topic_id or ZERO, "error_code": ErrorCode.none,
                               "error_message": None}
        out.append(res)
        by_id = topic_id is not None and topic_id != ZERO
        if by_id and name is not None:
            res.update(error_code=ErrorCode.invalid_request,
                       error_message="Neither topic name nor id can be set at the same time.")
            continue
        # ControllerApis.deleteTopics: DESCRIBE, then DELETE, on the topic (a name first, whether it exists)
        if not by_id and not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name or ""):
            res["error_code"] = ErrorCode.topic_authorization_failed
            continue
        topic = cluster.topics_by_id.get(topic_id) if by_id and topic_id is not None else cluster.topics.get(name or "")
        if topic is not None and not (authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name)
                                      and authorized(ctx, AclOperation.DELETE, ResourceType.TOPIC, topic.name)):
            res["error_code"] = ErrorCode.topic_authorization_failed
            continue
        if topic is None:
            res["error_code"] = ErrorCode.unknown_topic_id if by_id else ErrorCode.unknown_topic_or_partition
            continue
        refused = controller_quota_refused(ctx, STRICT_SINCE)
        throttle_ms = max(throttle_ms, refused)
        if refused:
            res.update(THROTTLING_QUOTA_EXCEEDED)
            continue
        res.update(name=topic.name, topic_id=topic.topic_id)
        ctx.broker.controller.delete_topic(topic)
        throttle_ms = max(throttle_ms, controller_quota_record(ctx, len(topic.partitions)))
    return Response({"responses": out}, controller_throttle_ms=throttle_ms)


def error_response(ctx: RequestContext, req: DeleteTopicsRequest, error: ErrorCode) -> Response:
    wanted = [(t.name, t.topic_id) for t in req.topics] if ctx.version >= 6 else [(n, None) for n in req.topic_names]
    return Response({"responses": [{"name": n, "topic_id": tid or ZERO, "error_code": error, "error_message": None}
                                   for n, tid in wanted]})
