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

from .clock import Clock
from .config import BrokerConfig
from .log import PartitionLog
from .producer_state import ProducerStateManager

# Topic.java: legal characters and the length limit.
_TOPIC_RE = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME_LENGTH = 249
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def validate_topic_name(name: str) -> str | None:
    """Kafka's ``Topic.validate``: the error message, or None when legal."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, topic name: {name}"
    if not _TOPIC_RE.match(name):
        return (
            f"Topic name \"{name}\" is illegal, it contains a character other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


# Topic configs: name -> (broker default key or literal default, parser, documented type).
# The broker-backed ones are enforced; the others are stored and reported as Kafka does.
def _long(v: str) -> int:
    return int(v)


def _policy(v: str) -> str:
    parts = [p.strip() for p in v.split(",")]
    if not parts or any(p not in ("delete", "compact") for p in parts):
        raise ValueError("cleanup.policy must be delete and/or compact")
    return v


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
    "cleanup.policy": (None, "delete", _policy),
    "compression.type": (None, "producer", _compression),
    "unclean.leader.election.enable": (None, "false", _bool_str),
    "message.timestamp.before.max.ms": (None, "9223372036854775807", _long),
    "message.timestamp.after.max.ms": (None, "3600000", _long),
    "delete.retention.ms": (None, "86400000", _long),
    "file.delete.delay.ms": (None, "60000", _long),
    "flush.messages": (None, "9223372036854775807", _long),
    "flush.ms": (None, "9223372036854775807", _long),
    "index.interval.bytes": (None, "4096", _long),
    "max.compaction.lag.ms": (None, "9223372036854775807", _long),
    "min.compaction.lag.ms": (None, "0", _long),
    "min.cleanable.dirty.ratio": (None, "0.5", float),
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

    # -- brokers -----------------------------------------------------------------
    def broker_up(self, node_id: int, endpoints: dict[str, tuple[str, int]]) -> None:
        """A broker registered (started or restarted) with its advertised endpoints.  ``Cluster`` is
        the one writer of membership: it calls this and ``broker_down``, nothing else does."""
        self.brokers[node_id] = BrokerNode(node_id, endpoints)

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

    def topic_config_source(self, topic: Topic, name: str) -> int:
        """DescribeConfigs ConfigSource: 1 topic, 4 static broker, 5 default."""
        if name in topic.overrides:
            return 1
        key = TOPIC_CONFIGS[name][0]
        if key == "@retention_ms":
            explicit = any(self.config.is_explicit(k) for k in ("log.retention.ms", "log.retention.minutes", "log.retention.hours"))
            return 4 if explicit else 5
        if key is not None and self.config.is_explicit(key):
            return 4
        return 5

    @staticmethod
    def validate_topic_configs(configs: dict[str, str | None]) -> str | None:
        for name, value in configs.items():
            spec = TOPIC_CONFIGS.get(name)
            if spec is None:
                return f"Unknown topic config name: {name}"
            if value is None:
                return f"Null value not supported for topic configs: {name}"
            try:
                spec[2](value)
            except (TypeError, ValueError) as e:
                return f"Invalid value {value} for configuration {name}: {e}"
        return None

    # -- topics ------------------------------------------------------------------------
    def check_new_topic(
        self, name: str, num_partitions: int, replication_factor: int, configs: dict[str, str | None]
    ) -> tuple[ErrorCode, str | None]:
        msg = validate_topic_name(name)
        if msg:
            return ErrorCode.invalid_topic_exception, msg
        if name in self.topics:
            return ErrorCode.topic_already_exists, f"Topic '{name}' already exists."
        if num_partitions < 1:
            return ErrorCode.invalid_partitions, "Number of partitions must be larger than 0."
        if replication_factor < 1:
            return ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0."
        if replication_factor > len(self.brokers):
            return (
                ErrorCode.invalid_replication_factor,
                f"Unable to replicate the partition {replication_factor} time(s): "
                f"The target replication factor of {replication_factor} cannot be reached "
                f"because only {len(self.brokers)} broker(s) are registered.",
            )
        msg = self.validate_topic_configs(configs)
        if msg:
            return ErrorCode.invalid_config, msg
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
        return topic

    def delete_topic(self, topic: Topic) -> None:
        self.topics.pop(topic.name, None)
        self.topics_by_id.pop(topic.topic_id, None)

    def partition(self, topic: str, index: int) -> Partition | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        return t.partitions[index]

    # -- housekeeping --------------------------------------------------------------------
    def enforce_retention(self) -> int:
        now = self.clock.time_ms()
        dropped = 0
        for t in self.topics.values():
            r_ms = self.topic_config(t, "retention.ms")
            r_bytes = self.topic_config(t, "retention.bytes")
            for p in t.partitions:
                dropped += p.log.enforce_retention(now, r_ms, r_bytes)
                p.producers.expire(now, self.config["producer.id.expiration.ms"])
        return dropped
