"""Log directories through Kafka 4.4.0's own clients, side by side with a real Kafka 4.4.0.

Java Admin (tests/integration/java/src/LogDirs.java) creates a topic, produces three records (one
batch each) with the Java producer, describes every broker's log directories and the replica's,
and moves it: on a one-broker mockbroker with two log directories and on a real single-node Kafka
4.4.0 (one directory) the replica has the same size in bytes, the same lag, and the same answers to
a move to a directory that does not exist (LogDirNotFoundException) and to the one it is in; on
mockbroker it then moves to its other directory.  ``kafka-log-dirs --describe`` prints the same
sizes against both.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from mockbroker import MockBroker

from .javatools import JAVA_TIMEOUT_S, tail
from .javatools import java_classpath as _java_classpath
from .realkafka import kafka_tool, realkafka  # noqa: F401 - a fixture

A, B = "/var/kafka/a", "/var/kafka/b"


@pytest.fixture(scope="module")
def java_classpath() -> str:
    return _java_classpath("LogDirs")


@pytest.fixture(scope="module")
def mock() -> Iterator[MockBroker]:
    with MockBroker(config={"mock.kafka.version": "4.4", "node.id": 1, "log.dirs": f"{A},{B}"}) as b:
        yield b


def run(cp: str, *args: str) -> list[str]:
    cmd = [shutil.which("java") or "java", "-cp", cp, "LogDirs", *args]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"LogDirs timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
    return r.stdout.strip().splitlines()


def test_java_admin_describes_and_moves_log_dirs_as_kafka_4_4(realkafka, mock, java_classpath):  # noqa: F811
    kafka = run(java_classpath, realkafka.bootstrap, "dirs")
    ours = run(java_classpath, mock.bootstrap_servers, "dirs", B)
    # the same replica, the same bytes: three one-record batches of the Java producer
    replica = [line for line in kafka if line.startswith("REPLICA ")]
    assert len(replica) == 1 and replica[0].startswith("REPLICA 1 dirs-0 size="), kafka
    assert kafka == [
        "DIRS 1 1 totals=true", replica[0], "CURRENT dirs-0 true future=null",
        "ALTER nowhere: LogDirNotFoundException", "ALTER current: OK", "DONE"]
    # mockbroker: two directories, the replica in the first, then moved to the other
    assert ours == [
        "DIRS 1 2 totals=true", replica[0], "CURRENT dirs-0 true future=null",
        "ALTER nowhere: LogDirNotFoundException", "ALTER current: OK", "ALTER other: OK", f"MOVED dirs-0 {B}", "DONE"]
    size = int(replica[0].split("size=")[1].split()[0])
    assert size == mock.call(lambda cl: cl.metadata.partition("dirs", 0).log.size_bytes) > 0


def log_dirs(stdout: str) -> dict[str, object]:
    """``kafka-log-dirs --describe``: the JSON line after its two progress lines."""
    return json.loads(next(line for line in stdout.splitlines() if line.startswith("{")))


def test_kafka_log_dirs_describe_as_kafka_4_4(realkafka, mock):  # noqa: F811
    runs = {name: kafka_tool("kafka-log-dirs", "--bootstrap-server", boot, "--describe", "--topic-list", "dirs")
            for name, boot in (("mockbroker", mock.bootstrap_servers), ("kafka", realkafka.bootstrap))}
    for name, r in runs.items():
        assert r.returncode == 0, f"{name}: {r.stdout}\n{r.stderr}"
    ours, kafka = (log_dirs(runs[n].stdout) for n in ("mockbroker", "kafka"))
    report = (runs["mockbroker"].stdout, runs["kafka"].stdout)

    def replicas(doc):
        return [(b["broker"], p) for b in doc["brokers"] for d in b["logDirs"] for p in d["partitions"]]

    assert replicas(ours) == replicas(kafka), report  # size, offsetLag and isFuture of dirs-0 on broker 1
    assert [[(d["logDir"], d["error"]) for d in b["logDirs"]] for b in ours["brokers"]] == [[(A, None), (B, None)]], report
