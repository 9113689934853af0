"""StreamsGroupDescribe (key 89): v0-1 (KIP-1071).

Behavior: per group the state (Empty, NotReady, Assigning, Reconciling,
Stable), group and assignment epochs, the topology (with the partition counts
the coordinator decided once it is ready, else as the member declared it), the
assignor (``sticky``), and each member's epoch, process, endpoint, client tags,
task offsets, current and target tasks.  A group of another type or an unknown
one gets GROUP_ID_NOT_FOUND with Kafka's message; NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE per group.

Version notes:
* v1: include_topology_description returns the description the members pushed
  (StreamsGroupTopologyDescriptionUpdate, key 93) for the group's current
  topology epoch, status AVAILABLE, else NOT_STORED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..group.streams_coordinator import describe_error
from ..request import RequestContext, Response
from .common import AUTHORIZED_OPS_NOT_REQUESTED, GROUP_OPERATIONS, first_error

if TYPE_CHECKING:
    from protocol.request_types import StreamsGroupDescribeRequest

API_KEY = ApiKey.STREAMS_GROUP_DESCRIBE


def handle(ctx: RequestContext, req: StreamsGroupDescribeRequest) -> Response:
    ops = GROUP_OPERATIONS if req.include_authorized_operations else AUTHORIZED_OPS_NOT_REQUESTED
    groups: list[dict[str, Any]] = [{**g, "authorized_operations": ops}
                                    for g in ctx.broker.groups.streams_group_describe(
                                        ctx.node_id, req.group_ids, ctx.version >= 1 and req.include_topology_description)]
    return Response({"groups": groups}, error_code=first_error(groups))


def error_response(ctx: RequestContext, req: StreamsGroupDescribeRequest, error: ErrorCode) -> Response:
    groups = [{**describe_error(gid, error, None), "authorized_operations": AUTHORIZED_OPS_NOT_REQUESTED}
              for gid in req.group_ids]
    return Response({"groups": groups}, error_code=first_error(groups))
