"""AddPartitionsToTxn (key 24): v0-5.

Behavior:
* v0-3 (clients): one transaction.  A partition the cluster does not have is
  UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, nothing
  added; otherwise the coordinator's ``handleAddPartitionsToTransaction`` and its
  one error for every partition (NOT_COORDINATOR on a broker that does not
  coordinate the id, CONCURRENT_TRANSACTIONS while an end is being written,
  INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED).
* With an authorizer: below v4 WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
  and on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions, the others then
  OPERATION_NOT_ATTEMPTED); v4+ CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED).
* v4+ (KIP-890 part 1, batched, sent by brokers): one result per transaction; ``verify_only`` answers, per
  partition, whether it is already in the transaction (TRANSACTION_ABORTABLE
  when not) and changes nothing.  A transactional id given twice is served
  twice (Kafka's ``partitionsByTransaction`` keeps its last entry's partitions).
* A success or the coordinator's error is answered over the request's topics
  as listed (``errorResponseForTransaction``: a partition listed twice twice, a
  topic with no partitions with none); refused or unknown partitions are
  answered per partition, once each.
* PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588).

Version notes:
* v1 clients back off on throttle.  v2 PRODUCER_FENCED.  v3 flexible.
* v4 batched transactions, verify_only, top-level error; from v4 the
  request's transaction version is 2 (KIP-890 part 2; Kafka 4.x
  ``transactionVersionForAddPartitionsToTxn``, by the request version, not
  the cluster's level).  TV2 clients send none: Produce v12+ adds the
  partition.  v5 no change on the broker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import AclOperation, ResourceType
from ..state.cluster_view import TopicPartition
from ..request import Body, Deferred, RequestContext, Response
from ..txn.coordinator import error_for_client_version
from ..txn.transaction_metadata import TV_0, TV_2
from .common import authorized, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import AddPartitionsToTxnRequest

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN

Errors = dict[TopicPartition, ErrorCode]


def _topic_results(errors: Errors) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), error in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": index, "partition_error_code": error})
    return [{"name": name, "results_by_partition": parts} for name, parts in by_topic.items()]


def _response(body: Body) -> Response:
    """v0-3 the partitions' errors; v4+ each transaction's and the top-level error."""
    topics = body.get("results_by_topic_v3_and_below")
    if topics is None:
        topics = [t for r in body["results_by_transaction"] for t in r["topic_results"]]
    return Response(body, partition_errors(topics, "results_by_partition", error="partition_error_code"))


def _partitions(topics: Any) -> list[TopicPartition]:
    return [(t.name, int(p)) for t in topics for p in t.partitions]


def _unknown(ctx: RequestContext, partitions: list[TopicPartition]) -> Errors | None:
    """Kafka answers a partition of a topic the client may not WRITE (below v4)
    TOPIC_AUTHORIZATION_FAILED, one the cluster lacks UNKNOWN_TOPIC_OR_PARTITION, the others
    OPERATION_NOT_ATTEMPTED, and adds none."""
    denied = {t for t, _ in partitions
              if ctx.version < 4 and not authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC, t)}
    missing = {tp for tp in partitions if tp[0] not in denied and ctx.metadata.partition(*tp) is None}
    if not missing and not denied:
        return None
    return {tp: ErrorCode.topic_authorization_failed if tp[0] in denied else
            ErrorCode.unknown_topic_or_partition if tp in missing else ErrorCode.operation_not_attempted
            for tp in partitions}


def _echo(topics: Any, error: ErrorCode) -> list[dict[str, Any]]:
    """``AddPartitionsToTxnRequest.errorResponseForTransaction``: the request's topics and partitions
    as listed (twice when listed twice, a topic with none as it is), each with ``error``."""
    return [{"name": t.name, "results_by_partition": [{"partition_index": int(p), "partition_error_code": error}
                                                      for p in t.partitions]} for t in topics]


def _one_transaction(ctx: RequestContext, tid: str, pid: int, epoch: int, partitions: list[TopicPartition],
                     verify_only: bool, done: Callable[[list[dict[str, Any]]], None], topics: Any) -> None:
    """Answer one transaction: ``done`` gets its topic results, the coordinator's one error echoed
    over the request's ``topics``, or per partition (its errors are a map) when some partition is
    refused or unknown, or for ``verify_only``."""
    v = ctx.version
    unknown = _unknown(ctx, partitions)
    if unknown is not None:
        done(_topic_results(unknown))
        return
    txn = ctx.broker.txn
    if verify_only:
        txn.handle_verify_partitions(tid, pid, epoch, partitions, lambda errors: done(_topic_results(dict(errors))),
                                     ctx.node_id)
        return
    # TransactionVersion.transactionVersionForAddPartitionsToTxn: v4+ comes from brokers (or TV2
    # clients), so TV2, whatever level the cluster finalized
    tv = TV_2 if v >= 4 else TV_0

    def added(error: ErrorCode) -> None:
        done(_echo(topics, error_for_client_version("AddPartitionsToTxn", v, error)))

    txn.handle_add_partitions(tid, pid, epoch, partitions, added, tv, ctx.node_id)


def handle(ctx: RequestContext, req: AddPartitionsToTxnRequest) -> Deferred:
    deferred = Deferred()
    if ctx.version < 4:
        partitions = _partitions(req.v3_and_below_topics)
        _one_transaction(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                         req.v3_and_below_producer_epoch, partitions, False,
                         lambda results: deferred.complete_with(
                             lambda: _response({"results_by_topic_v3_and_below": results})), req.v3_and_below_topics)
        return deferred
    results: list[dict[str, Any] | None] = [None] * len(req.transactions)
    # AddPartitionsToTxnRequest.partitionsByTransaction: a transactional id given twice adds its last
    # entry's partitions; errorResponseForTransaction echoes its first entry's topics
    last = {t.transactional_id: t for t in req.transactions}
    first: dict[str, Any] = {}
    for t in req.transactions:
        first.setdefault(t.transactional_id, t)

    def finish() -> None:
        if all(r is not None for r in results):
            deferred.complete_with(lambda: _response({"error_code": ErrorCode.none, "results_by_transaction": results}))

    for i, t in enumerate(req.transactions):
        def done(topic_results: list[dict[str, Any]], i: int = i, tid: str = t.transactional_id) -> None:
            results[i] = {"transactional_id": tid, "topic_results": topic_results}
            finish()

        asked = last[t.transactional_id]
        _one_transaction(ctx, t.transactional_id, t.producer_id, t.producer_epoch, _partitions(asked.topics),
                         t.verify_only, done, first[t.transactional_id].topics)
    if not results:
        finish()
    return deferred


def error_response(ctx: RequestContext, req: AddPartitionsToTxnRequest, error: ErrorCode) -> Response:
    """AddPartitionsToTxnRequest.getErrorResponse: v0-3 the error on every partition; v4+ the
    top-level error, no transaction results."""
    if ctx.version < 4:
        return _response({"results_by_topic_v3_and_below": _topic_results(
            dict.fromkeys(_partitions(req.v3_and_below_topics), error))})
    return _response({"error_code": error, "results_by_transaction": []})
