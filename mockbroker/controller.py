"""The simulated KRaft controller: topic creation and deletion, producer ids.

Mirrors the parts of Kafka's ``QuorumController`` a client reaches through a
broker: ``ReplicationControlManager.createTopics``/``deleteTopics`` (placement
and the new partitions' leaders and ISR), ``createPartitions`` (its checks too)
and ``ProducerIdControlManager`` (ids for InitProducerId).  Validation of a CreateTopics request stays with
its handler and ``ClusterMetadata.check_new_topic``; this class applies the
change.  A deleted topic is announced to its listeners (the group
coordinator drops the topic's committed offsets, as Kafka's coordinator does
when the metadata image loses a topic).
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.errors import ErrorCode

from .metadata import ClusterMetadata, Topic
from .replication import ReplicationSimulator

# Kafka's ProducerIdControlManager hands out blocks starting at 0; the mock starts at 1000 so
# ids are easy to tell apart from partitions and epochs in logs.
FIRST_PRODUCER_ID = 1000


class Controller:
    def __init__(self, metadata: ClusterMetadata, replication: ReplicationSimulator) -> None:
        self.metadata = metadata
        self.replication = replication
        self._next_producer_id = FIRST_PRODUCER_ID
        self._topic_deleted: list[Callable[[str], None]] = []

    def on_topic_deleted(self, listener: Callable[[str], None]) -> None:
        self._topic_deleted.append(listener)

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str] | None = None,
                     assignments: dict[int, list[int]] | None = None) -> Topic:
        topic = self.metadata.create_topic(name, partitions, replication_factor, configs, assignments)
        self.replication.partitions_created(topic.partitions)
        return topic

    def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None, validate_only: bool,
                          apply_quota: Callable[[int], bool]) -> tuple[ErrorCode, str | None]:
        """``ReplicationControlManager.createPartitions`` for one topic: grow ``name`` to ``count``
        partitions, placed as ``assignments`` says (one replica list per new partition) or by the
        placer; the error and message Kafka's controller answers.  ``apply_quota(additional)`` is the
        request's ``applyPartitionChangeQuota``, asked after the counts are checked and before the
        placement (False: THROTTLING_QUOTA_EXCEEDED).  ``validate_only`` checks (and charges the quota,
        as Kafka's controller does) without adding."""
        topic = self.metadata.topics.get(name)
        if topic is None:
            return ErrorCode.unknown_topic_or_partition, None
        current = len(topic.partitions)
        if count == current:
            return ErrorCode.invalid_partitions, f"Topic already has {current} partition(s)."
        if count < current:
            return ErrorCode.invalid_partitions, (f"The topic {name} currently has {current} partition(s); {count} "
                                                  "would not be an increase.")
        additional = count - current
        if assignments is not None and len(assignments) != additional:
            return ErrorCode.invalid_replica_assignment, (
                f"Attempted to add {additional} additional partition(s), but only {len(assignments)} assignment(s) "
                "were specified.")
        if not apply_quota(additional):
            return ErrorCode.throttling_quota_exceeded, "The throttling quota has been exceeded."
        rf = len(topic.partitions[0].replicas)
        if assignments is not None:
            for i, replicas in enumerate(assignments):
                message = self._check_manual_assignment(replicas, rf)
                if message is not None:
                    return ErrorCode.invalid_replica_assignment, message
                if not any(self.metadata.brokers[r].alive for r in replicas):
                    return ErrorCode.invalid_replica_assignment, (
                        f"All brokers specified in the manual partition assignment for partition {current + i} are "
                        "fenced or in controlled shutdown.")
            placed = [list(r) for r in assignments]
        else:
            live = sum(1 for b in self.metadata.brokers.values() if b.alive)
            if live == 0:  # StripedReplicaPlacer.place
                return ErrorCode.invalid_replication_factor, ("All brokers are currently fenced, or have all their "
                                                              "log directories cordoned.")
            if rf > len(self.metadata.brokers):
                return ErrorCode.invalid_replication_factor, (
                    f"The target replication factor of {rf} cannot be reached because only "
                    f"{len(self.metadata.brokers)} broker(s) are registered or some brokers have all their log "
                    "directories cordoned.")
            placed = self.metadata.place_replicas(current, additional, rf)
        if not validate_only:
            self.replication.partitions_created(self.metadata.add_partitions(topic, placed))
        return ErrorCode.none, None

    def _check_manual_assignment(self, replicas: list[int], rf: int) -> str | None:
        """``ReplicationControlManager.validateManualPartitionAssignment``."""
        if not replicas:
            return "The manual partition assignment includes an empty replica list."
        previous = None
        for broker_id in sorted(replicas):
            if broker_id not in self.metadata.brokers:
                return f"The manual partition assignment includes broker {broker_id}, but no such broker is registered."
            if broker_id == previous:
                return f"The manual partition assignment includes the broker {broker_id} more than once."
            previous = broker_id
        if len(replicas) != rf:
            return (f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this "
                    f"is not consistent with previous partitions, which have {rf} replica(s).")
        return None

    def auto_create_topic(self, name: str) -> Topic:
        """AutoTopicCreationManager: num.partitions and default.replication.factor.  The factor is
        capped at the number of brokers (a difference: Kafka's controller would refuse the topic)."""
        cfg = self.metadata.config
        rf = min(cfg["default.replication.factor"], len(self.metadata.brokers))
        return self.create_topic(name, cfg["num.partitions"], rf)

    def delete_topic(self, topic: Topic) -> None:
        self.metadata.delete_topic(topic)
        for listener in self._topic_deleted:
            listener(topic.name)

    def allocate_producer_id(self) -> int:
        pid = self._next_producer_id
        self._next_producer_id += 1
        return pid
