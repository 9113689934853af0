"""The share-group offsets admin APIs: Kafka 4.4's ``GroupCoordinatorService.describeShareGroupOffsets``
/ ``describeShareGroupAllOffsets``, ``alterShareGroupOffsets`` and ``deleteShareGroupOffsets`` with the
``GroupMetadataManager`` parts they run.

A share group's "offsets" are its share-partitions' start offsets as the share coordinator keeps them
(``SharePersister``): Describe reads them (``readSummary``) with the lag (the partition's latest offset
minus the start offset minus the records already delivered past it); Alter, on an Empty group (created
if absent), initializes the named partitions' state at the given start offsets; Delete, on an Empty
group, deletes the state of the named topics' initialized partitions.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from protocol.errors import ErrorCode, default_message

from .coordinator import HeartbeatError, ShareGroupCoordinator
from .group import ShareGroup

# Errors.message() of the errors these APIs answer with a message
MESSAGES = {
    ErrorCode.unknown_topic_or_partition: "This server does not host this topic-partition.",
    ErrorCode.non_empty_group: "The group is not empty.",
    ErrorCode.coordinator_not_available: "The coordinator is not available.",
    ErrorCode.not_coordinator: "This is not the correct coordinator.",
    ErrorCode.coordinator_load_in_progress: "The coordinator is loading and hence can't process requests.",
    ErrorCode.invalid_group_id: "The configured groupId is invalid.",
    ErrorCode.topic_authorization_failed: "Topic authorization failed.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.unsupported_version: "The version of API is not supported.",  # share groups off (4.1)
}


@dataclass(slots=True)
class PartitionOffset:
    partition: int
    start_offset: int = -1
    leader_epoch: int = 0
    lag: int = -1
    error: ErrorCode = ErrorCode.none
    message: str | None = None


@dataclass(slots=True)
class TopicOffsets:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionOffset] = field(default_factory=list)
    error: ErrorCode = ErrorCode.none  # DeleteShareGroupOffsets: per topic
    message: str | None = None


@dataclass(slots=True)
class OffsetsResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    topics: list[TopicOffsets] = field(default_factory=list)


ZERO = uuid.UUID(int=0)


def _failed(error: ErrorCode, message: str | None = None) -> OffsetsResult:
    return OffsetsResult(error, message or MESSAGES.get(error) or default_message(error))


def describe(c: ShareGroupCoordinator, node_id: int, group_id: str,
             topics: list[tuple[str, list[int]]] | None) -> OffsetsResult:
    """describeShareGroupOffsets (the named partitions, read from the share coordinator whatever the
    group) or, with ``topics`` None, describeShareGroupAllOffsets (the group's initialized partitions,
    asked of its coordinator)."""
    metadata = c.metadata
    wanted: list[tuple[str, uuid.UUID, list[int]]] = []
    unknown: list[TopicOffsets] = []
    if topics is None:
        err = c.registry.validate_group_status(group_id, node_id)
        if err is not None:
            return _failed(err)
        group = c.group(group_id)
        names = {t.topic_id: n for n, t in metadata.topics.items()}
        initialized = group.initialized if group is not None else {}
        for tid, ps in initialized.items():
            if tid in names and ps:
                wanted.append((names[tid], tid, sorted(ps)))
    else:
        # readSummary's futures map (topic id -> partition -> result): a topic named twice is one entry,
        # a partition named twice one result
        merged: dict[uuid.UUID, tuple[str, list[int]]] = {}
        for name, partitions in topics:
            topic = metadata.topics.get(name)
            if topic is None:
                unknown.append(TopicOffsets(name, ZERO, [PartitionOffset(p) for p in partitions]))
            else:
                merged.setdefault(topic.topic_id, (name, []))[1].extend(partitions)
        if merged and not _summary_valid(group_id, [ps for _, ps in merged.values()]):
            return _failed(ErrorCode.unknown_server_error)
        wanted = [(name, tid, sorted(set(ps))) for tid, (name, ps) in merged.items()]
    out = OffsetsResult()
    for name, tid, partitions in wanted:
        t = TopicOffsets(name, tid)
        topic = metadata.topics[name]
        for p in partitions:
            s = c.persister.summary((group_id, tid, p))
            if s.error is not ErrorCode.none or s.start_offset == -1:
                t.partitions.append(PartitionOffset(p, s.start_offset if s.error is ErrorCode.none else -1,
                                                    s.leader_epoch if s.error is ErrorCode.none else 0))
                continue
            if not 0 <= p < len(topic.partitions):
                t.partitions.append(PartitionOffset(p, error=ErrorCode.unknown_topic_or_partition,
                                                    message=MESSAGES[ErrorCode.unknown_topic_or_partition]))
                continue
            latest = topic.partitions[p].log.high_watermark
            t.partitions.append(PartitionOffset(p, s.start_offset, s.leader_epoch,
                                                latest - s.start_offset - s.delivery_complete_count))
        out.topics.append(t)
    out.topics += unknown
    return out


def _summary_valid(group_id: str, partitions: list[list[int]]) -> bool:
    """DefaultStatePersister.validate(ReadShareGroupStateSummaryParameters): a group id, and every topic
    with partitions, none negative; otherwise readSummary fails with IllegalArgumentException, which
    KafkaApis answers as the group's UNKNOWN_SERVER_ERROR (no topics)."""
    return bool(group_id) and all(ps and min(ps) >= 0 for ps in partitions)


