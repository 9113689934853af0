"""EndTxn (key 26): v0-5.

Behavior:
* The coordinator's ``handleEndTransaction`` on the broker that coordinates the
  id (else NOT_COORDINATOR): PrepareCommit/PrepareAbort is written, the client
  is answered, then a COMMIT or ABORT marker goes to every partition of the
  transaction through its leader's ``ReplicaManager.append_txn_marker``; the
  transaction completes when every marker is written.  An end while the
  previous one's markers are still being written is CONCURRENT_TRANSACTIONS;
  an end of an Empty transaction INVALID_TXN_STATE; a stale epoch
  PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2).

Version notes:
* v1 clients back off on throttle.  v2 PRODUCER_FENCED.  v3 flexible.
* v5 (KIP-890 part 2): the client's transaction version is 2 (Kafka 4.x
  ``transactionVersionForEndTxn``: by the request version, whatever level
  the cluster finalized; clients send v5 only when it finalized 2): the end
  bumps the epoch and the answer carries the bumped producer id and epoch the
  client goes on with (a new producer id when the epoch ran out); the markers
  are written with it.  Below v5 the TV0/1 rules (no bump, -1/-1 answered).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import Deferred, RequestContext, Response
from ..txn.coordinator import error_for_client_version
from ..txn.transaction_metadata import TV_0, TV_2

if TYPE_CHECKING:
    from protocol.request_types import EndTxnRequest

API_KEY = ApiKey.END_TXN


def handle(ctx: RequestContext, req: EndTxnRequest) -> Deferred:
    v = ctx.version
    txn = ctx.broker.txn
    # TransactionVersion.transactionVersionForEndTxn: the request version alone says whether the
    # client bumps the epoch per transaction (clients send v5 only when the cluster finalized TV2)
    tv = TV_2 if v >= 5 else TV_0
    deferred = Deferred()

    def answer(error: ErrorCode, producer_id: int, producer_epoch: int) -> None:
        body = {"error_code": error_for_client_version("EndTxn", v, error), "producer_id": producer_id,
                "producer_epoch": producer_epoch}
        deferred.complete_with(lambda: Response(body))

    txn.handle_end_transaction(req.transactional_id, req.producer_id, req.producer_epoch, req.committed, answer,
                               tv, ctx.node_id)
    return deferred


def error_response(ctx: RequestContext, req: EndTxnRequest, error: ErrorCode) -> Response:
    return Response({"error_code": error, "producer_id": -1, "producer_epoch": -1})
