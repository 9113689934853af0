"""AlterConfigs (key 33): v0-2.

Behavior (Kafka's ``ConfigAdminManager.preprocess`` on the broker, then the controller's
``ConfigurationControlManager.legacyAlterConfigResource``, answered by the config catalogue):
* Each resource's configs become exactly those given (the ones not named are removed), for
  topics, brokers (this broker's id: per broker; the empty name: the cluster default; dynamic
  configs only), groups and client-metrics resources.  Errors per resource with Kafka's
  messages: a resource named twice INVALID_REQUEST ``Each resource must appear at most once.``,
  duplicate keys or a null value INVALID_REQUEST, a bad value or unknown topic config
  INVALID_CONFIG, another broker's id INVALID_REQUEST, an unknown topic
  UNKNOWN_TOPIC_OR_PARTITION, broker loggers and other types INVALID_REQUEST ``Unknown resource
  type``.
* ``validate_only`` checks without changing anything.
* Dynamic broker configs take effect (``BrokerConfig.set_dynamic``: topic defaults, retention,
  the cleaner); a topic's new configs apply from the next append or cleaner pass.

Version notes:
* v1 clients back off on the throttle.  v2 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from .common import alter_config_resources, config_resources_error

if TYPE_CHECKING:
    from protocol.request_types import AlterConfigsRequest

API_KEY = ApiKey.ALTER_CONFIGS


def handle(ctx: RequestContext, req: AlterConfigsRequest) -> Response:
    catalog = ctx.broker.config_catalog
    return alter_config_resources(ctx, req.resources, lambda r: catalog.alter(
        ctx.node_id, r.resource_type, r.resource_name, [(c.name, c.value) for c in r.configs], bool(req.validate_only)))


def error_response(ctx: RequestContext, req: AlterConfigsRequest, error: ErrorCode) -> Response:
    return config_resources_error(req.resources, error)
