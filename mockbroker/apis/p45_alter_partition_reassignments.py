"""AlterPartitionReassignments (key 45): v0-1.

Behavior:
* The controller's ``alterPartitionReassignments`` (``Controller.reassign``) through the
  replication simulator: the partition's replicas become the target followed by the replicas
  leaving (``adding``/``removing`` as ListPartitionReassignments shows them); each new replica
  starts an empty log and catches up after the replication lag (``mock.replication.lag.ms``,
  ``set_replication_lag``); once every added replica is in the ISR the reassignment completes: the
  replicas leaving go, a leader among them hands over to the first staying ISR member, the leader
  epoch moves on.  A reassignment that only removes or reorders completes at once.
* ``replicas`` null cancels the one in progress: back to the replicas before it, without those it
  added (NO_REASSIGNMENT_IN_PROGRESS when none is; INVALID_REPLICA_ASSIGNMENT when only added
  replicas are in the ISR, since reverting would need an unclean election).
* Per partition, with Kafka's messages: UNKNOWN_TOPIC_OR_PARTITION; INVALID_REPLICA_ASSIGNMENT for
  an empty list, a broker that is not registered, a broker named twice; INVALID_REPLICATION_FACTOR
  when the count changes and ``allow_replication_factor_change`` is false (v1).
* No topics: answered at once with an empty error message (Kafka's response data default: the
  controller runs no event).  A timeout of 0 or less otherwise: the controller's deadline has passed
  (``common.controller_deadline_passed``): REQUEST_TIMED_OUT at the top and for every partition,
  nothing changed.  A positive timeout is not waited on (the change is recorded when answered).  With
  an authorizer, ALTER on the cluster (``apis/authorization.py``), else CLUSTER_AUTHORIZATION_FAILED.

Version notes:
* v1: allow_replication_factor_change (KIP-860), echoed in the response.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from .common import controller_deadline_passed, first_error, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import AlterPartitionReassignmentsRequest

API_KEY = ApiKey.ALTER_PARTITION_REASSIGNMENTS


def handle(ctx: RequestContext, req: AlterPartitionReassignmentsRequest) -> Response:
    allow = req.allow_replication_factor_change if ctx.version >= 1 else True
    if not req.topics:  # QuorumController: nothing to do, no event; the response data's defaults
        return _respond([], allow, ErrorCode.none, "")
    if controller_deadline_passed(req.timeout):
        return error_response(ctx, req, ErrorCode.request_timed_out)
    controller = ctx.broker.controller
    responses = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            target = None if p.replicas is None else [int(r) for r in p.replicas]
            error, message = controller.reassign(t.name, p.partition_index, target, allow)
            parts.append({"partition_index": p.partition_index, "error_code": error, "error_message": message})
        responses.append({"name": t.name, "partitions": parts})
    return _respond(responses, allow, ErrorCode.none, None)


def _respond(responses: list[dict[str, Any]], allow: bool, error: ErrorCode, message: str | None) -> Response:
    return Response({"allow_replication_factor_change": allow, "error_code": error, "error_message": message,
                     "responses": responses},
                    partitions=partition_errors(responses, "partitions"),
                    error_code=int(error) if error is not ErrorCode.none else
                    first_error(p for t in responses for p in t["partitions"]))


def error_response(ctx: RequestContext, req: AlterPartitionReassignmentsRequest, error: ErrorCode) -> Response:
    """``AlterPartitionReassignmentsRequest.getErrorResponse``: ``error`` everywhere."""
    responses = [{"name": t.name, "partitions": [{"partition_index": p.partition_index, "error_code": error,
                                                  "error_message": None} for p in t.partitions]}
                 for t in req.topics]
    return _respond(responses, req.allow_replication_factor_change if ctx.version >= 1 else True, error, None)
