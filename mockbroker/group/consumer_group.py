"""KIP-848 consumer groups: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

Mirrors the 4.x group coordinator's ``ConsumerGroup``, ``ConsumerGroupMember``,
``CurrentAssignmentBuilder`` and the parts of ``GroupMetadataManager`` that
serve the new protocol, at the level a client can observe:

* the group epoch is bumped when a member joins, leaves, is fenced or changes
  its subscription, or when a subscribed topic's partition count changes; the
  target assignment is then recomputed by the server-side assignor (``uniform``
  by default, or ``range``; ``assignors.py``) and the assignment epoch set to the group epoch;
* each member reconciles towards its target on its own heartbeats:
  partitions it must give up are revoked first (UNREVOKED_PARTITIONS, the
  member keeps its epoch until it stops reporting them), partitions still
  owned by another member are held back (UNRELEASED_PARTITIONS), and the
  member moves to the target epoch when nothing is left to revoke;
* a member is fenced after group.consumer.session.timeout.ms without a
  heartbeat, or after its rebalance timeout when it does not revoke; a
  static member (instance id) that leaves with epoch -2 keeps its assignment
  until the session timeout and a new member with the same instance id takes
  it over without a rebalance; an active instance id gives
  UNRELEASED_INSTANCE_ID;
* errors: INVALID_REQUEST (Kafka's request checks, with its messages),
  UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNSUPPORTED_ASSIGNOR,
  GROUP_MAX_SIZE_REACHED, GROUP_ID_NOT_FOUND for a classic group with members
  (online migration between protocols is not simulated);
* offsets: OffsetCommit takes the member epoch (STALE_MEMBER_EPOCH), and v9+
  is required of such members (UNSUPPORTED_VERSION otherwise).

Session and revocation deadlines are delayed operations in the coordinator's
heartbeat purgatory (Kafka uses its CoordinatorTimer for them).
"""

from __future__ import annotations

import enum
import functools
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import re2

from protocol.errors import ErrorCode

from ..apis.common import AUTHORIZED_OPS_NOT_REQUESTED
from ..purgatory import DelayedOperation
from .assignors import ASSIGNORS as ASSIGNOR_FUNCS
from .assignors import Assignment
from .metadata import GROUP_OPERATIONS, GroupState, OffsetAndMetadata

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

log = logging.getLogger("mockbroker.group")

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
ASSIGNORS = ("uniform", "range")


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


class HeartbeatError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


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


def _copy(a: Assignment) -> Assignment:
    return {t: set(ps) for t, ps in a.items() if ps}


def _subset(owned: Assignment, of: Assignment) -> bool:
    return all(ps <= of.get(t, set()) for t, ps in owned.items())


class ConsumerGroup:
    """A KIP-848 group; shares ``offsets`` and the offset-expiry surface with GroupMetadata."""

    protocol_type = "consumer"
    group_type = "consumer"

    def __init__(self, group_id: str, now_ms: int) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, Assignment] = {}
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        self.state_timestamp_ms: int | None = now_ms  # when it last became empty
        self.stored = None
        self.preferred_assignor = ASSIGNORS[0]

    # -- the surface GroupCoordinator uses for every group ----------------------------------
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

    def is_state(self, state: GroupState) -> bool:
        return state is GroupState.EMPTY and not self.members

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        pass  # a removed consumer group simply disappears

    def remove_expired_offsets(self, now_ms: int, retention_ms: int) -> list[tuple[str, int]]:
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
        for tp in gone:
            del self.offsets[tp]
        return gone

    # -- partitions -------------------------------------------------------------------------------
    def owner_of(self, topic_id: uuid.UUID, partition: int) -> str | None:
        for m in self.members.values():
            if partition in m.assigned.get(topic_id, ()) or partition in m.pending_revocation.get(topic_id, ()):
                return m.member_id
        return None

    def subscribed_names(self, member: ConsumerGroupMember, topics: dict[str, Any]) -> set[str]:
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:  # validated when the heartbeat brought it
            rx = topic_regex(member.subscribed_topic_regex)
            names.update(t for t in topics if not t.startswith("__") and rx.fullmatch(t))
        return names


