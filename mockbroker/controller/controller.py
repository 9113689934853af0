"""The simulated KRaft controller: topic creation and deletion, leader elections, producer ids.

Mirrors the parts of Kafka's ``QuorumController`` a client reaches through a
broker: ``ReplicationControlManager.createTopics``/``deleteTopics`` (placement
and the new partitions' leaders and ISR), ``createPartitions`` (its checks too), ``electLeader``
(ElectLeaders: preferred and unclean elections), ``alterPartitionReassignments`` (replicas moved: the
new ones catch up through the replication simulator and the reassignment completes when they are all
in the ISR, as ``PartitionChangeBuilder`` completes it on the leader's AlterPartition) and
``ProducerIdControlManager`` (ids for InitProducerId).  Validation of a CreateTopics request stays with
its handler and ``ClusterMetadata.check_new_topic``; this class applies the
change.  A deleted topic is announced to its listeners (the group
coordinator drops the topic's committed offsets, as Kafka's coordinator does
when the metadata image loses a topic).
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.errors import ErrorCode

from ..state.metadata import ClusterMetadata, Partition, Topic
from ..state.replication import ReplicationSimulator

# Kafka's ProducerIdControlManager hands out blocks starting at 0; the mock starts at 1000 so
# ids are easy to tell apart from partitions and epochs in logs.
FIRST_PRODUCER_ID = 1000


class Controller:
    def __init__(self, metadata: ClusterMetadata, replication: ReplicationSimulator) -> None:
        self.metadata = metadata
        self.replication = replication
        self._next_producer_id = FIRST_PRODUCER_ID
        self._topic_deleted: list[Callable[[str], None]] = []
        replication.isr_expanded.append(self._maybe_complete_reassignment)

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

    def check_new_topic_assignments(self, assignments: list[tuple[int, list[int]]]) -> str | None:
        """A new topic's manual assignments ((partition, replicas) as the request lists them), checked as
        ``ReplicationControlManager.createTopic`` checks them (INVALID_REPLICA_ASSIGNMENT): the message,
        or None."""
        seen: set[int] = set()
        for index, replicas in assignments:
            if index in seen:
                return f"Found multiple manual partition assignments for partition {index}"
            message = self._check_manual_assignment(replicas, len(assignments[0][1]))
            if message is not None:
                return message
            if not any(self.metadata.brokers[r].alive for r in replicas):
                return (f"All brokers specified in the manual partition assignment for partition {index} are fenced "
                        "or in controlled shutdown.")
            seen.add(index)
        if seen != set(range(len(seen))):
            return "partitions should be a consecutive 0-based integer sequence"
        return None

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

    # -- partition reassignments ----------------------------------------------------------------
    def _partition(self, topic: str, partition: int) -> Partition | tuple[ErrorCode, str]:
        t = self.metadata.topics.get(topic)
        if t is None:
            return ErrorCode.unknown_topic_or_partition, f"Unable to find a topic named {topic}."
        if not 0 <= partition < len(t.partitions):
            return ErrorCode.unknown_topic_or_partition, f"Unable to find partition {topic}:{partition}."
        return t.partitions[partition]

    def reassign(self, topic: str, partition: int, target: list[int] | None,
                 allow_replication_factor_change: bool = True) -> tuple[ErrorCode, str | None]:
        """``ReplicationControlManager.alterPartitionReassignment``: move the partition to ``target``
        (None cancels the one in progress), the error and message."""
        p = self._partition(topic, partition)
        if isinstance(p, tuple):
            return p
        if target is None:
            return self._cancel_reassignment(p)
        if not target:
            return ErrorCode.invalid_replica_assignment, "The manual partition assignment includes an empty replica list."
        previous = None
        for broker in sorted(target):  # validateManualPartitionAssignment
            if broker not in self.metadata.brokers:
                return (ErrorCode.invalid_replica_assignment,
                        f"The manual partition assignment includes broker {broker}, but no such broker is registered.")
            if broker == previous:
                return (ErrorCode.invalid_replica_assignment,
                        f"The manual partition assignment includes the broker {broker} more than once.")
            previous = broker
        if not allow_replication_factor_change:  # validatePartitionReplicationFactorUnchanged
            current = len((set(p.replicas) | set(p.adding)) - set(p.removing))
            if current != len(target):
                return (ErrorCode.invalid_replication_factor,
                        f"The replication factor is changed from {current} to {len(target)}")
        # PartitionReassignmentReplicas: the target, then the replicas leaving (in id order)
        removing = sorted(set(p.replicas) - set(target))
        adding = sorted(set(target) - set(p.replicas))
        new = [r for r in target if r not in p.replicas]
        p.replicas[:] = [*target, *removing]
        p.adding, p.removing = adding, removing
        self.replication.replicas_added(p, new)
        self._maybe_complete_reassignment(p)
        return ErrorCode.none, None

    def _maybe_complete_reassignment(self, p: Partition) -> None:
        """``PartitionReassignmentReplicas.maybeCompleteReassignment``: once every replica added is in
        the ISR (and, when fewer are added than removed, every one staying), the replicas leaving go;
        a leader among them hands over to the first staying ISR member (a new leader epoch either way)."""
        if not (p.adding or p.removing):
            return
        isr = [r for r in p.isr if r not in p.removing]
        replicas = [r for r in p.replicas if r not in p.removing]
        if not isr or not replicas or not set(p.adding) <= set(isr):
            return
        if len(p.adding) < len(p.removing) and not set(replicas) <= set(isr):
            return
        removed = p.removing
        p.replicas[:], p.isr[:] = replicas, isr
        p.adding, p.removing = [], []
        self._after_replicas_left(p, removed)

    def _cancel_reassignment(self, p: Partition) -> tuple[ErrorCode, str | None]:
        """``cancelPartitionReassignment`` (``PartitionReassignmentRevert``): back to the replicas before
        it, the ISR without the replicas it added."""
        if not (p.adding or p.removing):
            # NoReassignmentInProgressException with the error's own message: ApiError.fromThrowable drops it
            return ErrorCode.no_reassignment_in_progress, None
        original = [r for r in p.replicas if r not in p.adding]
        isr = [r for r in p.isr if r not in p.adding]
        if not isr:  # unclean.leader.election.enable is false for every topic here
            return (ErrorCode.invalid_replica_assignment, f"Unable to revert partition assignment for "
                    f"{p.topic.name}:{p.index} because it would require an unclean leader election.")
        added = p.adding
        p.replicas[:], p.isr[:] = original, isr
        p.adding, p.removing = [], []
        self._after_replicas_left(p, added)
        return ErrorCode.none, None

    def _after_replicas_left(self, p: Partition, left: list[int]) -> None:
        """Replicas left the partition: their state goes; the leader, when it left, hands over to the
        first live ISR member (``electAnyLeader``), else the epoch is bumped
        (``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded``)."""
        self.replication.replicas_removed(p, left)
        if not left or p.leader_id < 0:
            return
        if p.leader_id in p.isr:
            self.replication.change_leader(p, p.leader_id)
            return
        candidates = [r for r in p.replicas if self.replication.is_valid_leader(p, r)]
        if candidates:
            self.replication.change_leader(p, candidates[0])
        else:
            self.replication.elect_leader(p)

    def reassignments(self, wanted: dict[str, list[int]] | None = None) -> list[Partition]:
        """``listPartitionReassignments``: the partitions being reassigned (of ``wanted``: topic ->
        partitions, unknown ones left out)."""
        out = []
        for name, t in self.metadata.topics.items():
            if wanted is not None and name not in wanted:
                continue
            for p in t.partitions:
                if (p.adding or p.removing) and (wanted is None or p.index in wanted[name]):
                    out.append(p)
        return out

    def allocate_producer_id(self) -> int:
        pid = self._next_producer_id
        self._next_producer_id += 1
        return pid
