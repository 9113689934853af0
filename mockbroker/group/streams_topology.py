"""A streams group's topology and the internal topics it needs (KIP-1071).

Mirrors Kafka 4.4's ``StreamsTopology`` (the topology the first member
registers, as the ``StreamsGroupTopology`` record holds it) and the
``streams.topics`` package: ``InternalTopicManager.configureTopics`` with
``RepartitionTopics``, ``CopartitionedTopicsEnforcer`` and ``ChangelogTopics``
deciding the partition counts of the repartition and changelog topics, and
``ConfiguredTopology`` / ``ConfiguredSubtopology`` / ``ConfiguredInternalTopic``,
what the assignor and StreamsGroupDescribe read once the topology is ready.

A topology is ready when every source topic exists and every internal topic
exists with the partition count it must have; otherwise ``configure_topics``
returns the status the heartbeat reports (MISSING_SOURCE_TOPICS,
MISSING_INTERNAL_TOPICS with the topics to create, INCORRECTLY_PARTITIONED_TOPICS).
A topology the coordinator cannot resolve raises ``StreamsInvalidTopology``
(STREAMS_INVALID_TOPOLOGY to the member).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode

from ..state.cluster_view import TopicView


class Status(enum.IntEnum):
    """StreamsGroupHeartbeatResponse.Status: the status codes a heartbeat may report."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5
    MISSING_CLIENT_TAGS = 6


class StreamsGroupError(Exception):
    """An ApiException the streams coordinator raises: the heartbeat (or describe) answers its
    error code and message."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class StreamsInvalidTopology(StreamsGroupError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.streams_invalid_topology, message)


class TopicConfigurationError(Exception):
    """TopicConfigurationException: the topology is not ready, and the status that says why."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A repartition or changelog topic as the topology declares it (partitions and replication
    factor 0: not given)."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    topic_configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    """Indexes into the subtopology's source topics, source regexes and repartition source topics."""

    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    """StreamsGroupTopologyValue.Subtopology (lists in the order the member sent them)."""

    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()


@dataclass(frozen=True, slots=True)
class StreamsTopology:
    """The group's topology: its epoch and subtopologies by id."""

    topology_epoch: int
    subtopologies: Mapping[str, Subtopology]

    @staticmethod
    def from_request(topology: Any) -> StreamsTopology:
        """StreamsTopology.fromHeartbeatRequest (a StreamsGroupHeartbeatRequest's Topology)."""
        def info(t: Any) -> TopicInfo:
            return TopicInfo(t.name, int(t.partitions), int(t.replication_factor),
                             tuple((c.key, c.value) for c in t.topic_configs))

        subs = {}
        for s in topology.subtopologies:
            subs[s.subtopology_id] = Subtopology(
                s.subtopology_id, tuple(s.source_topics), tuple(s.source_topic_regex),
                tuple(s.repartition_sink_topics), tuple(info(t) for t in s.repartition_source_topics),
                tuple(info(t) for t in s.state_changelog_topics),
                tuple(CopartitionGroup(tuple(g.source_topics), tuple(g.source_topic_regex),
                                       tuple(g.repartition_source_topics)) for g in s.copartition_groups))
        return StreamsTopology(int(topology.epoch), subs)

    def source_topic_map(self) -> dict[str, Subtopology]:
        """The subtopology reading each source and repartition source topic."""
        out: dict[str, Subtopology] = {}
        for s in self.subtopologies.values():
            for t in s.source_topics:
                out[t] = s
            for info in s.repartition_source_topics:
                out[info.name] = s
        return out

    def required_topics(self) -> set[str]:
        """Source, repartition source and changelog topics: what the group's metadata hash covers."""
        out: set[str] = set()
        for s in self.subtopologies.values():
            out.update(s.source_topics)
            out.update(t.name for t in s.repartition_source_topics)
            out.update(t.name for t in s.state_changelog_topics)
        return out

    def describe(self) -> dict[str, Any]:
        """StreamsTopology.asStreamsGroupDescribeTopology: partition counts as declared."""
        return {"epoch": self.topology_epoch, "subtopologies": [
            {"subtopology_id": sid, "source_topics": sorted(s.source_topics),
             "repartition_sink_topics": sorted(s.repartition_sink_topics),
             "repartition_source_topics": [_describe_info(t.name, t.partitions, t.replication_factor,
                                                          t.topic_configs)
                                           for t in sorted(s.repartition_source_topics, key=lambda t: t.name)],
             "state_changelog_topics": [_describe_info(t.name, t.partitions, t.replication_factor, t.topic_configs)
                                        for t in sorted(s.state_changelog_topics, key=lambda t: t.name)]}
            for sid, s in sorted(self.subtopologies.items())]}


