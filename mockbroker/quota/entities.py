"""Client-quota entities and the configured quotas (Kafka's ``ClientQuotaManager`` class doc and
``DefaultQuotaCallback``).

An entity is a (user, client-id) pair where each side is a name, ``DEFAULT``
(``<default>``) or absent (``None``).  Eight levels, most specific first:

1. /config/users/<user>/clients/<client-id>
2. /config/users/<user>/clients/<default>
3. /config/users/<user>
4. /config/users/<default>/clients/<client-id>
5. /config/users/<default>/clients/<default>
6. /config/users/<default>
7. /config/clients/<client-id>
8. /config/clients/<default>

Per quota key (producer_byte_rate, ...) the store tracks which entities
have it, so ``metric_tags`` can pick the (user, client-id) tags that decide
which clients *share* one sensor, exactly as ``quotaMetricTags`` does, and
``quota_limit`` the bound for those tags as ``quotaLimit`` does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

DEFAULT = "<default>"  # the default entity name (null EntityName on the wire)

LONG_KEYS = ("producer_byte_rate", "consumer_byte_rate")
DOUBLE_KEYS = ("request_percentage", "controller_mutation_rate", "request_rate")
QUOTA_KEYS = LONG_KEYS + DOUBLE_KEYS
# validateQuotaKeyValue's bound for a LONG quota, the float literal 9.223372E18F: 2^63 as a float
LONG_BOUND = 2.0 ** 63
INT_MAX = (1 << 31) - 1
IP_KEYS = ("connection_creation_rate",)  # QuotaConfig.ipConfigs (stored and described, not enforced)

Entity = tuple[str | None, str | None]  # (user, client-id); DEFAULT or a name or None


def validate_quota(key: str, value: float, ip: bool = False) -> str | None:
    """ClientQuotaControlManager.validateQuotaKeyValue (Kafka 4.4): the INVALID_REQUEST message for
    setting ``key`` to ``value`` on a user/client-id entity (``ip``: an ip entity), or None.  The
    keys' types are QuotaConfig's: LONG byte rates, DOUBLE request_percentage and
    controller_mutation_rate (and request_rate, mockbroker's), the ip entity's INT
    connection_creation_rate."""
    if key not in (IP_KEYS if ip else QUOTA_KEYS):
        return f"Invalid configuration key {key}"
    if not math.isfinite(value):
        return f"Quota {key} must be a finite number"
    if value <= 0:
        return f"Quota {key} must be greater than 0"
    if key in LONG_KEYS:
        if value > LONG_BOUND:
            return f"Proposed value for {key} is too large for a LONG."
    elif key in IP_KEYS:
        if value > INT_MAX:
            return f"Proposed value for {key} is too large for an INT."
    else:
        return None
    if abs(math.fmod(value, 1.0)) > 1e-6:  # getErrorForIntegralQuotaValue
        return f"{key} cannot be a fractional value."
    return None


class QuotaStore:
    """The configured client quotas: entity -> {key: value}."""

    def __init__(self) -> None:
        self.quotas: dict[Entity, dict[str, float]] = {}
        self.ip_quotas: dict[str, dict[str, float]] = {}  # connection_creation_rate: stored, not enforced
        self.version = 0  # bumped on every change so sensors refresh their bounds
        self._by_key: tuple[int, dict[str, dict[Entity, float]]] = (-1, {})

    def set(self, entity: Entity, key: str, value: float | None) -> None:
        values = self.quotas.setdefault(entity, {})
        if value is None:
            values.pop(key, None)
            if not values:
                del self.quotas[entity]
        else:
            values[key] = float(value)
        self.version += 1

    def set_ip(self, ip: str, key: str, value: float | None) -> None:
        values = self.ip_quotas.setdefault(ip, {})
        if value is None:
            values.pop(key, None)
            if not values:
                del self.ip_quotas[ip]
        else:
            values[key] = float(value)

    def entities_with(self, key: str) -> dict[Entity, float]:
        """Entities with a quota for ``key`` (cached until the next change: this is on the hot path)."""
        cache = self._by_key
        if cache[0] != self.version:
            cache = self._by_key = (self.version, {})
        found = cache[1].get(key)
        if found is None:
            found = cache[1][key] = {e: v[key] for e, v in self.quotas.items() if key in v}
        return found

    def describe(self) -> Iterable[tuple[Entity, dict[str, float]]]:
        return list(self.quotas.items())

    # -- resolution (DefaultQuotaCallback) --------------------------------------------------
    def metric_tags(self, key: str, user: str, client_id: str) -> tuple[str, str]:
        configured = self.entities_with(key)
        kinds = {(u is not None, c is not None) for u, c in configured}
        if not configured or kinds == {(False, True)}:
            return "", client_id
        if kinds == {(True, False)}:
            return user, ""
        if kinds == {(True, True)}:
            return user, client_id
        levels = [
            ((user, client_id), (user, client_id)),
            ((user, DEFAULT), (user, client_id)),
            ((user, None), (user, "")),
            ((DEFAULT, client_id), (user, client_id)),
            ((DEFAULT, DEFAULT), (user, client_id)),
            ((DEFAULT, None), (user, "")),
            ((None, client_id), ("", client_id)),
            ((None, DEFAULT), ("", client_id)),
        ]
        for entity, tags in levels:
            if entity in configured:
                return tags
        return "", client_id

    def quota_limit(self, key: str, user: str, client_id: str) -> float | None:
        configured = self.entities_with(key)
        order: list[tuple[str | None, str | None]]
        if user and client_id:
            order = [(user, client_id), (user, DEFAULT), (DEFAULT, client_id), (DEFAULT, DEFAULT)]
        elif user:
            order = [(user, None), (DEFAULT, None)]
        elif client_id:
            order = [(None, client_id), (None, DEFAULT)]
        else:
            order = []
        for e in order:
            if e in configured:
                return configured[e]
        return None

    def quotas_in_force(self, user: str, client_id: str) -> dict[str, float]:
        """Every quota that applies to this client (key -> bound), resolved as the quota managers
        resolve them."""
        out = {}
        for key in QUOTA_KEYS:
            if self.entities_with(key):
                bound = self.quota_limit(key, *self.metric_tags(key, user, client_id))
                if bound is not None:
                    out[key] = bound
        return out

    # -- static configuration ------------------------------------------------------------------
    def load(self, items: Iterable[Mapping[str, Any]]) -> None:
        """Quotas from the config file: [[mock.quotas]] tables with ``user`` and/or
        ``client-id`` (``<default>`` for the default entity) and quota keys."""
        for item in items:
            item = dict(item)
            user = item.pop("user", None)
            client = item.pop("client-id", item.pop("client_id", None))
            if user is None and client is None:
                raise ValueError("a quota needs a user and/or a client-id (use \"<default>\" for defaults)")
            if not item:
                raise ValueError(f"quota for user={user!r} client-id={client!r} sets no quota key")
            for key, value in item.items():
                msg = validate_quota(key, float(value))
                if msg:
                    raise ValueError(msg)
                self.set((user, client), key, float(value))


def parse_quota_spec(text: str) -> list[dict[str, Any]]:
    """``-c`` form: ``users/alice/clients/app:producer_byte_rate=1024,request_percentage=50;clients/<default>:...``"""
    out = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        path, _, values = part.partition(":")
        segs = [s for s in path.strip("/").split("/") if s]
        item: dict[str, Any] = {}
        while segs:
            kind = segs.pop(0)
            if not segs:
                raise ValueError(f"quota entity {path!r} lacks a name after {kind!r}")
            name = segs.pop(0)
            if kind == "users":
                item["user"] = name
            elif kind == "clients":
                item["client-id"] = name
            else:
                raise ValueError(f"quota entity {path!r}: expected users/NAME and/or clients/NAME")
        for kv in filter(None, (x.strip() for x in values.split(","))):
            k, _, v = kv.partition("=")
            item[k.strip()] = float(v)
        out.append(item)
    return out
