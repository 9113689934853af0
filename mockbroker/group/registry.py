"""The groups of the cluster and where each is coordinated.

Mirrors the part of Kafka 4.x's ``GroupMetadataManager`` that both protocols
share (its ``groups`` map, ``group()``/``getOrMaybeCreate...`` lookups and
``removeGroup``) together with what ``GroupCoordinatorService`` decides before
a request reaches a shard: which broker coordinates a group (the leader of its
``__consumer_offsets`` partition, ``partitionFor``) and whether that broker is
the one asked (``validateGroupStatus``: INVALID_GROUP_ID,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR).

One registry serves every simulated broker.  It remembers which broker owned
each group when it was loaded; when brokers stop or start and a group's
coordinator changes, its listeners are told (Kafka's ``onResignation`` /
``onElection`` for the partition): the classic coordinator unloads the group
and loads it again from what it last stored, a consumer group carries on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from protocol.errors import ErrorCode

from ..common.clock import Clock
from ..state.cluster_view import BrokerView, ClusterView
from .group import Group

# (the group, the broker that coordinated it, the one that does now; -1: none is alive)
CoordinatorMoveListener = Callable[[Group, int, int], None]


@functools.lru_cache(maxsize=65536)  # asked on every group request (coordinator check), per group id
def java_string_hash(s: str) -> int:
    """Java's String.hashCode over UTF-16 code units (unsigned 32-bit)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


class OffsetsTopicLeaders:
    """Who leads each ``__consumer_offsets`` partition, hence coordinates its groups.

    Partition p's replicas are min(offsets.topic.replication.factor, brokers)
    brokers starting at broker p % n (Kafka's round-robin replica placement
    without racks); the first live replica leads.  A stopped leader's
    partitions move to the next live replica; a partition with no live
    replica has no leader (COORDINATOR_NOT_AVAILABLE) until one returns.
    Leadership does not move back by itself when a broker returns; ``elect``
    moves it to another live replica, as a preferred-replica election or a
    reassignment of the partition does.
    """

    def __init__(self, cluster: ClusterView, num_partitions: int, replication_factor: int) -> None:
        self.cluster = cluster
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.leaders: dict[int, int] = {}

    def partition_for(self, group_id: str) -> int:
        """GroupCoordinatorService.partitionFor: Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions.
        Utils.abs is Math.abs except that Integer.MIN_VALUE gives 0 (not the 0x7fffffff mask, which
        differs for every other negative hash)."""
        h = java_string_hash(group_id)
        signed = h - (1 << 32) if h >= 1 << 31 else h
        return (0 if signed == -(1 << 31) else abs(signed)) % self.num_partitions

    def replicas(self, partition: int) -> list[int]:
        ids = sorted(self.cluster.brokers)
        if not ids:
            return []
        rf = max(1, min(self.replication_factor, len(ids)))
        start = partition % len(ids)
        return [ids[(start + i) % len(ids)] for i in range(rf)]

    def leader(self, partition: int) -> int:
        lead = self.leaders.get(partition)
        if lead is None or lead < 0 or not self._alive(lead):
            lead = next((r for r in self.replicas(partition) if self._alive(r)), -1)
            if lead >= 0 or partition in self.leaders:
                self.leaders[partition] = lead
        return lead

    def elect(self, partition: int, node_id: int) -> None:
        """Leadership of ``partition`` moves to ``node_id``, which must be a live replica of it
        (ValueError otherwise): what a preferred-replica election or a reassignment does to a
        ``__consumer_offsets`` partition while every broker stays up."""
        replicas = self.replicas(partition)
        if node_id not in replicas or not self._alive(node_id):
            raise ValueError(f"broker {node_id} is not a live replica {replicas} of partition {partition}")
        self.leaders[partition] = node_id

    def _alive(self, node_id: int) -> bool:
        node = self.cluster.brokers.get(node_id)
        return node is not None and node.alive

    def coordinator(self, group_id: str) -> BrokerView | None:
        lead = self.leader(self.partition_for(group_id))
        return self.cluster.brokers.get(lead) if lead >= 0 else None


