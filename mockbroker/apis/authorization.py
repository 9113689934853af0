"""The authorization checks that refuse a whole request, before its handler runs, as Kafka's
KafkaApis makes them at the top of a handler (``authHelper.authorize`` then the request's
``getErrorResponse``): the actions each API needs, and the error a denied one gets.  Checks of
single groups, topics or partitions inside a request (Produce, Fetch, Metadata, ListOffsets,
CreateTopics, DeleteTopics, FindCoordinator's keys, OffsetCommit's topics, OffsetFetch's groups and
topics, Describe/List/DeleteGroups, OffsetDelete's topics, the share-group APIs' groups and topics,
the group heartbeats' topics, OffsetForLeaderEpoch's and AddPartitionsToTxn's topics) are in the
handlers.  Only with an authorizer (``authorizer.class.name``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ..request import RequestContext
from .common import authorized, authorized_any

Action = tuple[AclOperation, ResourceType, str, ErrorCode]
_GROUP, _TXN = ErrorCode.group_authorization_failed, ErrorCode.transactional_id_authorization_failed


def _read_group(req: Any) -> list[Action]:
    return [(AclOperation.READ, ResourceType.GROUP, req.group_id, _GROUP)]


def _cluster(operation: AclOperation) -> Callable[[Any], list[Action]]:
    """An operation on the cluster (AuthHelper.authorizeClusterOperation, or the API's own check of it)."""
    return lambda req: [(operation, ResourceType.CLUSTER, CLUSTER_NAME, ErrorCode.cluster_authorization_failed)]


def _write_txn(req: Any) -> list[Action]:
    return [(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id, _TXN)]


# API key -> the actions the whole request needs, in Kafka's order (the first denied one answers)
WHOLE_REQUEST: dict[int, Callable[[Any], list[Action]]] = {
    ApiKey.JOIN_GROUP: _read_group,
    ApiKey.SYNC_GROUP: _read_group,
    ApiKey.HEARTBEAT: _read_group,
    ApiKey.LEAVE_GROUP: _read_group,
    ApiKey.OFFSET_COMMIT: _read_group,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _read_group,
    ApiKey.ADD_OFFSETS_TO_TXN: lambda req: _write_txn(req) + _read_group(req),
    ApiKey.TXN_OFFSET_COMMIT: lambda req: _write_txn(req) + _read_group(req),
    ApiKey.END_TXN: _write_txn,
    ApiKey.SHARE_GROUP_HEARTBEAT: _read_group,
    ApiKey.STREAMS_GROUP_HEARTBEAT: _read_group,
    ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE: _read_group,
    ApiKey.OFFSET_DELETE: lambda req: [(AclOperation.DELETE, ResourceType.GROUP, req.group_id, _GROUP)],
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: _read_group,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: lambda req: [(AclOperation.DELETE, ResourceType.GROUP, req.group_id, _GROUP)],
    # the cluster: KafkaApis' and ControllerApis' checks
    ApiKey.DESCRIBE_LOG_DIRS: _cluster(AclOperation.DESCRIBE),
    ApiKey.ALTER_REPLICA_LOG_DIRS: _cluster(AclOperation.ALTER),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _cluster(AclOperation.DESCRIBE_CONFIGS),
    ApiKey.ALTER_CLIENT_QUOTAS: _cluster(AclOperation.ALTER_CONFIGS),
    ApiKey.LIST_CONFIG_RESOURCES: _cluster(AclOperation.DESCRIBE_CONFIGS),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _cluster(AclOperation.DESCRIBE),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _cluster(AclOperation.ALTER),
    ApiKey.ELECT_LEADERS: _cluster(AclOperation.ALTER),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _cluster(AclOperation.ALTER),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _cluster(AclOperation.DESCRIBE),
    ApiKey.UPDATE_FEATURES: _cluster(AclOperation.ALTER),
    ApiKey.DESCRIBE_QUORUM: _cluster(AclOperation.DESCRIBE),
    ApiKey.UNREGISTER_BROKER: _cluster(AclOperation.ALTER),
    ApiKey.ADD_RAFT_VOTER: _cluster(AclOperation.ALTER),
    ApiKey.REMOVE_RAFT_VOTER: _cluster(AclOperation.ALTER),
}


def request_denied(ctx: RequestContext, req: Any) -> ErrorCode | None:
    """The error a request the principal may not make gets as a whole, or None."""
    api_key = ctx.api_key
    if api_key == ApiKey.INIT_PRODUCER_ID:
        if req.transactional_id is not None:
            return None if authorized(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                      req.transactional_id) else _TXN
        # idempotent producers: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
        if authorized(ctx, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME) or \
                authorized_any(ctx, AclOperation.WRITE, ResourceType.TOPIC):
            return None
        return ErrorCode.cluster_authorization_failed
    if api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
        if ctx.version >= 4:  # from brokers: authorizeClusterOperation(CLUSTER_ACTION)
            return None if authorized(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME) else \
                ErrorCode.cluster_authorization_failed
        return None if authorized(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                  req.v3_and_below_transactional_id) else _TXN
    if api_key == ApiKey.WRITE_TXN_MARKERS:  # ALTER on the cluster, else CLUSTER_ACTION
        return None if authorized(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME) or \
            authorized(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME) else \
            ErrorCode.cluster_authorization_failed
    actions = WHOLE_REQUEST.get(api_key)
    for operation, resource_type, name, error in actions(req) if actions is not None else ():
        if not authorized(ctx, operation, resource_type, name):
            return error
    return None
