"""KIP-848 consumer groups: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

Mirrors the part of Kafka 4.x's ``GroupMetadataManager`` that serves the new protocol
(``consumerGroupHeartbeat``, ``consumerGroupDescribe``) and its ``CurrentAssignmentBuilder``:

* the group epoch is bumped when a member joins, leaves, is fenced or changes
  its subscription, or when a subscribed topic's partition count changes; the
  target assignment is then recomputed by the server-side assignor (``uniform``
  by default, or ``range``; ``assignors.py``) and the assignment epoch set to the group
  epoch, at most once per ``consumer.assignment.interval.ms`` (Kafka 4.3+, 1 s by default);
* each member reconciles towards its target on its own heartbeats, over the
  topics it subscribes to: partitions it must give up are revoked first
  (UNREVOKED_PARTITIONS, the member keeps its epoch until it stops reporting
  them), partitions still owned by another member are held back
  (UNRELEASED_PARTITIONS), and the member moves to the target epoch when
  nothing is left to revoke; a member whose subscription changed gives up the
  partitions of the topics it left at once, before any new target;
* a regex new to the group is resolved after the heartbeat that brought it (Kafka
  resolves it in the background), at most once every 10 s per group, again when
  topics were created or every group.consumer.regex.refresh.interval.ms (Kafka's
  10 minutes); the group epoch moves when what it matches changed; an invalid one
  is INVALID_REGULAR_EXPRESSION;
* a subscription is a set of names (one listed twice is one); a known member
  rejoining with epoch 0 keeps its epoch and assignment (Kafka checks no
  epoch then), and naming an instance id makes it static;
* a member is fenced after consumer.session.timeout.ms without a
  heartbeat (the group's config, else group.consumer.session.timeout.ms; read
  at each heartbeat, so an alteration holds from the member's next one, as in
  Kafka), and each heartbeat answers consumer.heartbeat.interval.ms (likewise), or after its rebalance timeout when it does not revoke; a
  static member (instance id) that leaves with epoch -2 keeps its assignment
  until the session timeout and a new member with the same instance id takes
  it over without a rebalance; an active instance id gives
  UNRELEASED_INSTANCE_ID;
* errors, with Kafka's messages and member epoch 0: INVALID_REQUEST (Kafka's
  request checks), UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNSUPPORTED_ASSIGNOR,
  GROUP_MAX_SIZE_REACHED (checked first), UNRELEASED_INSTANCE_ID,
  FENCED_INSTANCE_ID, GROUP_ID_NOT_FOUND for a heartbeat past the join to no
  group, a group of another type, or a classic group with members (online
  migration between protocols is not simulated); an empty classic group
  becomes a consumer group, keeping its offsets.

The groups live in the ``GroupRegistry`` with the classic ones; their offsets
are the ``OffsetMetadataManager``'s (``offsets.py``).  Session and revocation
deadlines are delayed operations in the heartbeat purgatory the classic
coordinator also uses (Kafka uses its CoordinatorTimer for them).
"""

from __future__ import annotations

import logging
from functools import partial
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from protocol.errors import ErrorCode

from ..common.clock import Clock
from ..purgatory import DelayedDeadline, DelayedOperationPurgatory
from .assignors import ASSIGNORS, Assignment, copy_assignment
from ..state.cluster_view import ClusterView
from . import consumer_regex
from .consumer_checks import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    HeartbeatError,
    rebalance_timeout_ms,
    validate_heartbeat,
)
from .consumer_assignment import reconcile
from .consumer_group import (
    ConsumerGroup,
    ConsumerGroupDescription,
    ConsumerGroupMember,
    MemberState,
)
from .group import GroupType, assignment_interval_applies, can_compute_next_target_assignment, initial_group_epoch
from .registry import GroupRegistry

log = logging.getLogger("mockbroker.group")



@dataclass(slots=True)
class ConsumerGroupHeartbeatResult:
    """What ConsumerGroupHeartbeat answers; ``assignment`` is None when the member's is unchanged."""

    error: ErrorCode
    error_message: str | None
    member_id: str | None = None
    member_epoch: int = 0  # an error answer: the schema's default
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


def _subset(owned: Assignment, of: Assignment) -> bool:
    return all(ps <= of.get(t, set()) for t, ps in owned.items())


# -- timers ------------------------------------------------------------------------------------------


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-session", group_id, member_id)


def revocation_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-revocation", group_id, member_id)


