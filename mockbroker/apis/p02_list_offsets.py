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
* As ``ReplicaManager.fetchOffset``: a partition listed twice is answered once, INVALID_REQUEST; a
  negative timestamp that is no sentinel of the request's version (-3 from v7, -4 from v8, -5 from
  v9, -6 from v11) UNSUPPORTED_VERSION; a topic with no partitions is not answered.  An isolation
  level other than 0 or 1 is UNKNOWN_SERVER_ERROR for the whole request.  A replica id other than
  -1 reads up to the log end offset; the leader epoch answered is the one of the offset found
  (``LeaderEpochFileCache.epochForOffset``; the earliest entry's for -2/-4).
* Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
  FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (v4+; any current leader epoch but -1 is checked); a batch the lookup must
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
from ..security.authorizer import AclOperation, ResourceType
from .common import authorized, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import ListOffsetsRequest

API_KEY = ApiKey.LIST_OFFSETS

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID = -1, -2
# ReplicaManager.timestampMinSupportedVersion: the first version each sentinel timestamp may be used
# at; any other negative timestamp is UNSUPPORTED_VERSION (isListOffsetsTimestampUnsupported)
SENTINEL_SINCE = {EARLIEST: 1, LATEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
                  EARLIEST_PENDING_UPLOAD: 11}


def _lookup(p: Any, ts: int, last_fetchable: int) -> tuple[int, int, int] | None:
    """(timestamp, offset, leader epoch) as ``Partition.fetchOffsetForTimestamp`` and
    ``UnifiedLog.fetchOffsetByTimestamp`` find it (epoch -1: none), or None: no offset (a record
    found at or above the last fetchable offset, or none found)."""
    log = p.log
    if ts == LATEST:
        return -1, last_fetchable, p.leader_epoch
    if ts in (EARLIEST, EARLIEST_LOCAL):  # no remote tier: the local log start is the log start
        first = log.epoch_starts[0] if log.epoch_starts else None
        return -1, log.log_start_offset, first[0] if first is not None and first[1] <= log.log_start_offset else -1
    if ts in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):  # without remote storage: (-1, -1, epoch -1)
        return -1, -1, -1
    found = log.max_timestamp_offset(last_fetchable) if ts == MAX_TIMESTAMP else log.offset_for_timestamp(
        ts, last_fetchable)
    if found is None:
        return None
    return found[1], found[0], log.epoch_for_offset(found[0])


def _error(index: int, error: ErrorCode) -> dict[str, Any]:
    """KafkaApis' buildErrorResponse: the partition with the error, offset and timestamp -1."""
    return {"partition_index": index, "error_code": error, "timestamp": -1, "offset": -1, "leader_epoch": -1}