class GroupRegistry:
    """Every group by id (both types), its coordinator, and the injected loading windows."""

    def __init__(self, cluster: ClusterView, clock: Clock, offsets_topic_partitions: int,
                 offsets_topic_replication_factor: int) -> None:
        self.clock = clock
        self.leaders = OffsetsTopicLeaders(cluster, offsets_topic_partitions, offsets_topic_replication_factor)
        self.groups: dict[str, Group] = {}
        # which broker coordinated each group when it was loaded (to unload/load it on a move)
        self._owner: dict[str, int] = {}
        # injected: __consumer_offsets partitions "loading" until a monotonic deadline (ms)
        self._loading_until: dict[int, int] = {}
        self._listeners: list[CoordinatorMoveListener] = []

    # -- placement ------------------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return self.leaders.partition_for(group_id)

    def coordinator_node(self, group_id: str) -> BrokerView | None:
        return self.leaders.coordinator(group_id)

    def coordinator_id(self, group_id: str) -> int:
        node = self.coordinator_node(group_id)
        return node.node_id if node is not None else -1

    def validate_group_status(self, group_id: str | None, node_id: int, allow_empty_id: bool = False
                              ) -> ErrorCode | None:
        """GroupCoordinator.validateGroupStatus: INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE,
        COORDINATOR_LOAD_IN_PROGRESS (injected), NOT_COORDINATOR; None when ``node_id`` coordinates it."""
        if group_id is None or (not group_id and not allow_empty_id):
            return ErrorCode.invalid_group_id
        node = self.coordinator_node(group_id)
        if node is None:
            return ErrorCode.coordinator_not_available
        if self._loading_until and self.is_loading(group_id):
            return ErrorCode.coordinator_load_in_progress
        if node.node_id != node_id:
            return ErrorCode.not_coordinator
        return None

    # -- loading (a fault) ----------------------------------------------------------------------------
    def inject_loading(self, group_id: str, duration_ms: int) -> None:
        """Make the group's __consumer_offsets partition load for ``duration_ms`` (a fault: Kafka
        answers COORDINATOR_LOAD_IN_PROGRESS only while a new coordinator reads the partition)."""
        part = self.partition_for(group_id)
        self._loading_until[part] = self.clock.monotonic_ms() + duration_ms

    def is_loading(self, group_id: str) -> bool:
        part = self.partition_for(group_id)
        until = self._loading_until.get(part)
        if until is None:
            return False
        if self.clock.monotonic_ms() >= until:
            del self._loading_until[part]
            return False
        return True

    # -- the groups ---------------------------------------------------------------------------------
    def get(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def put(self, group: Group) -> None:
        """Add a group, or replace one of the same id (a group changing protocol, or loaded again).
        A new group belongs to the broker coordinating it now; a replaced one keeps its owner."""
        gid = group.group_id
        self.groups[gid] = group
        if gid not in self._owner:
            self._owner[gid] = self.coordinator_id(gid)

    def remove(self, group_id: str) -> None:
        self.groups.pop(group_id, None)
        self._owner.pop(group_id, None)

    def owner(self, group_id: str) -> int | None:
        """The broker that coordinated the group when it was loaded (None: no such group)."""
        return self._owner.get(group_id)

    def groups_coordinated_by(self, node_id: int) -> list[Group]:
        return [g for gid, g in self.groups.items() if self.coordinator_id(gid) == node_id]

    # -- coordinator moves ----------------------------------------------------------------------------
    def add_listener(self, listener: CoordinatorMoveListener) -> None:
        self._listeners.append(listener)

    def move_coordinator(self, group_id: str, node_id: int) -> None:
        """The leadership of the group's ``__consumer_offsets`` partition moves to ``node_id`` (a live
        replica; ValueError otherwise), with every group of that partition: the old coordinator
        resigns and answers NOT_COORDINATOR, the new one loads them (Kafka's ``onResignation`` /
        ``onElection``), and the clients find it with FindCoordinator."""
        self.leaders.elect(self.partition_for(group_id), node_id)
        self.on_brokers_changed()

    def on_brokers_changed(self) -> None:
        """A broker stopped or started, or a partition's leadership moved: tell the listeners of every
        group whose coordinator changed."""
        for gid in list(self.groups):
            new = self.coordinator_id(gid)
            old = self._owner.get(gid)
            if old == new:
                continue
            self._owner[gid] = new
            for listener in self._listeners:
                listener(self.groups[gid], -1 if old is None else old, new)
