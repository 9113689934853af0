"""Metadata (key 3): v0-13.

Behavior:
* Brokers: every live simulated broker with its advertised host and port.
* Topics: all topics for a null list (and for an empty list at v0), else the
  named ones (v12+: or by topic id), each once.  Partitions carry leader, leader epoch,
  replicas, ISR and offline replicas.
* Auto-creation as Kafka's ``AutoTopicCreationManager``: an unknown topic is
  created when ``auto.create.topics.enable`` and the request allows it (always
  before v4); that response answers UNKNOWN_TOPIC_OR_PARTITION for it, as
  Kafka's broker does while its controller creates it (every version), and the
  next Metadata shows it.  Names that are not legal topics get
  INVALID_TOPIC_EXCEPTION; unknown ids UNKNOWN_TOPIC_ID.
* Authorized operations (v8+, when asked for): the client's on each topic the
  answer lists by name, those that do not exist included
  (``setTopicAuthorizedOperations``); -2147483648 ("not requested") otherwise and
  for unknown ids and refused topics.

Version notes:
* v1 controller id, is_internal, null = all topics.  v2 cluster id.  v3 throttle.
* v4 allow_auto_topic_creation.  v5 offline replicas.  v6 clients back off (KIP-219).
* v7 leader epoch.  v8 authorized operations.  v9 flexible.  v10 topic ids.
* v10 topic ids in the response; a request naming a topic by id (or without a name) before v12 is
  answered INVALID_REQUEST for every topic, as Kafka's getErrorResponse.
* v11 drops cluster authorized operations.  v12 lookup by topic id: when any non-zero id is given the
  request is by id (the names are ignored; the Java client sends "" beside each id), unknown ids
  UNKNOWN_TOPIC_ID with a null name, listed first.  v13 top-level error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ..state.metadata import INTERNAL_TOPICS, validate_topic_name
from ..request import RequestContext, Response
from .common import (
    AUTHORIZED_OPS_NOT_REQUESTED,
    ZERO_UUID,
    authorized,
    authorized_operations,
    cluster_authorized_operations,
    node_endpoints,
    partition_errors,
)

if TYPE_CHECKING:
    from protocol.request_types import MetadataRequest

API_KEY = ApiKey.METADATA

def topic_entry(ctx: RequestContext, topic: Any, include_ops: bool) -> dict[str, Any]:
    cluster = ctx.metadata
    alive = {b.node_id for b in cluster.live_brokers()}
    reachable = {b.node_id for b in cluster.live_brokers(ctx.listener_name)}
    parts = []
    for p in topic.partitions:
        # KRaftMetadataCache.getPartitionMetadata: a live leader without the request's listener is
        # LISTENER_NOT_FOUND from v6 (errorUnavailableListeners), LEADER_NOT_AVAILABLE before
        error = ErrorCode.none
        if p.leader_id not in alive:
            error = ErrorCode.leader_not_available
        elif p.leader_id not in reachable:
            error = ErrorCode.listener_not_found if ctx.version >= 6 else ErrorCode.leader_not_available
        parts.append(
            {
                "error_code": error,
                "partition_index": p.index,
                "leader_id": p.leader_id if error == ErrorCode.none else -1,
                "leader_epoch": p.leader_epoch,
                "replica_nodes": list(p.replicas),
                "isr_nodes": [r for r in p.isr if r in alive],
                "offline_replicas": [r for r in p.replicas if r not in alive],
            }
        )
    return {
        "error_code": ErrorCode.none,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.internal,
        "partitions": parts,
        "topic_authorized_operations": authorized_operations(ctx, ResourceType.TOPIC, topic.name) if include_ops
        else AUTHORIZED_OPS_NOT_REQUESTED,
    }


def _unauthorized(name: str) -> dict[str, Any]:
    """A topic the client may not describe (or auto-create): TOPIC_AUTHORIZATION_FAILED, no id."""
    return {"error_code": ErrorCode.topic_authorization_failed, "name": name, "topic_id": ZERO_UUID,
            "is_internal": name in INTERNAL_TOPICS, "partitions": []}


def handle(ctx: RequestContext, req: MetadataRequest) -> Response:
    cluster = ctx.metadata
    v = ctx.version
    include_ops = bool(req.include_topic_authorized_operations)
    allow_auto = v < 4 or bool(req.allow_auto_topic_creation)
    topics_out: list[dict[str, Any]] = []
    requested = req.topics
    if requested is None or (v == 0 and len(requested) == 0):
        # KafkaApis: all topics means the ones the client may DESCRIBE
        topics_out = [topic_entry(ctx, t, include_ops) for t in cluster.topics.values()
                      if authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name)]
    else:
        if v < 12:
            for rt in requested:  # KafkaApis: topic ids are not supported before v12 (InvalidRequestException)
                if rt.name is None:
                    return error_response(ctx, req, ErrorCode.invalid_request)
                if rt.topic_id is not None and rt.topic_id != ZERO_UUID:
                    return error_response(ctx, req, ErrorCode.invalid_request)
        # KafkaApis: any topic id asked for means the request is by id (the names are not read; the Java
        # client sends "" with each id); unknown ids first, then the topics of the known ones
        ids = list(dict.fromkeys(rt.topic_id for rt in requested if rt.topic_id is not None and rt.topic_id != ZERO_UUID))
        if ids:
            topics_out = [{"error_code": ErrorCode.unknown_topic_id, "name": None, "topic_id": i, "partitions": []}
                          for i in ids if i not in cluster.topics_by_id]
            for i in ids:
                t = cluster.topics_by_id.get(i)
                if t is not None and authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name):
                    topics_out.append(topic_entry(ctx, t, include_ops))
                elif t is not None:
                    topics_out.append({"error_code": ErrorCode.topic_authorization_failed, "name": None,
                                       "topic_id": i, "partitions": []})
        for name in ([] if ids else list(dict.fromkeys(rt.name for rt in requested))):
            if name is not None and not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                topics_out.append(_unauthorized(name))
                continue
            t = cluster.topics.get(name) if name is not None else None
            if t is not None:
                topics_out.append(topic_entry(ctx, t, include_ops))
                continue
            # KafkaApis.getTopicMetadata: a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION, created
            # or not (DefaultAutoTopicCreationManager answers so while it asks the controller), unless its
            # name is illegal
            err = ErrorCode.unknown_topic_or_partition
            if name is None or validate_topic_name(name) is not None:
                err = ErrorCode.invalid_topic_exception
            elif allow_auto and cluster.config["auto.create.topics.enable"]:
                if not (authorized(ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
                        or authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, name)):
                    topics_out.append(_unauthorized(name))  # KafkaApis' unauthorizedForCreateTopics
                    continue
                ctx.broker.controller.auto_create_topic(name)
            # setTopicAuthorizedOperations covers every topic getTopicMetadata answered, these too
            topics_out.append({"error_code": err, "name": name, "topic_id": ZERO_UUID,
                               "is_internal": name in INTERNAL_TOPICS, "partitions": [],
                               "topic_authorized_operations": authorized_operations(ctx, ResourceType.TOPIC, name or "")
                               if include_ops else AUTHORIZED_OPS_NOT_REQUESTED})
    injected = ctx.injected
    if injected is not None:  # the topics the rule names get its error and no partitions
        for entry in topics_out:
            if injected.applies(entry.get("name") or "", None):
                entry.update(error_code=injected.error, partitions=[])
    resp = {
        "brokers": node_endpoints(cluster.live_brokers(), ctx.listener_name),
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id,
        "topics": topics_out,
        "cluster_authorized_operations": cluster_authorized_operations(ctx)
        if 8 <= v <= 10 and req.include_cluster_authorized_operations else AUTHORIZED_OPS_NOT_REQUESTED,
        "error_code": ErrorCode.none,
    }
    return Response(resp, partition_errors(topics_out, "partitions", topic_errors=True))


def error_response(ctx: RequestContext, req: MetadataRequest, error: ErrorCode) -> Response:
    """MetadataRequest.getErrorResponse: every topic asked for with the error and no partitions, no
    brokers (a request Kafka refuses: topic ids before v12)."""
    topics: list[dict[str, Any]] = [{"error_code": error, "name": rt.name or "", "topic_id": rt.topic_id or ZERO_UUID, "is_internal": False,
               "partitions": []} for rt in req.topics or ()]
    return Response({"brokers": [], "cluster_id": None, "controller_id": -1, "topics": topics,
                     "cluster_authorized_operations": AUTHORIZED_OPS_NOT_REQUESTED, "error_code": error},
                    partition_errors(topics, "partitions", topic_errors=True))


# Metadata gives an injected error to the topics it applies to (every topic when it names none),
# with no partitions, and lists the brokers as usual: the per-topic failure clients retry on.
HANDLES_INJECTED_ERRORS = True
