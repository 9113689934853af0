"""A KIP-848 consumer group and its members.

Mirrors Kafka 4.x's ``ConsumerGroup`` and ``ConsumerGroupMember``
(``org.apache.kafka.coordinator.group.modern.consumer``): the group epoch, the
target assignment and its epoch, each member's epoch, subscription and
current assignment (with the partitions it still has to revoke), and the
state derived from them (Empty, Assigning, Reconciling, Stable).  The rules
that move them are in ``consumer_coordinator.py``.

``ConsumerGroup`` implements ``Group`` (``group.py``): ConsumerGroup's
validateOffsetCommit (the member epoch, STALE_MEMBER_EPOCH; OffsetCommit v9+
of its members; from an older epoch only for the partitions the member was
assigned at that epoch or before, each partition keeping the epoch it was
assigned at) and validateOffsetFetch live here, as does the offset expiry of
a group whose members subscribe by name.
"""

from __future__ import annotations

import enum
import functools
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode

from ..state.cluster_view import TopicPartition
from .assignors import Assignment, copy_assignment
from .group import (
    DescribedGroup,
    DescribedMember,
    GroupType,
    ListedGroup,
    OffsetAndMetadata,
)

DEFAULT_ASSIGNOR = "uniform"


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@dataclass(slots=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 0
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # the epoch each partition (assigned or pending revocation) was assigned at: ConsumerGroupMember's
    # assignedPartitions / partitionsPendingRevocation epochs, which OffsetCommit from an older epoch reads
    partition_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)


