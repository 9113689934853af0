"""Wire entity <-> QuotaStore entity for DescribeClientQuotas / AlterClientQuotas (KIP-546)."""

from __future__ import annotations

import ipaddress
from typing import Any

from ..quota.entities import DEFAULT

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

# A quota entity as Kafka's ClientQuotaEntity holds it: entity type -> name (None: the default entity)
EntityMap = dict[str, "str | None"]


def entity_map(components: Any) -> EntityMap:
    """AlterClientQuotasRequest.entries: an entry's entity as a map, a type named twice keeping its
    last name (HashMap.put)."""
    return {c.entity_type: c.entity_name for c in components}


def entity_text(entity: EntityMap) -> str:
    """ClientQuotaEntity.toString (its map's entries in request order where Kafka prints a HashMap's)."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity.items()) + "})"


def from_map(entity: EntityMap) -> tuple[tuple[str | None, str | None] | None, str | None, str | None]:
    """((user, client-id) or None, ip, error message) of an AlterClientQuotas entity, checked as
    ClientQuotaControlManager.validateEntity and configKeysForEntityType check it."""
    if not entity:
        return None, None, "Invalid empty client quota entity"
    for etype, name in entity.items():
        if etype not in ENTITY_TYPES:
            return None, None, f"Unhandled client quota entity type: {etype}"
        if name == "":
            return None, None, f"Empty {etype} not supported"
    seen = {t: DEFAULT if n is None else n for t, n in entity.items()}
    if IP in seen:
        if len(seen) > 1:  # Kafka's message, its missing space kept
            return None, None, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        address = entity[IP]
        if address is not None and not _valid_ip(address):
            return None, None, f"{address} is not a valid IP or resolvable host."
        return None, seen[IP], None
    return (seen.get(USER), seen.get(CLIENT_ID)), None, None


def _valid_ip(name: str) -> bool:
    """ClientQuotaControlManager.isValidIpEntity: Kafka asks InetAddress.getByName, which resolves a
    host name through DNS; mockbroker takes an IP address (an IPv6 one also in brackets) and
    ``localhost``, and refuses other names rather than wait on a resolver (docs/differences.md)."""
    literal = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        ipaddress.ip_address(literal)
    except ValueError:
        return name.lower() == "localhost"
    return True


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
