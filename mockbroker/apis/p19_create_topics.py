"""CreateTopics (key 19): v2-7.

Behavior (Kafka's ``ControllerApis.createTopics`` and ``ReplicationControlManager.createTopics``):
* A name given twice is left out of the request and answered once, INVALID_REQUEST "Duplicate topic
  name."; ``__cluster_metadata`` is INVALID_REQUEST; a topic the client may not CREATE (on the cluster
  or the topic) TOPIC_AUTHORIZATION_FAILED "Authorization failed.".  Those are listed after the others.
* The rest go to the controller, which answers per topic in Kafka's order of checks:
  INVALID_TOPIC_EXCEPTION (an illegal name), TOPIC_ALREADY_EXISTS, INVALID_CONFIG (a null value, an
  unknown topic config, a bad value), then INVALID_REQUEST (assignments with counts) /
  INVALID_REPLICA_ASSIGNMENT, or INVALID_REPLICATION_FACTOR (below 1 and not -1, or more than the
  brokers) and INVALID_PARTITIONS (below 1 and not -1); -1 takes num.partitions /
  default.replication.factor (v4+).  More than 10,000 partitions in the request: POLICY_VIOLATION for
  every topic.
* A created topic is answered with its id, counts and (v5+) every topic config in force, by name
  (``ConfigCatalog.new_topic_configs``); without DESCRIBE_CONFIGS on the topic, TopicConfigErrorCode
  TOPIC_AUTHORIZATION_FAILED and no counts or configs.  ``validate_only`` answers the same (an id
  that is never used) and creates nothing.
* A timeout of 0 or less: the controller's deadline has passed (``common.controller_deadline_passed``):
  every topic of the request REQUEST_TIMED_OUT and nothing created, unless nothing reaches the
  controller (no topics, or only refused ones).
* The topic exists when the response is sent (Kafka's controller is asynchronous; clients that wait
  for metadata see it at once here).

Version notes:
* v2 validate_only, throttle.  v3 clients back off.  v4 default partitions/replication.
* v5 flexible, configs in the response.  v6 THROTTLING_QUOTA_EXCEEDED: a strict
  controller_mutation_rate quota (KIP-599) refuses topics once the token bucket is empty (charged also
  with validate_only, as Kafka's controller charges it); older versions are permissive (created, then
  throttled).
* v7 topic id in the response.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ..request import RequestContext, Response
from .common import (
    THROTTLING_QUOTA_EXCEEDED,
    ZERO_UUID,
    authorized,
    controller_deadline_passed,
    controller_quota_record,
    controller_quota_refused,
)

if TYPE_CHECKING:
    from protocol.request_types import CreateTopicsRequest
    from protocol.request_types import CreateTopicsRequest_CreatableTopic as CreatableTopic

API_KEY = ApiKey.CREATE_TOPICS
STRICT_SINCE = 6  # KafkaApis: newQuotaFor(request, strictSinceVersion = 6)
MAX_PARTITIONS_PER_BATCH = 10_000  # ReplicationControlManager: one controller batch
CLUSTER_METADATA = "__cluster_metadata"


def _result(name: str, error: ErrorCode = ErrorCode.none, message: str | None = None) -> dict[str, Any]:
    """A ``CreatableTopicResult`` with Kafka's defaults (no id, counts -1, no configs)."""
    return {"name": name, "topic_id": ZERO_UUID, "error_code": error, "error_message": message,
            "num_partitions": -1, "replication_factor": -1, "configs": [], "topic_config_error_code": 0}


def _total_partitions(topics: list[CreatableTopic], default: int) -> int:
    """ReplicationControlManager.validateTotalNumberOfPartitions."""
    total = 0
    for t in topics:
        if t.assignments:
            total += len(t.assignments)
        elif t.num_partitions == -1:
            total += default
        elif t.num_partitions > 0:
            total += t.num_partitions
    return total


