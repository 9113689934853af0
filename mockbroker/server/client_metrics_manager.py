"""KIP-714 client telemetry on one broker: Kafka's ``ClientMetricsManager`` (kafka-server,
``org.apache.kafka.server.ClientMetricsManager``) with an in-memory exporter in place of the plugin.

Subscriptions are the client-metrics config resources (``metrics``, ``interval.ms``, ``match``) the
config catalogue stores (IncrementalAlterConfigs/AlterConfigs validate them as
``ClientMetricsConfigs.validate``); they are read on every request, and a change to them renews each
client instance on its next request (Kafka's ``subscriptionUpdateVersion``).  A client instance
(``ClientMetricsInstance``) gets the union of the subscriptions whose every ``match`` regex fully
matches its attributes (``ClientMetricsInstanceMetadata``: client_instance_id, client_id,
client_software_name/version, client_source_address/port), the smallest of their intervals (300000 ms
when none matches), ``*`` when one asks for every metric.

Push timing is on the broker's clock (``Clock.time_ms``, Kafka's ``time.milliseconds()``), so a
ManualClock decides when a push is early (THROTTLING_QUOTA_EXCEEDED).  An instance is forgotten when
its connection closes or after max(60 s, 3 push intervals) without a request (Kafka's expiration timer
task; here checked when the manager is next used).

What Kafka hands to a ``ClientTelemetryReceiver`` plugin is kept here instead
(``ClientTelemetryExporterPlugin.exportMetrics``): the payload is decompressed (telemetry.max.bytes
bounds the output, as ``ClientTelemetryUtils.decompress``) and decoded as an OTLP ``MetricsData``
(the ``opentelemetry-proto`` package); a payload that cannot be decompressed or decoded is
INVALID_RECORD, as Kafka answers when the plugin throws.  Without a plugin (``exporter`` False:
``mock.client.telemetry.enabled`` off, the APIs served but not advertised, as Kafka's) a payload is
only decompressed, as Kafka's ``exportMetrics`` builds the payload before it finds no plugin, and
nothing is kept.  Per instance the latest value of each metric
name and attribute set is kept, with the number of pushes and the last push time
(``snapshot``: ``MockBroker.client_metrics()``, ``GET /client-metrics``); those outlive the instance,
up to ``CACHE_MAX_SIZE`` instances (the oldest pushed first dropped).
"""

from __future__ import annotations

import re
import uuid
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from protocol.compression import DecompressionError, decompress
from protocol.errors import ErrorCode
from protocol.records import crc32c

from ..common.clock import Clock
from ..controller.quorum import kafka_uuid

# ClientMetricsManager.SUPPORTED_COMPRESSION_TYPES: zstd, lz4, gzip, snappy (CompressionType ids)
SUPPORTED_COMPRESSION_TYPES = (4, 3, 1, 2)
CACHE_MAX_SIZE = 16384            # ClientMetricsManager.CACHE_MAX_SIZE
DEFAULT_CACHE_EXPIRY_MS = 60000   # ClientMetricsManager.DEFAULT_CACHE_EXPIRY_MS
DEFAULT_INTERVAL_MS = 300000      # ClientMetricsConfigs.INTERVAL_MS_DEFAULT
ZERO_UUID = uuid.UUID(int=0)
RESERVED = (ZERO_UUID, uuid.UUID(int=1))  # Uuid.RESERVED
_NEVER = -(1 << 62)               # a timestamp before any (Kafka's 0 against its wall clock)


class TelemetryError(Exception):
    """A request the manager refuses: its error code (Kafka's ApiException subclasses)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Subscription:
    """``ClientMetricsManager.SubscriptionInfo``."""

    name: str
    metrics: frozenset[str]
    interval_ms: int
    match: dict[str, re.Pattern[str]]


@dataclass(frozen=True, slots=True)
class ClientAttributes:
    """What a subscription's ``match`` is tested against (``ClientMetricsInstanceMetadata``)."""

    client_id: str
    software_name: str | None
    software_version: str | None
    source_address: str | None
    source_port: str | None

    @classmethod
    def of(cls, client_id: str, software: tuple[str, str] | None, peer: str) -> ClientAttributes:
        host, sep, port = peer.rpartition(":")
        return cls(client_id, software[0] if software else None, software[1] if software else None,
                   host.strip("[]") if sep else None, port if sep else None)

    def matches(self, instance_id: uuid.UUID, patterns: dict[str, re.Pattern[str]]) -> bool:
        """``isMatch``: every pattern fully matches its attribute (Java's ``Matcher.matches``)."""
        values = {"client_instance_id": kafka_uuid(instance_id), "client_id": self.client_id,
                  "client_software_name": self.software_name, "client_software_version": self.software_version,
                  "client_source_address": self.source_address, "client_source_port": self.source_port}
        return all((v := values.get(k)) is not None and p.fullmatch(v) is not None for k, p in patterns.items())


