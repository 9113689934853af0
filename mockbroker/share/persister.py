"""The share coordinator's persisted state of every share-partition, cluster-wide.

Mirrors Kafka 4.4's ``ShareCoordinatorShard`` (with ``PersisterStateBatchCombiner``) as the
``DefaultStatePersister`` reaches it: InitializeShareGroupState, ReadShareGroupState (which records
the reader's leader epoch), WriteShareGroupState, ReadShareGroupStateSummary and
DeleteShareGroupState, each for one share-partition (group, topic id, partition), with Kafka's
checks and errors (INVALID_REQUEST for an uninitialized partition, FENCED_LEADER_EPOCH,
FENCED_STATE_EPOCH, UNKNOWN_TOPIC_OR_PARTITION).

The state lives here, not in a leader's memory: a share-partition that moves to another leader (a
leader election, a broker stopping) is loaded again from it, as the new leader's SharePartition
reads the share coordinator.  The coordinator of a share-partition is the leader of its
``__share_group_state`` partition (the hash of ``group:topicId:partition`` modulo
share.coordinator.state.topic.num.partitions, replicated over
share.coordinator.state.topic.replication.factor brokers): with none of its replicas alive every
call answers COORDINATOR_NOT_AVAILABLE, as the persister's would.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from protocol.errors import ErrorCode

from ..group.registry import OffsetsTopicLeaders
from ..state.metadata import ClusterMetadata

# (first offset, last offset, delivery state, delivery count): PersisterStateBatch
StateBatch = tuple[int, int, int, int]
Key = tuple[str, uuid.UUID, int]


@dataclass(slots=True)
class ShareGroupOffset:
    """ShareGroupOffset: what the coordinator holds of one share-partition."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int = 0
    batches: list[StateBatch] = field(default_factory=list)


@dataclass(slots=True)
class ReadResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    start_offset: int = -1
    state_epoch: int = 0
    batches: list[StateBatch] = field(default_factory=list)


@dataclass(slots=True)
class SummaryResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    start_offset: int = -1
    delivery_complete_count: int = 0
    leader_epoch: int = 0
    state_epoch: int = 0


def combine(so_far: list[StateBatch], new: list[StateBatch], start_offset: int) -> list[StateBatch]:
    """PersisterStateBatchCombiner.combineStateBatches: batches below ``start_offset`` pruned (cut at
    it), overlaps resolved by the higher delivery count, then the higher state id, neighbours with
    the same state and count merged."""
    pruned = []
    for first, last, state, count in (*so_far, *new):
        if start_offset == -1 or last >= start_offset:
            pruned.append((max(first, start_offset) if start_offset != -1 else first, last, state, count))
    if len(pruned) <= 1:
        return pruned
    events: list[tuple[int, bool, tuple[int, int]]] = []
    for first, last, state, count in pruned:
        events.append((first, True, (count, state)))
        events.append((last + 1, False, (count, state)))
    events.sort(key=lambda e: (e[0], e[1]))  # at one offset the ends before the beginnings
    active: dict[tuple[int, int], int] = {}
    out: list[StateBatch] = []
    open_from, winner = -1, None
    i = 0
    while i < len(events):
        offset = events[i][0]
        if winner is not None and offset > open_from:
            _append(out, open_from, offset - 1, winner)
        while i < len(events) and events[i][0] == offset:
            _, begin, priority = events[i]
            i += 1
            if begin:
                active[priority] = active.get(priority, 0) + 1
            elif active[priority] == 1:
                del active[priority]
            else:
                active[priority] -= 1
        winner = max(active) if active else None
        open_from = offset
    return out


def _append(out: list[StateBatch], first: int, last: int, winner: tuple[int, int]) -> None:
    count, state = winner
    if out:
        f, l_, s, c = out[-1]
        if l_ + 1 == first and s == state and c == count:
            out[-1] = (f, last, s, c)
            return
    out.append((first, last, state, count))


