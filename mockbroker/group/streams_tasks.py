"""Tasks of a streams group member, and how a member reconciles towards its target.

Mirrors Kafka 4.4's ``TasksTuple`` (a target assignment: active, standby and
warm-up tasks by subtopology), ``TasksTupleWithEpochs`` (a member's current
assignment: each active task with the assignment epoch it was given in) and
``streams.CurrentAssignmentBuilder``, the rules a member's assignment moves
by on its heartbeats: tasks it must give up are revoked first
(UNREVOKED_TASKS, the member keeps its epoch until it stops reporting them),
tasks another member of the group still holds are held back
(UNRELEASED_TASKS), an active task may turn into a standby or warm-up task
of the same member at once (and the other way, once nothing is left to
revoke), and the member moves to the target epoch when nothing is left to
revoke.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

Tasks = dict[str, set[int]]            # subtopology id -> partitions (task ids)
TasksWithEpochs = dict[str, dict[int, int]]  # subtopology id -> partition -> assignment epoch


def copy_tasks(tasks: Mapping[str, Iterable[int]]) -> Tasks:
    """A copy without the subtopologies left with no task."""
    return {s: set(ps) for s, ps in tasks.items() if ps}


def task_ids(tasks: Mapping[str, Iterable[int]]) -> list[dict[str, Any]]:
    """The wire's TaskIds, sorted by subtopology and partition."""
    return [{"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(tasks.items())]


def tasks_from_wire(items: Iterable[Any] | None) -> Tasks:
    return {t.subtopology_id: set(t.partitions) for t in items or ()}


def tasks_to_string(tasks: Mapping[str, Iterable[int]]) -> str:
    """TasksTuple.taskAssignmentToString: ``[0-1, 0-2, 1-0]``."""
    return "[" + ", ".join(f"{s}-{p}" for s in sorted(tasks) for p in sorted(tasks[s])) + "]"


@dataclass(frozen=True, slots=True)
class TasksTuple:
    """A target assignment (TasksTuple)."""

    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def contains_any(self, other: TasksTupleWithEpochs) -> bool:
        """Whether any of these tasks is among ``other``'s (same kind)."""
        return (any(ps & set(other.active.get(s, {})) for s, ps in self.active.items())
                or any(ps & other.standby.get(s, set()) for s, ps in self.standby.items())
                or any(ps & other.warmup.get(s, set()) for s, ps in self.warmup.items()))

    def __str__(self) -> str:
        return (f"(active={tasks_to_string(self.active)}, standby={tasks_to_string(self.standby)}, "
                f"warmup={tasks_to_string(self.warmup)})")


EMPTY_TASKS = TasksTuple()


@dataclass(frozen=True, slots=True)
class TasksTupleWithEpochs:
    """A member's current assignment or its tasks pending revocation (TasksTupleWithEpochs)."""

    active: TasksWithEpochs = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def active_tasks(self) -> Tasks:
        return {s: set(ps) for s, ps in self.active.items()}

    def standby_and_warmup(self) -> Tasks:
        out = {s: set(ps) for s, ps in self.standby.items()}
        for s, ps in self.warmup.items():
            out.setdefault(s, set()).update(ps)
        return out

    def merge(self, other: TasksTupleWithEpochs) -> TasksTupleWithEpochs:
        active = {s: dict(ps) for s, ps in self.active.items()}
        for s, ps in other.active.items():
            active.setdefault(s, {}).update(ps)
        return TasksTupleWithEpochs(active, _merge(self.standby, other.standby), _merge(self.warmup, other.warmup))

    def with_active_epochs_zero(self) -> TasksTupleWithEpochs:
        """StreamsGroupMember.Builder.resetAssignedTasksEpochsToZero (a static member leaving)."""
        return replace(self, active={s: dict.fromkeys(ps, 0) for s, ps in self.active.items()})

    def __str__(self) -> str:
        active = ", ".join(f"{s}-{p}@{self.active[s][p]}" for s in sorted(self.active) for p in sorted(self.active[s]))
        return (f"(active=[{active}], standby={tasks_to_string(self.standby)}, "
                f"warmup={tasks_to_string(self.warmup)})")


EMPTY_TASKS_WITH_EPOCHS = TasksTupleWithEpochs()


def _merge(a: Tasks, b: Tasks) -> Tasks:
    out = {s: set(ps) for s, ps in a.items()}
    for s, ps in b.items():
        out.setdefault(s, set()).update(ps)
    return out


class MemberState(enum.Enum):
    """streams.MemberState; the value is the current assignment record's byte."""

    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127


@dataclass(frozen=True, slots=True)
class StreamsGroupMember:
    """StreamsGroupMember: what the member said about itself, and its current assignment."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()  # sorted (a map)
    assigned: TasksTupleWithEpochs = EMPTY_TASKS_WITH_EPOCHS
    pending_revocation: TasksTupleWithEpochs = EMPTY_TASKS_WITH_EPOCHS

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def with_epoch(self, epoch: int) -> StreamsGroupMember:
        """Builder.updateMemberEpoch: the current epoch becomes the previous one."""
        return replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch)

    def metadata(self) -> tuple[Any, ...]:
        """What the StreamsGroupMemberMetadata record holds (a change bumps the group epoch)."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.rebalance_timeout_ms,
                self.topology_epoch, self.process_id, self.user_endpoint, self.client_tags)

    def epoch_relevant(self) -> tuple[Any, ...]:
        """GroupMetadataManager.hasEpochRelevantMemberConfigChanged: what of a static member's
        metadata a new assignment depends on."""
        return (self.topology_epoch, self.rack_id, self.client_tags, self.process_id)


# -- CurrentAssignmentBuilder -------------------------------------------------------------------------
ActiveOwner = Callable[[str, int], str | None]     # (subtopology, partition) -> process id running it
ReplicaOwners = Callable[[str, int], set[str]]     # (subtopology, partition) -> process ids holding it


class FencedMember(Exception):
    """FencedMemberEpochException raised while reconciling."""


@dataclass(slots=True)
class CurrentAssignmentBuilder:
    """streams.CurrentAssignmentBuilder: the member's next current assignment towards the target."""

    member: StreamsGroupMember
    target_epoch: int
    target: TasksTuple
    active_owner: ActiveOwner
    standby_owners: ReplicaOwners
    warmup_owners: ReplicaOwners
    owned: TasksTuple | None  # what the member reported owning (None: not reported)

    def build(self) -> StreamsGroupMember:
        m = self.member
        if m.state is MemberState.STABLE:
            if m.member_epoch != self.target_epoch:
                return self._next(m.member_epoch, m.assigned)
            return m
        if m.state is MemberState.UNREVOKED_TASKS:
            if self._not_released(m.pending_revocation):
                return m
            return self._next(m.member_epoch + 1, m.assigned)
        if m.state is MemberState.UNRELEASED_TASKS:
            return self._next(m.member_epoch, m.assigned)
        if self.owned is not None and self.owned.is_empty():
            return self._next(self.target_epoch, m.assigned)
        raise FencedMember("The streams group member is in a unknown state. The member must abandon all its "
                           "tasks and rejoin.")

    def _not_released(self, pending: TasksTupleWithEpochs) -> bool:
        return self.owned is None or self.owned.contains_any(pending)

    # the unreleased checks: another member (of this process or another) still holds the task
    def _unreleased_active(self, current: TasksTupleWithEpochs, s: str, p: int) -> bool:
        return (self.active_owner(s, p) is not None
                or self._held_by_another_on_this_process(self.standby_owners, current.standby, s, p)
                or self._held_by_another_on_this_process(self.warmup_owners, current.warmup, s, p))

    def _unreleased_standby(self, current: TasksTupleWithEpochs, s: str, p: int) -> bool:
        pid = self.member.process_id
        return ((self.active_owner(s, p) == pid and p not in current.active.get(s, {}))
                or pid in self.standby_owners(s, p)
                or self._held_by_another_on_this_process(self.warmup_owners, current.warmup, s, p))

    def _unreleased_warmup(self, current: TasksTupleWithEpochs, s: str, p: int) -> bool:
        pid = self.member.process_id
        return (self.active_owner(s, p) == pid
                or self._held_by_another_on_this_process(self.standby_owners, current.standby, s, p)
                or pid in self.warmup_owners(s, p))

    def _held_by_another_on_this_process(self, owners: ReplicaOwners, member_tasks: Tasks, s: str, p: int) -> bool:
        return self.member.process_id in owners(s, p) and p not in member_tasks.get(s, set())

    def _next(self, member_epoch: int, current: TasksTupleWithEpochs) -> StreamsGroupMember:
        """computeNextAssignment."""
        active_kept: TasksWithEpochs = {}
        active_revoke: TasksWithEpochs = {}
        active_add: TasksWithEpochs = {}
        unreleased = False
        for s in set(self.target.active) | set(current.active):
            cur = current.active.get(s, {})
            tgt = self.target.active.get(s, set())
            keep = {p: e for p, e in cur.items() if p in tgt}
            revoke = {p: e for p, e in cur.items() if p not in keep}
            add = {p: self.target_epoch for p in tgt if p not in keep}
            held = {p for p in add if self._unreleased_active(current, s, p)}
            unreleased |= bool(held)
            add = {p: e for p, e in add.items() if p not in held}
            for out, part in ((active_kept, keep), (active_revoke, revoke), (active_add, add)):
                if part:
                    out[s] = part
        standby_kept, standby_revoke, standby_add, held_s = self._difference(
            current.standby, self.target.standby, lambda s, p: self._unreleased_standby(current, s, p))
        warmup_kept, warmup_revoke, warmup_add, held_w = self._difference(
            current.warmup, self.target.warmup, lambda s, p: self._unreleased_warmup(current, s, p))
        unreleased |= held_s or held_w
        # demoteActiveTasksToStandby: an active task becoming a standby of this member is granted now
        for s, ps in current.active.items():
            for p in ps:
                if p in standby_add.get(s, set()):
                    _grant_now(standby_add, standby_kept, s, p)
        # convertReplicaRole: a standby becoming a warm-up (and back) is granted now, not revoked
        _convert_role(current.standby, standby_revoke, warmup_add, warmup_kept)
        _convert_role(current.warmup, warmup_revoke, standby_add, standby_kept)
        # applyPromotionsToActive
        self._drop_promoted_from_revocation(current.standby, standby_revoke)
        self._drop_promoted_from_revocation(current.warmup, warmup_revoke)
        pending_revocation = TasksTupleWithEpochs(active_revoke, standby_revoke, warmup_revoke)
        to_revoke = not pending_revocation.is_empty() and self._not_released(pending_revocation)
        self._keep_promoted_until_granted(current.standby, standby_kept, active_add, to_revoke)
        self._keep_promoted_until_granted(current.warmup, warmup_kept, active_add, to_revoke)
        kept = TasksTupleWithEpochs(active_kept, standby_kept, warmup_kept)
        added = TasksTupleWithEpochs(active_add, standby_add, warmup_add)
        m = self.member
        if to_revoke:
            return replace(m.with_epoch(member_epoch), state=MemberState.UNREVOKED_TASKS, assigned=kept,
                           pending_revocation=pending_revocation)
        state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
        assigned = kept.merge(added) if not added.is_empty() else kept
        return replace(m.with_epoch(self.target_epoch), state=state, assigned=assigned,
                       pending_revocation=EMPTY_TASKS_WITH_EPOCHS)

    @staticmethod
    def _difference(current: Tasks, target: Tasks, unreleased: Callable[[str, int], bool]
                    ) -> tuple[Tasks, Tasks, Tasks, bool]:
        """computeAssignmentDifference: (kept, to revoke, to add, whether some were held back)."""
        kept: Tasks = {}
        revoke: Tasks = {}
        add: Tasks = {}
        held_any = False
        for s in set(target) | set(current):
            cur, tgt = current.get(s, set()), target.get(s, set())
            k = cur & tgt
            a = tgt - k
            held = {p for p in a if unreleased(s, p)}
            held_any |= bool(held)
            for out, part in ((kept, k), (revoke, cur - k), (add, a - held)):
                if part:
                    out[s] = set(part)
        return kept, revoke, add, held_any

    def _drop_promoted_from_revocation(self, member_tasks: Tasks, revoke: Tasks) -> None:
        for s, ps in member_tasks.items():
            for p in ps:
                if p in self.target.active.get(s, set()):
                    _remove(revoke, s, p)

    def _keep_promoted_until_granted(self, member_tasks: Tasks, kept: Tasks, active_add: TasksWithEpochs,
                                     to_revoke: bool) -> None:
        """A standby or warm-up promoted to active stays what it was until the active task is granted."""
        for s, ps in member_tasks.items():
            granted = active_add.get(s, {})
            for p in ps:
                promoted_now = not to_revoke and p in granted
                if p in self.target.active.get(s, set()) and not promoted_now:
                    kept.setdefault(s, set()).add(p)


def _grant_now(pending: Tasks, kept: Tasks, s: str, p: int) -> None:
    _remove(pending, s, p)
    kept.setdefault(s, set()).add(p)


def _convert_role(outgoing: Tasks, outgoing_revoke: Tasks, incoming_add: Tasks, incoming_kept: Tasks) -> None:
    for s, ps in outgoing.items():
        for p in ps:
            if p in incoming_add.get(s, set()):
                _grant_now(incoming_add, incoming_kept, s, p)
                _remove(outgoing_revoke, s, p)


def _remove(tasks: Tasks, s: str, p: int) -> None:
    ps = tasks.get(s)
    if ps is not None and p in ps:
        ps.discard(p)
        if not ps:
            del tasks[s]
