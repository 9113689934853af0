"""ListTransactions (key 66): v0-2.

Behavior:
* The transactional ids this broker coordinates (those whose
  ``__transaction_state`` partition it leads), each with its producer id and
  state name: the transaction coordinator's ``handleListTransactions``
  (Kafka's ``TransactionStateManager.listTransactionStates``).  An admin
  client asks every broker and merges the answers.
* Filters (all must pass; an empty one passes everything): states, by the
  names DescribeTransactions shows ("Ongoing", "CompleteCommit", ...; names
  that are no state come back in ``unknown_state_filters`` and match
  nothing); producer ids (KIP-664); from v1 a duration >= 0 keeps the ids
  whose transaction started more than that many ms ago (KIP-994); from v2 a
  transactional id pattern, a regular expression the whole id must match
  (KIP-1152; compiled with RE2 as Kafka compiles it with RE2/J: linear
  time, so a hostile pattern cannot stall the broker).  A pattern that does not compile:
  INVALID_REGULAR_EXPRESSION.  Dead ids (being expired) are never listed.
* COORDINATOR_LOAD_IN_PROGRESS while a load of one of the broker's
  transaction log partitions is injected.

Version notes:
* v0 (flexible): state and producer id filters.  v1 duration filter.
  v2 transactional id pattern.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..group.consumer_group import re2_options
from ..security.authorizer import AclOperation, ResourceType
from ..request import RequestContext, Response
from .common import authorized

if TYPE_CHECKING:
    from protocol.request_types import ListTransactionsRequest

API_KEY = ApiKey.LIST_TRANSACTIONS


def _pattern(req: ListTransactionsRequest) -> Any:
    """The v2 pattern compiled with RE2 (linear time: a hostile pattern cannot stall the broker's
    loop, where Python's ``re`` backtracks exponentially); None: no filter."""
    text = req.transactional_id_pattern
    if not text:  # null or empty: no filter
        return None
    import re2  # on the first pattern, not at start-up

    try:
        return re2.compile(text, re2_options())
    except re2.error:
        return ErrorCode.invalid_regular_expression


def handle(ctx: RequestContext, req: ListTransactionsRequest) -> Response:
    duration = req.duration_filter
    error, listed, unknown = ctx.broker.txn.handle_list_transactions(
        frozenset(req.producer_id_filters), list(dict.fromkeys(req.state_filters)), duration, ctx.node_id)
    if error is ErrorCode.none:
        pattern = _pattern(req)
        if isinstance(pattern, ErrorCode):
            error, listed = pattern, []
        elif pattern is not None:
            listed = [x for x in listed if pattern.fullmatch(x[0])]
        # KafkaApis: the transactional ids the client may DESCRIBE
        listed = [x for x in listed if authorized(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, x[0])]
    return Response({"error_code": error, "unknown_state_filters": unknown,
                     "transaction_states": [{"transactional_id": tid, "producer_id": pid, "transaction_state": state}
                                            for tid, pid, state in listed]})


def error_response(ctx: RequestContext, req: ListTransactionsRequest, error: ErrorCode) -> Response:
    return Response({"error_code": error, "unknown_state_filters": [], "transaction_states": []})
