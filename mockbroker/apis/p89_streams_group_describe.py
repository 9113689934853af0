"""StreamsGroupDescribe (key 89): v0-1 (KIP-1071).

Behavior: per group the state (Empty, NotReady, Assigning, Reconciling,
Stable), group and assignment epochs, the topology (with the partition counts
the coordinator decided once it is ready, else as the member declared it), the
assignor (``sticky``), and each member's epoch, process, endpoint, client tags,
task offsets, current and target tasks.  A group of another type or an unknown
one gets GROUP_ID_NOT_FOUND with Kafka's message; NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE per group; a group answered with an error has epochs 0 and (v1) a null
assignor name, Kafka's defaults.  With an authorizer, DESCRIBE on each group
(GROUP_AUTHORIZATION_FAILED, those refused listed first, as KafkaApis); authorized_operations, when
asked for and the group was described without an error, the client's operations on the group
(AuthHelper.authorizedOperations).

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
from ..security.authorizer import AclOperation, ResourceType
from .common import AUTHORIZED_OPS_NOT_REQUESTED, authorized, first_error, group_operations, undescribable_topic

if TYPE_CHECKING:
    from protocol.request_types import StreamsGroupDescribeRequest

API_KEY = ApiKey.STREAMS_GROUP_DESCRIBE
# KafkaApis' message for a group whose topology names topics the client may not describe
HIDDEN = "The described group uses topics that the client is not authorized to describe."


def _topology_topics(topology: dict[str, Any]) -> list[str]:
    """The source, repartition sink, repartition source and changelog topics of a described topology."""
    return [n for s in topology["subtopologies"] for n in (
        *s["source_topics"], *s["repartition_sink_topics"], *(t["name"] for t in s["repartition_source_topics"]),
        *(t["name"] for t in s["state_changelog_topics"]))]


def handle(ctx: RequestContext, req: StreamsGroupDescribeRequest) -> Response:
    include = bool(req.include_authorized_operations)
    # KafkaApis: DESCRIBE on each group; the ones refused come first, then the others described
    allowed = [g for g in req.group_ids if authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g)]
    groups: list[dict[str, Any]] = [
        {**describe_error(gid, ErrorCode.group_authorization_failed, None),
         "authorized_operations": AUTHORIZED_OPS_NOT_REQUESTED} for gid in req.group_ids if gid not in allowed]
    for g in ctx.broker.groups.streams_group_describe(ctx.node_id, allowed,
                                                       ctx.version >= 1 and req.include_topology_description):
        if g["topology"] is not None and undescribable_topic(ctx, _topology_topics(g["topology"])):
            g = {**describe_error(g["group_id"], ErrorCode.topic_authorization_failed, HIDDEN),
                 "authorized_operations": AUTHORIZED_OPS_NOT_REQUESTED}
        else:  # KafkaApis: the authorized operations of the groups described without an error
            g = {**g, "authorized_operations": group_operations(
                ctx, g["group_id"], include and g["error_code"] == ErrorCode.none)}
        groups.append(g)
    return Response({"groups": groups}, error_code=first_error(groups))


def error_response(ctx: RequestContext, req: StreamsGroupDescribeRequest, error: ErrorCode) -> Response:
    groups = [{**describe_error(gid, error, None), "authorized_operations": AUTHORIZED_OPS_NOT_REQUESTED}
              for gid in req.group_ids]
    return Response({"groups": groups}, error_code=first_error(groups))
