"""DescribeQuorum (key 55): v0-2.

Behavior:
* The simulated controller quorum (``quorum.py``): every broker is a voter of
  ``__cluster_metadata`` (Kafka's combined mode), the lowest live one the raft leader.  Whatever
  broker is asked answers as the active controller does (Kafka's brokers forward the request to
  it): leader id and epoch, high watermark, each voter's log end offset and fetch times, the
  observers (none: every broker is a voter), and the voters' endpoints.
* A stopped voter keeps the log end offset and times it had when it stopped; the leader moves to
  the lowest live voter with a new epoch.  No live voter: NOT_LEADER_OR_FOLLOWER.
* Any other topic or partition than ``__cluster_metadata``-0, or more than one: each partition
  asked gets UNKNOWN_TOPIC_OR_PARTITION, as ``KafkaRaftClient.handleDescribeQuorumRequest``.

Version notes:
* v1: last fetch and last caught-up timestamps (KIP-836).
* v2: error messages (the top-level one, and a partition's without an error, empty: the response data's
  default, which Kafka leaves), each replica's directory id (the zero Uuid while ``kraft.version`` is 0, a
  static quorum), and the voters' endpoints on the listener ``CONTROLLER`` (KIP-853).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..controller.quorum import CONTROLLER_LISTENER, METADATA_TOPIC, ReplicaState
from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import DescribeQuorumRequest

API_KEY = ApiKey.DESCRIBE_QUORUM
# Errors.message() of the errors this API gives
MESSAGES = {
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
    ErrorCode.unknown_topic_or_partition: "This server does not host this topic-partition.",
    ErrorCode.not_leader_or_follower: (
        "For requests intended only for the leader, this error indicates that the broker is not the current "
        "leader. For requests intended for any replica, this error indicates that the broker is not a replica "
        "of the topic partition."),
}


def handle(ctx: RequestContext, req: DescribeQuorumRequest) -> Response:
    topics = req.topics
    if not (len(topics) == 1 and topics[0].topic_name == METADATA_TOPIC and len(topics[0].partitions) == 1
            and topics[0].partitions[0].partition_index == 0):
        return _partition_errors(req, ErrorCode.unknown_topic_or_partition)
    quorum = ctx.broker.quorum
    leader = quorum.leader_id
    if leader < 0:
        return _single_error(ErrorCode.not_leader_or_follower)
    partition = {
        "partition_index": 0, "error_code": ErrorCode.none, "error_message": "",
        "leader_id": leader, "leader_epoch": quorum.leader_epoch, "high_watermark": quorum.high_watermark(),
        "current_voters": [_replica(s) for s in quorum.voter_states()],
        "observers": [_replica(s) for s in quorum.observer_states()],
    }
    nodes = [{"node_id": v.node_id, "listeners": [{"name": CONTROLLER_LISTENER, "host": v.endpoint[0],
                                                   "port": v.endpoint[1]}]}
             for _, v in sorted(quorum.voters.items())]
    return Response({"error_code": ErrorCode.none, "error_message": "",
                     "topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}], "nodes": nodes})


def _replica(s: ReplicaState) -> dict[str, Any]:
    return {"replica_id": s.node_id, "replica_directory_id": s.directory_id, "log_end_offset": s.log_end_offset,
            "last_fetch_timestamp": s.last_fetch_ms, "last_caught_up_timestamp": s.last_caught_up_ms}


def _partition_errors(req: DescribeQuorumRequest, error: ErrorCode) -> Response:
    """``DescribeQuorumRequest.getPartitionLevelErrorResponse``: every partition asked gets ``error``."""
    topics = [{"topic_name": t.topic_name,
               "partitions": [_failed(p.partition_index, error) for p in t.partitions]}
              for t in req.topics]
    return Response({"error_code": ErrorCode.none, "error_message": "", "topics": topics, "nodes": []},
                    error_code=int(error) if topics else None)


def _single_error(error: ErrorCode) -> Response:
    """``DescribeQuorumResponse.singletonErrorResponse``: ``__cluster_metadata``-0 with ``error``."""
    return Response({"error_code": ErrorCode.none, "error_message": "", "nodes": [],
                     "topics": [{"topic_name": METADATA_TOPIC, "partitions": [_failed(0, error)]}]},
                    error_code=int(error))


def _failed(index: int, error: ErrorCode) -> dict[str, Any]:
    """A partition answering ``error`` (the other fields at their schema defaults, as Kafka leaves them)."""
    return {"partition_index": index, "error_code": error, "error_message": MESSAGES[error], "leader_id": 0,
            "leader_epoch": 0, "high_watermark": 0, "current_voters": [], "observers": []}


def error_response(ctx: RequestContext, req: DescribeQuorumRequest, error: ErrorCode) -> Response:
    """``DescribeQuorumRequest.getErrorResponse``: the top-level error with its own message."""
    return Response({"error_code": error, "error_message": MESSAGES.get(error), "topics": [], "nodes": []})
