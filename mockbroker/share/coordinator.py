"""The share-group half of Kafka 4.4's group coordinator: ``GroupMetadataManager.shareGroupHeartbeat``
and ``shareGroupLeave``, with what ``GroupCoordinatorService`` does around them.

* The request is checked first (``throwIfShareGroupHeartbeatRequestIsInvalid``: INVALID_REQUEST),
  then the coordinator (``validate_group_status``: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, ...).
* Epoch 0 joins (the group is created; GROUP_MAX_SIZE_REACHED past group.share.max.size), a known
  member must send its epoch or the previous one (FENCED_MEMBER_EPOCH), an unknown one gets
  UNKNOWN_MEMBER_ID, a group of another type GROUP_ID_NOT_FOUND; epoch -1 leaves.
* A change of subscription or of the subscribed topics' partitions bumps the group epoch, and the
  target assignment is computed again by the ``SimpleAssignor`` (``assignor.py``) over the
  partitions whose share-group state is initialized.  A share member moves to its target at once.
* After answering, the partitions of the subscribed topics not yet initialized are initialized in
  the share coordinator (``persisterInitialize``, start offset -1: the leader resets it by
  share.auto.offset.reset); the next heartbeat finds them (``initializedAssignmentPending``) and
  assigns them, so a member gets its partitions on its second heartbeat, as with Kafka.
* A member that does not heartbeat within share.session.timeout.ms (the group's, else the
  broker's) is fenced, on the heartbeat purgatory's timer (the broker's clock).
"""

from __future__ import annotations

import logging
from functools import partial
import uuid
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode

from ..common.clock import Clock
from ..group.assignors import Assignment
from ..group.group import can_compute_next_target_assignment
from ..group.registry import GroupRegistry
from ..state.metadata import ClusterMetadata
from ..purgatory import DelayedDeadline, DelayedOperationPurgatory
from .assignor import assign_simple
from .config import ShareGroupConfigs
from .group import ShareGroup, ShareGroupMember
from .persister import SharePersister

log = logging.getLogger("mockbroker.share")

LEAVE_GROUP_MEMBER_EPOCH = -1


@dataclass(slots=True)
class ShareGroupHeartbeatResult:
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


