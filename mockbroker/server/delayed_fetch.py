"""DelayedFetch: a fetch waits until min_bytes are readable or max_wait passes.

Mirrors Kafka's ``DelayedFetch.tryComplete``: it completes when a fetched
partition is gone or has moved (UNKNOWN_TOPIC_OR_PARTITION,
NOT_LEADER_OR_FOLLOWER), when the log was truncated below the fetch offset,
or when the bytes readable from each fetch offset up to the high watermark
(last stable offset for read_committed), each capped at its
partition_max_bytes, add up to min_bytes.  On completion or expiry the logs
are read again and the ``ReplicaManager.fetch_messages`` callback answered
then; expiry is not an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .fetch_session import CachedPartition
from ..storage.log import PartitionLog
from ..state.metadata import ClusterMetadata, Topic
from ..purgatory import DelayedOperation, no_callback

READ_COMMITTED = 1


def _log_bytes_available(log: PartitionLog, offset: int, upper: int, cap: int) -> int:
    return log.bytes_available(offset, upper, cap)


class DelayedFetch(DelayedOperation):
    PURGATORY = "Fetch"

    def __init__(self, delay_ms: int, partitions: list[CachedPartition], by_id: bool, isolation: int,
                 min_bytes: int, node_id: int, metadata: ClusterMetadata, on_complete: Callable[[], None],
                 bytes_available: Callable[[PartitionLog, int, int, int], int] | None = None) -> None:
        super().__init__(delay_ms)
        self.partitions = partitions
        self.by_id = by_id
        self.isolation = isolation
        self.min_bytes = min_bytes
        self.node_id = node_id
        self.metadata = metadata
        self._on_complete = on_complete
        # the replica manager's reader, shared by the fetches checked in one pass; else the log's own
        self._available = bytes_available or _log_bytes_available

    def try_complete(self) -> bool:
        accumulated = 0
        topics: Mapping[Any, Topic] = self.metadata.topics_by_id if self.by_id else self.metadata.topics
        for cp in self.partitions:
            topic = topics.get(cp.topic_id if self.by_id else cp.topic)
            if topic is None or not 0 <= cp.partition < len(topic.partitions):
                return self.force_complete()
            p = topic.partitions[cp.partition]
            if p.leader_id != self.node_id:
                return self.force_complete()
            log = p.log
            end = log.last_stable_offset if self.isolation == READ_COMMITTED else log.high_watermark
            if cp.fetch_offset > log.log_end_offset or cp.fetch_offset < log.log_start_offset:
                return self.force_complete()  # truncated or retention passed it: answer with the error
            if cp.fetch_offset < end:
                accumulated += self._available(log, cp.fetch_offset, end, cp.max_bytes)
        if accumulated >= self.min_bytes:
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        pass

    def on_complete(self) -> None:
        # called once: drop the callback, which holds the request's Deferred, and the Deferred holds
        # this operation (``delayed``): freed by reference counting, not left to the cyclic GC
        on_complete, self._on_complete = self._on_complete, no_callback
        on_complete()
