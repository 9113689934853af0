"""OffsetForLeaderEpoch (key 23): v2-4.

Behavior:
* For each partition, the end offset of the asked leader epoch from the
  partition's epoch history (Kafka's ``LeaderEpochFileCache.endOffsetFor``):
  the largest epoch not above the asked one, and the start offset of the next
  epoch, or the log end offset for the current epoch.  An unknown or future
  epoch answers epoch -1, offset -1.
* current_leader_epoch is checked as for Fetch: FENCED_LEADER_EPOCH /
  UNKNOWN_LEADER_EPOCH, except that only -1 means "none" (any other negative
  epoch is fenced, as ``ReplicaManager.lastOffsetForLeaderEpoch`` reads it);
  not the leader: NOT_LEADER_OR_FOLLOWER; unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
  An epoch below the earliest one the log knows answers that epoch itself with
  the earliest epoch's start offset (``LeaderEpochFileCache.endOffsetFor``).
* Clients use it after a leader change to detect truncation (KIP-320).
* With an authorizer: CLUSTER_ACTION on the cluster, else DESCRIBE on each topic; a topic the client
  may not describe comes after the others with TOPIC_AUTHORIZATION_FAILED for each partition.

Version notes:
* v2 current leader epoch, throttle.  v3 replica id.  v4 flexible.
* The Java client never backs off on this response's throttle (no shouldClientThrottle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ..request import RequestContext, Response
from .common import authorized, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import OffsetForLeaderEpochRequest

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH


def handle(ctx: RequestContext, req: OffsetForLeaderEpochRequest) -> Response:
    cluster = ctx.metadata
    topics = []
    every = authorized(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    denied = [t for t in req.topics
              if not every and not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.topic)]
    for t in req.topics:
        if t in denied:
            continue
        topic = cluster.topics.get(t.topic)
        parts = []
        for rp in t.partitions:
            out = {"partition": rp.partition, "error_code": ErrorCode.none, "leader_epoch": -1, "end_offset": -1}
            if topic is None or not 0 <= rp.partition < len(topic.partitions):
                out["error_code"] = ErrorCode.unknown_topic_or_partition
            else:
                p = topic.partitions[rp.partition]
                cur = rp.current_leader_epoch
                if p.leader_id != ctx.node_id:
                    out["error_code"] = ErrorCode.not_leader_or_follower
                elif cur != -1 and cur != p.leader_epoch:  # only -1 means none (NO_PARTITION_LEADER_EPOCH)
                    out["error_code"] = (
                        ErrorCode.fenced_leader_epoch if cur < p.leader_epoch else ErrorCode.unknown_leader_epoch
                    )
                else:
                    out["leader_epoch"], out["end_offset"] = p.log.end_offset_for_epoch(rp.leader_epoch)
            parts.append(out)
        topics.append({"topic": t.topic, "partitions": parts})
    refused = ErrorCode.topic_authorization_failed
    topics += [{"topic": t.topic, "partitions": [{"partition": p.partition, "error_code": refused, "leader_epoch": -1,
                                                  "end_offset": -1} for p in t.partitions]} for t in denied]
    return Response({"topics": topics}, partition_errors(topics, "partitions", "partition", topic="topic"))


def error_response(ctx: RequestContext, req: OffsetForLeaderEpochRequest, error: ErrorCode) -> Response:
    topics = [{"topic": t.topic, "partitions": [
        {"partition": p.partition, "error_code": error, "leader_epoch": -1, "end_offset": -1}
        for p in t.partitions]} for t in req.topics]
    return Response({"topics": topics}, partition_errors(topics, "partitions", "partition", topic="topic"))