# -- timers ------------------------------------------------------------------------------------------
class DelayedMemberTimeout(DelayedOperation):
    """A consumer-group member's session or revocation deadline (cancelled by the next heartbeat)."""

    __slots__ = ("coordinator", "group_id", "member_id", "kind", "epoch")

    def __init__(self, coordinator: "ConsumerGroupCoordinator", group_id: str, member_id: str, kind: str,
                 epoch: int, timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.coordinator = coordinator
        self.group_id = group_id
        self.member_id = member_id
        self.kind = kind
        self.epoch = epoch

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.coordinator.on_member_timeout(self.group_id, self.member_id, self.kind, self.epoch)


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # an invalid pattern is the client's error, answered INVALID_REQUEST


@functools.lru_cache(maxsize=1024)
def topic_regex(pattern: str) -> Any:
    """A subscription regex compiled with RE2, as Kafka uses RE2/J: linear time in the topic name,
    so a hostile pattern cannot stall the broker (Python's ``re`` backtracks exponentially)."""
    return re2.compile(pattern, _RE2_OPTIONS)


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-session", group_id, member_id)


def revocation_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-revocation", group_id, member_id)


class ConsumerGroupCoordinator:
    """The KIP-848 half of the coordinator; groups live in ``GroupCoordinator.groups``."""

    def __init__(self, gc: "GroupCoordinator", config: Any) -> None:
        self.gc = gc
        self.heartbeat_interval_ms: int = config["group.consumer.heartbeat.interval.ms"]
        self.session_timeout_ms: int = config["group.consumer.session.timeout.ms"]
        self.max_size: int = config["group.consumer.max.size"]
        self.assignors: list[str] = config["group.consumer.assignors"]

    # -- ConsumerGroupHeartbeat -----------------------------------------------------------------
    def heartbeat(self, node_id: int, version: int, req: Any, client_id: str, client_host: str) -> dict:
        try:
            return self._heartbeat(node_id, version, req, client_id, client_host)
        except HeartbeatError as e:
            return {"error_code": e.error, "error_message": e.message, "member_id": None, "member_epoch": -1,
                    "heartbeat_interval": 0, "assignment": None}

    def _validate(self, version: int, req: Any) -> None:
        """GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid."""
        def invalid(msg: str) -> HeartbeatError:
            return HeartbeatError(ErrorCode.invalid_request, msg)

        if not req.group_id:
            raise invalid("GroupId can't be empty.")
        if req.instance_id is not None and not req.instance_id:
            raise invalid("InstanceId can't be empty.")
        if req.rack_id is not None and not req.rack_id:
            raise invalid("RackId can't be empty.")
        epoch = req.member_epoch
        if version >= 1 and not req.member_id:
            raise invalid("MemberId can't be empty.")
        if epoch == 0:
            if rebalance_timeout_ms(req) == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.topic_partitions is None or len(req.topic_partitions) > 0:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and getattr(req, "subscribed_topic_regex", None) is None:
                raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif epoch > 0:
            if not req.member_id:
                raise invalid("MemberId can't be empty.")
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if req.instance_id is None:
                raise invalid("InstanceId can't be null.")
            if not req.member_id:
                raise invalid("MemberId can't be empty.")
        elif epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if not req.member_id:
                raise invalid("MemberId can't be empty.")
        else:
            raise invalid(f"MemberEpoch is invalid: {epoch}")
        regex = getattr(req, "subscribed_topic_regex", None)
        if regex is not None:
            try:
                topic_regex(regex)
            except re2.error as e:
                raise invalid(f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}.") from None
        if req.server_assignor is not None and req.server_assignor not in self.assignors:
            raise HeartbeatError(ErrorCode.unsupported_assignor,
                                 f"ServerAssignor {req.server_assignor} is not supported. "
                                 f"Supported assignors: {', '.join(self.assignors)}.")

    def _heartbeat(self, node_id: int, version: int, req: Any, client_id: str, client_host: str) -> dict:
        gc = self.gc
        self._validate(version, req)
        err = gc.validate_group_status(req.group_id, node_id)
        if err is not None:
            raise HeartbeatError(err, "")
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(req)
        group = self._get_or_maybe_create(req.group_id, req.member_epoch == 0)
        now = gc.clock.time_ms()
        member_id = req.member_id or f"{uuid.uuid4()}"  # v0: the coordinator names a new member
        member = group.members.get(member_id)
        owned = None if req.topic_partitions is None else {
            tp.topic_id: set(tp.partitions) for tp in req.topic_partitions if tp.partitions}
        bump = False
        if req.member_epoch == 0:
            if req.instance_id is not None:
                member, bump = self._static_join(group, member_id, req.instance_id)
            elif member is None:
                if len(group.members) >= self.max_size:
                    raise HeartbeatError(ErrorCode.group_max_size_reached,
                                         f"The consumer group has reached its maximum capacity of {self.max_size} members.")
                member = ConsumerGroupMember(member_id)
                group.members[member_id] = member
                bump = True
            else:  # a known member rejoining from scratch gives everything up
                self._release(member)
                member.member_epoch, member.previous_member_epoch = 0, -1
        else:
            if member is None:
                raise HeartbeatError(ErrorCode.unknown_member_id,
                                     f"Member {member_id} is not a member of group {group.group_id}.")
            self._check_epoch(member, req.member_epoch, owned)
        # the member's fields (a null field means "unchanged")
        member.client_id, member.client_host = client_id, client_host
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if rebalance_timeout_ms(req) != -1:
            member.rebalance_timeout_ms = rebalance_timeout_ms(req)
        if req.server_assignor is not None:
            member.server_assignor = req.server_assignor
        if req.subscribed_topic_names is not None and sorted(req.subscribed_topic_names) != sorted(
                member.subscribed_topic_names):
            member.subscribed_topic_names = list(req.subscribed_topic_names)
            bump = True
        regex = getattr(req, "subscribed_topic_regex", None)
        if regex is not None and regex != (member.subscribed_topic_regex or None):
            member.subscribed_topic_regex = regex or None
            bump = True
        metadata = self._subscription_metadata(group)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            bump = True
        if bump:
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group)
        before = (_copy(member.assigned), member.member_epoch)
        if (member.member_epoch != group.assignment_epoch or member.state is not MemberState.STABLE):
            self._reconcile(group, member, owned)
        self._schedule(group, member)
        full = (rebalance_timeout_ms(req) != -1 and (req.subscribed_topic_names is not None or regex is not None)
                and req.topic_partitions is not None)
        response: dict[str, Any] = {
            "error_code": ErrorCode.none, "error_message": None, "member_id": member.member_id,
            "member_epoch": member.member_epoch, "heartbeat_interval": self.heartbeat_interval_ms,
            "assignment": None,
        }
        if req.member_epoch == 0 or full or before[0] != _copy(member.assigned):
            response["assignment"] = {"topic_partitions": [
                {"topic_id": tid, "partitions": sorted(ps)} for tid, ps in sorted(member.assigned.items(),
                                                                                   key=lambda kv: str(kv[0]))]}
        if not group.members:
            group.state_timestamp_ms = now
        return response

    def _get_or_maybe_create(self, group_id: str, create: bool) -> ConsumerGroup:
        gc = self.gc
        existing = gc.groups.get(group_id)
        if isinstance(existing, ConsumerGroup):
            return existing
        if existing is not None:
            if existing.members or existing.pending_members:
                raise HeartbeatError(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")
            if not create:
                raise HeartbeatError(ErrorCode.unknown_member_id, f"Consumer group {group_id} not found.")
            group = ConsumerGroup(group_id, gc.clock.time_ms())
            group.offsets = existing.offsets  # an empty classic group is converted, its offsets kept
            gc.groups[group_id] = group
            return group
        if not create:
            raise HeartbeatError(ErrorCode.unknown_member_id, f"Consumer group {group_id} not found.")
        group = ConsumerGroup(group_id, gc.clock.time_ms())
        gc.groups[group_id] = group
        node = gc.coordinator_node(group_id)
        gc._owner[group_id] = node.node_id if node is not None else -1
        return group

    def _static_join(self, group: ConsumerGroup, member_id: str, instance_id: str) -> tuple[ConsumerGroupMember, bool]:
        old_id = group.static_members.get(instance_id)
        old = group.members.get(old_id) if old_id is not None else None
        if old is None:
            if member_id in group.members:
                raise HeartbeatError(ErrorCode.unknown_member_id, f"Member {member_id} already exists.")
            if len(group.members) >= self.max_size:
                raise HeartbeatError(ErrorCode.group_max_size_reached,
                                     f"The consumer group has reached its maximum capacity of {self.max_size} members.")
            m = ConsumerGroupMember(member_id, instance_id=instance_id)
            group.members[member_id] = m
            group.static_members[instance_id] = member_id
            return m, True
        if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise HeartbeatError(ErrorCode.unreleased_instance_id,
                                 f"Static member {old_id} with instance id {instance_id} is not released yet.")
        # the new incarnation takes the old one's place, epoch and assignment: no rebalance
        del group.members[old_id]
        self.gc.heartbeat_purgatory.cancel_for_key(session_key(group.group_id, old_id))
        self.gc.heartbeat_purgatory.cancel_for_key(revocation_key(group.group_id, old_id))
        old.member_id = member_id
        old.member_epoch = old.previous_member_epoch if old.previous_member_epoch >= 0 else 0
        group.members[member_id] = old
        group.static_members[instance_id] = member_id
        if old_id in group.target:
            group.target[member_id] = group.target.pop(old_id)
        return old, False

    def _check_epoch(self, member: ConsumerGroupMember, received: int, owned: Assignment | None) -> None:
        """GroupMetadataManager.throwIfMemberEpochIsInvalid."""
        if received > member.member_epoch:
            raise HeartbeatError(ErrorCode.fenced_member_epoch,
                                 f"The consumer group member has a greater member epoch ({received}) than the one "
                                 f"known by the group coordinator ({member.member_epoch}). The member must abandon "
                                 f"all its partitions and rejoin.")
        if received < member.member_epoch:
            # the previous epoch with a subset of the assignment: the bumped response was lost
            if received != member.previous_member_epoch or owned is None or not _subset(owned, member.assigned):
                raise HeartbeatError(ErrorCode.fenced_member_epoch,
                                     f"The consumer group member has a smaller member epoch ({received}) than the "
                                     f"one known by the group coordinator ({member.member_epoch}). The member must "
                                     f"abandon all its partitions and rejoin.")

    def _subscription_metadata(self, group: ConsumerGroup) -> dict[str, tuple[uuid.UUID, int]]:
        topics = self.gc.cluster.topics
        names: set[str] = set()
        for m in group.members.values():
            names |= group.subscribed_names(m, topics)
        return {n: (topics[n].topic_id, len(topics[n].partitions)) for n in sorted(names) if n in topics}

    def _compute_target(self, group: ConsumerGroup) -> None:
        topics = self.gc.cluster.topics
        assignor = next((m.server_assignor for m in group.members.values() if m.server_assignor), None)
        assignor = assignor or self.assignors[0]
        subs = {mid: group.subscribed_names(m, topics) for mid, m in group.members.items()}
        group.target = ASSIGNOR_FUNCS[assignor](subs, group.subscription_metadata, group.target)
        group.preferred_assignor = assignor
        group.assignment_epoch = group.group_epoch

    def _reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember, owned: Assignment | None) -> None:
        """CurrentAssignmentBuilder.build."""
        target_epoch = group.assignment_epoch
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if owned is None or self._owns_any(owned, member.pending_revocation):
                return  # still revoking
            self._next(group, member, min(member.member_epoch + 1, target_epoch), owned)
        else:
            self._next(group, member, member.member_epoch, owned)

    @staticmethod
    def _owns_any(owned: Assignment | None, pending: Assignment) -> bool:
        if owned is None:
            return True
        return any(owned.get(t, set()) & ps for t, ps in pending.items())

    def _next(self, group: ConsumerGroup, member: ConsumerGroupMember, epoch: int, owned: Assignment | None) -> None:
        """CurrentAssignmentBuilder.computeNextAssignment."""
        target = group.target.get(member.member_id, {})
        new_assigned: Assignment = {}
        revoke: Assignment = {}
        pending_assign: Assignment = {}
        unreleased = False
        for tid in set(target) | set(member.assigned):
            tgt = target.get(tid, set())
            cur = member.assigned.get(tid, set())
            keep = cur & tgt
            rev = cur - keep
            add = tgt - keep
            held = {p for p in add if (o := group.owner_of(tid, p)) is not None and o != member.member_id}
            if held:
                unreleased = True
                add -= held
            if keep:
                new_assigned[tid] = keep
            if rev:
                revoke[tid] = rev
            if add:
                pending_assign[tid] = add
        if revoke and self._owns_any(owned, revoke):
            member.state = MemberState.UNREVOKED_PARTITIONS
            self._set_epoch(member, epoch)
            member.assigned, member.pending_revocation = new_assigned, revoke
        else:
            for tid, ps in pending_assign.items():
                new_assigned.setdefault(tid, set()).update(ps)
            member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
            self._set_epoch(member, group.assignment_epoch)
            member.assigned, member.pending_revocation = new_assigned, {}

    @staticmethod
    def _set_epoch(member: ConsumerGroupMember, epoch: int) -> None:
        if epoch != member.member_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = epoch

    def _release(self, member: ConsumerGroupMember) -> None:
        member.assigned, member.pending_revocation = {}, {}
        member.state = MemberState.STABLE

    # -- deadlines ------------------------------------------------------------------------------------
    def _schedule(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        purgatory = self.gc.heartbeat_purgatory
        key = session_key(group.group_id, member.member_id)
        purgatory.cancel_for_key(key)
        purgatory.try_complete_else_watch(
            DelayedMemberTimeout(self, group.group_id, member.member_id, "session", member.member_epoch,
                                 self.session_timeout_ms), [key])
        rkey = revocation_key(group.group_id, member.member_id)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if not purgatory.is_watching(rkey):  # one deadline per revocation, not one per heartbeat
                purgatory.try_complete_else_watch(
                    DelayedMemberTimeout(self, group.group_id, member.member_id, "revocation", member.member_epoch,
                                         member.rebalance_timeout_ms), [rkey])
        else:
            purgatory.cancel_for_key(rkey)

    def on_member_timeout(self, group_id: str, member_id: str, kind: str, epoch: int) -> None:
        group = self.gc.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if kind == "revocation" and (member.state is not MemberState.UNREVOKED_PARTITIONS
                                     or member.member_epoch != epoch):
            return
        log.info(
            "[GroupId %s] Member %s fenced from the group because its %s timeout expired.", group_id, member_id,
            "session" if kind == "session" else "rebalance")
        self._remove_member(group, member)

    def _remove_member(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        if member.instance_id is not None and group.static_members.get(member.instance_id) == member.member_id:
            del group.static_members[member.instance_id]
        self.gc.heartbeat_purgatory.cancel_for_key(session_key(group.group_id, member.member_id))
        self.gc.heartbeat_purgatory.cancel_for_key(revocation_key(group.group_id, member.member_id))
        group.group_epoch += 1
        group.subscription_metadata = self._subscription_metadata(group)
        if not group.members:
            group.state_timestamp_ms = self.gc.clock.time_ms()
            group.assignment_epoch = group.group_epoch
            group.target = {}

    def _leave(self, req: Any) -> dict:
        group = self.gc.groups.get(req.group_id)
        member = group.members.get(req.member_id) if isinstance(group, ConsumerGroup) else None
        if member is None:
            raise HeartbeatError(ErrorCode.unknown_member_id,
                                 f"Member {req.member_id} is not a member of group {req.group_id}.")
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # a static member leaves temporarily: it keeps its assignment until the session expires
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            purgatory = self.gc.heartbeat_purgatory
            key = session_key(group.group_id, member.member_id)
            purgatory.cancel_for_key(key)
            purgatory.try_complete_else_watch(DelayedMemberTimeout(
                self, group.group_id, member.member_id, "session", member.member_epoch, self.session_timeout_ms), [key])
        else:
            self._remove_member(group, member)
        return {"error_code": ErrorCode.none, "error_message": None, "member_id": req.member_id,
                "member_epoch": req.member_epoch, "heartbeat_interval": 0, "assignment": None}

    # -- offsets ------------------------------------------------------------------------------------
    def validate_offset_commit(self, group: ConsumerGroup, member_id: str, member_epoch: int,
                               version: int) -> ErrorCode | None:
        """ConsumerGroup.validateOffsetCommit."""
        if member_epoch < 0 and not group.members:
            return None
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if version < 9:
            return ErrorCode.unsupported_version
        if member_epoch != member.member_epoch:
            return ErrorCode.stale_member_epoch
        return None

    def validate_offset_fetch(self, group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        if member_epoch < 0 and member_id is None:
            return None
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.unknown_member_id
        return ErrorCode.stale_member_epoch if member_epoch != member.member_epoch else None

    # -- ConsumerGroupDescribe -------------------------------------------------------------------------
    def describe(self, node_id: int, group_id: str, include_ops: bool) -> dict:
        out: dict[str, Any] = {"group_id": group_id, "error_code": ErrorCode.none, "error_message": None,
                               "group_state": "", "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "",
                               "members": [], "authorized_operations":
                                   GROUP_OPERATIONS if include_ops else AUTHORIZED_OPS_NOT_REQUESTED}
        err = self.gc.validate_group_status(group_id, node_id)
        if err is not None:
            out["error_code"] = err
            return out
        group = self.gc.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            out["error_code"] = ErrorCode.group_id_not_found
            out["error_message"] = (f"Group {group_id} not found." if group is None
                                    else f"Group {group_id} is not a consumer group.")
            return out
        names = {t.topic_id: n for n, t in self.gc.cluster.topics.items()}

        def assignment(a: Assignment) -> dict:
            return {"topic_partitions": [{"topic_id": tid, "topic_name": names.get(tid, ""),
                                          "partitions": sorted(ps)}
                                         for tid, ps in sorted(a.items(), key=lambda kv: str(kv[0]))]}

        out.update({
            "group_state": group.state.value, "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch, "assignor_name": group.preferred_assignor,
            "members": [{
                "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
                "subscribed_topic_names": m.subscribed_topic_names, "subscribed_topic_regex": m.subscribed_topic_regex,
                "assignment": assignment(m.assigned), "target_assignment": assignment(group.target.get(m.member_id, {})),
                "member_type": 1,  # consumer protocol (KIP-1099: -1 unknown, 0 classic, 1 consumer)
            } for m in group.members.values()],
        })
        return out


def rebalance_timeout_ms(req: Any) -> int:
    from protocol.codec import timedelta_ms

    value = req.rebalance_timeout
    return -1 if value is None else timedelta_ms(value)
