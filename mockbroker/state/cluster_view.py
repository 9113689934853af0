"""The read-only views of the cluster the coordinators get, and ``TopicPartition``.

Kafka's group and transaction coordinators read the brokers and topics from the
broker's ``MetadataImage``; here the cluster hands them its ``ClusterMetadata``
(``metadata.py``), and these protocols name the few fields they read, so
``group/`` and ``txn/`` depend on nothing above them: the live brokers (to place
each group or transactional id on the leader of its partition) and the topics
(ids and partition counts, for KIP-848 subscriptions and assignments).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sized
from typing import Protocol

# A partition by topic name and index (Kafka's TopicPartition): the one definition of the name.
TopicPartition = tuple[str, int]


class BrokerView(Protocol):
    @property
    def node_id(self) -> int: ...

    def endpoint(self, listener_name: str) -> tuple[str, int] | None:
        """Its advertised (host, port) on a listener (FindCoordinator answers the request's)."""

    @property
    def alive(self) -> bool: ...


class TopicView(Protocol):
    @property
    def topic_id(self) -> uuid.UUID: ...

    @property
    def partitions(self) -> Sized: ...


class ClusterView(Protocol):
    @property
    def brokers(self) -> Mapping[int, BrokerView]: ...

    @property
    def topics(self) -> Mapping[str, TopicView]: ...

    @property
    def topics_version(self) -> int:
        """Changes whenever ``topics`` gains or loses a topic or a topic gains partitions."""
