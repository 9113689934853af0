"""InitProducerId (key 22): v0-5.

Behavior:
* Without a transactional id (idempotent producer): a new producer id with
  epoch 0, every time, as Kafka's ``TransactionCoordinator.handleInitProducerId``
  does for a null transactional id (a v3+ epoch bump also gets a fresh id).
* With a transactional id: the transaction coordinator's
  ``handleInitProducerId`` on the broker that coordinates the id (any other
  broker answers NOT_COORDINATOR): a new producer id, or the id's producer
  with its epoch bumped (an ongoing transaction is aborted first and the
  client retries on CONCURRENT_TRANSACTIONS).  A producer id and epoch given
  (v3+, KIP-360) must come together, else INVALID_REQUEST, with or without a
  transactional id.  PRODUCER_FENCED is
  INVALID_PRODUCER_EPOCH before v4.

Version notes:
* v1 clients back off on throttle.  v2 flexible.  v3 producer id/epoch for
  epoch bumps (KIP-360).  v4 PRODUCER_FENCED semantics.  v5 no broker change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import Deferred, Outcome, RequestContext, Response
from ..txn.coordinator import InitProducerIdResult, error_for_client_version

if TYPE_CHECKING:
    from protocol.request_types import InitProducerIdRequest

API_KEY = ApiKey.INIT_PRODUCER_ID


def handle(ctx: RequestContext, req: InitProducerIdRequest) -> Outcome:
    v = ctx.version
    pid, epoch = (req.producer_id, req.producer_epoch) if v >= 3 else (-1, -1)
    if (pid == -1) != (epoch == -1):  # KafkaApis checks it before the transactional id matters
        return error_response(ctx, req, ErrorCode.invalid_request)
    if req.transactional_id is None:
        return Response({"error_code": ErrorCode.none, "producer_id": ctx.broker.controller.allocate_producer_id(),
                         "producer_epoch": 0})
    deferred = Deferred()

    def answer(r: InitProducerIdResult) -> None:
        error = error_for_client_version("InitProducerId", v, r.error)
        deferred.complete_with(lambda: Response({"error_code": error, "producer_id": r.producer_id,
                                                 "producer_epoch": r.producer_epoch}))

    ctx.broker.txn.handle_init_producer_id(req.transactional_id, timedelta_ms(req.transaction_timeout),
                                           None if pid == -1 else (pid, epoch), answer, ctx.node_id)
    return deferred


def error_response(ctx: RequestContext, req: InitProducerIdRequest, error: ErrorCode) -> Response:
    return Response({"error_code": error, "producer_id": -1, "producer_epoch": -1})
