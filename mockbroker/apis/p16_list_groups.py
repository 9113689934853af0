"""ListGroups (key 16): v0-5.

Behavior: the groups this broker coordinates (Kafka asks every broker and
merges), with their protocol type ("" for a group that only stores offsets),
state (v4+) and type (v5+: "classic", or "consumer" for KIP-848 groups, whose
states are Empty, Assigning, Reconciling and Stable).  Both filters are
case-insensitive.

Version notes:
* v1 throttle.  v2 clients back off.  v3 flexible.  v4 states filter and state.
* v5 types filter and group type (KIP-848).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ..request import RequestContext, Response
from .common import authorized

if TYPE_CHECKING:
    from protocol.request_types import ListGroupsRequest

API_KEY = ApiKey.LIST_GROUPS


def handle(ctx: RequestContext, req: ListGroupsRequest) -> Response:
    listed = ctx.broker.groups.list_groups(ctx.node_id, req.states_filter,
                                           req.types_filter)
    # KafkaApis: DESCRIBE on the cluster lists every group, else those the client may DESCRIBE
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        listed = [g for g in listed if authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)]
    return Response({"error_code": ErrorCode.none, "groups": [
        {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state,
         "group_type": g.group_type.value} for g in listed]})
