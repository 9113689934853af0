"""DelayedProduce: an acks=-1 produce waits until the ISR has the records.

Mirrors Kafka's ``DelayedProduce``: every partition that appended starts as
pending with REQUEST_TIMED_OUT (what it keeps if the operation expires after
the request's timeout); ``try_complete`` checks each pending partition as
``Partition.checkEnoughReplicasReachOffset`` does — leadership lost gives
NOT_LEADER_OR_FOLLOWER, a high watermark at or past the required offset gives
NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
min.insync.replicas meanwhile.  On completion (or expiry) it calls the
``ReplicaManager.append_records`` callback with every partition's status.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from protocol.errors import ErrorCode

from ..state.metadata import ClusterMetadata, Partition
from ..purgatory import DelayedOperation, no_callback


@dataclass(slots=True)
class PartitionResponse:
    """One partition's answer to a produce (Kafka's ``ProduceResponse.PartitionResponse``)."""

    error: ErrorCode = ErrorCode.none
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    # RecordErrors (Produce v8+): (batch index, message) of each record the batch was refused for
    record_errors: list[tuple[int, str]] = field(default_factory=list)


class ProducePartitionStatus:
    """A partition an acks=-1 produce waits on (Kafka's ``ProducePartitionStatus``)."""

    __slots__ = ("partition", "required_offset", "response", "pending")

    def __init__(self, partition: Partition, required_offset: int, response: PartitionResponse) -> None:
        self.partition = partition
        self.required_offset = required_offset
        self.response = response
        self.pending = True
        response.error = ErrorCode.request_timed_out


class DelayedProduce(DelayedOperation):
    PURGATORY = "Produce"

    def __init__(self, delay_ms: int, statuses: list[ProducePartitionStatus], node_id: int,
                 metadata: ClusterMetadata, on_complete: Callable[[], None]) -> None:
        super().__init__(delay_ms)
        self.statuses = statuses
        self.node_id = node_id
        self.metadata = metadata
        self._on_complete = on_complete

    def try_complete(self) -> bool:
        for st in self.statuses:
            if not st.pending:
                continue
            p = st.partition
            topic = self.metadata.topics.get(p.topic.name)
            if topic is None or topic is not p.topic:
                st.response.error = ErrorCode.unknown_topic_or_partition
                st.pending = False
            elif p.leader_id != self.node_id:
                st.response.error = ErrorCode.not_leader_or_follower
                st.pending = False
            elif p.log.high_watermark >= st.required_offset:
                min_isr = self.metadata.topic_config(topic, "min.insync.replicas")
                st.response.error = (
                    ErrorCode.not_enough_replicas_after_append if len(p.isr) < min_isr else ErrorCode.none
                )
                st.pending = False
        if any(st.pending for st in self.statuses):
            return False
        return self.force_complete()

    def on_expiration(self) -> None:
        pass  # pending partitions keep REQUEST_TIMED_OUT

    def on_complete(self) -> None:
        # called once: drop the callback, which holds the request's Deferred, and the Deferred holds
        # this operation (``delayed``): freed by reference counting, not left to the cyclic GC
        on_complete, self._on_complete = self._on_complete, no_callback
        on_complete()
