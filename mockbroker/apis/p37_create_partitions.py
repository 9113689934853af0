"""CreatePartitions (key 37): v0-3.

Behavior (Kafka's ``ControllerApis.createPartitions`` and ``ReplicationControlManager.createPartitions``,
the controller's part in ``Controller.create_partitions``):
* Each topic grows to ``count`` partitions, placed as ``assignments`` says (one broker list per new
  partition) or spread over the live brokers.  The new partitions exist when the response is sent:
  they serve Produce and Fetch at once, appear in Metadata, and consumer groups see them (a KIP-848
  group's next heartbeat assigns them; classic consumers rejoin when their metadata shows them).
* Errors per topic with Kafka's messages: a topic named twice INVALID_REQUEST ``Duplicate topic
  name.``, an unknown topic UNKNOWN_TOPIC_OR_PARTITION, a count not above the current one
  INVALID_PARTITIONS, assignments that do not match the count, name a broker twice or one not
  registered, differ from the topic's replication factor or name only brokers that are down
  INVALID_REPLICA_ASSIGNMENT, more replicas than brokers INVALID_REPLICATION_FACTOR.  More than
  10,000 new partitions in one request: every topic POLICY_VIOLATION.
* ``validate_only`` checks without adding.
* A timeout of 0 or less: the controller's deadline has passed (``common.controller_deadline_passed``):
  every topic of the request (a duplicate as often as it is given) REQUEST_TIMED_OUT and nothing added,
  unless no topic reaches the controller (duplicates and unauthorized topics only).
* The controller mutation quota (KIP-599) as CreateTopics: the new partitions are charged (also
  with ``validate_only``, as Kafka's controller charges them before it knows); from v3 a quota
  already exceeded refuses the topic with THROTTLING_QUOTA_EXCEEDED, before that the request is
  served and then throttled.

Version notes:
* v1 clients back off on the throttle.  v2 flexible.  v3 THROTTLING_QUOTA_EXCEEDED (strict quota).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..security.authorizer import AclOperation, ResourceType
from .common import (
    authorized,
    controller_deadline_passed,
    controller_quota_record,
    controller_quota_refused,
    first_error,
)

if TYPE_CHECKING:
    from protocol.request_types import CreatePartitionsRequest

API_KEY = ApiKey.CREATE_PARTITIONS
STRICT_SINCE = 3  # ControllerApis: newQuotaFor(request.session, request.header, 3)
MAX_PARTITIONS_PER_BATCH = 10_000  # ReplicationControlManager.validateTotalNumberOfPartitions


def handle(ctx: RequestContext, req: CreatePartitionsRequest) -> Response:
    # ControllerApis.createPartitions: a name given twice and a topic the client may not ALTER are answered
    # by the broker; the rest go to the controller
    counts = Counter(t.name for t in req.topics)
    results: list[dict[str, Any]] = [{"name": name, "error_code": ErrorCode.invalid_request,
                                      "error_message": "Duplicate topic name."} for name, n in counts.items() if n > 1]
    effective = []
    for t in req.topics:
        if counts[t.name] > 1:
            continue
        if not authorized(ctx, AclOperation.ALTER, ResourceType.TOPIC, t.name):  # ControllerApis: ALTER on it
            results.append({"name": t.name, "error_code": ErrorCode.topic_authorization_failed, "error_message": None})
        else:
            effective.append(t)
    if not effective:  # QuorumController.createPartitions: nothing to do, no event (and no deadline)
        return Response({"results": results}, error_code=first_error(results))
    if controller_deadline_passed(req.timeout):
        return error_response(ctx, req, ErrorCode.request_timed_out)
    metadata = ctx.metadata
    added = 0
    for t in effective:
        topic = metadata.topics.get(t.name)
        if t.count >= 0 and topic is not None and t.count > len(topic.partitions):
            added += t.count - len(topic.partitions)
    if added > MAX_PARTITIONS_PER_BATCH:  # the controller's event fails as a whole: getErrorResponse
        return error_response(ctx, req, ErrorCode.policy_violation,
                              "Excessively large number of additional partitions per request.")
    throttle_ms = 0  # KIP-599: the controller mutation quota's throttle, the largest met

    def apply_quota(partitions: int) -> bool:
        nonlocal throttle_ms
        refused = controller_quota_refused(ctx, STRICT_SINCE)
        if refused:
            throttle_ms = max(throttle_ms, refused)
            return False
        throttle_ms = max(throttle_ms, controller_quota_record(ctx, partitions))
        return True

    for t in effective:
        assignments = None if t.assignments is None else [[int(b) for b in a.broker_ids] for a in t.assignments]
        error, message = ctx.broker.controller.create_partitions(t.name, t.count, assignments,
                                                                 bool(req.validate_only), apply_quota)
        results.append({"name": t.name, "error_code": error, "error_message": message})
    return Response({"results": results}, error_code=first_error(results), controller_throttle_ms=throttle_ms)


def error_response(ctx: RequestContext, req: CreatePartitionsRequest, error: ErrorCode,
                   message: str | None = None) -> Response:
    results: list[dict[str, Any]] = [{"name": t.name, "error_code": error, "error_message": message}
                                     for t in req.topics]
    return Response({"results": results}, error_code=first_error(results))
