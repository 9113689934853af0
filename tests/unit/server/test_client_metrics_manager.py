"""KIP-714 client telemetry: ``ClientMetricsManager`` on the manual clock, against Kafka 4.4's
``ClientMetricsManager`` / ``ClientMetricsInstance`` (kafka-server)."""

from __future__ import annotations

import gzip
import uuid

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import Gauge, Metric, MetricsData, NumberDataPoint, Sum

from mockbroker.server.client_metrics_manager import (
    DEFAULT_INTERVAL_MS, SUPPORTED_COMPRESSION_TYPES, ZERO_UUID, ClientAttributes, ClientMetricsManager,
    decode_metrics_data, subscription_id,
)
from mockbroker.common.clock import ManualClock
from mockbroker.controller.quorum import kafka_uuid
from protocol.compression import compress
from protocol.errors import ErrorCode as E

T0 = 1_700_000_000_000
JAVA = ClientAttributes.of("app-1", ("apache-kafka-java", "4.4.0"), "127.0.0.1:50123")


def metrics_data(*points: tuple[str, float, dict[str, str]], resource: dict[str, str] | None = None) -> bytes:
    """An OTLP MetricsData with one gauge data point per (name, value, attributes)."""
    data = MetricsData()
    rm = data.resource_metrics.add()
    for k, v in (resource or {}).items():
        rm.resource.attributes.append(KeyValue(key=k, value=AnyValue(string_value=v)))
    sm = rm.scope_metrics.add()
    for name, value, attrs in points:
        dp = NumberDataPoint(as_double=value, time_unix_nano=1,
                             attributes=[KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in attrs.items()])
        sm.metrics.append(Metric(name=name, gauge=Gauge(data_points=[dp])))
    return data.SerializeToString()


@pytest.fixture
def env():
    clock = ManualClock(start_wall_ms=T0)
    subs: dict[str, dict[str, str]] = {}
    return clock, subs, ClientMetricsManager(0, subs, clock, max_bytes=1 << 20)


def get(m: ClientMetricsManager, iid: uuid.UUID | None = None, attrs: ClientAttributes = JAVA, conn: int = 1):
    return m.get_subscriptions(iid, attrs, conn)


def test_zero_id_gets_a_new_instance_id_and_the_defaults_without_subscriptions(env):
    _, _, m = env
    body = get(m, ZERO_UUID)
    assert body["error_code"] == E.none
    iid = body["client_instance_id"]
    assert iid not in (ZERO_UUID, uuid.UUID(int=1)) and "-" not in kafka_uuid(iid)
    assert body["push_interval"] == DEFAULT_INTERVAL_MS and body["requested_metrics"] == []
    assert body["accepted_compression_types"] == [4, 3, 1, 2] == list(SUPPORTED_COMPRESSION_TYPES)
    assert body["telemetry_max_bytes"] == 1 << 20 and body["delta_temporality"] is True
    assert body["subscription_id"] == subscription_id((), DEFAULT_INTERVAL_MS, iid)
    assert get(m, None)["client_instance_id"] != iid  # no id: a new one too


def test_matching_subscriptions_are_united_with_their_smallest_interval(env):
    clock, subs, m = env
    subs["producers"] = {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000",
                         "match": "client_software_name=apache-kafka-java,client_id=app-.*"}
    subs["all-local"] = {"metrics": "org.apache.kafka.consumer.", "interval.ms": "500",
                         "match": "client_source_address=127\\.0\\.0\\.1"}
    subs["other"] = {"metrics": "*", "interval.ms": "100", "match": "client_id=other"}
    body = get(m)
    assert body["requested_metrics"] == ["org.apache.kafka.consumer.", "org.apache.kafka.producer."]
    assert body["push_interval"] == 500
    # a regex must match the whole attribute (Matcher.matches): "app" does not match "app-1"
    subs["producers"]["match"] = "client_id=app"
    clock.advance(500)
    body = get(m, body["client_instance_id"])
    assert body["requested_metrics"] == ["org.apache.kafka.consumer."]
    # "*" in a matching subscription asks for everything
    other = ClientAttributes.of("other", None, "10.0.0.1:1")
    assert get(m, attrs=other, conn=2)["requested_metrics"] == ["*"]


