"""Simulated log directories: where each broker keeps its replicas (``log.dirs``), their sizes, moves.

Kafka's ``LogManager`` places a new replica in the live log directory holding the fewest logs
(``nextLogDirs``) and ``ReplicaManager.describeLogDirs``/``alterReplicaLogDirs`` answer what is
where and move a replica between a broker's directories.  Here every simulated broker has the
directories ``log.dirs`` names (Kafka's key: a list of paths; one, ``log.dir``'s
``/tmp/kafka-logs``, when unset) -- names, not real paths: the logs stay in memory.

* A replica's size is the bytes of its log: the leader's whole log, a follower's up to its log end
  offset (``PartitionLog.size_below``).  Its offset lag is ``max(high watermark - log end offset,
  0)`` of that replica's own log, as Kafka computes it (0 but for a future log); a future log's lag
  is the current log's end offset minus its own.
* Total and usable bytes (KIP-827): each directory is a volume of ``mock.log.dir.total.bytes``;
  usable is that minus the bytes of the logs in it.
* AlterReplicaLogDirs to another directory creates a future log there that copies the current one
  (``ReplicaAlterLogDirsThread``): it reaches the current log's end after the broker's replication
  lag, again until it caught up with an end that stood still, and then replaces the current log.
  A partition the broker does not host yet keeps the directory for when it does
  (``maybeUpdatePreferredLogDir``) and answers REPLICA_NOT_AVAILABLE.
* A replica is placed in its directory when first described or moved, in the directory with the
  fewest of the broker's replicas then: what ``nextLogDirs`` gives at creation when replicas are
  not moved in between.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass

from protocol.errors import ErrorCode

from ..common.clock import Clock
from ..state.metadata import ClusterMetadata, Partition

# (broker, topic id hex, partition): one replica
ReplicaId = tuple[int, str, int]


@dataclass(slots=True)
class FutureLog:
    directory: str
    log_end_offset: int


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    topic: str
    partition: int
    size: int
    offset_lag: int
    is_future: bool


class LogDirs:
    def __init__(self, metadata: ClusterMetadata, clock: Clock, directories: list[str], total_bytes: int,
                 lag_ms: Callable[[int, str], int]) -> None:
        self.metadata = metadata
        self.clock = clock
        self.directories = list(dict.fromkeys(directories))  # the same on every broker, in config order
        self.total_bytes = total_bytes
        self._lag_ms = lag_ms  # the broker's replication lag for a topic (the copy's pace)
        self._placed: dict[ReplicaId, str] = {}
        self._preferred: dict[tuple[int, str, int], str] = {}  # (broker, topic name, partition)
        self._futures: dict[ReplicaId, FutureLog] = {}

    @staticmethod
    def _key(node_id: int, p: Partition) -> ReplicaId:
        return node_id, p.topic.topic_id.hex, p.index

    def _hosted(self, node_id: int) -> Iterator[Partition]:
        for t in self.metadata.topics.values():
            for p in t.partitions:
                if node_id in p.replicas:
                    yield p

    # -- placement -----------------------------------------------------------------------------------
    def directory_of(self, node_id: int, p: Partition) -> str:
        """The directory holding the replica of ``p`` on ``node_id`` (placed now if it is new)."""
        key = self._key(node_id, p)
        placed = self._placed.get(key)
        if placed is None:
            placed = self._preferred.pop((node_id, p.topic.name, p.index), None) or self._least_loaded(node_id)
            self._placed[key] = placed
        return placed

    def _least_loaded(self, node_id: int) -> str:
        """``LogManager.nextLogDirs``: the directory with the fewest logs (the first of those in order)."""
        if len(self.directories) == 1:
            return self.directories[0]
        counts = dict.fromkeys(self.directories, 0)
        for p in self._hosted(node_id):
            placed = self._placed.get(self._key(node_id, p))
            if placed is not None:
                counts[placed] += 1
        return min(self.directories, key=lambda d: counts[d])

    def _size(self, node_id: int, p: Partition, leo: int | None = None) -> int:
        log = p.log
        if leo is None:
            leo = log.log_end_offset if node_id == p.leader_id else p.replica_leo.get(node_id, log.log_start_offset)
        return log.size_bytes if leo >= log.log_end_offset else log.size_below(leo)

    def _leo(self, node_id: int, p: Partition) -> int:
        return p.log.log_end_offset if node_id == p.leader_id else p.replica_leo.get(node_id, p.log.log_start_offset)

    # -- DescribeLogDirs -------------------------------------------------------------------------------
    def describe(self, node_id: int, partitions: Collection[tuple[str, int]] | None
                 ) -> list[tuple[str, list[ReplicaInfo], int, int]]:
        """``ReplicaManager.describeLogDirs``: per directory, the replicas asked for (None: all) with
        size, lag and whether future, and the volume's total and usable bytes."""
        by_dir: dict[str, list[ReplicaInfo]] = {d: [] for d in self.directories}
        used: dict[str, int] = dict.fromkeys(self.directories, 0)
        for p in self._hosted(node_id):
            directory = self.directory_of(node_id, p)
            leo = self._leo(node_id, p)
            size = self._size(node_id, p)
            used[directory] += size
            wanted = partitions is None or (p.topic.name, p.index) in partitions
            hw = min(p.log.high_watermark, leo)
            if wanted:
                by_dir[directory].append(ReplicaInfo(p.topic.name, p.index, size, max(hw - leo, 0), False))
            future = self._futures.get(self._key(node_id, p))
            if future is not None:
                fsize = self._size(node_id, p, future.log_end_offset)
                used[future.directory] += fsize
                if wanted:
                    by_dir[future.directory].append(
                        ReplicaInfo(p.topic.name, p.index, fsize, leo - future.log_end_offset, True))
        return [(d, by_dir[d], self.total_bytes, max(self.total_bytes - used[d], 0)) for d in self.directories]

    # -- AlterReplicaLogDirs ---------------------------------------------------------------------------
    def alter(self, node_id: int, topic: str, index: int, destination: str) -> ErrorCode:
        """``ReplicaManager.alterReplicaLogDirs`` for one partition."""
        if destination not in self.directories:
            return ErrorCode.log_dir_not_found
        p = self.metadata.partition(topic, index)
        if p is None or node_id not in p.replicas:
            # maybeUpdatePreferredLogDir: a replica created here later goes there
            self._preferred[(node_id, topic, index)] = destination
            return ErrorCode.unknown_topic_or_partition if p is None else ErrorCode.replica_not_available
        key = self._key(node_id, p)
        future = self._futures.get(key)
        if future is not None and future.directory != destination:
            del self._futures[key]  # futureReplicaDirChanged: the running move stops
        if self.directory_of(node_id, p) == destination or key in self._futures:
            return ErrorCode.none
        self._futures[key] = FutureLog(destination, p.log.log_start_offset)
        self._copy(node_id, p, key)
        return ErrorCode.none

    def _copy(self, node_id: int, p: Partition, key: ReplicaId) -> None:
        """One fetch of the future log from the current one: it lands after the lag; the future log
        replaces the current one once it reached an end that did not move meanwhile."""
        target = self._leo(node_id, p)
        future = self._futures[key]

        def landed() -> None:
            # the move stopped (another destination, the topic deleted, the replica gone): nothing lands
            if (self._futures.get(key) is not future or self.metadata.topics.get(p.topic.name) is not p.topic
                    or node_id not in p.replicas):
                return
            future.log_end_offset = max(future.log_end_offset, target)
            if future.log_end_offset >= self._leo(node_id, p):
                del self._futures[key]
                self._placed[key] = future.directory
            else:
                self._copy(node_id, p, key)

        lag = self._lag_ms(node_id, p.topic.name)
        if lag <= 0:
            landed()
        else:
            self.clock.call_later(lag, landed)
