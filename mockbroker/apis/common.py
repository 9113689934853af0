"""Small helpers shared by handlers (kfake's donep/donet builders)."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode

from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ..observe.journal import PartitionRecord
from ..state.metadata import BrokerNode, ClusterMetadata, Partition, Topic
from ..server.config_catalog import DUPLICATE_RESOURCE, AlterResult, duplicate_resources
from ..request import Body, RequestContext, Response

ZERO_UUID = uuid.UUID(int=0)
AUTHORIZED_OPS_NOT_REQUESTED = -(2**31)  # Integer.MIN_VALUE: authorized operations not asked for
_O = AclOperation
# AclEntry.supportedOperations: the operations an authorized-operations bit field (AclOperation codes) covers
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DELETE, _O.ALTER, _O.DESCRIBE, _O.DESCRIBE_CONFIGS,
                         _O.ALTER_CONFIGS),
    ResourceType.GROUP: (_O.READ, _O.DELETE, _O.DESCRIBE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_O.CREATE, _O.ALTER, _O.DESCRIBE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS,
                           _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE),
}


# kio types some Kafka timestamps (TransactionStartTimeMs, a delegation token's) as non-nullable
# instants: Kafka's -1 ("none") is the instant 1 ms before the epoch, which kio writes as -1 again
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def instant(ms: int) -> datetime.datetime:
    """Epoch milliseconds as the instant kio writes back as the same number, -1 included."""
    return _EPOCH + datetime.timedelta(milliseconds=ms)


def resolve_topic(metadata: ClusterMetadata, name: str | None, topic_id: uuid.UUID | None,
                  by_id: bool) -> tuple[Topic | None, ErrorCode]:
    """The topic a request names, by id (Fetch v13+, Produce v13) or by name."""
    if by_id:
        t = metadata.topics_by_id.get(topic_id) if topic_id else None
        return t, (ErrorCode.none if t else ErrorCode.unknown_topic_id)
    t = metadata.topics.get(name or "")
    return t, (ErrorCode.none if t else ErrorCode.unknown_topic_or_partition)


def node_endpoints(nodes: Iterable[BrokerNode], listener_name: str) -> list[dict[str, Any]]:
    """The nodes' endpoints on the listener a request came on (``getAliveBrokerNodes(listenerName)``):
    a node without that listener is left out."""
    out = []
    for node in nodes:
        address = node.endpoint(listener_name)
        if address is not None:
            out.append({"node_id": node.node_id, "host": address[0], "port": address[1], "rack": node.rack})
    return out


def assignment_body(assignment: Mapping[uuid.UUID, Iterable[int]] | None) -> dict[str, Any] | None:
    """A KIP-848 / KIP-932 heartbeat's assignment: topic ids (in a stable order) with their partitions."""
    if assignment is None:
        return None
    return {"topic_partitions": [{"topic_id": tid, "partitions": sorted(ps)}
                                 for tid, ps in sorted(assignment.items(), key=lambda kv: str(kv[0]))]}


def leader_info(partition: Partition) -> dict[str, Any]:
    return {"leader_id": partition.leader_id, "leader_epoch": partition.leader_epoch}


def controller_quota_refused(ctx: RequestContext, strict_since: int) -> int:
    """KIP-599 strict quota (StrictControllerMutationQuota): the throttle (> 0) when this request
    version is strict and the entity's token bucket is already empty, else 0; the handler refuses
    the topic and puts the larger throttle in its ``Response.controller_throttle_ms``."""
    if ctx.version < strict_since:
        return 0
    quota = ctx.broker.quotas.controller_mutation
    return quota.strict_check(ctx.principal, ctx.client_id, ctx.broker.clock.monotonic_ms())


def controller_quota_record(ctx: RequestContext, partitions: int) -> int:
    """Charge created or deleted partitions to the controller mutation quota: the throttle."""
    quota = ctx.broker.quotas.controller_mutation
    return quota.record(ctx.principal, ctx.client_id, partitions, ctx.broker.clock.monotonic_ms())


THROTTLING_QUOTA_EXCEEDED = {"error_code": ErrorCode.throttling_quota_exceeded,
                             "error_message": "The throttling quota has been exceeded."}


def controller_deadline_passed(timeout: datetime.timedelta | int) -> bool:
    """Whether a request the broker forwards to the controller (CreateTopics, DeleteTopics,
    CreatePartitions, ElectLeaders, AlterPartitionReassignments) times out there.  Kafka's
    ``ControllerApis`` makes the request's timeout a deadline (now + timeout) for the controller's event
    (``ControllerRequestContext.requestTimeoutMsToDeadlineNs``); ``KafkaEventQueue`` fails an event whose
    deadline has passed before it runs with a ``TimeoutException`` (REQUEST_TIMED_OUT) and never runs it,
    while one that runs in time completes whatever its timeout.  mockbroker's controller runs an event
    at once, so only a deadline already past when the request arrives, a timeout of 0 or less, has
    passed (on a real, loaded controller a few milliseconds may, now and then, time out too).  The
    handler asks only when it would reach the controller: a request left with nothing to do there is
    answered without its event, as Kafka does."""
    return timedelta_ms(timeout) <= 0


