"""CreateAcls (key 30): v1-3.

Behavior (Kafka's AclApis.handleCreateAcls, AclControlManager.createAcls): ALTER on the cluster is
checked first (CLUSTER_AUTHORIZATION_FAILED for every creation).  Without an authorizer
(``authorizer.class.name`` unset, Kafka's default) every creation gets SECURITY_DISABLED with "No
Authorizer is configured.", nothing stored.  With StandardAuthorizer each valid creation is stored
(an ACL already there is kept once) and applies at once on every broker; an invalid one gets
INVALID_REQUEST with Kafka's message (a CLUSTER resource not named kafka-cluster, an empty name, a
MATCH or ANY pattern type, an ANY operation or permission, a principal without ':', a bad host).
A creation with an UNKNOWN (0) resource type, pattern type, operation or permission type fails
CreateAclsRequest's validation: the connection is closed, as Kafka closes a request it cannot
parse.

Version notes:
* v1 pattern types.  v2 flexible.  v3 the USER resource type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..authorizer import (
    CLUSTER_NAME,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    validate_new_acl,
)
from .acls import ALTER_DISABLED, needs_permission, refuse_unknown
from .common import authorized, first_error

if TYPE_CHECKING:
    from protocol.request_types import CreateAclsRequest

API_KEY = ApiKey.CREATE_ACLS


def _answer(req: CreateAclsRequest, error: ErrorCode, message: str | None) -> Response:
    results: list[dict[str, Any]] = [{"error_code": error, "error_message": message} for _ in req.creations]
    return Response({"results": results}, error_code=first_error(results))


def handle(ctx: RequestContext, req: CreateAclsRequest) -> Response:
    refuse_unknown("CreateAclsRequest", req.creations,
                   [(c.resource_type, c.resource_pattern_type) for c in req.creations])
    if not authorized(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return _answer(req, ErrorCode.cluster_authorization_failed, needs_permission(ctx, AclOperation.ALTER))
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return _answer(req, ErrorCode.security_disabled, ALTER_DISABLED)
    results: list[dict[str, Any]] = []
    for c in req.creations:
        acl = AclBinding(ResourceType(c.resource_type), c.resource_name, PatternType(c.resource_pattern_type),
                         c.principal, c.host, AclOperation(c.operation), AclPermissionType(c.permission_type))
        message = validate_new_acl(acl)
        if message is None:
            authorizer.add(acl)
        results.append({"error_code": ErrorCode.invalid_request if message else ErrorCode.none,
                        "error_message": message})
    return Response({"results": results}, error_code=first_error(results))


def error_response(ctx: RequestContext, req: CreateAclsRequest, error: ErrorCode) -> Response:
    """CreateAclsRequest.getErrorResponse: the error for every creation."""
    return _answer(req, error, None)
