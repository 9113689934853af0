"""A KIP-848 member moving towards its target assignment, one heartbeat at a time.

Mirrors Kafka 4.4's ``CurrentAssignmentBuilder`` (``modern.consumer``), which GroupMetadataManager's
``maybeReconcile`` runs: over the topics the member subscribes to, partitions it must give up are
revoked first (UNREVOKED_PARTITIONS: the member keeps its epoch until it stops reporting them),
partitions another member still owns are held back (UNRELEASED_PARTITIONS), and the member moves to
the target's epoch when nothing is left to revoke; a member whose subscription changed gives up the
partitions of the topics it left at once (``updateCurrentAssignment``), before any new target.  Each
partition keeps the epoch it was assigned at (a commit from an older epoch reads it).

``subscribed`` is the ids of the topics the member subscribes to that exist (``subscribedTopicIds``:
its names and the topics its regex was resolved to); ``owned`` what its heartbeat says it owns (None:
the heartbeat did not say, which counts as owning everything).
"""

from __future__ import annotations

import uuid

from .assignors import Assignment
from .consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState


def reconcile(group: ConsumerGroup, member: ConsumerGroupMember, owned: Assignment | None,
              subscription_changed: bool, subscribed: set[uuid.UUID]) -> None:
    """CurrentAssignmentBuilder.build."""
    target_epoch = group.assignment_epoch
    if member.state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            _next(group, member, member.member_epoch, owned, subscribed)
        elif subscription_changed:
            _update_current(member, owned, subscribed)
    elif member.state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            if subscription_changed:
                _update_current(member, owned, subscribed)
            return  # still revoking
        _next(group, member, member.member_epoch, owned, subscribed)
    else:  # UNRELEASED_PARTITIONS
        _next(group, member, member.member_epoch, owned, subscribed)


def owns_any(owned: Assignment | None, pending: Assignment) -> bool:
    """ownsRevokedPartitions: a heartbeat without its owned partitions (null) owns them all."""
    if owned is None:
        return True
    return any(owned.get(t, set()) & ps for t, ps in pending.items())


def _update_current(member: ConsumerGroupMember, owned: Assignment | None, subscribed: set[uuid.UUID]) -> None:
    """CurrentAssignmentBuilder.updateCurrentAssignment: the subscription changed; the partitions of
    topics no longer subscribed are revoked at once (all of them when it subscribes to none)."""
    assigned = member.assigned
    if not subscribed and not member.pending_revocation:
        if not assigned:
            return  # nothing to give up: the member unchanged
        new_assigned: Assignment = {}
        pending: Assignment = {t: set(ps) for t, ps in assigned.items()}
    else:
        dropped = [t for t in assigned if t not in subscribed]
        if not dropped:
            return  # the member unchanged
        new_assigned = {t: set(ps) for t, ps in assigned.items() if t in subscribed}
        pending = {t: set(ps) for t, ps in member.pending_revocation.items()}
        for t in dropped:
            pending.setdefault(t, set()).update(assigned[t])
    if pending and owns_any(owned, pending):
        member.state = MemberState.UNREVOKED_PARTITIONS
        member.pending_revocation = pending
    member.assigned = new_assigned
    update_epoch(member, member.member_epoch)


def _next(group: ConsumerGroup, member: ConsumerGroupMember, epoch: int, owned: Assignment | None,
          subscribed: set[uuid.UUID]) -> None:
    """CurrentAssignmentBuilder.computeNextAssignment: the target of the topics the member subscribes
    to; what it must give up first, what another member still holds back."""
    target = group.target.get(member.member_id, {})
    new_assigned: Assignment = {}
    revoke: Assignment = {}
    pending_assign: Assignment = {}
    unreleased = False
    for tid in set(target) | set(member.assigned):
        tgt = target.get(tid, set()) if tid in subscribed else set()
        cur = member.assigned.get(tid, set())
        keep = cur & tgt
        rev = cur - keep
        add = tgt - keep
        held = {p for p in add if group.owner_of(tid, p) is not None
                and p not in member.pending_revocation.get(tid, set())}
        if held:
            unreleased = True
            add -= held
        if keep:
            new_assigned[tid] = keep
        if rev:
            revoke[tid] = rev
        if add:
            pending_assign[tid] = add
    if revoke and owns_any(owned, revoke):
        member.state = MemberState.UNREVOKED_PARTITIONS
        update_epoch(member, epoch)
        member.assigned, member.pending_revocation = new_assigned, revoke
    else:
        for tid, ps in pending_assign.items():
            new_assigned.setdefault(tid, set()).update(ps)
        member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        update_epoch(member, group.assignment_epoch)
        member.assigned, member.pending_revocation = new_assigned, {}
    # a partition kept keeps the epoch it was assigned at, one newly assigned gets the target's
    _keep_partition_epochs(member, group.assignment_epoch)


def _keep_partition_epochs(member: ConsumerGroupMember, new_epoch: int) -> None:
    """The epochs of the member's partitions (assigned or pending revocation): each keeps its own, one
    it did not hold gets ``new_epoch``."""
    old = member.partition_epochs
    member.partition_epochs = {(tid, p): old.get((tid, p), new_epoch)
                               for part in (member.assigned, member.pending_revocation)
                               for tid, ps in part.items() for p in ps}


def update_epoch(member: ConsumerGroupMember, epoch: int) -> None:
    """ConsumerGroupMember.Builder.updateMemberEpoch: the previous epoch is the one it had."""
    member.previous_member_epoch = member.member_epoch
    member.member_epoch = epoch
