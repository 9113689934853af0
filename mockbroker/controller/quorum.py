"""The simulated KRaft controller quorum: Kafka's combined mode, every simulated broker also a controller.

Each simulated broker is a node with ``process.roles=broker,controller``, as the side-by-side Kafka
4.4.0 of the tests runs them (``bench/brokers.py``): the voters of ``__cluster_metadata`` are the
brokers, the quorum is static (``controller.quorum.voters``, ``kraft.version`` 0) until an
UpdateFeatures raises ``kraft.version`` to 1, and the raft leader is the lowest live voter (Kafka
elects one at random; the mock picks the lowest so runs repeat) while a majority of the voters
runs, none otherwise.  The controller listener is the
broker's own address, named ``CONTROLLER`` (a combined node has both; here one port serves them).

What DescribeQuorum reads (Kafka's ``LeaderState``/``RaftUtil.singletonDescribeQuorumResponse``):

* the metadata log's end offset: the records the controller wrote (``append``: feature levels;
  topic and partition changes are not counted) after those a freshly formatted Kafka of the release
  had written when it first answered (``BOOTSTRAP_METADATA_OFFSET``: 16 for Kafka 4.4, as recorded;
  16 for a release not recorded), plus the ``NoOpRecord`` it writes every
  ``metadata.max.idle.interval.ms`` (500 ms);
* each voter's log end offset and fetch times: a live voter is caught up (it fetches continuously);
  a stopped one keeps what it had when it stopped;
* the high watermark: the end offset a majority of the voters reached;
* the leader epoch: one more each time leadership moves;
* observers: live brokers that are not voters (none here: every broker is formatted as a voter).

With ``kraft.version`` 1 each voter shows its directory id (a random Uuid per node, as ``kafka-storage
format`` writes to meta.properties); with 0, the static quorum, it is the zero Uuid.

From ``kraft.version`` 1 the voters change (KIP-853, raft's ``AddVoterHandler``/``RemoveVoterHandler``):
``remove_voter`` makes a voter an observer (a removed leader resigns: the lowest live voter leads, a
new epoch), ``add_voter`` makes a running observer a voter again.  Each change is one VotersRecord,
committed at once (the mock's voters are always caught up) when a majority of the new set runs.
Every node that runs is also a registered controller (``ControllerRegistrationRecord``);
``unregister_controller`` removes a stopped one's registration until it starts again.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass

from protocol.errors import ErrorCode
from protocol.registry import BOOTSTRAP_METADATA_OFFSET

from ..common.clock import Clock
from ..state.metadata import ClusterMetadata

METADATA_TOPIC = "__cluster_metadata"  # Topic.CLUSTER_METADATA_TOPIC_NAME, partition 0
CONTROLLER_LISTENER = "CONTROLLER"     # controller.listener.names of a Kafka node
BOOTSTRAP_RECORDS = 16                 # the metadata log of a fresh node of a release not recorded
IDLE_INTERVAL_MS = 500                 # metadata.max.idle.interval.ms: a NoOpRecord when idle
ZERO_UUID = uuid.UUID(int=0)           # ReplicaKey.NO_DIRECTORY_ID


@dataclass(slots=True)
class Voter:
    node_id: int
    directory_id: uuid.UUID  # the node's metadata log directory id (shown from kraft.version 1)
    endpoint: tuple[str, int]
    stopped_offset: int | None = None  # its log end offset when it stopped
    stopped_ms: int = 0


@dataclass(frozen=True, slots=True)
class ReplicaState:
    node_id: int
    directory_id: uuid.UUID
    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int


class ControllerQuorum:
    def __init__(self, metadata: ClusterMetadata, clock: Clock, release: str) -> None:
        self.metadata = metadata
        self.clock = clock
        self.voters: dict[int, Voter] = {}
        self.nodes: dict[int, Voter] = {}  # every node ever started (a removed voter stays an observer)
        self.kraft_version = 0
        self._records = BOOTSTRAP_METADATA_OFFSET.get(release, BOOTSTRAP_RECORDS)
        self._start_ms = clock.monotonic_ms()
        self._leader = -1
        self.leader_epoch = 0
        self.controllers: set[int] = set()  # registered controllers (ClusterControlManager.controllerRegistrations)

    # -- membership (the Cluster tells it) -------------------------------------------------------
    def node_started(self, node_id: int, endpoint: tuple[str, int], voter: bool) -> None:
        """A node started: formatted as a voter (``voter``, at the cluster's first start) or restarted."""
        node = self.nodes.get(node_id)
        if node is None:
            node = self.nodes[node_id] = Voter(node_id, uuid.uuid4(), endpoint)
            if voter:
                self.voters[node_id] = node
        node.endpoint = endpoint
        node.stopped_offset = None
        self.controllers.add(node_id)  # a starting controller registers (ControllerRegistrationManager)
        self._elect()

    def node_stopped(self, node_id: int) -> None:
        node = self.nodes.get(node_id)
        if node is not None and node.stopped_offset is None:
            node.stopped_offset = self.end_offset()
            node.stopped_ms = self.clock.time_ms()
        self._elect()

    def _alive(self, node_id: int) -> bool:
        node = self.nodes.get(node_id)
        return node is not None and node.stopped_offset is None

    def _elect(self) -> None:
        """A new raft leader when the current one is gone (the lowest live voter), with a new epoch;
        none while fewer than a majority of the voters run (no election can be won, and a leader
        without a majority resigns: KIP-996's check quorum)."""
        live = sorted(v for v in self.voters if self._alive(v))
        if 2 * len(live) <= len(self.voters):
            self._leader = -1
            return
        if self._leader in live:
            return
        new = live[0]
        self._leader = new
        self.leader_epoch += 1

    @property
    def leader_id(self) -> int:
        self._elect()
        return self._leader

    # -- the metadata log --------------------------------------------------------------------------
    def append(self, records: int = 1) -> None:
        """The controller wrote ``records`` records to the metadata log."""
        self._records += records

    def end_offset(self) -> int:
        idle = max(self.clock.monotonic_ms() - self._start_ms, 0) // IDLE_INTERVAL_MS
        return self._records + idle

    def _replica(self, node: Voter, leo: int, now_ms: int) -> ReplicaState:
        directory = node.directory_id if self.kraft_version >= 1 else ZERO_UUID
        if node.stopped_offset is None:
            return ReplicaState(node.node_id, directory, leo, now_ms, now_ms)
        return ReplicaState(node.node_id, directory, node.stopped_offset, node.stopped_ms, node.stopped_ms)

    def voter_states(self) -> list[ReplicaState]:
        now, leo = self.clock.time_ms(), self.end_offset()
        return [self._replica(v, leo, now) for _, v in sorted(self.voters.items())]

    def observer_states(self) -> list[ReplicaState]:
        now, leo = self.clock.time_ms(), self.end_offset()
        return [self._replica(n, leo, now) for i, n in sorted(self.nodes.items())
                if i not in self.voters and n.stopped_offset is None and i in self.metadata.brokers]

    def high_watermark(self) -> int:
        """The end offset a majority of the voters reached (``LeaderState.maybeUpdateHighWatermark``)."""
        offsets = sorted((s.log_end_offset for s in self.voter_states()), reverse=True)
        return offsets[len(offsets) // 2] if offsets else -1

    # -- kraft.version ---------------------------------------------------------
    def upgrade_kraft_version(self, level: int, validate_only: bool) -> None:
        """``KafkaRaftClient.upgradeKRaftVersion``: from the static quorum to one with directory ids."""
        if not validate_only and level != self.kraft_version:
            self.kraft_version = level
            self.append()

    # -- voter changes (KIP-853) -------------------------------------------------------------------
    def voter_keys(self) -> str:
        """``VoterSet.voterKeys()`` as Kafka's error messages print it (by id here)."""
        return "[" + ", ".join(replica_key(i, v.directory_id) for i, v in sorted(self.voters.items())) + "]"

    def is_caught_up(self, node_id: int, directory_id: uuid.UUID | None) -> bool:
        """``LeaderState.isReplicaCaughtUp``: a running node of that id and directory id (it fetches
        continuously, so it is at the log end)."""
        node = self.nodes.get(node_id)
        return node is not None and node.stopped_offset is None and node.directory_id == directory_id

    def commits_with(self, voters: set[int]) -> bool:
        """Whether a VotersRecord naming ``voters`` commits: a majority of them runs."""
        return 2 * sum(1 for v in voters if self._alive(v)) > len(voters)

    def add_voter(self, node_id: int, endpoint: tuple[str, int]) -> None:
        """The VotersRecord adding the (caught-up, running) node ``node_id`` with its controller endpoint."""
        node = self.nodes[node_id]
        node.endpoint = endpoint
        self.voters[node_id] = node
        self.append()
        self._elect()

    def remove_voter(self, node_id: int) -> None:
        """The VotersRecord without ``node_id``: it stays a node (an observer while it runs); a leader
        no longer in the voter set resigns (``RemoveVoterHandler.highWatermarkUpdated``)."""
        del self.voters[node_id]
        self.append()
        self._elect()

    def unregister_controller(self, node_id: int) -> None:
        """The UnregisterControllerRecord: a running controller registers again at once (its
        ``ControllerRegistrationManager`` sees its registration gone), a stopped one when it starts."""
        if not self._alive(node_id):
            self.controllers.discard(node_id)
        self.append()


def replica_key(node_id: int, directory_id: uuid.UUID | None) -> str:
    """``ReplicaKey.toString``."""
    shown = "<undefined>" if directory_id in (None, ZERO_UUID) else kafka_uuid(directory_id)
    return f"ReplicaKey(id={node_id}, directoryId={shown})"


def kafka_uuid(u: uuid.UUID) -> str:
    """``Uuid.toString``: URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def voter_change_error(quorum: ControllerQuorum, cluster_id: str, request_cluster_id: str | None, voter_id: int,
                       directory: uuid.UUID | None, verb: str) -> tuple[ErrorCode, str | None] | None:
    """The checks AddRaftVoter and RemoveRaftVoter share, in ``KafkaRaftClient``'s order (the cluster
    id, a raft leader, a valid voter key); ``verb`` is "Add" or "Remove".  None when they pass."""
    if request_cluster_id is not None and request_cluster_id != cluster_id:
        return (ErrorCode.inconsistent_cluster_id,
                f'The given id "{request_cluster_id}" doesn\'t match the cluster id "{cluster_id}"')
    if quorum.leader_id < 0:
        return ErrorCode.not_leader_or_follower, None
    if voter_id < 0 or directory in (None, ZERO_UUID):
        return ErrorCode.invalid_request, f"{verb} voter request didn't include a valid voter"
    return None