# the group configs the coordinator reads, and the broker config each falls back to
GROUP_CONFIG_FALLBACK = {
    "consumer.session.timeout.ms": "group.consumer.session.timeout.ms",
    "consumer.heartbeat.interval.ms": "group.consumer.heartbeat.interval.ms",
    "consumer.assignment.interval.ms": "group.consumer.assignment.interval.ms",
}


class ConsumerGroupCoordinator:
    """The KIP-848 half of GroupMetadataManager; its groups live in the registry with the classic ones."""

    def __init__(self, registry: GroupRegistry, cluster: ClusterView, clock: Clock,
                 heartbeat_purgatory: DelayedOperationPurgatory, config: Mapping[str, Any]) -> None:
        self.registry = registry
        self.cluster = cluster
        self.clock = clock
        self.heartbeat_purgatory = heartbeat_purgatory
        self.config = config
        self.max_size: int = config["group.consumer.max.size"]
        self.assignors: list[str] = config["group.consumer.assignors"]
        # the group's own configs (IncrementalAlterConfigs on the group); set by the cluster
        self.group_configs: Callable[[str], Mapping[str, str]] = lambda _gid: {}

    def group_config(self, group_id: str, name: str) -> int:
        """GroupMetadataManager.consumerGroupSessionTimeoutMs / consumerGroupHeartbeatIntervalMs: the
        group's value of ``name`` (GroupConfigManager), else the broker's."""
        value = self.group_configs(group_id).get(name)
        return int(value) if value is not None else int(self.config[GROUP_CONFIG_FALLBACK[name]])

    def _group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group of that id (None: no group, or a classic one)."""
        group = self.registry.get(group_id)
        if group is None or group.group_type is not GroupType.CONSUMER:
            return None
        return cast(ConsumerGroup, group)

    # -- ConsumerGroupHeartbeat -----------------------------------------------------------------
    def heartbeat(self, node_id: int, version: int, req: Any, client_id: str,
                  client_host: str) -> ConsumerGroupHeartbeatResult:
        """GroupMetadataManager.consumerGroupHeartbeat."""
        try:
            return self._heartbeat(node_id, version, req, client_id, client_host)
        except HeartbeatError as e:
            return ConsumerGroupHeartbeatResult(e.error, e.message)

    def _heartbeat(self, node_id: int, version: int, req: Any, client_id: str,
                   client_host: str) -> ConsumerGroupHeartbeatResult:
        validate_heartbeat(version, req, self.assignors)
        err = self.registry.validate_group_status(req.group_id, node_id)
        if err is not None:
            raise HeartbeatError(err, None)
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(req)
        joining = req.member_epoch == 0
        group, new_group = self._get_or_maybe_create(req.group_id, joining)
        self._throw_if_full(group, req.member_id, req.instance_id)
        now = self.clock.time_ms()
        member_id = req.member_id or f"{uuid.uuid4()}"  # v0: the coordinator names a new member
        owned = None if req.topic_partitions is None else {
            tp.topic_id: set(tp.partitions) for tp in req.topic_partitions if tp.partitions}
        if req.instance_id is None:
            member = self._dynamic_member(group, member_id, req.member_epoch, owned)
        else:
            member = self._static_member(group, member_id, req.member_epoch, req.instance_id, owned)
        # ConsumerGroupMember.Builder's maybeUpdate*: a null field leaves the value as it was
        old_names, old_regex = set(member.subscribed_topic_names), member.subscribed_topic_regex or ""
        old_assignor = self._preferred_assignor(group)
        regex_counts = group.regex_subscribers()  # before this heartbeat
        new_regex = getattr(req, "subscribed_topic_regex", None)
        try:
            regex_status, to_resolve = consumer_regex.update_regexes(
                group, old_regex, old_regex if new_regex is None else new_regex, regex_counts, now, self.cluster.topics)
        except consumer_regex.InvalidRegex as e:
            raise HeartbeatError(e.error, str(e)) from None
        before = copy_assignment(member.assigned, drop_empty=True)
        if req.instance_id is not None:
            member.instance_id = req.instance_id
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if rebalance_timeout_ms(req) != -1:
            member.rebalance_timeout_ms = rebalance_timeout_ms(req)
        if req.server_assignor is not None:
            member.server_assignor = req.server_assignor
        if req.subscribed_topic_names is not None:  # a set: a name listed twice is one subscription
            member.subscribed_topic_names = list(dict.fromkeys(req.subscribed_topic_names))
        if new_regex is not None:
            member.subscribed_topic_regex = new_regex or None
        member.client_id, member.client_host = client_id, client_host
        if new_group:
            self.registry.put(group)
        group.members[member_id] = member
        if member.instance_id is not None:
            group.static_members[member.instance_id] = member_id
        names_changed = set(member.subscribed_topic_names) != old_names
        subscription_changed = names_changed or regex_status != consumer_regex.NO_CHANGE
        bump = (names_changed or regex_status == consumer_regex.UPDATED_AND_RESOLVED
                or self._preferred_assignor(group) != old_assignor)
        if bump or group.metadata_version != self.cluster.topics_version:  # else nothing it reads changed
            metadata = self._subscription_metadata(group)
            if metadata != group.subscription_metadata:
                group.subscription_metadata = metadata
                bump = True
        if bump:
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch and can_compute_next_target_assignment(
                group.assignment_timestamp_ms, self._assignment_interval_ms(group.group_id), now):
            self._compute_target(group, now)
        if subscription_changed or not (member.state is MemberState.STABLE
                                        and member.member_epoch == group.assignment_epoch):
            reconcile(group, member, owned, subscription_changed, self._subscribed_topic_ids(group, member))
        self._schedule(group, member)
        full = (rebalance_timeout_ms(req) != -1 and (req.subscribed_topic_names is not None or new_regex is not None)
                and req.topic_partitions is not None)
        result = ConsumerGroupHeartbeatResult(ErrorCode.none, None, member.member_id, member.member_epoch,
                                              self.group_config(group.group_id, "consumer.heartbeat.interval.ms"))
        if joining or full or before != copy_assignment(member.assigned, drop_empty=True):
            result.assignment = {tid: set(ps) for tid, ps in member.assigned.items()}
        if to_resolve:  # Kafka resolves in the background, after this answer, and bumps the epoch then
            changed = consumer_regex.resolve_regexes(group, to_resolve, now, self.cluster.topics)
            metadata = self._subscription_metadata(group)
            if changed or metadata != group.subscription_metadata:
                group.subscription_metadata = metadata
                group.group_epoch += 1
        return result

    def _get_or_maybe_create(self, group_id: str, create: bool) -> tuple[ConsumerGroup, bool]:
        """GroupMetadataManager.getOrMaybeCreateConsumerGroup (without the online upgrade of a classic
        group with members: GROUP_ID_NOT_FOUND): (the group, whether it is new).  A new group (or an
        empty classic one converted) is registered only once the heartbeat succeeds, as Kafka's records
        are written only then."""
        existing = self.registry.get(group_id)
        if existing is None and not create:
            raise HeartbeatError(ErrorCode.group_id_not_found, f"Consumer group {group_id} not found.")
        if existing is not None and existing.group_type is GroupType.CONSUMER:
            return cast(ConsumerGroup, existing), False
        if existing is not None and not (create and existing.group_type is GroupType.CLASSIC and existing.is_empty()):
            raise HeartbeatError(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")
        group = ConsumerGroup(group_id, self.clock.time_ms(), initial_group_epoch(self.config["mock.kafka.version"]))
        group.topic_id_of = self._topic_id_of
        if existing is not None:
            group.offsets = existing.offsets  # an empty classic group is converted, its offsets kept
        return group, True

    def _throw_if_full(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> None:
        """GroupMetadataManager.throwIfConsumerGroupIsFull."""
        if instance_id is not None and instance_id in group.static_members:
            return
        if len(group.members) >= self.max_size and (not member_id or member_id not in group.members):
            raise HeartbeatError(ErrorCode.group_max_size_reached,
                                 f"The consumer group has reached its maximum capacity of {self.max_size} members.")

    def _dynamic_member(self, group: ConsumerGroup, member_id: str, epoch: int,
                        owned: Assignment | None) -> ConsumerGroupMember:
        """getOrMaybeSubscribeDynamicConsumerGroupMember: the member (a new one when joining), its epoch
        checked unless it (re)joins with epoch 0; a known member rejoining keeps what it has."""
        member = group.members.get(member_id)
        if member is None:
            if epoch != 0:
                raise HeartbeatError(ErrorCode.unknown_member_id,
                                     f"Member {member_id} is not a member of group {group.group_id}.")
            return ConsumerGroupMember(member_id)
        if epoch != 0:
            self._check_epoch(member, epoch, owned)
        return member

    def _static_member(self, group: ConsumerGroup, member_id: str, epoch: int, instance_id: str,
                       owned: Assignment | None) -> ConsumerGroupMember:
        """getOrMaybeSubscribeStaticConsumerGroupMember."""
        old_id = group.static_members.get(instance_id)
        existing = group.members.get(old_id) if old_id is not None else None
        if epoch == 0:
            if existing is None:  # a new static member, or a known one that now names an instance id
                return group.members.get(member_id) or ConsumerGroupMember(member_id)
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:  # throwIfInstanceIdIsUnreleased
                raise HeartbeatError(ErrorCode.unreleased_instance_id,
                                     f"Static member {member_id} with instance id {instance_id} cannot join the group "
                                     f"because the instance id is owned by {existing.member_id} member.")
            # the new incarnation takes the old one's place and assignment (epoch 0): no rebalance
            self._replace_member(group, existing, member_id)
            return existing
        if existing is None:  # throwIfStaticMemberIsUnknown
            raise HeartbeatError(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:  # throwIfInstanceIdIsFenced
            raise HeartbeatError(ErrorCode.fenced_instance_id,
                                 f"Static member {member_id} with instance id {instance_id} was fenced by member "
                                 f"{existing.member_id}.")
        self._check_epoch(existing, epoch, owned)
        return existing

    def _replace_member(self, group: ConsumerGroup, old: ConsumerGroupMember, new_member_id: str) -> None:
        """replaceMember: the old id's place, assignment and target go to the new id, with epoch 0
        (previous 0); the old id's timers are cancelled."""
        old_id = old.member_id
        del group.members[old_id]
        self.heartbeat_purgatory.cancel_for_key(session_key(group.group_id, old_id))
        self.heartbeat_purgatory.cancel_for_key(revocation_key(group.group_id, old_id))
        old.member_id = new_member_id
        old.member_epoch, old.previous_member_epoch = 0, 0
        group.members[new_member_id] = old
        if old_id in group.target:
            group.target[new_member_id] = group.target.pop(old_id)

    def _subscribed_topic_ids(self, group: ConsumerGroup, member: ConsumerGroupMember) -> set[uuid.UUID]:
        """CurrentAssignmentBuilder.subscribedTopicIds: the ids of the topics the member subscribes to
        (by name or by its resolved regex) that exist."""
        topics = self.cluster.topics
        return {topics[n].topic_id for n in group.subscribed_names(member) if n in topics}

    def _topic_id_of(self, name: str) -> uuid.UUID | None:
        topic = self.cluster.topics.get(name)
        return topic.topic_id if topic is not None else None

    def _preferred_assignor(self, group: ConsumerGroup) -> str:
        """ConsumerGroup.preferredServerAssignor: the assignor most members name (ties: the first
        named), else the broker's default."""
        counts: dict[str, int] = {}
        for m in group.members.values():
            if m.server_assignor:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return self.assignors[0]
        return max(counts, key=lambda a: counts[a])

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
        group.metadata_version = self.cluster.topics_version
        topics = self.cluster.topics
        names: set[str] = set()
        for m in group.members.values():
            names |= group.subscribed_names(m, topics)
        return {n: (topics[n].topic_id, len(topics[n].partitions)) for n in sorted(names) if n in topics}

    def _assignment_interval_ms(self, group_id: str) -> int:
        applies = assignment_interval_applies(self.config["mock.kafka.version"])
        return self.group_config(group_id, "consumer.assignment.interval.ms") if applies else 0

    def _compute_target(self, group: ConsumerGroup, now_ms: int) -> None:
        topics = self.cluster.topics
        assignor = self._preferred_assignor(group)
        subs = {mid: group.subscribed_names(m, topics) for mid, m in group.members.items()}
        group.target = ASSIGNORS[assignor](subs, group.subscription_metadata, group.target)
        group.preferred_assignor = assignor
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp_ms = now_ms  # ConsumerGroupTargetAssignmentMetadataValue.assignmentTimestamp

    # -- deadlines ------------------------------------------------------------------------------------
    def _schedule(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        purgatory = self.heartbeat_purgatory
        key = session_key(group.group_id, member.member_id)
        purgatory.cancel_for_key(key)
        purgatory.try_complete_else_watch(
            DelayedDeadline(self.group_config(group.group_id, "consumer.session.timeout.ms"), partial(
                self.on_member_timeout, group.group_id, member.member_id, "session", member.member_epoch)), [key])
        rkey = revocation_key(group.group_id, member.member_id)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if not purgatory.is_watching(rkey):  # one deadline per revocation, not one per heartbeat
                purgatory.try_complete_else_watch(
                    DelayedDeadline(member.rebalance_timeout_ms, partial(
                        self.on_member_timeout, group.group_id, member.member_id, "revocation", member.member_epoch)),
                    [rkey])
        else:
            purgatory.cancel_for_key(rkey)

    def on_member_timeout(self, group_id: str, member_id: str, kind: str, epoch: int) -> None:
        group = self._group(group_id)
        if group is None:
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

    def expel(self, group_id: str, member_id: str) -> bool:
        """The admin API's expel: the member's session times out now (on_member_timeout: fenced, the
        group epoch bumped, its partitions assigned to the others). False: no such member."""
        group = self._group(group_id)
        if group is None or member_id not in group.members:
            return False
        self.on_member_timeout(group_id, member_id, "session", group.members[member_id].member_epoch)
        return True

    def _remove_member(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        if member.instance_id is not None and group.static_members.get(member.instance_id) == member.member_id:
            del group.static_members[member.instance_id]
        self.heartbeat_purgatory.cancel_for_key(session_key(group.group_id, member.member_id))
        self.heartbeat_purgatory.cancel_for_key(revocation_key(group.group_id, member.member_id))
        consumer_regex.drop_unsubscribed(group)
        group.group_epoch += 1
        group.subscription_metadata = self._subscription_metadata(group)
        if not group.members:  # the target assignment's metadata record: this epoch, timestamp 0
            group.state_timestamp_ms = self.clock.time_ms()
            group.assignment_epoch = group.group_epoch
            group.assignment_timestamp_ms = 0  # the next member's target is computed at once
            group.target = {}

    def _leave(self, req: Any) -> ConsumerGroupHeartbeatResult:
        """GroupMetadataManager.consumerGroupLeave: epoch -1 removes the member (a static one named by
        its instance id too); -2 is a static member leaving for a while: it keeps its assignment (its
        session timer still runs from its last heartbeat) and a new incarnation takes it over."""
        existing = self.registry.get(req.group_id)
        if existing is None:
            raise HeartbeatError(ErrorCode.group_id_not_found, f"Group {req.group_id} not found.")
        if existing.group_type is not GroupType.CONSUMER:
            raise HeartbeatError(ErrorCode.group_id_not_found, f"Group {req.group_id} is not a consumer group.")
        group = cast(ConsumerGroup, existing)
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                raise HeartbeatError(ErrorCode.unknown_member_id,
                                     f"Member {req.member_id} is not a member of group {req.group_id}.")
        else:
            old_id = group.static_members.get(req.instance_id)
            member = group.members.get(old_id) if old_id is not None else None
            if member is None:
                raise HeartbeatError(ErrorCode.unknown_member_id, f"Instance id {req.instance_id} is unknown.")
            if member.member_id != req.member_id:
                raise HeartbeatError(ErrorCode.fenced_instance_id,
                                     f"Static member {req.member_id} with instance id {req.instance_id} was fenced "
                                     f"by member {member.member_id}.")
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:  # consumerGroupStaticMemberGroupLeave
                member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
                member.pending_revocation = {}
                member.partition_epochs = {(tid, p): 0 for tid, ps in member.assigned.items() for p in ps}
                return ConsumerGroupHeartbeatResult(ErrorCode.none, None, member.member_id,
                                                    LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        self._remove_member(group, member)
        return ConsumerGroupHeartbeatResult(ErrorCode.none, None, req.member_id, req.member_epoch)

    # -- ConsumerGroupDescribe -------------------------------------------------------------------------
    def describe(self, node_id: int, group_id: str) -> ConsumerGroupDescription:
        """GroupMetadataManager.consumerGroupDescribe for one group."""
        err = self.registry.validate_group_status(group_id, node_id)
        if err is not None:
            return ConsumerGroupDescription(group_id, err)
        existing = self.registry.get(group_id)
        group = self._group(group_id)
        if group is None:
            return ConsumerGroupDescription(group_id, ErrorCode.group_id_not_found,
                                            f"Group {group_id} not found." if existing is None
                                            else f"Group {group_id} is not a consumer group.")
        return group.as_consumer_group_description()

