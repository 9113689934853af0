"""DescribeProducers (key 61): v0-0.

Behavior:
* Per requested partition, the active producers of the partition's log
  (Kafka's ``KafkaApis.handleDescribeProducersRequest`` ->
  ``ReplicaManager.activeProducerState`` -> ``Partition.activeProducerState``
  -> ``UnifiedLog.activeProducers``): every producer id in the log's producer
  state with its epoch, last sequence (-1 when no batch is retained), last
  timestamp, coordinator epoch (-1 until a marker was written) and the first
  offset of its open transaction (-1 when none).
* A topic name that is not legal: INVALID_TOPIC_EXCEPTION with Kafka's
  message; a topic the cluster does not know: UNKNOWN_TOPIC_OR_PARTITION for
  each of its partitions, as is a partition index the topic does not have.  A
  broker that holds no replica of the partition: NOT_LEADER_OR_FOLLOWER
  (``ReplicaManager.getPartitionOrError``).  Any replica answers, the leader
  or a follower, as Kafka's does from its local log (the admin client sends
  to the leader unless told a broker).
* Differences from Kafka: the simulation keeps one producer state per
  partition, so a follower answers the leader's state (a real follower's is
  as far behind as its log); the last timestamp is the one the producer state
  keeps (the append time of the last batch, or the marker's time), where
  Kafka's entry has the last batch's max timestamp.

Version notes:
* v0 only (flexible).  No authorizer: TOPIC_AUTHORIZATION_FAILED is never answered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode, default_message
from protocol.registry import ApiKey

from ..state.metadata import validate_topic_name
from ..storage.producer_state import ProducerStateManager
from ..request import RequestContext, Response
from ..security.authorizer import AclOperation, ResourceType
from .common import authorized, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import DescribeProducersRequest

API_KEY = ApiKey.DESCRIBE_PRODUCERS


def _partition_error(index: int, error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"partition_index": index, "error_code": error, "error_message": message, "active_producers": []}


def _active_producers(state: ProducerStateManager) -> list[dict[str, Any]]:
    """``UnifiedLog.activeProducers``: one entry per producer id the state holds."""
    return [{"producer_id": pid, "producer_epoch": e.epoch, "last_sequence": e.last_seq,
             "last_timestamp": e.last_timestamp_ms, "coordinator_epoch": e.coordinator_epoch,
             "current_txn_start_offset": e.current_txn_first_offset}
            for pid, e in sorted(state.producers.items())]


def handle(ctx: RequestContext, req: DescribeProducersRequest) -> Response:
    topics = []
    for t in req.topics:
        # KafkaApis.handleDescribeProducersRequest: the topic's error first (its name's validity, READ on
        # it, that it exists), each as an ApiError with Kafka's message; then each partition's state
        # (ReplicaManager.activeProducerState: an index the topic lacks, no message)
        invalid = validate_topic_name(t.name or "")
        topic = ctx.metadata.topics.get(t.name)
        parts = []
        allowed = invalid is not None or authorized(ctx, AclOperation.READ, ResourceType.TOPIC, t.name or "")
        for index in t.partition_indexes:
            if invalid is not None:
                parts.append(_partition_error(index, ErrorCode.invalid_topic_exception, invalid))
            elif not allowed:
                parts.append(_partition_error(index, ErrorCode.topic_authorization_failed,
                                              default_message(ErrorCode.topic_authorization_failed)))
            elif topic is None:
                parts.append(_partition_error(index, ErrorCode.unknown_topic_or_partition,
                                              default_message(ErrorCode.unknown_topic_or_partition)))
            elif not 0 <= index < len(topic.partitions):
                parts.append(_partition_error(index, ErrorCode.unknown_topic_or_partition))
            elif ctx.node_id not in (p := topic.partitions[index]).replicas:
                parts.append(_partition_error(index, ErrorCode.not_leader_or_follower))
            else:
                parts.append({"partition_index": index, "error_code": ErrorCode.none, "error_message": None,
                              "active_producers": _active_producers(p.producers)})
        topics.append({"name": t.name, "partitions": parts})
    return Response({"topics": topics}, partition_errors(topics, "partitions"))


def error_response(ctx: RequestContext, req: DescribeProducersRequest, error: ErrorCode) -> Response:
    topics = [{"name": t.name, "partitions": [_partition_error(i, error) for i in t.partition_indexes]}
              for t in req.topics]
    return Response({"topics": topics}, partition_errors(topics, "partitions"))
