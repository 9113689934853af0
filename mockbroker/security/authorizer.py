"""ACLs and their authorizer: Kafka's ``StandardAuthorizer`` (``StandardAuthorizerData.authorize``)
over the ACLs ``AclControlManager`` keeps, one for the cluster.

On when ``authorizer.class.name`` is StandardAuthorizer (the only authorizer mockbroker has);
without it the ACL APIs answer SECURITY_DISABLED and nothing is checked, as Kafka.

An action (principal, host, operation, resource) is decided as StandardAuthorizerData decides it:
a super user (``super.users``) is allowed everything; otherwise the ACLs of the resource's type
whose pattern covers the resource (LITERAL: the same name or ``*``; PREFIXED: a prefix of it) are
looked at: a DENY matching the principal (or ``User:*``), the host (or ``*``) and the operation
(or ALL) denies; else a matching ALLOW allows (an ALLOW of READ, WRITE, DELETE or ALTER also allows
DESCRIBE, one of ALTER_CONFIGS DESCRIBE_CONFIGS); else, when the resource has ACLs at all, denied;
when it has none, ``allow.everyone.if.no.acl.found`` decides (default false: denied).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# StandardAuthorizerData.IMPLIES_DESCRIBE / IMPLIES_DESCRIBE_CONFIGS
_IMPLIES = {
    AclOperation.DESCRIBE: frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                                      AclOperation.DELETE, AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}),
}


@dataclass(frozen=True, slots=True)
class AclBinding:
    """Kafka's ``AclBinding``: a resource pattern and an access control entry."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def covers(self, resource_type: ResourceType, name: str) -> bool:
        """The pattern applies to the resource (StandardAuthorizerData.checkSection)."""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.name == name or self.name == WILDCARD
        return self.pattern_type == PatternType.PREFIXED and name.startswith(self.name)


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Kafka's ``AclBindingFilter`` (None: any value)."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    def matches(self, acl: AclBinding) -> bool:
        """ResourcePatternFilter.matches and AccessControlEntryFilter.matches."""
        if self.resource_type not in (ResourceType.ANY, acl.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        if self.name is not None:
            if self.pattern_type in (PatternType.ANY, acl.pattern_type):
                if self.name != acl.name:
                    return False
            elif acl.pattern_type == PatternType.LITERAL:  # MATCH: the ACLs that apply to the name
                if acl.name not in (self.name, WILDCARD):
                    return False
            elif not self.name.startswith(acl.name):
                return False
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and self.operation in (AclOperation.ANY, acl.operation)
                and self.permission in (AclPermissionType.ANY, acl.permission))


# AclControlManager.validateHostPattern's refusal of a CIDR host below metadata.version 4.4-IV1
# (UNSUPPORTED_VERSION where its other refusals are INVALID_REQUEST)
CIDR_UNSUPPORTED = "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher."


def validate_new_acl(acl: AclBinding, cidr_supported: bool = True) -> str | None:
    """AclControlManager.validateNewAcl and AclApis' own checks: the refusal's message (INVALID_REQUEST,
    or UNSUPPORTED_VERSION when it is ``CIDR_UNSUPPORTED``), or None.  ``cidr_supported``:
    MetadataVersion.isCidrAclSupported."""
    if acl.resource_type == ResourceType.CLUSTER and acl.name != CLUSTER_NAME:
        return "The only valid name for the CLUSTER resource is kafka-cluster"
    if not acl.name:
        return "Invalid empty resource name"
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        return f"Invalid permissionType {acl.permission.name}"
    if ":" not in acl.principal:
        return (f"Could not parse principal from `{acl.principal}` (no colon is present separating the "
                "principal type from the principal name)")
    return _host_refusal(acl.host, cidr_supported)


def _host_refusal(host: str, cidr_supported: bool) -> str | None:
    """AclControlManager.validateHostPattern (Kafka 4.4): a host is ``*``, any name or address (not
    checked), or, when it has a ``/``, a CIDR block as CidrUtils.validate parses it."""
    if not host:
        return "Host pattern cannot be null or empty"
    if host == WILDCARD or "/" not in host:
        return None
    if not cidr_supported:
        return CIDR_UNSUPPORTED
    problem = _cidr_problem(host)
    return None if problem is None else f"Invalid CIDR notation '{host}': {problem}"


