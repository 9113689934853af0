"""Leader elections through Kafka 4.4.0's own clients, side by side with a real Kafka 4.4.0.

Java Admin (tests/integration/java/src/ElectLeaders.java) asks for preferred and unclean elections:
on a real single-node Kafka 4.4.0 and a one-broker mockbroker none is needed
(ElectionNotNeededException), an unknown partition is UnknownTopicOrPartitionException, all
partitions answer nothing; on a three-broker mockbroker whose preferred leader failed over and came
back, the preferred election gives it the leadership again.  ``kafka-leader-election`` prints the
same against both.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from mockbroker import MockBroker
from tests.polling import until

from .javatools import JAVA_TIMEOUT_S, tail
from .javatools import java_classpath as _java_classpath
from .realkafka import kafka_tool, realkafka  # noqa: F401 - a fixture


@pytest.fixture(scope="module")
def java_classpath() -> str:
    return _java_classpath("ElectLeaders")


def run(cp: str, bootstrap: str, topic: str) -> list[str]:
    cmd = [shutil.which("java") or "java", "-cp", cp, "ElectLeaders", bootstrap, topic]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"ElectLeaders timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
    return r.stdout.strip().splitlines()


def create(bootstrap: str, topic: str) -> None:
    r = kafka_tool("kafka-topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
                   "--partitions", "1", "--replication-factor", "1")
    assert r.returncode == 0, r.stdout + r.stderr


NOT_NEEDED = [
    "PREFERRED asked: el-0=ElectionNotNeededException el-9=UnknownTopicOrPartitionException",
    "PREFERRED asked: el-0=ElectionNotNeededException",
    "UNCLEAN asked: el-0=ElectionNotNeededException",
    "PREFERRED all:",
]


def test_java_admin_elects_leaders_as_kafka_4_4(realkafka, java_classpath):  # noqa: F811
    with MockBroker(config={"mock.kafka.version": "4.4", "node.id": 1}) as one:
        one.create_topic("el", 1, replication_factor=1)
        create(realkafka.bootstrap, "el")
        assert run(java_classpath, realkafka.bootstrap, "el") == [*NOT_NEEDED, "LEADER el-0 1", "DONE"]
        assert run(java_classpath, one.bootstrap_servers, "el") == [*NOT_NEEDED, "LEADER el-0 1", "DONE"]
        # the CLI tool: the same words from both
        for boot in (one.bootstrap_servers, realkafka.bootstrap):
            r = kafka_tool("kafka-leader-election", "--bootstrap-server", boot, "--election-type", "PREFERRED",
                           "--topic", "el", "--partition", "0")
            assert (r.returncode, r.stdout.strip()) == (0, "Valid replica already elected for partitions el-0"), \
                r.stdout + r.stderr


def test_java_admin_gives_the_leadership_back_to_the_preferred_replica(java_classpath):
    with MockBroker(config={"mock.kafka.version": "4.4", "mock.num.brokers": 3}) as three:
        three.create_topic("el", 1, replication_factor=3)
        preferred = three.partition_state("el", 0)["replicas"][0]
        three.stop_broker(preferred)
        three.start_broker(preferred)
        until(lambda: preferred in three.partition_state("el", 0)["isr"], "the preferred replica back in the ISR")
        assert three.partition_state("el", 0)["leader"] != preferred
        assert run(java_classpath, three.bootstrap_servers, "el") == [
            "PREFERRED asked: el-0=OK el-9=UnknownTopicOrPartitionException",
            "PREFERRED asked: el-0=ElectionNotNeededException",
            "UNCLEAN asked: el-0=ElectionNotNeededException",
            "PREFERRED all:",
            f"LEADER el-0 {preferred}", "DONE"]
