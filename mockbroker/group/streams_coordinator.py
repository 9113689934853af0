"""KIP-1071 streams groups: StreamsGroupHeartbeat and StreamsGroupDescribe.

Mirrors the part of Kafka 4.4's ``GroupMetadataManager`` that serves streams
groups (``streamsGroupHeartbeat``, ``streamsGroupLeave``, the session and
rebalance timeouts, ``computeDelayedTargetAssignment``, ``streamsGroupDescribe``)
and ``GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsInvalid``:

* the first member to join registers the topology; every heartbeat checks it
  against the cluster (``streams_topology.configure_topics``): missing source
  topics, internal topics to create (the handler creates them, as KafkaApis
  asks its AutoTopicCreationManager to), incorrectly partitioned ones, each
  reported as a heartbeat status, with no tasks assigned until it is ready;
* the group epoch is bumped when a member joins, leaves or changes what the
  assignment depends on, when the topology becomes ready or the topics it
  reads change, or when the group's assignment configs change; the target
  assignment is then recomputed by the sticky task assignor
  (``streams_assignor.py``), at most once per ``streams.assignment.interval.ms``
  and, for a group that was empty, after ``streams.initial.rebalance.delay.ms``
  (ASSIGNMENT_DELAYED meanwhile);
* each member reconciles towards its target on its own heartbeats
  (``streams_tasks.CurrentAssignmentBuilder``);
* a member is fenced after ``streams.session.timeout.ms`` without a heartbeat,
  or after its rebalance timeout when it does not revoke;
* SHUTDOWN_APPLICATION: once one member asks, every member is told until the
  group is empty.

Group configs (``streams.*``, set with IncrementalAlterConfigs on the group)
are read per group, falling back to the broker's ``group.streams.*``.
Warm-up tasks are not assigned (``streams.num.warmup.replicas`` is accepted and
ignored; see docs/differences.md).
"""

from __future__ import annotations

import logging
from functools import partial
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from protocol.errors import ErrorCode

from ..common.clock import Clock
from ..state.cluster_view import ClusterView
from ..purgatory import DelayedDeadline, DelayedOperationPurgatory
from .group import GroupType, can_compute_next_target_assignment
from .registry import GroupRegistry
from .streams_checks import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    check_tasks,
    member_for,
    rebalance_timeout_ms,
    topology_for,
    validate_request,
)
from .streams_assignor import STICKY, build_target_assignment
from .streams_description import DESCRIPTION_PLUGIN_CONFIG, description_required, store_description
from .streams_group import MemberTaskOffsets, StreamsGroup
from .streams_tasks import (
    EMPTY_TASKS,
    CurrentAssignmentBuilder,
    FencedMember,
    MemberState,
    StreamsGroupMember,
    TasksTuple,
    task_ids,
    tasks_from_wire,
)
from .streams_topology import (
    ConfiguredInternalTopic,
    Status,
    StreamsGroupError,
    StreamsTopology,
    configure_topics,
)

log = logging.getLogger("mockbroker.group")


# the group configs the coordinator reads, and the broker config each falls back to
GROUP_CONFIG_FALLBACK = {
    "streams.heartbeat.interval.ms": "group.streams.heartbeat.interval.ms",
    "streams.session.timeout.ms": "group.streams.session.timeout.ms",
    "streams.num.standby.replicas": "group.streams.num.standby.replicas",
    "streams.initial.rebalance.delay.ms": "group.streams.initial.rebalance.delay.ms",
    "streams.assignment.interval.ms": "group.streams.assignment.interval.ms",
    "streams.task.offset.interval.ms": "group.streams.task.offset.interval.ms",
    "streams.acceptable.recovery.lag": "group.streams.acceptable.recovery.lag",
}


@dataclass(slots=True)
class StreamsGroupHeartbeatResult:
    """StreamsGroupHeartbeatResult: the response's fields (wire-shaped) and the internal topics
    the broker is to create."""

    error: ErrorCode
    error_message: str | None = None
    response: dict[str, Any] = field(default_factory=dict)
    internal_topics_to_create: dict[str, ConfiguredInternalTopic] = field(default_factory=dict)