_IPV4_CIDR = re.compile(r"([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})/([0-9]{1,2})")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def _cidr_problem(pattern: str) -> str | None:
    """Why CidrUtils.validate (commons-net's SubnetUtils / SubnetUtils6) refuses ``pattern``, in its
    words, or None.  An IPv6 block is one with a ``:``."""
    if ":" not in pattern:
        m = _IPV4_CIDR.fullmatch(pattern)
        if m is None:
            return f"Could not parse [{pattern}]"
        for value, high in [(int(m.group(i)), 255) for i in range(1, 5)] + [(int(m.group(5)), 32)]:
            if value > high:
                return f"Value [{value}] not in range [0,{high}]"
        return None
    address, _, prefix = pattern.partition("/")
    if not _JAVA_INT.fullmatch(prefix) or not -(1 << 31) <= int(prefix) < (1 << 31):  # Integer.parseInt
        return f"Could not parse [{pattern}] - invalid prefix length"
    if not 0 <= int(prefix) <= 128:
        return f"Could not parse [{pattern}] - prefix length must be between 0 and 128"
    literal = address[1:-1] if address.startswith("[") and address.endswith("]") else address
    try:  # InetAddress.getByName of an IPv6 literal; an IPv4-mapped one comes back as an IPv4 address
        parsed = ipaddress.IPv6Address(literal)
    except ValueError:
        return f"Could not parse [{address}]"
    if parsed.ipv4_mapped is not None:
        return f"Could not parse [{address}] - not an IPv6 address"
    return None


