"""CreateTopics (key 19): v2-7.

Behavior:
* num_partitions / replication_factor -1 take num.partitions /
  default.replication.factor (v4+); manual assignments require both to be -1.
* Errors per topic as Kafka's controller: INVALID_TOPIC_EXCEPTION (illegal
  name), TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR
  (below 1 or above the number of brokers), INVALID_CONFIG (unknown topic
  config or bad value), INVALID_REQUEST (a name given twice, or assignments
  with counts).  validate_only checks without creating.
* The topic exists when the response is sent (Kafka's controller is
  asynchronous; clients that wait for metadata see it at once here).

Version notes:
* v2 validate_only, throttle.  v3 clients back off.  v4 default partitions/replication.
* v5 flexible, configs in the response.  v6 THROTTLING_QUOTA_EXCEEDED: a strict
  controller_mutation_rate quota (KIP-599) refuses topics once the token bucket is empty;
  older versions are permissive (created, then throttled).
* v7 topic id in the response.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ..metadata import TOPIC_CONFIGS
from ..request import RequestContext, Response
from .common import (
    THROTTLING_QUOTA_EXCEEDED,
    authorized,
    controller_quota_record,
    controller_quota_refused,
)

if TYPE_CHECKING:
    from protocol.request_types import CreateTopicsRequest

API_KEY = ApiKey.CREATE_TOPICS
STRICT_SINCE = 6  # KafkaApis: newQuotaFor(request, strictSinceVersion = 6)


def topic_configs_out(cluster: Any, topic: Any) -> list[dict[str, Any]]:
    return [
        {"name": name, "value": str(cluster.topic_config(topic, name)), "read_only": False,
         "config_source": cluster.topic_config_source(topic, name), "is_sensitive": False}
        for name in sorted(TOPIC_CONFIGS)
    ]


MAX_PARTITIONS_PER_BATCH = 10_000  # ReplicationControlManager: one controller batch


def _total_partitions(req: CreateTopicsRequest, default: int) -> int:
    """ReplicationControlManager.validateTotalNumberOfPartitions."""
    total = 0
    for t in req.topics:
        if t.assignments:
            total += len(t.assignments)
        elif t.num_partitions == -1:
            total += default
        elif t.num_partitions > 0:
            total += t.num_partitions
    return total


def handle(ctx: RequestContext, req: CreateTopicsRequest) -> Response:
    cluster = ctx.metadata
    cfg = cluster.config
    if _total_partitions(req, cfg["num.partitions"]) > MAX_PARTITIONS_PER_BATCH:
        # the controller refuses the whole request (PolicyViolationException)
        return Response({"topics": [{"name": t.name, "error_code": ErrorCode.policy_violation,
                                     "error_message": "Excessively large number of partitions per request.",
                                     "num_partitions": -1, "replication_factor": -1, "configs": None,
                                     "topic_config_error_code": 0} for t in req.topics]})
    throttle_ms = 0  # KIP-599: the controller mutation quota's throttle, the largest met
    counts = Counter(t.name for t in req.topics)
    out = []
    for t in req.topics:
        res: dict[str, Any] = {"name": t.name, "error_code": ErrorCode.none, "error_message": None,
                               "num_partitions": -1, "replication_factor": -1, "configs": None,
                               "topic_config_error_code": 0}
        out.append(res)
        if counts[t.name] > 1:
            res.update(error_code=ErrorCode.invalid_request,
                       error_message="Found multiple entries for this topic.")
            continue
        if not (authorized(ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
                or authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, t.name)):
            res.update(error_code=ErrorCode.topic_authorization_failed,
                       error_message="Authorization failed.")  # KafkaApis' unauthorized topics
            continue
        assignments: dict[int, list[int]] = {a.partition_index: list(a.broker_ids) for a in t.assignments}
        nparts, rf = int(t.num_partitions), int(t.replication_factor)
        if assignments:
            # ReplicationControlManager.createTopic's manual-assignment branch
            for value, field in ((rf, "replication factor"), (nparts, "numPartitions")):
                if value != -1:
                    res.update(error_code=ErrorCode.invalid_request, error_message=(
                        f"A manual partition assignment was specified, but {field} was not set to -1."))
                    break
            else:
                invalid = ctx.broker.controller.check_new_topic_assignments(
                    [(a.partition_index, list(a.broker_ids)) for a in t.assignments])
                if invalid is not None:
                    res.update(error_code=ErrorCode.invalid_replica_assignment, error_message=invalid)
            if res["error_code"] is not ErrorCode.none:
                continue
            nparts = len(assignments)
            rf = len(next(iter(assignments.values())))
        if nparts == -1:
            nparts = cfg["num.partitions"]
        if rf == -1:
            rf = cfg["default.replication.factor"]
        configs = {c.name: c.value for c in t.configs}
        err, msg = cluster.check_new_topic(t.name, nparts, rf, configs)
        if err is not ErrorCode.none:
            res.update(error_code=err, error_message=msg)
            continue
        if req.validate_only:
            res.update(num_partitions=nparts, replication_factor=rf)
            continue
        refused = controller_quota_refused(ctx, STRICT_SINCE)
        throttle_ms = max(throttle_ms, refused)
        if refused:
            res.update(THROTTLING_QUOTA_EXCEEDED)
            continue
        # check_new_topic refused null values (INVALID_CONFIG): every value here is a string
        topic = ctx.broker.controller.create_topic(t.name, nparts, rf,
                                                   {k: v for k, v in configs.items() if v is not None},
                                                   assignments or None)
        throttle_ms = max(throttle_ms, controller_quota_record(ctx, nparts))
        res.update(topic_id=topic.topic_id, num_partitions=nparts, replication_factor=rf,
                   configs=topic_configs_out(cluster, topic))
    return Response({"topics": out}, controller_throttle_ms=throttle_ms)


def error_response(ctx: RequestContext, req: CreateTopicsRequest, error: ErrorCode) -> Response:
    return Response({"topics": [{"name": t.name, "error_code": error, "error_message": None, "num_partitions": -1,
                                 "replication_factor": -1, "configs": None, "topic_config_error_code": 0}
                                for t in req.topics]})