def test_get_within_the_push_interval_is_throttled_on_the_broker_clock(env):
    clock, subs, m = env
    subs["s"] = {"metrics": "*", "interval.ms": "1000"}
    iid = get(m)["client_instance_id"]
    clock.advance(999)
    assert get(m, iid)["error_code"] == E.throttling_quota_exceeded
    clock.advance(1)
    assert get(m, iid)["error_code"] == E.none


def test_push_checks_in_kafkas_order(env):
    clock, subs, m = env
    subs["s"] = {"metrics": "*", "interval.ms": "1000"}
    body = get(m)
    iid, sid = body["client_instance_id"], body["subscription_id"]
    payload = metrics_data(("org.apache.kafka.producer.record.queue.time.avg", 1.5, {}))
    assert m.push(ZERO_UUID, sid, False, 0, payload, JAVA, 1) == (E.invalid_request, 0)
    assert m.push(None, sid, False, 0, payload, JAVA, 1) == (E.invalid_request, 0)
    # the first push after a Get is on time whenever it comes
    assert m.push(iid, sid, False, 0, payload, JAVA, 1) == (E.none, 1)
    clock.advance(999)
    assert m.push(iid, sid, False, 0, payload, JAVA, 1)[0] == E.throttling_quota_exceeded
    clock.advance(1)
    assert m.push(iid, sid + 1, False, 0, payload, JAVA, 1)[0] == E.unknown_subscription_id
    # after UNKNOWN_SUBSCRIPTION_ID a Get is not throttled (the client re-subscribes at once)
    # ... but that Get does not move its timestamp (maybeUpdateGetRequestTimestamp refused), so a push
    # right after it is still early
    assert get(m, iid)["error_code"] == E.none
    assert m.push(iid, sid, False, 0, payload, JAVA, 1)[0] == E.throttling_quota_exceeded
    clock.advance(1000)
    assert m.push(iid, sid, False, 5, payload, JAVA, 1)[0] == E.unsupported_compression_type
    assert get(m, iid)["error_code"] == E.none
    clock.advance(1000)
    m.max_bytes = len(payload) - 1
    assert m.push(iid, sid, False, 0, payload, JAVA, 1)[0] == E.telemetry_too_large
    m.max_bytes = 1 << 20
    clock.advance(1000)
    assert m.push(iid, sid, False, 0, b"\xff\xff\xff", JAVA, 1)[0] == E.invalid_record
    clock.advance(1000)
    assert m.push(iid, sid, False, 1, b"not gzip", JAVA, 1)[0] == E.invalid_record


def test_terminating_push_is_never_early_and_ends_the_instance(env):
    clock, subs, m = env
    subs["s"] = {"metrics": "*", "interval.ms": "1000"}
    body = get(m)
    iid, sid = body["client_instance_id"], body["subscription_id"]
    payload = metrics_data(("m", 1.0, {}))
    assert m.push(iid, sid, False, 0, payload, JAVA, 1)[0] == E.none
    assert m.push(iid, sid, True, 0, payload, JAVA, 1)[0] == E.none  # at once: terminating
    clock.advance(5000)
    assert m.push(iid, sid, False, 0, payload, JAVA, 1)[0] == E.invalid_request
    [inst] = m.snapshot()
    assert inst["terminated"] is True and inst["pushes"] == 2


