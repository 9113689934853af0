"""AddRaftVoter (key 80): v0-1.

Behavior:
* KIP-853 as the raft leader answers it (brokers forward it; ``KafkaRaftClient.handleAddVoterRequest``
  then ``AddVoterHandler``), its checks in Kafka's order with Kafka's messages: a cluster id other
  than the cluster's INCONSISTENT_CLUSTER_ID; no raft leader NOT_LEADER_OR_FOLLOWER; no voter
  directory id INVALID_REQUEST; no ``CONTROLLER`` listener among the endpoints INVALID_REQUEST;
  ``kraft.version`` 0 (the static quorum, until UpdateFeatures raises it) UNSUPPORTED_VERSION; an id
  already a voter DUPLICATE_VOTER; a node that is not running REQUEST_TIMED_OUT (the leader's
  ApiVersions to it fails); a running node whose directory id differs REQUEST_TIMED_OUT "lagging
  behind" (Kafka finds no caught-up replica of that key).
* A running observer (a voter RemoveRaftVoter removed) with its own directory id becomes a voter at
  once, its controller endpoint the one given: DescribeQuorum lists it.  With fewer than a majority
  of the new voter set running the VotersRecord cannot commit: REQUEST_TIMED_OUT, nothing changes
  (Kafka keeps the uncommitted record; docs/differences.md).

Version notes:
* v1: ``ack_when_committed`` (false answers after the append); the mock commits at once either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..controller.quorum import CONTROLLER_LISTENER, replica_key, voter_change_error
from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import AddRaftVoterRequest

API_KEY = ApiKey.ADD_RAFT_VOTER


def handle(ctx: RequestContext, req: AddRaftVoterRequest) -> Response:
    quorum = ctx.broker.quorum
    directory = req.voter_directory_id
    refused = voter_change_error(quorum, ctx.broker.metadata.cluster_id, req.cluster_id, req.voter_id, directory, "Add")
    if refused is not None:
        return _error(*refused)
    endpoints = {x.name: (x.host, x.port) for x in req.listeners}
    if CONTROLLER_LISTENER not in endpoints:
        shown = "Endpoints(endpoints={" + ", ".join(f"ListenerName({n})={h}:{p}" for n, (h, p) in endpoints.items()) + "})"
        return _error(ErrorCode.invalid_request,
                      f"Add voter request didn't include the endpoint ({shown}) for the default listener "
                      f"ListenerName({CONTROLLER_LISTENER})")
    key = replica_key(req.voter_id, directory)
    if quorum.kraft_version < 1:
        return _error(ErrorCode.unsupported_version,
                      f"Cluster doesn't support adding voter because the kraft.version feature is {quorum.kraft_version}")
    if req.voter_id in quorum.voters:
        return _error(ErrorCode.duplicate_voter,
                      f"The voter id for {key} is already part of the set of voters {quorum.voter_keys()}.")
    node = quorum.nodes.get(req.voter_id)
    if node is None or node.stopped_offset is not None:
        return _error(ErrorCode.request_timed_out,
                      "Aborted add voter operation for since API_VERSIONS returned an error NETWORK_EXCEPTION")
    if not quorum.is_caught_up(req.voter_id, directory):
        return _error(ErrorCode.request_timed_out, f"Aborted add voter operation for {key} since it is lagging behind")
    if not quorum.commits_with(set(quorum.voters) | {req.voter_id}):
        return _error(ErrorCode.request_timed_out, None)
    quorum.add_voter(req.voter_id, endpoints[CONTROLLER_LISTENER])
    return Response({"error_code": ErrorCode.none, "error_message": None})


def _error(error: ErrorCode, message: str | None) -> Response:
    """``RaftUtil.addVoterResponse``: the error's own message when none is given (not for a
    leader-validation error, which carries none)."""
    if message is None and error is ErrorCode.request_timed_out:
        message = "The request timed out."
    return Response({"error_code": error, "error_message": message})


def error_response(ctx: RequestContext, req: AddRaftVoterRequest, error: ErrorCode) -> Response:
    """``AddRaftVoterRequest.getErrorResponse``: the error code and its message."""
    return Response({"error_code": error, "error_message": None})