def _key(kind: str, group_id: str, member_id: str = "") -> tuple[str, str, str]:
    return ("streams-" + kind, group_id, member_id)


class StreamsGroupCoordinator:
    """The KIP-1071 half of GroupMetadataManager; its groups live in the registry with the others."""

    def __init__(self, registry: GroupRegistry, cluster: ClusterView, clock: Clock,
                 heartbeat_purgatory: DelayedOperationPurgatory, config: Mapping[str, Any]) -> None:
        self.registry = registry
        self.cluster = cluster
        self.clock = clock
        self.purgatory = heartbeat_purgatory
        self.config = config
        self.max_size: int = config["group.streams.max.size"]
        # the group's own configs (IncrementalAlterConfigs on the group); set by the cluster
        self.group_configs: Callable[[str], Mapping[str, str]] = lambda _gid: {}

    def group_config(self, group_id: str, name: str) -> int:
        """GroupConfigManager: the group's value of ``name``, else the broker's."""
        value = self.group_configs(group_id).get(name)
        return int(value) if value is not None else int(self.config[GROUP_CONFIG_FALLBACK[name]])

    def _group(self, group_id: str) -> StreamsGroup | None:
        group = self.registry.get(group_id)
        if group is None or group.group_type is not GroupType.STREAMS:
            return None
        return cast(StreamsGroup, group)

    # -- StreamsGroupHeartbeat ----------------------------------------------------------------------
    def heartbeat(self, node_id: int, version: int, req: Any, client_id: str,
                  client_host: str) -> StreamsGroupHeartbeatResult:
        try:
            validate_request(req)
            err = self.registry.validate_group_status(req.group_id, node_id)
            if err is not None:
                return StreamsGroupHeartbeatResult(err)
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(req)
            return self._heartbeat(version, req, client_id, client_host)
        except StreamsGroupError as e:
            return StreamsGroupHeartbeatResult(e.error, e.message)

    def _get_or_create(self, group_id: str, create: bool) -> StreamsGroup:
        """getOrCreateStreamsGroup / getStreamsGroupOrThrow."""
        existing = self.registry.get(group_id)
        if existing is not None and existing.group_type is GroupType.STREAMS:
            return cast(StreamsGroup, existing)
        if existing is not None and (existing.group_type is not GroupType.CLASSIC or existing.has_members()
                                     or not create):  # only an empty classic group is converted
            raise StreamsGroupError(ErrorCode.group_id_not_found, f"Group {group_id} is not a streams group.")
        if not create:
            raise StreamsGroupError(ErrorCode.group_id_not_found, f"Streams group {group_id} not found.")
        group = StreamsGroup(group_id)
        if existing is not None:
            group.offsets = existing.offsets  # an empty classic group is replaced, its offsets kept
        self.registry.put(group)
        return group

    def _heartbeat(self, version: int, req: Any, client_id: str, client_host: str) -> StreamsGroupHeartbeatResult:
        gid, member_id = req.group_id, req.member_id
        joining = req.member_epoch == 0
        statuses: list[dict[str, Any]] = []
        group = self._get_or_create(gid, joining)
        if joining and req.instance_id is None and member_id not in group.members and len(group.members) >= self.max_size:
            raise StreamsGroupError(ErrorCode.group_max_size_reached,
                                    f"The streams group has reached its maximum capacity of {self.max_size} members.")
        owned = None
        if req.active_tasks is not None:
            owned = TasksTuple(tasks_from_wire(req.active_tasks), tasks_from_wire(req.standby_tasks),
                               tasks_from_wire(req.warmup_tasks))
        member, replaced = member_for(group, req, joining, owned)
        was_empty = not group.members

        # StreamsGroupMember.Builder's maybeUpdate*: a null field leaves the value as it was
        updated = replace(member, client_id=client_id, client_host=client_host)
        if req.instance_id is not None:
            updated = replace(updated, instance_id=req.instance_id)
        if req.rack_id is not None:
            updated = replace(updated, rack_id=req.rack_id)
        if rebalance_timeout_ms(req) != -1:
            updated = replace(updated, rebalance_timeout_ms=rebalance_timeout_ms(req))
        if req.topology is not None:
            updated = replace(updated, topology_epoch=int(req.topology.epoch))
        if req.process_id is not None:
            updated = replace(updated, process_id=req.process_id)
        if req.client_tags is not None:
            updated = replace(updated, client_tags=tuple(sorted((kv.key, kv.value) for kv in req.client_tags)))
        endpoint = None if req.user_endpoint is None else (req.user_endpoint.host, int(req.user_endpoint.port))
        if joining or endpoint is not None:
            updated = replace(updated, user_endpoint=endpoint)

        # hasStreamsMemberMetadataChanged: any change for a dynamic member; for a static one only what
        # the assignment depends on
        changed = updated.metadata() != member.metadata() or member_id not in group.members
        bump = changed and (req.instance_id is None or updated.epoch_relevant() != member.epoch_relevant())
        topology = topology_for(group, req)
        if topology.topology_epoch > updated.topology_epoch:
            statuses.append(_status(Status.STALE_TOPOLOGY,
                                    f"The member's topology epoch {updated.topology_epoch} is behind the group's "
                                    f"topology epoch {topology.topology_epoch}."))
        # the topics the topology reads, as they are now (Kafka's metadata hash)
        metadata_hash = self._metadata_hash(topology)
        configured = group.configured_topology
        if configured is None or group.topology is not topology or metadata_hash != group.metadata_hash:
            if metadata_hash != group.metadata_hash:
                bump = True
            configured = configure_topics(topology, metadata_hash, self.cluster.topics)
            group.configured_topology = configured
        group.topology = topology
        validated_epoch = -1
        if configured.is_ready:
            validated_epoch = topology.topology_epoch
            subs = configured.subtopologies or {}
            for tasks in (req.active_tasks, req.standby_tasks, req.warmup_tasks):
                check_tasks(subs, tasks)
        if req.task_offsets is not None or req.task_end_offsets is not None:
            old_offsets = group.task_offsets.get(member_id, MemberTaskOffsets({}, {}))
            group.task_offsets[member_id] = MemberTaskOffsets(
                _offsets(req.task_offsets) if req.task_offsets is not None else old_offsets.offsets,
                _offsets(req.task_end_offsets) if req.task_end_offsets is not None else old_offsets.end_offsets)
        if validated_epoch != group.validated_topology_epoch:
            bump = True
        configs = {"num.standby.replicas": str(self.group_config(gid, "streams.num.standby.replicas"))}
        if not bump and configs != group.last_assignment_configs:
            bump = True

        if replaced is not None:  # replaceStreamsMember: the new incarnation takes the old one's target
            replaced_target = group.target.get(replaced.member_id)
            self._remove(group, replaced, bump_epoch=False)
            if replaced_target is not None:
                group.target[member_id] = replaced_target
        group.update_member(updated)
        if bump:
            group.group_epoch += 1
            group.metadata_hash = metadata_hash
            group.validated_topology_epoch = validated_epoch
            group.last_assignment_configs = configs
            log.info("[GroupId %s][MemberId %s] Bumped streams group epoch to %d with validated topology epoch %d.",
                     gid, member_id, group.group_epoch, validated_epoch)
        if was_empty:
            delay = self.group_config(gid, "streams.initial.rebalance.delay.ms")
            key = _key("initial-rebalance", gid)
            if delay > 0 and not self.purgatory.is_watching(key):
                self.purgatory.try_complete_else_watch(
                    DelayedDeadline(delay, partial(self.on_timeout, gid, "", "initial-rebalance", group.group_epoch)), [key])

        target_epoch, target = self._maybe_update_target(group, statuses)
        before = group.members[member_id]
        updated = before
        if not before.is_reconciled_to(target_epoch):
            try:
                updated = CurrentAssignmentBuilder(
                    before, target_epoch, target.get(member_id, EMPTY_TASKS), group.active_process,
                    group.standby_processes, group.warmup_processes, owned).build()
            except FencedMember as e:
                raise StreamsGroupError(ErrorCode.fenced_member_epoch, str(e)) from None
            group.update_member(updated)
        self._schedule(group, updated, before)
        if req.shutdown_application:
            group.shutdown_request_member_id = member_id

        response: dict[str, Any] = {
            "member_id": member_id, "member_epoch": updated.member_epoch,
            "heartbeat_interval": self.group_config(gid, "streams.heartbeat.interval.ms"),
            "task_offset_interval": self.group_config(gid, "streams.task.offset.interval.ms"),
            "acceptable_recovery_lag": self.group_config(gid, "streams.acceptable.recovery.lag"),
            "active_tasks": None, "standby_tasks": None, "warmup_tasks": None,
            "partitions_by_user_endpoint": None,
        }
        tasks_changed = (member.assigned.active_tasks() != updated.assigned.active_tasks()
                         or member.assigned.standby != updated.assigned.standby
                         or member.assigned.warmup != updated.assigned.warmup)
        if joining or tasks_changed:
            response["active_tasks"] = task_ids(updated.assigned.active)
            response["standby_tasks"] = task_ids(updated.assigned.standby)
            response["warmup_tasks"] = task_ids(updated.assigned.warmup)
        endpoint_changed = member.user_endpoint != updated.user_endpoint
        if endpoint_changed or (tasks_changed and updated.user_endpoint is not None):
            group.endpoint_information_epoch += 1
        if group.endpoint_information_epoch != req.endpoint_information_epoch:
            response["partitions_by_user_endpoint"] = self._endpoints(group)
        response["endpoint_information_epoch"] = group.endpoint_information_epoch
        to_create: dict[str, ConfiguredInternalTopic] = {}
        if configured.error is not None:
            to_create = dict(configured.internal_topics_to_create)
            statuses.append(_status(configured.error.status, configured.error.message))
        if group.shutdown_request_member_id is not None:
            statuses.append(_status(Status.SHUTDOWN_APPLICATION,
                                    f"Streams group member {group.shutdown_request_member_id} encountered a fatal "
                                    "error and requested a shutdown for the entire application."))
        response["status"] = statuses
        response["topology_description_required"] = self._description_required(group, version, updated.member_epoch,
                                                                                statuses)
        return StreamsGroupHeartbeatResult(ErrorCode.none, None, response, to_create)

    def _metadata_hash(self, topology: StreamsTopology) -> int:
        topics = self.cluster.topics
        return hash(tuple((name, topics[name].topic_id, len(topics[name].partitions))
                          for name in sorted(topology.required_topics()) if name in topics))

    def _maybe_update_target(self, group: StreamsGroup, statuses: list[dict[str, Any]] | None
                             ) -> tuple[int, dict[str, TasksTuple]]:
        """maybeUpdateStreamsTargetAssignment: (target assignment epoch, target assignment)."""
        if self.purgatory.is_watching(_key("initial-rebalance", group.group_id)):
            if statuses is not None:
                statuses.append(_status(Status.ASSIGNMENT_DELAYED,
                                        "Assignment delayed due to the configured initial rebalance delay."))
            return group.assignment_epoch, {}
        if group.assignment_epoch >= group.group_epoch:
            return group.assignment_epoch, group.target
        now = self.clock.time_ms()
        interval = self.group_config(group.group_id, "streams.assignment.interval.ms")
        if not can_compute_next_target_assignment(group.assignment_timestamp, interval, now):
            if statuses is not None:
                statuses.append(_status(Status.ASSIGNMENT_DELAYED,
                                        "Assignment delayed due to the configured assignment interval."))
            key = _key("assignment-interval", group.group_id)
            if not self.purgatory.is_watching(key):  # the next heartbeat after the interval would do it too
                self.purgatory.try_complete_else_watch(DelayedDeadline(
                    group.assignment_timestamp + interval - now,
                    partial(self.on_timeout, group.group_id, "", "assignment-interval", group.group_epoch)), [key])
            return group.assignment_epoch, group.target
        build_target_assignment(group, now)
        log.info("[GroupId %s] Computed a new target assignment for epoch %d with '%s' assignor.",
                 group.group_id, group.group_epoch, STICKY)
        return group.assignment_epoch, group.target

    def _endpoints(self, group: StreamsGroup) -> list[dict[str, Any]]:
        """StreamsGroup.buildEndpointToPartitions: one entry per member with an endpoint."""
        topics = self.cluster.topics
        out = []
        for m in group.members.values():
            e = group.endpoint_to_partitions(m, topics)
            if e is not None:
                out.append(e)
        return out

    # -- deadlines ----------------------------------------------------------------------------------
    def _schedule(self, group: StreamsGroup, member: StreamsGroupMember, before: StreamsGroupMember) -> None:
        """scheduleStreamsGroupSessionTimeout, and the rebalance timeout while the member revokes."""
        gid, mid = group.group_id, member.member_id
        key = _key("session", gid, mid)
        self.purgatory.cancel_for_key(key)
        self.purgatory.try_complete_else_watch(DelayedDeadline(
            self.group_config(gid, "streams.session.timeout.ms"),
            partial(self.on_timeout, gid, mid, "session", member.member_epoch)),
            [key])
        rkey = _key("rebalance", gid, mid)
        if member.state is MemberState.UNREVOKED_TASKS:
            if not self.purgatory.is_watching(rkey) or before.member_epoch != member.member_epoch:
                self.purgatory.cancel_for_key(rkey)
                self.purgatory.try_complete_else_watch(DelayedDeadline(
                    member.rebalance_timeout_ms, partial(self.on_timeout, gid, mid, "rebalance", member.member_epoch)), [rkey])
        else:
            self.purgatory.cancel_for_key(rkey)

    def on_timeout(self, group_id: str, member_id: str, kind: str, epoch: int) -> None:
        group = self._group(group_id)
        if group is None:
            return
        if kind in ("initial-rebalance", "assignment-interval"):
            # computeDelayedTargetAssignment
            if group.members and group.group_epoch > group.assignment_epoch and group.configured_topology is not None:
                self._maybe_update_target(group, None)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if kind == "rebalance" and (member.state is not MemberState.UNREVOKED_TASKS or member.member_epoch != epoch):
            return
        log.info("[GroupId %s] Member %s fenced from the group because its %s timeout expired.", group_id, member_id,
                 "session" if kind == "session" else "rebalance")
        self._remove(group, member, bump_epoch=True)

    def expel(self, group_id: str, member_id: str) -> bool:
        """The admin API's expel: the member's session times out now (on_timeout: fenced, the group
        epoch bumped, its tasks assigned to the others). False: no such member."""
        group = self._group(group_id)
        if group is None or member_id not in group.members:
            return False
        self.on_timeout(group_id, member_id, "session", group.members[member_id].member_epoch)
        return True

    def _remove(self, group: StreamsGroup, member: StreamsGroupMember, bump_epoch: bool) -> None:
        """removeStreamsMember (and the epoch bump of streamsGroupFenceMember)."""
        group.remove_member(member.member_id, self.clock.time_ms())
        group.target.pop(member.member_id, None)
        self.purgatory.cancel_for_key(_key("session", group.group_id, member.member_id))
        self.purgatory.cancel_for_key(_key("rebalance", group.group_id, member.member_id))
        if bump_epoch:
            group.group_epoch += 1
            if member.user_endpoint is not None:
                group.endpoint_information_epoch += 1
        if not group.members:
            self.purgatory.cancel_for_key(_key("initial-rebalance", group.group_id))
            self.purgatory.cancel_for_key(_key("assignment-interval", group.group_id))

    def _leave(self, req: Any) -> StreamsGroupHeartbeatResult:
        """streamsGroupLeave / streamsGroupStaticMemberGroupLeave."""
        existing = self.registry.get(req.group_id)  # GroupMetadataManager.streamsGroup
        if existing is None:
            raise StreamsGroupError(ErrorCode.group_id_not_found, f"Group {req.group_id} not found.")
        group = self._group(req.group_id)
        if group is None:
            raise StreamsGroupError(ErrorCode.group_id_not_found, f"Group {req.group_id} is not a streams group.")
        if req.shutdown_application:  # asked for before the member is even looked up
            group.shutdown_request_member_id = req.member_id
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                raise StreamsGroupError(ErrorCode.unknown_member_id,
                                        f"Member {req.member_id} is not a member of group {req.group_id}.")
        else:
            member = group.static_member(req.instance_id)
            if member is None:
                raise StreamsGroupError(ErrorCode.unknown_member_id, f"Instance id {req.instance_id} is unknown.")
            if member.member_id != req.member_id:
                raise StreamsGroupError(ErrorCode.fenced_instance_id,
                                        f"Static member {req.member_id} with instance id {req.instance_id} was "
                                        f"fenced by member {member.member_id}.")
        epoch = req.member_epoch
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # the static member keeps its tasks until its session times out or it comes back
            group.update_member(replace(member.with_epoch(LEAVE_GROUP_STATIC_MEMBER_EPOCH),
                                        assigned=member.assigned.with_active_epochs_zero()))
        else:
            self._remove(group, member, bump_epoch=True)
        return StreamsGroupHeartbeatResult(ErrorCode.none, None, {
            "member_id": req.member_id, "member_epoch": epoch, "heartbeat_interval": 0, "task_offset_interval": 0,
            "acceptable_recovery_lag": -1, "status": [], "active_tasks": None, "standby_tasks": None,
            "warmup_tasks": None, "endpoint_information_epoch": 0, "partitions_by_user_endpoint": None})

    # -- StreamsGroupTopologyDescriptionUpdate (KIP-1331) ------------------------------------------------
    @property
    def description_plugin_configured(self) -> bool:
        """StreamsGroupTopologyDescriptionManager.isPluginConfigured: Kafka loads the class named by
        group.streams.topology.description.plugin.class; mockbroker keeps the descriptions itself
        whenever the key is set (the class is never loaded)."""
        return bool(self.config.get(DESCRIPTION_PLUGIN_CONFIG))

    def _description_required(self, group: StreamsGroup, version: int, member_epoch: int,
                              statuses: list[dict[str, Any]]) -> bool:
        return (version >= 1 and self.description_plugin_configured
                and description_required(group, member_epoch, statuses))

    def topology_description_update(self, node_id: int, req: Any) -> tuple[ErrorCode, str | None]:
        """GroupCoordinatorService.streamsGroupTopologyDescriptionUpdate (streams_description.py)."""
        if not self.description_plugin_configured:
            return ErrorCode.unsupported_version, "The broker has no streams group topology description plugin configured."
        return store_description(self.registry, node_id, req)

    # -- StreamsGroupDescribe -------------------------------------------------------------------------
    def describe(self, node_id: int, group_id: str) -> dict[str, Any]:
        """GroupMetadataManager.streamsGroupDescribe for one group (wire-shaped)."""
        err = self.registry.validate_group_status(group_id, node_id)
        if err is not None:
            return describe_error(group_id, err, None)
        existing = self.registry.get(group_id)
        group = self._group(group_id)
        if group is None:
            return describe_error(group_id, ErrorCode.group_id_not_found,
                                  f"Group {group_id} not found." if existing is None
                                  else f"Group {group_id} is not a streams group.")
        return group.describe(STICKY)


def describe_error(group_id: str, error: ErrorCode, message: str | None) -> dict[str, Any]:
    """A group StreamsGroupDescribe could not describe: the schema's defaults beside the error (epochs 0,
    no topology, v1's assignor name null), as Kafka answers it."""
    return {"group_id": group_id, "error_code": error, "error_message": message, "group_state": "",
            "group_epoch": 0, "assignment_epoch": 0, "topology": None, "members": [], "assignor_name": None}


def _status(status: Status, detail: str) -> dict[str, Any]:
    return {"status_code": int(status), "status_detail": detail}


def _offsets(items: Iterable[Any]) -> dict[str, dict[int, int]]:
    out: dict[str, dict[int, int]] = {}
    for t in items:
        out.setdefault(t.subtopology_id, {})[int(t.partition)] = int(t.offset)
    return out


