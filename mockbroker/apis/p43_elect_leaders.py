"""ElectLeaders (key 43): v0-2.

Behavior:
* The controller's ``ReplicationControlManager.electLeaders`` (``Controller.elect_leader``) through
  the replication simulator: a preferred election makes the first replica the leader when it is a
  live ISR member (a new leader epoch; followers fetch from it); an unclean one gives a partition
  without a leader a live ISR member, else the first live replica, alone in the ISR, its log the
  partition's from then on (what the others had beyond it is lost, as in Kafka).
* Per partition: ELECTION_NOT_NEEDED when the preferred replica already leads (preferred) or the
  partition has a leader (unclean); PREFERRED_LEADER_NOT_AVAILABLE when the preferred replica is down
  or out of the ISR; ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live;
  UNKNOWN_TOPIC_OR_PARTITION, with Kafka's messages.
* ``topic_partitions`` null: every partition of every topic, each topic listed, only the partitions
  whose result is not ELECTION_NOT_NEEDED.
* An election type other than 0 (preferred) and 1 (unclean): INVALID_REQUEST for every partition.
* ``topic_partitions`` empty: answered at once with nothing (Kafka's controller runs no event, so
  neither the election type nor the timeout is looked at).  A timeout of 0 or less otherwise: the
  controller's deadline has passed (``common.controller_deadline_passed``): REQUEST_TIMED_OUT at the
  top (v1+) and for every partition named, nothing elected.
* A positive timeout is not waited on (the election is complete when answered).  With an authorizer,
  ALTER on the cluster (``apis/authorization.py``), else CLUSTER_AUTHORIZATION_FAILED.  Kafka's
  automatic preferred elections (``auto.leader.rebalance.enable``) do not run.

Version notes:
* v0: preferred only, no top-level error.  v1: election type, top-level error (KIP-460).
* v2 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from .common import controller_deadline_passed, first_error, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import ElectLeadersRequest

API_KEY = ApiKey.ELECT_LEADERS
PREFERRED, UNCLEAN = 0, 1  # ElectionType


def handle(ctx: RequestContext, req: ElectLeadersRequest) -> Response:
    election = req.election_type if ctx.version >= 1 else PREFERRED
    if req.topic_partitions is not None and not req.topic_partitions:
        return _respond([], ErrorCode.none)  # QuorumController.electLeaders: nothing to do, no event
    if controller_deadline_passed(req.timeout):
        return error_response(ctx, req, ErrorCode.request_timed_out)
    if election not in (PREFERRED, UNCLEAN):  # ReplicationControlManager.electionType, in the event
        return error_response(ctx, req, ErrorCode.invalid_request, f"Unknown election type {election}")
    controller = ctx.broker.controller
    results: list[dict[str, Any]] = []
    if req.topic_partitions is None:
        for name, topic in list(ctx.metadata.topics.items()):
            outcomes = [(p.index, *controller.elect_leader(name, p.index, election == UNCLEAN))
                        for p in topic.partitions]
            results.append(_topic(name, [o for o in outcomes if o[1] is not ErrorCode.election_not_needed]))
    else:
        for t in req.topic_partitions:
            results.append(_topic(t.topic, [(i, *controller.elect_leader(t.topic, i, election == UNCLEAN))
                                            for i in t.partitions]))
    return _respond(results, ErrorCode.none)


def _topic(name: str, outcomes: list[tuple[int, ErrorCode, str | None]]) -> dict[str, Any]:
    return {"topic": name, "partition_result": [{"partition_id": i, "error_code": e, "error_message": m}
                                                for i, e, m in outcomes]}


def _respond(results: list[dict[str, Any]], error: ErrorCode) -> Response:
    return Response({"error_code": error, "replica_election_results": results},
                    partitions=partition_errors(results, "partition_result", "partition_id", topic="topic"),
                    error_code=int(error) if error is not ErrorCode.none else
                    first_error(p for t in results for p in t["partition_result"]))


def error_response(ctx: RequestContext, req: ElectLeadersRequest, error: ErrorCode,
                   message: str | None = None) -> Response:
    """``ElectLeadersRequest.getErrorResponse``: ``error`` for every partition named and at the top (v1+)."""
    results = [_topic(t.topic, [(i, error, message) for i in t.partitions]) for t in req.topic_partitions or ()]
    return _respond(results, error)
