"""DescribeClientQuotas (key 48): v0-1.

Behavior:
* Filters as Kafka's ``ClientQuotasImage.describe``: each component names an
  entity type with match type 0 (exact name), 1 (the default entity) or 2
  (any entity that has this type); ``strict`` excludes entities with types
  not named.  Unknown or repeated entity types, an exact match without a
  name, or ip mixed with user/client-id: INVALID_REQUEST.
* Entries show the configured quotas (the config file's and those set by
  AlterClientQuotas), the default entity as a null name.

Version notes:
* v0 throttle (clients never back off on it).  v1 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..quota.entities import DEFAULT
from ..request import RequestContext, Response
from .client_quota_entities import CLIENT_ID, ENTITY_TYPES, IP, USER, to_wire

if TYPE_CHECKING:
    from protocol.request_types import DescribeClientQuotasRequest

API_KEY = ApiKey.DESCRIBE_CLIENT_QUOTAS
EXACT, DEFAULT_MATCH, SPECIFIED = 0, 1, 2


def _error(msg: str) -> Response:
    return Response({"error_code": ErrorCode.invalid_request, "error_message": msg, "entries": None})


def handle(ctx: RequestContext, req: DescribeClientQuotasRequest) -> Response:
    comps: dict[str, tuple[int, str | None]] = {}
    for c in req.components:
        if c.entity_type not in ENTITY_TYPES:
            return _error(f"Custom entity type '{c.entity_type}' not supported")
        if c.entity_type in comps:
            return _error(f"Entity type {c.entity_type} cannot appear more than once in the filter.")
        if c.match_type not in (EXACT, DEFAULT_MATCH, SPECIFIED):
            return _error(f"Unknown match type {c.match_type}")
        if c.match_type == EXACT and c.match is None:
            return _error("The match name must be set for an exact match")
        comps[c.entity_type] = (c.match_type, c.match)
    if IP in comps and (USER in comps or CLIENT_ID in comps):
        return _error("Invalid entity filter component combination, IP filter component should not be used "
                      "with user or clientId filter component.")
    store = ctx.broker.quota_store
    candidates: list[tuple[dict[str, str], list[dict[str, Any]], dict[str, float]]] = []
    for (user, client), values in store.describe():
        parts = {t: n for t, n in ((USER, user), (CLIENT_ID, client)) if n is not None}
        candidates.append((parts, to_wire((user, client)), values))
    for ip, values in store.ip_quotas.items():
        candidates.append(({IP: ip}, to_wire(None, ip), values))
    entries = []
    for parts, wire, values in candidates:
        if req.strict and set(parts) != set(comps):
            continue
        ok = True
        for etype, (mtype, match) in comps.items():
            name = parts.get(etype)
            if name is None:
                ok = False
            elif mtype == EXACT and name != match:
                ok = False
            elif mtype == DEFAULT_MATCH and name != DEFAULT:
                ok = False
        if ok:
            entries.append({"entity": wire, "values": [{"key": k, "value": v} for k, v in sorted(values.items())]})
    return Response({"error_code": ErrorCode.none, "error_message": None, "entries": entries})
