"""ListOffsets (key 2): v1-11.

Behavior:
* -2 earliest: the log start offset.  -1 latest: the high watermark, or the
  last stable offset for read_committed.  -3 max timestamp (KIP-734): the
  record with the largest timestamp.  -4 earliest local: the log start offset
  (there is no remote tier).  -5 latest tiered and -6 earliest pending upload:
  -1, as Kafka answers for a topic without remote storage.
* A timestamp >= 0: the first record whose timestamp is at least that and
  whose offset is at least the log start offset, in the first segment whose
  largest timestamp reaches it (``UnifiedLog.searchOffsetInLocalLog``,
  ``FileRecords.searchForTimestamp``): the records of the first batch whose
  maxTimestamp reaches it are read, a compressed batch decompressed (the only
  place the broker decompresses; produce and fetch never do).  -3 likewise
  reads the first batch with the largest maxTimestamp for its first record of
  that timestamp (``RecordBatch.offsetOfMaxTimestamp``).  With LogAppendTime
  every record of a batch has the batch's timestamp, so the answer is the
  batch's first record.  A record found at or above the high watermark, or no
  such record: offset -1, timestamp -1 (``ReplicaManager.fetchOffset``).
* Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
  FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (v4+); a batch the lookup must
  read that cannot be: UNKNOWN_SERVER_ERROR when it does not decompress (the
  KafkaException Kafka's stream raises), INVALID_RECORD when a record in it is
  malformed (InvalidRecordException) -- Kafka rejects such batches on produce,
  this broker only checks their CRC.

Version notes:
* v1 single offset with timestamp.  v2 isolation level, throttle.  v3 clients back off.
* v4 leader epochs.  v6 flexible.  v7 max timestamp.  v8 earliest local.
* v9 latest tiered.  v10 timeout field (ignored: answers are immediate).  v11 earliest pending upload.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import CorruptRecordBatch, ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..authorizer import AclOperation, ResourceType
from .common import authorized, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import ListOffsetsRequest

API_KEY = ApiKey.LIST_OFFSETS

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6


def _lookup(p: Any, ts: int, isolation: int) -> tuple[int, int]:
    log = p.log
    if ts == LATEST:
        return -1, (log.last_stable_offset if isolation == 1 else log.high_watermark)
    if ts in (EARLIEST, EARLIEST_LOCAL):
        return -1, log.log_start_offset
    if ts == MAX_TIMESTAMP:
        found = log.max_timestamp_offset()
        return (found[1], found[0]) if found else (-1, -1)
    if ts < 0:  # LATEST_TIERED, EARLIEST_PENDING_UPLOAD or anything else negative
        return -1, -1
    found = log.offset_for_timestamp(ts)
    return (found[1], found[0]) if found else (-1, -1)


def handle(ctx: RequestContext, req: ListOffsetsRequest) -> Response:
    cluster = ctx.metadata
    isolation = req.isolation_level
    topics = []
    for t in req.topics:
        parts = []
        topic = cluster.topics.get(t.name)
        for rp in t.partitions:
            out = {"partition_index": rp.partition_index, "error_code": ErrorCode.none,
                   "timestamp": -1, "offset": -1, "leader_epoch": -1}
            if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name):
                out["error_code"] = ErrorCode.topic_authorization_failed
            elif topic is None or not 0 <= rp.partition_index < len(topic.partitions):
                out["error_code"] = ErrorCode.unknown_topic_or_partition
            else:
                p = topic.partitions[rp.partition_index]
                req_epoch = rp.current_leader_epoch
                if p.leader_id != ctx.node_id:
                    out["error_code"] = ErrorCode.not_leader_or_follower
                elif req_epoch >= 0 and req_epoch != p.leader_epoch:
                    out["error_code"] = (
                        ErrorCode.fenced_leader_epoch if req_epoch < p.leader_epoch
                        else ErrorCode.unknown_leader_epoch
                    )
                else:
                    try:
                        ts, off = _lookup(p, rp.timestamp, isolation)
                        out.update(timestamp=ts, offset=off, leader_epoch=p.leader_epoch if off >= 0 else -1)
                    except CorruptRecordBatch as e:  # ReplicaManager.fetchOffset: Errors.forException(e)
                        out["error_code"] = e.error
            parts.append(out)
        topics.append({"name": t.name, "partitions": parts})
    return Response({"topics": topics}, partition_errors(topics, "partitions"))


def error_response(ctx: RequestContext, req: ListOffsetsRequest, error: ErrorCode) -> Response:
    topics = [{"name": t.name, "partitions": [
        {"partition_index": p.partition_index, "error_code": error, "timestamp": -1, "offset": -1,
         "leader_epoch": -1} for p in t.partitions]} for t in req.topics]
    return Response({"topics": topics}, partition_errors(topics, "partitions"))
