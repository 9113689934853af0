"""Cluster metadata and partition state shared by the simulated brokers.

Mirrors what Kafka spreads over ``KRaftMetadataCache`` and ``Partition``:
brokers, topics with ids and configs, partitions with leader, replicas and
ISR, the log and the idempotent-producer state of each partition.  One
instance per ``Cluster``; every simulated broker reads the same instance, as
every real broker reads the same KRaft metadata.  Changes come from the
``Controller`` (topics) and the ``ReplicationSimulator`` (leaders, ISR, high
watermarks); this module only holds and answers.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode

from ..common.clock import Clock
from ..config.broker_config import BrokerConfig, _cleanup_policy
from ..config.config_defs import validate_topic_configs
from ..storage.log import PartitionLog
from ..storage.producer_state import ProducerStateManager

# Topic.java: legal characters and the length limit.
_TOPIC_RE = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME_LENGTH = 249
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def validate_topic_name(name: str) -> str | None:
    """Kafka 4.4's ``Topic.validate``: the error message, or None when legal."""
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_TOPIC_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    elif not _TOPIC_RE.match(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return None
    return f"Topic name is invalid: {reason}"


# Topic configs: name -> (broker default key or literal default, parser, documented type).
# The broker-backed ones are enforced; the others are stored and reported as Kafka does.
def _long(v: str) -> int:
    return int(v)


def _policy(v: str) -> str:
    return _cleanup_policy(v)


def _ts_type(v: str) -> str:
    if v not in ("CreateTime", "LogAppendTime"):
        raise ValueError("must be CreateTime or LogAppendTime")
    return v


def _compression(v: str) -> str:
    if v not in ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"):
        raise ValueError(f"invalid compression.type {v}")
    return v


def _bool_str(v: str) -> str:
    if v.lower() not in ("true", "false"):
        raise ValueError("must be true or false")
    return v.lower()


TOPIC_CONFIGS: dict[str, tuple[str | None, Any, Any]] = {
    # name: (broker key for the default, literal default, parser)
    "retention.ms": ("@retention_ms", None, _long),
    "retention.bytes": ("log.retention.bytes", None, _long),
    "segment.bytes": ("log.segment.bytes", None, _long),
    "segment.ms": ("log.roll.ms", None, _long),
    "max.message.bytes": ("message.max.bytes", None, _long),
    "message.timestamp.type": ("log.message.timestamp.type", None, _ts_type),
    "min.insync.replicas": ("min.insync.replicas", None, _long),
    "cleanup.policy": ("log.cleanup.policy", None, _policy),
    "compression.type": (None, "producer", _compression),
    "unclean.leader.election.enable": (None, "false", _bool_str),
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms", None, _long),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms", None, _long),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms", None, _long),
    "file.delete.delay.ms": (None, "60000", _long),
    "flush.messages": (None, "9223372036854775807", _long),
    "flush.ms": (None, "9223372036854775807", _long),
    "index.interval.bytes": (None, "4096", _long),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms", None, _long),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms", None, _long),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio", None, float),
    "preallocate": (None, "false", _bool_str),
    "segment.index.bytes": (None, "10485760", _long),
    "segment.jitter.ms": (None, "0", _long),
    "local.retention.ms": (None, "-2", _long),
    "local.retention.bytes": (None, "-2", _long),
    "remote.storage.enable": (None, "false", _bool_str),
}


@dataclass(slots=True)
class BrokerNode:
    """A registered broker (Kafka's ``BrokerRegistration``): its advertised endpoint per listener name."""

    node_id: int
    endpoints: dict[str, tuple[str, int]]
    rack: str | None = None
    alive: bool = True

    def endpoint(self, listener_name: str) -> tuple[str, int] | None:
        """(host, port) clients on ``listener_name`` are told, or None when it has no such listener."""
        return self.endpoints.get(listener_name)

    @property
    def host(self) -> str:
        """Host of the first advertised listener (the control plane's and the bootstrap's address)."""
        return next(iter(self.endpoints.values()), ("", 0))[0]

    @property
    def port(self) -> int:
        return next(iter(self.endpoints.values()), ("", 0))[1]


@dataclass(slots=True)
class Partition:
    topic: "Topic"
    index: int
    replicas: list[int]
    isr: list[int]
    leader_id: int
    log: PartitionLog
    # log end offset of each replica as the leader knows it (Kafka's Replica state)
    replica_leo: dict[int, int] = field(default_factory=dict)
    # replicas a test forced out of the ISR (set_isr): they do not rejoin by catching up
    isr_pinned_out: set[int] = field(default_factory=set)
    # when each follower was last caught up to the leader (Kafka's Replica.lastCaughtUpTimeMs)
    caught_up_ms: dict[int, int] = field(default_factory=dict)
    # a reassignment in progress (PartitionRegistration.addingReplicas / removingReplicas): ``replicas``
    # is the target followed by the replicas leaving
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)

    @property
    def leader_epoch(self) -> int:
        return self.log.leader_epoch

    @property
    def producers(self) -> ProducerStateManager:
        """The log's producer state (Kafka's ``UnifiedLog.producerStateManager``)."""
        return self.log.producer_state


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    overrides: dict[str, str]
    internal: bool = False


