"""DescribeAcls (key 29): v1-3.

Behavior: there is no authorizer yet (``authorizer.class.name`` unset, Kafka's default), so every
request is answered as Kafka's AclApis answers it then: SECURITY_DISABLED at the top ("No Authorizer
is configured on the broker") and no resources.  A filter with an UNKNOWN (0) resource type,
pattern type, operation or permission type fails DescribeAclsRequest's validation: the connection
is closed, as Kafka closes a request it cannot parse.  The authorizer (StandardAuthorizer's ACLs)
is a later session of issue 27.

Version notes:
* v1 pattern types (PREFIXED, MATCH, ANY).  v2 flexible.  v3 the USER resource type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from .acls import DESCRIBE_DISABLED, refuse_unknown

if TYPE_CHECKING:
    from protocol.request_types import DescribeAclsRequest

API_KEY = ApiKey.DESCRIBE_ACLS


def handle(ctx: RequestContext, req: DescribeAclsRequest) -> Response:
    refuse_unknown("DescribeAclsRequest", [req], [(req.resource_type_filter, req.pattern_type_filter)])
    return Response({"error_code": ErrorCode.security_disabled, "error_message": DESCRIBE_DISABLED,
                     "resources": []})
