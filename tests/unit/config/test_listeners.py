"""Several listeners per broker (Kafka's ``listeners`` / ``advertised.listeners`` /
``listener.security.protocol.map``): each connection is answered with the advertised
endpoints of the listener it came on, as Kafka's ``RequestContext.listenerName`` decides.

Configuration checks mirror ``KafkaConfig``'s; the wire tests connect a raw client to each
bound port and compare what Metadata, FindCoordinator and DescribeCluster advertise; the
client tests run kafka-python over two listeners of one broker (one PLAINTEXT, one
SASL_PLAINTEXT)."""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer

from mockbroker import BrokerConfig, ConfigError, MockBroker
from mockbroker.config.broker_config import Listener, parse_listeners
from protocol.client import RawKafkaClient

TWO = {
    "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
    # INTERNAL is what other compose services would use; EXTERNAL advertises the bound port (0 -> bound)
    "advertised.listeners": "INTERNAL://kafka.internal.invalid:9092,EXTERNAL://127.0.0.1:0",
    "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
}


# -- configuration -------------------------------------------------------------------------------


def test_compose_style_listeners_parse():
    (internal, external) = parse_listeners(
        "INTERNAL://0.0.0.0:9092,EXTERNAL://0.0.0.0:19092", "INTERNAL://kafka:9092,EXTERNAL://localhost:19092",
        "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT")
    assert internal == Listener("INTERNAL", "PLAINTEXT", "0.0.0.0", 9092, ("kafka", 9092))
    assert external == Listener("EXTERNAL", "PLAINTEXT", "0.0.0.0", 19092, ("localhost", 19092))
    # the third simulated broker: every non-zero port plus 2
    assert external.for_broker(2) == Listener("EXTERNAL", "PLAINTEXT", "0.0.0.0", 19094, ("localhost", 19094))
    assert Listener("A", "PLAINTEXT", "h", 0, ("h", 0)).for_broker(3).port == 0


def test_unadvertised_listeners_advertise_their_bound_address():
    (a, b) = parse_listeners("A://0.0.0.0:1,B://[::]:2", "", "A:PLAINTEXT,B:SASL_PLAINTEXT")
    assert a.advertised == ("127.0.0.1", 1) and b.advertised == ("::1", 2) and b.protocol == "SASL_PLAINTEXT"
    # advertised.listeners naming only A: B is bound but not advertised (Kafka allows it)
    (a, b) = parse_listeners("A://h:1,B://h:2", "A://x:1", "A:PLAINTEXT,B:PLAINTEXT")
    assert a.advertised == ("x", 1) and b.advertised is None


@pytest.mark.parametrize("config, message", [
    ({"listeners": "A://h:1"}, "no security protocol defined for listener A"),
    ({"listeners": "A://h:1,A://h:2", "listener.security.protocol.map": "A:PLAINTEXT"},
     "each listener must have a different name"),
    ({"listeners": "A://h:1,B://h:1", "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT"},
     "each listener must have a different port"),
    ({"listeners": "A://h:1", "advertised.listeners": "B://h:1",
      "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT"},
     "subset of the ones defined in listeners. Found B"),
    ({"listeners": "PLAINTEXT://0.0.0.0:1", "advertised.listeners": "PLAINTEXT://0.0.0.0:1"},
     "nonroutable meta-address 0.0.0.0"),
    ({"listeners": "A://h:1", "listener.security.protocol.map": "A:SSL"}, "listener A is TLS: set ssl.keystore.location"),
    ({"listeners": "A://h:1", "listener.security.protocol.map": "A:TLS"}, "unknown security protocol"),
    ({"listeners": "A://h:1", "listener.security.protocol.map": "A"}, "is not NAME:PROTOCOL"),
    ({"listeners": "A://h:x", "listener.security.protocol.map": "A:PLAINTEXT"}, "no valid port"),
    ({"listeners": ""}, "listeners is empty"),
    ({**TWO, "inter.broker.listener.name": "REPLICATION"},
     "inter.broker.listener.name must be a listener name defined in advertised.listeners"),
    # a SASL listener among others still needs its users
    ({"listeners": "A://h:1,B://h:2", "listener.security.protocol.map": "A:PLAINTEXT,B:SASL_PLAINTEXT"},
     "needs users"),
])
def test_listener_configuration_is_checked_as_kafka_does(config, message):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig(config)