def authorized(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
    """AuthHelper.authorize: always, without an authorizer; else the StandardAuthorizer's decision
    for the request's principal and address."""
    authorizer = ctx.broker.authorizer
    return authorizer is None or authorizer.authorize(ctx.principal, client_host(ctx)[1:], operation,
                                                      resource_type, name)


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str = CLUSTER_NAME) -> int:
    """AuthHelper.authorizedOperations: the bit field of the supported operations the client may do on
    the resource (every one without an authorizer)."""
    return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type] if authorized(ctx, op, resource_type, name))


def cluster_authorized_operations(ctx: RequestContext) -> int:
    """Metadata's (v8-10) and DescribeCluster's cluster_authorized_operations when asked for: 0 without
    DESCRIBE on the cluster (AuthHelper.computeDescribeClusterResponse)."""
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return 0
    return authorized_operations(ctx, ResourceType.CLUSTER)


def group_operations(ctx: RequestContext, group_id: str, include: bool) -> int:
    """A described group's authorized_operations: the group's (AuthHelper.authorizedOperations) when
    asked for, else Integer.MIN_VALUE."""
    return authorized_operations(ctx, ResourceType.GROUP, group_id) if include else AUTHORIZED_OPS_NOT_REQUESTED


def undescribable_topic(ctx: RequestContext, names: Iterable[str]) -> bool:
    """Whether the client may not DESCRIBE one of the topics (with an authorizer): a group
    heartbeat's subscribed topics, those a described group names."""
    return ctx.broker.authorizer is not None and \
        not all(authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, n) for n in set(names))


def hidden_group(group_id: str) -> dict[str, Any]:
    """The group Consumer/ShareGroupDescribe answer in place of one that undescribable_topic (KafkaApis)."""
    return {"group_id": group_id, "error_code": ErrorCode.topic_authorization_failed,
            "error_message": "The group has described topic(s) that the client is not authorized to describe.",
            "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
            "authorized_operations": AUTHORIZED_OPS_NOT_REQUESTED}


def authorized_any(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType) -> bool:
    """AuthHelper.isAuthorizedByResourceType (Authorizer.authorizeByResourceType)."""
    authorizer = ctx.broker.authorizer
    return authorizer is None or authorizer.authorize_any(ctx.principal, client_host(ctx)[1:], operation,
                                                          resource_type)


def client_host(ctx: RequestContext) -> str:
    """The client's address as Kafka's RequestContext.clientAddress prints it ("/127.0.0.1")."""
    peer = ctx.peer
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return "/" + host.strip("[]")


def partition_errors(topics: Iterable[Body], partitions: str, index: str = "partition_index", *,
                     topic: str = "name", error: str = "error_code", topic_errors: bool = False,
                     sizes: Mapping[tuple[str, int], int] | None = None) -> list[PartitionRecord]:
    """A ``Response``'s ``partitions``, read from the topics of the body it built: ``topic``,
    ``partitions``, ``index`` and ``error`` name the keys of its schema; each partition gets its
    bytes from ``sizes``.  ``topic_errors``: a topic's own error (when it has one) comes first, as
    partition -1 (Metadata).  A topic without a name (one given by an id the broker does not know)
    is left out."""
    out = []
    for t in topics:
        name = t.get(topic)
        if not isinstance(name, str):
            continue
        if topic_errors and t.get(error):
            out.append(PartitionRecord(name, -1, int(t[error]), 0))
        for p in t[partitions]:
            i = p[index]
            out.append(PartitionRecord(name, i, int(p[error]), sizes.get((name, i), 0) if sizes else 0))
    return out


def disabled_group_heartbeat() -> Response:
    """A Consumer/ShareGroupHeartbeat while its protocol is off (``FeatureControl.enables``): KafkaApis
    answers the request's error response, UNSUPPORTED_VERSION without a message."""
    return Response({"error_code": ErrorCode.unsupported_version, "error_message": None, "member_id": None,
                     "member_epoch": 0, "heartbeat_interval": 0, "assignment": None})


