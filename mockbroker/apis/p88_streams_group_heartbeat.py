"""StreamsGroupHeartbeat (key 88): v0-1 (KIP-1071).

Behavior: see ``mockbroker/group/streams_coordinator.py`` (Kafka's
GroupMetadataManager.streamsGroupHeartbeat): the first member registers the
topology, the broker creates the missing repartition and changelog topics
(with the partition count the coordinator decided, the topic configs the
member declared, and default.replication.factor capped at the number of
brokers when the member gives none or -1), the sticky task assignor's active and
standby tasks, member epochs, session and rebalance timeouts, the statuses
(MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS, INCORRECTLY_PARTITIONED_TOPICS,
STALE_TOPOLOGY, SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED), endpoints for
interactive queries.  As KafkaApis: a topology naming an internal topic
(``__consumer_offsets``, ``__transaction_state``) or an illegal topic name gets
STREAMS_INVALID_TOPOLOGY.  With an authorizer (``KafkaApis.handleStreamsGroupHeartbeat``): READ on
the group (GROUP_AUTHORIZATION_FAILED), DESCRIBE on every topic the topology names (source, sink and
internal topics; else TOPIC_AUTHORIZATION_FAILED for the heartbeat, without a message), and CREATE on
the cluster or on each internal topic to create: without it none is created and the
MISSING_INTERNAL_TOPICS status says "Unauthorized to CREATE on topics a,b." (after its own detail).
Warm-up tasks are never assigned.  With
group.streams.topology.description.plugin.class set, v1 asks once per topology
epoch for a topology description (StreamsGroupTopologyDescriptionUpdate, key 93).

An error answer carries Kafka's defaults beside the error: member epoch 0, no statuses.

Version notes:
* v0: AcceptableRecoveryLagLegacy is always 0 (Kafka 4.4 sets only v1's AcceptableRecoveryLag).
* v1: MISSING_CLIENT_TAGS status and topology_description_required.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ..group.streams_topology import ConfiguredInternalTopic, Status
from ..state.metadata import INTERNAL_TOPICS, validate_topic_name
from ..request import RequestContext, Response
from .common import authorized, client_host

if TYPE_CHECKING:
    from protocol.request_types import StreamsGroupHeartbeatRequest

API_KEY = ApiKey.STREAMS_GROUP_HEARTBEAT

log = logging.getLogger("mockbroker.group")


def _required_topics(req: StreamsGroupHeartbeatRequest) -> list[str]:
    out: list[str] = []
    if req.topology is None:
        return out
    for s in req.topology.subtopologies:
        names = [*s.source_topics, *s.repartition_sink_topics, *(t.name for t in s.repartition_source_topics),
                 *(t.name for t in s.state_changelog_topics)]
        out.extend(n for n in names if n not in out)
    return out


def _error(error: ErrorCode, message: str | None) -> dict[str, Any]:
    """An error answer: the schema's defaults beside the error (member epoch 0, no statuses), as Kafka's."""
    return {"error_code": error, "error_message": message, "member_id": "", "member_epoch": 0,
            "heartbeat_interval": 0, "task_offset_interval": 0, "acceptable_recovery_lag": -1, "status": [],
            "active_tasks": None, "standby_tasks": None, "warmup_tasks": None, "endpoint_information_epoch": 0,
            "partitions_by_user_endpoint": None}


def _response(ctx: RequestContext, body: dict[str, Any]) -> Response:
    """v0's AcceptableRecoveryLagLegacy is never set by Kafka 4.4 (it sets v1's AcceptableRecoveryLag): 0."""
    if ctx.version == 0:
        body = {**body, "acceptable_recovery_lag": 0}
    return Response(body)


def _create(ctx: RequestContext, topics: dict[str, ConfiguredInternalTopic]) -> None:
    """AutoTopicCreationManager.createStreamsInternalTopics: the ones that do not exist yet."""
    metadata = ctx.broker.metadata
    for name, t in topics.items():
        if name in metadata.topics:
            continue
        rf = t.replication_factor or -1  # 0 (not given) and -1 (Streams' default): the broker's default
        if rf < 0:
            rf = min(metadata.config["default.replication.factor"], len(metadata.brokers))
        # what the controller refuses stays missing: the member keeps seeing MISSING_INTERNAL_TOPICS
        refused = metadata.validate_topic_configs(dict(t.topic_configs))
        if rf > len(metadata.brokers):
            refused = f"replication factor {rf} larger than the {len(metadata.brokers)} available brokers"
        if refused is not None:
            log.warning("Could not create the internal topic %s of a streams group: %s", name, refused)
            continue
        ctx.broker.controller.create_topic(name, t.partitions, rf, dict(t.topic_configs))
        log.info("Created the internal topic %s of a streams group (%d partitions, replication factor %d).",
                 name, t.partitions, rf)


def handle(ctx: RequestContext, req: StreamsGroupHeartbeatRequest) -> Response:
    required = _required_topics(req)
    prohibited = [n for n in required if n in INTERNAL_TOPICS]
    if prohibited:
        return _response(ctx, _error(ErrorCode.streams_invalid_topology,
                                     f"Use of Kafka internal topics {','.join(prohibited)} in a Kafka Streams "
                                     "topology is prohibited."))
    invalid = [n for n in required if validate_topic_name(n) is not None]
    if invalid:
        return _response(ctx, _error(ErrorCode.streams_invalid_topology,
                                     f"Topic names {','.join(invalid)} are not valid topic names."))
    if not all(authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, n) for n in required):
        return _response(ctx, _error(ErrorCode.topic_authorization_failed, None))
    r = ctx.broker.groups.streams_group_heartbeat(ctx.node_id, ctx.version, req, ctx.client_id, client_host(ctx))
    if r.error != ErrorCode.none:
        return _response(ctx, _error(r.error, r.error_message))
    body = {"error_code": ErrorCode.none, "error_message": None, **r.response}
    creatable = r.internal_topics_to_create
    if creatable:
        denied = [] if authorized(ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME) else [
            n for n in creatable if not authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, n)]
        if denied:
            _unauthorized_to_create(body, denied)
        else:
            _create(ctx, creatable)
    return _response(ctx, body)


def _unauthorized_to_create(body: dict[str, Any], denied: list[str]) -> None:
    """KafkaApis: the topics the client may not CREATE are named in the MISSING_INTERNAL_TOPICS status
    (appended to its detail, or a status of its own), and none is created."""
    statuses = body["status"] = list(body.get("status") or [])
    note = f"Unauthorized to CREATE on topics {','.join(denied)}."
    for i, st in enumerate(statuses):
        if st["status_code"] == int(Status.MISSING_INTERNAL_TOPICS):
            statuses[i] = {**st, "status_detail": f"{st['status_detail']}; {note}"}
            return
    statuses.append({"status_code": int(Status.MISSING_INTERNAL_TOPICS), "status_detail": note})


def error_response(ctx: RequestContext, req: StreamsGroupHeartbeatRequest, error: ErrorCode) -> Response:
    return _response(ctx, _error(error, None))
