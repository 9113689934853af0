"""Configuration: Kafka names, TOML, -c, environment, refusal of unknown keys."""

from __future__ import annotations

import pytest

from mockbroker.config.broker_config import CONFIG_DEF, BrokerConfig, ConfigError


def test_defaults_are_kafkas():
    c = BrokerConfig()
    assert c["socket.request.max.bytes"] == 104857600
    assert c["queued.max.request.bytes"] == -1
    assert c["message.max.bytes"] == 1048588
    assert c.retention_ms == 168 * 3_600_000


def test_unknown_key_refused_with_suggestion():
    with pytest.raises(ConfigError, match="unknown configuration key 'log.retention.msec'.*log.retention.ms"):
        BrokerConfig({"log.retention.msec": 5})


def test_bad_value_refused():
    with pytest.raises(ConfigError, match="num.partitions"):
        BrokerConfig({"num.partitions": "many"})
    with pytest.raises(ConfigError, match="at least 1"):
        BrokerConfig({"num.partitions": 0})


def test_retention_precedence_ms_minutes_hours():
    assert BrokerConfig({"log.retention.hours": 1}).retention_ms == 3_600_000
    assert BrokerConfig({"log.retention.minutes": 2, "log.retention.hours": 1}).retention_ms == 120_000
    assert BrokerConfig({"log.retention.ms": 5, "log.retention.minutes": 2}).retention_ms == 5
    assert BrokerConfig({"log.retention.ms": -1}).retention_ms == -1


def test_toml_env_and_overrides(tmp_path):
    f = tmp_path / "b.toml"
    f.write_text('"num.partitions" = 4\n[log.retention]\nbytes = 1000\n[mock]\n"num.brokers" = 2\n')
    c = BrokerConfig.load(file=str(f), overrides=["num.partitions=6"],
                          environ={"MOCKBROKER_LOG_RETENTION_BYTES": "2000", "PATH": "/bin"})
    assert c["num.partitions"] == 6  # -c wins over the file
    assert c["log.retention.bytes"] == 2000  # environment wins over the file
    assert c["mock.num.brokers"] == 2
    assert c.is_explicit("num.partitions") and not c.is_explicit("log.segment.bytes")


def test_unknown_env_refused():
    with pytest.raises(ConfigError, match="MOCKBROKER_NUM_PARTITON"):
        BrokerConfig.load(environ={"MOCKBROKER_NUM_PARTITON": "3"})


def test_toml_unknown_key_names_the_file(tmp_path):
    f = tmp_path / "b.toml"
    f.write_text('"auto.create.topic.enable" = false\n')
    with pytest.raises(ConfigError, match=r"file .*b.toml.*auto.create.topics.enable"):
        BrokerConfig.load(file=str(f), environ={})


def test_pool_must_exceed_request_max():
    with pytest.raises(ConfigError, match="queued.max.request.bytes"):
        BrokerConfig({"queued.max.request.bytes": 1000, "socket.request.max.bytes": 1000})
    BrokerConfig({"queued.max.request.bytes": 1001, "socket.request.max.bytes": 1000})
    BrokerConfig({"queued.max.request.bytes": 0})


def test_topic_specs():
    assert BrokerConfig({"mock.topics": "a:3,b"})["mock.topics"] == ["a:3", "b"]
    with pytest.raises(ConfigError, match="mock.topics"):
        BrokerConfig({"mock.topics": ["a:x"]})


def test_queued_max_requests_says_it_bounds_nothing():
    """It is accepted with Kafka's validation, but there is no request queue here: its description
    must not promise a bound (it used to say it bounds queued requests)."""
    doc = CONFIG_DEF["queued.max.requests"].doc
    assert "bounds nothing" in doc and "no request queue" in doc
    with pytest.raises(ConfigError, match="queued.max.requests"):
        BrokerConfig({"queued.max.requests": 0})  # Kafka's at-least-1 validation stays


