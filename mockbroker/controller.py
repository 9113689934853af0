"""The simulated KRaft controller: topic creation and deletion, producer ids.

Mirrors the parts of Kafka's ``QuorumController`` a client reaches through a
broker: ``ReplicationControlManager.createTopics``/``deleteTopics`` (placement
and the new partitions' leaders and ISR) and ``ProducerIdControlManager``
(ids for InitProducerId).  Validation of a CreateTopics request stays with
its handler and ``ClusterMetadata.check_new_topic``; this class applies the
change.  A deleted topic is announced to its listeners (the group
coordinator drops the topic's committed offsets, as Kafka's coordinator does
when the metadata image loses a topic).
"""

from __future__ import annotations

from collections.abc import Callable

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
