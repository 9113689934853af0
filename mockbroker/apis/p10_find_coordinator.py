"""FindCoordinator (key 10): v0-6.

Behavior:
* Group keys (key type 0): the coordinator is the broker that leads the
  group's partition of ``__consumer_offsets`` (``abs(hashCode) %
  offsets.topic.num.partitions``); when that broker stops, the next replica of
  the partition takes over; with no live replica, COORDINATOR_NOT_AVAILABLE.
* Transaction keys (key type 1): the leader of the id's ``__transaction_state``
  partition (``abs(hashCode) % transaction.state.log.num.partitions``), moving
  as group coordinators do; no live replica: COORDINATOR_NOT_AVAILABLE.
* Share keys (key type 2): COORDINATOR_NOT_AVAILABLE (share groups are not
  simulated).  Any other key type: INVALID_REQUEST.

Version notes:
* v1 key type, throttle.  v2 clients back off.  v3 flexible, error message.
* v4 batched coordinator keys (KIP-699).  v6 share-group keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import Body, RequestContext, Response
from ..authorizer import AclOperation, ResourceType
from .common import authorized, first_error

if TYPE_CHECKING:
    from protocol.request_types import FindCoordinatorRequest

API_KEY = ApiKey.FIND_COORDINATOR

GROUP, TRANSACTION, SHARE = 0, 1, 2


def coordinator_for(ctx: RequestContext, key: str) -> Any:
    """The leader of the group's ``__consumer_offsets`` partition (see group/registry.py)."""
    return ctx.broker.groups.find_coordinator(key)


def _lookup(ctx: RequestContext, key: str, key_type: int) -> dict[str, Any]:
    if key_type not in (GROUP, TRANSACTION, SHARE):
        return {"key": key, "error_code": ErrorCode.invalid_request, "error_message": f"Invalid key type {key_type}",
                "node_id": -1, "host": "", "port": -1}
    # KafkaApis.getCoordinator: DESCRIBE on the group or the transactional id
    resource, denied = ((ResourceType.GROUP, ErrorCode.group_authorization_failed) if key_type == GROUP else
                        (ResourceType.TRANSACTIONAL_ID, ErrorCode.transactional_id_authorization_failed))
    if key_type != SHARE and not authorized(ctx, AclOperation.DESCRIBE, resource, key):
        return {"key": key, "error_code": denied, "error_message": None, "node_id": -1, "host": "", "port": -1}
    if key_type == GROUP:
        node = coordinator_for(ctx, key)
    elif key_type == TRANSACTION:
        node = ctx.broker.txn.find_coordinator(key)
    else:
        node = None
    address = node.endpoint(ctx.listener_name) if node is not None else None
    if node is None or address is None:
        return {"key": key, "error_code": ErrorCode.coordinator_not_available,
                "error_message": "The coordinator is not available.", "node_id": -1, "host": "", "port": -1}
    return {"key": key, "error_code": ErrorCode.none, "error_message": None,
            "node_id": node.node_id, "host": address[0], "port": address[1]}


def _response(body: Body) -> Response:
    """v4+ (KIP-699): the journal's error is the first failed key's."""
    return Response(body, error_code=first_error(body["coordinators"]) if "coordinators" in body else None)


def handle(ctx: RequestContext, req: FindCoordinatorRequest) -> Response:
    key_type = req.key_type
    if ctx.version >= 4:
        return _response({"coordinators": [_lookup(ctx, k, key_type) for k in req.coordinator_keys]})
    out = _lookup(ctx, req.key, key_type)
    out.pop("key")
    return _response(out)


def error_response(ctx: RequestContext, req: FindCoordinatorRequest, error: ErrorCode) -> Response:
    none = {"error_code": error, "error_message": None, "node_id": -1, "host": "", "port": -1}
    if ctx.version >= 4:
        return _response({"coordinators": [{"key": k, **none} for k in req.coordinator_keys]})
    return _response(none)
