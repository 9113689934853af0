"""DeleteRecords (key 21): v0-2.

Behavior (Kafka's ``KafkaApis.handleDeleteRecordsRequest`` and ``ReplicaManager.deleteRecords``;
the log side is ``ReplicaManager.delete_records``):
* Each partition's log start offset moves up to the offset given (-1: the high watermark; never
  down): fetches below it get OFFSET_OUT_OF_RANGE, ListOffsets earliest answers it, consumers
  reset by their auto.offset.reset, and the segments wholly below it go.  The answer is the new low
  watermark.
* Errors per partition, low watermark -1: a partition the cluster does not have
  UNKNOWN_TOPIC_OR_PARTITION, an internal topic INVALID_TOPIC_EXCEPTION, a partition led by
  another broker NOT_LEADER_OR_FOLLOWER, a compacted topic without delete in its cleanup.policy
  POLICY_VIOLATION, a negative offset or one above the high watermark OFFSET_OUT_OF_RANGE.
* Answered at once: the partitions' replicas share the leader's log, so there is no
  ``DelayedDeleteRecords`` waiting for the followers to reach the new log start offset (the
  timeout is not used).

Version notes:
* v1 clients back off on the throttle.  v2 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..authorizer import AclOperation, ResourceType
from .common import authorized, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import DeleteRecordsRequest

API_KEY = ApiKey.DELETE_RECORDS


def handle(ctx: RequestContext, req: DeleteRecordsRequest) -> Response:
    rm = ctx.broker.replica_manager
    topics: list[dict[str, Any]] = []
    for t in req.topics:
        parts: list[dict[str, Any]] = []
        allowed = authorized(ctx, AclOperation.DELETE, ResourceType.TOPIC, t.name)  # KafkaApis: DELETE on it
        for p in t.partitions:
            if not allowed:
                error, low = ErrorCode.topic_authorization_failed, -1
            elif ctx.metadata.partition(t.name, p.partition_index) is None:  # metadataCache.contains
                error, low = ErrorCode.unknown_topic_or_partition, -1
            else:
                r = rm.delete_records(t.name, p.partition_index, p.offset)
                error, low = r.error, r.low_watermark
            parts.append({"partition_index": p.partition_index, "low_watermark": low, "error_code": error})
        topics.append({"name": t.name, "partitions": parts})
    return Response({"topics": topics}, partition_errors(topics, "partitions"))


def error_response(ctx: RequestContext, req: DeleteRecordsRequest, error: ErrorCode) -> Response:
    topics: list[dict[str, Any]] = [{"name": t.name, "partitions": [
        {"partition_index": p.partition_index, "low_watermark": -1, "error_code": error} for p in t.partitions]}
        for t in req.topics]
    return Response({"topics": topics}, partition_errors(topics, "partitions"))