def test_listener_names_are_case_insensitive_and_valid_configs_load():
    c = BrokerConfig({**TWO, "listener.security.protocol.map": "internal:plaintext,External:PLAINTEXT"})
    assert [lst.name for lst in c.listeners()] == ["INTERNAL", "EXTERNAL"]


# -- the wire: each listener answers with its own endpoints --------------------------------------------


@pytest.fixture(scope="module")
def two_listeners():
    with MockBroker(config={**TWO, "mock.num.brokers": 2, "num.partitions": 2}) as b:
        yield b


def bound_ports(b: MockBroker) -> dict[int, dict[str, int]]:
    return {x["id"]: {lst["name"]: lst["port"] for lst in x["listeners"]} for x in b.brokers()}


def test_metadata_answers_the_listener_the_request_came_on(two_listeners):
    b = two_listeners
    ports = bound_ports(b)
    assert set(ports) == {0, 1} and all(set(p) == {"INTERNAL", "EXTERNAL"} for p in ports.values())
    b.create_topic("per-listener", 2)
    body = {"topics": [{"name": "per-listener"}], "allow_auto_topic_creation": False}
    with RawKafkaClient("127.0.0.1", ports[0]["INTERNAL"]) as internal, \
            RawKafkaClient("127.0.0.1", ports[1]["EXTERNAL"]) as external:
        seen_internal = internal.request(3, 12, body)
        seen_external = external.request(3, 12, body)
    # INTERNAL advertises the configured port plus the broker index; EXTERNAL the bound port
    assert sorted((x.node_id, x.host, x.port) for x in seen_internal.brokers) == [
        (0, "kafka.internal.invalid", 9092), (1, "kafka.internal.invalid", 9093)]
    assert sorted((x.node_id, x.host, x.port) for x in seen_external.brokers) == [
        (0, "127.0.0.1", ports[0]["EXTERNAL"]), (1, "127.0.0.1", ports[1]["EXTERNAL"])]
    for resp in (seen_internal, seen_external):
        (t,) = resp.topics
        assert [p.error_code for p in t.partitions] == [0, 0]
    # the Python handle and the ready line give the first listener's addresses; per listener on request
    assert b.bootstrap_servers == "kafka.internal.invalid:9092,kafka.internal.invalid:9093"
    assert b.bootstrap_servers_for("external") == (
        f"127.0.0.1:{ports[0]['EXTERNAL']},127.0.0.1:{ports[1]['EXTERNAL']}")


def test_find_coordinator_and_describe_cluster_answer_per_listener(two_listeners):
    ports = bound_ports(two_listeners)
    answers = {}
    for name in ("INTERNAL", "EXTERNAL"):
        with RawKafkaClient("127.0.0.1", ports[0][name]) as c:
            coordinator = c.request(10, 4, {"key_type": 0, "coordinator_keys": ["g-listeners"]}).coordinators[0]
            cluster = c.request(60, 0, {"include_cluster_authorized_operations": False})
            answers[name] = (coordinator, sorted((x.broker_id, x.host, x.port) for x in cluster.brokers))
    (ci, bi), (ce, be) = answers["INTERNAL"], answers["EXTERNAL"]
    assert ci.error_code == ce.error_code == 0 and ci.node_id == ce.node_id
    assert (ci.host, ci.port) == ("kafka.internal.invalid", 9092 + ci.node_id)
    assert (ce.host, ce.port) == ("127.0.0.1", ports[ce.node_id]["EXTERNAL"])
    assert bi == [(0, "kafka.internal.invalid", 9092), (1, "kafka.internal.invalid", 9093)]
    assert be == [(n, "127.0.0.1", ports[n]["EXTERNAL"]) for n in (0, 1)]


def test_connections_and_the_control_plane_name_their_listener(two_listeners):
    b = two_listeners
    ports = bound_ports(b)
    with RawKafkaClient("127.0.0.1", ports[1]["EXTERNAL"], client_id="on-external") as c:
        c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        (conn,) = b.connections(client_id="on-external")
        assert conn["listener"] == "EXTERNAL" and conn["broker"] == 1
        listeners = {lst["name"]: lst for lst in b.brokers()[1]["listeners"]}
        assert listeners["EXTERNAL"]["connections"] == 1 and listeners["INTERNAL"]["connections"] == 0
        assert listeners["INTERNAL"]["advertised_host"] == "kafka.internal.invalid"
        assert listeners["INTERNAL"]["advertised_port"] == 9093


