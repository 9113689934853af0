"""The server-side assignors of KIP-848 consumer groups.

Mirror Kafka 4.x's ``UniformAssignor`` (the default) and ``RangeAssignor``
(``org.apache.kafka.coordinator.group.assignor``) at the level a client sees:
which member gets which partitions of the topics it subscribes to.  Each takes
the members' subscribed topic names, the subscribed topics (id, partition
count) and the previous target assignment, and returns the new target.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

Assignment = dict[uuid.UUID, set[int]]  # topic id -> partitions


def copy_assignment(a: Assignment, drop_empty: bool) -> Assignment:
    """A copy to keep or compare; ``drop_empty``: without the topics left with no partitions (two
    assignments that differ only by those are the same to a member)."""
    return {t: set(ps) for t, ps in a.items() if ps or not drop_empty}
# (member id -> subscribed topic names, topic name -> (topic id, partitions), previous target) -> new target
Assignor = Callable[[dict[str, set[str]], dict[str, tuple[uuid.UUID, int]], dict[str, Assignment]],
                    dict[str, Assignment]]


def assign_uniform(members: dict[str, set[str]], topics: dict[str, tuple[uuid.UUID, int]],
                   previous: dict[str, Assignment]) -> dict[str, Assignment]:
    """Kafka's UniformAssignor in spirit: balanced counts, sticky to the previous target.

    Homogeneous subscriptions get exactly floor(P/M) or that + 1 partitions each (the
    OptimizedUniformAssignmentBuilder's quotas); heterogeneous ones are filled greedily,
    each partition to the least-loaded subscribed member (GeneralUniformAssignmentBuilder's goal).
    """
    ids = sorted(members)
    result: dict[str, Assignment] = {m: {} for m in ids}
    if not ids:
        return result
    parts = [(name, tid, p) for name, (tid, n) in sorted(topics.items()) for p in range(n)
             if any(name in subs for subs in members.values())]
    homogeneous = len({frozenset(s) for s in members.values()}) == 1
    count = {m: 0 for m in ids}
    taken: set[tuple[uuid.UUID, int]] = set()
    if homogeneous:
        min_quota, extras = divmod(len(parts), len(ids))
    else:
        min_quota, extras = 0, 0

    extras_left = [extras]
    valid = {(tid, p) for _, tid, p in parts}
    for m in ids:  # sticky: keep previous partitions up to the quota
        for tid, ps in sorted(previous.get(m, {}).items(), key=lambda kv: str(kv[0])):
            for p in sorted(ps):
                if (tid, p) not in valid or (tid, p) in taken:
                    continue
                name = next(n for n, (t, _) in topics.items() if t == tid)
                if name not in members[m]:
                    continue
                if homogeneous:
                    if count[m] >= min_quota + 1 or (count[m] >= min_quota and extras_left[0] == 0):
                        continue
                    if count[m] == min_quota:
                        extras_left[0] -= 1
                result[m].setdefault(tid, set()).add(p)
                count[m] += 1
                taken.add((tid, p))
    for name, tid, p in parts:
        if (tid, p) in taken:
            continue
        eligible = [m for m in ids if name in members[m]]
        if homogeneous:
            below = [m for m in eligible if count[m] < min_quota]
            if not below:
                below = [m for m in eligible if count[m] == min_quota and extras_left[0] > 0]
                if below:
                    extras_left[0] -= 1
            eligible = below or eligible
        m = min(eligible, key=lambda x: (count[x], ids.index(x)))
        result[m].setdefault(tid, set()).add(p)
        count[m] += 1
        taken.add((tid, p))
    return result


def assign_range(members: dict[str, set[str]], topics: dict[str, tuple[uuid.UUID, int]],
                 previous: dict[str, Assignment]) -> dict[str, Assignment]:
    """Server-side RangeAssignor: per topic, contiguous ranges over the subscribed members in order."""
    ids = sorted(members)
    result: dict[str, Assignment] = {m: {} for m in ids}
    for name, (tid, n) in sorted(topics.items()):
        subs = [m for m in ids if name in members[m]]
        if not subs:
            continue
        per, extra = divmod(n, len(subs))
        start = 0
        for i, m in enumerate(subs):
            k = per + (1 if i < extra else 0)
            if k:
                result[m][tid] = set(range(start, start + k))
            start += k
    return result


ASSIGNORS: dict[str, Assignor] = {"uniform": assign_uniform, "range": assign_range}
