"""What the ACL APIs (DescribeAcls, CreateAcls, DeleteAcls) share while mockbroker has no
authorizer: Kafka's ``AclApis`` with ``authorizer.class.name`` unset, and the requests' own
validation (``DescribeAclsRequest``/``CreateAclsRequest``/``DeleteAclsRequest.normalizeAndValidate``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from protocol.errors import InvalidRequest

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
    operation or permission type is UNKNOWN (code 0); Kafka fails to parse the request and closes
    the connection.  ``codes``: each item's (resource type, pattern type)."""
    for item, (resource_type, pattern_type) in zip(items, codes):
        if 0 in (resource_type, pattern_type, item.operation, item.permission_type):
            raise InvalidRequest(f"{api} contains UNKNOWN elements")
