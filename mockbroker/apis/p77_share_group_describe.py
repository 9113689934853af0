"""ShareGroupDescribe (key 77): v1-1 (KIP-932).

Behavior: per group (Kafka's ``ShareGroup.asDescribedGroup``) the state (Empty, Stable), group and
assignment epochs, the assignor ("simple"), and each member's epoch, rack, client id and host,
subscribed topic names and assignment (topic ids with their names).  A group of another type or an
unknown one gets GROUP_ID_NOT_FOUND with Kafka's message; NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE / INVALID_GROUP_ID per group.  With an authorizer, DESCRIBE on each group
(GROUP_AUTHORIZATION_FAILED, those refused listed first, as KafkaApis); authorized_operations, when
asked for, the client's operations on the group (AuthHelper.authorizedOperations).

Version notes:
* v0 was Kafka 4.0's early access (not served by 4.1+); v1 is the GA protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..share.coordinator import ShareGroupDescription
from ..security.authorizer import AclOperation, ResourceType
from ..controller.features import SHARE_VERSION
from .common import (
    AUTHORIZED_OPS_NOT_REQUESTED,
    authorized,
    disabled_group_describe,
    first_error,
    group_operations,
    hidden_group,
    undescribable_topic,
)

if TYPE_CHECKING:
    from protocol.request_types import ShareGroupDescribeRequest

API_KEY = ApiKey.SHARE_GROUP_DESCRIBE
ASSIGNOR = "simple"


def _described(d: ShareGroupDescription, names: dict[Any, str], ops: int) -> dict[str, Any]:
    return {
        "group_id": d.group_id, "error_code": d.error, "error_message": d.error_message, "group_state": d.state,
        "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch,
        "assignor_name": ASSIGNOR if d.error is ErrorCode.none else "",
        "members": [{
            "member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
            "client_id": m.client_id, "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "assignment": {"topic_partitions": [
                {"topic_id": tid, "topic_name": names[tid], "partitions": sorted(ps)}
                for tid, ps in sorted(m.assigned.items(), key=lambda kv: str(kv[0])) if tid in names]},
        } for m in d.members],
        "authorized_operations": ops,
    }


def handle(ctx: RequestContext, req: ShareGroupDescribeRequest) -> Response:
    if not ctx.broker.features.enables(SHARE_VERSION):  # share groups off (4.1's default): every group refused
        return disabled_group_describe(req.group_ids)
    include = bool(req.include_authorized_operations)
    names = {t.topic_id: n for n, t in ctx.metadata.topics.items()}
    # KafkaApis: DESCRIBE on each group; the ones refused come first, then the others described
    allowed = [g for g in req.group_ids if authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g)]
    groups = [_error(gid, ErrorCode.group_authorization_failed) for gid in req.group_ids if gid not in allowed]
    for gid in allowed:
        d = ctx.broker.share_groups.describe(ctx.node_id, gid)
        # KafkaApis.handleShareGroupDescribe: the operations of the groups described without an error only
        ops = group_operations(ctx, gid, include) if d.error is ErrorCode.none else AUTHORIZED_OPS_NOT_REQUESTED
        g = _described(d, names, ops)
        topics = [t["topic_name"] for m in g["members"] for t in m["assignment"]["topic_partitions"]]
        groups.append(hidden_group(gid) if undescribable_topic(ctx, topics) else g)  # as ConsumerGroupDescribe
    return Response({"groups": groups}, error_code=first_error(groups))


def _error(gid: str, error: ErrorCode) -> dict[str, Any]:
    return {"group_id": gid, "error_code": error, "error_message": None, "group_state": "", "group_epoch": -1,
            "assignment_epoch": -1, "assignor_name": "", "members": [],
            "authorized_operations": AUTHORIZED_OPS_NOT_REQUESTED}


def error_response(ctx: RequestContext, req: ShareGroupDescribeRequest, error: ErrorCode) -> Response:
    groups = [_error(gid, error) for gid in req.group_ids]
    return Response({"groups": groups}, error_code=first_error(groups))
