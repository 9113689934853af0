"""KIP-714 over the wire: GetTelemetrySubscriptions (71) and PushTelemetry (72) advertised only with
mock.client.telemetry.enabled (answered unlisted without it), subscriptions set by IncrementalAlterConfigs, push timing on the
broker's ManualClock, what the journal and ``GET /client-metrics`` show."""

from __future__ import annotations

import json
import urllib.request
import uuid

import pytest

from mockbroker import ManualClock, MockBroker
from mockbroker.controller.quorum import kafka_uuid
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode as E
from .test_client_metrics_manager import metrics_data

T0 = 1_700_000_000_000
CLIENT_METRICS = 16


def set_subscription(c: RawKafkaClient, name: str, **configs: str) -> E:
    ops = [{"name": k.replace("_", "."), "config_operation": 0, "value": v} for k, v in configs.items()]
    r = c.request(44, 1, {"resources": [{"resource_type": CLIENT_METRICS, "resource_name": name, "configs": ops}],
                          "validate_only": False})
    return r.responses[0].error_code


def advertised(c: RawKafkaClient) -> dict[int, tuple[int, int]]:
    r = c.request(18, 3, {"client_software_name": "raw", "client_software_version": "1"})
    return {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}


@pytest.fixture(scope="module")
def b():
    cfg = {"mock.client.telemetry.enabled": True, "mock.admin.listener": "127.0.0.1:0", "telemetry.max.bytes": 4096}
    with MockBroker(config=cfg, clock=ManualClock(start_wall_ms=T0)) as broker:
        yield broker


def test_off_by_default_as_a_kafka_broker_without_a_telemetry_reporter():
    """Not advertised, yet answered as Kafka 4.4.0 without a telemetry reporter answers a client that
    sends them anyway: a subscription, and pushes whose payload is only decompressed (garbage that is
    not compressed is accepted, garbage said to be gzip is INVALID_RECORD) and never kept."""
    with MockBroker() as off, RawKafkaClient.connect(off.bootstrap_servers) as c:
        keys = advertised(c)
        assert 71 not in keys and 72 not in keys and 74 in keys
        r = c.request(71, 0, {"client_instance_id": uuid.UUID(int=0)})
        assert (r.error_code, r.requested_metrics, r.push_interval.total_seconds()) == (E.none, (), 300.0)
        push = {"client_instance_id": r.client_instance_id, "subscription_id": r.subscription_id,
                "terminating": False, "compression_type": 0, "metrics": b"\xff" * 7}
        assert c.request(72, 0, push).error_code == E.none
        r = c.request(71, 0, {"client_instance_id": uuid.UUID(int=0)})
        push = {**push, "client_instance_id": r.client_instance_id, "subscription_id": r.subscription_id,
                "compression_type": 1}
        assert c.request(72, 0, push).error_code == E.invalid_record
        assert off.client_metrics() == []


def test_advertised_v0_when_enabled(b):
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        keys = advertised(c)
        assert keys[71] == (0, 0) and keys[72] == (0, 0)


