"""A share group and its members: Kafka 4.4's ``ShareGroup`` and ``ShareGroupMember``
(``org.apache.kafka.coordinator.group.modern.share``).

Two states, Empty and Stable; a group epoch bumped by every change of membership or subscription,
the target assignment and its epoch, and each member's epoch and assigned partitions (a share
member moves to its target at once: nothing is revoked first).  The share-group state partition
metadata (which topic partitions have their state initialized in the share coordinator, which are
being deleted) lives here too.  ``ShareGroup`` implements ``Group`` (``group/group.py``): offsets
are not committed to a share group (GROUP_ID_NOT_FOUND, "not a consumer group"), it is described
through DescribeGroups with protocol type "share", and deleted only when Empty.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from protocol.errors import ErrorCode

from ..state.cluster_view import TopicPartition
from ..group.assignors import Assignment
from ..group.group import DescribedGroup, GroupType, ListedGroup, OffsetAndMetadata


@dataclass(slots=True)
class ShareGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    assigned: Assignment = field(default_factory=dict)


class ShareGroup:
    """A share group (Kafka's ShareGroup); a ``Group``."""

    protocol_type = "share"
    group_type = GroupType.SHARE

    def __init__(self, group_id: str, on_deleted: Callable[[ShareGroup], None] = lambda _g: None,
                 initial_epoch: int = 0) -> None:
        self.group_id = group_id
        self.on_deleted = on_deleted  # DeleteGroups: the share coordinator's state of the group goes too
        self.group_epoch = initial_epoch  # ModernGroup's: 1 from Kafka 4.3 (group.group.initial_group_epoch)
        self.assignment_epoch = 0
        self.assignment_timestamp_ms = 0
        self.members: dict[str, ShareGroupMember] = {}
        self.target: dict[str, Assignment] = {}
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}  # always empty: nothing is committed
        # ShareGroupStatePartitionMetadata: the initialized topic partitions
        self.initialized: dict[uuid.UUID, set[int]] = {}

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    # -- Group -----------------------------------------------------------------------------------
    def state_as_string(self) -> str:
        return self.state

    def is_empty(self) -> bool:
        return not self.members

    def has_members(self) -> bool:
        return bool(self.members)

    def transition_to_dead(self, now_ms: int) -> None:
        """Deleted (DeleteGroups, only when Empty): its share-partitions' persisted state is deleted
        (GroupCoordinatorService.deleteShareGroups: DeleteShareGroupState)."""
        self.on_deleted(self)

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None,
                               generation_id_or_member_epoch: int, api_version: int,
                               is_transactional: bool = False) -> ErrorCode | None:
        return ErrorCode.group_id_not_found  # ShareGroup.validateOffsetCommit: not a consumer group

    def commit_partition_error(self, member_id: str, generation_id_or_member_epoch: int,
                               tp: TopicPartition) -> ErrorCode | None:
        return None  # never asked: validate_offset_commit refuses every commit

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        return ErrorCode.group_id_not_found

    def validate_offset_delete(self) -> ErrorCode | None:
        return ErrorCode.group_id_not_found  # ShareGroup.validateOffsetDelete: not a consumer group

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topics()

    def validate_delete_group(self) -> ErrorCode | None:
        return ErrorCode.non_empty_group if self.members else None

    def remove_expired_offsets(self, now_ms: int, retention_ms: int,
                               keep: Callable[[TopicPartition], bool] = lambda _tp: False) -> list[TopicPartition]:
        return []  # ShareGroup.shouldExpire: never

    def as_listed_group(self) -> ListedGroup:
        return ListedGroup(self.group_id, self.protocol_type, self.state, GroupType.SHARE)

    def as_described_group(self) -> DescribedGroup:
        """DescribeGroups describes classic groups only (GroupMetadataManager.classicGroup)."""
        return DescribedGroup(self.group_id, ErrorCode.group_id_not_found,
                              f"Group {self.group_id} is not a classic group.", state="Dead")

    # -- subscriptions ---------------------------------------------------------------------------
    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}
