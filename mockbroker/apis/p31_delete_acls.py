"""DeleteAcls (key 31): v1-3.

Behavior: there is no authorizer yet (``authorizer.class.name`` unset, Kafka's default), so every
filter is answered as Kafka's AclApis answers it then (DeleteAclsRequest.getErrorResponse with a
SecurityDisabledException): SECURITY_DISABLED with "No Authorizer is configured." and no matching
ACLs for each filter.  A filter with an UNKNOWN (0) resource type, pattern type, operation or
permission type fails DeleteAclsRequest's validation: the connection is closed, as Kafka closes a
request it cannot parse.  The authorizer is a later session of issue 27.

Version notes:
* v1 pattern types.  v2 flexible.  v3 the USER resource type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from .acls import ALTER_DISABLED, refuse_unknown
from .common import first_error

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
    return _answer(req, ErrorCode.security_disabled, ALTER_DISABLED)


def error_response(ctx: RequestContext, req: DeleteAclsRequest, error: ErrorCode) -> Response:
    """DeleteAclsRequest.getErrorResponse: the error for every filter."""
    return _answer(req, error, None)
