"""ListConfigResources (key 74): v0-1 (KIP-714's ListClientMetricsResources at v0, KIP-1142 from v1).

Behavior (Kafka's ``KafkaApis.handleListConfigResources``):
* The config resources of the types asked for (an empty list: every type the version supports),
  listed in Kafka's order of types: groups that have group configs, client-metrics
  subscriptions, each broker as a broker logger and as a broker, every topic (each type's names
  sorted, where Kafka lists its maps' order).  v0 lists client-metrics subscriptions only.
* A type the version does not support (v1: other than topic, broker, broker logger, client
  metrics, group): UNSUPPORTED_VERSION and nothing listed.
* With an authorizer: DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

Version notes:
* v0 flexible, client-metrics resources only (the Java Admin's listClientMetricsResources).
* v1 resource types (Admin.listConfigResources).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..server.config_catalog import BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, TOPIC
from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import ListConfigResourcesRequest

API_KEY = ApiKey.LIST_CONFIG_RESOURCES


def handle(ctx: RequestContext, req: ListConfigResourcesRequest) -> Response:
    supported = (CLIENT_METRICS,) if ctx.version == 0 else (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)
    types = set(req.resource_types) if ctx.version >= 1 and req.resource_types else set(supported)
    if not types <= set(supported):
        return Response({"error_code": ErrorCode.unsupported_version, "config_resources": []})
    catalog, metadata = ctx.broker.config_catalog, ctx.metadata
    nodes = sorted(n.node_id for n in metadata.brokers.values() if n.endpoint(ctx.listener_name) is not None)
    listed: list[tuple[int, list[str]]] = [
        (GROUP, sorted(catalog.groups)),
        (CLIENT_METRICS, sorted(catalog.client_metrics)),
        (BROKER_LOGGER, [str(n) for n in nodes]),
        (BROKER, [str(n) for n in nodes]),
        (TOPIC, sorted(metadata.topics)),
    ]
    resources: list[dict[str, Any]] = [{"resource_name": name, "resource_type": rtype}
                                       for rtype, names in listed if rtype in types for name in names]
    return Response({"error_code": ErrorCode.none, "config_resources": resources})
