"""StreamsGroupTopologyDescriptionUpdate (key 93): v0-0 (KIP-1071, KIP-1331).

Behavior: a member pushes its topology description when a heartbeat asked for
it (topology_description_required).  As GroupCoordinatorService: without
``group.streams.topology.description.plugin.class`` the broker has no plugin and
answers UNSUPPORTED_VERSION; an empty member or group id gets INVALID_REQUEST,
a group that is not a streams group GROUP_ID_NOT_FOUND, a member not in the
group UNKNOWN_MEMBER_ID, a topology epoch other than the group's current one
INVALID_REQUEST; NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE as for the other
group APIs.  The description is kept in the group (in place of the plugin's
store: it never fails, so STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED is never
answered) and StreamsGroupDescribe v1 returns it while its epoch is the
group's.

Version notes:
* v0: the only version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import StreamsGroupTopologyDescriptionUpdateRequest

API_KEY = ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE


def handle(ctx: RequestContext, req: StreamsGroupTopologyDescriptionUpdateRequest) -> Response:
    error, message = ctx.broker.groups.streams_group_topology_description_update(ctx.node_id, req)
    return Response({"error_code": error, "error_message": message}, error_code=error)
