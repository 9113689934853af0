"""The cluster's features and its controller quorum through Kafka 4.4.0's own clients, side by side
with a real Kafka 4.4.0.

Java Admin (tests/integration/java/src/ClusterFeatures.java, one JVM for every cluster) describes the
features, updates them (a safe downgrade, a validate-only one, four that Kafka refuses, an upgrade
back) and describes the metadata quorum, on a one-broker mockbroker and a real single-node Kafka
4.4.0 (both node 1, both ``mock.kafka.version``/release 4.4): the same lines but for the offsets of
the metadata log, which count different records.  A three-broker mockbroker shows three voters.
Kafka's ``kafka-features describe`` and ``kafka-metadata-quorum describe --status`` print the same
fields against both.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from mockbroker import MockBroker

from .javatools import JAVA_TIMEOUT_S, tail
from .javatools import java_classpath as _java_classpath
from .realkafka import kafka_tool, realkafka  # noqa: F401 - a fixture

MOCK_44 = {"mock.kafka.version": "4.4", "node.id": 1}


@pytest.fixture(scope="module")
def java_classpath() -> str:
    return _java_classpath("ClusterFeatures")


@pytest.fixture(scope="module")
def mocks() -> Iterator[tuple[MockBroker, MockBroker]]:
    with MockBroker(config=MOCK_44) as one, MockBroker(config={**MOCK_44, "mock.num.brokers": 3}) as three:
        yield one, three


def sections(stdout: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current: list[str] = []
    for line in stdout.strip().splitlines():
        if line.startswith("CLUSTER "):
            current = out.setdefault(line.split()[1], [])
        elif line != "DONE":
            current.append(line)
    return out


def comparable(lines: list[str]) -> list[str]:
    """The lines without what counts the metadata log's records (epoch, high watermark, offsets) and
    the controller listener's port."""
    out = []
    for line in lines:
        if line.startswith("EPOCH "):
            continue
        line = re.sub(r" hw=\d+", " hw=N", line)
        line = re.sub(r" leo=\d+", " leo=N", line)
        line = re.sub(r"^(NODE \d+ CONTROLLER 127\.0\.0\.1):\d+$", r"\1:PORT", line)
        out.append(line)
    return out


def test_java_admin_features_and_quorum_as_kafka_4_4(realkafka, mocks, java_classpath):  # noqa: F811
    one, three = mocks
    clusters = [one.bootstrap_servers, realkafka.bootstrap, three.bootstrap_servers]
    cmd = [shutil.which("java") or "java", "-cp", java_classpath, "ClusterFeatures", *clusters]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"ClusterFeatures timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    report = f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
    assert r.returncode == 0, report
    out = sections(r.stdout)
    mock, kafka, mock3 = (out[c] for c in clusters)
    assert comparable(mock) == comparable(kafka), report
    failed = "InvalidUpdateVersionException: The update failed for all features since the following feature had an error: "
    assert comparable(mock) == [
        "SUPPORTED eligible.leader.replicas.version 0-1",
        "SUPPORTED group.version 0-1",
        "SUPPORTED kraft.version 0-1",
        "SUPPORTED metadata.version 7-33",
        "SUPPORTED share.version 0-2",
        "SUPPORTED streams.version 0-1",
        "SUPPORTED transaction.version 0-2",
        "FINALIZED eligible.leader.replicas.version 1",
        "FINALIZED group.version 1",
        "FINALIZED metadata.version 33",
        "FINALIZED share.version 2",
        "FINALIZED streams.version 1",
        "FINALIZED transaction.version 2",
        "UPDATE transaction.version=1 SAFE_DOWNGRADE: OK",
        "UPDATE share.version=0 SAFE_DOWNGRADE validate: OK",
        "UPDATE transaction.version=3 UPGRADE: " + failed + "Invalid update version 3 for feature transaction.version. "
        "Local controller 1 only supports versions 0-2",
        "UPDATE share.version=1 UPGRADE: " + failed + "Invalid update version 1 for feature share.version. Can't "
        "downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.",
        "UPDATE metadata.version=14 SAFE_DOWNGRADE: " + failed + "Unsupported metadata.version downgrade from 33 to "
        "14. Refusing to perform the requested downgrade because it might delete metadata information.",
        "UPDATE no.such.feature=1 UPGRADE: " + failed + "Invalid update version 1 for feature no.such.feature. Local "
        "controller 1 does not support this feature.",
        "AFTER transaction.version share.version 1 2",
        "UPDATE transaction.version=2 UPGRADE: OK",
        "QUORUM leader=1 epoch=1 hw=N voters=1 observers=",
        "VOTER 1 leo=N fetched=true",
        "NODE 1 CONTROLLER 127.0.0.1:PORT",
    ], report
    # the high watermark is the leader's log end offset: all records committed
    hw = re.findall(r" hw=(\d+)", "\n".join(mock))
    assert len(hw) == 1 and f"VOTER 1 leo={hw[0]} fetched=true" in mock, report
    # three brokers: three voters, node 1 leads, each voter's endpoint its broker's address
    ports = [a.rsplit(":", 1)[1] for a in three.bootstrap_servers.split(",")]
    assert [re.sub(r" hw=\d+", "", line) for line in mock3 if line.startswith(("QUORUM", "NODE"))] == [
        "QUORUM leader=1 epoch=1 voters=1,2,3 observers=",
        *(f"NODE {i + 1} CONTROLLER 127.0.0.1:{ports[i]}" for i in range(3))], report
    # what the Admin saw is the broker's state: transaction.version back at 2 for the coordinator
    assert one.call(lambda cl: cl.txn.config.transaction_version) == 2


