"""CreateAcls (key 30): v1-3.

Behavior (Kafka's AclApis.handleCreateAcls, AclControlManager.createAcls): ALTER on the cluster is
checked first (CLUSTER_AUTHORIZATION_FAILED for every creation).  Without an authorizer
(``authorizer.class.name`` unset, Kafka's default) every creation gets SECURITY_DISABLED with "No
Authorizer is configured.", nothing stored.  With StandardAuthorizer a request with a creation
Kafka cannot make an ``AclBinding`` of (an ANY resource type, a MATCH or ANY pattern type, an ANY
operation or permission type: its constructors throw) is answered UNKNOWN_SERVER_ERROR for every
creation and creates nothing, as Kafka's KafkaApis answers the exception; otherwise each valid
creation is stored (an ACL already there is kept once) and applies at once on every broker, with
the message "" (Kafka's default), and an invalid one gets INVALID_REQUEST with Kafka's message (a
CLUSTER resource not named kafka-cluster, an empty name, an UNKNOWN element, a principal without
':', an empty host, a host with a ``/`` that is not a CIDR block as Kafka parses one; any other host
is taken as it is), or UNSUPPORTED_VERSION for a CIDR host below metadata.version 4.4-IV1.
A creation with an UNKNOWN (0) resource type, pattern type, operation or permission type fails
CreateAclsRequest's validation: the connection is closed, as Kafka closes a request it cannot
parse; a code Kafka's enums lack (-1, 127) is read as UNKNOWN (``fromCode``) and refused as above.

Version notes:
* v1 pattern types.  v2 flexible.  v3 the USER resource type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..security.authorizer import (
    CIDR_UNSUPPORTED, CLUSTER_NAME, AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType,
    validate_new_acl,
)
from .acls import ALTER_DISABLED, from_code, needs_permission, refuse_unknown
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
    acls = [AclBinding(from_code(ResourceType, c.resource_type), c.resource_name,
                       from_code(PatternType, c.resource_pattern_type), c.principal, c.host,
                       from_code(AclOperation, c.operation), from_code(AclPermissionType, c.permission_type))
            for c in req.creations]
    if any(_not_a_binding(acl) for acl in acls):
        # CreateAclsRequest.aclBinding's ResourcePattern / AccessControlEntry constructors throw
        # IllegalArgumentException: KafkaApis answers the whole request as getErrorResponse does
        # (UNKNOWN_SERVER_ERROR, no message, for every creation) and creates none
        return _answer(req, ErrorCode.unknown_server_error, None)
    cidr = ctx.broker.features.cidr_acls_supported()
    results: list[dict[str, Any]] = []
    for acl in acls:
        message = validate_new_acl(acl, cidr)
        if message is None:
            authorizer.add(acl)
        error = (ErrorCode.none if message is None else ErrorCode.unsupported_version
                 if message == CIDR_UNSUPPORTED else ErrorCode.invalid_request)
        # a creation's message is "" when it succeeds (AclCreationResult's default; AclApis sets it
        # only from an error)
        results.append({"error_code": error, "error_message": message or ""})
    return Response({"results": results}, error_code=first_error(results))


def _not_a_binding(acl: AclBinding) -> bool:
    """What ResourcePattern (an ANY resource type; a MATCH or ANY pattern type) and AccessControlEntry
    (an ANY operation or permission type) refuse to be."""
    return (acl.resource_type is ResourceType.ANY or acl.pattern_type in (PatternType.MATCH, PatternType.ANY)
            or acl.operation is AclOperation.ANY or acl.permission is AclPermissionType.ANY)


def error_response(ctx: RequestContext, req: CreateAclsRequest, error: ErrorCode) -> Response:
    """CreateAclsRequest.getErrorResponse: the error for every creation."""
    return _answer(req, error, None)