def test_a_listener_bound_but_not_advertised_finds_no_brokers():
    """KRaftMetadataCache: Metadata on a listener no broker advertises lists no brokers; a live
    leader without it is LISTENER_NOT_FOUND from v6, LEADER_NOT_AVAILABLE before;
    FindCoordinator answers COORDINATOR_NOT_AVAILABLE."""
    config = {"listeners": "A://127.0.0.1:0,B://127.0.0.1:0", "advertised.listeners": "A://127.0.0.1:0",
              "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT"}
    with MockBroker(config=config) as b:
        b.create_topic("hidden", 1)
        ports = bound_ports(b)[0]
        body = {"topics": [{"name": "hidden"}], "allow_auto_topic_creation": False}
        with RawKafkaClient("127.0.0.1", ports["B"]) as hidden, RawKafkaClient("127.0.0.1", ports["A"]) as shown:
            v12, v5 = hidden.request(3, 12, body), hidden.request(3, 5, body)
            assert list(v12.brokers) == [] and list(v5.brokers) == []
            assert [(p.error_code, p.leader_id) for p in v12.topics[0].partitions] == [(72, -1)]  # LISTENER_NOT_FOUND
            assert [(p.error_code, p.leader_id) for p in v5.topics[0].partitions] == [(5, -1)]  # LEADER_NOT_AVAILABLE
            coordinator = hidden.request(10, 4, {"key_type": 0, "coordinator_keys": ["g"]}).coordinators[0]
            assert coordinator.error_code == 15  # COORDINATOR_NOT_AVAILABLE
            visible = shown.request(3, 12, body)
            assert [(x.host, x.port) for x in visible.brokers] == [("127.0.0.1", ports["A"])]
            assert visible.topics[0].partitions[0].error_code == 0


# -- real clients on two listeners of one broker ---------------------------------------------------


def test_kafka_python_on_a_plaintext_and_a_sasl_listener_of_one_broker():
    config = {"listeners": "CLIENTS://127.0.0.1:0,SECURE://127.0.0.1:0",
              "listener.security.protocol.map": "CLIENTS:PLAINTEXT,SECURE:SASL_PLAINTEXT",
              "mock.sasl.users": "alice:alice-secret", "sasl.enabled.mechanisms": "PLAIN"}
    with MockBroker(config=config) as b:
        b.create_topic("two-doors", 1)
        plain = b.bootstrap_servers_for("CLIENTS")
        secure = b.bootstrap_servers_for("SECURE")
        assert plain != secure
        producer = KafkaProducer(bootstrap_servers=secure, security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism="PLAIN", sasl_plain_username="alice",
                                 sasl_plain_password="alice-secret", acks="all")
        for i in range(5):
            producer.send("two-doors", f"v{i}".encode()).get(timeout=10)
        producer.close()
        consumer = KafkaConsumer("two-doors", bootstrap_servers=plain, auto_offset_reset="earliest",
                                 consumer_timeout_ms=10_000, group_id=None)
        values = []
        for message in consumer:  # bounded by consumer_timeout_ms
            values.append(message.value)
            if len(values) == 5:
                break
        assert values == [f"v{i}".encode() for i in range(5)]
        # the consumer's connections came on CLIENTS unauthenticated
        assert {c["principal"] for c in b.connections() if c["listener"] == "CLIENTS"} == {"ANONYMOUS"}
        consumer.close()
        # a raw client without SASL on the SASL listener is refused: its first non-SASL request closes it
        port = int(secure.rsplit(":", 1)[1])
        with RawKafkaClient("127.0.0.1", port) as c:
            c.send(3, 12, {"topics": None, "allow_auto_topic_creation": False})
            assert c.is_closed_by_peer()


def test_bootstrap_servers_outlive_the_broker():
    """Fixtures keep the address of a broker they stopped (a failure report names it)."""
    b = MockBroker(config=TWO).start()
    running = (b.bootstrap_servers, b.bootstrap_servers_for("EXTERNAL"))
    b.stop()
    assert (b.bootstrap_servers, b.bootstrap_servers_for("EXTERNAL")) == running
    assert running[0] == "kafka.internal.invalid:9092" and running[1].startswith("127.0.0.1:")
