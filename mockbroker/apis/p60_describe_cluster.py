"""DescribeCluster (key 60): v0-2.

Behavior (Kafka's ``KafkaApis.handleDescribeCluster`` and ``AuthHelper.computeDescribeClusterResponse``):
* Cluster id, a controller id (a live broker, as KRaft brokers report to
  clients; -1 when it is not among the brokers listed) and every live broker
  with the request's listener (v2 with include_fenced_brokers: the stopped
  ones too, is_fenced).  Asking a broker for controller endpoints (endpoint
  type 2) is MISMATCHED_ENDPOINT_TYPE, another type UNSUPPORTED_ENDPOINT_TYPE.
* Cluster authorized operations: not computed (-2147483648) unless asked,
  then every operation Kafka supports on the cluster (no authorizer).

Version notes:
* v0 flexible from the start, throttle.  v1 endpoint type (KIP-919).  v2 fenced brokers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from .common import AUTHORIZED_OPS_NOT_REQUESTED, cluster_authorized_operations

if TYPE_CHECKING:
    from protocol.request_types import DescribeClusterRequest

API_KEY = ApiKey.DESCRIBE_CLUSTER
BROKERS, CONTROLLERS = 1, 2  # EndpointType
_ENDPOINT_TYPES = {BROKERS: "BROKER", CONTROLLERS: "CONTROLLER"}


def handle(ctx: RequestContext, req: DescribeClusterRequest) -> Response:
    cluster = ctx.metadata
    endpoint_type = req.endpoint_type
    if endpoint_type not in _ENDPOINT_TYPES:  # AuthHelper.computeDescribeClusterResponse
        return _refused(ctx, ErrorCode.unsupported_endpoint_type, f"Unsupported endpoint type {endpoint_type}")
    if endpoint_type != BROKERS:
        return _refused(ctx, ErrorCode.mismatched_endpoint_type,
                        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
                        f"{_ENDPOINT_TYPES[endpoint_type]}")
    ops = cluster_authorized_operations(ctx) if req.include_cluster_authorized_operations else \
        AUTHORIZED_OPS_NOT_REQUESTED
    include_fenced = req.include_fenced_brokers
    listener = ctx.listener_name
    brokers = [  # the endpoints of the request's listener, as Metadata's (KafkaApis.handleDescribeCluster)
        {"broker_id": b.node_id, "host": address[0], "port": address[1], "rack": b.rack, "is_fenced": not b.alive}
        for b in cluster.brokers.values()
        if (b.alive or include_fenced) and (address := b.endpoint(listener)) is not None
    ]
    controller_id = cluster.controller_id  # -1 unless it is among the brokers listed
    if not any(b["broker_id"] == controller_id for b in brokers):
        controller_id = -1
    return Response({"error_code": ErrorCode.none, "error_message": None, "endpoint_type": endpoint_type,
                     "cluster_id": cluster.cluster_id, "controller_id": controller_id,
                     "brokers": brokers, "cluster_authorized_operations": ops})


def _refused(ctx: RequestContext, error: ErrorCode, message: str) -> Response:
    """An endpoint type the broker does not serve: v0 answers INVALID_REQUEST (it has no field for the
    type), later versions the error; nothing else is filled in."""
    return Response({"error_code": ErrorCode.invalid_request if ctx.version == 0 else error, "error_message": message,
                     "endpoint_type": BROKERS, "cluster_id": "", "controller_id": -1, "brokers": [],
                     "cluster_authorized_operations": AUTHORIZED_OPS_NOT_REQUESTED})
