"""UnregisterController (key 94): v0-0.

Behavior:
* Brokers forward it to the active controller (``QuorumController.unregisterController``), whose
  checks come in Kafka's order: the active controller itself gets INVALID_REQUEST ("Controller
  cannot unregister itself while it is active."); a metadata.version below 4.4-IV2 (33)
  UNSUPPORTED_VERSION; an id not registered CONTROLLER_ID_NOT_REGISTERED ("Controller ID N is not
  currently registered.").  Every simulated node is a controller (combined mode): a stopped one's
  registration goes until it starts again; a running one registers again at once, as Kafka's
  ``ControllerRegistrationManager`` does.  The raft voters do not change (RemoveRaftVoter does that).
* No raft leader (a majority of the voters stopped): NOT_CONTROLLER.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import UnregisterControllerRequest

API_KEY = ApiKey.UNREGISTER_CONTROLLER
# a Kafka 4.4 code kio 0.6.5 lacks (protocol.errors.KAFKA_44_ERRORS adds it to the enum at run time)
CONTROLLER_ID_NOT_REGISTERED = ErrorCode(136)
CONTROLLER_UNREGISTRATION_VERSION = 33  # MetadataVersion.IBP_4_4_IV2: isControllerUnregistrationSupported


def handle(ctx: RequestContext, req: UnregisterControllerRequest) -> Response:
    quorum = ctx.broker.quorum
    node = req.controller_id
    leader = quorum.leader_id
    if leader < 0:
        return _error(ErrorCode.not_controller, None)
    if node == leader:
        return _error(ErrorCode.invalid_request, "Controller cannot unregister itself while it is active.")
    if ctx.broker.features.level("metadata.version") < CONTROLLER_UNREGISTRATION_VERSION:
        return _error(ErrorCode.unsupported_version,
                      "The current MetadataVersion is too old to support controller unregistration.")
    if node not in quorum.controllers:
        return _error(CONTROLLER_ID_NOT_REGISTERED, f"Controller ID {node} is not currently registered.")
    quorum.unregister_controller(node)
    return Response({"error_code": ErrorCode.none, "error_message": None})


def _error(error: ErrorCode, message: str | None) -> Response:
    return Response({"error_code": error, "error_message": message})


def error_response(ctx: RequestContext, req: UnregisterControllerRequest, error: ErrorCode) -> Response:
    """``UnregisterControllerRequest.getErrorResponse``."""
    return _error(error, None)
