"""DescribeGroups (key 15): v0-6.

Behavior (Kafka's GroupCoordinator.handleDescribeGroup / GroupMetadata.summary):
* State name, protocol type ("" for a group that only stores offsets) and, in
  Stable only, the selected protocol and each member's metadata and
  assignment; in other states the protocol is "" and members come without
  metadata or assignment.
* A group the coordinator does not have: state Dead, error NONE (v0-5) or
  GROUP_ID_NOT_FOUND with a message (v6, KIP-1043).
* NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE per group.
* Authorized operations (v3+): READ, DESCRIBE and DELETE when asked (no
  authorizer: all of a group's operations), else Integer.MIN_VALUE.

Version notes:
* v1 throttle.  v2 clients back off.  v3 authorized operations.  v4 group.instance.id.
* v5 flexible.  v6 error message, GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..group.consumer_group import ConsumerGroup
from ..group.metadata import GROUP_OPERATIONS, GroupState
from .common import AUTHORIZED_OPS_NOT_REQUESTED
from ..request import RequestContext

API_KEY = ApiKey.DESCRIBE_GROUPS



def _describe(ctx: RequestContext, group_id: str, include_ops: bool) -> dict:
    coordinator = ctx.broker.groups
    out: dict[str, Any] = {"group_id": group_id, "error_code": ErrorCode.none, "error_message": None,
                           "group_state": "", "protocol_type": "", "protocol_data": "", "members": [],
                           "authorized_operations": GROUP_OPERATIONS if include_ops else AUTHORIZED_OPS_NOT_REQUESTED}
    err = coordinator.validate_group_status(group_id, ctx.node_id, allow_empty_id=True)
    if err is not None:
        out["error_code"] = err
        return out
    g = coordinator.get_group(group_id)
    if isinstance(g, ConsumerGroup):
        # ConsumerGroup.asDescribedGroup: a KIP-848 group seen through the classic API
        out.update({"group_state": g.state.value, "protocol_type": "consumer", "protocol_data": g.preferred_assignor,
                    "members": [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                                 "client_id": m.client_id, "client_host": m.client_host,
                                 "member_metadata": b"", "member_assignment": b""} for m in g.members.values()]})
        return out
    if g is None:
        out["group_state"] = GroupState.DEAD.value
        if ctx.version >= 6:
            out["error_code"] = ErrorCode.group_id_not_found
            out["error_message"] = f"Group {group_id} not found."
        return out
    stable = g.is_state(GroupState.STABLE)
    out["group_state"] = g.state.value
    out["protocol_type"] = g.protocol_type or ""
    out["protocol_data"] = (g.protocol_name or "") if stable else ""
    out["members"] = [
        {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
         "client_host": m.client_host,
         "member_metadata": m.metadata(g.protocol_name) if stable and g.protocol_name else b"",
         "member_assignment": m.assignment if stable else b""}
        for m in g.members.values()
    ]
    return out


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    include = bool(getattr(req, "include_authorized_operations", False))
    return {"groups": [_describe(ctx, gid, include) for gid in req.groups]}
