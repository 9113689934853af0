"""The server-side task assignor of streams groups: Kafka 4.4's ``StickyTaskAssignor``.

Mirrors ``org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor``
and its ``ProcessState``: tasks are balanced over processes (a Kafka Streams
instance, whose stream threads are its members) by load (tasks per member),
each active task stays with the member that had it while that member is
under its quota, then goes to a member that held it as a standby, then to the
least loaded process; standby tasks (``num.standby.replicas`` of each task of
a stateful subtopology) go first to the previous owner of the active task,
then to previous standby owners (those that reported the most restored
offsets first), then to the least loaded processes that do not hold the task
yet.  Warm-up tasks are never assigned (Kafka 4.4's refinement is a no-op).

``build_target_assignment`` is ``TargetAssignmentBuilder``: the group's
members and configured topology given to the assignor.

Where Kafka breaks ties by the iteration order of its hash maps (member and
process ids, random per run), this breaks them by the order the members are
given in; the counts per member, the stickiness and the standby placement are
Kafka's.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from protocol.errors import ErrorCode

from .streams_group import NO_TASK_OFFSETS, StreamsGroup
from .streams_tasks import EMPTY_TASKS, Tasks, TasksTuple, copy_tasks
from .streams_topology import StreamsGroupError

log = logging.getLogger("mockbroker.group")

STICKY = "sticky"
TaskId = tuple[str, int]  # (subtopology id, partition)


class TaskAssignorError(Exception):
    """TaskAssignorException."""


@dataclass(frozen=True, slots=True)
class AssignorMember:
    """What the assignor knows of a member (MemberMetadataAndState)."""

    member_id: str
    process_id: str
    active: Tasks          # its current active tasks
    standby: Tasks         # its current standby tasks
    task_offsets: Mapping[str, Mapping[int, int]] = field(default_factory=dict)  # reported offset sums


@dataclass(frozen=True, slots=True)
class AssignorSubtopology:
    subtopology_id: str
    number_of_tasks: int
    stateful: bool


class ProcessState:
    """ProcessState: one process, its members and the tasks given to each."""

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.capacity = 0
        self.load = float("inf")  # Double.MAX_VALUE until it has a member
        self.task_count = 0
        self.member_task_counts: dict[str, int] = {}
        self.active: dict[str, set[TaskId]] = {}
        self.standby: dict[str, set[TaskId]] = {}
        self.tasks: set[TaskId] = set()

    def add_member(self, member_id: str) -> None:
        self.member_task_counts[member_id] = 0
        self.capacity += 1
        self._compute_load()

    def _compute_load(self) -> None:
        self.load = -1.0 if self.capacity <= 0 else self.task_count / self.capacity

    def add_task(self, member_id: str, task: TaskId, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member_id, set()).add(task)
        n = self.member_task_counts[member_id] + 1
        self.member_task_counts[member_id] = n
        self._compute_load()
        return n

    def add_task_to_least_loaded_member(self, task: TaskId, active: bool) -> int:
        if not self.member_task_counts:
            return -1
        member = min(self.member_task_counts, key=lambda m: self.member_task_counts[m])  # first of the least
        return self.add_task(member, task, active)

    def has_task(self, task: TaskId) -> bool:
        return task in self.tasks


class _LoadQueue:
    """A PriorityQueue of processes by load (ties: the order they were added in)."""

    def __init__(self, processes: Iterable[ProcessState]) -> None:
        self._seq = itertools.count()
        self._heap: list[tuple[float, int, ProcessState]] = []
        for p in processes:
            self.add(p)

    def add(self, p: ProcessState) -> None:
        heapq.heappush(self._heap, (p.load, next(self._seq), p))

    def poll(self) -> ProcessState | None:
        return heapq.heappop(self._heap)[2] if self._heap else None

    def __bool__(self) -> bool:
        return bool(self._heap)


@dataclass(frozen=True, slots=True)
class _Member:
    process_id: str
    member_id: str


class _State:
    def __init__(self) -> None:
        self.active_prev: dict[TaskId, _Member] = {}
        self.standby_prev: dict[TaskId, list[_Member]] = {}
        self.processes: dict[str, ProcessState] = {}
        self.num_standby = 0
        self.total_active = 0
        self.total_tasks = 0
        self.members_with_active_capacity = 0
        self.members_with_capacity = 0
        self.active_per_member = 0
        self.tasks_per_member = 0


def _per_member(tasks: int, members: int) -> int:
    """computeTasksPerMember: the ceiling of tasks / members."""
    return 0 if members == 0 else -(-tasks // members)


def assign(members: list[AssignorMember], subtopologies: list[AssignorSubtopology], num_standby_replicas: int
           ) -> dict[str, tuple[Tasks, Tasks]]:
    """StickyTaskAssignor.assign: member id -> (active tasks, standby tasks)."""
    st = _State()
    st.num_standby = num_standby_replicas
    for sub in subtopologies:
        st.total_tasks += sub.number_of_tasks
        st.total_active += sub.number_of_tasks
        if sub.stateful:
            st.total_tasks += sub.number_of_tasks * num_standby_replicas
    st.members_with_active_capacity = st.members_with_capacity = len(members)
    st.active_per_member = _per_member(st.total_active, st.members_with_active_capacity)
    st.tasks_per_member = _per_member(st.total_tasks, st.members_with_capacity)
    candidates: dict[TaskId, list[tuple[bool, int, _Member]]] = {}
    for m in members:
        member = _Member(m.process_id, m.member_id)
        st.processes.setdefault(m.process_id, ProcessState(m.process_id)).add_member(m.member_id)
        for s, ps in m.active.items():
            for p in ps:
                st.active_prev[(s, p)] = member
        for s, ps in m.standby.items():  # collectStandbyCandidates
            for p in ps:
                candidates.setdefault((s, p), []).append((True, m.task_offsets.get(s, {}).get(p, 0), member))
        for s, offsets in m.task_offsets.items():
            for p, offset in offsets.items():
                if p not in m.standby.get(s, set()):
                    candidates.setdefault((s, p), []).append((False, offset, member))
    for task, cands in candidates.items():  # rankStandbyCandidates: previous standbys, then most offsets
        cands.sort(key=lambda c: (0 if c[0] else 1, -c[1]))
        st.standby_prev[task] = [c[2] for c in cands]
    active = [(sub.subtopology_id, p) for sub in subtopologies for p in range(sub.number_of_tasks)]
    _assign_active(st, active)
    if st.num_standby > 0:
        stateful = [(sub.subtopology_id, p) for sub in subtopologies if sub.stateful
                    for p in range(sub.number_of_tasks)]
        _assign_standby(st, stateful)
    out: dict[str, tuple[Tasks, Tasks]] = {m.member_id: ({}, {}) for m in members}
    for process in st.processes.values():
        for member_id, tasks in process.active.items():
            for s, p in tasks:
                out[member_id][0].setdefault(s, set()).add(p)
        for member_id, tasks in process.standby.items():
            for s, p in tasks:
                out[member_id][1].setdefault(s, set()).add(p)
    return out


def _update_active_per_member(st: _State, n: int) -> None:
    if n == st.active_per_member:
        st.members_with_active_capacity -= 1
        st.total_active -= n
        st.active_per_member = _per_member(st.total_active, st.members_with_active_capacity)


def _update_tasks_per_member(st: _State, n: int) -> None:
    if n == st.tasks_per_member:
        st.members_with_capacity -= 1
        st.total_tasks -= n
        st.tasks_per_member = _per_member(st.total_tasks, st.members_with_capacity)


def _active_quota_left(st: _State, process: ProcessState, m: _Member) -> bool:
    return process.member_task_counts[m.member_id] < st.active_per_member


def _quota_left(st: _State, process: ProcessState, m: _Member) -> bool:
    return process.member_task_counts[m.member_id] < st.tasks_per_member


def _prev_member_with_least_load(st: _State, members: list[_Member] | None, standby_task: TaskId | None
                                 ) -> _Member | None:
    """findPrevMemberWithLeastLoad: the first candidate, replaced by one whose process and member
    are both less loaded."""
    if not members:
        return None
    candidate: _Member | None = None
    cand_process_load = cand_member_load = float("inf")
    for m in members:
        process = st.processes[m.process_id]
        if standby_task is not None and process.has_task(standby_task):
            continue
        process_load, member_load = process.load, process.member_task_counts[m.member_id]
        if candidate is None or (process_load < cand_process_load and member_load < cand_member_load):
            candidate, cand_process_load, cand_member_load = m, process_load, member_load
    return candidate


def _assign_active(st: _State, tasks: list[TaskId]) -> None:
    tasks.sort(key=lambda t: (t[1], t[0]))
    left = []
    for task in tasks:  # to the previous owner while it has quota
        prev = st.active_prev.get(task)
        if prev is not None:
            process = st.processes[prev.process_id]
            if _active_quota_left(st, process, prev):
                n = process.add_task(prev.member_id, task, True)
                _update_active_per_member(st, n)
                _update_tasks_per_member(st, n)
                continue
        left.append(task)
    tasks = []
    for task in left:  # to a previous standby owner
        prev = _prev_member_with_least_load(st, st.standby_prev.get(task), None)
        if prev is not None:
            owner = st.processes[prev.process_id]
            if _active_quota_left(st, owner, prev):
                n = owner.add_task(prev.member_id, task, True)
                _update_active_per_member(st, n)
                _update_tasks_per_member(st, n)
                continue
        tasks.append(task)
    tasks.sort()
    queue = _LoadQueue(st.processes.values())
    for task in tasks:  # the rest to the least loaded process
        least = queue.poll()
        if least is None:
            raise TaskAssignorError(f"No process available to assign active task {task[0]}_{task[1]}.")
        n = least.add_task_to_least_loaded_member(task, True)
        if n == -1:
            raise TaskAssignorError(f"No member available to assign active task {task[0]}_{task[1]}.")
        _update_active_per_member(st, n)
        _update_tasks_per_member(st, n)
        queue.add(least)


def _assign_standby(st: _State, tasks: list[TaskId]) -> None:
    tasks.sort(key=lambda t: (t[1], t[0]), reverse=True)
    to_least_loaded: list[tuple[TaskId, int]] = []
    for task in tasks:
        i = 0
        while i < st.num_standby:
            prev_active = st.active_prev.get(task)
            if prev_active is not None:
                process = st.processes[prev_active.process_id]
                if not process.has_task(task) and _quota_left(st, process, prev_active):
                    _update_tasks_per_member(st, process.add_task(prev_active.member_id, task, False))
                    i += 1
                    continue
            prev = _prev_member_with_least_load(st, st.standby_prev.get(task), task)
            if prev is None:
                break
            process = st.processes[prev.process_id]
            if not _quota_left(st, process, prev):
                break
            _update_tasks_per_member(st, process.add_task(prev.member_id, task, False))
            i += 1
        if i < st.num_standby:
            to_least_loaded.append((task, st.num_standby - i))
    to_least_loaded.sort(key=lambda x: (x[0][0], x[0][1]), reverse=True)
    queue = _LoadQueue(st.processes.values())
    for task, remaining in to_least_loaded:
        for i in range(remaining):
            if not _standby_to_least_loaded(st, queue, task):
                log.warning("Unable to assign %d of %d standby tasks for task [%s_%d]. There is not enough available "
                            "capacity. You should increase the number of threads and/or application instances to "
                            "maintain the requested number of standby replicas.",
                            st.num_standby - i, st.num_standby, task[0], task[1])
                break


def _standby_to_least_loaded(st: _State, queue: _LoadQueue, task: TaskId) -> bool:
    """assignStandbyToMemberWithLeastLoad: the least loaded process that does not hold the task."""
    process = queue.poll()
    if process is None:
        return False
    found = False
    if not process.has_task(task):
        n = process.add_task_to_least_loaded_member(task, False)
        if n != -1:
            found = True
            _update_tasks_per_member(st, n)
    elif queue:
        found = _standby_to_least_loaded(st, queue, task)
    queue.add(process)
    return found


# -- TargetAssignmentBuilder ----------------------------------------------------------------------
def build_target_assignment(group: StreamsGroup, now_ms: int) -> None:
    """streams.TargetAssignmentBuilder.build: every member's target from the sticky assignor (no
    task while the topology is not ready); the assignment epoch becomes the group epoch."""
    configured = group.configured_topology
    if configured is not None and configured.is_ready:
        subs = [AssignorSubtopology(sid, s.number_of_tasks, bool(s.state_changelog_topics))
                for sid, s in sorted((configured.subtopologies or {}).items())]
        members = [AssignorMember(m.member_id, m.process_id, m.assigned.active_tasks(),
                                  copy_tasks(m.assigned.standby),
                                  group.task_offsets.get(m.member_id, NO_TASK_OFFSETS).offsets)
                   for m in group.members.values()]
        try:
            result = assign(members, subs, int(group.last_assignment_configs.get("num.standby.replicas", "0")))
        except TaskAssignorError as e:
            raise StreamsGroupError(ErrorCode.unknown_server_error,
                                    f"Failed to compute a new target assignment for epoch {group.group_epoch}: "
                                    f"{e}") from None
        group.target = {mid: TasksTuple(copy_tasks(a), copy_tasks(s)) for mid, (a, s) in result.items()}
    else:
        group.target = {mid: EMPTY_TASKS for mid in group.members}
    group.assignment_epoch = group.group_epoch
    group.assignment_timestamp = now_ms