@pytest.mark.parametrize("codec", [0, *SUPPORTED_COMPRESSION_TYPES])
def test_pushed_metrics_are_kept_latest_per_name_and_attributes(env, codec):
    clock, subs, m = env
    subs["s"] = {"metrics": "*", "interval.ms": "100"}
    body = get(m)
    iid, sid = body["client_instance_id"], body["subscription_id"]
    first = metrics_data(("org.apache.kafka.producer.record.queue.time.avg", 1.0, {}),
                         ("org.apache.kafka.producer.node.request.latency.avg", 2.0, {"node_id": "0"}),
                         ("org.apache.kafka.producer.node.request.latency.avg", 3.0, {"node_id": "1"}),
                         resource={"client_rack": "r1"})
    payload = first if codec == 0 else compress(codec, first)
    assert m.push(iid, sid, False, codec, payload, JAVA, 1) == (E.none, 3)
    clock.advance(100)
    second = metrics_data(("org.apache.kafka.producer.node.request.latency.avg", 7.0, {"node_id": "0"}))
    assert m.push(iid, sid, False, 0, second, JAVA, 1) == (E.none, 1)
    [inst] = m.snapshot()
    assert inst["client_instance_id"] == kafka_uuid(iid) and inst["client_id"] == "app-1"
    assert (inst["client_software_name"], inst["client_software_version"]) == ("apache-kafka-java", "4.4.0")
    assert (inst["client_source_address"], inst["client_source_port"]) == ("127.0.0.1", "50123")
    assert inst["pushes"] == 2 and inst["last_push_ms"] == T0 + 100 and inst["push_interval_ms"] == 100
    assert inst["resource"] == {"client_rack": "r1"}
    lat = {p["attributes"]["node_id"]: p["value"] for p in inst["metrics"]["org.apache.kafka.producer.node.request.latency.avg"]}
    assert lat == {"0": 7.0, "1": 3.0}
    assert inst["metrics"]["org.apache.kafka.producer.record.queue.time.avg"][0]["value"] == 1.0


def test_decompressed_payload_over_the_limit_is_invalid_record(env):
    """ClientTelemetryUtils.decompress throws past telemetry.max.bytes; the plugin's error is INVALID_RECORD."""
    _, subs, m = env
    subs["s"] = {"metrics": "*", "interval.ms": "100"}
    body = get(m)
    raw = metrics_data(*((f"m{i}", float(i), {}) for i in range(200)))
    packed = gzip.compress(raw)
    m.max_bytes = len(packed) + 10
    assert len(raw) > m.max_bytes
    assert m.push(body["client_instance_id"], body["subscription_id"], False, 1, packed, JAVA, 1)[0] == E.invalid_record


def test_a_subscription_change_renews_the_instance_and_its_subscription_id(env):
    clock, subs, m = env
    subs["s"] = {"metrics": "a.", "interval.ms": "1000"}
    body = get(m)
    iid, sid = body["client_instance_id"], body["subscription_id"]
    subs["s"] = {"metrics": "b.", "interval.ms": "1000"}
    # the renewed instance has no push history: the push is on time but its subscription id is stale
    assert m.push(iid, sid, False, 0, metrics_data(("a.x", 1.0, {})), JAVA, 1)[0] == E.unknown_subscription_id
    body2 = get(m, iid)
    assert body2["error_code"] == E.none and body2["requested_metrics"] == ["b."]
    assert body2["subscription_id"] != sid and body2["client_instance_id"] == iid


def test_instances_expire_after_three_intervals_idle_or_when_their_connection_closes(env):
    clock, subs, m = env
    subs["s"] = {"metrics": "*", "interval.ms": "30000"}
    iid = get(m, conn=7)["client_instance_id"]
    assert iid in m.instances
    clock.advance(89_999)
    get(m, attrs=ClientAttributes.of("x", None, "h:1"), conn=8)  # the manager is used: expiry checked
    assert iid in m.instances
    clock.advance(1)
    get(m, attrs=ClientAttributes.of("x", None, "h:1"), conn=9)
    assert iid not in m.instances
    iid2 = get(m, conn=10)["client_instance_id"]
    m.connection_closed(10)
    assert iid2 not in m.instances


def test_decode_reads_sums_and_int_values():
    data = MetricsData()
    sm = data.resource_metrics.add().scope_metrics.add()
    sm.metrics.append(Metric(name="c", sum=Sum(data_points=[NumberDataPoint(as_int=42)])))
    _, points = decode_metrics_data(data.SerializeToString())
    assert points == [{"name": "c", "type": "sum", "attributes": {}, "time_unix_nano": 0, "value": 42}]
