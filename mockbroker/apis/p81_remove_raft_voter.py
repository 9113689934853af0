"""RemoveRaftVoter (key 81): v0-0.

Behavior:
* KIP-853 as the raft leader answers it (brokers forward it; ``KafkaRaftClient.handleRemoveVoterRequest``
  then ``RemoveVoterHandler``), its checks in Kafka's order with Kafka's messages: a cluster id other
  than the cluster's INCONSISTENT_CLUSTER_ID; no raft leader NOT_LEADER_OR_FOLLOWER; no voter
  directory id INVALID_REQUEST; ``kraft.version`` 0 UNSUPPORTED_VERSION; an id and directory id that
  are not a voter of the set, or the last voter, VOTER_NOT_FOUND.
* The voter leaves the set at once (it stays an observer while it runs: DescribeQuorum lists it
  there); a removed leader resigns, the lowest live voter leads with a new epoch.  With fewer than a
  majority of the new voter set running the VotersRecord cannot commit: REQUEST_TIMED_OUT, nothing
  changes (Kafka keeps the uncommitted record; docs/differences.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..controller.quorum import replica_key, voter_change_error
from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import RemoveRaftVoterRequest

API_KEY = ApiKey.REMOVE_RAFT_VOTER


def handle(ctx: RequestContext, req: RemoveRaftVoterRequest) -> Response:
    quorum = ctx.broker.quorum
    directory = req.voter_directory_id
    refused = voter_change_error(quorum, ctx.broker.metadata.cluster_id, req.cluster_id, req.voter_id, directory, "Remove")
    if refused is not None:
        return _error(*refused)
    if quorum.kraft_version < 1:
        return _error(ErrorCode.unsupported_version,
                      f"Cluster doesn't support removing voter because the kraft.version feature is {quorum.kraft_version}")
    voter = quorum.voters.get(req.voter_id)
    if voter is None or voter.directory_id != directory or len(quorum.voters) == 1:  # VoterSet.removeVoter
        return _error(ErrorCode.voter_not_found, f"Cannot remove voter {replica_key(req.voter_id, directory)} from "
                                                 f"the set of voters {quorum.voter_keys()}")
    if not quorum.commits_with(set(quorum.voters) - {req.voter_id}):
        return _error(ErrorCode.request_timed_out, "The request timed out.")
    quorum.remove_voter(req.voter_id)
    return Response({"error_code": ErrorCode.none, "error_message": None})


def _error(error: ErrorCode, message: str | None) -> Response:
    return Response({"error_code": error, "error_message": message})


def error_response(ctx: RequestContext, req: RemoveRaftVoterRequest, error: ErrorCode) -> Response:
    """``RemoveRaftVoterRequest.getErrorResponse``: the error code."""
    return Response({"error_code": error, "error_message": None})
