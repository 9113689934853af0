"""A streams group (KIP-1071) and what the shared group code asks of it.

Mirrors Kafka 4.4's ``StreamsGroup``: the group epoch, the topology and its
configured form, the target assignment and its epoch and timestamp, the
members (``streams_tasks.StreamsGroupMember``), which process runs or holds
each task (what a member's reconciliation checks before it takes a task), the
task offsets members report, the endpoint information epoch for interactive
queries, the shutdown request, and the state derived from them (Empty,
NotReady, Assigning, Reconciling, Stable).  The rules that move them are in
``streams_coordinator.py``.

``StreamsGroup`` implements ``Group`` (``group.py``): StreamsGroup's
validateOffsetCommit (the member epoch; an older epoch may still commit the
tasks it was assigned in that epoch or earlier), validateOffsetFetch, the
offset expiry (an offset of a topic the group reads does not expire while
the group has members) and DeleteGroups' NON_EMPTY_GROUP.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from protocol.errors import ErrorCode

from ..state.cluster_view import TopicPartition, TopicView
from .group import DescribedGroup, GroupType, ListedGroup, OffsetAndMetadata
from .streams_tasks import EMPTY_TASKS, StreamsGroupMember, TasksTuple, TasksTupleWithEpochs, task_ids
from .streams_topology import ConfiguredTopology, StreamsTopology


class StreamsGroupState(enum.Enum):
    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class MemberTaskOffsets:
    """MemberTaskOffsets: the changelog offset sums and end offset sums a member last reported."""

    offsets: Mapping[str, Mapping[int, int]]
    end_offsets: Mapping[str, Mapping[int, int]]


NO_TASK_OFFSETS = MemberTaskOffsets({}, {})


class StreamsGroup:
    """A streams group (Kafka's StreamsGroup); a ``Group``."""

    protocol_type = "streams"
    group_type = GroupType.STREAMS

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 1
        self.members: dict[str, StreamsGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.validated_topology_epoch = -1
        self.metadata_hash = 0
        self.assignment_epoch = 1  # TargetAssignmentMetadata.INITIAL
        self.assignment_timestamp = 0
        self.target: dict[str, TasksTuple] = {}
        self.topology: StreamsTopology | None = None
        self.configured_topology: ConfiguredTopology | None = None
        self.last_assignment_configs: dict[str, str] = {}
        self.task_offsets: dict[str, MemberTaskOffsets] = {}
        self.shutdown_request_member_id: str | None = None
        self.endpoint_information_epoch = 0
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.empty_since_ms: int | None = None
        # StreamsGroupTopologyDescriptionUpdate (KIP-1331): what the plugin would keep, kept here
        self.stored_description_topology_epoch = -1
        self.failed_description_topology_epoch = -1
        self.topology_description: dict[str, Any] | None = None
        self.description_requested_epoch = -1  # StreamsGroupTopologyDescriptionBackoff, without expiry

    # -- state ------------------------------------------------------------------------------------
    @property
    def state(self) -> StreamsGroupState:
        """StreamsGroup.maybeUpdateGroupState."""
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.topology is None or self.topology.topology_epoch != self.validated_topology_epoch:
            return StreamsGroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return StreamsGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    # -- members ----------------------------------------------------------------------------------
    def update_member(self, member: StreamsGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None and old.instance_id is not None:
            self.static_members.pop(old.instance_id, None)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str, now_ms: int) -> None:
        old = self.members.pop(member_id, None)
        if old is not None and old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]
        self.task_offsets.pop(member_id, None)
        if not self.members:
            self.shutdown_request_member_id = None  # clearShutdownRequestMemberId
            self.empty_since_ms = now_ms

    def static_member(self, instance_id: str) -> StreamsGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return self.members.get(member_id) if member_id is not None else None

    def target_of(self, member_id: str) -> TasksTuple:
        return self.target.get(member_id, EMPTY_TASKS)

    # which process runs (active) or holds (standby, warm-up) a task now: the current assignments and
    # the tasks pending revocation of every member (currentActiveTaskToProcessId & co)
    def active_process(self, subtopology: str, partition: int) -> str | None:
        owner = None
        for m in self.members.values():
            for tasks in (m.assigned, m.pending_revocation):
                if partition in tasks.active.get(subtopology, {}):
                    owner = m.process_id
        return owner

    def standby_processes(self, subtopology: str, partition: int) -> set[str]:
        return self._holders(subtopology, partition, lambda t: t.standby)

    def warmup_processes(self, subtopology: str, partition: int) -> set[str]:
        return self._holders(subtopology, partition, lambda t: t.warmup)

    def _holders(self, subtopology: str, partition: int,
                 kind: Callable[[TasksTupleWithEpochs], Mapping[str, set[int]]]) -> set[str]:
        return {m.process_id for m in self.members.values() for tasks in (m.assigned, m.pending_revocation)
                if partition in kind(tasks).get(subtopology, set())}

    # -- Group ----------------------------------------------------------------------------------------
    def state_as_string(self) -> str:
        return self.state.value

    def is_empty(self) -> bool:
        return not self.members

    def has_members(self) -> bool:
        return bool(self.members)

    def transition_to_dead(self, now_ms: int) -> None:
        pass  # nothing waits on a streams group

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None,
                               generation_id_or_member_epoch: int, api_version: int,
                               is_transactional: bool = False) -> ErrorCode | None:
        """StreamsGroup.validateOffsetCommit; an epoch older than the member's is checked per
        partition (``commit_partition_error``)."""
        epoch = generation_id_or_member_epoch
        if epoch < 0 and not self.members:
            return None
        if is_transactional and epoch == -1 and member_id == "" and group_instance_id is None:
            return None
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if not is_transactional and api_version < 9:
            return ErrorCode.unsupported_version
        if epoch > member.member_epoch:
            return ErrorCode.stale_member_epoch
        return None

    def commit_partition_error(self, member_id: str, generation_id_or_member_epoch: int,
                               tp: TopicPartition) -> ErrorCode | None:
        """createAssignmentEpochValidator: a member committing with an older epoch may commit a
        partition of an active task it holds (or is revoking) since that epoch or before."""
        member = self.members.get(member_id)
        epoch = generation_id_or_member_epoch
        if member is None or epoch < 0 or epoch >= member.member_epoch:
            return None
        if self.topology is None:
            return ErrorCode.stale_member_epoch
        sub = self.topology.source_topic_map().get(tp[0])
        if sub is None:
            return ErrorCode.stale_member_epoch
        assigned = member.assigned.active.get(sub.subtopology_id, {}).get(tp[1])
        if assigned is None:
            assigned = member.pending_revocation.active.get(sub.subtopology_id, {}).get(tp[1])
        if assigned is None or epoch < assigned:
            return ErrorCode.stale_member_epoch
        return None

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        if member_id is None and member_epoch < 0:
            return None
        member = self.members.get(member_id or "")
        if member is None:
            return ErrorCode.unknown_member_id
        return ErrorCode.stale_member_epoch if member_epoch != member.member_epoch else None

    def validate_offset_delete(self) -> ErrorCode | None:
        return None  # StreamsGroup.validateOffsetDelete: offsets of topics it does not read go at any time

    def validate_delete_group(self) -> ErrorCode | None:
        return ErrorCode.non_empty_group if self.state is not StreamsGroupState.EMPTY else None

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """StreamsGroup.isSubscribedToTopic: a group with members reads the topic."""
        if not self.members or self.topology is None:
            return False
        return topic in self.topology.source_topic_map()

    def remove_expired_offsets(self, now_ms: int, retention_ms: int,
                               keep: Callable[[TopicPartition], bool] = lambda _tp: False) -> list[TopicPartition]:
        """OffsetExpirationConditionImpl on the commit timestamp, for topics the group does not read."""
        gone = []
        for tp, om in self.offsets.items():
            if self.is_subscribed_to_topic(tp[0]) or keep(tp):
                continue
            if om.expire_timestamp is not None:
                expired = now_ms >= om.expire_timestamp
            else:
                expired = now_ms - om.commit_timestamp >= retention_ms
            if expired:
                gone.append(tp)
        for tp in gone:
            del self.offsets[tp]
        return gone

    def as_listed_group(self) -> ListedGroup:
        return ListedGroup(self.group_id, self.protocol_type, self.state.value, GroupType.STREAMS)

    def as_described_group(self) -> DescribedGroup:
        """DescribeGroups sees only classic groups (GroupMetadataManager.classicGroup)."""
        return DescribedGroup(self.group_id, ErrorCode.group_id_not_found,
                              f"Group {self.group_id} is not a classic group.", state="Dead")

    # -- StreamsGroupDescribe ---------------------------------------------------------------------------
    def describe(self, assignor_name: str) -> dict[str, Any]:
        """StreamsGroup.asDescribedGroup, wire-shaped (StreamsGroupDescribeResponse's DescribedGroup)."""
        if self.configured_topology is not None and self.configured_topology.is_ready:
            topology = self.configured_topology.describe()
        else:
            assert self.topology is not None, "a streams group always has a topology"
            topology = self.topology.describe()
        return {
            "group_id": self.group_id, "error_code": ErrorCode.none, "error_message": None,
            "group_state": self.state.value, "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch, "topology": topology,
            "members": [self._describe_member(m) for m in self.members.values()],
            "assignor_name": assignor_name,
        }

    def _describe_member(self, m: StreamsGroupMember) -> dict[str, Any]:
        offsets = self.task_offsets.get(m.member_id, NO_TASK_OFFSETS)
        target = self.target.get(m.member_id)

        def task_offsets(o: Mapping[str, Mapping[int, int]]) -> list[dict[str, Any]]:
            return [{"subtopology_id": s, "partition": p, "offset": o[s][p]} for s in sorted(o) for p in sorted(o[s])]

        return {
            "member_id": m.member_id, "member_epoch": m.member_epoch, "instance_id": m.instance_id,
            "rack_id": m.rack_id, "client_id": m.client_id, "client_host": m.client_host,
            "topology_epoch": m.topology_epoch, "process_id": m.process_id,
            "user_endpoint": {"host": m.user_endpoint[0], "port": m.user_endpoint[1]} if m.user_endpoint else None,
            "client_tags": [{"key": k, "value": v} for k, v in m.client_tags],
            "task_offsets": task_offsets(offsets.offsets), "task_end_offsets": task_offsets(offsets.end_offsets),
            "assignment": {"active_tasks": task_ids(m.assigned.active), "standby_tasks": task_ids(m.assigned.standby),
                           "warmup_tasks": task_ids(m.assigned.warmup)},
            "target_assignment": {"active_tasks": task_ids(target.active) if target else [],
                                  "standby_tasks": task_ids(target.standby) if target else [],
                                  "warmup_tasks": task_ids(target.warmup) if target else []},
            "is_classic": False,
        }

    # -- interactive queries ---------------------------------------------------------------------------
    def endpoint_to_partitions(self, member: StreamsGroupMember, topics: Mapping[str, TopicView]
                               ) -> dict[str, Any] | None:
        """EndpointToPartitionsManager.maybeEndpointToPartitions: the source partitions of the
        member's active tasks and of its standby and warm-up tasks, under its endpoint."""
        if member.user_endpoint is None or self.configured_topology is None:
            return None
        subtopologies = self.configured_topology.subtopologies or {}

        def partitions(tasks: Mapping[str, set[int]]) -> list[dict[str, Any]]:
            out = []
            for sid, ps in tasks.items():
                sub = subtopologies.get(sid)
                if sub is None:
                    continue
                for name in sorted(sub.source_topics | set(sub.repartition_source_topics)):
                    t = topics.get(name)
                    if t is None:
                        continue
                    n = len(t.partitions)
                    chosen = sorted(p for p in ps if p < n)
                    if chosen:
                        out.append({"topic": name, "partitions": chosen})
            return out

        return {"user_endpoint": {"host": member.user_endpoint[0], "port": member.user_endpoint[1]},
                "active_partitions": partitions(member.assigned.active_tasks()),
                "standby_partitions": partitions(member.assigned.standby_and_warmup())}