# -- Kafka 4.4's broker configs mockbroker has no key of its own for ------------------------------------
def test_every_kafka_broker_config_is_accepted_by_c_toml_and_environment(tmp_path):
    """A configuration written for Kafka 4.4 starts mockbroker: every key of Kafka's broker ConfigDef
    (recorded in mockbroker/data/kafka-4.4.0-configs.json) is accepted, those mockbroker lacks kept as
    set, with a line each saying they have no effect."""
    from mockbroker.config.config_defs import load

    keys = load().keys["broker"]
    f = tmp_path / "kafka.toml"
    f.write_text('"replica.selector.class" = "org.apache.kafka.common.replica.RackAwareReplicaSelector"\n'
                 '"num.io.threads" = 16\n')
    c = BrokerConfig.load(file=str(f), overrides=["broker.rack=rack-a", "delete.topic.enable=false",
                                                  "sasl.jaas.config=secret-jaas",
                                                  "listener.name.sasl_plaintext.plain.sasl.jaas.config=x"],
                          environ={"MOCKBROKER_BACKGROUND_THREADS": "4"})
    assert c["broker.rack"] == "rack-a" and c["delete.topic.enable"] is False  # keys with their effect
    assert c.kafka_only == {"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
                            "num.io.threads": "16", "sasl.jaas.config": "secret-jaas",
                            "listener.name.sasl_plaintext.plain.sasl.jaas.config": "x", "background.threads": "4"}
    lines = c.without_effect()
    assert len(lines) == 5 and all("without" not in x or "no effect in mockbroker" in x for x in lines)
    assert any(x.startswith("num.io.threads=16 (file ") and x.endswith("no effect in mockbroker") for x in lines)
    assert not any("secret-jaas" in x for x in lines)  # a PASSWORD config's value is not logged
    # every key Kafka's broker knows, each with a value of its type
    samples = {"BOOLEAN": "true", "INT": "1", "SHORT": "1", "LONG": "1", "DOUBLE": "0.5", "LIST": "",
               "STRING": "", "CLASS": "x", "PASSWORD": "x"}
    for name, key in keys.items():
        try:
            BrokerConfig({name: key.default if key.default is not None else samples[key.type]})
        except ConfigError as e:
            if "unknown configuration key" in str(e):
                raise


def test_a_kafka_config_is_checked_as_kafka_checks_it():
    with pytest.raises(ConfigError, match="num.io.threads.*Value must be at least 1"):
        BrokerConfig({"num.io.threads": 0})
    with pytest.raises(ConfigError, match="auto.leader.rebalance.enable.*either true or false"):
        BrokerConfig({"auto.leader.rebalance.enable": "perhaps"})
    with pytest.raises(ConfigError, match="unknown configuration key 'replica.selector.klass'"):
        BrokerConfig({"replica.selector.klass": "x"})
    with pytest.raises(ConfigError, match="unknown configuration environment variable MOCKBROKER_NOT_A_KAFKA_KEY"):
        BrokerConfig.load(environ={"MOCKBROKER_NOT_A_KAFKA_KEY": "1"})


def test_kafka_only_configs_are_described_and_logged_at_start(caplog):
    """DescribeConfigs of the broker shows a Kafka-only key set as a static config (a listener-prefixed one
    too, before the others, as Kafka lists what its ConfigDef does not name); its start logs one line."""
    import logging

    from mockbroker import MockBroker
    from mockbroker.server.config_catalog import BROKER

    with caplog.at_level(logging.INFO, logger="mockbroker.config"), \
            MockBroker(config={"num.io.threads": "16", "listener.name.plaintext.plain.sasl.jaas.config": "j",
                               "share.coordinator.state.topic.num.partitions": "3"}) as b:
        d = b.call(lambda cl: cl.config_catalog.describe(0, BROKER, "0", None, True))
        entries = {e["name"]: e for e in d.configs}
        assert (entries["num.io.threads"]["value"], entries["num.io.threads"]["config_source"]) == ("16", 4)
        prefixed = entries["listener.name.plaintext.plain.sasl.jaas.config"]
        assert (prefixed["value"], prefixed["is_sensitive"], prefixed["config_source"]) == (None, True, 4)
        assert d.configs[0]["name"] == "listener.name.plaintext.plain.sasl.jaas.config"
        assert entries["share.coordinator.state.topic.num.partitions"]["value"] == "3"
        mechanisms = entries["sasl.enabled.mechanisms"]  # Kafka's default unless set (GSSAPI is not served)
        assert (mechanisms["value"], mechanisms["config_source"]) == ("GSSAPI", 5)
        assert b.call(lambda cl: cl.share_persister.leaders.num_partitions) == 3  # read: its effect
    said = [r.getMessage() for r in caplog.records if r.name == "mockbroker.config"]
    assert len(said) == 2 and any(m.startswith("num.io.threads=16 (config)") for m in said)
    assert not any("share.coordinator.state.topic.num.partitions" in m for m in said)  # it takes effect


