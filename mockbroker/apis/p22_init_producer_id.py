"""InitProducerId (key 22): v0-5.

Behavior:
* Without a transactional id (idempotent producer): a new producer id with
  epoch 0, every time, as Kafka's ``TransactionCoordinator.handleInitProducerId``
  does for a null transactional id (a v3+ epoch bump also gets a fresh id).
* With a transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a fatal
  error for every client, because transactions are not simulated; a
  transactional test fails at once instead of retrying forever.

Version notes:
* v1 clients back off on throttle.  v2 flexible.  v3 producer id/epoch for
  epoch bumps (KIP-360).  v4 PRODUCER_FENCED semantics.  v5 no broker change.
"""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext

API_KEY = ApiKey.INIT_PRODUCER_ID


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if req.transactional_id is not None:
        return {"error_code": ErrorCode.transactional_id_authorization_failed, "producer_id": -1,
                "producer_epoch": -1}
    return {"error_code": ErrorCode.none, "producer_id": ctx.broker.controller.allocate_producer_id(), "producer_epoch": 0}


def error_response(ctx: RequestContext, req: Any, error: ErrorCode) -> dict[str, Any]:
    return {"error_code": error, "producer_id": -1, "producer_epoch": -1}
