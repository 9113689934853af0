"""The simulated KRaft controller: topic creation and deletion, leader elections, producer ids.

Mirrors the parts of Kafka's ``QuorumController`` a client reaches through a
broker: ``ReplicationControlManager.createTopics``/``deleteTopics`` (placement
and the new partitions' leaders and ISR), ``electLeader`` (ElectLeaders: preferred and unclean
elections) and ``ProducerIdControlManager``
(ids for InitProducerId).  Validation of a CreateTopics request stays with
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

    def elect_leader(self, topic: str, partition: int, unclean: bool) -> tuple[ErrorCode, str | None]:
        """``ReplicationControlManager.electLeader``: the error and message of one partition's
        election.  Preferred: the first replica when it is a live ISR member (else the current leader
        stays, PREFERRED_LEADER_NOT_AVAILABLE); unclean, for a partition without a leader: a live ISR
        member, else the first live replica (losing what it had not copied)."""
        t = self.metadata.topics.get(topic)
        if t is None:
            return ErrorCode.unknown_topic_or_partition, f"No such topic as {topic}"
        if not 0 <= partition < len(t.partitions):
            return ErrorCode.unknown_topic_or_partition, f"No such partition as {topic}-{partition}"
        p = t.partitions[partition]
        if (p.leader_id == p.replicas[0]) if not unclean else p.leader_id >= 0:
            return ErrorCode.election_not_needed, "Leader election not needed for topic partition."
        valid = [r for r in p.replicas if self.replication.is_valid_leader(p, r)]
        if not unclean:
            if p.replicas[0] in valid:
                self.replication.change_leader(p, p.replicas[0])
            elif p.leader_id < 0 and valid:
                self.replication.change_leader(p, valid[0])
            else:
                return ErrorCode.preferred_leader_not_available, "The preferred leader was not available."
            return ErrorCode.none, None
        if valid:
            self.replication.change_leader(p, valid[0])
            return ErrorCode.none, None
        live = [r for r in p.replicas if self.metadata.brokers.get(r) is not None and self.metadata.brokers[r].alive]
        if not live:
            return ErrorCode.eligible_leaders_not_available, "Eligible topic partition leaders are not available."
        self.replication.change_leader(p, live[0], unclean=True)
        return ErrorCode.none, None

    def allocate_producer_id(self) -> int:
        pid = self._next_producer_id
        self._next_producer_id += 1
        return pid
