"""What the ACL APIs (DescribeAcls, CreateAcls, DeleteAcls) share: Kafka's ``AclApis`` (with
``authorizer.class.name`` unset: SECURITY_DISABLED; set: the cluster's StandardAuthorizer), and the
requests' own validation (``DescribeAclsRequest``/``CreateAclsRequest``/``DeleteAclsRequest.normalizeAndValidate``).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import Protocol

from protocol.errors import InvalidRequest

from ..request import RequestContext
from ..authorizer import AclBinding, AclFilter, AclOperation, AclPermissionType, PatternType, ResourceType

# AclApis' messages when no authorizer is configured: DescribeAcls' own, and the
# SecurityDisabledException the other two give getErrorResponse
DESCRIBE_DISABLED = "No Authorizer is configured on the broker"
ALTER_DISABLED = "No Authorizer is configured."


class _AclElements(Protocol):
    @property
    def operation(self) -> int: ...
    @property
    def permission_type(self) -> int: ...


def refuse_unknown(api: str, items: Iterable[_AclElements], codes: Iterable[tuple[int, int]]) -> None:
    """The requests' constructors throw IllegalArgumentException when a resource type, pattern type,
    operation or permission type is UNKNOWN (code 0, or a code Kafka's ``fromCode`` does not know and
    reads as UNKNOWN); Kafka fails to parse the request and closes the connection.  ``codes``: each
    item's (resource type, pattern type)."""
    for item, (resource_type, pattern_type) in zip(items, codes):
        if (_unknown(ResourceType, resource_type) or _unknown(PatternType, pattern_type)
                or _unknown(AclOperation, item.operation) or _unknown(AclPermissionType, item.permission_type)):
            raise InvalidRequest(f"{api} contains UNKNOWN elements")


def _unknown(enum: type[IntEnum], code: int) -> bool:
    return code == 0 or code not in enum._value2member_map_


class _FilterFields(Protocol):
    @property
    def resource_type_filter(self) -> int: ...
    @property
    def resource_name_filter(self) -> str | None: ...
    @property
    def pattern_type_filter(self) -> int: ...
    @property
    def principal_filter(self) -> str | None: ...
    @property
    def host_filter(self) -> str | None: ...
    @property
    def operation(self) -> int: ...
    @property
    def permission_type(self) -> int: ...


def needs_permission(ctx: RequestContext, operation: AclOperation) -> str:
    """AuthHelper.authorizeClusterOperation's ClusterAuthorizationException message (Kafka prints
    the whole request where this names its API)."""
    return f"Request {ctx.spec.name} needs {operation.name} permission."


def acl_filter(f: _FilterFields) -> AclFilter:
    """DescribeAclsRequest.filter / DeleteAclsRequest.filters: the request's AclBindingFilter."""
    return AclFilter(ResourceType(f.resource_type_filter), f.resource_name_filter, PatternType(f.pattern_type_filter),
                     f.principal_filter, f.host_filter, AclOperation(f.operation),
                     AclPermissionType(f.permission_type))


def binding_fields(acl: AclBinding) -> dict[str, object]:
    """An ACL as DeleteAclsMatchingAcl writes it."""
    return {"resource_type": int(acl.resource_type), "resource_name": acl.name,
            "pattern_type": int(acl.pattern_type), "principal": acl.principal, "host": acl.host,
            "operation": int(acl.operation), "permission_type": int(acl.permission)}
