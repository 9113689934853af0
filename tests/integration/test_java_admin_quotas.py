"""Kafka's own Java Admin client (kafka-clients 4.4.0) sets and reads client quotas on the broker.

``kafka-configs --alter --add-config 'producer_byte_rate=...' --entity-type clients`` goes through
Admin.alterClientQuotas / Admin.describeClientQuotas; tests/integration/java/src/AdminQuotas.java
makes the same calls: it sets producer_byte_rate + consumer_byte_rate on client-id "java-app" and
request_percentage on the default user, describes everything, tries a fractional byte rate (which
the broker rejects with INVALID_REQUEST), removes consumer_byte_rate and describes "java-app" alone.

Maven (tests/integration/java/pom.xml) only resolves kafka-clients and writes the classpath to
cp.txt; scripts/test.sh does that online once, so the artifacts sit in ~/.m2 and this test runs
offline. When cp.txt is missing the test runs Maven itself (offline first, then online) and skips
with Maven's last lines when that fails; it skips too when java, javac or mvn is not on PATH.
Under CI those skips are failures (tests/toolchains.py).
The program is compiled with plain javac into tests/integration/java/out (ignored by git).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from mockbroker import MockBroker

from .javatools import JAVA_TIMEOUT_S, tail
from .javatools import java_classpath as _java_classpath


@pytest.fixture(scope="module")
def java_classpath() -> str:
    return _java_classpath("AdminQuotas")


def test_java_admin_alters_and_describes_client_quotas(java_classpath: str) -> None:
    with MockBroker() as broker:
        cmd = [shutil.which("java") or "java", "-cp", java_classpath, "AdminQuotas", broker.bootstrap_servers]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"AdminQuotas timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
        report = f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
        assert r.returncode == 0, report
        lines = r.stdout.strip().splitlines()
        assert lines == [
            "DESCRIBE all",
            "ENTITY client-id=java-app consumer_byte_rate=2048.0 producer_byte_rate=1024.0",
            "ENTITY user=<default> request_percentage=50.0",
            "INVALID InvalidRequestException: producer_byte_rate cannot be a fractional value.",  # Kafka 4.4.0's
            "DESCRIBE client-id=java-app",
            "ENTITY client-id=java-app producer_byte_rate=1024.0",
            "DONE",
        ], report

        # the broker stored what the client reports: the rejected 1.5 left 1024 in place and the
        # removal dropped consumer_byte_rate only
        stored = dict(broker.call(lambda b: b.quota_store.describe()))
        assert stored == {
            (None, "java-app"): {"producer_byte_rate": 1024.0},
            ("<default>", None): {"request_percentage": 50.0},
        }
        # and it enforces them: the bounds a PLAINTEXT (ANONYMOUS) client "java-app" gets, resolved as
        # the quota managers do (metric tags first, then the limit for those tags)
        def limit(key: str, user: str, client_id: str) -> float | None:
            return broker.call(lambda b: b.quota_store.quota_limit(key, *b.quota_store.metric_tags(key, user, client_id)))

        assert limit("producer_byte_rate", "ANONYMOUS", "java-app") == 1024.0
        assert limit("consumer_byte_rate", "ANONYMOUS", "java-app") is None
        assert limit("producer_byte_rate", "ANONYMOUS", "other-app") is None
        assert limit("request_percentage", "ANONYMOUS", "java-app") == 50.0
