"""DeleteTopics (key 20): v1-6.

Behavior (Kafka's ``ControllerApis.deleteTopics``, the controller's ``findTopicNames``, ``findTopicIds``
and ``deleteTopics``):
* ``delete.topic.enable=false``: every topic of the request TOPIC_DELETION_DISABLED (v3+; INVALID_REQUEST
  before), nothing deleted.
* Topics by name (v1-6) or by id (v6).  A name or id given twice is answered once, INVALID_REQUEST
  ("Duplicate topic name." / "Duplicate topic id."), and not deleted; a v6 entry with neither a name nor
  an id, or with both, INVALID_REQUEST; a name whose topic is also named by its id INVALID_REQUEST (and
  neither deleted).  Unknown names get UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID.
  Without DELETE on the cluster: DESCRIBE and DELETE on each topic, else TOPIC_AUTHORIZATION_FAILED
  (an id whose topic the client may not DESCRIBE answered without its name).
* A timeout of 0 or less: the controller's deadline has passed (``common.controller_deadline_passed``):
  every topic of the request REQUEST_TIMED_OUT, nothing deleted, unless no name or id reaches the
  controller.
* The topic and its logs are gone when the response is sent.

Version notes:
* v1 throttle.  v2 clients back off.  v3 TOPIC_DELETION_DISABLED.  v4 flexible.  v5 error message,
  THROTTLING_QUOTA_EXCEEDED from a strict controller_mutation_rate quota (KIP-599).  v6 topic ids.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ..state.metadata import Topic
from ..request import RequestContext, Response
from .common import (
    THROTTLING_QUOTA_EXCEEDED,
    authorized,
    controller_deadline_passed,
    controller_quota_record,
    controller_quota_refused,
)

if TYPE_CHECKING:
    from protocol.request_types import DeleteTopicsRequest

API_KEY = ApiKey.DELETE_TOPICS
STRICT_SINCE = 5  # KafkaApis: newQuotaFor(request, strictSinceVersion = 5)
ZERO = uuid.UUID(int=0)
# ApiError(Errors): the controller's lookups answer with the error's own message (Errors.java)
UNKNOWN_NAME = (ErrorCode.unknown_topic_or_partition, "This server does not host this topic-partition.")
UNKNOWN_ID = (ErrorCode.unknown_topic_id, "This server does not host this topic ID.")
DENIED = (ErrorCode.topic_authorization_failed, "Topic authorization failed.")


def _result(name: str | None, topic_id: uuid.UUID | None, error: ErrorCode = ErrorCode.none,
            message: str | None = None) -> dict[str, Any]:
    return {"name": name, "topic_id": topic_id or ZERO, "error_code": error, "error_message": message}


def handle(ctx: RequestContext, req: DeleteTopicsRequest) -> Response:
    if not ctx.metadata.config["delete.topic.enable"]:  # ControllerApis.deleteTopics: the whole request
        return error_response(ctx, req, ErrorCode.invalid_request if ctx.version < 3
                              else ErrorCode.topic_deletion_disabled)
    wanted = [(t.name, t.topic_id) for t in req.topics] if ctx.version >= 6 else [(n, None) for n in req.topic_names]
    out: list[dict[str, Any]] = []
    names: dict[str, None] = {}  # the names and ids given once each, in request order
    ids: dict[uuid.UUID, None] = {}
    name_counts = Counter(n for n, tid in wanted if n is not None and (tid is None or tid == ZERO))
    id_counts = Counter(tid for n, tid in wanted if n is None and tid is not None and tid != ZERO)
    for name, topic_id in wanted:
        by_id = topic_id is not None and topic_id != ZERO
        if name is None and not by_id:
            out.append(_result(None, ZERO, ErrorCode.invalid_request, "Neither topic name nor id were specified."))
        elif name is not None and by_id:
            out.append(_result(name, topic_id, ErrorCode.invalid_request,
                               "You may not specify both topic name and topic id."))
        elif by_id:
            assert topic_id is not None
            if id_counts[topic_id] == 1:
                ids[topic_id] = None
        elif name is not None and name_counts[name] == 1:
            names[name] = None
    out += [_result(n, ZERO, ErrorCode.invalid_request, "Duplicate topic name.")
            for n, k in name_counts.items() if k > 1]
    out += [_result(None, i, ErrorCode.invalid_request, "Duplicate topic id.") for i, k in id_counts.items() if k > 1]
    if (names or ids) and controller_deadline_passed(req.timeout):
        return error_response(ctx, req, ErrorCode.request_timed_out)
    cluster = ctx.metadata
    cluster_auth = authorized(ctx, AclOperation.DELETE, ResourceType.CLUSTER, CLUSTER_NAME)

    def may(operation: AclOperation, name: str) -> bool:
        return cluster_auth or authorized(ctx, operation, ResourceType.TOPIC, name)

    to_delete: dict[uuid.UUID, Topic] = {}
    for topic_id in ids:  # findTopicNames, then the ids' authorization
        topic = cluster.topics_by_id.get(topic_id)
        if topic is None:
            out.append(_result(None, topic_id, *UNKNOWN_ID))
        elif not may(AclOperation.DELETE, topic.name):
            out.append(_result(topic.name if may(AclOperation.DESCRIBE, topic.name) else None, topic_id, *DENIED))
        else:
            to_delete[topic_id] = topic
    named_twice: set[uuid.UUID] = set()
    for named in names:  # findTopicIds, then the names' authorization
        topic = cluster.topics.get(named)
        if not may(AclOperation.DESCRIBE, named):
            out.append(_result(named, ZERO, *DENIED))
        elif topic is None:
            out.append(_result(named, ZERO, *UNKNOWN_NAME))
        elif not may(AclOperation.DELETE, named):
            out.append(_result(named, ZERO, *DENIED))
        elif topic.topic_id in to_delete or topic.topic_id in named_twice or id_counts[topic.topic_id] > 1:
            named_twice.add(topic.topic_id)
            to_delete.pop(topic.topic_id, None)
            out.append(_result(named, topic.topic_id, ErrorCode.invalid_request,
                               "The provided topic name maps to an ID that was already supplied."))
        else:
            to_delete[topic.topic_id] = topic
    throttle_ms = 0  # KIP-599: the controller mutation quota's throttle, the largest met
    for topic in to_delete.values():  # the controller's deleteTopics
        refused = controller_quota_refused(ctx, STRICT_SINCE)
        throttle_ms = max(throttle_ms, refused)
        if refused:
            out.append({**_result(topic.name, topic.topic_id), **THROTTLING_QUOTA_EXCEEDED})
            continue
        ctx.broker.controller.delete_topic(topic)
        out.append(_result(topic.name, topic.topic_id))
        throttle_ms = max(throttle_ms, controller_quota_record(ctx, len(topic.partitions)))
    # Kafka shuffles its answers (Collections.shuffle); here they come in the order the request names them
    position: dict[object, int] = {}
    for i, (name, topic_id) in enumerate(wanted):
        position.setdefault(topic_id if topic_id is not None and topic_id != ZERO else name, i)
    out.sort(key=lambda r: min(position.get(r["topic_id"], len(wanted)) if r["topic_id"] != ZERO else len(wanted),
                               position.get(r["name"], len(wanted))))
    return Response({"responses": out}, controller_throttle_ms=throttle_ms)


def error_response(ctx: RequestContext, req: DeleteTopicsRequest, error: ErrorCode) -> Response:
    """``DeleteTopicsRequest.getErrorResponse``: every topic of the request (as often as it is given) with
    the error and no message."""
    wanted = [(t.name, t.topic_id) for t in req.topics] if ctx.version >= 6 else [(n, None) for n in req.topic_names]
    return Response({"responses": [_result(n, tid, error) for n, tid in wanted]})
