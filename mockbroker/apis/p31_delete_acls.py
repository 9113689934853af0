"""DeleteAcls (key 31): v1-3.

Behavior (Kafka's AclApis.handleDeleteAcls, AclControlManager.deleteAcls): ALTER on the cluster is
checked first (CLUSTER_AUTHORIZATION_FAILED for every filter).  Without an authorizer
(``authorizer.class.name`` unset, Kafka's default) every filter gets SECURITY_DISABLED with "No
Authorizer is configured." and no matching ACLs.  With StandardAuthorizer each filter lists the
ACLs it matches (an ACL two filters match is listed by both, as Kafka matches every filter against
the ACLs before removing any), and all of them are removed together.  A filter with an UNKNOWN (0)
resource type, pattern type, operation or permission type fails DeleteAclsRequest's validation:
the connection is closed, as Kafka closes a request it cannot parse; a code Kafka's enums lack (-1,
127) is read as UNKNOWN (``fromCode``): without an authorizer SECURITY_DISABLED as ever, with one
that filter gets INVALID_REQUEST ("Unknown patternFilter." for the resource or pattern type, else
"Unknown entryFilter."; AclControlManager.validateFilter) and removes nothing.

Version notes:
* v1 pattern types.  v2 flexible.  v3 the USER resource type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from .acls import ALTER_DISABLED, acl_filter, binding_fields, filter_refusal, needs_permission, refuse_unknown
from .common import authorized, first_error

if TYPE_CHECKING:
    from protocol.request_types import DeleteAclsRequest

API_KEY = ApiKey.DELETE_ACLS


def _answer(req: DeleteAclsRequest, error: ErrorCode, message: str | None) -> Response:
    results: list[dict[str, Any]] = [{"error_code": error, "error_message": message, "matching_acls": []}
                                     for _ in req.filters]
    return Response({"filter_results": results}, error_code=first_error(results))


def handle(ctx: RequestContext, req: DeleteAclsRequest) -> Response:
    refuse_unknown("DeleteAclsRequest", req.filters,
                   [(f.resource_type_filter, f.pattern_type_filter) for f in req.filters])
    if not authorized(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return _answer(req, ErrorCode.cluster_authorization_failed, needs_permission(ctx, AclOperation.ALTER))
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return _answer(req, ErrorCode.security_disabled, ALTER_DISABLED)
    filters = [acl_filter(f) for f in req.filters]
    refusals = [filter_refusal(f) for f in filters]
    acls = authorizer.acls()
    matched = [[a for a in acls if f.matches(a)] if refused is None else []
               for f, refused in zip(filters, refusals)]
    for f, refused in zip(filters, refusals):
        if refused is None:
            authorizer.remove_matching(f)
    results: list[dict[str, Any]] = [
        {"error_code": ErrorCode.none if refused is None else ErrorCode.invalid_request, "error_message": refused,
         "matching_acls": [{"error_code": ErrorCode.none, "error_message": None, **binding_fields(a)} for a in m]}
        for m, refused in zip(matched, refusals)]
    return Response({"filter_results": results}, error_code=first_error(results))


def error_response(ctx: RequestContext, req: DeleteAclsRequest, error: ErrorCode) -> Response:
    """DeleteAclsRequest.getErrorResponse: the error for every filter."""
    return _answer(req, error, None)