@dataclass(slots=True)
class DescribedConsumerGroupMember:
    """A member as ConsumerGroupDescribe reports it (assignments by topic id)."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: Assignment
    target_assignment: Assignment


@dataclass(slots=True)
class ConsumerGroupDescription:
    """A group as ConsumerGroupDescribe reports it; ``error`` is set when it could not be described."""

    group_id: str
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0  # the schema's defaults, as Kafka answers a group it could not describe
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list[DescribedConsumerGroupMember] = field(default_factory=list)


@functools.cache
def re2_options() -> Any:
    import re2  # on the first KIP-848 regex, not at start-up (~5-10 ms)

    options = re2.Options()
    options.log_errors = False  # an invalid pattern is the client's error, answered INVALID_REQUEST
    return options


@functools.lru_cache(maxsize=1024)
def topic_regex(pattern: str) -> Any:
    """A subscription regex compiled with RE2, as Kafka uses RE2/J: linear time in the topic name,
    so a hostile pattern cannot stall the broker (Python's ``re`` backtracks exponentially).
    Raises ``re2.error`` for an invalid pattern."""
    import re2

    return re2.compile(pattern, re2_options())


class ConsumerGroup:
    """A KIP-848 group (Kafka's ConsumerGroup); a ``Group``."""

    protocol_type = "consumer"
    group_type = GroupType.CONSUMER

    def __init__(self, group_id: str, now_ms: int, initial_epoch: int = 0) -> None:
        self.group_id = group_id
        self.group_epoch = initial_epoch  # ModernGroup's: 1 from Kafka 4.3 (group.group.initial_group_epoch)
        # TargetAssignmentMetadata.INITIAL: the group's first epoch, computed never (timestamp 0)
        self.assignment_epoch = initial_epoch
        self.assignment_timestamp_ms = 0  # when the target was last computed (0: never)
        # the members' regexes resolved to topic names (ResolvedRegularExpression), when they were last
        # resolved and the topics there were then (the resolution runs after the heartbeat asking for it)
        self.resolved_regexes: dict[str, frozenset[str]] = {}
        self.regex_refresh_ms = 0
        self.regex_topics_seen: frozenset[str] = frozenset()
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, Assignment] = {}
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        self.metadata_version: int | None = None  # the cluster's topics_version it was computed at
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.state_timestamp_ms: int | None = now_ms  # when it last became empty
        self.preferred_assignor = DEFAULT_ASSIGNOR
        # a topic's id by its name (the coordinator's view of the cluster): OffsetCommit names partitions
        self.topic_id_of: Callable[[str], uuid.UUID | None] = lambda _name: None

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    # -- Group ---------------------------------------------------------------------------------------
    def state_as_string(self) -> str:
        return self.state.value

    def is_empty(self) -> bool:
        return not self.members

    def has_members(self) -> bool:
        return bool(self.members)

    def transition_to_dead(self, now_ms: int) -> None:
        pass  # a removed consumer group simply disappears: nothing waits on it

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None,
                               generation_id_or_member_epoch: int, api_version: int,
                               is_transactional: bool = False) -> ErrorCode | None:
        """ConsumerGroup.validateOffsetCommit: a member commits with its current epoch, over v9+
        (older versions cannot carry a member epoch; TxnOffsetCommit carries it as its generation), or
        with an older one for the partitions it held since then (commit_partition_error); a newer one
        is STALE_MEMBER_EPOCH; anyone commits to a group without members."""
        member_epoch = generation_id_or_member_epoch
        if member_epoch < 0 and not self.members:
            return None
        if is_transactional and member_epoch == -1 and not member_id and group_instance_id is None:
            return None  # a producer without group metadata (TxnOffsetCommit before v3, or sendOffsetsToTransaction)
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if not is_transactional and api_version < 9:
            return ErrorCode.unsupported_version
        if member_epoch > member.member_epoch:
            return ErrorCode.stale_member_epoch
        return None

    def commit_partition_error(self, member_id: str, generation_id_or_member_epoch: int,
                               tp: TopicPartition) -> ErrorCode | None:
        """ConsumerGroup.createAssignmentEpochValidator: a commit from an older epoch than the member's
        only for a partition assigned to it (or pending revocation) at that epoch or before."""
        member = self.members.get(member_id)
        if member is None or generation_id_or_member_epoch >= member.member_epoch:
            return None  # the current epoch (CommitPartitionValidator.NO_OP), or a group without members
        topic_id = self.topic_id_of(tp[0])
        assigned_at = member.partition_epochs.get((topic_id, tp[1])) if topic_id is not None else None
        if assigned_at is None or generation_id_or_member_epoch < assigned_at:
            return ErrorCode.stale_member_epoch
        return None

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        """ConsumerGroup.validateOffsetFetch: OffsetFetch v9+ from a member carries its id and epoch."""
        if member_epoch < 0 and member_id is None:
            return None
        member = self.members.get(member_id or "")
        if member is None:
            return ErrorCode.unknown_member_id
        return ErrorCode.stale_member_epoch if member_epoch != member.member_epoch else None

    def validate_delete_group(self) -> ErrorCode | None:
        return ErrorCode.non_empty_group if self.members else None

    def validate_offset_delete(self) -> ErrorCode | None:
        return None  # ConsumerGroup.validateOffsetDelete: offsets of unsubscribed topics go at any time

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """ModernGroup.isSubscribedToTopic: a member subscribes to it by name or by its regex."""
        return any(topic in self.subscribed_names(m, (topic,)) for m in self.members.values())

    def remove_expired_offsets(self, now_ms: int, retention_ms: int,
                               keep: Callable[[TopicPartition], bool] = lambda _tp: False) -> list[TopicPartition]:
        """Empty: retention counts from when the group emptied; else offsets of topics no member
        subscribes to expire retention after their commit (OffsetExpirationCondition)."""
        subscribed = {t for m in self.members.values() for t in m.subscribed_topic_names}
        gone = []
        for tp, om in self.offsets.items():
            if om.expire_timestamp is not None:
                if now_ms >= om.expire_timestamp:
                    gone.append(tp)
            elif not self.members:
                base = self.state_timestamp_ms if self.state_timestamp_ms is not None else om.commit_timestamp
                if now_ms - base >= retention_ms:
                    gone.append(tp)
            elif tp[0] not in subscribed and now_ms - om.commit_timestamp >= retention_ms:
                gone.append(tp)
        gone = [tp for tp in gone if not keep(tp)]  # a pending transactional offset keeps it
        for tp in gone:
            del self.offsets[tp]
        return gone

    def as_listed_group(self) -> ListedGroup:
        return ListedGroup(self.group_id, self.protocol_type, self.state.value, GroupType.CONSUMER)

    def as_described_group(self) -> DescribedGroup:
        """DescribeGroups describes classic groups only (GroupMetadataManager.classicGroup): a consumer
        group is GROUP_ID_NOT_FOUND, Dead (before v6 the handler answers NONE)."""
        return DescribedGroup(self.group_id, ErrorCode.group_id_not_found,
                              f"Group {self.group_id} is not a classic group.", state="Dead")

    def as_consumer_group_description(self) -> ConsumerGroupDescription:
        """ConsumerGroup.asDescribedGroup (ConsumerGroupDescribe)."""
        return ConsumerGroupDescription(
            self.group_id, state=self.state.value, group_epoch=self.group_epoch,
            assignment_epoch=self.assignment_epoch, assignor_name=self.preferred_assignor,
            members=[DescribedConsumerGroupMember(
                m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                list(m.subscribed_topic_names), m.subscribed_topic_regex,
                copy_assignment(m.assigned, drop_empty=False),
                copy_assignment(self.target.get(m.member_id, {}), drop_empty=False)) for m in self.members.values()])

    # -- partitions -------------------------------------------------------------------------------
    def owner_of(self, topic_id: uuid.UUID, partition: int) -> str | None:
        for m in self.members.values():
            if partition in m.assigned.get(topic_id, ()) or partition in m.pending_revocation.get(topic_id, ()):
                return m.member_id
        return None

    def subscribed_names(self, member: ConsumerGroupMember, topics: Iterable[str] = ()) -> set[str]:
        """The member's topic names and the topics its regex was resolved to (nothing until it is)."""
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            names |= self.resolved_regexes.get(member.subscribed_topic_regex, frozenset())
        return names

    def regex_subscribers(self) -> dict[str, int]:
        """ConsumerGroup.subscribedRegularExpressions: each regex and how many members subscribe with it."""
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.subscribed_topic_regex:
                counts[m.subscribed_topic_regex] = counts.get(m.subscribed_topic_regex, 0) + 1
        return counts