class ClusterMetadata:
    def __init__(self, config: BrokerConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.cluster_id = config["mock.cluster.id"]
        self.brokers: dict[int, BrokerNode] = {}
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self._topic_seq = 0
        self.topics_version = 0  # bumped when a topic is created or deleted or gains partitions

    # -- brokers -----------------------------------------------------------------
    def broker_up(self, node_id: int, endpoints: dict[str, tuple[str, int]]) -> None:
        """A broker registered (started or restarted) with its advertised endpoints.  ``Cluster`` is
        the one writer of membership: it calls this and ``broker_down``, nothing else does."""
        self.brokers[node_id] = BrokerNode(node_id, endpoints, self.config["broker.rack"] or None)

    def unregister_broker(self, node_id: int) -> bool:
        """UnregisterBroker (``ReplicationControlManager.unregisterBroker``, the UnregisterBrokerRecord):
        a stopped broker's registration goes (it registers again when it starts); a running one stays
        registered (see apis/p64_unregister_broker.py).  False when ``node_id`` is not registered."""
        node = self.brokers.get(node_id)
        if node is None:
            return False
        if not node.alive:
            del self.brokers[node_id]
        return True

    def broker_down(self, node_id: int) -> None:
        """A broker stopped (fenced): it stays known, not alive."""
        node = self.brokers.get(node_id)
        if node is not None:
            node.alive = False

    @property
    def controller_id(self) -> int:
        """The controller id clients see in Metadata and DescribeCluster: always a live broker.

        A KRaft broker reports a random live broker (``KRaftMetadataCache.getRandomAliveBrokerId``),
        since clients send their controller requests to any broker; the mock picks the lowest live
        id so runs are repeatable.  -1 when no broker is alive.
        """
        return min((b.node_id for b in self.brokers.values() if b.alive), default=-1)

    def live_brokers(self, listener_name: str | None = None) -> list[BrokerNode]:
        """The live brokers; with ``listener_name`` those that have it (``getAliveBrokerNodes(listenerName)``)."""
        return [b for b in self.brokers.values()
                if b.alive and (listener_name is None or listener_name in b.endpoints)]

    # -- topic configs -------------------------------------------------------------
    def is_compacted(self, topic: Topic) -> bool:
        """``LogConfig.compact``: cleanup.policy lists compact."""
        return "compact" in self.topic_config(topic, "cleanup.policy")

    def topic_config(self, topic: Topic, name: str) -> Any:
        raw = topic.overrides.get(name)
        key, literal, parse = TOPIC_CONFIGS[name]
        if raw is not None:
            return parse(raw)
        if key == "@retention_ms":
            return self.config.retention_ms
        if key is not None:
            return self.config[key]
        return parse(literal)

    @staticmethod
    def validate_topic_configs(configs: dict[str, str | None]) -> str | None:
        """A new topic's configs, checked as Kafka's controller checks them
        (``ControllerConfigurationValidator``: no null value, then ``LogConfig.validate`` with Kafka 4.4's
        definitions, ``config_defs.py``): the message, or None."""
        nulls = [name for name, value in configs.items() if value is None]
        if nulls:
            return "Null value not supported for topic configs: " + ",".join(nulls)
        return validate_topic_configs(configs)

    # -- topics ------------------------------------------------------------------------
    def check_new_topic(
        self, name: str, num_partitions: int, replication_factor: int, configs: dict[str, str | None]
    ) -> tuple[ErrorCode, str | None]:
        """A new topic of ``num_partitions`` and ``replication_factor`` (-1: the defaults), checked in the
        controller's order: the error and message, or NONE."""
        err, msg = self.check_new_topic_name_and_configs(name, configs)
        if err is not ErrorCode.none:
            return err, msg
        rf = self.config["default.replication.factor"] if replication_factor == -1 else replication_factor
        return self.check_new_topic_counts(num_partitions, replication_factor, rf)

    def check_new_topic_name_and_configs(self, name: str, configs: dict[str, str | None]) -> tuple[ErrorCode, str | None]:
        """``ReplicationControlManager.createTopics``' checks before the placement: the name
        (``validateNewTopicNames``), that it does not exist, its configs (``computeConfigChanges`` and the
        config validator)."""
        msg = validate_topic_name(name)
        if msg:
            return ErrorCode.invalid_topic_exception, msg
        if name in self.topics:
            return ErrorCode.topic_already_exists, f"Topic '{name}' already exists."
        msg = self.validate_topic_configs(configs)
        if msg:
            return ErrorCode.invalid_config, msg
        return ErrorCode.none, None

    def check_new_topic_counts(self, num_partitions: int, replication_factor: int,
                               effective_replication_factor: int) -> tuple[ErrorCode, str | None]:
        """``ReplicationControlManager.createTopic`` without manual assignments: the counts as requested
        (-1 for the defaults), the replication factor first, then the placement of
        ``effective_replication_factor`` replicas (``StripedReplicaPlacer``)."""
        if replication_factor < -1 or replication_factor == 0:
            return (ErrorCode.invalid_replication_factor,
                    "Replication factor must be larger than 0, or -1 to use the default value.")
        if num_partitions < -1 or num_partitions == 0:
            return ErrorCode.invalid_partitions, "Number of partitions was set to an invalid non-positive value."
        rf = effective_replication_factor
        if rf > len(self.brokers):
            return (
                ErrorCode.invalid_replication_factor,
                f"Unable to replicate the partition {rf} time(s): "
                f"The target replication factor of {rf} cannot be reached "
                f"because only {len(self.brokers)} broker(s) are registered or some brokers have all their log "
                "directories cordoned.",  # StripedReplicaPlacer since Kafka 4.3
            )
        return ErrorCode.none, None

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: dict[str, str] | None = None,
        assignments: dict[int, list[int]] | None = None,
    ) -> Topic:
        ids = sorted(self.brokers)
        now = self.clock.time_ms()
        self._topic_seq += 1
        topic = Topic(name, uuid.uuid4(), [], dict(configs or {}), internal=name in INTERNAL_TOPICS)
        start = self._topic_seq  # spread leaders over brokers, as the controller's placement does
        for p in range(num_partitions):
            if assignments and p in assignments:
                replicas = list(assignments[p])
            else:
                replicas = [ids[(start + p + i) % len(ids)] for i in range(replication_factor)]
            topic.partitions.append(
                Partition(topic, p, replicas, list(replicas), replicas[0], PartitionLog(now))
            )
        self.topics[name] = topic
        self.topics_by_id[topic.topic_id] = topic
        self.topics_version += 1
        return topic

    def add_partitions(self, topic: Topic, replicas: list[list[int]]) -> list[Partition]:
        """New partitions at the end of ``topic`` (CreatePartitions), one per replica list, each led by
        its first replica with every replica in the ISR (the ``ReplicationSimulator`` then removes the
        replicas that are down and elects a live leader)."""
        now = self.clock.time_ms()
        start = len(topic.partitions)
        added = [Partition(topic, start + i, list(r), list(r), r[0], PartitionLog(now)) for i, r in enumerate(replicas)]
        topic.partitions.extend(added)
        self.topics_version += 1
        return added

    def place_replicas(self, first_partition: int, partitions: int, replication_factor: int) -> list[list[int]]:
        """Replicas for new partitions (``StripedReplicaPlacer``, without its randomness): the leaders
        spread over the live (unfenced) brokers round robin, each partition's other replicas on the live
        brokers after its leader, then on those that are down.  The caller checks that there is a live
        broker and that ``replication_factor`` brokers are registered."""
        live = sorted(b.node_id for b in self.brokers.values() if b.alive)
        down = sorted(b.node_id for b in self.brokers.values() if not b.alive)
        self._topic_seq += 1
        out = []
        for p in range(first_partition, first_partition + partitions):
            lead = (self._topic_seq + p) % len(live)
            out.append((live[lead:] + live[:lead] + down)[:replication_factor])
        return out

    def delete_topic(self, topic: Topic) -> None:
        self.topics.pop(topic.name, None)
        self.topics_by_id.pop(topic.topic_id, None)
        self.topics_version += 1

    def partition(self, topic: str, index: int) -> Partition | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        return t.partitions[index]

    # -- housekeeping --------------------------------------------------------------------
    def enforce_retention(self) -> int:
        """The retention task (``LogManager.cleanupLogs``): ``deleteOldSegments`` for every log that is
        not compacted (the log cleaner does it for the compacted ones) -- retention by size and time when
        cleanup.policy is delete, and always the segments below the log start offset (DeleteRecords);
        then idle producers expire."""
        now = self.clock.time_ms()
        dropped = 0
        for t in list(self.topics.values()):
            policy = self.topic_config(t, "cleanup.policy")
            r_ms = self.topic_config(t, "retention.ms")
            r_bytes = self.topic_config(t, "retention.bytes")
            for p in t.partitions:
                if "compact" not in policy:
                    dropped += p.log.delete_old_segments(now, "delete" in policy, r_ms, r_bytes)
                p.producers.expire(now, self.config["producer.id.expiration.ms"])
        return dropped

    def segment_bytes(self, topic: Topic) -> int:
        """``LogConfig.segmentSize``: the internal.segment.bytes override (Kafka's tests' way to small
        segments: segment.bytes is at least 1 MiB) or segment.bytes."""
        internal = topic.overrides.get("internal.segment.bytes")
        return int(internal) if internal is not None else self.topic_config(topic, "segment.bytes")

    def segment_roll_ms(self, topic: Topic) -> int:
        """``LogConfig.maxSegmentMs``: segment.ms, or for a compacted topic the smaller of it and
        max.compaction.lag.ms (the active segment is never cleaned, so it rolls in time to be)."""
        segment_ms: int = self.topic_config(topic, "segment.ms")
        if self.is_compacted(topic):
            lag: int = self.topic_config(topic, "max.compaction.lag.ms")
            if lag > 0:
                return min(lag, segment_ms)
        return segment_ms
