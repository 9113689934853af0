"""The group coordinator as the rest of the broker sees it.

Mirrors Kafka 4.x's ``GroupCoordinatorService``: the one object the request
handlers and the broker process talk to about groups.  It owns the pieces
Kafka's service reaches through its shards:

* ``GroupRegistry`` (``registry.py``): every group, which broker coordinates
  it, the injected loading windows, the coordinator moves;
* ``ClassicGroupCoordinator`` (``classic_coordinator.py``): JoinGroup, SyncGroup,
  Heartbeat, LeaveGroup;
* ``ConsumerGroupCoordinator`` (``consumer_coordinator.py``): KIP-848's
  ConsumerGroupHeartbeat and ConsumerGroupDescribe;
* ``StreamsGroupCoordinator`` (``streams_coordinator.py``): KIP-1071's
  StreamsGroupHeartbeat and StreamsGroupDescribe;
* ``OffsetMetadataManager`` (``offsets.py``): OffsetCommit, OffsetFetch,
  expiry, a deleted topic's offsets;
* the Heartbeat and Rebalance purgatories (each on its own timer, as Kafka
  gives each purgatory its own), the heartbeat one shared by both protocols.

It answers with data (results and dataclasses); the handlers build the wire
responses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode

from ..common.clock import Clock
from ..purgatory import DelayedOperationPurgatory, Timer
from ..state.cluster_view import BrokerView, ClusterView, TopicPartition
from .consumer_coordinator import ConsumerGroupCoordinator, ConsumerGroupHeartbeatResult
from .consumer_group import ConsumerGroupDescription
from .classic_coordinator import ClassicGroupCoordinator
from .group import DescribedGroup, Group, GroupType, ListedGroup, OffsetAndMetadata
from .classic_group import JoinGroupResult, SyncGroupResult
from .offsets import OffsetMetadataManager
from .registry import GroupRegistry

if TYPE_CHECKING:
    from .streams_coordinator import StreamsGroupCoordinator, StreamsGroupHeartbeatResult


class GroupCoordinatorService:
    def __init__(self, cluster: ClusterView, clock: Clock, config: Mapping[str, Any]) -> None:
        self.clock = clock
        self.registry = GroupRegistry(cluster, clock, config["offsets.topic.num.partitions"],
                                      config["offsets.topic.replication.factor"])
        self.heartbeat_purgatory = DelayedOperationPurgatory("Heartbeat", Timer(clock))
        self.rebalance_purgatory = DelayedOperationPurgatory("Rebalance", Timer(clock))
        self.classic = ClassicGroupCoordinator(self.registry, clock, self.heartbeat_purgatory,
                                               self.rebalance_purgatory, config)
        self.consumer = ConsumerGroupCoordinator(self.registry, cluster, clock, self.heartbeat_purgatory, config)
        self._cluster = cluster
        self._config = config
        self._streams: StreamsGroupCoordinator | None = None
        self.offsets = OffsetMetadataManager(self.registry, self.classic, clock, config)

    @property
    def streams(self) -> StreamsGroupCoordinator:
        """KIP-1071's coordinator, built (its modules imported) on first use: a run without streams
        groups never loads them (Kafka's shards build every coordinator at start; nothing a client
        sees differs, since a coordinator without groups holds nothing)."""
        if self._streams is None:
            from .streams_coordinator import StreamsGroupCoordinator

            self._streams = StreamsGroupCoordinator(self.registry, self._cluster, self.clock,
                                                    self.heartbeat_purgatory, self._config)
            self._streams.group_configs = self.consumer.group_configs
        return self._streams

    # -- FindCoordinator ---------------------------------------------------------------------------
    def find_coordinator(self, group_id: str) -> BrokerView | None:
        """The broker leading the group's __consumer_offsets partition (None: no live replica)."""
        return self.registry.coordinator_node(group_id)

    # -- the classic protocol ---------------------------------------------------------------------------
    def join_group(self, node_id: int, group_id: str, member_id: str, group_instance_id: str | None,
                   require_known_member_id: bool, client_id: str, client_host: str, rebalance_timeout_ms: int,
                   session_timeout_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]],
                   callback: Callable[[JoinGroupResult], None], reason: str | None) -> None:
        """The result goes to ``callback``, at once or when the join phase ends."""
        self.classic.join_group(node_id, group_id, member_id, group_instance_id, require_known_member_id,
                                client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                protocols, callback, reason)

    def sync_group(self, node_id: int, group_id: str, generation_id: int, member_id: str,
                   protocol_type: str | None, protocol_name: str | None, group_instance_id: str | None,
                   assignments: dict[str, bytes], callback: Callable[[SyncGroupResult], None]) -> None:
        """The result goes to ``callback``, at once or when the leader's assignment arrives."""
        self.classic.sync_group(node_id, group_id, generation_id, member_id, protocol_type, protocol_name,
                                group_instance_id, assignments, callback)

    def heartbeat(self, node_id: int, group_id: str, member_id: str, group_instance_id: str | None,
                  generation_id: int) -> ErrorCode:
        return self.classic.heartbeat(node_id, group_id, member_id, group_instance_id, generation_id)

    def leave_group(self, node_id: int, group_id: str, leaving: list[tuple[str, str | None, str | None]]
                    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """(top-level error, one error per leaving (member id, instance id, reason))."""
        return self.classic.leave_group(node_id, group_id, leaving)

    # -- KIP-848 ----------------------------------------------------------------------------------------
    def consumer_group_heartbeat(self, node_id: int, version: int, req: Any, client_id: str,
                                 client_host: str) -> ConsumerGroupHeartbeatResult:
        return self.consumer.heartbeat(node_id, version, req, client_id, client_host)

    def consumer_group_describe(self, node_id: int, group_ids: Iterable[str]) -> list[ConsumerGroupDescription]:
        return [self.consumer.describe(node_id, gid) for gid in group_ids]

    # -- KIP-1071 ---------------------------------------------------------------------------------------
    def streams_group_heartbeat(self, node_id: int, version: int, req: Any, client_id: str,
                                client_host: str) -> StreamsGroupHeartbeatResult:
        return self.streams.heartbeat(node_id, version, req, client_id, client_host)

    def streams_group_describe(self, node_id: int, group_ids: Iterable[str],
                               include_topology_description: bool = False) -> list[dict[str, Any]]:
        """Wire-shaped StreamsGroupDescribeResponse groups (v1: with their topology descriptions
        when asked)."""
        from .streams_description import attach_description

        groups = [self.streams.describe(node_id, gid) for gid in group_ids]
        return [attach_description(self.registry, g) for g in groups] if include_topology_description else groups

    def streams_group_topology_description_update(self, node_id: int, req: Any) -> tuple[ErrorCode, str | None]:
        return self.streams.topology_description_update(node_id, req)

    # -- offsets --------------------------------------------------------------------------------------------
    def commit_offsets(self, node_id: int, group_id: str, member_id: str, group_instance_id: str | None,
                       generation_id_or_member_epoch: int,
                       offsets: Sequence[tuple[TopicPartition, OffsetAndMetadata]],
                       api_version: int) -> list[ErrorCode]:
        """Each offset's error, in the order given (a group's refusal is every offset's)."""
        return self.offsets.commit_offsets(node_id, group_id, member_id, group_instance_id,
                                           generation_id_or_member_epoch, offsets, api_version)

    def commit_transactional_offsets(self, node_id: int, group_id: str, producer_id: int, member_id: str,
                                     group_instance_id: str | None, generation_id: int,
                                     offsets: Mapping[TopicPartition, OffsetAndMetadata | ErrorCode],
                                     api_version: int) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: per partition the error; stored offsets wait for the transaction's marker."""
        return self.offsets.commit_transactional_offsets(node_id, group_id, producer_id, member_id,
                                                         group_instance_id, generation_id, offsets, api_version)

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> ErrorCode:
        """A COMMIT/ABORT marker for ``__consumer_offsets`` ``partition`` (GroupCoordinatorService
        .completeTransaction): NOT_LEADER_OR_FOLLOWER while the partition has no live leader (the
        transaction coordinator writes it again), else the partition's groups' pending offsets of
        ``producer_id`` are committed or dropped."""
        if self.registry.leaders.leader(partition) < 0:
            return ErrorCode.not_leader_or_follower
        self.offsets.complete_transaction(producer_id, commit,
                                          lambda gid: self.registry.partition_for(gid) == partition)
        return ErrorCode.none

    def has_pending_transactional_offsets(self, group_id: str, tp: TopicPartition) -> bool:
        return self.offsets.has_pending_transactional_offsets(group_id, tp)

    def fetch_offsets(self, node_id: int, group_id: str, partitions: list[TopicPartition] | None,
                      member_id: str | None = None, member_epoch: int = -1
                      ) -> tuple[ErrorCode, dict[TopicPartition, OffsetAndMetadata | None]]:
        return self.offsets.fetch_offsets(node_id, group_id, partitions, member_id, member_epoch)

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        """Every committed offset of the group, whoever coordinates it (for tests and tools)."""
        return {tp: om for tp, om in self.offsets.committed_offsets(group_id).items() if om is not None}

    def delete_offsets(self, node_id: int, group_id: str, topics: list[tuple[str, list[int]]]
                       ) -> tuple[ErrorCode, list[tuple[str, list[tuple[int, ErrorCode]]]]]:
        """OffsetDelete: (the group's error, per topic of ``topics`` its partitions' GROUP_SUBSCRIBED_TO_TOPIC
        or NONE)."""
        return self.offsets.delete_offsets(node_id, group_id, topics)

    def expire_offsets(self) -> int:
        """offsets.retention.check.interval.ms: drop expired offsets, then Empty groups without offsets."""
        return self.offsets.cleanup_expired_offsets()

    def delete_topic_offsets(self, topic: str) -> None:
        """A topic was deleted: its committed offsets go from every group."""
        self.offsets.on_topic_deleted(topic)

    # -- ListGroups / DescribeGroups / DeleteGroups --------------------------------------------------------
    def list_groups(self, node_id: int, states_filter: Iterable[str] = (),
                    types_filter: Iterable[str] = ()) -> list[ListedGroup]:
        """The groups ``node_id`` coordinates; both filters are case-insensitive, empty means all."""
        states = {s.lower() for s in states_filter}
        types = {t.lower() for t in types_filter}
        out = []
        for g in self.registry.groups_coordinated_by(node_id):
            listed = g.as_listed_group()
            # isInStates: the state's lower-case name (StreamsGroupState.toLowerCaseString: not_ready)
            state = "not_ready" if listed.state == "NotReady" else listed.state.lower()
            if (states and state not in states) or (types and listed.group_type not in types):
                continue
            out.append(listed)
        return out

    def describe_groups(self, node_id: int, group_ids: Iterable[str]) -> list[DescribedGroup]:
        """Per group: its description, or the error (GROUP_ID_NOT_FOUND, state Dead, for an unknown one)."""
        out = []
        for gid in group_ids:
            err = self.registry.validate_group_status(gid, node_id, allow_empty_id=True)
            group = self.registry.get(gid) if err is None else None
            if err is not None:
                out.append(DescribedGroup(gid, err))
            elif group is None:
                out.append(DescribedGroup(gid, ErrorCode.group_id_not_found, f"Group {gid} not found.",
                                          state="Dead"))
            else:
                out.append(group.as_described_group())
        return out

    def delete_groups(self, node_id: int, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        """An Empty group goes with its offsets; NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND otherwise."""
        out = {}
        for gid in group_ids:
            err = self.registry.validate_group_status(gid, node_id, allow_empty_id=True)
            if err is not None:
                out[gid] = err
                continue
            g = self.registry.get(gid)
            if g is None:
                out[gid] = ErrorCode.group_id_not_found
                continue
            err = g.validate_delete_group()
            if err is not None:
                out[gid] = err
                continue
            g.transition_to_dead(self.clock.time_ms())
            self.registry.remove(gid)
            self.offsets.on_group_deleted(gid)
            out[gid] = ErrorCode.none
        return out

    # -- the process ------------------------------------------------------------------------------------
    def get_group(self, group_id: str) -> Group | None:
        return self.registry.get(group_id)

    def expel_member(self, group_id: str, member_id: str) -> bool:
        """The admin API's expel (a classic, consumer or streams group's member): its session expires
        now, through its coordinator's own session-expiry path. False: no such group or member."""
        group = self.registry.get(group_id)
        if group is None:
            return False
        if group.group_type is GroupType.CLASSIC:
            return self.classic.expel(group_id, member_id)
        if group.group_type is GroupType.CONSUMER:
            return self.consumer.expel(group_id, member_id)
        return group.group_type is GroupType.STREAMS and self.streams.expel(group_id, member_id)

    def on_brokers_changed(self) -> None:
        """A broker stopped or started: groups whose coordinator changed move (classic ones reload)."""
        self.registry.on_brokers_changed()

    def move_coordinator(self, group_id: str, node_id: int) -> None:
        """The group's __consumer_offsets partition's leadership moves to ``node_id`` (a live replica;
        ValueError otherwise): its groups move as when a broker stops (classic ones reload)."""
        self.registry.move_coordinator(group_id, node_id)

    def inject_loading(self, group_id: str, duration_ms: int) -> None:
        """Fault: the group's coordinator answers COORDINATOR_LOAD_IN_PROGRESS for ``duration_ms``."""
        self.registry.inject_loading(group_id, duration_ms)

    @property
    def rebalances(self) -> int:
        """Join phases completed so far (every classic group)."""
        return self.classic.rebalances

    def gauges(self) -> dict[str, dict[str, int]]:
        """PurgatorySize and NumDelayedOperations of the Heartbeat and Rebalance purgatories."""
        return {"Heartbeat": self.heartbeat_purgatory.gauges(), "Rebalance": self.rebalance_purgatory.gauges()}

    def shutdown(self) -> None:
        """The process stops: no session or rebalance timeout fires any more."""
        self.heartbeat_purgatory.shutdown()
        self.rebalance_purgatory.shutdown()