class StandardAuthorizer:
    """The cluster's ACLs and the decisions on them (see the module docstring)."""

    def __init__(self, super_users: Iterable[str] = (), allow_if_no_acl: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._acls: dict[AclBinding, None] = {}  # in creation order

    def acls(self) -> list[AclBinding]:
        return list(self._acls)

    def add(self, acl: AclBinding) -> None:
        self._acls[acl] = None

    def remove_matching(self, f: AclFilter) -> list[AclBinding]:
        gone = [a for a in self._acls if f.matches(a)]
        for a in gone:
            del self._acls[a]
        return gone

    def authorize(self, user: str, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        """StandardAuthorizerData.authorize for ``User:<user>`` connecting from ``host``."""
        principal = f"User:{user}"
        if principal in self.super_users:
            return True
        has_resource_acls = allowed = False
        for acl in self._acls:
            if not acl.covers(resource_type, name):
                continue
            has_resource_acls = True
            result = _result(acl, principal, host, operation)
            if result is AclPermissionType.DENY:
                return False
            allowed = allowed or result is AclPermissionType.ALLOW
        if allowed:
            return True
        return not has_resource_acls and self.allow_if_no_acl

    def authorize_any(self, user: str, host: str, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Authorizer.authorizeByResourceType (the interface's default method, which StandardAuthorizer
        keeps): allowed on a resource named "hardcode" (super users, wildcard ACLs, no ACL at all with
        allow.everyone.if.no.acl.found), else an ALLOW of exactly this operation (or ALL) for the
        principal whose pattern no DENY dominates (a DENY on the LITERAL wildcard denies all)."""
        if self.authorize(user, host, operation, resource_type, "hardcode"):
            return True
        principal = f"User:{user}"
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        for acl in self._acls:
            if (acl.resource_type != resource_type or acl.principal not in (principal, WILDCARD_PRINCIPAL)
                    or (acl.host not in (WILDCARD, host) and not _in_range(host, acl.host))
                    or acl.operation not in (operation, AclOperation.ALL)
                    or acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED)):
                continue
            if acl.permission == AclPermissionType.DENY:
                if acl.pattern_type == PatternType.LITERAL and acl.name == WILDCARD:
                    return False
                deny[acl.pattern_type].add(acl.name)
            elif acl.permission == AclPermissionType.ALLOW:
                if acl.pattern_type == PatternType.LITERAL and acl.name == WILDCARD:
                    return True
                allow[acl.pattern_type].add(acl.name)
        for pattern_type, names in allow.items():
            for name in names:
                if pattern_type == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(name[:i] in deny[PatternType.PREFIXED] for i in range(1, len(name) + 1)):
                    return True
        return False

def _result(acl: AclBinding, principal: str, host: str, operation: AclOperation) -> AclPermissionType | None:
    """StandardAuthorizerData.findResult: ALLOW or DENY when the ACL applies, else None."""
    if acl.principal not in (principal, WILDCARD_PRINCIPAL):
        return None
    if acl.host not in (WILDCARD, host) and not _in_range(host, acl.host):
        return None
    if acl.operation != AclOperation.ALL:
        if acl.permission == AclPermissionType.ALLOW:
            if acl.operation not in _IMPLIES.get(operation, frozenset({operation})):
                return None
        elif acl.operation != operation:
            return None
    return acl.permission


def _in_range(host: str, pattern: str) -> bool:
    """CidrUtils.isInRange: ``host`` in the CIDR block ``pattern`` as SubnetUtils / SubnetUtils6 read
    it (False for anything else)."""
    if "/" not in pattern or _cidr_problem(pattern) is not None:
        return False
    address, _, prefix = pattern.partition("/")
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    if ":" in pattern:
        literal = address[1:-1] if address.startswith("[") else address
        network = ipaddress.IPv6Network((ipaddress.IPv6Address(literal), int(prefix)), strict=False)
    else:  # octets as SubnetUtils reads them (a leading 0 is no octal)
        octets = [int(x) for x in address.split(".")]
        network = ipaddress.IPv4Network((sum(o << 8 * (3 - i) for i, o in enumerate(octets)), int(prefix)),
                                        strict=False)
    try:
        return ipaddress.ip_address(host) in network
    except ValueError:
        return False


# -- ACLs as tables (mock.acls, MockBroker.add_acl, POST /acls) ---------------------------------------

SPEC_FIELDS = ("resource_type", "name", "pattern_type", "principal", "host", "operation", "permission")


def _enum(enum: type[IntEnum], value: object, field: str, default: IntEnum | None = None) -> IntEnum:
    """A member by its Kafka name (any case, "transactional_id" or "TRANSACTIONAL_ID")."""
    if value is None and default is not None:
        return default
    if isinstance(value, str) and value.upper() in enum.__members__ and value.upper() not in ("UNKNOWN",):
        return enum[value.upper()]
    names = ", ".join(n for n in enum.__members__ if n != "UNKNOWN")
    raise ValueError(f"{field}: one of {names}, not {value!r}")


def _text(spec: dict[str, object], field: str, default: str | None = None) -> str | None:
    value = spec.get(field, default)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{field} must be a string")
    return value


def acl_from_spec(spec: dict[str, object]) -> AclBinding:
    """An ACL from a table: ``resource_type`` (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID,
    DELEGATION_TOKEN, USER), ``name``, ``principal`` (User:bob), ``operation`` (READ, WRITE, ...),
    and optionally ``pattern_type`` (LITERAL, PREFIXED), ``host`` (*), ``permission`` (ALLOW, DENY).
    ValueError with Kafka's message for what CreateAcls would refuse."""
    unknown = sorted(set(spec) - set(SPEC_FIELDS))
    if unknown:
        raise ValueError(f"unknown ACL field {unknown[0]!r} (fields: {', '.join(SPEC_FIELDS)})")
    for field in ("resource_type", "name", "principal", "operation"):
        if field not in spec:
            raise ValueError(f"{field} is required")
    acl = AclBinding(ResourceType(_enum(ResourceType, spec["resource_type"], "resource_type")),
                     _text(spec, "name") or "",
                     PatternType(_enum(PatternType, spec.get("pattern_type"), "pattern_type", PatternType.LITERAL)),
                     _text(spec, "principal") or "", _text(spec, "host", WILDCARD) or "",
                     AclOperation(_enum(AclOperation, spec["operation"], "operation")),
                     AclPermissionType(_enum(AclPermissionType, spec.get("permission"), "permission",
                                             AclPermissionType.ALLOW)))
    message = validate_new_acl(acl)
    if message is not None:
        raise ValueError(message)
    return acl


def acl_filter_from_spec(spec: dict[str, object]) -> AclFilter:
    """A filter from a table with the ACL fields, each optional (absent: any)."""
    unknown = sorted(set(spec) - set(SPEC_FIELDS))
    if unknown:
        raise ValueError(f"unknown ACL field {unknown[0]!r} (fields: {', '.join(SPEC_FIELDS)})")
    return AclFilter(ResourceType(_enum(ResourceType, spec.get("resource_type"), "resource_type", ResourceType.ANY)),
                     _text(spec, "name"),
                     PatternType(_enum(PatternType, spec.get("pattern_type"), "pattern_type", PatternType.ANY)),
                     _text(spec, "principal"), _text(spec, "host"),
                     AclOperation(_enum(AclOperation, spec.get("operation"), "operation", AclOperation.ANY)),
                     AclPermissionType(_enum(AclPermissionType, spec.get("permission"), "permission",
                                             AclPermissionType.ANY)))


def acl_view(acl: AclBinding) -> dict[str, str]:
    """An ACL as a table (the fields acl_from_spec takes, by Kafka's names)."""
    return {"resource_type": acl.resource_type.name, "name": acl.name, "pattern_type": acl.pattern_type.name,
            "principal": acl.principal, "host": acl.host, "operation": acl.operation.name,
            "permission": acl.permission.name}
