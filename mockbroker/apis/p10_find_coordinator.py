"""FindCoordinator (key 10): v0-6.

Behavior (Kafka's KafkaApis.handleFindCoordinatorRequest and getCoordinator):
* Group keys (key type 0): the coordinator is the broker that leads the
  group's partition of ``__consumer_offsets`` (``abs(hashCode) %
  offsets.topic.num.partitions``); when that broker stops, the next replica of
  the partition takes over; with no live replica, COORDINATOR_NOT_AVAILABLE.
* Transaction keys (key type 1): the leader of the id's ``__transaction_state``
  partition (``abs(hashCode) % transaction.state.log.num.partitions``), moving
  as group coordinators do; no live replica: COORDINATOR_NOT_AVAILABLE.
* Share keys (key type 2, ``group:topicId:partition``; the share coordinator's
  own lookups): INVALID_REQUEST below v6 and for a key that does not parse
  (SharePartitionKey.getInstance); CLUSTER_ACTION on the cluster, else the whole
  request is CLUSTER_AUTHORIZATION_FAILED; else the leader of the key's
  ``__share_group_state`` partition.
* Any other key type: the whole request is INVALID_REQUEST
  (CoordinatorType.forId).
* Error messages: below v4 the answer is Kafka's ``prepareOldResponse``: the
  error's default message, "NONE" when the coordinator is found.  From v4 each
  key's message is empty (KafkaApis sets none), but in the whole request's error
  answer (an unknown key type, a refused share lookup) each key's is the error's
  default message.

Version notes:
* v1 key type, throttle.  v2 clients back off.  v3 flexible, error message.
* v4 batched coordinator keys (KIP-699).  v6 share-group keys.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import Body, RequestContext, Response
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from .common import authorized, first_error

if TYPE_CHECKING:
    from protocol.request_types import FindCoordinatorRequest

API_KEY = ApiKey.FIND_COORDINATOR

GROUP, TRANSACTION, SHARE = 0, 1, 2

# Errors.message() of the errors FindCoordinator answers (the exception's default message; "NONE" for
# NONE, whose exception is null)
MESSAGES = {
    ErrorCode.none: "NONE",
    ErrorCode.coordinator_not_available: "The coordinator is not available.",
    ErrorCode.coordinator_load_in_progress: "The coordinator is loading and hence can't process requests.",
    ErrorCode.not_coordinator: "This is not the correct coordinator.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
    ErrorCode.transactional_id_authorization_failed: "Transactional Id authorization failed.",
    ErrorCode.invalid_request: "This most likely occurs because of a request being malformed by the client library "
                               "or the message was sent to an incompatible broker. See the broker logs for more "
                               "details.",
    ErrorCode.unknown_server_error: "The server experienced an unexpected error when processing the request.",
}


def message(error: ErrorCode) -> str:
    """Errors.message(): the error's default message (its name for one not listed)."""
    return MESSAGES.get(error, error.name.upper())


def coordinator_for(ctx: RequestContext, key: str) -> Any:
    """The leader of the group's ``__consumer_offsets`` partition (see group/registry.py)."""
    return ctx.broker.groups.find_coordinator(key)


def share_key(key: str) -> tuple[str, uuid.UUID, int] | None:
    """SharePartitionKey.getInstance: ``groupId:topicId:partition`` (the group id may hold colons; the
    topic id is Kafka's base64 Uuid), None where Kafka throws IllegalArgumentException."""
    tokens = key.split(":")
    while tokens and tokens[-1] == "":  # Java's String.split drops the trailing empty strings
        tokens.pop()
    if not key or len(tokens) < 3:
        return None
    group = ":".join(tokens[:-2])
    if not group.strip():
        return None
    topic_id = _uuid(tokens[-2])
    partition = _java_int(tokens[-1])
    if topic_id is None or partition is None:
        return None
    return group, topic_id, partition


def _uuid(text: str) -> uuid.UUID | None:
    """Uuid.fromString: at most 24 characters of URL-safe base64 that decode to 16 bytes."""
    if len(text) > 24:
        return None
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        return None
    return uuid.UUID(bytes=raw) if len(raw) == 16 else None


def _java_int(text: str) -> int | None:
    """Integer.parseInt: an optional sign and decimal digits, within int32."""
    body = text[1:] if text[:1] in ("-", "+") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    value = int(text)
    return value if -2**31 <= value < 2**31 else None


def _lookup(ctx: RequestContext, key: str, key_type: int) -> dict[str, Any]:
    def refused(error: ErrorCode) -> dict[str, Any]:
        return {"key": key, "error_code": error, "node_id": -1, "host": "", "port": -1}

    # KafkaApis.getCoordinator: DESCRIBE on the group or the transactional id
    if key_type == GROUP and not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return refused(ErrorCode.group_authorization_failed)
    if key_type == TRANSACTION and not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        return refused(ErrorCode.transactional_id_authorization_failed)
    if key_type == SHARE and ctx.version < 6:
        return refused(ErrorCode.invalid_request)
    if key_type == GROUP:
        node = coordinator_for(ctx, key)
    elif key_type == TRANSACTION:
        node = ctx.broker.txn.find_coordinator(key)
    else:
        parsed = share_key(key)
        if parsed is None:
            return refused(ErrorCode.invalid_request)
        group, topic_id, partition = parsed
        # the share coordinator's partition, as the persister places it (share/persister.py)
        node = ctx.broker.share_groups.persister.leaders.coordinator(f"{group}:{topic_id}:{partition}")
    address = node.endpoint(ctx.listener_name) if node is not None else None
    if node is None or address is None:
        return refused(ErrorCode.coordinator_not_available)
    return {"key": key, "error_code": ErrorCode.none, "node_id": node.node_id, "host": address[0], "port": address[1]}


def _response(body: Body) -> Response:
    """v4+ (KIP-699): the journal's error is the first failed key's."""
    return Response(body, error_code=first_error(body["coordinators"]) if "coordinators" in body else None)


def handle(ctx: RequestContext, req: FindCoordinatorRequest) -> Response:
    key_type = req.key_type
    if key_type not in (GROUP, TRANSACTION, SHARE):  # CoordinatorType.forId throws: the whole request fails
        return error_response(ctx, req, ErrorCode.invalid_request)
    if key_type == SHARE and ctx.version >= 6 and not authorized(
            ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        return error_response(ctx, req, ErrorCode.cluster_authorization_failed)  # authorizeClusterOperation
    if ctx.version >= 4:  # each key's message is left empty
        return _response({"coordinators": [{**_lookup(ctx, k, key_type), "error_message": ""}
                                           for k in req.coordinator_keys]})
    out = _lookup(ctx, req.key, key_type)
    out.pop("key")
    return _response({**out, "error_message": message(out["error_code"])})


def error_response(ctx: RequestContext, req: FindCoordinatorRequest, error: ErrorCode) -> Response:
    """FindCoordinatorRequest.getErrorResponse: prepareOldResponse below v4, else every key with the
    error and its default message."""
    none = {"error_code": error, "error_message": message(error), "node_id": -1, "host": "", "port": -1}
    if ctx.version >= 4:
        return _response({"coordinators": [{"key": k, **none} for k in req.coordinator_keys]})
    return _response(none)
