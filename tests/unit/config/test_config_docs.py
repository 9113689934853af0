"""docs/configuration.md is what scripts/config_docs.py writes from mockbroker/config/broker_config.py's CONFIG_DEF,
and what it says about the sources of configuration is what BrokerConfig.load does."""

from __future__ import annotations

import dataclasses
import importlib.util
import pathlib
import subprocess
import sys

import pytest

from mockbroker.config import broker_config as config
from mockbroker.config.broker_config import BrokerConfig, ConfigError

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "config_docs.py"
_spec = importlib.util.spec_from_file_location("config_docs", SCRIPT)
assert _spec is not None and _spec.loader is not None
config_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(config_docs)


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_the_document_is_up_to_date():
    r = run_script("--check")
    assert r.returncode == 0, f"{r.stderr}docs/configuration.md is out of date: run python scripts/config_docs.py"


def test_check_fails_on_a_stale_document(tmp_path):
    """The check above can fail: a document one line short, or missing, is reported."""
    stale = tmp_path / "configuration.md"
    stale.write_text(config_docs.render().replace("| `num.partitions` |", "| `num.partition` |"), encoding="utf-8")
    r = run_script("--check", "--out", str(stale))
    assert r.returncode == 1 and "out of date" in r.stderr
    r = run_script("--check", "--out", str(tmp_path / "absent.md"))
    assert r.returncode == 1
    r = run_script("--out", str(stale))  # rewriting it makes the check pass
    assert r.returncode == 0 and run_script("--check", "--out", str(stale)).returncode == 0


def test_every_key_has_a_row_with_its_kind():
    text = config_docs.render()
    kafka, _, mock = text.partition("## Mock-only knobs")
    for name, key in config.CONFIG_DEF.items():
        section = mock if name.startswith("mock.") else kafka
        rows = [line for line in section.splitlines() if line.startswith(f"| `{name}` |")]
        assert len(rows) == 1, name
        assert f"`{config._env_name(name)}`" in rows[0] and key.doc.replace("|", "\\|") in rows[0]


def test_a_new_key_changes_the_document(monkeypatch):
    before = config_docs.render()
    extra = config.ConfigKey("mock.example.knob", config._int, 7, "An example.", 0)
    monkeypatch.setitem(config.CONFIG_DEF, extra.name, extra)
    after = config_docs.render()
    assert after != before
    assert "| `mock.example.knob` | integer | `7` | ≥ 0 | `MOCKBROKER_MOCK_EXAMPLE_KNOB` | An example. |" in after


def test_a_key_of_an_unknown_type_stops_the_generator(monkeypatch):
    odd = config.ConfigKey("mock.odd", float, 1.0, "A float.")
    monkeypatch.setitem(config.CONFIG_DEF, odd.name, odd)
    with pytest.raises(SystemExit, match="mock.odd"):
        config_docs.render()


def test_choices_and_bounds_are_shown():
    clock = config.CONFIG_DEF["mock.clock"]
    assert config_docs.valid_values(clock) == ", ".join(f"`{c}`" for c in clock.choices)
    assert config_docs.valid_values(dataclasses.replace(clock, choices=None, parse=config._int, at_least=3)) == "≥ 3"
    for release in config.KAFKA_RELEASES:
        assert f"`{release}`" in config_docs.valid_values(config.CONFIG_DEF["mock.kafka.version"])


def test_kafka_version_choices_are_the_known_releases():
    assert config.CONFIG_DEF["mock.kafka.version"].choices == tuple(config.KAFKA_RELEASES)
    with pytest.raises(ConfigError, match="invalid value '9.9' for mock.kafka.version .*one of 1.1, 2.0"):
        BrokerConfig.load(overrides=["mock.kafka.version=9.9"], environ={})
    with pytest.raises(ConfigError, match="unknown assignor"):
        BrokerConfig({"group.consumer.assignors": "uniform,sticky"})
    assert config_docs.valid_values(config.CONFIG_DEF["group.consumer.assignors"]).startswith("`uniform`, `range`")


def test_sources_in_the_documented_order(tmp_path):
    """defaults < TOML file < MOCKBROKER_* environment < -c, as the document says."""
    f = tmp_path / "b.toml"
    f.write_text('"num.partitions" = 2\n[log.retention]\nms = 5000\n')
    env = {"MOCKBROKER_NUM_PARTITIONS": "3", "MOCKBROKER_MOCK_THROTTLE_MODE": "observe", "PATH": "/bin"}
    assert BrokerConfig.load(file=str(f), environ={})["num.partitions"] == 2
    cfg = BrokerConfig.load(file=str(f), environ=env)
    assert (cfg["num.partitions"], cfg["log.retention.ms"], cfg["mock.throttle.mode"]) == (3, 5000, "observe")
    assert BrokerConfig.load(file=str(f), environ=env, overrides=["num.partitions=4"])["num.partitions"] == 4
    assert BrokerConfig.load(file=str(f), environ=env, overrides=["num.partitions=4"],
                             extra={"num.partitions": 5})["num.partitions"] == 5


def test_unknown_keys_and_variables_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="did you mean num.partitions"):
        BrokerConfig.load(overrides=["num.partition=3"], environ={})
    with pytest.raises(ConfigError, match="MOCKBROKER_PORT"):
        BrokerConfig.load(environ={"MOCKBROKER_PORT": "9092"})
    f = tmp_path / "b.toml"
    f.write_text("[mock]\nclok = 'manual'\n")
    with pytest.raises(ConfigError, match="mock.clok"):
        BrokerConfig.load(file=str(f), environ={})