@dataclass(slots=True)
class ClientMetricsInstance:
    """One client instance's subscription and push state (Kafka's ``ClientMetricsInstance``)."""

    instance_id: uuid.UUID
    attributes: ClientAttributes
    subscription_id: int
    subscription_version: int
    metrics: tuple[str, ...]
    push_interval_ms: int
    connection: int
    expires_ms: int = 0
    last_get_ms: int = _NEVER
    last_push_ms: int = _NEVER
    terminating: bool = False
    last_error: ErrorCode = ErrorCode.none

    def maybe_update_get(self, now: int) -> bool:
        """``maybeUpdateGetRequestTimestamp``: a push interval since the last Get or Push."""
        if now - max(self.last_get_ms, self.last_push_ms) >= self.push_interval_ms:
            self.last_get_ms = now
            return True
        return False

    def maybe_update_push(self, now: int) -> bool:
        """``maybeUpdatePushRequestTimestamp``: the first push after a Get, else a push interval since
        the last push."""
        ok = self.last_get_ms > self.last_push_ms or now - self.last_push_ms >= self.push_interval_ms
        if ok:
            self.last_push_ms = now
        return ok


@dataclass(slots=True)
class PushedMetrics:
    """What one client instance pushed (kept by the in-memory exporter)."""

    instance_id: uuid.UUID
    broker: int
    attributes: ClientAttributes
    pushes: int = 0
    last_push_ms: int = 0
    terminated: bool = False
    resource: dict[str, Any] = field(default_factory=dict)
    # (name, attributes as sorted items) -> {"type", "value", "time_unix_nano", ...}
    points: dict[tuple[str, tuple[tuple[str, Any], ...]], dict[str, Any]] = field(default_factory=dict)


def subscription_id(metrics: tuple[str, ...], interval_ms: int, instance_id: uuid.UUID) -> int:
    """``computeSubscriptionId``: CRC32C of the metrics list and the interval, XOR the id's hash
    (``Uuid.hashCode``).  Kafka prints a HashSet (its iteration order); here the names are sorted."""
    crc = crc32c(("[" + ", ".join(metrics) + "]" + str(interval_ms)).encode())
    bits = instance_id.int
    xor = (bits >> 64) ^ (bits & ((1 << 64) - 1))
    h = ((xor >> 32) ^ xor) & 0xFFFFFFFF
    v = crc ^ h
    return v - (1 << 32) if v >= 1 << 31 else v


def _list(value: str | None) -> list[str]:
    return [x.strip() for x in (value or "").split(",") if x.strip()]


def parse_subscription(name: str, configs: dict[str, str]) -> Subscription:
    """A client-metrics resource as ``updateClientSubscription`` reads it (the catalogue validated it)."""
    match: dict[str, re.Pattern[str]] = {}
    for pattern in _list(configs.get("match")):
        key, _, regex = pattern.partition("=")
        match[key.strip()] = re.compile(regex.strip())
    return Subscription(name, frozenset(_list(configs.get("metrics"))),
                        int(configs.get("interval.ms") or DEFAULT_INTERVAL_MS), match)


