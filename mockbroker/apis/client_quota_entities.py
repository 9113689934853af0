"""Wire entity <-> QuotaStore entity for DescribeClientQuotas / AlterClientQuotas (KIP-546)."""

from __future__ import annotations

from typing import Any

from ..quota.entities import DEFAULT

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)


def from_wire(components: Any) -> tuple[tuple[str | None, str | None] | None, str | None, str | None]:
    """((user, client-id) or None, ip, error message) of an AlterClientQuotas entity."""
    seen: dict[str, str | None] = {}
    for c in components:
        if c.entity_type not in ENTITY_TYPES:
            return None, None, f"Unhandled client quota entity type: {c.entity_type}"
        if c.entity_type in seen:
            return None, None, f"Duplicate {c.entity_type} entity type"
        if c.entity_name is not None and c.entity_name == "":
            return None, None, f"Empty {c.entity_type} entity name"
        seen[c.entity_type] = DEFAULT if c.entity_name is None else c.entity_name
    if not seen:
        return None, None, "Invalid empty client quota entity"
    if IP in seen:
        if len(seen) > 1:
            return None, None, "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
        return None, seen[IP], None
    return (seen.get(USER), seen.get(CLIENT_ID)), None, None


def to_wire(entity: tuple[str | None, str | None] | None, ip: str | None = None) -> list[dict[str, str | None]]:
    def name(v: str | None) -> str | None:
        return None if v == DEFAULT else v

    if ip is not None:
        return [{"entity_type": IP, "entity_name": name(ip)}]
    assert entity is not None
    user, client = entity
    out = []
    if user is not None:
        out.append({"entity_type": USER, "entity_name": name(user)})
    if client is not None:
        out.append({"entity_type": CLIENT_ID, "entity_name": name(client)})
    return out
