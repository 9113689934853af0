"""``GET /metrics`` of the admin listener over real HTTP, parsed by prometheus_client's text parser,
against brokers driven by clients over real sockets: quota series per entity (throttle time only
where a quota throttled), requests and errors per API, version and code, the latency histogram,
memory pool and purgatory gauges per broker, muted connections by reason, fault rules fired; and
docs/metrics.md names every family the collector yields."""

from __future__ import annotations

import pathlib
import re
import types
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mockbroker import ManualClock, MockBroker
from mockbroker.admin.metrics import ClusterCollector
from protocol.client import RawKafkaClient
from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.polling import until

from ..purgatory.test_delayed_ops import leader_client, parked, produce_body

ROOT = pathlib.Path(__file__).resolve().parents[3]
ADMIN = {"mock.admin.listener": "127.0.0.1:0"}
QUOTA_BPS = 10_000


def scrape(b: MockBroker) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Sample name -> [(labels, value)] of one scrape, as the Prometheus text parser reads it."""
    assert b.admin_url is not None
    with urllib.request.urlopen(b.admin_url + "/metrics", timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        text = r.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def select(m, name, **labels) -> list[tuple[dict[str, str], float]]:
    return [(lab, v) for lab, v in m.get(name, []) if all(lab.get(k) == str(x) for k, x in labels.items())]


def one(m, name, **labels) -> float:
    found = select(m, name, **labels)
    assert len(found) == 1, f"{name}{labels}: {found} (of {m.get(name)})"
    return found[0][1]


def muted(m, broker) -> dict[str, float]:
    """Connections muted per reason on one broker (every reason is written; the non-zero ones)."""
    found = {lab["reason"]: v for lab, v in select(m, "mockbroker_connections_muted", broker=broker)}
    assert set(found) == {"RESPONSE_PENDING", "THROTTLED", "MEMORY", "HELD", "CLOSING"}
    return {reason: v for reason, v in found.items() if v}


def big_produce(topic: str, value_len: int, acks: int = 1) -> dict:
    return {"acks": acks, "timeout": 1000, "topic_data": [{"name": topic, "partition_data": [
        {"index": 0, "records": build_batch([(b"k", b"x" * value_len, [])], base_timestamp=1)}]}]}


API_VERSIONS_BODY = {"client_software_name": "metrics-test", "client_software_version": "1"}
METADATA_BODY = {"topics": None, "allow_auto_topic_creation": False}


# -- a throttled run ---------------------------------------------------------------------------------
@pytest.fixture
def throttled():
    cfg = {**ADMIN, "mock.throttle.mode": "mute", "mock.quotas": f"clients/slow:producer_byte_rate={QUOTA_BPS}"}
    with MockBroker(config=cfg, clock=ManualClock()) as b:
        b.create_topic("t", 1)
        yield b


def test_throttle_time_is_non_zero_for_the_throttled_entity_only(throttled):
    b = throttled
    with RawKafkaClient.connect(b.bootstrap_servers, client_id="slow") as slow, \
            RawKafkaClient.connect(b.bootstrap_servers, client_id="fast") as fast:
        # 20x the quota in one request: the slow client is throttled, the one without a quota is not
        slow_throttle = timedelta_ms(slow.request(0, 9, big_produce("t", 200_000)).throttle_time)
        fast_throttle = timedelta_ms(fast.request(0, 9, big_produce("t", 200_000)).throttle_time)
        assert slow_throttle > 1000 and fast_throttle == 0

        m = scrape(b)  # the clock has not moved: the slow connection is muted for its throttle
        throttle = {(lab["resource"], lab["user"], lab["clientId"]): v
                    for lab, v in m["kafka_server_quota_throttle_time"]}
        assert throttle[("Produce", "", "fast")] == 0
        assert throttle[("Produce", "", "slow")] == pytest.approx(slow_throttle)
        assert {k for k, v in throttle.items() if v > 0} == {("Produce", "", "slow")}

        # byte-rate for both entities (quotas are on for producer_byte_rate: every client has a sensor),
        # as the quota manager measures it
        expected = b.quota_metrics()["Produce"]
        assert set(expected) == {("", "slow"), ("", "fast")}
        for (user, client_id), values in expected.items():
            rate = one(m, "kafka_server_quota_byte_rate", broker=0, resource="Produce", user=user,
                       clientId=client_id)
            assert rate == pytest.approx(values["byte-rate"]) and rate > 0
        assert select(m, "kafka_server_quota_byte_rate", resource="Fetch") == []

        # the throttled connection is muted THROTTLED (KIP-219 mute mode) until the deadline, the other is not
        assert muted(m, 0) == {"THROTTLED": 1}
        assert one(m, "kafka_server_socket_server_metrics_connection_count", broker=0, listener="PLAINTEXT") == 2

        b.advance(slow_throttle)
        until(lambda: one(scrape(b), "mockbroker_connections_muted", broker=0, reason="THROTTLED") == 0,
              "the throttle mute to end", timeout=5)


# -- requests, errors, latency, fault rules ---------------------------------------------------------------
def test_requests_errors_latency_and_fault_rules_count_what_was_sent():
    with MockBroker(config=ADMIN) as b:
        b.create_topic("r", 1)
        rule = b.inject(api="Produce", errors=["NOT_LEADER_OR_FOLLOWER"])
        m = scrape(b)
        assert one(m, "mockbroker_fault_rule_fired_total", rule=rule["id"], action="error", api="Produce") == 0
        assert select(m, "kafka_network_requestmetrics_requests_total") == []

        with RawKafkaClient.connect(b.bootstrap_servers, client_id="counted") as c:
            for _ in range(2):
                assert c.request(18, 3, API_VERSIONS_BODY).error_code == 0
            c.request(3, 12, METADATA_BODY)
            codes = [c.request(0, 9, big_produce("r", 10)).responses[0].partition_responses[0].error_code
                     for _ in range(3)]
            assert c.request(0, 8, big_produce("r", 10)).responses[0].partition_responses[0].error_code == 0
        assert codes == [ErrorCode.not_leader_or_follower, 0, 0]  # the rule fired once

        m = scrape(b)
        sent = {("ApiVersions", "3"): 2, ("Metadata", "12"): 1, ("Produce", "9"): 3, ("Produce", "8"): 1}
        assert {(lab["request"], lab["version"]): v
                for lab, v in m["kafka_network_requestmetrics_requests_total"]} == sent
        assert {(lab["request"], lab["error"]): v for lab, v in m["kafka_network_requestmetrics_errors_total"]} == {
            ("Produce", "NOT_LEADER_OR_FOLLOWER"): 1}
        assert one(m, "mockbroker_fault_rule_fired_total", rule=rule["id"], action="error", api="Produce") == 1

        # one latency observation per request; buckets cumulative up to +Inf == count
        assert {(lab["request"], lab["version"]): v
                for lab, v in m["kafka_network_requestmetrics_totaltimems_count"]} == sent
        for (request, version), n in sent.items():
            buckets = [v for lab, v in select(m, "kafka_network_requestmetrics_totaltimems_bucket", broker=0,
                                              request=request, version=version)]
            assert buckets == sorted(buckets) and buckets[-1] == n
            assert one(m, "kafka_network_requestmetrics_totaltimems_bucket", request=request, version=version,
                       le="+Inf") == n
            assert one(m, "kafka_network_requestmetrics_totaltimems_sum", request=request, version=version) >= 0


# -- per broker: memory pool, purgatories -------------------------------------------------------------------
def test_memory_pool_and_purgatory_gauges_per_broker():
    cfg = {**ADMIN, "mock.num.brokers": 2, "default.replication.factor": 2, "mock.replication.lag.ms": 100,
           "socket.request.max.bytes": 1 << 20, "queued.max.request.bytes": 10 << 20}
    with MockBroker(config=cfg, clock=ManualClock()) as b:
        ids = sorted(x["id"] for x in b.brokers())
        assert len(ids) == 2
        b.create_topic("p", 1, 2)
        leader = b.partition_state("p", 0)["leader"]
        other = next(i for i in ids if i != leader)
        with leader_client(b, "p") as c:
            corr = c.send(0, 9, produce_body("p", acks=-1))  # acks=all: waits for the follower, 100 ms behind
            parked(b, "Produce", leader)
            m = scrape(b)
            for node in ids:
                pool = b.memory_pool_metrics(node)
                assert one(m, "kafka_network_socketserver_memorypoolavailable", broker=node) == \
                    pool["MemoryPoolAvailable"]
                assert one(m, "kafka_network_socketserver_memorypoolused", broker=node) == pool["MemoryPoolUsed"]
                assert one(m, "kafka_server_socket_server_metrics_memorypoolavgdepletedpercent", broker=node) == 0
                assert one(m, "kafka_server_socket_server_metrics_memorypooldepletedtimetotal", broker=node) == 0
                for purgatory in ("Produce", "Fetch"):
                    assert one(m, "kafka_server_delayedoperationpurgatory_numdelayedoperations", broker=node,
                               delayedOperation=purgatory) == (1 if (node, purgatory) == (leader, "Produce") else 0)
                    assert one(m, "kafka_server_delayedoperationpurgatory_purgatorysize", broker=node,
                               delayedOperation=purgatory) == b.purgatory_gauges(node)[purgatory]["PurgatorySize"]
            # the parked request holds its buffer in the leader's pool only
            assert one(m, "kafka_network_socketserver_memorypoolused", broker=leader) > 0
            assert one(m, "kafka_network_socketserver_memorypoolused", broker=other) == 0
            assert one(m, "kafka_network_socketserver_memorypoolavailable", broker=other) == 10 << 20
            # the group coordinator's purgatories are the cluster's: no broker label
            for purgatory in ("Heartbeat", "Rebalance"):
                lab, v = select(m, "kafka_server_delayedoperationpurgatory_numdelayedoperations",
                                delayedOperation=purgatory)[0]
                assert "broker" not in lab and v == 0
            # the parked produce is RESPONSE_PENDING on the leader
            assert muted(m, leader) == {"RESPONSE_PENDING": 1} and muted(m, other) == {}
            b.advance(100)
            assert c.response(0, 9, corr).responses[0].partition_responses[0].error_code == 0
        m = scrape(b)
        assert one(m, "kafka_server_delayedoperationpurgatory_numdelayedoperations", broker=leader,
                   delayedOperation="Produce") == 0
        assert one(m, "kafka_network_socketserver_memorypoolused", broker=leader) == 0


# -- the docs table and the code ----------------------------------------------------------------------------
def documented_names() -> set[str]:
    """Metric names in the Prometheus column of docs/metrics.md's tables."""
    names: set[str] = set()
    for line in (ROOT / "docs" / "metrics.md").read_text().splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 3:
            names.update(n for n in re.findall(r"`([a-z_]+)`", cells[2]) if n.startswith(("kafka_", "mockbroker_")))
    return names


