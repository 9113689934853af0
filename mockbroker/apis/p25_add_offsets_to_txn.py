"""AddOffsetsToTxn (key 25): v0-4.

Behavior (Kafka's KafkaApis.handleAddOffsetsToTxnRequest):
* The group's ``__consumer_offsets`` partition (``abs(hashCode) %
  offsets.topic.num.partitions``, the group coordinator's ``partitionFor``)
  joins the producer's transaction through the transaction coordinator's
  ``handleAddPartitionsToTransaction``, so the transaction's COMMIT or ABORT
  marker reaches the group coordinator and completes the offsets a
  TxnOffsetCommit then sends.  The errors are AddPartitionsToTxn's:
  NOT_COORDINATOR on a broker that does not coordinate the id,
  CONCURRENT_TRANSACTIONS while an end is being written,
  INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before
  v2), INVALID_REQUEST for an empty transactional id.

Version notes:
* v1 clients back off on throttle.  v2 PRODUCER_FENCED.  v3 flexible.
* v4 TRANSACTION_ABORTABLE may be answered (KIP-890; the coordinator never
  answers it to AddOffsetsToTxn).  A transaction version 2 client does not
  send this request: TxnOffsetCommit v5 adds the partition itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import Deferred, RequestContext, Response
from ..txn.coordinator import error_for_client_version
from ..txn.transaction_metadata import TV_0

if TYPE_CHECKING:
    from protocol.request_types import AddOffsetsToTxnRequest

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN


def handle(ctx: RequestContext, req: AddOffsetsToTxnRequest) -> Deferred:
    deferred = Deferred()
    v = ctx.version

    def added(error: ErrorCode) -> None:
        code = error_for_client_version("AddOffsetsToTxn", v, error)
        deferred.complete_with(lambda: Response({"error_code": code}))

    ctx.broker.txn.handle_add_offsets(req.transactional_id, req.producer_id, req.producer_epoch, req.group_id,
                                      added, TV_0, ctx.node_id)
    return deferred


def error_response(ctx: RequestContext, req: AddOffsetsToTxnRequest, error: ErrorCode) -> Response:
    return Response({"error_code": error})
