"""Heartbeat (key 12): v0-4.

Behavior (Kafka's GroupMetadataManager.classicGroupHeartbeat): a heartbeat completes the
member's DelayedHeartbeat and schedules the next one session.timeout.ms ahead.
Answers NONE in Stable and CompletingRebalance, REBALANCE_IN_PROGRESS while the
group prepares a rebalance (the member must rejoin), ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE.  Heartbeats are charged to the request quotas like
any request and carry the throttle time.

Version notes:
* v1 throttle.  v2 clients back off.  v3 group.instance.id.  v4 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.registry import ApiKey

from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import HeartbeatRequest

API_KEY = ApiKey.HEARTBEAT


def handle(ctx: RequestContext, req: HeartbeatRequest) -> Response:
    err = ctx.broker.groups.heartbeat(
        ctx.node_id, req.group_id, req.member_id, req.group_instance_id, req.generation_id)
    return Response({"error_code": err})
