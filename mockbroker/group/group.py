"""What every group is to the code shared by every group type.

Mirrors Kafka 4.x's ``org.apache.kafka.coordinator.group.Group`` interface and
its ``GroupType``: the offset manager, the registry and the ListGroups,
DescribeGroups and DeleteGroups paths see a group only through ``Group``, so
they never ask which class a group is.  ``GroupMetadata`` (the classic group,
Kafka's ``ClassicGroup``, in ``classic_group.py``), ``ConsumerGroup`` (KIP-848,
in ``consumer_group.py``) and ``StreamsGroup`` (KIP-1071, in ``streams_group.py``)
implement it; code that must tell them apart compares
``group_type``, as Kafka's ``group.type() == CLASSIC``.

The leaf of the package: it imports nothing of mockbroker.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from protocol.errors import ErrorCode

from ..state.cluster_view import TopicPartition


class GroupType(enum.StrEnum):
    """Group.GroupType; the value is what ListGroups v5+ reports."""

    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"
    STREAMS = "streams"


@dataclass(slots=True)
class OffsetAndMetadata:
    """A committed offset (Kafka's ``OffsetAndMetadata`` with its commit record's timestamps)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None  # OffsetCommit v2-4 retention_time (old per-offset expiry)




@dataclass(slots=True)
class ListedGroup:
    """A group as ListGroups reports it (Group.asListedGroup)."""

    group_id: str
    protocol_type: str
    state: str
    group_type: GroupType


@dataclass(slots=True)
class DescribedMember:
    """A member as DescribeGroups reports it (metadata and assignment empty unless the group is Stable)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes = b""
    assignment: bytes = b""


@dataclass(slots=True)
class DescribedGroup:
    """A group as DescribeGroups reports it; ``error`` is set when it could not be described."""

    group_id: str
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    state: str = ""
    protocol_type: str = ""
    protocol_data: str = ""
    members: list[DescribedMember] = field(default_factory=list)


class Group(Protocol):
    """Group: what the offset manager, the registry and the group APIs need of any group."""

    group_id: str
    # the committed offsets by (topic, partition); they outlive the group's members
    offsets: dict[TopicPartition, OffsetAndMetadata]

    @property
    def group_type(self) -> GroupType: ...

    @property
    def protocol_type(self) -> str | None:
        """The protocol type ListGroups reports (None: a group that only stores offsets)."""
        ...

    def state_as_string(self) -> str:
        """Group.stateAsString: the state name ListGroups and DescribeGroups report."""
        ...

    def is_empty(self) -> bool:
        """In the Empty state (the group may then expire once its offsets have)."""
        ...

    def has_members(self) -> bool:
        """Any member, or any member id handed out and not yet joined: the group cannot change protocol."""
        ...

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None,
                               generation_id_or_member_epoch: int, api_version: int,
                               is_transactional: bool = False) -> ErrorCode | None:
        """Group.validateOffsetCommit: None when the commit may be stored, else its error."""
        ...

    def commit_partition_error(self, member_id: str, generation_id_or_member_epoch: int,
                               tp: TopicPartition) -> ErrorCode | None:
        """CommitPartitionValidator.validate, for each partition of a commit
        ``validate_offset_commit`` let through: None when it may be stored, else the error of the
        whole commit (a streams member committing with an older epoch)."""
        ...

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        """Group.validateOffsetFetch: None when the offsets may be read, else the error."""
        ...

    def validate_delete_group(self) -> ErrorCode | None:
        """Group.validateDeleteGroup: NON_EMPTY_GROUP while it has members."""
        ...

    def validate_offset_delete(self) -> ErrorCode | None:
        """Group.validateOffsetDelete: None when OffsetDelete may remove the group's offsets."""
        ...

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Group.isSubscribedToTopic: a member subscribes to ``topic`` (OffsetDelete refuses its offsets)."""
        ...

    def transition_to_dead(self, now_ms: int) -> None:
        """The group was deleted or expired: delayed operations still holding it see it gone."""
        ...

    def remove_expired_offsets(self, now_ms: int, retention_ms: int,
                               keep: Callable[[TopicPartition], bool] = lambda _tp: False) -> list[TopicPartition]:
        """Drop the offsets past offsets.retention.minutes (KIP-211 rules) but those ``keep``
        holds (a pending transactional offset); returns them."""
        ...

    def as_listed_group(self) -> ListedGroup: ...

    def as_described_group(self) -> DescribedGroup:
        """The group through DescribeGroups (ClassicGroup's summary; any other type is GROUP_ID_NOT_FOUND,
        "not a classic group")."""
        ...


def can_compute_next_target_assignment(assignment_timestamp_ms: int, interval_ms: int, now_ms: int) -> bool:
    """GroupMetadataManager.canComputeNextTargetAssignment (Kafka 4.3+): a modern group's target
    assignment is recomputed at most once per assignment interval (``group.consumer.assignment.interval.ms``
    and its share and streams kin, 1000 ms by default); the first one (timestamp 0) and an interval of 0
    never wait.  Until then a heartbeat that bumped the group epoch answers the last target."""
    if assignment_timestamp_ms == 0 or interval_ms == 0:
        return True
    return now_ms >= assignment_timestamp_ms + interval_ms


def assignment_interval_applies(release: str) -> bool:
    """Kafka 4.3 added the assignment intervals of consumer and share groups (before it the target was
    recomputed on every epoch bump: an effective interval of 0)."""
    major, minor = (int(x) for x in release.split(".")[:2])
    return (major, minor) >= (4, 3)


def initial_group_epoch(release: str) -> int:
    """The epoch of a new consumer or share group before its first member (``mock.kafka.version``):
    Kafka 4.3 and later start ModernGroup's at 1 (its first member gets epoch 2), earlier ones at 0."""
    major, minor = (int(x) for x in release.split(".")[:2])
    return 1 if (major, minor) >= (4, 3) else 0
