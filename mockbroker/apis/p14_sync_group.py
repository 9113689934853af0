"""SyncGroup (key 14): v0-5.

Behavior (Kafka's GroupMetadataManager.classicGroupSync):
* In CompletingRebalance a follower waits for the leader's SyncGroup; the
  leader's assignment is stored and every waiting member answered (members the
  leader left out get an empty assignment); the group becomes Stable.
* In Stable the member's current assignment is returned; in PreparingRebalance
  REBALANCE_IN_PROGRESS.  Members that never sync within the rebalance timeout
  are removed and the group rebalances (DelayedSync).
* Errors: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID,
  INCONSISTENT_GROUP_PROTOCOL (also when v5's protocol type or name is missing).

Version notes:
* v1 throttle.  v2 clients back off.  v3 group.instance.id.  v4 flexible.
* v5 protocol type and name in request and response.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..group.classic_group import SyncGroupResult
from ..request import Deferred, Outcome, RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import SyncGroupRequest

API_KEY = ApiKey.SYNC_GROUP


def _response(r: SyncGroupResult) -> Response:
    return Response({"error_code": r.error, "protocol_type": r.protocol_type, "protocol_name": r.protocol_name,
                     "assignment": r.assignment})


def handle(ctx: RequestContext, req: SyncGroupRequest) -> Outcome:
    protocol_type = req.protocol_type
    protocol_name = req.protocol_name
    if ctx.version >= 5 and (protocol_type is None or protocol_name is None):
        # SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent
        return _response(SyncGroupResult(ErrorCode.inconsistent_group_protocol))
    deferred = Deferred()
    ctx.broker.groups.sync_group(
        ctx.node_id, req.group_id, req.generation_id, req.member_id, protocol_type, protocol_name,
        req.group_instance_id, {a.member_id: bytes(a.assignment) for a in req.assignments},
        lambda r: deferred.complete_with(lambda: _response(r)),
    )
    return deferred
