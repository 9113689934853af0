"""CreateAcls (key 30): v1-3.

Behavior: there is no authorizer yet (``authorizer.class.name`` unset, Kafka's default), so every
creation is answered as Kafka's AclApis answers it then (CreateAclsRequest.getErrorResponse with
a SecurityDisabledException): SECURITY_DISABLED with "No Authorizer is configured." for each
creation, nothing stored.  A creation with an UNKNOWN (0) resource type, pattern type, operation or
permission type fails CreateAclsRequest's validation: the connection is closed, as Kafka closes a
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
    from protocol.request_types import CreateAclsRequest

API_KEY = ApiKey.CREATE_ACLS


def _answer(req: CreateAclsRequest, error: ErrorCode, message: str | None) -> Response:
    results: list[dict[str, Any]] = [{"error_code": error, "error_message": message} for _ in req.creations]
    return Response({"results": results}, error_code=first_error(results))


def handle(ctx: RequestContext, req: CreateAclsRequest) -> Response:
    refuse_unknown("CreateAclsRequest", req.creations,
                   [(c.resource_type, c.resource_pattern_type) for c in req.creations])
    return _answer(req, ErrorCode.security_disabled, ALTER_DISABLED)


def error_response(ctx: RequestContext, req: CreateAclsRequest, error: ErrorCode) -> Response:
    """CreateAclsRequest.getErrorResponse: the error for every creation."""
    return _answer(req, error, None)