class ClientMetricsManager:
    """One broker's client telemetry (``ClientMetricsManager``); the handlers of
    GetTelemetrySubscriptions (key 71) and PushTelemetry (key 72) call ``get_subscriptions`` and
    ``push``."""

    def __init__(self, node_id: int, subscriptions: dict[str, dict[str, str]], clock: Clock,
                 max_bytes: int, cache_expiry_ms: int = DEFAULT_CACHE_EXPIRY_MS, exporter: bool = True) -> None:
        self.node_id = node_id
        # a telemetry plugin is configured (mock.client.telemetry.enabled): pushed metrics are decoded
        # and kept; without one Kafka only decompresses them (DefaultClientTelemetryPayload) and drops them
        self.exporter = exporter
        self._configs = subscriptions   # the catalogue's client-metrics resources (read, never written)
        self.clock = clock
        self.max_bytes = max_bytes      # telemetry.max.bytes
        self.cache_expiry_ms = cache_expiry_ms
        self._seen: dict[str, dict[str, str]] = {}
        self._subscriptions: list[Subscription] = []
        self.subscription_version = 0
        self.instances: dict[uuid.UUID, ClientMetricsInstance] = {}
        self.pushed: OrderedDict[uuid.UUID, PushedMetrics] = OrderedDict()

    # -- subscriptions -------------------------------------------------------------------------
    def _refresh_subscriptions(self) -> None:
        """``updateSubscription`` for every resource changed since the last request."""
        if self._configs != self._seen:
            self._seen = {name: dict(c) for name, c in self._configs.items()}
            self._subscriptions = [parse_subscription(n, c) for n, c in sorted(self._seen.items()) if c]
            self.subscription_version += 1

    def subscriptions(self) -> list[Subscription]:
        self._refresh_subscriptions()
        return list(self._subscriptions)

    def _expire(self, now: int) -> None:
        for iid in [i for i, inst in self.instances.items() if inst.expires_ms <= now]:
            del self.instances[iid]

    def _instance(self, instance_id: uuid.UUID, attributes: ClientAttributes, conn_id: int,
                  now: int) -> ClientMetricsInstance:
        """``clientInstance``: the cached instance, made again when the subscriptions changed."""
        self._refresh_subscriptions()
        self._expire(now)
        inst = self.instances.pop(instance_id, None)  # LRUCache: an access makes it the youngest
        if inst is not None:
            self.instances[instance_id] = inst
        if inst is None or inst.subscription_version < self.subscription_version:
            attrs = attributes if inst is None else inst.attributes
            inst = self._create(instance_id, attrs, conn_id)
            if len(self.instances) >= CACHE_MAX_SIZE and instance_id not in self.instances:
                del self.instances[next(iter(self.instances))]  # LRUCache: the eldest goes
            self.instances[instance_id] = inst
        inst.expires_ms = now + max(self.cache_expiry_ms, inst.push_interval_ms * 3)
        return inst

    def _create(self, instance_id: uuid.UUID, attributes: ClientAttributes, conn_id: int) -> ClientMetricsInstance:
        """``createClientInstance``: the union of the matching subscriptions, their smallest interval."""
        interval, metrics, everything = DEFAULT_INTERVAL_MS, set[str](), False
        for sub in self._subscriptions:
            if attributes.matches(instance_id, sub.match):
                everything = everything or "*" in sub.metrics
                metrics |= sub.metrics
                interval = min(interval, sub.interval_ms)
        names = ("*",) if everything else tuple(sorted(metrics))
        return ClientMetricsInstance(instance_id, attributes, subscription_id(names, interval, instance_id),
                                     self.subscription_version, names, interval, conn_id)

    def _new_instance_id(self) -> uuid.UUID:
        """``generateNewClientId`` (``Uuid.randomUuid``: not reserved, no '-' in its string form)."""
        while True:
            u = uuid.uuid4()
            if u not in RESERVED and "-" not in kafka_uuid(u) and u not in self.instances:
                return u

    # -- the two APIs --------------------------------------------------------------------------
    def get_subscriptions(self, instance_id: uuid.UUID | None, attributes: ClientAttributes,
                          conn_id: int) -> dict[str, Any]:
        """``processGetTelemetrySubscriptionRequest``: the response body."""
        now = self.clock.time_ms()
        iid = instance_id if instance_id is not None and instance_id != ZERO_UUID else self._new_instance_id()
        inst = self._instance(iid, attributes, conn_id, now)
        if not inst.maybe_update_get(now) and inst.last_error not in (
                ErrorCode.unknown_subscription_id, ErrorCode.unsupported_compression_type):
            return {"error_code": ErrorCode.throttling_quota_exceeded}
        inst.last_error = ErrorCode.none
        return {"error_code": ErrorCode.none, "client_instance_id": iid, "subscription_id": inst.subscription_id,
                "requested_metrics": list(inst.metrics), "accepted_compression_types": list(SUPPORTED_COMPRESSION_TYPES),
                "push_interval": inst.push_interval_ms, "telemetry_max_bytes": self.max_bytes,
                "delta_temporality": True}

    def push(self, instance_id: uuid.UUID | None, subscription: int, terminating: bool, compression: int,
             payload: bytes, attributes: ClientAttributes, conn_id: int) -> tuple[ErrorCode, int]:
        """``processPushTelemetryRequest``: the error code and how many data points were kept."""
        if instance_id is None or instance_id in RESERVED:
            return ErrorCode.invalid_request, 0
        now = self.clock.time_ms()
        inst = self._instance(instance_id, attributes, conn_id, now)
        try:
            self._validate_push(inst, subscription, terminating, compression, payload, now)
        except TelemetryError as e:
            inst.last_error = e.code
            return e.code, 0
        finally:
            inst.terminating = terminating
        points = 0
        if payload:
            try:
                points = self._export(inst, compression, payload, terminating, now)
            except TelemetryError as e:  # the plugin threw: INVALID_RECORD
                inst.last_error = e.code
                return e.code, 0
        inst.last_error = ErrorCode.none
        return ErrorCode.none, points

    def _validate_push(self, inst: ClientMetricsInstance, subscription: int, terminating: bool,
                       compression: int, payload: bytes, now: int) -> None:
        """``validatePushRequest``, in Kafka's order."""
        if inst.terminating:
            raise TelemetryError(ErrorCode.invalid_request, "a push after the terminating one")
        if not inst.maybe_update_push(now) and not terminating:
            raise TelemetryError(ErrorCode.throttling_quota_exceeded, "a push before the next push interval")
        if subscription != inst.subscription_id:
            raise TelemetryError(ErrorCode.unknown_subscription_id, "unknown client subscription id")
        if not 0 <= compression <= 4:  # CompressionType.forId
            raise TelemetryError(ErrorCode.unsupported_compression_type, f"unknown compression type {compression}")
        if len(payload) > self.max_bytes:
            raise TelemetryError(ErrorCode.telemetry_too_large, "larger than telemetry.max.bytes")

    def connection_closed(self, conn_id: int) -> None:
        """``ClientConnectionDisconnectListener``: the instance that connection made is forgotten."""
        for iid in [i for i, inst in self.instances.items() if inst.connection == conn_id]:
            del self.instances[iid]

    # -- the exporter ---------------------------------------------------------------------------
    def _export(self, inst: ClientMetricsInstance, compression: int, payload: bytes, terminating: bool,
                now: int) -> int:
        try:
            raw = payload if compression == 0 else decompress(compression, payload, self.max_bytes)
        except (DecompressionError, zlib.error, ValueError) as e:
            raise TelemetryError(ErrorCode.invalid_record, f"cannot decompress: {e}") from None
        if not self.exporter:
            return 0
        resource, points = decode_metrics_data(raw)
        key = inst.instance_id
        pushed = self.pushed.pop(key, None) or PushedMetrics(key, self.node_id, inst.attributes)
        self.pushed[key] = pushed  # most recently pushed last
        while len(self.pushed) > CACHE_MAX_SIZE:
            self.pushed.popitem(last=False)
        pushed.pushes += 1
        pushed.last_push_ms = now
        pushed.terminated = terminating
        pushed.resource.update(resource)
        for p in points:
            pushed.points[(p["name"], tuple(sorted(p["attributes"].items())))] = p
        return len(points)

    def snapshot(self) -> list[dict[str, Any]]:
        """Every client instance that pushed metrics to this broker, oldest push first."""
        out = []
        for p in self.pushed.values():
            metrics: dict[str, list[dict[str, Any]]] = {}
            for (name, _), point in sorted(p.points.items()):
                metrics.setdefault(name, []).append({k: v for k, v in point.items() if k != "name"})
            inst = self.instances.get(p.instance_id)
            a = p.attributes
            out.append({
                "client_instance_id": kafka_uuid(p.instance_id), "broker": p.broker, "client_id": a.client_id,
                "client_software_name": a.software_name, "client_software_version": a.software_version,
                "client_source_address": a.source_address, "client_source_port": a.source_port,
                "subscription_id": inst.subscription_id if inst else None,
                "push_interval_ms": inst.push_interval_ms if inst else None,
                "requested_metrics": list(inst.metrics) if inst else None,
                "pushes": p.pushes, "last_push_ms": p.last_push_ms, "terminated": p.terminated,
                "resource": dict(p.resource), "metrics": metrics,
            })
        return out


