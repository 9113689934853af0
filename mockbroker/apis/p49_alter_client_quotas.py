"""AlterClientQuotas (key 49): v0-1.

Behavior:
* Per entry, validated as Kafka's ``ClientQuotaControlManager``: unknown
  entity type, a repeated type, an empty name, ip combined with
  user/client-id, an unknown key ("Invalid configuration key X"), a value
  <= 0, a fractional value for a LONG key: INVALID_REQUEST for that entry.
* Keys: producer_byte_rate, consumer_byte_rate (LONG), request_percentage,
  controller_mutation_rate, and request_rate (KIP-124's requests/s draft,
  a mockbroker extension) for user/client-id entities; connection_creation_rate
  for ip entities (stored and described, not enforced).
* validate_only checks without changing anything; otherwise the change applies
  from the next request on every broker.

Version notes:
* v0 throttle (clients never back off on it).  v1 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..quota.entities import validate_quota
from ..request import RequestContext, Response
from .client_quota_entities import from_wire
from .common import first_error

if TYPE_CHECKING:
    from protocol.request_types import AlterClientQuotasRequest

API_KEY = ApiKey.ALTER_CLIENT_QUOTAS
IP_KEYS = ("connection_creation_rate",)


def _check(entity: Any, ip: str | None, ops: Any) -> str | None:
    for op in ops:
        if ip is not None:
            if op.key not in IP_KEYS:
                return f"Invalid configuration key {op.key}"
            if not op.remove and (op.value <= 0 or op.value != int(op.value)):
                return f"Quota {op.key} must be a positive integer"
        elif not op.remove:
            msg = validate_quota(op.key, op.value)
            if msg:
                return msg
        elif validate_quota(op.key, 1.0):
            return f"Invalid configuration key {op.key}"
    return None


def handle(ctx: RequestContext, req: AlterClientQuotasRequest) -> Response:
    store = ctx.broker.quota_store
    out = []
    for e in req.entries:
        entity, ip, msg = from_wire(e.entity)
        if msg is None:
            msg = _check(entity, ip, e.ops)
        res: dict[str, Any] = {"error_code": ErrorCode.none, "error_message": None,
               "entity": [{"entity_type": c.entity_type, "entity_name": c.entity_name} for c in e.entity]}
        out.append(res)
        if msg is not None:
            res.update(error_code=ErrorCode.invalid_request, error_message=msg)
            continue
        if req.validate_only:
            continue
        for op in e.ops:
            value = None if op.remove else op.value
            if ip is not None:
                store.set_ip(ip, op.key, value)
            else:
                assert entity is not None  # from_wire gives an ip or a (user, client-id) entity
                store.set(entity, op.key, value)
    return Response({"entries": out}, error_code=first_error(out))


def error_response(ctx: RequestContext, req: AlterClientQuotasRequest, error: ErrorCode) -> Response:
    entries = [{"error_code": error, "error_message": None, "entity": [
        {"entity_type": c.entity_type, "entity_name": c.entity_name} for c in e.entity]} for e in req.entries]
    return Response({"entries": entries}, error_code=first_error(entries))
