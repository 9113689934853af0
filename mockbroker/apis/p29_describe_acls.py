"""DescribeAcls (key 29): v1-3.

Behavior (Kafka's AclApis.handleDescribeAcls): DESCRIBE on the cluster is checked first
(CLUSTER_AUTHORIZATION_FAILED).  Without an authorizer (``authorizer.class.name`` unset, Kafka's
default) the answer is SECURITY_DISABLED at the top ("No Authorizer is configured on the broker")
and no resources; with StandardAuthorizer, the ACLs the filter matches, grouped by resource pattern
(in the order the patterns were first given an ACL; Kafka groups them in a HashMap), with the
error message "" (Kafka's).  A filter with an UNKNOWN (0) resource type, pattern type, operation or
permission type fails DescribeAclsRequest's validation: the connection is closed, as Kafka closes a
request it cannot parse; a code Kafka's enums lack (-1, 127) is read as UNKNOWN (``fromCode``): no
ACL matches it (SECURITY_DISABLED as ever without an authorizer).

Version notes:
* v1 pattern types (PREFIXED, MATCH, ANY).  v2 flexible.  v3 the USER resource type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from .acls import DESCRIBE_DISABLED, acl_filter, needs_permission, refuse_unknown
from .common import authorized

if TYPE_CHECKING:
    from protocol.request_types import DescribeAclsRequest

API_KEY = ApiKey.DESCRIBE_ACLS


def handle(ctx: RequestContext, req: DescribeAclsRequest) -> Response:
    refuse_unknown("DescribeAclsRequest", [req], [(req.resource_type_filter, req.pattern_type_filter)])
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return Response({"error_code": ErrorCode.cluster_authorization_failed,
                         "error_message": needs_permission(ctx, AclOperation.DESCRIBE), "resources": []})
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return Response({"error_code": ErrorCode.security_disabled, "error_message": DESCRIBE_DISABLED,
                         "resources": []})
    f = acl_filter(req)
    groups: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in authorizer.acls():
        if f.matches(acl):
            groups.setdefault((acl.resource_type, acl.name, acl.pattern_type), []).append(
                {"principal": acl.principal, "host": acl.host, "operation": int(acl.operation),
                 "permission_type": int(acl.permission)})
    resources = [{"resource_type": int(t), "resource_name": n, "pattern_type": int(p), "acls": acls}
                 for (t, n, p), acls in groups.items()]
    return Response({"error_code": ErrorCode.none, "error_message": "", "resources": resources})