def exposed_names(families) -> set[str]:
    """The names a family is queried by: counters with ``_total`` (the text format writes them so)."""
    return {f.name + "_total" if f.type == "counter" else f.name for f in families}


def test_every_family_the_collector_yields_is_in_docs_and_the_docs_name_nothing_else():
    with MockBroker(config={**ADMIN, "mock.num.brokers": 2}) as b:
        # the on-disk journal's hook: a writer with counters makes its families appear
        def collect(cluster):
            had, saved = hasattr(cluster, "journal_writer"), getattr(cluster, "journal_writer", None)
            cluster.journal_writer = types.SimpleNamespace(written=3, dropped=1)
            try:
                return list(ClusterCollector(cluster).collect())
            finally:
                if had:
                    cluster.journal_writer = saved
                else:
                    del cluster.journal_writer

        families = b.call(collect)
        without_writer = b.call(lambda cluster: list(ClusterCollector(cluster).collect()))
    names = exposed_names(families)
    journal = {"mockbroker_journal_records_written_total", "mockbroker_journal_records_dropped_total"}
    assert journal <= names and not journal & exposed_names(without_writer)
    assert len(names) == len(families), "a family name repeats"
    documented = documented_names()
    assert sorted(names - documented) == [], "families missing from docs/metrics.md"
    assert sorted(documented - names) == [], "docs/metrics.md names families the collector does not yield"


def test_the_docs_check_can_fail():
    """A family the docs do not name is caught by the set difference above."""
    fake = [types.SimpleNamespace(name="mockbroker_not_documented", type="gauge"),
            types.SimpleNamespace(name="kafka_network_requestmetrics_requests", type="counter")]
    assert exposed_names(fake) - documented_names() == {"mockbroker_not_documented"}
