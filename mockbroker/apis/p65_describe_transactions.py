"""DescribeTransactions (key 65): v0-0.

Behavior:
* Per transactional id, the transaction coordinator's
  ``handleDescribeTransactions`` (Kafka's ``TransactionCoordinator``): the
  state as Kafka names it ("Empty", "Ongoing", "PrepareCommit",
  "CompleteAbort", ...), the transaction timeout, the start time of the
  current transaction (-1 when none was started), the producer id and epoch
  and the partitions in the transaction, grouped by topic.
* Errors per id: NOT_COORDINATOR on a broker that does not lead the id's
  ``__transaction_state`` partition, COORDINATOR_NOT_AVAILABLE when no replica
  of it is alive, COORDINATOR_LOAD_IN_PROGRESS while a load is injected,
  INVALID_REQUEST for an empty id and TRANSACTIONAL_ID_NOT_FOUND for an id the
  coordinator does not have (or one being expired: Dead); an id answered with an
  error has every other field at the schema's default, 0.
* No authorizer: TRANSACTIONAL_ID_AUTHORIZATION_FAILED is never answered and
  no topic is hidden.

Version notes:
* v0 only (flexible).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..security.authorizer import AclOperation, ResourceType
from .common import authorized, first_error, instant

if TYPE_CHECKING:
    from protocol.request_types import DescribeTransactionsRequest

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS

def _state(tid: str, error: ErrorCode) -> dict[str, Any]:
    """An id answered with an error: the schema's defaults beside it (Kafka builds
    ``new TransactionState().setErrorCode(..)``: every number 0, no state)."""
    return {"error_code": error, "transactional_id": tid, "transaction_state": "", "transaction_timeout": 0,
            "transaction_start_time": instant(0), "producer_id": 0, "producer_epoch": 0, "topics": []}


def handle(ctx: RequestContext, req: DescribeTransactionsRequest) -> Response:
    txn = ctx.broker.txn
    states = []
    for tid in req.transactional_ids:
        if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):  # KafkaApis
            states.append(_state(tid, ErrorCode.transactional_id_authorization_failed))
            continue
        error, md = txn.handle_describe_transactions(tid, ctx.node_id)
        out = _state(tid, error)
        if md is not None and error is ErrorCode.none:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(md.topic_partitions):
                by_topic.setdefault(topic, []).append(partition)
            out.update(transaction_state=md.state.state_name, transaction_timeout=md.txn_timeout_ms,
                       transaction_start_time=instant(md.txn_start_timestamp), producer_id=md.producer_id,
                       producer_epoch=md.producer_epoch,
                       topics=[{"topic": t, "partitions": ps} for t, ps in by_topic.items()])
        states.append(out)
    return Response({"transaction_states": states}, error_code=first_error(states))


def error_response(ctx: RequestContext, req: DescribeTransactionsRequest, error: ErrorCode) -> Response:
    states = [_state(tid, error) for tid in req.transactional_ids]
    return Response({"transaction_states": states}, error_code=first_error(states))

