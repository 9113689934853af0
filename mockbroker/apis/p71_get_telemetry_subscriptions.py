"""GetTelemetrySubscriptions (key 71): v0-0 (advertised only with mock.client.telemetry.enabled).

Behavior (Kafka's ``ClientMetricsManager.processGetTelemetrySubscriptionRequest``, state in
``client_metrics_manager.py``):
* Advertised only when ``mock.client.telemetry.enabled`` is true: a Kafka broker lists KIP-714's APIs
  only when a metrics reporter implementing ClientTelemetry is configured
  (``ApiVersionsResponse.filterApis``); mockbroker keeps the pushed metrics itself instead.  Served
  either way, as Kafka answers a client that sends them unlisted.
* A client sending the zero (or no) client instance id is given a new one; the subscription is the
  union of the client-metrics resources whose ``match`` patterns all match the client (``metrics``,
  the smallest ``interval.ms``, 300000 ms when none matches), with its subscription id, the accepted
  compression types (zstd, lz4, gzip, snappy), telemetry.max.bytes and delta temporality.
* A second request within the push interval: THROTTLING_QUOTA_EXCEEDED (unless the last push failed
  with UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE), timed on the broker's clock.

Version notes:
* v0 flexible (KIP-714, Kafka 3.7).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..server.client_metrics_manager import ClientAttributes
from ..controller.quorum import kafka_uuid
from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import GetTelemetrySubscriptionsRequest

API_KEY = ApiKey.GET_TELEMETRY_SUBSCRIPTIONS


def handle(ctx: RequestContext, req: GetTelemetrySubscriptionsRequest) -> Response:
    attributes = ClientAttributes.of(ctx.client_id, ctx.client_software, ctx.peer)
    body = ctx.broker.client_metrics.get_subscriptions(req.client_instance_id, attributes, ctx.conn_id)
    if body["error_code"] != ErrorCode.none:
        return Response(body)
    return Response(body, details={"client_instance_id": kafka_uuid(body["client_instance_id"]),
                                   "subscription_id": body["subscription_id"],
                                   "push_interval_ms": body["push_interval"]})