def _value(v: Any) -> Any:
    """An OTLP AnyValue as a Python value (bytes as hex)."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()  # JSON has no bytes
    return getattr(v, kind)


def decode_metrics_data(raw: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An OTLP ``MetricsData`` -> (resource attributes, data points: name, type, attributes, value,
    time_unix_nano; a histogram's value is its count and sum).  Undecodable: INVALID_RECORD.  protobuf is
    imported on the first push, not at every broker start."""
    from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

    data = MetricsData()
    try:
        data.ParseFromString(raw)
    except Exception as e:  # protobuf's DecodeError and kin: Kafka catches any Throwable of its plugin
        raise TelemetryError(ErrorCode.invalid_record, f"not an OTLP MetricsData: {e}") from None
    resource: dict[str, Any] = {}
    points: list[dict[str, Any]] = []
    for rm in data.resource_metrics:
        resource.update({kv.key: _value(kv.value) for kv in rm.resource.attributes})
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                if kind is None:
                    continue
                for dp in getattr(m, kind).data_points:
                    point: dict[str, Any] = {"name": m.name, "type": kind,
                                             "attributes": {kv.key: _value(kv.value) for kv in dp.attributes},
                                             "time_unix_nano": dp.time_unix_nano}
                    if kind in ("gauge", "sum"):
                        point["value"] = getattr(dp, dp.WhichOneof("value") or "as_double")
                    else:  # histogram, exponential_histogram, summary
                        point["value"] = {"count": dp.count, "sum": dp.sum}
                    points.append(point)
    return resource, points
