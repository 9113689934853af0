"""LeaveGroup (key 13): v0-5.

Behavior (Kafka's GroupMetadataManager.classicGroupLeave): each leaving member is
removed and the group rebalances (or its join phase completes sooner); a member
given only by group.instance.id (v3+, administrative removal, KIP-345) is
removed by that id; unknown members get UNKNOWN_MEMBER_ID, a static member
whose id was replaced FENCED_INSTANCE_ID.

Version notes:
* v1 throttle.  v2 clients back off.  v3 batched members with per-member errors
  (before v3 the top-level error carries the member's error).  v4 flexible.
  v5 reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import LeaveGroupRequest

API_KEY = ApiKey.LEAVE_GROUP


def handle(ctx: RequestContext, req: LeaveGroupRequest) -> Response:
    if ctx.version >= 3:
        leaving = [(m.member_id, m.group_instance_id, m.reason) for m in req.members]
    else:
        leaving = [(req.member_id, None, None)]
    top, errors = ctx.broker.groups.leave_group(ctx.node_id, req.group_id, leaving)
    if ctx.version < 3:
        # LeaveGroupResponse for v0-2: the top-level error, else the member's
        err = top if top is not ErrorCode.none else next((e for e in errors if e is not ErrorCode.none),
                                                         ErrorCode.none)
        return Response({"error_code": err})
    return Response({"error_code": top, "members": [
        {"member_id": mid, "group_instance_id": iid, "error_code": e}
        for (mid, iid, _), e in zip(leaving, errors)
    ]})
