"""WriteTxnMarkers (key 27): v1-2.

Behavior (Kafka's ``KafkaApis.handleWriteTxnMarkersRequest``; the log side is
``ReplicaManager.append_txn_marker``):
* The transaction coordinator's own markers never come this way (``cluster._LeaderMarkerWriter``
  hands them to the leaders directly); a client sends this one: Kafka's Admin
  ``abortTransaction`` (``kafka-transactions abort``) writes an ABORT marker into a partition
  whose transaction hangs, with the producer id, epoch and coordinator epoch
  ``DescribeProducers`` answered.
* Each marker's partitions: one this broker holds no replica of UNKNOWN_TOPIC_OR_PARTITION
  (``ReplicaManager.onlinePartition``); a ``__consumer_offsets`` partition completes the
  transaction's pending offsets in the group coordinator (its COORDINATOR_NOT_AVAILABLE and
  NOT_COORDINATOR answered NOT_LEADER_OR_FOLLOWER, as Kafka maps them); any other partition gets
  the control batch appended with acks=-1 (NOT_LEADER_OR_FOLLOWER on a follower, an older
  producer epoch INVALID_PRODUCER_EPOCH, a stale coordinator epoch TRANSACTION_COORDINATOR_FENCED)
  and is answered once the high watermark passed it (REQUEST_TIMED_OUT after request.timeout.ms).
  The response comes when every marker's partitions are answered, one entry per producer id
  (Kafka's answers are a map by producer id and partition: markers of one producer are merged,
  a marker or topic with no partitions is left out).  Producer id -1 or producer epoch -1
  cannot be written into a control batch: UNKNOWN_SERVER_ERROR for its partitions.
* With an authorizer: ALTER or CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED for
  every partition.  Differences from Kafka:
  Kafka exempts the response from the throttle (``sendResponseExemptThrottle``), here it is
  charged as any request.

Version notes:
* v1 is the first Kafka 4 serves (flexible).  v2 adds each marker's ``transaction_version``
  (KIP-890: a transaction version 2 marker bumps the producer epoch).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import Deferred, RequestContext, Response
from ..txn.coordinator import GROUP_METADATA_TOPIC
from .common import partition_errors

if TYPE_CHECKING:
    from protocol.request_types import WriteTxnMarkersRequest

API_KEY = ApiKey.WRITE_TXN_MARKERS

_NOT_LEADER = {ErrorCode.coordinator_not_available, ErrorCode.not_coordinator,
               ErrorCode.coordinator_load_in_progress}


def _body(req: WriteTxnMarkersRequest, errors: dict[tuple[int, str, int], ErrorCode]) -> dict[str, Any]:
    """``WriteTxnMarkersResponse(errors)``: Kafka keeps the answers in a map by producer id, each a map
    by partition, so markers of one producer id are one entry and a marker (or a topic) with no
    partitions is not answered."""
    by_pid: dict[int, dict[str, dict[int, ErrorCode]]] = {}
    for n, m in enumerate(req.markers):
        for t in m.topics:
            for i in t.partition_indexes:
                by_pid.setdefault(m.producer_id, {}).setdefault(t.name, {})[i] = errors[(n, t.name, i)]
    return {"markers": [{"producer_id": pid, "topics": [
        {"name": name, "partitions": [{"partition_index": i, "error_code": e} for i, e in parts.items()]}
        for name, parts in topics.items()]} for pid, topics in by_pid.items()]}


def _response(req: WriteTxnMarkersRequest, errors: dict[tuple[int, str, int], ErrorCode]) -> Response:
    body = _body(req, errors)
    return Response(body, partition_errors([t for m in body["markers"] for t in m["topics"]], "partitions"))



def handle(ctx: RequestContext, req: WriteTxnMarkersRequest) -> Response | Deferred:
    errors: dict[tuple[int, str, int], ErrorCode] = {}
    waiting: set[tuple[int, str, int]] = set()
    appends = []
    for n, m in enumerate(req.markers):
        commit = bool(m.transaction_result)
        for t in m.topics:
            for index in t.partition_indexes:
                key = (n, t.name, index)
                if key in errors or key in waiting:
                    continue  # a partition named twice: one marker (Kafka's entries are a map by partition)
                p = ctx.metadata.partition(t.name, index)
                if p is None or ctx.node_id not in p.replicas:
                    errors[key] = ErrorCode.unknown_topic_or_partition
                elif t.name == GROUP_METADATA_TOPIC:
                    error = ctx.broker.groups.complete_transaction(index, m.producer_id, commit)
                    errors[key] = ErrorCode.not_leader_or_follower if error in _NOT_LEADER else error
                else:
                    waiting.add(key)
                    appends.append((key, m, commit))
    if not appends:
        return _response(req, errors)
    deferred = Deferred()

    def answered(key: tuple[int, str, int], error: ErrorCode) -> None:
        if key not in waiting:
            return
        waiting.discard(key)
        errors[key] = error
        if not waiting:
            deferred.complete_with(lambda: _response(req, errors))

    rm = ctx.broker.replica_manager
    for key, m, commit in appends:
        _, topic, index = key
        version = getattr(m, "transaction_version", 0) or 0  # v2+
        if version < 0:
            # Kafka 4.4.0 fails the append of a marker at a negative transaction version (levels above
            # the known 0-2 are written as 2's): the partition's UNKNOWN_SERVER_ERROR, nothing written
            answered(key, ErrorCode.unknown_server_error)
            continue
        error = rm.append_txn_marker(topic, index, m.producer_id, m.producer_epoch, commit, m.coordinator_epoch,
                                     partial(answered, key), transaction_version=version)
        if error is not ErrorCode.none:
            answered(key, error)
    return deferred


def error_response(ctx: RequestContext, req: WriteTxnMarkersRequest, error: ErrorCode) -> Response:
    return _response(req, {(n, t.name, i): error for n, m in enumerate(req.markers)
                           for t in m.topics for i in t.partition_indexes})
