"""The container files, without a container engine: docker-compose.yml's broker configuration (its
MOCKBROKER_* environment with the mounted compose/mockbroker.toml) is one BrokerConfig.load accepts,
with the two listeners advertised as docs/container.md says; the document's environment-variable table
names real keys; the Dockerfile keeps its published base and the probe as health check.
(tests/integration/test_container.py runs them for real with podman.)"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from mockbroker.config.broker_config import CONFIG_DEF, ENV_PREFIX, BrokerConfig

REPO = Path(__file__).resolve().parents[3]


def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_broker_config_is_accepted():
    kafka = compose()["services"]["kafka"]
    env = {k: str(v) for k, v in kafka["environment"].items()}
    [mount] = [v for v in kafka["volumes"] if v.endswith(":/etc/mockbroker/mockbroker.toml:ro")]
    toml = REPO / mount.split(":")[0]
    cfg = BrokerConfig.load(file=str(toml), environ=env)
    got = [(lst.name, lst.host, lst.port, lst.advertised) for lst in cfg.listeners()]
    assert got == [("INTERNAL", "0.0.0.0", 9092, ("kafka", 9092)),
                   ("EXTERNAL", "0.0.0.0", 19092, ("localhost", 19092))]
    assert cfg["inter.broker.listener.name"] == "INTERNAL"
    assert cfg["num.partitions"] == 3
    assert {q["client-id"] for q in cfg["mock.quotas"]} == {"example-client", "<default>"}
    assert kafka["ports"] == ["127.0.0.1:19092:19092"]
    assert "mockbroker probe" in " ".join(kafka["healthcheck"]["test"])
    client = compose()["services"]["client"]
    assert client["depends_on"] == {"kafka": {"condition": "service_healthy"}}
    assert client["environment"]["BOOTSTRAP"] == "kafka:9092"


def test_documented_environment_variables_name_real_keys():
    rows = re.findall(r"^\| `(MOCKBROKER_\w+)` \| `([\w.]+)`", (REPO / "docs" / "container.md").read_text(), re.M)
    assert len(rows) >= 8
    for env, key in rows:
        assert key in CONFIG_DEF, key
        assert env == ENV_PREFIX + key.replace(".", "_").upper()
    # and BrokerConfig.load reads them so: a value through the documented variable lands on its key
    cfg = BrokerConfig.load(environ={"MOCKBROKER_QUEUED_MAX_REQUEST_BYTES": "209715200",
                                     "MOCKBROKER_MOCK_QUOTAS": "clients/app:producer_byte_rate=1024"})
    assert cfg["queued.max.request.bytes"] == 209715200
    assert cfg["mock.quotas"] == [{"client-id": "app", "producer_byte_rate": 1024.0}]


def test_dockerfile_base_and_healthcheck():
    text = (REPO / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE=python:3\.11-slim$", text, re.M) and re.search(r"^FROM \$\{BASE\}$", text, re.M)
    assert re.search(r'^HEALTHCHECK .*\n\s+CMD \["mockbroker", "probe"', text, re.M)
    assert re.search(r"^USER 10001:10001$", text, re.M) and re.search(r"^EXPOSE 9092 19092$", text, re.M)
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", ".venv", "node_modules", "tests"} <= set(ignored)
