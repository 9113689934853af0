"""OffsetCommit (key 8): v2-10.

Behavior (Kafka's KafkaApis.handleOffsetCommitRequest + OffsetMetadataManager.commitOffset,
see ``mockbroker/group/offsets.py``):
* A member commits with its member id and generation: UNKNOWN_MEMBER_ID,
  ILLEGAL_GENERATION, FENCED_INSTANCE_ID when they do not match, and
  REBALANCE_IN_PROGRESS while the group waits for SyncGroup; a commit during
  Stable or PreparingRebalance also counts as a heartbeat.
* generation -1 with no member id (a consumer using assign()) commits to a
  group without members, creating it if needed; a non-empty group refuses it
  (UNKNOWN_MEMBER_ID).  An Empty group takes any negative generation, whatever
  member id it names; a group that does not exist and a generation of 0 or more
  is ILLEGAL_GENERATION, from v9 GROUP_ID_NOT_FOUND.
* Per partition: UNKNOWN_TOPIC_OR_PARTITION (v10: UNKNOWN_TOPIC_ID) for a
  partition that does not exist, OFFSET_METADATA_TOO_LARGE past
  offset.metadata.max.bytes (in Java chars); nothing of those is stored.
* As KafkaApis builds the answer (``OffsetCommitResponse.Builder``): the broker
  answers unknown topics and partitions itself (one entry per topic; a topic it
  refuses is listed even without partitions), and only the topics with an
  existing partition go to the coordinator, listed as sent (a topic of the
  cluster listed without partitions is left out).  With none to send the group
  is not looked at: no error, and no group is created.  A group's refusal
  answers only the partitions sent to it.
* Offsets survive the group going Empty and expire offsets.retention.minutes
  after that (KIP-211); v2-4's retention_time sets an explicit expiry.

Version notes:
* v2 retention time (until v4).  v3 throttle.  v4 clients back off.  v5 no retention.
* v6 committed leader epoch.  v7 group.instance.id.  v8 flexible.
* v9 member epoch naming (KIP-848).  v10 topic ids instead of names.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..group.group import OffsetAndMetadata
from ..request import RequestContext, Response
from ..security.authorizer import AclOperation, ResourceType
from .common import AnsweredTopics, authorized, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import OffsetCommitRequest

API_KEY = ApiKey.OFFSET_COMMIT


ZERO_UUID = uuid.UUID(int=0)


def handle(ctx: RequestContext, req: OffsetCommitRequest) -> Response:
    groups = ctx.broker.groups
    metadata = ctx.metadata
    now = ctx.broker.clock.time_ms()
    by_id = ctx.version >= 10
    retention_ms = timedelta_ms(req.retention_time)  # -1 (the default): none
    answered = AnsweredTopics(by_id)  # KafkaApis.handleOffsetCommitRequest: what the broker answers itself
    # what goes to the coordinator: the topics with an existing partition left, as listed
    sent: list[tuple[str, uuid.UUID, list[tuple[int, OffsetAndMetadata]]]] = []
    for t in req.topics:
        indexes = [int(p.partition_index) for p in t.partitions]
        request_id = t.topic_id if t.topic_id is not None else ZERO_UUID
        if by_id:
            known = metadata.topics_by_id.get(t.topic_id) if t.topic_id else None
            name = known.name if known is not None else ""
            if not name:
                answered.add("", request_id, indexes, ErrorCode.unknown_topic_id)
                continue
        else:
            name = str(t.name)
        if not authorized(ctx, AclOperation.READ, ResourceType.TOPIC, name):
            answered.add(name, request_id if by_id else ZERO_UUID, indexes, ErrorCode.topic_authorization_failed)
            continue
        topic = metadata.topics.get(name)
        if topic is None:
            answered.add(name, ZERO_UUID, indexes, ErrorCode.unknown_topic_or_partition)
            continue
        topic_id = request_id if by_id else topic.topic_id
        valid: list[tuple[int, OffsetAndMetadata]] = []
        for p in t.partitions:
            if 0 <= p.partition_index < len(topic.partitions):
                meta = p.committed_metadata if p.committed_metadata is not None else ""
                valid.append((int(p.partition_index), OffsetAndMetadata(
                    p.committed_offset, p.committed_leader_epoch, meta, now,
                    now + retention_ms if retention_ms >= 0 else None)))
            else:
                answered.add(name, topic_id, [int(p.partition_index)], ErrorCode.unknown_topic_or_partition)
        if valid:
            sent.append((name, topic_id, valid))
    if not sent:  # nothing for the coordinator: the group is not even looked at
        topics = list(answered.topics.values())
    else:
        errors = iter(groups.commit_offsets(
            ctx.node_id, req.group_id, req.member_id, req.group_instance_id, req.generation_id_or_member_epoch,
            [((name, index), om) for name, _id, parts in sent for index, om in parts], ctx.version))
        topics = answered.merge([{"name": name, "topic_id": topic_id, "partitions": [
            {"partition_index": index, "error_code": next(errors)} for index, _om in parts]}
            for name, topic_id, parts in sent])
    return Response({"topics": topics}, partition_errors(topics, "partitions"))


def error_response(ctx: RequestContext, req: OffsetCommitRequest, error: ErrorCode) -> Response:
    by_id = ctx.version >= 10
    topics = [{"name": None if by_id else t.name, "topic_id": t.topic_id if by_id else None, "partitions": [
        {"partition_index": p.partition_index, "error_code": error} for p in t.partitions]} for t in req.topics]
    return Response({"topics": topics}, partition_errors(topics, "partitions"))