def handle(ctx: RequestContext, req: CreateTopicsRequest) -> Response:
    counts = Counter(t.name for t in req.topics)
    # ControllerApis.createTopics: what never reaches the controller, answered after its results
    refused: list[dict[str, Any]] = []
    effective: list[CreatableTopic] = []
    for t in req.topics:
        if counts[t.name] > 1:
            continue
        if t.name == CLUSTER_METADATA:
            refused.append(_result(t.name, ErrorCode.invalid_request,
                                   f"Creation of internal topic {CLUSTER_METADATA} is prohibited."))
        elif not (authorized(ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
                  or authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, t.name)):
            refused.append(_result(t.name, ErrorCode.topic_authorization_failed, "Authorization failed."))
        else:
            effective.append(t)
    duplicates = [_result(name, ErrorCode.invalid_request, "Duplicate topic name.")
                  for name in dict.fromkeys(t.name for t in req.topics) if counts[name] > 1]
    if not effective:  # QuorumController.createTopics: nothing to do, no event (and no deadline)
        return Response({"topics": duplicates + refused})
    if controller_deadline_passed(req.timeout):
        return error_response(ctx, req, ErrorCode.request_timed_out)
    if _total_partitions(effective, ctx.metadata.config["num.partitions"]) > MAX_PARTITIONS_PER_BATCH:
        # the controller's event fails as a whole (PolicyViolationException): every topic
        return error_response(ctx, req, ErrorCode.policy_violation,
                              "Excessively large number of partitions per request.")
    throttle_ms = 0  # KIP-599: the controller mutation quota's throttle, the largest met
    out = []
    for t in effective:
        res, throttle = _create(ctx, req, t)
        throttle_ms = max(throttle_ms, throttle)
        out.append(res)
    return Response({"topics": out + duplicates + refused}, controller_throttle_ms=throttle_ms)


def _create(ctx: RequestContext, req: CreateTopicsRequest, t: CreatableTopic) -> tuple[dict[str, Any], int]:
    """One topic through ``ReplicationControlManager.createTopics``: (its result, the quota's throttle)."""
    cluster = ctx.metadata
    cfg = cluster.config
    res = _result(t.name)
    configs: dict[str, str | None] = {c.name: c.value for c in t.configs}  # a HashMap: the last one wins
    err, msg = cluster.check_new_topic_name_and_configs(t.name, configs)
    if err is not ErrorCode.none:
        return {**res, "error_code": err, "error_message": msg}, 0
    assignments: dict[int, list[int]] = {a.partition_index: list(a.broker_ids) for a in t.assignments}
    nparts, rf = int(t.num_partitions), int(t.replication_factor)
    if assignments:
        # createTopic's manual-assignment branch
        for value, field in ((rf, "replication factor"), (nparts, "numPartitions")):
            if value != -1:
                return {**res, "error_code": ErrorCode.invalid_request, "error_message": (
                    f"A manual partition assignment was specified, but {field} was not set to -1.")}, 0
        invalid = ctx.broker.controller.check_new_topic_assignments(
            [(a.partition_index, list(a.broker_ids)) for a in t.assignments])
        if invalid is not None:
            return {**res, "error_code": ErrorCode.invalid_replica_assignment, "error_message": invalid}, 0
        nparts = len(assignments)
        rf = len(next(iter(assignments.values())))
    else:
        nparts = cfg["num.partitions"] if nparts == -1 else nparts
        rf = cfg["default.replication.factor"] if rf == -1 else rf
        err, msg = cluster.check_new_topic_counts(int(t.num_partitions), int(t.replication_factor), rf)
        if err is not ErrorCode.none:
            return {**res, "error_code": err, "error_message": msg}, 0
    # context.applyPartitionChangeQuota, validate_only too (the controller runs the same code)
    refused = controller_quota_refused(ctx, STRICT_SINCE)
    if refused:
        return {**res, **THROTTLING_QUOTA_EXCEEDED}, refused
    throttle_ms = controller_quota_record(ctx, nparts)
    creation = {k: v for k, v in configs.items() if v is not None}  # nulls were refused above
    if req.validate_only:
        topic_id = uuid.uuid4()  # ReplicationControlManager assigns one before it knows: never used
    else:
        topic_id = ctx.broker.controller.create_topic(t.name, nparts, rf, creation, assignments or None).topic_id
    res["topic_id"] = topic_id
    if authorized(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, t.name):
        controller = cluster.controller_id if cluster.controller_id >= 0 else ctx.node_id
        res.update(num_partitions=nparts, replication_factor=rf,
                   configs=ctx.broker.config_catalog.new_topic_configs(controller, creation))
    else:
        res["topic_config_error_code"] = ErrorCode.topic_authorization_failed
    return res, throttle_ms


def error_response(ctx: RequestContext, req: CreateTopicsRequest, error: ErrorCode,
                   message: str | None = None) -> Response:
    """``CreateTopicsRequest.getErrorResponse``: every topic of the request (a duplicate as often as it is
    given) with the error."""
    return Response({"topics": [_result(t.name, error, message) for t in req.topics]})