def test_broker_rack_is_each_brokers_rack_in_metadata_and_describe_cluster():
    from mockbroker import MockBroker
    from protocol.client import RawKafkaClient
    from protocol.registry import ApiKey

    with MockBroker(config={"broker.rack": "us-east-1a", "mock.num.brokers": 2}) as b, \
            RawKafkaClient.connect(b.bootstrap_servers) as c:
        md = c.request(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
        assert [(x.node_id, x.rack) for x in md.brokers] == [(0, "us-east-1a"), (1, "us-east-1a")]
        dc = c.request(ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False, "endpoint_type": 1})
        assert {x.rack for x in dc.brokers} == {"us-east-1a"}
    with MockBroker() as b, RawKafkaClient.connect(b.bootstrap_servers) as c:
        md = c.request(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
        assert [x.rack for x in md.brokers] == [None]


def test_delete_topic_enable_false_refuses_every_delete_as_kafka():
    """Kafka 4.4.0 with delete.topic.enable=false (ControllerApis.deleteTopics): every topic of the request,
    as often as it is named, TOPIC_DELETION_DISABLED (v3+; INVALID_REQUEST before), no message, nothing
    deleted; described as a static config."""
    import uuid

    from mockbroker import MockBroker
    from mockbroker.server.config_catalog import BROKER
    from protocol.client import RawKafkaClient
    from protocol.errors import ErrorCode as E
    from protocol.registry import ApiKey

    with MockBroker(config={"delete.topic.enable": "false", "broker.rack": "rack-z"}) as b, \
            RawKafkaClient.connect(b.bootstrap_servers) as c:
        b.create_topic("kept", 1)
        zero = uuid.UUID(int=0)
        for version in range(1, 7):
            r = c.request(ApiKey.DELETE_TOPICS, version, {
                "timeout": 30000, "topic_names": ["kept", "missing", "kept"],
                "topics": [{"name": n, "topic_id": zero} for n in ("kept", "missing", "kept")]})
            error = E.invalid_request if version < 3 else E.topic_deletion_disabled
            assert [(x.name, x.error_code, getattr(x, "error_message", None)) for x in r.responses] == [
                ("kept", error, None), ("missing", error, None), ("kept", error, None)]
        r = c.request(ApiKey.DELETE_TOPICS, 5, {"timeout": 0, "topic_names": []})
        assert list(r.responses) == []
        assert b.call(lambda cl: "kept" in cl.metadata.topics)
        d = b.call(lambda cl: cl.config_catalog.describe(0, BROKER, "0", ["delete.topic.enable", "broker.rack"], True))
        assert [(e["name"], e["value"], e["config_source"], e["read_only"], [(s["name"], s["value"], s["source"])
                                                                            for s in e["synonyms"]])
                for e in d.configs] == [
            ("broker.rack", "rack-z", 4, True, [("broker.rack", "rack-z", 4)]),
            ("delete.topic.enable", "false", 4, True, [("delete.topic.enable", "false", 4),
                                                       ("delete.topic.enable", "true", 5)])]
