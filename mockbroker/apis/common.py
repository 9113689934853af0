"""Small helpers shared by handlers (kfake's donep/donet builders)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from protocol.errors import ErrorCode

from ..metadata import BrokerNode, ClusterMetadata, Partition, Topic
from ..request import RequestContext

ZERO_UUID = uuid.UUID(int=0)
AUTHORIZED_OPS_NOT_REQUESTED = -(2**31)  # Integer.MIN_VALUE: authorized operations not asked for
# What a group's authorized operations are without an authorizer: READ (3), DELETE (6), DESCRIBE (8)
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)


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


def leader_info(partition: Partition) -> dict[str, Any]:
    return {"leader_id": partition.leader_id, "leader_epoch": partition.leader_epoch}


def controller_quota_refused(ctx: RequestContext, strict_since: int) -> bool:
    """KIP-599 strict quota (StrictControllerMutationQuota): True when this request version is
    strict and the entity's token bucket is already empty; the wait goes into the response."""
    if ctx.version < strict_since:
        return False
    quota = ctx.broker.quotas.controller_mutation
    throttle = quota.strict_check(ctx.principal, ctx.client_id, ctx.broker.clock.monotonic_ms())
    ctx.controller_throttle_ms = max(ctx.controller_throttle_ms, throttle)
    return throttle > 0


def controller_quota_record(ctx: RequestContext, partitions: int) -> None:
    """Charge created or deleted partitions to the controller mutation quota."""
    quota = ctx.broker.quotas.controller_mutation
    throttle = quota.record(ctx.principal, ctx.client_id, partitions, ctx.broker.clock.monotonic_ms())
    ctx.controller_throttle_ms = max(ctx.controller_throttle_ms, throttle)


THROTTLING_QUOTA_EXCEEDED = {"error_code": ErrorCode.throttling_quota_exceeded,
                             "error_message": "The throttling quota has been exceeded."}


def client_host(ctx: RequestContext) -> str:
    """The client's address as Kafka's RequestContext.clientAddress prints it ("/127.0.0.1")."""
    peer = ctx.conn.peer
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return "/" + host.strip("[]")
