"""The share groups' server-side assignor: Kafka 4.4's ``SimpleAssignor`` ("simple").

Partitions are shared: with more members than partitions each partition goes to
ceil(members / partitions) members (``desiredSharing``), and each member gets its share of the
partition-slots (``desiredAssignmentCount``: ceil-spread, so the counts differ by at most one).  A
member keeps what it had as far as its counts allow (``revokeUnassignablePartitions``,
``revokeOverfilledMembers``, ``revokeOversharedPartitions``), then the remaining slots are filled
round-robin over the members still short (``assignRemainingPartitions``).  Members with different
subscriptions are assigned topic by topic (``SimpleHeterogeneousAssignmentBuilder``).  Only the
partitions whose share-group state is initialized are assignable.  Members, partitions and sets
are visited in sorted order where Kafka walks Java hash maps, so the result is the same split but
not always the same members as Kafka's.
"""

from __future__ import annotations

import math
import uuid

from ..group.assignors import Assignment

TopicPartition = tuple[uuid.UUID, int]


def assign_simple(subscriptions: dict[str, set[uuid.UUID]], assignable: dict[uuid.UUID, set[int]],
                  previous: dict[str, Assignment]) -> dict[str, Assignment]:
    """Every member's target assignment: ``subscriptions`` by member (topic ids), ``assignable`` the
    initialized partitions of each topic, ``previous`` the last target assignment."""
    members = sorted(subscriptions)
    if not members:
        return {}
    new = {m: {t: set(ps) for t, ps in previous.get(m, {}).items()} for m in members}
    topics = sorted({t for subs in subscriptions.values() for t in subs}, key=str)
    for topic in topics:
        subscribed = [m for m in members if topic in subscriptions[m]]
        partitions = sorted(assignable.get(topic, set()))
        _assign_topic(topic, subscribed, partitions, new)
    for m in members:  # a topic no longer subscribed goes
        for t in [t for t in new[m] if t not in subscriptions[m]]:
            del new[m][t]
    return {m: {t: ps for t, ps in a.items() if ps} for m, a in new.items()}


def _assign_topic(topic: uuid.UUID, subscribed: list[str], partitions: list[int],
                  new: dict[str, Assignment]) -> None:
    n_members, n_parts = len(subscribed), len(partitions)
    sharing = (n_members + n_parts - 1) // n_parts if n_parts else 0
    precise = sharing * n_parts / n_members if n_members else 0
    desired = {m: math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i, m in enumerate(subscribed)}
    by_partition: dict[int, list[str]] = {p: [] for p in partitions}
    by_member: dict[str, list[int]] = {m: [] for m in subscribed}
    valid = set(partitions)
    for m in subscribed:  # revokeUnassignablePartitions
        kept = [p for p in sorted(new[m].get(topic, set())) if p in valid]
        new[m][topic] = set(kept)
        for p in kept:
            by_partition[p].append(m)
            by_member[m].append(p)
    for m in subscribed:  # revokeOverfilledMembers
        while len(by_member[m]) > desired[m]:
            p = by_member[m].pop(0)
            by_partition[p].remove(m)
            new[m][topic].discard(p)
    for p in partitions:  # revokeOversharedPartitions
        while len(by_partition[p]) > sharing:
            m = by_partition[p].pop(0)
            by_member[m].remove(p)
            new[m][topic].discard(p)
    unfilled = [m for m in subscribed if len(by_member[m]) < desired[m]]
    if not unfilled:
        return
    i = 0
    assigned_this_turn = False
    for p in partitions:  # assignRemainingPartitions
        to_make = sharing - len(by_partition[p])
        while to_make > 0 and unfilled:
            if i >= len(unfilled):
                if not assigned_this_turn:
                    break
                i, assigned_this_turn = 0, False
            m = unfilled[i]
            if m in by_partition[p]:
                i += 1
                continue
            new[m].setdefault(topic, set()).add(p)
            by_partition[p].append(m)
            by_member[m].append(p)
            to_make -= 1
            assigned_this_turn = True
            if len(by_member[m]) >= desired[m]:
                unfilled.pop(i)
            else:
                i += 1
        if not unfilled:
            break
