"""The classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Mirrors the classic-protocol part of Kafka 4.x's ``GroupMetadataManager``
(``classicGroupJoin``, ``classicGroupSync``, ``classicGroupHeartbeat``,
``classicGroupLeave``; the 3.x ``GroupCoordinator`` of core
``kafka.coordinator.group`` had the same rules and errors): JoinGroup with
MEMBER_ID_REQUIRED (KIP-394), protocol selection and leader election;
SyncGroup with the leader's assignment; Heartbeat; LeaveGroup (batched,
KIP-345 removal by instance id); static membership with FENCED_INSTANCE_ID;
group.max.size.  The deadlines are the delayed operations of ``delayed.py``
in two purgatories, as Kafka's ``heartbeatPurgatory`` and
``rebalancePurgatory``.

The groups live in the ``GroupRegistry``, with the KIP-848 ones; a request to
a broker that does not coordinate the group gets NOT_COORDINATOR there.  When
a group's coordinator moves (a broker stopped or started), the registry tells
this coordinator: the group is unloaded (waiting JoinGroup/SyncGroup calls get
NOT_COORDINATOR) and loaded on the new coordinator from what was last stored,
as Kafka's ``onGroupUnloaded`` / ``onGroupLoaded`` do after a partition leader
change.  Committed offsets are the ``OffsetMetadataManager``'s
(``offsets.py``), which reschedules a member's heartbeat on a commit through
``reschedule_member_heartbeat``.

Over 500 lines on purpose: the four classic APIs share one state machine
(``GroupMetadata``'s five states) and its awaiting-join/awaiting-sync callbacks,
which Kafka too keeps in one class; split, each half would reach into the
other's transitions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, cast

from protocol.errors import ErrorCode

from ..common.clock import Clock
from ..purgatory import DelayedOperationPurgatory
from .delayed import (
    DelayedHeartbeat,
    DelayedJoin,
    DelayedSync,
    InitialDelayedJoin,
    join_key,
    member_key,
    sync_key,
)
from .group import Group, GroupType
from .classic_group import (
    UNKNOWN_MEMBER_ID,
    GroupMetadata,
    GroupState,
    JoinGroupResult,
    MemberMetadata,
    SyncGroupResult,
)
from .registry import GroupRegistry

log = logging.getLogger("mockbroker.group")

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # GroupCoordinator.NewMemberJoinTimeoutMs

JoinCallback = Callable[[JoinGroupResult], None]
SyncCallback = Callable[[SyncGroupResult], None]


class ClassicGroupCoordinator:
    """The classic half of GroupMetadataManager; its groups live in the registry with the KIP-848 ones."""

    def __init__(self, registry: GroupRegistry, clock: Clock, heartbeat_purgatory: DelayedOperationPurgatory,
                 rebalance_purgatory: DelayedOperationPurgatory, config: Mapping[str, Any]) -> None:
        self.registry = registry
        self.clock = clock
        self.heartbeat_purgatory = heartbeat_purgatory
        self.rebalance_purgatory = rebalance_purgatory
        self.min_session_timeout_ms: int = config["group.min.session.timeout.ms"]
        self.max_session_timeout_ms: int = config["group.max.session.timeout.ms"]
        self.initial_rebalance_delay_ms: int = config["group.initial.rebalance.delay.ms"]
        self.max_group_size: int = config["group.max.size"]
        self.rebalances = 0  # completed join phases (Kafka's group-completed-rebalance sensor counts syncs)
        registry.add_listener(self.on_coordinator_moved)

    def _now(self) -> int:
        return self.clock.time_ms()

    def _group(self, group_id: str) -> GroupMetadata | None:
        """The classic group of that id (None: no group, or a KIP-848 one)."""
        group = self.registry.get(group_id)
        if group is None or group.group_type is not GroupType.CLASSIC:
            return None
        return cast(GroupMetadata, group)

    def get_or_create(self, group_id: str) -> GroupMetadata:
        """GroupMetadataManager.getOrMaybeCreateClassicGroup: the classic group of that id, created
        Empty when there is no group of that id."""
        existing = self.registry.get(group_id)
        if existing is not None:
            if existing.group_type is not GroupType.CLASSIC:
                raise ValueError(f"group {group_id} is a {existing.group_type} group, not a classic one")
            return cast(GroupMetadata, existing)
        group = GroupMetadata(group_id, self._now())
        self.registry.put(group)
        return group

    # -- JoinGroup ----------------------------------------------------------------------------
    def join_group(self, node_id: int, group_id: str, member_id: str, group_instance_id: str | None,
                          require_known_member_id: bool, client_id: str, client_host: str,
                          rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                          protocols: list[tuple[str, bytes]], callback: JoinCallback, reason: str | None) -> None:
        err = self.registry.validate_group_status(group_id, node_id)
        if err is not None:
            callback(JoinGroupResult(member_id, err))
            return
        if not self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms:
            callback(JoinGroupResult(member_id, ErrorCode.invalid_session_timeout))
            return
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        existing: Group | None = self.registry.get(group_id)
        if existing is not None and existing.group_type is GroupType.SHARE:  # classicGroupJoin: never converted
            callback(JoinGroupResult("", ErrorCode.inconsistent_group_protocol))
            return
        if existing is not None and existing.group_type in (GroupType.CONSUMER, GroupType.STREAMS):
            if existing.has_members():  # a KIP-848 group with members: online migration is not simulated;
                # a streams group with members: Kafka's answer too (classicGroupJoin)
                callback(JoinGroupResult("" if existing.group_type is GroupType.STREAMS else member_id,
                                         ErrorCode.inconsistent_group_protocol))
                return
            converted = GroupMetadata(group_id, self._now())  # an empty consumer or streams group becomes
            converted.offsets = existing.offsets              # a classic one, keeping its offsets
            self.registry.put(converted)
        group = self._group(group_id)
        if group is None:
            if not is_unknown:
                # a known member id for a group the coordinator does not have
                callback(JoinGroupResult(member_id, ErrorCode.unknown_member_id))
                return
            group = self.get_or_create(group_id)
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            self._remove_heartbeat_for_leaving_member(group, member_id)
            callback(JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.group_max_size_reached))
            if group.is_state(GroupState.PREPARING_REBALANCE):
                self.rebalance_purgatory.check_and_complete(join_key(group_id))
            return
        why = reason or "not provided"
        if is_unknown:
            self._do_new_member_join_group(group, group_instance_id, require_known_member_id, client_id,
                                           client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                           protocols, callback, why)
        else:
            self._do_current_member_join_group(group, member_id, group_instance_id, client_id, client_host,
                                               rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                               protocols, callback, why)
        if group.is_state(GroupState.PREPARING_REBALANCE):
            self.rebalance_purgatory.check_and_complete(join_key(group_id))

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        """GroupCoordinator.acceptJoiningMember (group.max.size)."""
        st = group.state
        if st in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if st is GroupState.PREPARING_REBALANCE:
            return ((group.has(member_id) and group.get(member_id).is_awaiting_join)
                    or group.num_members_awaiting_join < self.max_group_size)
        return group.has(member_id) or group.size() < self.max_group_size

    def _do_new_member_join_group(self, group: GroupMetadata, group_instance_id: str | None, require_known: bool,
                                  client_id: str, client_host: str, rebalance_timeout_ms: int,
                                  session_timeout_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]],
                                  callback: JoinCallback, reason: str) -> None:
        if group.is_state(GroupState.DEAD):
            callback(JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.coordinator_not_available))
            return
        if not group.supports_protocols(protocol_type, {n for n, _ in protocols}):
            callback(JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.inconsistent_group_protocol))
            return
        new_member_id = group.generate_member_id(client_id, group_instance_id)
        if group_instance_id is not None:
            old = group.current_static_member_id(group_instance_id)
            if old is not None:
                log.info("Static member with groupInstanceId=%s and unknown member id joins group %s in %s state. "
                         "Replacing previously mapped member %s with this groupInstanceId.",
                         group_instance_id, group.group_id, group.state.value, old)
                self._update_static_member_and_rebalance(group, old, new_member_id, group_instance_id, protocols,
                                                         rebalance_timeout_ms, session_timeout_ms, callback, reason)
            else:
                self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, new_member_id,
                                               group_instance_id, client_id, client_host, protocol_type,
                                               protocols, group, callback, reason)
        elif require_known:
            # KIP-394: register the id as pending and ask the client to rejoin with it
            group.pending_members.add(new_member_id)
            self._add_pending_member_expiration(group, new_member_id, session_timeout_ms)
            callback(JoinGroupResult(new_member_id, ErrorCode.member_id_required))
        else:
            self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, new_member_id, None,
                                           client_id, client_host, protocol_type, protocols, group, callback,
                                           reason)

    def _do_current_member_join_group(self, group: GroupMetadata, member_id: str, group_instance_id: str | None,
                                      client_id: str, client_host: str, rebalance_timeout_ms: int,
                                      session_timeout_ms: int, protocol_type: str,
                                      protocols: list[tuple[str, bytes]], callback: JoinCallback,
                                      reason: str) -> None:
        if group.is_state(GroupState.DEAD):
            callback(JoinGroupResult(member_id, ErrorCode.coordinator_not_available))
            return
        if not group.supports_protocols(protocol_type, {n for n, _ in protocols}):
            callback(JoinGroupResult(member_id, ErrorCode.inconsistent_group_protocol))
            return
        if member_id in group.pending_members:
            # a pending member (MEMBER_ID_REQUIRED) rejoining with its id is accepted
            self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, member_id, group_instance_id,
                                           client_id, client_host, protocol_type, protocols, group, callback,
                                           reason)
            return
        err = group.validate_member(member_id, group_instance_id, "join-group")
        if err is not None:
            callback(JoinGroupResult(member_id, err))
            return
        member = group.get(member_id)
        st = group.state
        if st is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                              callback, f"Member {member_id} joining group during {st.value}; "
                                              f"client reason: {reason}")
        elif st is GroupState.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # it may not have received its JoinGroup response: answer with the current generation
                callback(self._join_result(group, member_id, include_members=group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, callback,
                                                  f"Updating metadata for member {member_id} during {st.value}")
        elif st is GroupState.STABLE:
            if group.is_leader(member_id):
                # the leader's JoinGroup forces a rebalance (topic metadata changes, for instance)
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, callback,
                                                  f"Leader {member_id} re-joining group during {st.value}; "
                                                  f"client reason: {reason}")
            elif not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, callback,
                                                  f"Updating metadata for member {member_id} during {st.value}")
            else:
                callback(self._join_result(group, member_id, include_members=False))
        else:  # Empty or Dead: let the member reset its generation and rejoin
            log.warning("Attempt to add rejoining member %s of group %s in unexpected group state %s",
                        member_id, group.group_id, st.value)
            callback(JoinGroupResult(member_id, ErrorCode.unknown_member_id))

    def _join_result(self, group: GroupMetadata, member_id: str, include_members: bool,
                     skip_assignment: bool = False) -> JoinGroupResult:
        return JoinGroupResult(
            member_id, ErrorCode.none, group.generation_id, group.protocol_type, group.protocol_name,
            group.leader_id or "", skip_assignment,
            group.current_member_metadata() if include_members else [],
        )


    def _add_member_and_rebalance(self, rebalance_timeout_ms: int, session_timeout_ms: int, member_id: str,
                                  group_instance_id: str | None, client_id: str, client_host: str,
                                  protocol_type: str, protocols: list[tuple[str, bytes]], group: GroupMetadata,
                                  callback: JoinCallback, reason: str) -> None:
        member = MemberMetadata(member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                                session_timeout_ms, protocol_type, protocols)
        member.is_new = True
        if group.is_state(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True  # the initial delay may be extended
        group.add(member, callback)
        # New members cannot heartbeat yet and muted sockets hide disconnects: their JoinGroup
        # times out after NewMemberJoinTimeoutMs instead (they retry if still alive).
        self._complete_and_schedule_next_expiration(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"Adding new member {member_id} with group instance id "
                                             f"{group_instance_id}; client reason: {reason}")

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                     protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                                     session_timeout_ms: int, callback: JoinCallback, reason: str) -> None:
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        self._maybe_prepare_rebalance(group, reason)

    def _update_static_member_and_rebalance(self, group: GroupMetadata, old_member_id: str, new_member_id: str,
                                            group_instance_id: str, protocols: list[tuple[str, bytes]],
                                            rebalance_timeout_ms: int, session_timeout_ms: int,
                                            callback: JoinCallback, reason: str) -> None:
        member = group.replace_static_member(group_instance_id, old_member_id, new_member_id)
        # the old id's heartbeat expires without effect; schedule one for the new id
        self._complete_and_schedule_next_heartbeat_expiration(group, member)
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        st = group.state
        if st is GroupState.STABLE:
            # no rebalance unless the group's protocol of the next generation would change
            if group.protocol_name == group.select_protocol():
                log.info("Static member %s of group %s rejoined during Stable without changing the protocol: "
                         "no rebalance", group_instance_id, group.group_id)
                self._store_group(group)
                leader = group.is_leader(new_member_id)
                # KIP-814: a static leader gets the members and skip_assignment
                group.maybe_invoke_join_callback(member, self._join_result(group, new_member_id, leader, leader))
            else:
                self._maybe_prepare_rebalance(group, f"Group's selectedProtocol will change because static member "
                                                     f"{new_member_id} with instance id {group_instance_id} joined "
                                                     f"with change of protocol; client reason: {reason}")
        elif st is GroupState.COMPLETING_REBALANCE:
            # the leader may already be assigning for the old id: rebalance again
            self._prepare_rebalance(group, f"Updating metadata for static member {new_member_id} with instance "
                                           f"id {group_instance_id}; client reason: {reason}")
        # PreparingRebalance: the member simply waits for the join phase to end

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_state(GroupState.COMPLETING_REBALANCE):
            # members waiting for SyncGroup must rejoin
            self._reset_and_propagate_assignment_error(group, ErrorCode.rebalance_in_progress)
        self._remove_sync_expiration(group)
        if group.is_state(GroupState.EMPTY):
            delay = self.initial_rebalance_delay_ms
            op: DelayedJoin = InitialDelayedJoin(self, group, delay, delay,
                                                 max(group.rebalance_timeout_ms() - delay, 0))
        else:
            op = DelayedJoin(self, group, group.rebalance_timeout_ms())
        group.transition_to(GroupState.PREPARING_REBALANCE, self._now())
        log.info("Preparing to rebalance group %s in state PreparingRebalance with old generation %s "
                 "(reason: %s)", group.group_id, group.generation_id, reason)
        self.rebalance_purgatory.try_complete_else_watch(op, [join_key(group.group_id)])

    def on_complete_join(self, group: GroupMetadata) -> None:
        """GroupCoordinator.onCompleteJoin: drop dynamic members that did not rejoin, elect, answer."""
        if group.is_state(GroupState.DEAD):
            return
        for m in [m for m in group.not_yet_rejoined_members() if not m.is_static]:
            group.remove(m.member_id)
            self._remove_heartbeat_for_leaving_member(group, m.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # nobody rejoined: wait another rebalance timeout for the session timeouts to clear them
            log.error("Group %s could not complete rebalance because no members rejoined", group.group_id)
            self.rebalance_purgatory.try_complete_else_watch(
                DelayedJoin(self, group, group.rebalance_timeout_ms()), [join_key(group.group_id)])
            return
        group.init_next_generation(self._now())
        self.rebalances += 1
        if group.is_state(GroupState.EMPTY):
            log.info("Group %s with generation %s is now empty", group.group_id, group.generation_id)
            self._store_group(group)
            return
        log.info("Stabilized group %s generation %s with %s members", group.group_id, group.generation_id,
                 group.size())
        for member in list(group.members.values()):
            result = self._join_result(group, member.member_id, include_members=group.is_leader(member.member_id))
            group.maybe_invoke_join_callback(member, result)
            self._complete_and_schedule_next_heartbeat_expiration(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self.rebalance_purgatory.try_complete_else_watch(
            DelayedSync(self, group, group.generation_id, group.rebalance_timeout_ms()), [sync_key(group.group_id)])

    # -- SyncGroup --------------------------------------------------------------------------------
    def sync_group(self, node_id: int, group_id: str, generation_id: int, member_id: str,
                          protocol_type: str | None, protocol_name: str | None, group_instance_id: str | None,
                          assignments: dict[str, bytes], callback: SyncCallback) -> None:
        err = self.registry.validate_group_status(group_id, node_id)
        if err is ErrorCode.coordinator_load_in_progress:
            # the state of the rebalance is lost while loading: rejoin without rediscovering the
            # coordinator (older clients do not expect COORDINATOR_LOAD_IN_PROGRESS here)
            err = ErrorCode.rebalance_in_progress
        if err is not None:
            callback(SyncGroupResult(err))
            return
        group = self._group(group_id)
        if group is None:
            callback(SyncGroupResult(ErrorCode.unknown_member_id))
            return
        if group.is_state(GroupState.DEAD):
            callback(SyncGroupResult(ErrorCode.coordinator_not_available))
            return
        err = group.validate_member(member_id, group_instance_id, "sync-group")
        if err is not None:
            callback(SyncGroupResult(err))
            return
        if generation_id != group.generation_id:
            callback(SyncGroupResult(ErrorCode.illegal_generation))
            return
        if (protocol_type is not None and group.protocol_type != protocol_type) or (
                protocol_name is not None and group.protocol_name != protocol_name):
            callback(SyncGroupResult(ErrorCode.inconsistent_group_protocol))
            return
        st = group.state
        if st is GroupState.EMPTY:
            callback(SyncGroupResult(ErrorCode.unknown_member_id))
        elif st is GroupState.PREPARING_REBALANCE:
            callback(SyncGroupResult(ErrorCode.rebalance_in_progress))
        elif st is GroupState.COMPLETING_REBALANCE:
            group.get(member_id).awaiting_sync_callback = callback
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                log.info("Assignment received from leader %s for group %s for generation %s. The group has %s "
                         "members, %s of which are static.", member_id, group_id, group.generation_id,
                         group.size(), len(group.static_members))
                assignment = {mid: assignments.get(mid, b"") for mid in group.members}
                missing = [mid for mid in group.members if mid not in assignments]
                if missing:
                    log.warning("Setting empty assignments for members %s of %s for generation %s",
                                missing, group_id, group.generation_id)
                for mid, data in assignment.items():
                    group.members[mid].assignment = data
                self._store_group(group)
                self._propagate_assignment(group, ErrorCode.none)
                group.transition_to(GroupState.STABLE, self._now())
        else:  # Stable: return the current assignment
            self._remove_pending_sync_member(group, member_id)
            member = group.get(member_id)
            callback(SyncGroupResult(ErrorCode.none, group.protocol_type, group.protocol_name, member.assignment))
            self._complete_and_schedule_next_heartbeat_expiration(group, member)

    def _propagate_assignment(self, group: GroupMetadata, error: ErrorCode) -> None:
        ok = error is ErrorCode.none
        for member in list(group.members.values()):
            result = SyncGroupResult(error, group.protocol_type if ok else None, group.protocol_name if ok else None,
                                     member.assignment)
            if group.maybe_invoke_sync_callback(member, result):
                # the session restarts once the member has its assignment
                self._complete_and_schedule_next_heartbeat_expiration(group, member)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: ErrorCode) -> None:
        for m in group.members.values():
            m.assignment = b""
        self._propagate_assignment(group, error)

    def _remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        self.rebalance_purgatory.check_and_complete(sync_key(group.group_id))

    def _remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.pending_sync_members.clear()
        self.rebalance_purgatory.check_and_complete(sync_key(group.group_id))

    def on_expire_pending_sync(self, group: GroupMetadata, generation_id: int) -> None:
        if generation_id != group.generation_id:
            return
        if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        if group.pending_sync_members:
            pending = sorted(group.pending_sync_members)
            for mid in pending:
                group.remove(mid)
                self._remove_heartbeat_for_leaving_member(group, mid)
            self._prepare_rebalance(group, f"Removing {pending} on pending sync request expiration")

    # -- Heartbeat --------------------------------------------------------------------------------
    def heartbeat(self, node_id: int, group_id: str, member_id: str, group_instance_id: str | None,
                         generation_id: int) -> ErrorCode:
        err = self.registry.validate_group_status(group_id, node_id)
        if err is ErrorCode.coordinator_load_in_progress:
            return ErrorCode.none  # the group is still loading: answered blindly, as Kafka does
        if err is not None:
            return err
        group = self._group(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        if group.is_state(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        err = group.validate_member(member_id, group_instance_id, "heartbeat")
        if err is not None:
            return err
        if generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        st = group.state
        if st is GroupState.EMPTY:
            return ErrorCode.unknown_member_id
        self._complete_and_schedule_next_heartbeat_expiration(group, group.get(member_id))
        return ErrorCode.rebalance_in_progress if st is GroupState.PREPARING_REBALANCE else ErrorCode.none

    def reschedule_member_heartbeat(self, group: GroupMetadata, member_id: str) -> None:
        """GroupMetadataManager.rescheduleClassicGroupMemberHeartbeat: an offset commit of a member
        of a Stable or PreparingRebalance group also counts as its heartbeat."""
        self._complete_and_schedule_next_heartbeat_expiration(group, group.get(member_id))

    def _complete_and_schedule_next_heartbeat_expiration(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self._complete_and_schedule_next_expiration(group, member, member.session_timeout_ms)

    def _complete_and_schedule_next_expiration(self, group: GroupMetadata, member: MemberMetadata,
                                               timeout_ms: int) -> None:
        key = member_key(group.group_id, member.member_id)
        member.heartbeat_satisfied = True
        self.heartbeat_purgatory.check_and_complete(key)
        member.heartbeat_satisfied = False
        self.heartbeat_purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member.member_id, False, timeout_ms), [key])

    def _add_pending_member_expiration(self, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
        self.heartbeat_purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member_id, True, timeout_ms), [member_key(group.group_id, member_id)])

    def _remove_heartbeat_for_leaving_member(self, group: GroupMetadata, member_id: str) -> None:
        self.heartbeat_purgatory.cancel_for_key(member_key(group.group_id, member_id))

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None:
        if group.is_state(GroupState.DEAD):
            return
        if is_pending:
            log.info("Pending member %s in group %s has been removed after session timeout expiration.",
                     member_id, group.group_id)
            self._remove_pending_member_and_update_group(group, member_id)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        self._expire_member(group, member)

    def _expire_member(self, group: GroupMetadata, member: MemberMetadata) -> None:
        log.info("Member %s in group %s has failed, removing it from the group", member.member_id, group.group_id)
        self._remove_member_and_update_group(group, member,
                                             f"removing member {member.member_id} on heartbeat expiration")

    def expel(self, group_id: str, member_id: str) -> bool:
        """The admin API's expel: the member's session expires now, whether or not its heartbeat is
        due (on_expire_heartbeat's removal: the group rebalances without it). False: no such member."""
        group = self._group(group_id)
        if group is None or group.is_state(GroupState.DEAD):
            return False
        self._remove_heartbeat_for_leaving_member(group, member_id)
        if member_id in group.pending_members:
            self.on_expire_heartbeat(group, member_id, True)
            return True
        member = group.members.get(member_id)
        if member is None:
            return False
        self._expire_member(group, member)
        return True

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata, reason: str) -> None:
        # a new member may time out while its JoinGroup waits: answer it so it can retry
        group.maybe_invoke_join_callback(member, JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.unknown_member_id))
        group.remove(member.member_id)
        st = group.state
        if st in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif st is GroupState.PREPARING_REBALANCE:
            self.rebalance_purgatory.check_and_complete(join_key(group.group_id))

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        group.remove(member_id)
        if group.is_state(GroupState.PREPARING_REBALANCE):
            self.rebalance_purgatory.check_and_complete(join_key(group.group_id))

    # -- LeaveGroup ---------------------------------------------------------------------------------
    def leave_group(self, node_id: int, group_id: str,
                    leaving: list[tuple[str, str | None, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
        """(top-level error, one error per leaving (member id, instance id, reason))."""
        err = self.registry.validate_group_status(group_id, node_id)
        if err is not None:
            return err, []
        group = self._group(group_id)
        if group is None:
            return ErrorCode.none, [ErrorCode.unknown_member_id for _ in leaving]
        if group.is_state(GroupState.DEAD):
            return ErrorCode.coordinator_not_available, []
        out = []
        for member_id, instance_id, reason in leaving:
            why = reason or "not provided"
            if member_id == UNKNOWN_MEMBER_ID:
                # administrative removal by group.instance.id (KIP-345)
                current = group.current_static_member_id(instance_id) if instance_id is not None else None
                if current is None:
                    out.append(ErrorCode.unknown_member_id)
                else:
                    self._remove_current_member(group, current, why)
                    out.append(ErrorCode.none)
            elif member_id in group.pending_members:
                self._remove_pending_member_and_update_group(group, member_id)
                self._remove_heartbeat_for_leaving_member(group, member_id)
                out.append(ErrorCode.none)
            else:
                e = group.validate_member(member_id, instance_id, "leave-group")
                if e is None:
                    self._remove_current_member(group, member_id, why)
                    e = ErrorCode.none
                out.append(e)
        return ErrorCode.none, out

    def _remove_current_member(self, group: GroupMetadata, member_id: str, reason: str) -> None:
        member = group.get(member_id)
        member.is_leaving = True
        self._remove_member_and_update_group(group, member, f"Removing member {member_id} on LeaveGroup; "
                                                            f"client reason: {reason}")
        self._remove_heartbeat_for_leaving_member(group, member_id)
        log.info("Member %s has left group %s through explicit LeaveGroup; client reason: %s",
                 member_id, group.group_id, reason)

    # -- storing and moving ---------------------------------------------------------------------------
    def _store_group(self, group: GroupMetadata) -> None:
        """What GroupMetadataManager.storeGroup writes to __consumer_offsets (loaded after a move)."""
        group.stored = {
            "generation_id": group.generation_id,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "leader_id": group.leader_id,
            "members": [
                (m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                 m.session_timeout_ms, m.protocol_type, list(m.supported_protocols), m.assignment)
                for m in group.members.values()
            ],
        }

    def on_coordinator_moved(self, group: Group, old_node_id: int, new_node_id: int) -> None:
        """The registry's listener: a classic group whose coordinator changed is unloaded and loaded
        again on the new one (with no live replica, when one comes back).  A consumer group's records
        are all in __consumer_offsets: its members carry on with the new coordinator."""
        if group.group_type is not GroupType.CLASSIC:
            return
        old_group = cast(GroupMetadata, group)
        self._unload(old_group)
        if new_node_id < 0:
            return
        self.registry.put(self._load(old_group))
        log.info("Group %s moved to coordinator %s", group.group_id, new_node_id)

    def _unload(self, group: GroupMetadata) -> None:
        """GroupCoordinator.onGroupUnloaded."""
        if group.is_state(GroupState.DEAD):
            return
        previous = group.state
        group.transition_to(GroupState.DEAD, self._now())
        if previous is GroupState.PREPARING_REBALANCE:
            for m in list(group.members.values()):
                group.maybe_invoke_join_callback(m, JoinGroupResult(m.member_id, ErrorCode.not_coordinator))
            self.rebalance_purgatory.check_and_complete(join_key(group.group_id))
        elif previous in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            for m in list(group.members.values()):
                group.maybe_invoke_sync_callback(m, SyncGroupResult(ErrorCode.not_coordinator))
        for mid in list(group.members) + list(group.pending_members):
            self._remove_heartbeat_for_leaving_member(group, mid)
        for key in (join_key(group.group_id), sync_key(group.group_id)):
            self.rebalance_purgatory.cancel_for_key(key)

    def _load(self, old: GroupMetadata) -> GroupMetadata:
        """GroupMetadataManager.loadGroup + GroupCoordinator.onGroupLoaded, from the stored record."""
        g = GroupMetadata(old.group_id, self._now())
        g.offsets = old.offsets
        stored = old.stored
        if stored is None or not stored["members"]:
            if stored is not None:
                g.generation_id = stored["generation_id"]
                g.protocol_type = stored["protocol_type"]
            g.stored = stored
            return g
        g.generation_id = stored["generation_id"]
        g.protocol_name = stored["protocol_name"]
        for (mid, iid, cid, host, rto, sto, ptype, protos, assignment) in stored["members"]:
            m = MemberMetadata(mid, iid, cid, host, rto, sto, ptype, protos)
            m.assignment = assignment
            g.add(m, None)
        g.protocol_type = stored["protocol_type"]
        g.leader_id = stored["leader_id"]
        g.state = GroupState.STABLE
        g.subscribed_topics = g.compute_subscribed_topics()
        g.stored = stored
        for m in g.members.values():
            self._complete_and_schedule_next_heartbeat_expiration(g, m)
        return g

