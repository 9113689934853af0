"""The checks of a StreamsGroupHeartbeat before the coordinator acts on it.

Mirrors Kafka 4.4's ``GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsInvalid``
(and ``...IsUsingUnsupportedFeatures``, ``throwIfInvalidTopology``) and, from
``GroupMetadataManager``, ``throwIfStreamsGroupMemberEpochIsInvalid`` and
``throwIfRequestContainsInvalidTasks``, ``getOrMaybeCreate{Dynamic,Static}StreamsGroupMember``
and ``maybeUpdateTopology`` (the member and the topology a heartbeat is about): each raises ``StreamsGroupError`` with
Kafka's error code and message.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode

from .streams_group import StreamsGroup
from .streams_tasks import StreamsGroupMember, TasksTuple
from .streams_topology import StreamsGroupError, StreamsTopology

log = logging.getLogger("mockbroker.group")

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


def invalid(message: str) -> StreamsGroupError:
    return StreamsGroupError(ErrorCode.invalid_request, message)


def validate_request(req: Any) -> None:
    """GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures and
    throwIfStreamsGroupHeartbeatRequestIsInvalid."""
    if req.topology is not None and any(s.source_topic_regex for s in req.topology.subtopologies):
        raise invalid("Regular expressions for source topics are not supported yet.")
    for value, name in ((req.member_id, "MemberId"), (req.group_id, "GroupId"),
                        (req.instance_id, "InstanceId"), (req.rack_id, "RackId")):
        if value is not None and value.strip() == "":
            raise invalid(f"{name} can't be empty.")
    epoch = req.member_epoch
    if epoch == 0:
        if rebalance_timeout_ms(req) == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        for tasks, name in ((req.active_tasks, "ActiveTasks"), (req.standby_tasks, "StandbyTasks"),
                            (req.warmup_tasks, "WarmupTasks")):
            if tasks:
                raise invalid(f"{name} must be empty when (re-)joining.")
        if req.topology is None:
            raise invalid("Topology must be non-null when (re-)joining.")
        _validate_topology(req.topology)
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            raise invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
    kinds = (req.active_tasks, req.standby_tasks, req.warmup_tasks)
    if any(k is not None for k in kinds) and any(k is None for k in kinds):
        raise invalid("If one task-type is non-null, all must be non-null.")
    if epoch != 0 and req.topology is not None:
        raise invalid("Topology can only be provided when (re-)joining.")


def _validate_topology(topology: Any) -> None:
    """GroupCoordinatorService.throwIfInvalidTopology: every repartition source topic is written by
    some subtopology, and copartition groups name topics of their subtopology."""
    sinks = {t for s in topology.subtopologies for t in s.repartition_sink_topics}
    for s in topology.subtopologies:
        for info in s.repartition_source_topics:
            if info.name not in sinks:
                raise StreamsGroupError(
                    ErrorCode.streams_invalid_topology,
                    f"Repartition source topic {info.name} does not have a matching repartition sink topic.")


def rebalance_timeout_ms(req: Any) -> int:
    value = req.rebalance_timeout
    return -1 if value is None else timedelta_ms(value)


def check_epoch(member: StreamsGroupMember, received: int, owned: TasksTuple | None) -> None:
    """throwIfStreamsGroupMemberEpochIsInvalid."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise StreamsGroupError(
            ErrorCode.fenced_member_epoch,
            f"The streams group member has a greater member epoch ({received}) than the one known by the group "
            f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.")
    if received < member.member_epoch:
        contained = owned is not None and all(
            ps <= set(member.assigned.active.get(s, {})) for s, ps in owned.active.items()) and all(
            ps <= member.assigned.standby.get(s, set()) for s, ps in owned.standby.items()) and all(
            ps <= member.assigned.warmup.get(s, set()) for s, ps in owned.warmup.items())
        if received != member.previous_member_epoch or not contained:
            raise StreamsGroupError(
                ErrorCode.fenced_member_epoch,
                f"The streams group member has a smaller member epoch ({received}) than the one known by the group "
                f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.")


def check_tasks(subtopologies: Mapping[str, Any], tasks: Iterable[Any] | None) -> None:
    """throwIfRequestContainsInvalidTasks."""
    for t in tasks or ():
        sub = subtopologies.get(t.subtopology_id)
        if sub is None:
            raise invalid(f"Subtopology {t.subtopology_id} does not exist in the topology.")
        for p in t.partitions:
            if p < 0 or p >= sub.number_of_tasks:
                raise invalid(f"Task {p} for subtopology {t.subtopology_id} is invalid. Number of tasks for this "
                               f"subtopology: {sub.number_of_tasks}")


def member_for(group: StreamsGroup, req: Any, joining: bool, owned: TasksTuple | None
            ) -> tuple[StreamsGroupMember, StreamsGroupMember | None]:
    """getOrMaybeCreateDynamicStreamsGroupMember / getOrMaybeCreateStaticStreamsGroupMember:
    the member, and the static member it replaces."""
    member_id, instance_id = req.member_id, req.instance_id
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise StreamsGroupError(ErrorCode.unknown_member_id,
                                        f"Member {member_id} is not a member of group {group.group_id}.")
            member = StreamsGroupMember(member_id)
        check_epoch(member, req.member_epoch, owned)
        return member, None
    old = group.static_member(instance_id)
    if joining:
        if old is None:
            return group.members.get(member_id) or StreamsGroupMember(member_id), None
        if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise StreamsGroupError(
                ErrorCode.unreleased_instance_id,
                f"Static member {member_id} with instance id {instance_id} cannot join the group because the "
                f"instance id is owned by {old.member_id} member.")
        # the new incarnation takes the old one's tasks at epoch 0 (Builder(old, memberId))
        return replace(old, member_id=member_id, member_epoch=0, previous_member_epoch=0), old
    if old is None:
        raise StreamsGroupError(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
    if old.member_id != member_id:
        raise StreamsGroupError(ErrorCode.fenced_instance_id,
                                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                                f"{old.member_id}.")
    check_epoch(old, req.member_epoch, owned)
    return old, None


def topology_for(group: StreamsGroup, req: Any) -> StreamsTopology:
    """maybeUpdateTopology: the first member's topology is the group's; a later one must be the same."""
    if req.topology is None:
        if group.topology is None:
            raise StreamsGroupError(ErrorCode.unknown_server_error,
                                    "The topology is null and the group topology is also null.")
        return group.topology
    topology = StreamsTopology.from_request(req.topology)
    if group.topology is None:
        log.info("[GroupId %s][MemberId %s] Member initialized the topology with epoch %d",
                 group.group_id, req.member_id, topology.topology_epoch)
        return topology
    if group.topology.topology_epoch > topology.topology_epoch:
        return group.topology
    if group.topology != topology:
        raise invalid("Topology updates are not supported yet.")
    return group.topology