def _fetch_offset(ctx: RequestContext, req: ListOffsetsRequest, topic_name: str, rp: Any) -> dict[str, Any]:
    """``ReplicaManager.classicFetchOffset`` for one partition."""
    topic = ctx.metadata.topics.get(topic_name)
    if topic is None or not 0 <= rp.partition_index < len(topic.partitions):
        return _error(rp.partition_index, ErrorCode.unknown_topic_or_partition)
    p = topic.partitions[rp.partition_index]
    req_epoch = rp.current_leader_epoch
    # fetchOnlyFromLeader unless the debugging replica id asks; a follower's copy is the same log here
    if p.leader_id != ctx.node_id and (req.replica_id != DEBUGGING_REPLICA_ID or ctx.node_id not in p.replicas):
        return _error(rp.partition_index, ErrorCode.not_leader_or_follower)
    if req_epoch != -1 and req_epoch != p.leader_epoch:  # localLogWithEpochOrThrow (-1: ListOffsetsResponse.UNKNOWN_EPOCH)
        return _error(rp.partition_index, ErrorCode.fenced_leader_epoch if req_epoch < p.leader_epoch
                      else ErrorCode.unknown_leader_epoch)
    log = p.log
    if req.replica_id == CONSUMER_REPLICA_ID:  # a client reads up to what its isolation level may see
        last_fetchable = log.last_stable_offset if req.isolation_level == 1 else log.high_watermark
    else:
        last_fetchable = log.log_end_offset
    # Partition.fetchOffsetForTimestamp's maybeOffsetsError: a client asking a leader whose epoch
    # started above the high watermark (it is not caught up yet) about the latest offset, or about a
    # timestamp found at or above the last fetchable offset
    epoch_start = next((st for e, st in log.epoch_starts if e == p.leader_epoch), None)
    not_available = (req.replica_id == CONSUMER_REPLICA_ID and epoch_start is not None
                     and epoch_start > log.high_watermark)
    offsets_error = ErrorCode.offset_not_available if ctx.version >= 5 else ErrorCode.leader_not_available
    try:
        found = _lookup(p, rp.timestamp, last_fetchable)
    except CorruptRecordBatch as e:  # Errors.forException(e)
        return _error(rp.partition_index, e.error)
    if not_available and (rp.timestamp == LATEST or (found is None and rp.timestamp not in (
            EARLIEST, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD))):
        return _error(rp.partition_index, offsets_error)
    out = _error(rp.partition_index, ErrorCode.none)
    if found is not None:
        ts, offset, epoch = found
        out.update(timestamp=ts, offset=offset, leader_epoch=epoch if epoch >= 0 and ctx.version >= 4 else -1)
    return out


def handle(ctx: RequestContext, req: ListOffsetsRequest) -> Response:
    v = ctx.version
    # AuthHelper.partitionByAuthorized: DESCRIBE on each topic; the refused ones are answered after
    # the others, every partition TOPIC_AUTHORIZATION_FAILED
    allowed = [t for t in req.topics if authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name)]
    refused = [t for t in req.topics if t not in allowed]
    if allowed and req.isolation_level not in (0, 1):
        # ListOffsetsRequest.isolationLevel -> IsolationLevel.forId throws IllegalArgumentException:
        # UNKNOWN_SERVER_ERROR for the whole request
        return error_response(ctx, req, ErrorCode.unknown_server_error)
    # ListOffsetsRequest.duplicatePartitions: a partition listed more than once, in any topic entry
    seen: set[tuple[str, int]] = set()
    duplicates: set[tuple[str, int]] = set()
    for t in req.topics:
        for rp in t.partitions:
            key = (t.name, rp.partition_index)
            (duplicates if key in seen else seen).add(key)
    # ReplicaManager.fetchOffset: one status per partition (a map: a duplicate is answered once)
    status: dict[tuple[str, int], dict[str, Any]] = {}
    for t in allowed:
        for rp in t.partitions:
            key = (t.name, rp.partition_index)
            if key in duplicates:
                status[key] = _error(rp.partition_index, ErrorCode.invalid_request)
            elif rp.timestamp < 0 and v < SENTINEL_SINCE.get(rp.timestamp, 1 << 15):
                status[key] = _error(rp.partition_index, ErrorCode.unsupported_version)
            else:
                status[key] = _fetch_offset(ctx, req, t.name, rp)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for (name, _i), out in status.items():
        grouped.setdefault(name, []).append(out)
    topics = [{"name": name, "partitions": parts} for name, parts in grouped.items()]
    topics += [{"name": t.name, "partitions": [_error(rp.partition_index, ErrorCode.topic_authorization_failed)
                                               for rp in t.partitions]} for t in refused]
    return Response({"topics": topics}, partition_errors(topics, "partitions"))


def error_response(ctx: RequestContext, req: ListOffsetsRequest, error: ErrorCode) -> Response:
    """``ListOffsetsRequest.getErrorResponse``: every partition as listed, with the error."""
    topics = [{"name": t.name, "partitions": [_error(p.partition_index, error) for p in t.partitions]}
              for t in req.topics]
    return Response({"topics": topics}, partition_errors(topics, "partitions"))
