"""DescribeGroups (key 15): v0-6.

Behavior (Kafka's GroupCoordinatorService.describeGroups / ClassicGroup's summary):
* State name, protocol type ("" for a group that only stores offsets) and, in
  Stable only, the selected protocol and each member's metadata and
  assignment; in other states the protocol is "" and members come without
  metadata or assignment.
* A group the coordinator does not have: state Dead, error NONE (v0-5) or
  GROUP_ID_NOT_FOUND with a message (v6, KIP-1043).
* NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE per group.
* A group of another type (KIP-848 consumer, share, streams): not a classic
  group (GroupMetadataManager.classicGroup), answered as an unknown one.
* Authorized operations (v3+): the client's operations on the group when asked
  (no authorizer: all of a group's operations) and the group was described
  (error NONE, so also a Dead one before v6), else Integer.MIN_VALUE.

Version notes:
* v1 throttle.  v2 clients back off.  v3 authorized operations.  v4 group.instance.id.
* v5 flexible.  v6 error message, GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import AclOperation, ResourceType
from ..group.group import DescribedGroup
from ..request import RequestContext, Response
from .common import authorized, first_error, group_operations

if TYPE_CHECKING:
    from protocol.request_types import DescribeGroupsRequest

API_KEY = ApiKey.DESCRIBE_GROUPS


def _described(ctx: RequestContext, d: DescribedGroup, include: bool) -> dict[str, Any]:
    error, message = d.error, d.error_message
    if error is ErrorCode.group_id_not_found and ctx.version < 6:
        error, message = ErrorCode.none, None  # before v6 an unknown group is only "Dead"
    # KafkaApis: the authorized operations of the groups described without an error
    ops = group_operations(ctx, d.group_id, include and error is ErrorCode.none)
    return {"group_id": d.group_id, "error_code": error, "error_message": message, "group_state": d.state,
            "protocol_type": d.protocol_type, "protocol_data": d.protocol_data,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "client_id": m.client_id, "client_host": m.client_host,
                         "member_metadata": m.metadata, "member_assignment": m.assignment} for m in d.members],
            "authorized_operations": ops}


def handle(ctx: RequestContext, req: DescribeGroupsRequest) -> Response:
    include = bool(req.include_authorized_operations)
    # KafkaApis: DESCRIBE on each group, those refused listed first; the others are described
    allowed = [g for g in req.groups if authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g)]
    groups = [_denied(g) for g in req.groups if g not in allowed]
    groups += [_described(ctx, d, include) for d in ctx.broker.groups.describe_groups(ctx.node_id, allowed)]
    return Response({"groups": groups}, error_code=first_error(groups))


def _denied(gid: str, error: ErrorCode = ErrorCode.group_authorization_failed) -> dict[str, Any]:
    return {"group_id": gid, "error_code": error, "group_state": "", "protocol_type": "", "protocol_data": "",
            "members": []}


def error_response(ctx: RequestContext, req: DescribeGroupsRequest, error: ErrorCode) -> Response:
    groups = [_denied(gid, error) for gid in req.groups]
    return Response({"groups": groups}, error_code=first_error(groups))
