"""Configuration: Kafka names, TOML, -c, environment, refusal of unknown keys."""

from __future__ import annotations

import pytest

from mockbroker.config import CONFIG_DEF, BrokerConfig, ConfigError


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
