"""ConsumerGroupDescribe (key 69): v0-1 (KIP-848).

Behavior: per group the state (Empty, Assigning, Reconciling, Stable), group
and assignment epochs, the assignor, and each member's epoch, subscription,
current assignment and target assignment.  A classic group or an unknown one
gets GROUP_ID_NOT_FOUND with Kafka's message; NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE per group.  A group answered with an error has epochs 0
and no authorized operations (Integer.MIN_VALUE), as Kafka answers it.

Version notes:
* v1 member type (KIP-1099; always 1, the consumer protocol).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..group.assignors import Assignment
from ..group.consumer_group import ConsumerGroupDescription
from ..request import RequestContext, Response
from ..security.authorizer import AclOperation, ResourceType
from ..controller.features import GROUP_VERSION
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
    from protocol.request_types import ConsumerGroupDescribeRequest

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE

def _described(d: ConsumerGroupDescription, names: dict[Any, str], ops: int) -> dict[str, Any]:
    def assignment(a: Assignment) -> dict[str, Any]:
        return {"topic_partitions": [{"topic_id": tid, "topic_name": names.get(tid, ""), "partitions": sorted(ps)}
                                     for tid, ps in sorted(a.items(), key=lambda kv: str(kv[0]))]}

    return {
        "group_id": d.group_id, "error_code": d.error, "error_message": d.error_message, "group_state": d.state,
        "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch, "assignor_name": d.assignor_name,
        "members": [{
            "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
            "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
            # ConsumerGroupMember.subscribedTopicRegex: "" for a member that names no regex
            "subscribed_topic_names": m.subscribed_topic_names, "subscribed_topic_regex": m.subscribed_topic_regex or "",
            "assignment": assignment(m.assignment), "target_assignment": assignment(m.target_assignment),
            "member_type": 1,  # consumer protocol (KIP-1099: -1 unknown, 0 classic, 1 consumer)
        } for m in d.members],
        "authorized_operations": ops,
    }


def handle(ctx: RequestContext, req: ConsumerGroupDescribeRequest) -> Response:
    if not ctx.broker.features.enables(GROUP_VERSION):  # the consumer protocol off (3.x): every group refused
        return disabled_group_describe(req.group_ids)
    include = bool(req.include_authorized_operations)
    names = {t.topic_id: n for n, t in ctx.metadata.topics.items()}
    # KafkaApis: DESCRIBE on each group, those refused listed first; then a described group naming a
    # topic the client may not DESCRIBE (in a member's assignment or target assignment) is hidden
    allowed = [g for g in req.group_ids if authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g)]
    groups = [g for g in error_response(ctx, req, ErrorCode.group_authorization_failed).body["groups"]
              if g["group_id"] not in allowed]
    for d in ctx.broker.groups.consumer_group_describe(ctx.node_id, allowed):
        # KafkaApis: the authorized operations of the groups described without an error
        g = _described(d, names, group_operations(ctx, d.group_id, include and d.error is ErrorCode.none))
        topics = [t["topic_name"] for m in g["members"] for a in (m["assignment"], m["target_assignment"])
                  for t in a["topic_partitions"]]
        groups.append(hidden_group(d.group_id) if undescribable_topic(ctx, topics) else g)
    return Response({"groups": groups}, error_code=first_error(groups))


def error_response(ctx: RequestContext, req: ConsumerGroupDescribeRequest, error: ErrorCode) -> Response:
    groups: list[dict[str, Any]] = [
        {"group_id": gid, "error_code": error, "error_message": None, "group_state": "", "group_epoch": 0,
         "assignment_epoch": 0, "assignor_name": "", "members": [],
         "authorized_operations": AUTHORIZED_OPS_NOT_REQUESTED} for gid in req.group_ids]
    return Response({"groups": groups}, error_code=first_error(groups))