class SharePersister:
    """Every share-partition's persisted state (one per cluster, as the share coordinators' log is)."""

    def __init__(self, cluster: ClusterMetadata, num_partitions: int, replication_factor: int) -> None:
        self.cluster = cluster
        self.leaders = OffsetsTopicLeaders(cluster, num_partitions, replication_factor)
        self.states: dict[Key, ShareGroupOffset] = {}
        self.leader_epochs: dict[Key, int] = {}
        self.writes = 0  # ShareCoordinatorWrite, for the metrics

    def _unavailable(self, key: Key) -> bool:
        """The share coordinator of ``key`` (SharePartitionKey.asCoordinatorKey) has no live replica."""
        group, topic_id, partition = key
        return self.leaders.coordinator(f"{group}:{topic_id}:{partition}") is None

    def _partition_count(self, topic_id: uuid.UUID) -> int:
        topic = self.cluster.topics_by_id.get(topic_id)
        return len(topic.partitions) if topic is not None else -1

    def _check(self, key: Key) -> tuple[ErrorCode, str | None] | None:
        if self._unavailable(key):
            return ErrorCode.coordinator_not_available, None
        _, topic_id, partition = key
        if partition < 0:
            return ErrorCode.invalid_request, "The partition id cannot be a negative number."
        if partition >= self._partition_count(topic_id):
            return ErrorCode.unknown_topic_or_partition, None
        return None

    # -- InitializeShareGroupState -------------------------------------------------------------
    def initialize(self, key: Key, state_epoch: int, start_offset: int) -> ErrorCode:
        """ShareCoordinatorShard.initializeState: a fresh snapshot (no batches) at ``start_offset``
        (-1: the leader resets by share.auto.offset.reset on its first read)."""
        err = self._check(key)
        if err is not None:
            return err[0]
        current = self.states.get(key)
        if current is not None and current.state_epoch > state_epoch:
            return ErrorCode.fenced_state_epoch
        snapshot = current.snapshot_epoch + 1 if current is not None else 0
        # ShareGroupOffset.fromRequest: leader epoch 0, and no delivery count (-1) while the start is unknown
        self.states[key] = ShareGroupOffset(snapshot, state_epoch, 0, start_offset, -1 if start_offset == -1 else 0)
        self.writes += 1
        return ErrorCode.none

    def initialized(self, key: Key) -> bool:
        return key in self.states

    # -- ReadShareGroupState ------------------------------------------------------------------------
    def read(self, key: Key, leader_epoch: int) -> ReadResult:
        """readStateAndMaybeUpdateLeaderEpoch."""
        err = self._check(key)
        if err is not None:
            return ReadResult(*err)
        state = self.states.get(key)
        if state is None:
            return ReadResult(ErrorCode.invalid_request, "Read operation on uninitialized share partition not allowed.")
        known = self.leader_epochs.get(key)
        if known is not None and known > leader_epoch:
            return ReadResult(ErrorCode.fenced_leader_epoch, "The leader epoch in the request is older than the "
                              "epoch on the broker.")
        if known != leader_epoch:
            self.leader_epochs[key] = leader_epoch
            state.leader_epoch = leader_epoch
            self.writes += 1
        return ReadResult(start_offset=state.start_offset, state_epoch=state.state_epoch, batches=list(state.batches))

    # -- WriteShareGroupState ------------------------------------------------------------------------
    def write(self, key: Key, state_epoch: int, leader_epoch: int, start_offset: int, delivery_complete_count: int,
              batches: list[StateBatch]) -> tuple[ErrorCode, str | None]:
        """writeState: the batches merged into what is kept, the start offset never moving back."""
        err = self._check(key)
        if err is not None:
            return err
        state = self.states.get(key)
        if state is None:
            return ErrorCode.invalid_request, "Write operation on uninitialized share partition not allowed."
        if self.leader_epochs.get(key, -1) > leader_epoch:
            return ErrorCode.fenced_leader_epoch, None
        if state.state_epoch > state_epoch:
            return ErrorCode.fenced_state_epoch, None
        new_start = max(start_offset, state.start_offset)
        if start_offset == state.start_offset:
            complete = max(delivery_complete_count, state.delivery_complete_count)
        elif start_offset < state.start_offset:
            complete = state.delivery_complete_count
        else:
            complete = delivery_complete_count
        state.batches = combine(state.batches, batches, new_start)
        state.start_offset = new_start
        state.delivery_complete_count = complete
        self.writes += 1
        return ErrorCode.none, None

    # -- ReadShareGroupStateSummary / DeleteShareGroupState ----------------------------------------------
    def summary(self, key: Key) -> SummaryResult:
        err = self._check(key)
        if err is not None:
            return SummaryResult(*err)
        state = self.states.get(key)
        if state is None:
            return SummaryResult(start_offset=-1, state_epoch=-1)
        return SummaryResult(start_offset=state.start_offset, delivery_complete_count=state.delivery_complete_count,
                             leader_epoch=state.leader_epoch, state_epoch=state.state_epoch)

    def delete(self, key: Key) -> ErrorCode:
        err = self._check(key)
        if err is not None:
            return err[0]
        if self.states.pop(key, None) is not None:
            self.writes += 1
        self.leader_epochs.pop(key, None)
        return ErrorCode.none

    def delete_topic(self, topic_id: uuid.UUID) -> None:
        """maybeCleanupShareState: a deleted topic's share-partitions go."""
        for key in [k for k in self.states if k[1] == topic_id]:
            self.states.pop(key, None)
            self.leader_epochs.pop(key, None)