class HeartbeatError(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message


@dataclass(slots=True)
class ShareGroupDescription:
    """ShareGroupDescribeResponseData.DescribedGroup."""

    group_id: str
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: list[ShareGroupMember] = field(default_factory=list)




def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("share-session", group_id, member_id)


def _empty(value: str | None) -> bool:
    """Utils.throwIfEmptyString: a string given but blank."""
    return value is not None and not value.strip()


class ShareGroupCoordinator:
    """Share groups; they live in the group registry with the classic and consumer groups."""

    def __init__(self, registry: GroupRegistry, metadata: ClusterMetadata, clock: Clock,
                 heartbeat_purgatory: DelayedOperationPurgatory, configs: ShareGroupConfigs,
                 persister: SharePersister, initial_epoch: int = 1, assignment_interval: bool = True) -> None:
        self.registry = registry
        self.initial_epoch = initial_epoch  # a new group's epoch (group.group.initial_group_epoch)
        self.assignment_interval = assignment_interval  # share.assignment.interval.ms applies (Kafka 4.3+)
        self.metadata = metadata
        self.clock = clock
        self.heartbeat_purgatory = heartbeat_purgatory
        self.configs = configs
        self.persister = persister
        self.rebalances = 0  # ShareGroupRebalances

    def group(self, group_id: str) -> ShareGroup | None:
        g = self.registry.get(group_id)
        return g if isinstance(g, ShareGroup) else None

    # -- ShareGroupHeartbeat ----------------------------------------------------------------------
    def heartbeat(self, node_id: int, req: Any, client_id: str, client_host: str) -> ShareGroupHeartbeatResult:
        try:
            return self._heartbeat(node_id, req, client_id, client_host)
        except HeartbeatError as e:
            return ShareGroupHeartbeatResult(e.error, e.message)

    def _heartbeat(self, node_id: int, req: Any, client_id: str, client_host: str) -> ShareGroupHeartbeatResult:
        if _empty(req.member_id):
            raise HeartbeatError(ErrorCode.invalid_request, "MemberId can't be empty.")
        if _empty(req.group_id):
            raise HeartbeatError(ErrorCode.invalid_request, "GroupId can't be empty.")
        if _empty(req.rack_id):
            raise HeartbeatError(ErrorCode.invalid_request, "RackId can't be empty.")
        if req.member_epoch == 0:
            if not req.subscribed_topic_names:
                raise HeartbeatError(ErrorCode.invalid_request, "SubscribedTopicNames must be set in first request.")
        elif req.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise HeartbeatError(ErrorCode.invalid_request, "MemberEpoch is invalid.")
        err = self.registry.validate_group_status(req.group_id, node_id)
        if err is not None:
            raise HeartbeatError(err)
        if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return self._leave(req.group_id, req.member_id)
        group_id: str = req.group_id
        member_id: str = req.member_id
        group = self.get_or_maybe_create(group_id, req.member_epoch == 0)
        member = group.members.get(member_id)
        bump = False
        if member is None:
            if req.member_epoch != 0:
                raise HeartbeatError(ErrorCode.unknown_member_id,
                                     f"Member {member_id} is not a member of group {group_id}.")
            max_size = self.configs.broker_int("group.share.max.size", 200)
            if len(group.members) >= max_size:
                raise HeartbeatError(ErrorCode.group_max_size_reached,
                                     f"The share group has reached its maximum capacity of {max_size} members.")
            member = ShareGroupMember(member_id)
            group.members[member_id] = member
            bump = True
            log.info("[GroupId %s] Member %s joins the share group using the share protocol.", group_id, member_id)
        else:
            self._check_epoch(member, req.member_epoch)
        before = {t: set(ps) for t, ps in member.assigned.items()}
        member.client_id, member.client_host = client_id, client_host
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.subscribed_topic_names is not None and \
                sorted(req.subscribed_topic_names) != sorted(member.subscribed_topic_names):
            member.subscribed_topic_names = list(req.subscribed_topic_names)
            bump = True
        metadata = self._subscription_metadata(group)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            bump = True
        if group.assignment_epoch >= group.group_epoch and self._initialized_assignment_pending(group):
            bump = True
        if bump:
            group.group_epoch += 1
            self.rebalances += 1
        if group.group_epoch > group.assignment_epoch and can_compute_next_target_assignment(
                group.assignment_timestamp_ms, self._assignment_interval_ms(group_id), self.clock.time_ms()):
            self._compute_target(group)
        # a share member takes its target at once (no revocation first)
        target = group.target.get(member_id, {})
        if member.member_epoch != group.assignment_epoch or member.assigned != target:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
            member.assigned = {t: set(ps) for t, ps in target.items()}
        self._schedule(group_id, member_id)
        result = ShareGroupHeartbeatResult(member_id=member_id, member_epoch=member.member_epoch,
                                           heartbeat_interval_ms=self.configs.heartbeat_interval_ms(group_id))
        if req.member_epoch == 0 or req.subscribed_topic_names is not None or before != member.assigned:
            result.assignment = {t: set(ps) for t, ps in member.assigned.items()}
        self._maybe_initialize(group)
        return result

    def get_or_maybe_create(self, group_id: str, create: bool) -> ShareGroup:
        """getOrMaybeCreateShareGroup: GROUP_ID_NOT_FOUND for an absent group (unless created) or one of
        another type."""
        existing = self.registry.get(group_id)
        if existing is None:
            if not create:
                raise HeartbeatError(ErrorCode.group_id_not_found, f"Share group {group_id} not found.")
            group = ShareGroup(group_id, self.deleted, self.initial_epoch)
            self.registry.put(group)
            return group
        if not isinstance(existing, ShareGroup):
            raise HeartbeatError(ErrorCode.group_id_not_found, f"Group {group_id} is not a share group.")
        return existing

    @staticmethod
    def _check_epoch(member: ShareGroupMember, received: int) -> None:
        """throwIfShareGroupMemberEpochIsInvalid."""
        if received == 0:
            return
        if received > member.member_epoch:
            raise HeartbeatError(ErrorCode.fenced_member_epoch,
                                 f"The share group member has a greater member epoch ({received}) than the one known "
                                 f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                                 "partitions and rejoin.")
        if received < member.member_epoch and received != member.previous_member_epoch:
            raise HeartbeatError(ErrorCode.fenced_member_epoch,
                                 f"The share group member has a smaller member epoch ({received}) than the one known "
                                 f"by the group coordinator ({member.member_epoch}), and it does not match the "
                                 f"previous member epoch ({member.previous_member_epoch}). The member must abandon "
                                 "all its partitions and rejoin.")

    def _subscription_metadata(self, group: ShareGroup) -> dict[str, tuple[uuid.UUID, int]]:
        """The subscribed topics that exist, with their ids and partition counts (the metadata hash)."""
        out = {}
        for name in group.subscribed_topics():
            topic = self.metadata.topics.get(name)
            if topic is not None:
                out[name] = (topic.topic_id, len(topic.partitions))
        return out

    def _subscribed_initialized(self, group: ShareGroup) -> dict[uuid.UUID, set[int]]:
        ids = {tid for tid, _n in group.subscription_metadata.values()}
        return {tid: set(ps) for tid, ps in group.initialized.items() if tid in ids and ps}

    def _initialized_assignment_pending(self, group: ShareGroup) -> bool:
        """initializedAssignmentPending: initialized partitions of subscribed topics the target lacks."""
        if not group.members:
            return False
        assigned: dict[uuid.UUID, set[int]] = {}
        for a in group.target.values():
            for tid, ps in a.items():
                assigned.setdefault(tid, set()).update(ps)
        return any(assigned.get(tid) != ps for tid, ps in self._subscribed_initialized(group).items())

    def _assignment_interval_ms(self, group_id: str) -> int:
        """share.assignment.interval.ms (Kafka 4.3+; 0 before, ``assignment_interval_applies``)."""
        return self.configs.assignment_interval_ms(group_id) if self.assignment_interval else 0

    def _compute_target(self, group: ShareGroup) -> None:
        subscriptions = {}
        for m in group.members.values():
            subscriptions[m.member_id] = {group.subscription_metadata[t][0] for t in m.subscribed_topic_names
                                          if t in group.subscription_metadata}
        group.target = assign_simple(subscriptions, self._subscribed_initialized(group), group.target)
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp_ms = self.clock.time_ms()

    def _maybe_initialize(self, group: ShareGroup) -> None:
        """maybeCreateInitializeShareGroupStateRequest + persisterInitialize: the subscribed
        partitions not initialized yet get their share-group state (start offset -1)."""
        for _name, (tid, n) in sorted(group.subscription_metadata.items()):
            done = group.initialized.setdefault(tid, set())
            for p in range(n):
                if p in done:
                    continue
                key = (group.group_id, tid, p)
                if self.persister.initialized(key) or \
                        self.persister.initialize(key, group.group_epoch, -1) is ErrorCode.none:
                    done.add(p)

    def deleted(self, group: ShareGroup) -> None:
        for tid, ps in group.initialized.items():
            for p in ps:
                self.persister.delete((group.group_id, tid, p))
        group.initialized.clear()

    def _schedule(self, group_id: str, member_id: str) -> None:
        key = session_key(group_id, member_id)
        self.heartbeat_purgatory.cancel_for_key(key)
        self.heartbeat_purgatory.try_complete_else_watch(
            DelayedDeadline(self.configs.session_timeout_ms(group_id), partial(self.on_session_timeout, group_id, member_id)), [key])

    def on_session_timeout(self, group_id: str, member_id: str) -> None:
        group = self.group(group_id)
        if group is None or member_id not in group.members:
            return
        log.info("[GroupId %s] Member %s fenced from the group because its session expired.", group_id, member_id)
        self._remove_member(group, member_id)

    def expel(self, group_id: str, member_id: str) -> bool:
        """The admin API's expel: the member's session expires now (on_session_timeout: fenced, its
        partitions assigned to the others). False: no such member."""
        group = self.group(group_id)
        if group is None or member_id not in group.members:
            return False
        self.on_session_timeout(group_id, member_id)
        return True

    def _remove_member(self, group: ShareGroup, member_id: str) -> None:
        """shareGroupFenceMember: the member goes, the group epoch is bumped and the target computed
        again for those left."""
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        self.heartbeat_purgatory.cancel_for_key(session_key(group.group_id, member_id))
        group.group_epoch += 1
        group.subscription_metadata = self._subscription_metadata(group)
        if not group.members:
            group.target = {}
            group.assignment_epoch = group.group_epoch

    def _leave(self, group_id: str, member_id: str) -> ShareGroupHeartbeatResult:
        existing = self.registry.get(group_id)
        if not isinstance(existing, ShareGroup):
            raise HeartbeatError(ErrorCode.group_id_not_found,
                                 f"Share group {group_id} not found." if existing is None
                                 else f"Group {group_id} is not a share group.")
        if member_id not in existing.members:
            raise HeartbeatError(ErrorCode.unknown_member_id,
                                 f"Member {member_id} is not a member of group {group_id}.")
        log.info("[GroupId %s] Member %s left the share group.", group_id, member_id)
        self._remove_member(existing, member_id)
        return ShareGroupHeartbeatResult(member_id=member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH)

    # -- ShareGroupDescribe ------------------------------------------------------------------------
    def describe(self, node_id: int, group_id: str) -> ShareGroupDescription:
        err = self.registry.validate_group_status(group_id, node_id)
        if err is not None:
            return ShareGroupDescription(group_id, err)
        existing = self.registry.get(group_id)
        if not isinstance(existing, ShareGroup):
            return ShareGroupDescription(group_id, ErrorCode.group_id_not_found,
                                         f"Group {group_id} not found." if existing is None
                                         else f"Group {group_id} is not a share group.")
        return ShareGroupDescription(group_id, state=existing.state, group_epoch=existing.group_epoch,
                                     assignment_epoch=existing.assignment_epoch,
                                     members=list(existing.members.values()))