def _describe_info(name: str, partitions: int, replication_factor: int,
                   configs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    return {"name": name, "partitions": partitions, "replication_factor": replication_factor,
            "topic_configs": [{"key": k, "value": v} for k, v in configs]}


@dataclass(frozen=True, slots=True)
class ConfiguredInternalTopic:
    name: str
    partitions: int
    replication_factor: int | None  # None: the broker's default.replication.factor
    topic_configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ConfiguredSubtopology:
    """A subtopology with its number of tasks (the largest partition count of its source topics)."""

    number_of_tasks: int
    source_topics: frozenset[str]
    repartition_source_topics: Mapping[str, ConfiguredInternalTopic]
    repartition_sink_topics: frozenset[str]
    state_changelog_topics: Mapping[str, ConfiguredInternalTopic]

    def describe(self, subtopology_id: str) -> dict[str, Any]:
        def infos(topics: Mapping[str, ConfiguredInternalTopic]) -> list[dict[str, Any]]:
            return [_describe_info(t.name, t.partitions, t.replication_factor or 0, t.topic_configs)
                    for t in sorted(topics.values(), key=lambda t: t.name)]

        return {"subtopology_id": subtopology_id, "source_topics": sorted(self.source_topics),
                "repartition_sink_topics": sorted(self.repartition_sink_topics),
                "repartition_source_topics": infos(self.repartition_source_topics),
                "state_changelog_topics": infos(self.state_changelog_topics)}


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    """ConfiguredTopology: ready when ``error`` is None; ``subtopologies`` sorted by id."""

    topology_epoch: int
    metadata_hash: int
    subtopologies: dict[str, ConfiguredSubtopology] | None
    internal_topics_to_create: dict[str, ConfiguredInternalTopic] = field(default_factory=dict)
    error: TopicConfigurationError | None = None

    @property
    def is_ready(self) -> bool:
        return self.error is None

    def describe(self) -> dict[str, Any]:
        return {"epoch": self.topology_epoch,
                "subtopologies": [s.describe(sid) for sid, s in sorted((self.subtopologies or {}).items())]}


def summarize_topics(topics: Iterable[str]) -> str:
    """InternalTopicManager.summarizeTopics: the first three, and how many more."""
    items = list(topics)
    if not items:
        return "<none>"
    shown = ", ".join(items[:3])
    return shown + (f" and {len(items) - 3} additional topics" if len(items) > 3 else "")


def java_hash_order(keys: list[str], inserted: int) -> list[str]:
    """The order a ``java.util.HashMap`` of these String keys (given in insertion order) iterates
    them after ``inserted`` insertions (its table doubles from 16 slots past a 0.75 load): by bucket
    (``String.hashCode`` spread as ``HashMap.hash``), then insertion order.  Kafka lists the internal
    topics to create in this order (MISSING_INTERNAL_TOPICS' detail)."""
    capacity = 16
    while inserted > capacity * 0.75:
        capacity *= 2

    def bucket(key: str) -> int:
        h = 0
        for unit in key.encode("utf-16-be").hex(" ", 2).split():  # UTF-16 code units, as Java's String
            h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # stable: insertion order within a bucket


PartitionCount = Callable[[str], int | None]


def configure_topics(topology: StreamsTopology, metadata_hash: int, topics: Mapping[str, TopicView]
                     ) -> ConfiguredTopology:
    """InternalTopicManager.configureTopics: the configured topology, or why it is not ready."""
    try:
        _throw_on_missing_source_topics(topology, topics)
        decided = _decide_partition_counts(topology, topics)
        configured = {sid: _configured_subtopology(s, topics, decided)
                      for sid, s in sorted(topology.subtopologies.items())}
        to_create = _missing_internal_topics(configured, topology, topics)
        error = None
        if to_create:
            error = TopicConfigurationError(Status.MISSING_INTERNAL_TOPICS,
                                            "Internal topics are missing: " + summarize_topics(to_create))
        return ConfiguredTopology(topology.topology_epoch, metadata_hash, configured, to_create, error)
    except TopicConfigurationError as e:
        return ConfiguredTopology(topology.topology_epoch, metadata_hash, None, {}, e)


def _partition_count(topics: Mapping[str, TopicView], decided: Mapping[str, int]) -> PartitionCount:
    """getPartitionCount: an existing topic's count, else the one decided for an internal topic."""
    def count(name: str) -> int | None:
        t = topics.get(name)
        if t is not None:
            return len(t.partitions)
        return decided.get(name)
    return count


def _throw_on_missing_source_topics(topology: StreamsTopology, topics: Mapping[str, TopicView]) -> None:
    missing = sorted({t for s in topology.subtopologies.values() for t in s.source_topics if t not in topics})
    if missing:
        raise TopicConfigurationError(Status.MISSING_SOURCE_TOPICS,
                                      f"Source topics {summarize_topics(missing)} are missing.")


def _decide_partition_counts(topology: StreamsTopology, topics: Mapping[str, TopicView]) -> dict[str, int]:
    """decidePartitionCounts: repartition topics, then copartitioning, then changelogs."""
    decided: dict[str, int] = {}
    count = _partition_count(topics, decided)
    subtopologies = list(topology.subtopologies.values())
    decided.update(_repartition_topic_counts(subtopologies, count))
    fixed = {t.name for s in subtopologies for t in s.repartition_source_topics if t.partitions != 0}
    flexible = {t.name for s in subtopologies for t in s.repartition_source_topics if t.partitions == 0}
    for s in subtopologies:
        for group in _copartition_groups(s):
            decided.update(_enforce_copartitioning(group, fixed, flexible, count))
    for s in subtopologies:  # ChangelogTopics.setup
        counts = []
        for name in [*s.source_topics, *(t.name for t in s.repartition_source_topics)]:
            n = count(name)
            if n is None:
                raise RuntimeError(f"No partition count for source topic {name}")
            counts.append(n)
        if not counts:
            raise StreamsInvalidTopology(f"No source topics found for subtopology {s.subtopology_id}")
        for t in s.state_changelog_topics:
            decided[t.name] = max(counts)
    return decided


def _repartition_topic_counts(subtopologies: list[Subtopology], count: PartitionCount) -> dict[str, int]:
    """RepartitionTopics.setup: a repartition topic without a declared count gets the largest of
    the source topics of the subtopology writing it, iterating until nothing changes."""
    counts = {t.name: t.partitions for s in subtopologies for t in s.repartition_source_topics if t.partitions}

    def subtopology_count(s: Subtopology) -> int | None:
        best: int | None = None
        for t in s.repartition_source_topics:
            n = counts.get(t.name)
            if n is not None and (best is None or n > best):
                best = n
        for name in s.source_topics:
            n = count(name)
            if n is not None and (best is None or n > best):
                best = n
        return best

    while True:
        needed = progress = False
        for s in subtopologies:
            for sink in s.repartition_sink_topics:
                if sink in counts:
                    continue
                n = subtopology_count(s)
                if n is None:
                    needed = True
                else:
                    counts[sink] = n
                    progress = True
        if needed and not progress:
            raise StreamsInvalidTopology("Failed to compute number of partitions for all repartition topics. "
                                         "There may be loops in the topology that cannot be resolved.")
        if not needed:
            break
    for s in subtopologies:
        if any(t.name not in counts for t in s.repartition_source_topics):
            raise StreamsInvalidTopology("Failed to compute number of partitions for all repartition topics, "
                                         "because a repartition source topic is never used as a sink topic.")
    return counts


def _copartition_groups(s: Subtopology) -> list[set[str]]:
    out = []
    for g in s.copartition_groups:
        try:
            names = {s.source_topics[i] for i in g.source_topics}
            names |= {s.repartition_source_topics[i].name for i in g.repartition_source_topics}
        except IndexError:
            raise StreamsInvalidTopology(f"Copartition group of subtopology {s.subtopology_id} refers to a topic "
                                         "index out of range.") from None
        out.append(names)
    return out


def _enforce_copartitioning(group: set[str], fixed: set[str], flexible: set[str], count: PartitionCount
                            ) -> dict[str, int]:
    """CopartitionedTopicsEnforcer.enforce: the partition count every repartition topic of a
    copartition group must have."""
    if not group:
        return {}

    def known(name: str) -> int:
        n = count(name)
        if n is None:
            raise RuntimeError(f"Number of partitions is not set for topic: {name}")
        return n

    repartition = {t: known(t) for t in sorted(group) if t in fixed or t in flexible}
    others = {t: known(t) for t in sorted(group) if t not in repartition}
    if set(repartition) == group:
        if fixed:
            first = next(iter(sorted(fixed)))
            n = known(first)
            if any(known(t) != n for t in fixed):
                raise TopicConfigurationError(
                    Status.INCORRECTLY_PARTITIONED_TOPICS,
                    f"Following topics do not have the same number of partitions: [{_java_map(repartition)}]")
        else:
            n = max(repartition.values(), default=0)
            if n == 0:
                raise StreamsInvalidTopology("All topics in the copartition group had undefined partition number: "
                                             f"[{', '.join(repartition)}]")
    else:
        values = set(others.values())
        n = next(iter(others.values()))
        if len(values) > 1:
            raise TopicConfigurationError(
                Status.INCORRECTLY_PARTITIONED_TOPICS,
                f"Following topics do not have the same number of partitions: [{_java_map(others)}]")
    out = {}
    for t, current in repartition.items():
        out[t] = n
        if t in fixed and current != n:
            raise TopicConfigurationError(
                Status.INCORRECTLY_PARTITIONED_TOPICS,
                f"Number of partitions [{current}] of repartition topic [{t}] doesn't match number of "
                f"partitions [{n}] of the source topic.")
    return out


def _java_map(m: Mapping[str, int]) -> str:
    """A TreeMap's toString without its braces: ``{a=1, b=2}``."""
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(m.items())) + "}"


