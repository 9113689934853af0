"""The classic protocol's delayed operations.

Mirror Kafka's ``DelayedHeartbeat``, ``DelayedJoin``, ``InitialDelayedJoin``
and ``DelayedSync`` (core ``kafka.coordinator.group``; 4.x's
``GroupMetadataManager`` keeps the same deadlines on its timer), waiting in
the classic coordinator's two purgatories:

* ``DelayedHeartbeat`` (key: group, member) expires a member after
  session.timeout.ms without a heartbeat (a pending member, after
  MEMBER_ID_REQUIRED, also expires if it does not rejoin in time);
* ``DelayedJoin`` / ``InitialDelayedJoin`` (key: the group's join key)
  complete the join phase when every member rejoined, or at the rebalance
  timeout (the first rebalance of an Empty group waits
  group.initial.rebalance.delay.ms, extended while members keep coming);
* ``DelayedSync`` (key: the group's sync key) removes members that did not
  send SyncGroup within the rebalance timeout (KAFKA-13766).

What they call back is the ``RebalanceCallbacks`` protocol, which the classic
coordinator (``classic_coordinator.py``) implements.
"""

from __future__ import annotations

from typing import Protocol

from ..purgatory import DelayedOperation, DelayedOperationPurgatory
from .classic_group import GroupMetadata, GroupState


class RebalanceCallbacks(Protocol):
    rebalance_purgatory: DelayedOperationPurgatory

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None: ...

    def on_complete_join(self, group: GroupMetadata) -> None: ...

    def on_expire_pending_sync(self, group: GroupMetadata, generation_id: int) -> None: ...


def join_key(group_id: str) -> tuple[str, str]:
    return ("join", group_id)


def sync_key(group_id: str) -> tuple[str, str]:
    return ("sync", group_id)


def member_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("member", group_id, member_id)


class DelayedHeartbeat(DelayedOperation):
    """Kafka's DelayedHeartbeat: the member's session expires unless a heartbeat completes this first."""

    __slots__ = ("coordinator", "group", "member_id", "is_pending")

    def __init__(self, coordinator: RebalanceCallbacks, group: GroupMetadata, member_id: str, is_pending: bool,
                 timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.coordinator = coordinator
        self.group = group
        self.member_id = member_id
        self.is_pending = is_pending

    def try_complete(self) -> bool:
        group = self.group
        if group.is_state(GroupState.DEAD):
            return self.force_complete()
        if self.is_pending:
            return self.force_complete() if group.has(self.member_id) else False
        member = group.members.get(self.member_id)
        if member is None or member.is_leaving or member.has_satisfied_heartbeat():
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        self.coordinator.on_expire_heartbeat(self.group, self.member_id, self.is_pending)

    def on_complete(self) -> None:
        pass


class DelayedJoin(DelayedOperation):
    """Kafka's DelayedJoin: the join phase ends when every member rejoined or at the rebalance timeout."""

    __slots__ = ("coordinator", "group")

    def __init__(self, coordinator: RebalanceCallbacks, group: GroupMetadata, timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.coordinator = coordinator
        self.group = group

    def try_complete(self) -> bool:
        if self.group.has_all_members_joined():
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        pass

    def on_complete(self) -> None:
        self.coordinator.on_complete_join(self.group)


class InitialDelayedJoin(DelayedJoin):
    """Kafka's InitialDelayedJoin: group.initial.rebalance.delay.ms for an Empty group's first
    rebalance, extended (up to the rebalance timeout) while new members keep joining."""

    __slots__ = ("configured_delay", "remaining_ms")

    def __init__(self, coordinator: RebalanceCallbacks, group: GroupMetadata, configured_delay: int,
                 delay_ms: int, remaining_ms: int) -> None:
        super().__init__(coordinator, group, delay_ms)
        self.configured_delay = configured_delay
        self.remaining_ms = remaining_ms

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        group = self.group
        if group.new_member_added and self.remaining_ms != 0:
            group.new_member_added = False
            delay = min(self.configured_delay, self.remaining_ms)
            remaining = max(self.remaining_ms - self.delay_ms, 0)
            self.coordinator.rebalance_purgatory.try_complete_else_watch(
                InitialDelayedJoin(self.coordinator, group, self.configured_delay, delay, remaining),
                [join_key(group.group_id)])
        else:
            super().on_complete()


class DelayedSync(DelayedOperation):
    """Kafka's DelayedSync (KAFKA-13766): members that do not SyncGroup within the rebalance timeout go."""

    __slots__ = ("coordinator", "group", "generation_id")

    def __init__(self, coordinator: RebalanceCallbacks, group: GroupMetadata, generation_id: int,
                 timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.coordinator = coordinator
        self.group = group
        self.generation_id = generation_id

    def try_complete(self) -> bool:
        g = self.group
        if (self.generation_id != g.generation_id
                or g.state in (GroupState.DEAD, GroupState.EMPTY, GroupState.PREPARING_REBALANCE)
                or not g.pending_sync_members):
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        self.coordinator.on_expire_pending_sync(self.group, self.generation_id)

    def on_complete(self) -> None:
        pass