def test_subscribe_push_and_observe(b):
    with RawKafkaClient.connect(b.bootstrap_servers, client_id="wire-app") as c:
        assert set_subscription(c, "wire", metrics="org.apache.kafka.producer.", interval_ms="200",
                                match="client_id=wire-.*") == E.none
        advertised(c)  # tells the broker the client software
        r = c.request(71, 0, {"client_instance_id": uuid.UUID(int=0)})
        assert r.error_code == E.none and r.requested_metrics == ("org.apache.kafka.producer.",)
        assert r.push_interval.total_seconds() == 0.2 and r.telemetry_max_bytes == 4096
        iid, sid = r.client_instance_id, r.subscription_id
        assert c.request(71, 0, {"client_instance_id": iid}).error_code == E.throttling_quota_exceeded
        payload = metrics_data(("org.apache.kafka.producer.record.queue.time.avg", 2.5, {}))
        push = {"client_instance_id": iid, "subscription_id": sid, "terminating": False, "compression_type": 0,
                "metrics": payload}
        assert c.request(72, 0, push).error_code == E.none
        assert c.request(72, 0, push).error_code == E.throttling_quota_exceeded
        b.advance(200)
        assert c.request(72, 0, {**push, "subscription_id": sid ^ 1}).error_code == E.unknown_subscription_id
        b.advance(200)
        assert c.request(72, 0, {**push, "metrics": b"x" * 4097}).error_code == E.telemetry_too_large
        b.advance(200)
        assert c.request(72, 0, {**push, "compression_type": 9}).error_code == E.unsupported_compression_type
        b.advance(200)
        assert c.request(72, 0, {**push, "metrics": b"\x0a\xff"}).error_code == E.invalid_record
        b.advance(200)
        assert c.request(72, 0, {**push, "terminating": True}).error_code == E.none
        assert c.request(72, 0, push).error_code == E.invalid_request
        assert c.request(72, 0, {**push, "client_instance_id": None}).error_code == E.invalid_request
    [inst] = b.client_metrics(client_id="wire-app")
    assert inst["client_instance_id"] == kafka_uuid(iid) and inst["pushes"] == 2 and inst["terminated"]
    assert inst["client_software_name"] == "raw" and inst["last_push_ms"] == T0 + 1000
    assert inst["metrics"]["org.apache.kafka.producer.record.queue.time.avg"][0]["value"] == 2.5
    pushes = b.journal(api_key=72, client_id="wire-app")
    assert [r["error_code"] for r in pushes][:2] == [E.none, E.throttling_quota_exceeded]
    assert pushes[0]["details"]["metrics"] == 1 and pushes[0]["details"]["metrics_bytes"] == len(payload)
    [first_get, _] = b.journal(api_key=71, client_id="wire-app")
    assert first_get["details"]["client_instance_id"] == kafka_uuid(iid)
    assert b.admin_url is not None
    with urllib.request.urlopen(b.admin_url + "/client-metrics?client_id=wire-app", timeout=10) as resp:
        assert json.loads(resp.read()) == b.client_metrics(client_id="wire-app")
    with urllib.request.urlopen(b.admin_url + "/client-metrics?client_id=nobody", timeout=10) as resp:
        assert json.loads(resp.read()) == []


def test_fault_rules_match_the_telemetry_apis(b):
    """An injected error answers in the API's top-level error code, as any request's."""
    b.inject(api="PushTelemetry", errors=["THROTTLING_QUOTA_EXCEEDED"])
    b.inject(api="GetTelemetrySubscriptions", errors=["INVALID_REQUEST"])
    try:
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="faulted") as c:
            assert c.request(71, 0, {"client_instance_id": None}).error_code == E.invalid_request
            r = c.request(71, 0, {"client_instance_id": None})
            assert r.error_code == E.none
            push = {"client_instance_id": r.client_instance_id, "subscription_id": r.subscription_id,
                    "terminating": False, "compression_type": 0, "metrics": b""}
            assert c.request(72, 0, push).error_code == E.throttling_quota_exceeded
            assert c.request(72, 0, push).error_code == E.none  # the first push after its Get: the rule is spent
    finally:
        b.clear_faults()


def test_every_broker_keeps_its_own_clients_and_client_metrics_lists_them_all():
    with MockBroker(config={"mock.client.telemetry.enabled": True, "mock.num.brokers": 2}) as two:
        addrs = two.bootstrap_servers.split(",")
        ids = []
        for node, addr in enumerate(addrs):
            with RawKafkaClient.connect(addr, client_id=f"node-{node}") as c:
                assert set_subscription(c, f"s{node}", metrics="*") == E.none
                r = c.request(71, 0, {"client_instance_id": None})
                push = {"client_instance_id": r.client_instance_id, "subscription_id": r.subscription_id,
                        "terminating": False, "compression_type": 0, "metrics": metrics_data(("m", 1.0, {}))}
                assert c.request(72, 0, push).error_code == E.none
                ids.append(kafka_uuid(r.client_instance_id))
        assert sorted((i["broker"], i["client_id"], i["client_instance_id"]) for i in two.client_metrics()) == [
            (0, "node-0", ids[0]), (1, "node-1", ids[1])]