def _configured_subtopology(s: Subtopology, topics: Mapping[str, TopicView], decided: Mapping[str, int]
                            ) -> ConfiguredSubtopology:
    count = _partition_count(topics, decided)
    counts = []
    for name in [*s.source_topics, *(t.name for t in s.repartition_source_topics)]:
        n = count(name)
        if n is None:
            raise RuntimeError(f"Number of partitions must be set for topic {name}")
        counts.append(n)

    def configured(t: TopicInfo) -> ConfiguredInternalTopic:
        n = t.partitions or decided.get(t.name)
        if n is None:
            raise RuntimeError(f"Number of partitions must be set for topic {t.name}")
        return ConfiguredInternalTopic(t.name, n, t.replication_factor or None, t.topic_configs)

    return ConfiguredSubtopology(
        max(counts), frozenset(s.source_topics), {t.name: configured(t) for t in s.repartition_source_topics},
        frozenset(s.repartition_sink_topics), {t.name: configured(t) for t in s.state_changelog_topics})


def _missing_internal_topics(configured: Mapping[str, ConfiguredSubtopology], topology: StreamsTopology,
                             topics: Mapping[str, TopicView]) -> dict[str, ConfiguredInternalTopic]:
    """The internal topics to create; an existing one with another partition count is
    INCORRECTLY_PARTITIONED_TOPICS."""
    to_create: dict[str, ConfiguredInternalTopic] = {}
    for s in configured.values():
        to_create.update(s.repartition_source_topics)
        to_create.update(s.state_changelog_topics)
    inserted = len(to_create)
    for name in sorted(topology.required_topics()):
        t = topics.get(name)
        if t is None:
            continue
        expected = to_create.pop(name, None)
        if expected is not None and len(t.partitions) != expected.partitions:
            raise TopicConfigurationError(
                Status.INCORRECTLY_PARTITIONED_TOPICS,
                f"Existing topic {name} has different number of partitions: expected {expected.partitions}, "
                f"found {len(t.partitions)}")
    return {name: to_create[name] for name in java_hash_order(list(to_create), inserted)}
