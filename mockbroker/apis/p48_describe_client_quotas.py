"""DescribeClientQuotas (key 48): v0-1.

Behavior (Kafka's ClientQuotasImage.describe, answered as KafkaApis answers its exceptions):
* The filter's components are checked in order: an empty entity type, a type named twice, or one
  that is not user, client-id or ip (UNSUPPORTED_VERSION "Unsupported entity type X"), then the
  match type: 0 (exact name) needs a match string, 1 (the default entity) and 2 (any entity that
  has this type) refuse one, any other is unknown; ip with user/client-id is refused too.  Each
  refusal but the unsupported type is INVALID_REQUEST, with Kafka's message and null entries.
* ``strict`` excludes entities with types not named; no components list every entity (none when
  strict).
* Entries show the configured quotas (the config file's and those set by AlterClientQuotas), the
  default entity as a null name; the error message of an answer is "" (the message's default:
  Kafka sets none).

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


def _error(msg: str, error: ErrorCode = ErrorCode.invalid_request) -> Response:
    """DescribeClientQuotasRequest.getErrorResponse for the exception ClientQuotasImage.describe throws."""
    return Response({"error_code": error, "error_message": msg, "entries": None})


def handle(ctx: RequestContext, req: DescribeClientQuotasRequest) -> Response:
    comps: dict[str, tuple[int, str | None]] = {}
    for c in req.components:
        etype = c.entity_type
        if not etype:
            return _error("Invalid empty entity type.")
        if etype in comps:
            return _error(f"Entity type {etype} cannot appear more than once in the filter.")
        if etype not in ENTITY_TYPES:
            return _error(f"Unsupported entity type {etype}", ErrorCode.unsupported_version)
        if c.match_type not in (EXACT, DEFAULT_MATCH, SPECIFIED):
            return _error(f"Unknown match type {c.match_type}")
        if c.match_type == EXACT and c.match is None:
            return _error("Request specified MATCH_TYPE_EXACT, but set match string to null.")
        if c.match_type != EXACT and c.match is not None:
            kind = "DEFAULT" if c.match_type == DEFAULT_MATCH else "SPECIFIED"
            return _error(f"Request specified MATCH_TYPE_{kind}, but also specified a match string.")
        comps[etype] = (c.match_type, c.match)
    if IP in comps and (USER in comps or CLIENT_ID in comps):
        return _error("Invalid entity filter component combination. IP filter component should not be used "
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
    return Response({"error_code": ErrorCode.none, "error_message": "", "entries": entries})


def error_response(ctx: RequestContext, req: DescribeClientQuotasRequest, error: ErrorCode) -> Response:
    """DescribeClientQuotasRequest.getErrorResponse: the error, no message (ApiError.fromThrowable of an
    exception with the error's own message), null entries."""
    return Response({"error_code": error, "error_message": None, "entries": None})