def disabled_group_describe(group_ids: Iterable[str]) -> Response:
    """A Consumer/ShareGroupDescribe while its protocol is off: every group UNSUPPORTED_VERSION, its
    other fields their defaults (``getErrorDescribedGroupList``), as Kafka 3.8.1 and 4.1.2 answer."""
    groups: list[Body] = [
        {"group_id": gid, "error_code": ErrorCode.unsupported_version, "error_message": None, "group_state": "",
         "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
         "authorized_operations": AUTHORIZED_OPS_NOT_REQUESTED} for gid in group_ids]
    return Response({"groups": groups}, error_code=first_error(groups))


def first_error(items: Iterable[Body]) -> int | None:
    """The journal's top-level error of a batched API without one (FindCoordinator v4+,
    DescribeGroups, DeleteGroups, ...): the first failed item's, NONE when none failed, None when
    there are no items."""
    codes = [int(x["error_code"]) for x in items]
    if not codes:
        return None
    return next((c for c in codes if c), 0)


# ConfigResource.Type -> the ACL resource its configs belong to and the error a refusal gets
# (KafkaApis.authorizeConfigResource / AuthHelper: brokers, loggers and client-metrics are the cluster's)
_CONFIG_ACL = {2: (ResourceType.TOPIC, ErrorCode.topic_authorization_failed),
               32: (ResourceType.GROUP, ErrorCode.group_authorization_failed)}


def config_resource_denied(ctx: RequestContext, operation: AclOperation, resource_type: int,
                           name: str) -> ErrorCode | None:
    """The error for a config resource the client may not DESCRIBE_CONFIGS / ALTER_CONFIGS, or None."""
    acl_type, error = _CONFIG_ACL.get(resource_type, (ResourceType.CLUSTER, ErrorCode.cluster_authorization_failed))
    acl_name = CLUSTER_NAME if acl_type == ResourceType.CLUSTER else name
    return None if authorized(ctx, operation, acl_type, acl_name) else error


def alter_config_resources(ctx: RequestContext, resources: Sequence[Any],
                           alter: Callable[[Any], AlterResult]) -> Response:
    """AlterConfigs' and IncrementalAlterConfigs' answer: one result per resource, a resource named
    twice INVALID_REQUEST (``ConfigAdminManager.preprocess``), one the client may not ALTER_CONFIGS
    its authorization error, the others as ``alter`` decides."""
    duplicates = duplicate_resources((r.resource_type, r.resource_name) for r in resources)
    out: list[dict[str, Any]] = []
    for i, r in enumerate(resources):
        message: str | None = None
        denied = config_resource_denied(ctx, AclOperation.ALTER_CONFIGS, r.resource_type, r.resource_name)
        if i in duplicates:
            error, message = ErrorCode.invalid_request, DUPLICATE_RESOURCE
        elif denied is not None:
            error = denied
        else:
            a = alter(r)
            error, message = a.error, a.message
        out.append({"error_code": error, "error_message": message, "resource_type": r.resource_type,
                    "resource_name": r.resource_name})
    return Response({"responses": out}, error_code=first_error(out))


def config_resources_error(resources: Sequence[Any], error: ErrorCode) -> Response:
    """Their ``getErrorResponse``: the error on every resource."""
    out: list[dict[str, Any]] = [{"error_code": error, "error_message": None, "resource_type": r.resource_type,
                                  "resource_name": r.resource_name} for r in resources]
    return Response({"responses": out}, error_code=first_error(out))


class AnsweredTopics:
    """OffsetCommitResponse.Builder and TxnOffsetCommitResponse.Builder (by name, or by topic id once the
    API answers by id: OffsetCommit v10, TxnOffsetCommit v6): the partitions the
    broker answers itself, one entry per topic (a topic listed twice gathers them), in the order first
    seen; a topic refused as a whole is listed even without partitions."""

    def __init__(self, by_id: bool) -> None:
        self.by_id = by_id
        self.topics: dict[Any, dict[str, Any]] = {}

    def topic(self, name: str, topic_id: uuid.UUID) -> dict[str, Any]:
        key = topic_id if self.by_id else name
        entry = self.topics.get(key)
        if entry is None:
            entry = self.topics[key] = {"name": name, "topic_id": topic_id, "partitions": []}
        return entry

    def add(self, name: str, topic_id: uuid.UUID, indexes: list[int], error: ErrorCode) -> None:
        self.topic(name, topic_id)["partitions"].extend(
            {"partition_index": i, "error_code": error} for i in indexes)

    def merge(self, coordinator: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Builder.merge: the coordinator's topics as it answered them when the broker answered none,
        else each appended to the broker's entry for that topic, or added."""
        if not self.topics:
            return coordinator
        for t in coordinator:
            key = t["topic_id"] if self.by_id else t["name"]
            if key in self.topics:
                self.topics[key]["partitions"].extend(t["partitions"])
            else:
                self.topics[key] = t
        return list(self.topics.values())
