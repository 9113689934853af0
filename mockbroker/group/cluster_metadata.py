"""What the group coordinator reads of the cluster metadata.

Kafka's group coordinator reads the brokers and topics from the broker's
``MetadataImage``; here the broker hands the coordinator its cluster metadata
object, and these protocols name the few fields the group code reads, so the
group package depends on nothing above it: the live brokers (to place each
group on the leader of its ``__consumer_offsets`` partition) and the topics
(ids and partition counts, for KIP-848 subscriptions and assignments).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sized
from typing import Protocol


class BrokerNode(Protocol):
    @property
    def node_id(self) -> int: ...

    def endpoint(self, listener_name: str) -> tuple[str, int] | None:
        """Its advertised (host, port) on a listener (FindCoordinator answers the request's)."""

    @property
    def alive(self) -> bool: ...


class TopicMetadata(Protocol):
    @property
    def topic_id(self) -> uuid.UUID: ...

    @property
    def partitions(self) -> Sized: ...


class ClusterMetadata(Protocol):
    @property
    def brokers(self) -> Mapping[int, BrokerNode]: ...

    @property
    def topics(self) -> Mapping[str, TopicMetadata]: ...
