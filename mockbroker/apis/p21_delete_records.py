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
* Partitions are keyed in maps as ``KafkaApis.handleDeleteRecordsRequest`` keys them: one listed
  twice is deleted once, to its last entry's offset, and answered once; a topic with no partitions
  is not answered.
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
from ..security.authorizer import AclOperation, ResourceType
from .common import authorized, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import DeleteRecordsRequest

API_KEY = ApiKey.DELETE_RECORDS


def handle(ctx: RequestContext, req: DeleteRecordsRequest) -> Response:
    rm = ctx.broker.replica_manager
    # KafkaApis.handleDeleteRecordsRequest keys each partition in maps: a partition listed twice is
    # deleted to its last offset and answered once; a topic with no partitions is not answered.
    # The answers merge as Kafka's do: the deleted ones, then the refused, then the unknown ones.
    refused: dict[tuple[str, int], ErrorCode] = {}
    unknown: dict[tuple[str, int], ErrorCode] = {}
    offsets: dict[tuple[str, int], int] = {}
    for t in req.topics:
        allowed = authorized(ctx, AclOperation.DELETE, ResourceType.TOPIC, t.name)  # KafkaApis: DELETE on it
        for p in t.partitions:
            key = (t.name, p.partition_index)
            if not allowed:
                refused[key] = ErrorCode.topic_authorization_failed
            elif ctx.metadata.partition(t.name, p.partition_index) is None:  # metadataCache.contains
                unknown[key] = ErrorCode.unknown_topic_or_partition
            else:
                offsets[key] = p.offset
    answers: dict[tuple[str, int], tuple[ErrorCode, int]] = {}
    for (name, index), offset in offsets.items():
        r = rm.delete_records(name, index, offset)
        answers[(name, index)] = (r.error, r.low_watermark)
    for errors in (refused, unknown):
        answers.update((key, (error, -1)) for key, error in errors.items())
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (name, index), (error, low) in answers.items():
        by_topic.setdefault(name, []).append({"partition_index": index, "low_watermark": low, "error_code": error})
    topics = [{"name": name, "partitions": parts} for name, parts in by_topic.items()]
    return Response({"topics": topics}, partition_errors(topics, "partitions"))


def error_response(ctx: RequestContext, req: DeleteRecordsRequest, error: ErrorCode) -> Response:
    topics: list[dict[str, Any]] = [{"name": t.name, "partitions": [
        {"partition_index": p.partition_index, "low_watermark": -1, "error_code": error} for p in t.partitions]}
        for t in req.topics]
    return Response({"topics": topics}, partition_errors(topics, "partitions"))
