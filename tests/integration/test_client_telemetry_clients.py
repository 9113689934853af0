"""KIP-714 client telemetry with real clients pushing their own metrics to mockbroker
(``mock.client.telemetry.enabled``):

* Kafka's Java clients 4.4.0 (java/src/ClientTelemetry.java): the Admin sets a client-metrics
  subscription (``org.apache.kafka.producer.``, 100 ms, ``client_id=telemetry-.*``) and reads its own
  client instance id; a producer sends records while it pushes.  The broker holds the producer's
  metrics under its own names and the id ``producer.clientInstanceId()`` returns.  (Without the knob,
  side by side with a real Kafka 4.4.0 that has no telemetry reporter: test_cluster_ops_clients.py.)
* confluent-kafka (librdkafka's KIP-714 support): its metrics (under the Java clients' names) and its
  terminating push when it is destroyed.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from tests.polling import until
from tests.unit.server.test_telemetry_wire import set_subscription

from .javatools import JAVA_TIMEOUT_S, tail
from .javatools import java_classpath as _java_classpath

QUEUE_TIME = "org.apache.kafka.producer.record.queue.time.avg"


@pytest.fixture(scope="module")
def on() -> Iterator[MockBroker]:
    with MockBroker(config={"mock.client.telemetry.enabled": True}) as broker:
        yield broker


def pushed(b: MockBroker, client_id: str, metric: str, pushes: int = 2) -> dict | None:
    """The client's instance once it pushed ``metric`` at least ``pushes`` times."""
    return next((i for i in b.client_metrics(client_id=client_id) if metric in i["metrics"] and i["pushes"] >= pushes),
                None)


def test_java_clients_push_their_metrics_and_learn_the_assigned_id(on):
    cp = _java_classpath("ClientTelemetry")
    cmd = [shutil.which("java") or "java", "-cp", cp, "ClientTelemetry",
           f"{on.bootstrap_servers}:10000"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: list[str] = []
    seen: dict | None = None
    try:
        assert proc.stdout is not None and proc.stdin is not None
        deadline = time.monotonic() + JAVA_TIMEOUT_S
        for line in proc.stdout:
            out.append(line.strip())
            if line.strip() == "WAITING":
                seen = until(lambda: pushed(on, "telemetry-producer", QUEUE_TIME),
                             lambda: f"the producer's pushes: {on.client_metrics(client_id='telemetry-producer')}")
                proc.stdin.write("close\n")
                proc.stdin.flush()
            assert time.monotonic() < deadline, out
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, f"stdout: {out}\nstderr: {tail(proc.stderr.read() if proc.stderr else '', 40)}"
    facts = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in out if " " in line}
    assert facts["SUBSCRIBE"] == "OK"
    assert seen is not None
    # the id the producer's clientInstanceId() returns is the one the broker assigned and keeps
    assert facts["PRODUCER"] == seen["client_instance_id"]
    assert seen["client_software_name"] == "apache-kafka-java" and seen["client_software_version"] == "4.4.0"
    assert seen["requested_metrics"] == ["org.apache.kafka.producer."] and seen["push_interval_ms"] == 100
    assert all(name.startswith("org.apache.kafka.producer.") for name in seen["metrics"])
    assert seen["metrics"][QUEUE_TIME][0]["value"] >= 0
    # the Admin's id too (its GetTelemetrySubscriptions answer, in the journal)
    assigned = {r["details"]["client_instance_id"] for r in on.journal(api_key=71, client_id="telemetry-admin")
                if r["error_code"] == ErrorCode.none}
    assert facts["ADMIN"] in assigned


def test_librdkafka_pushes_its_metrics(on):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with RawKafkaClient.connect(on.bootstrap_servers) as c:
        assert set_subscription(c, "rdkafka", metrics="org.apache.kafka.producer.", interval_ms="100",
                                match="client_software_name=confluent-kafka-python") == ErrorCode.none
    p = confluent_kafka.Producer({"bootstrap.servers": on.bootstrap_servers, "client.id": "rdkafka-telemetry"})
    try:
        p.produce("telemetry", b"x")
        assert p.flush(10) == 0
        deadline = time.monotonic() + 10
        seen = None
        while seen is None and time.monotonic() < deadline:
            p.poll(0.05)
            seen = pushed(on, "rdkafka-telemetry", QUEUE_TIME)
        assert seen is not None, on.client_metrics(client_id="rdkafka-telemetry")
    finally:
        p.flush(5)
        del p
    assert seen["client_software_name"] == "confluent-kafka-python" and seen["push_interval_ms"] == 100
    assert "org.apache.kafka.producer.node.request.latency.avg" in seen["metrics"]
    # librdkafka pushes once more when it is destroyed, terminating (Java's producer 4.4.0 closes
    # without one when nothing is in flight: Sender.run's shutdown loop runs only while records or
    # requests are pending, so the push ClientTelemetryReporter.initiateClose asks for is never sent)
    until(lambda: pushed(on, "rdkafka-telemetry", QUEUE_TIME)["terminated"], "librdkafka's terminating push")
