"""PushTelemetry (key 72): v0-0 (advertised only with mock.client.telemetry.enabled).

Behavior (Kafka's ``ClientMetricsManager.processPushTelemetryRequest``, state in
``client_metrics_manager.py``):
* Advertised only when ``mock.client.telemetry.enabled`` is true, served either way (as key 71).
* Checked in Kafka's order: no, zero or reserved client instance id INVALID_REQUEST; a push after a
  terminating one INVALID_REQUEST; a push before the push interval (on the broker's clock; the first
  after a GetTelemetrySubscriptions is always on time; a terminating push never early)
  THROTTLING_QUOTA_EXCEEDED; another subscription id UNKNOWN_SUBSCRIPTION_ID; a compression type
  other than 0-4 UNSUPPORTED_COMPRESSION_TYPE; a payload over telemetry.max.bytes TELEMETRY_TOO_LARGE.
* The metrics are decompressed and decoded as an OTLP MetricsData and kept per client instance
  (``MockBroker.client_metrics()``, ``GET /client-metrics``), where Kafka hands them to its telemetry
  plugin; a payload that does not decompress or decode is INVALID_RECORD (Kafka: the plugin threw).
  With the knob off, as a Kafka broker without a plugin, they are only decompressed (INVALID_RECORD
  when they do not decompress) and dropped.
* The journal records the data points kept (``details.metrics``) and the compression type.

Version notes:
* v0 flexible (KIP-714, Kafka 3.7).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.registry import ApiKey

from ..server.client_metrics_manager import ClientAttributes
from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import PushTelemetryRequest

API_KEY = ApiKey.PUSH_TELEMETRY


def handle(ctx: RequestContext, req: PushTelemetryRequest) -> Response:
    attributes = ClientAttributes.of(ctx.client_id, ctx.client_software, ctx.peer)
    error, points = ctx.broker.client_metrics.push(
        req.client_instance_id, int(req.subscription_id), bool(req.terminating), int(req.compression_type),
        bytes(req.metrics), attributes, ctx.conn_id)
    return Response({"error_code": error},
                    details={"metrics": points, "compression_type": int(req.compression_type),
                             "metrics_bytes": len(req.metrics), "terminating": bool(req.terminating)})