def _empty_share_group(c: ShareGroupCoordinator, node_id: int, group_id: str, create: bool) -> ShareGroup:
    """The Empty share group Alter and Delete work on (HeartbeatError: why not)."""
    if not group_id:
        raise HeartbeatError(ErrorCode.invalid_group_id, MESSAGES[ErrorCode.invalid_group_id])
    err = c.registry.validate_group_status(group_id, node_id)
    if err is not None:
        raise HeartbeatError(err, MESSAGES.get(err))
    if not create and c.registry.get(group_id) is None:  # GroupMetadataManager.shareGroup(id)
        raise HeartbeatError(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
    group = c.get_or_maybe_create(group_id, create)
    if group.members:
        raise HeartbeatError(ErrorCode.non_empty_group, MESSAGES[ErrorCode.non_empty_group])
    return group


def alter(c: ShareGroupCoordinator, node_id: int, group_id: str,
          topics: list[tuple[str, list[tuple[int, int]]]]) -> OffsetsResult:
    """alterShareGroupOffsets: the named partitions' state initialized at the given start offsets."""
    try:
        group = _empty_share_group(c, node_id, group_id, create=True)
    except HeartbeatError as e:
        return _failed(e.error, e.message)
    out = OffsetsResult()
    for name, partitions in topics:
        topic = c.metadata.topics.get(name)
        if topic is None:
            out.topics.append(TopicOffsets(name, ZERO, [
                PartitionOffset(p, error=ErrorCode.unknown_topic_or_partition,
                                message=MESSAGES[ErrorCode.unknown_topic_or_partition]) for p, _ in partitions]))
            continue
        t = TopicOffsets(name, topic.topic_id)
        for p, start in partitions:
            if p >= len(topic.partitions):
                t.partitions.append(PartitionOffset(p, error=ErrorCode.unknown_topic_or_partition,
                                                    message=MESSAGES[ErrorCode.unknown_topic_or_partition]))
                continue
            error = c.persister.initialize((group_id, topic.topic_id, p), group.group_epoch, start)
            if error is ErrorCode.none:
                group.initialized.setdefault(topic.topic_id, set()).add(p)
            t.partitions.append(PartitionOffset(p, error=error))
        out.topics.append(t)
    return out


def delete(c: ShareGroupCoordinator, node_id: int, group_id: str, topic_names: list[str]) -> OffsetsResult:
    """deleteShareGroupOffsets: the state of the named topics' initialized partitions deleted."""
    try:
        group = _empty_share_group(c, node_id, group_id, create=False)
    except HeartbeatError as e:
        return _failed(e.error, e.message)
    out = OffsetsResult()
    for name in topic_names:
        topic = c.metadata.topics.get(name)
        if topic is None:
            out.topics.append(TopicOffsets(name, ZERO, error=ErrorCode.unknown_topic_or_partition,
                                           message=MESSAGES[ErrorCode.unknown_topic_or_partition]))
            continue
        partitions = group.initialized.pop(topic.topic_id, set())
        if not partitions:
            out.topics.append(TopicOffsets(name, ZERO, error=ErrorCode.unknown_topic_or_partition,
                                           message="There is no offset information to delete."))
            continue
        for p in partitions:
            c.persister.delete((group_id, topic.topic_id, p))
        out.topics.append(TopicOffsets(name, topic.topic_id))
    return out
