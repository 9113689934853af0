"""The server-side assignors of KIP-848 consumer groups.

Mirror Kafka 4.x's ``UniformAssignor`` (the default) and ``RangeAssignor``
(``org.apache.kafka.coordinator.group.assignor``) at the level a client sees:
which member gets which partitions of the topics it subscribes to.  Each takes
the members' subscribed topic names, the subscribed topics (id, partition
count) and the previous target assignment, and returns the new target.
"""

from __future__ import annotations

import heapq
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
    subscribed = set().union(*members.values())
    parts = [(name, tid, p) for name, (tid, n) in sorted(topics.items()) if name in subscribed for p in range(n)]
    homogeneous = len({frozenset(s) for s in members.values()}) == 1
    count = {m: 0 for m in ids}
    if homogeneous:
        min_quota, extras = divmod(len(parts), len(ids))
    else:
        min_quota, extras = 0, 0

    extras_left = extras
    # topics by index (a UUID hashes in Python: millions of times in a group of a thousand)
    index = {tid: i for i, (_, (tid, _n)) in enumerate(sorted(topics.items()))}
    tids = [tid for _, (tid, _n) in sorted(topics.items())]
    valid = {(index[tid], p) for _, tid, p in parts}
    taken: set[tuple[int, int]] = set()
    got: dict[str, dict[int, set[int]]] = {m: {} for m in ids}
    name_of = {tid: name for name, (tid, _) in topics.items()}
    for m in ids:  # sticky: keep previous partitions up to the quota
        for tid, ps in sorted(previous.get(m, {}).items(), key=lambda kv: kv[0].hex):
            if name_of.get(tid) not in members[m]:
                continue
            t = index[tid]
            for p in sorted(ps):
                if (t, p) not in valid or (t, p) in taken:
                    continue
                if homogeneous:
                    if count[m] >= min_quota + 1 or (count[m] >= min_quota and extras_left == 0):
                        continue
                    if count[m] == min_quota:
                        extras_left -= 1
                got[m].setdefault(t, set()).add(p)
                count[m] += 1
                taken.add((t, p))
    # each free partition to the least-loaded member that subscribes to it, the first in id order on a
    # tie; in a homogeneous group that member is below the minimum quota if any is, else one at it
    # while extras are left (which it uses up), so one heap over (count, order) serves every choice
    order = {m: i for i, m in enumerate(ids)}
    heap = [(count[m], i, m) for i, m in enumerate(ids)] if homogeneous else []
    heapq.heapify(heap)
    for name, tid, p in parts:
        t = index[tid]
        if (t, p) in taken:
            continue
        if homogeneous:
            c, i, m = heapq.heappop(heap)
            if c == min_quota and extras_left > 0:
                extras_left -= 1
            heapq.heappush(heap, (c + 1, i, m))
        else:
            m = min((x for x in ids if name in members[x]), key=lambda x: (count[x], order[x]))
        got[m].setdefault(t, set()).add(p)
        count[m] += 1
        taken.add((t, p))
    for m in ids:
        result[m] = {tids[t]: ps for t, ps in got[m].items()}
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
