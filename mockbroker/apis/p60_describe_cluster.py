"""DescribeCluster (key 60): v0-2.

Behavior:
* Cluster id, a controller id (a live broker, as KRaft brokers report to
  clients) and every live broker.  Asking a broker for controller endpoints
  (endpoint type 2) is UNSUPPORTED_ENDPOINT_TYPE, as Kafka's brokers answer.
* Cluster authorized operations: not computed (-2147483648) unless asked,
  then every cluster operation (no authorizer).

Version notes:
* v0 flexible from the start, throttle.  v1 endpoint type (KIP-919).  v2 fenced brokers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from .common import AUTHORIZED_OPS_NOT_REQUESTED

if TYPE_CHECKING:
    from protocol.request_types import DescribeClusterRequest

API_KEY = ApiKey.DESCRIBE_CLUSTER
BROKERS, CONTROLLERS = 1, 2
ALL_CLUSTER_OPS = sum(1 << op for op in (4, 7, 8, 9, 10, 11, 12))


def handle(ctx: RequestContext, req: DescribeClusterRequest) -> Response:
    cluster = ctx.metadata
    endpoint_type = req.endpoint_type
    ops = ALL_CLUSTER_OPS if req.include_cluster_authorized_operations else AUTHORIZED_OPS_NOT_REQUESTED
    if endpoint_type != BROKERS:
        return Response({"error_code": ErrorCode.unsupported_endpoint_type,
                         "error_message": "The broker does not support controller endpoints",
                         "endpoint_type": endpoint_type, "cluster_id": cluster.cluster_id, "controller_id": -1,
                         "brokers": [], "cluster_authorized_operations": ops})
    include_fenced = req.include_fenced_brokers
    listener = ctx.listener_name
    brokers = [  # the endpoints of the request's listener, as Metadata's (KafkaApis.handleDescribeCluster)
        {"broker_id": b.node_id, "host": address[0], "port": address[1], "rack": b.rack, "is_fenced": not b.alive}
        for b in cluster.brokers.values()
        if (b.alive or include_fenced) and (address := b.endpoint(listener)) is not None
    ]
    return Response({"error_code": ErrorCode.none, "error_message": None, "endpoint_type": endpoint_type,
                     "cluster_id": cluster.cluster_id, "controller_id": cluster.controller_id,
                     "brokers": brokers, "cluster_authorized_operations": ops})
