"""AlterClientQuotas (key 49): v0-1.

Behavior (Kafka's ClientQuotaControlManager.alterClientQuotas):
* An entry's entity is a map of entity type to name (a type named twice keeps its last name, as
  AlterClientQuotasRequest.entries builds a HashMap), and the answer has one entry per distinct
  entity, as Kafka's (AlterClientQuotasResponse.fromQuotaEntities over a map).  An entry naming
  a quota key twice, or an entity an earlier entry named, is INVALID_REQUEST ("Ignoring duplicate
  entity ..."), the later answer replacing the earlier one's; what an earlier entry for that
  entity changed stays changed, as Kafka's records do.
* Per entity, validated as ``validateEntity`` / ``configKeysForEntityType``: an empty entity, an
  unknown entity type, an empty name, ip combined with user/client-id, an ip that is not an IP
  address (Kafka resolves host names; mockbroker takes only ``localhost``): INVALID_REQUEST.
* Per key set (``validateQuotaKeyValue``): an unknown key ("Invalid configuration key X"), a value
  that is not finite, <= 0, too large for its type, or fractional for an integral key:
  INVALID_REQUEST, nothing of that entity changed.  A removal is never checked: it removes the key
  when it is set.
* Keys: producer_byte_rate, consumer_byte_rate (LONG), request_percentage,
  controller_mutation_rate, and request_rate (KIP-124's requests/s draft,
  a mockbroker extension) for user/client-id entities; connection_creation_rate (INT)
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
from .client_quota_entities import entity_map, entity_text, from_map
from .common import first_error

if TYPE_CHECKING:
    from protocol.request_types import AlterClientQuotasRequest

API_KEY = ApiKey.ALTER_CLIENT_QUOTAS


def _check(ip: str | None, ops: dict[str, float | None]) -> str | None:
    """The first refused value's message (ClientQuotaControlManager.alterClientQuotaEntity), or None."""
    for key, value in ops.items():
        if value is not None:
            msg = validate_quota(key, value, ip=ip is not None)
            if msg:
                return msg
    return None


def handle(ctx: RequestContext, req: AlterClientQuotasRequest) -> Response:
    store = ctx.broker.quota_store
    # ClientQuotaEntity -> its answer, one per distinct entity (Kafka's outputResults map)
    answers: dict[tuple[tuple[str, str | None], ...], dict[str, Any]] = {}
    for e in req.entries:
        entity = entity_map(e.entity)
        key = tuple(sorted(entity.items(), key=lambda item: item[0]))
        res: dict[str, Any] = {"error_code": ErrorCode.none, "error_message": None,
                               "entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()]}
        ops: dict[str, float | None] = {}
        twice = False
        for op in e.ops:
            twice = twice or op.key in ops
            ops.setdefault(op.key, None if op.remove else op.value)
        if twice or key in answers:
            res.update(error_code=ErrorCode.invalid_request, error_message=f"Ignoring duplicate entity {entity_text(entity)}")
            answers[key] = res
            continue
        answers[key] = res
        user_client, ip, msg = from_map(entity)
        if msg is None:
            msg = _check(ip, ops)
        if msg is not None:
            res.update(error_code=ErrorCode.invalid_request, error_message=msg)
            continue
        if req.validate_only:
            continue
        for name, value in ops.items():
            if ip is not None:
                store.set_ip(ip, name, value)
            else:
                assert user_client is not None  # from_map gives an ip or a (user, client-id) entity
                store.set(user_client, name, value)
    out = list(answers.values())
    return Response({"entries": out}, error_code=first_error(out))


def error_response(ctx: RequestContext, req: AlterClientQuotasRequest, error: ErrorCode) -> Response:
    entries = [{"error_code": error, "error_message": None, "entity": [
        {"entity_type": c.entity_type, "entity_name": c.entity_name} for c in e.entity]} for e in req.entries]
    return Response({"entries": entries}, error_code=first_error(entries))
