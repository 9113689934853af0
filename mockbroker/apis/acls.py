"""What the ACL APIs (DescribeAcls, CreateAcls, DeleteAcls) share: Kafka's ``AclApis`` (with
``authorizer.class.name`` unset: SECURITY_DISABLED; set: the cluster's StandardAuthorizer), and the
requests' own validation (``DescribeAclsRequest``/``CreateAclsRequest``/``DeleteAclsRequest.normalizeAndValidate``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

from protocol.errors import InvalidRequest

from ..request import RequestContext
from ..security.authorizer import AclBinding, AclFilter, AclOperation, AclPermissionType, PatternType, ResourceType

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
    operation or permission type is UNKNOWN's code, 0; Kafka fails to parse the request and closes
    the connection.  A code its enums do not have (-1, 127) is no such failure: the request is served
    and ``fromCode`` reads the value as UNKNOWN (``from_code``).  ``codes``: each item's (resource
    type, pattern type)."""
    for item, (resource_type, pattern_type) in zip(items, codes):
        if 0 in (resource_type, pattern_type, item.operation, item.permission_type):
            raise InvalidRequest(f"{api} contains UNKNOWN elements")


E = TypeVar("E", ResourceType, PatternType, AclOperation, AclPermissionType)


def from_code(enum: type[E], code: int) -> E:
    """``ResourceType.fromCode`` (and PatternType's, AclOperation's, AclPermissionType's): the member,
    UNKNOWN for a code the enum does not have."""
    member = enum._value2member_map_.get(code)
    return member if isinstance(member, enum) else enum(0)


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
    return AclFilter(from_code(ResourceType, f.resource_type_filter), f.resource_name_filter,
                     from_code(PatternType, f.pattern_type_filter), f.principal_filter, f.host_filter,
                     from_code(AclOperation, f.operation), from_code(AclPermissionType, f.permission_type))


def binding_fields(acl: AclBinding) -> dict[str, object]:
    """An ACL as DeleteAclsMatchingAcl writes it."""
    return {"resource_type": int(acl.resource_type), "resource_name": acl.name,
            "pattern_type": int(acl.pattern_type), "principal": acl.principal, "host": acl.host,
            "operation": int(acl.operation), "permission_type": int(acl.permission)}


def filter_refusal(f: AclFilter) -> str | None:
    """AclControlManager.validateFilter: DeleteAcls' INVALID_REQUEST message for a filter with an
    UNKNOWN element (a code Kafka's enums lack), or None."""
    if f.resource_type is ResourceType.UNKNOWN or f.pattern_type is PatternType.UNKNOWN:  # ResourcePatternFilter.isUnknown
        return "Unknown patternFilter."
    if f.operation is AclOperation.UNKNOWN or f.permission is AclPermissionType.UNKNOWN:  # AccessControlEntryFilter.isUnknown
        return "Unknown entryFilter."
    return None
