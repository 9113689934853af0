"""DeleteGroups (key 42): v0-3.

Behavior (Kafka's KafkaApis.handleDeleteGroupsRequest and GroupCoordinatorService.deleteGroups):
a group named more than once is deleted and answered once (KafkaApis takes the names ``distinct``);
an Empty group is removed with its committed offsets; a group with members gets
NON_EMPTY_GROUP, an unknown group GROUP_ID_NOT_FOUND, a group coordinated
elsewhere NOT_COORDINATOR.

Version notes:
* v1 clients back off on the throttle.  v2 flexible.  v3 a per-group error message: null here, as
  Kafka's group coordinator leaves it for the errors its shard answers (NON_EMPTY_GROUP,
  GROUP_ID_NOT_FOUND); it fills it only when a share group's state cannot be deleted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import AclOperation, ResourceType
from ..request import RequestContext, Response
from .common import authorized, first_error

if TYPE_CHECKING:
    from protocol.request_types import DeleteGroupsRequest

API_KEY = ApiKey.DELETE_GROUPS


def handle(ctx: RequestContext, req: DeleteGroupsRequest) -> Response:
    names = list(dict.fromkeys(req.groups_names))  # KafkaApis: the names distinct, in their first order
    # KafkaApis: DELETE on each group; the others are deleted
    allowed = [g for g in names if authorized(ctx, AclOperation.DELETE, ResourceType.GROUP, g)]
    errors = ctx.broker.groups.delete_groups(ctx.node_id, allowed)
    results = [{"group_id": gid, "error_code": errors.get(gid, ErrorCode.group_authorization_failed),
                "error_message": None} for gid in names]
    return Response({"results": results}, error_code=first_error(results))


def error_response(ctx: RequestContext, req: DeleteGroupsRequest, error: ErrorCode) -> Response:
    # DeleteGroupsRequest.getErrorResponse: every name of the request, as it was sent
    results = [{"group_id": gid, "error_code": error, "error_message": None} for gid in req.groups_names]
    return Response({"results": results}, error_code=first_error(results))
