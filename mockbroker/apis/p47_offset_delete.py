"""OffsetDelete (key 47): v0-0.

Behavior (Kafka's ``KafkaApis.handleOffsetDeleteRequest`` and ``OffsetMetadataManager.deleteOffsets``):
* With an authorizer: DELETE on the group (GROUP_AUTHORIZATION_FAILED, the whole request), then READ
  on each topic: TOPIC_AUTHORIZATION_FAILED for the partitions of a topic the client may not read.
* A topic the cluster does not have, or a partition it lacks: UNKNOWN_TOPIC_OR_PARTITION for those
  partitions, answered by the broker; the rest go to the group's coordinator.  As KafkaApis builds
  the answer (``OffsetDeleteResponse.Builder``): a topic of the cluster listed with no partitions is
  left out, one the broker refuses is listed even with none, the broker's topics are listed once by
  name, and the coordinator's topics as it answered them (a topic listed twice, twice) unless the
  broker answered some.
* The group's own errors are the top-level error code with no topics: INVALID_GROUP_ID (empty id),
  NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND (no such group), NON_EMPTY_GROUP
  (a classic group with members whose protocol type is not ``consumer``).
* Per partition: GROUP_SUBSCRIBED_TO_TOPIC while a member subscribes to the topic (a classic
  consumer group's members' subscriptions at its last generation, a KIP-848 group's members' topic
  names and regexes), else the committed offset (and any transactional offset waiting for its
  marker) is removed: OffsetFetch answers -1 and a consumer starts by its auto.offset.reset.

Version notes:
* v0 only; clients back off on the throttle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import AclOperation, ResourceType
from ..request import RequestContext, Response
from .common import authorized, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import OffsetDeleteRequest

API_KEY = ApiKey.OFFSET_DELETE


class _Answered:
    """OffsetDeleteResponse.Builder: the topics the broker answered itself, each once by name (a
    topic listed twice gathers its partitions), in the order first seen; a topic whose partitions are
    all refused is listed even with none."""

    def __init__(self) -> None:
        self.topics: dict[str, list[dict[str, Any]]] = {}

    def add(self, name: str, index: int, error: ErrorCode) -> None:
        self.topics.setdefault(name, []).append({"partition_index": index, "error_code": error})

    def add_all(self, name: str, indexes: list[int], error: ErrorCode) -> None:
        parts = self.topics.setdefault(name, [])
        parts.extend({"partition_index": i, "error_code": error} for i in indexes)

    def merge(self, coordinator: list[tuple[str, list[tuple[int, ErrorCode]]]]) -> list[dict[str, Any]]:
        """Builder.merge: the coordinator's topics as it answered them when the broker answered none,
        else each appended to the broker's topic of that name or added."""
        answered = [[{"partition_index": i, "error_code": e} for i, e in parts] for _name, parts in coordinator]
        if not self.topics:
            return [{"name": name, "partitions": parts} for (name, _), parts in zip(coordinator, answered)]
        out = {name: list(parts) for name, parts in self.topics.items()}
        for (name, _), parts in zip(coordinator, answered):
            out.setdefault(name, []).extend(parts)
        return [{"name": name, "partitions": parts} for name, parts in out.items()]


def handle(ctx: RequestContext, req: OffsetDeleteRequest) -> Response:
    metadata = ctx.metadata
    answered = _Answered()  # KafkaApis.handleOffsetDeleteRequest: what the broker answers itself
    valid: list[tuple[str, list[int]]] = []  # what goes to the coordinator: topics with a partition left
    for t in req.topics:
        indexes = [int(p.partition_index) for p in t.partitions]
        if not authorized(ctx, AclOperation.READ, ResourceType.TOPIC, t.name):
            answered.add_all(t.name, indexes, ErrorCode.topic_authorization_failed)
        elif t.name not in metadata.topics:
            answered.add_all(t.name, indexes, ErrorCode.unknown_topic_or_partition)
        else:
            existing: list[int] = []
            for index in indexes:
                if metadata.partition(t.name, index) is None:
                    answered.add(t.name, index, ErrorCode.unknown_topic_or_partition)
                else:
                    existing.append(index)
            if existing:
                valid.append((str(t.name), existing))
    error, deleted = ctx.broker.groups.delete_offsets(ctx.node_id, req.group_id, valid)
    if error is not ErrorCode.none:  # OffsetDeleteResponse.Builder.merge: the error replaces the rest
        return Response({"error_code": error, "topics": []})
    topics = answered.merge(deleted)
    return Response({"error_code": ErrorCode.none, "topics": topics}, partition_errors(topics, "partitions"))


def error_response(ctx: RequestContext, req: OffsetDeleteRequest, error: ErrorCode) -> Response:
    return Response({"error_code": error, "topics": []})
