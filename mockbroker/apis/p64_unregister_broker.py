"""UnregisterBroker (key 64): v0-0.

Behavior:
* The controller's ``ReplicationControlManager.unregisterBroker`` (brokers forward it): a broker id
  not registered gets BROKER_ID_NOT_REGISTERED ("Broker ID N is not currently registered").  A
  stopped broker's registration goes: it no longer counts for replica placement (CreateTopics and
  CreatePartitions see one broker fewer; a manual assignment naming it is refused) until it starts
  and registers again.
* A running broker is answered NONE and stays registered (docs/differences.md).
* No raft leader (a majority of the voters stopped): NOT_CONTROLLER, as a forwarded request finds
  no active controller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import UnregisterBrokerRequest

API_KEY = ApiKey.UNREGISTER_BROKER


def handle(ctx: RequestContext, req: UnregisterBrokerRequest) -> Response:
    if ctx.broker.quorum.leader_id < 0:
        return _error(ErrorCode.not_controller, None)
    if not ctx.broker.metadata.unregister_broker(req.broker_id):
        return _error(ErrorCode.broker_id_not_registered, f"Broker ID {req.broker_id} is not currently registered")
    ctx.broker.quorum.append()  # the UnregisterBrokerRecord
    return Response({"error_code": ErrorCode.none, "error_message": None})


def _error(error: ErrorCode, message: str | None) -> Response:
    return Response({"error_code": error, "error_message": message})


def error_response(ctx: RequestContext, req: UnregisterBrokerRequest, error: ErrorCode) -> Response:
    """``UnregisterBrokerRequest.getErrorResponse``."""
    return _error(error, None)
