"""DelayedProduce: an acks=-1 produce waits until the ISR has the records.

Mirrors Kafka's ``DelayedProduce``: every partition that appended starts as
pending with REQUEST_TIMED_OUT (what it keeps if the operation expires after
the request's timeout); ``try_complete`` checks each pending partition as
``Partition.checkEnoughReplicasReachOffset`` does — leadership lost gives
NOT_LEADER_OR_FOLLOWER, a high watermark at or past the required offset gives
NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
min.insync.replicas meanwhile.
"""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode

from .kafka_apis import Deferred
from .purgatory import DelayedOperation


class ProducePartitionStatus:
    __slots__ = ("partition", "required_offset", "entry", "pending", "node_id")

    def __init__(self, partition: Any, required_offset: int, entry: dict, node_id: int) -> None:
        self.partition = partition
        self.required_offset = required_offset
        self.entry = entry
        self.pending = True
        self.node_id = node_id
        entry["error_code"] = ErrorCode.request_timed_out


class DelayedProduce(DelayedOperation):
    def __init__(self, delay_ms: int, statuses: list[ProducePartitionStatus], response: dict,
                 cluster: Any, deferred: Deferred) -> None:
        super().__init__(delay_ms)
        self.statuses = statuses
        self.response = response
        self.cluster = cluster
        self.deferred = deferred

    def try_complete(self) -> bool:
        for st in self.statuses:
            if not st.pending:
                continue
            p = st.partition
            topic = self.cluster.topics.get(p.topic.name)
            if topic is None or topic is not p.topic:
                st.entry["error_code"] = ErrorCode.unknown_topic_or_partition
                st.pending = False
            elif p.leader_id != st.node_id:
                st.entry["error_code"] = ErrorCode.not_leader_or_follower
                st.pending = False
            elif p.log.high_watermark >= st.required_offset:
                min_isr = self.cluster.topic_config(topic, "min.insync.replicas")
                st.entry["error_code"] = (
                    ErrorCode.not_enough_replicas_after_append if len(p.isr) < min_isr else ErrorCode.none
                )
                st.pending = False
        if any(st.pending for st in self.statuses):
            return False
        return self.force_complete()

    def on_expiration(self) -> None:
        pass  # pending partitions keep REQUEST_TIMED_OUT

    def on_complete(self) -> None:
        self.deferred.complete(self.response)
