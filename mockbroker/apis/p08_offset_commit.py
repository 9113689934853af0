"""OffsetCommit (key 8): v2-10.

Behavior (Kafka's KafkaApis.handleOffsetCommitRequest + OffsetMetadataManager.commitOffset,
see ``mockbroker/group/offsets.py``):
* A member commits with its member id and generation: UNKNOWN_MEMBER_ID,
  ILLEGAL_GENERATION, FENCED_INSTANCE_ID when they do not match, and
  REBALANCE_IN_PROGRESS while the group waits for SyncGroup; a commit during
  Stable or PreparingRebalance also counts as a heartbeat.
* generation -1 with no member id (a consumer using assign()) commits to a
  group without members, creating it if needed; a non-empty group refuses it
  (UNKNOWN_MEMBER_ID).
* Per partition: UNKNOWN_TOPIC_OR_PARTITION (v10: UNKNOWN_TOPIC_ID) for a
  partition that does not exist, OFFSET_METADATA_TOO_LARGE past
  offset.metadata.max.bytes; nothing of those is stored.
* Offsets survive the group going Empty and expire offsets.retention.minutes
  after that (KIP-211); v2-4's retention_time sets an explicit expiry.

Version notes:
* v2 retention time (until v4).  v3 throttle.  v4 clients back off.  v5 no retention.
* v6 committed leader epoch.  v7 group.instance.id.  v8 flexible.
* v9 member epoch naming (KIP-848).  v10 topic ids instead of names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..group.group import OffsetAndMetadata
from ..request import RequestContext, Response
from ..authorizer import AclOperation, ResourceType
from .common import authorized, partition_errors, resolve_topic

if TYPE_CHECKING:
    from protocol.request_types import OffsetCommitRequest

API_KEY = ApiKey.OFFSET_COMMIT


def handle(ctx: RequestContext, req: OffsetCommitRequest) -> Response:
    groups = ctx.broker.groups
    now = ctx.broker.clock.time_ms()
    by_id = ctx.version >= 10
    retention_ms = timedelta_ms(req.retention_time)  # -1 (the default): none
    offsets: dict[tuple[str, int], Any] = {}
    layout: list[tuple[Any, Any, list[tuple[int, tuple[str, int]]]]] = []  # (name, id, [(index, key)])
    for t in req.topics:
        name, topic_id = (None, t.topic_id) if by_id else (t.name, None)
        topic, err = resolve_topic(ctx.metadata, name, topic_id, by_id)
        tname = topic.name if topic is not None else (name or f"<unknown {topic_id}>")
        if (topic is not None or name) and not authorized(ctx, AclOperation.READ, ResourceType.TOPIC, tname):
            topic, err = None, ErrorCode.topic_authorization_failed  # KafkaApis: READ on each topic
        parts: list[tuple[int, tuple[str, int]]] = []
        for p in t.partitions:
            key = (tname, p.partition_index)
            meta = p.committed_metadata if p.committed_metadata is not None else ""
            if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                offsets[key] = err if topic is None else ErrorCode.unknown_topic_or_partition
            else:  # OFFSET_METADATA_TOO_LARGE is the offset manager's check
                offsets[key] = OffsetAndMetadata(
                    p.committed_offset, p.committed_leader_epoch, meta, now,
                    now + retention_ms if retention_ms >= 0 else None)
            parts.append((p.partition_index, key))
        layout.append((name, topic_id, parts))
    errors = groups.commit_offsets(ctx.node_id, req.group_id, req.member_id, req.group_instance_id,
                                   req.generation_id_or_member_epoch, offsets, ctx.version)
    topics = [{"name": name, "topic_id": topic_id,
               "partitions": [{"partition_index": idx, "error_code": errors[key]} for idx, key in parts]}
              for name, topic_id, parts in layout]
    return Response({"topics": topics}, partition_errors(topics, "partitions"))


def error_response(ctx: RequestContext, req: OffsetCommitRequest, error: ErrorCode) -> Response:
    by_id = ctx.version >= 10
    topics = [{"name": None if by_id else t.name, "topic_id": t.topic_id if by_id else None, "partitions": [
        {"partition_index": p.partition_index, "error_code": error} for p in t.partitions]} for t in req.topics]
    return Response({"topics": topics}, partition_errors(topics, "partitions"))
