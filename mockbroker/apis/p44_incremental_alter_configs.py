"""IncrementalAlterConfigs (key 44): v0-1.

Behavior (Kafka's ``ConfigAdminManager.preprocess`` on the broker, then the controller's
``ConfigurationControlManager.incrementalAlterConfigResource``, answered by the config
catalogue):
* SET, DELETE, APPEND and SUBTRACT (APPEND/SUBTRACT on LIST configs of topics and brokers) for
  topics, brokers (this broker's id: per broker; the empty name: the cluster default; dynamic
  configs only), broker loggers (this broker's id: a logger's level), groups and client-metrics
  resources.  Errors per resource with Kafka's messages: a resource named twice INVALID_REQUEST
  ``Each resource must appear at most once.``, duplicate keys, a null value to set, an unknown
  operation or another broker's id INVALID_REQUEST, a bad value or an unknown config
  INVALID_CONFIG, an unknown topic UNKNOWN_TOPIC_OR_PARTITION, other types INVALID_REQUEST
  ``Unknown resource type``.
* ``validate_only`` checks without changing anything.
* What changes takes effect: dynamic broker configs (topic defaults, retention, the cleaner, the
  group coordinators' bounds), topic configs (appends, retention, compaction), group configs (the
  group coordinators read them per group).

Version notes:
* v1 flexible.  Clients back off on the throttle from v0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from .common import alter_config_resources, config_resources_error

if TYPE_CHECKING:
    from protocol.request_types import IncrementalAlterConfigsRequest

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS


def handle(ctx: RequestContext, req: IncrementalAlterConfigsRequest) -> Response:
    catalog = ctx.broker.config_catalog
    return alter_config_resources(ctx, req.resources, lambda r: catalog.incremental_alter(
        ctx.node_id, r.resource_type, r.resource_name,
        [(c.config_operation, c.name, c.value) for c in r.configs], bool(req.validate_only)))


def error_response(ctx: RequestContext, req: IncrementalAlterConfigsRequest, error: ErrorCode) -> Response:
    return config_resources_error(req.resources, error)
