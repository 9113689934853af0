"""JoinGroup (key 11): v0-9.

Behavior (Kafka's GroupMetadataManager.classicGroupJoin, see ``mockbroker/group/classic_coordinator.py``):
* A member without an id gets MEMBER_ID_REQUIRED and a new id from v4 (KIP-394);
  before v4 it joins at once.  The answer waits in the rebalance purgatory until
  every member rejoined or the rebalance timeout passed; the first rebalance of
  an Empty group waits group.initial.rebalance.delay.ms (InitialDelayedJoin).
* The protocol is chosen by the members' votes; the leader gets every member's
  metadata.  A static member (group.instance.id, v5+) that rejoins while the group
  is Stable keeps its assignment without a rebalance; its old id is fenced.
* Errors: INVALID_GROUP_ID (empty id), INVALID_SESSION_TIMEOUT (outside
  group.min/max.session.timeout.ms), INCONSISTENT_GROUP_PROTOCOL,
  UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED,
  NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE.

Version notes:
* v1 rebalance timeout (v0 uses the session timeout).  v2 throttle.  v3 clients back off.
* v4 MEMBER_ID_REQUIRED.  v5 group.instance.id.  v6 flexible.  v7 protocol type in
  the response, nullable protocol name.  v8 reason.  v9 skip_assignment (KIP-814).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..group.classic_group import UNKNOWN_MEMBER_ID, JoinGroupResult
from ..request import Deferred, RequestContext, Response
from .common import client_host

if TYPE_CHECKING:
    from protocol.request_types import JoinGroupRequest

API_KEY = ApiKey.JOIN_GROUP


def _response(version: int, r: JoinGroupResult) -> Response:
    return Response({
        "error_code": r.error,
        "generation_id": r.generation_id,
        "protocol_type": r.protocol_type,
        # nullable from v7; an empty string before (JoinGroupResponse's constructor)
        "protocol_name": r.protocol_name if version >= 7 or r.protocol_name is not None else "",
        "leader": r.leader_id,
        "skip_assignment": r.skip_assignment,
        "member_id": r.member_id,
        "members": [{"member_id": mid, "group_instance_id": iid, "metadata": meta} for mid, iid, meta in r.members],
    })


def handle(ctx: RequestContext, req: JoinGroupRequest) -> Deferred:
    v = ctx.version
    deferred = Deferred()
    session = timedelta_ms(req.session_timeout)
    rebalance = timedelta_ms(req.rebalance_timeout) if v >= 1 else session
    ctx.broker.groups.join_group(
        ctx.node_id, req.group_id, req.member_id, req.group_instance_id,
        v >= 4, ctx.client_id, client_host(ctx), rebalance, session, req.protocol_type,
        [(p.name, bytes(p.metadata)) for p in req.protocols],
        lambda r: deferred.complete_with(lambda: _response(v, r)), req.reason,
    )
    return deferred


def error_response(ctx: RequestContext, req: JoinGroupRequest, error: ErrorCode) -> Response:
    """JoinGroupRequest.getErrorResponse: unknown generation, member and leader."""
    return _response(ctx.version, JoinGroupResult(UNKNOWN_MEMBER_ID, error))