def fields(stdout: str) -> list[dict[str, str]]:
    """``kafka-features describe``: one feature a line, ``Key: value`` pairs in aligned columns."""
    return [dict(re.findall(r"(\w+): (\S+)", line)) for line in stdout.strip().splitlines()]


def test_kafka_features_describe_as_kafka_4_4(realkafka, mocks):  # noqa: F811
    one, _ = mocks
    runs = {name: kafka_tool("kafka-features", "--bootstrap-server", boot, "describe")
            for name, boot in (("mockbroker", one.bootstrap_servers), ("kafka", realkafka.bootstrap))}
    for name, run in runs.items():
        assert run.returncode == 0, f"{name}: {run.stdout}\n{run.stderr}"
    mock, kafka = (fields(runs[n].stdout) for n in ("mockbroker", "kafka"))
    assert [{k: v for k, v in f.items() if k != "Epoch"} for f in mock] == \
        [{k: v for k, v in f.items() if k != "Epoch"} for f in kafka], (runs["mockbroker"].stdout, runs["kafka"].stdout)
    assert {"Feature": "metadata.version", "SupportedMinVersion": "3.3-IV3", "SupportedMaxVersion": "4.4-IV2",
            "FinalizedVersionLevel": "4.4-IV2"}.items() <= mock[[f["Feature"] for f in mock].index("metadata.version")].items()
    assert all(int(f["Epoch"]) >= 16 for f in mock)


def status(stdout: str) -> dict[str, str]:
    """``kafka-metadata-quorum describe --status``: ``Key: value`` lines."""
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in stdout.strip().splitlines())}


def test_kafka_metadata_quorum_status_as_kafka_4_4(realkafka, mocks):  # noqa: F811
    one, _ = mocks
    runs = {name: kafka_tool("kafka-metadata-quorum", "--bootstrap-server", boot, "describe", "--status")
            for name, boot in (("mockbroker", one.bootstrap_servers), ("kafka", realkafka.bootstrap))}
    for name, run in runs.items():
        assert run.returncode == 0, f"{name}: {run.stdout}\n{run.stderr}"
    mock, kafka = (status(runs[n].stdout) for n in ("mockbroker", "kafka"))
    report = (runs["mockbroker"].stdout, runs["kafka"].stdout)
    assert list(mock) == list(kafka), report
    for key in ("LeaderId", "LeaderEpoch", "MaxFollowerLag", "CurrentObservers"):
        assert mock[key] == kafka[key], (key, report)
    assert mock["ClusterId"] == one.call(lambda cl: cl.metadata.cluster_id)
    voters = json.loads(mock["CurrentVoters"])
    assert [(v["id"], v["endpoints"]) for v in voters] == [(1, [f"CONTROLLER://{one.bootstrap_servers}"])], report
    assert [v["id"] for v in json.loads(kafka["CurrentVoters"])] == [1]
