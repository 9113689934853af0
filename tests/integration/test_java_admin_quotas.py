"""Kafka's own Java Admin client (kafka-clients 4.1.1) sets and reads client quotas on the broker.

``kafka-configs --alter --add-config 'producer_byte_rate=...' --entity-type clients`` goes through
Admin.alterClientQuotas / Admin.describeClientQuotas; tests/integration/java/src/AdminQuotas.java
makes the same calls: it sets producer_byte_rate + consumer_byte_rate on client-id "java-app" and
request_percentage on the default user, describes everything, tries a fractional byte rate (which
the broker rejects with INVALID_REQUEST), removes consumer_byte_rate and describes "java-app" alone.

Maven (tests/integration/java/pom.xml) only resolves kafka-clients and writes the classpath to
cp.txt; scripts/test.sh does that online once, so the artifacts sit in ~/.m2 and this test runs
offline. When cp.txt is missing the test runs Maven itself (offline first, then online) and skips
with Maven's last lines when that fails; it skips too when java, javac or mvn is not on PATH.
The program is compiled with plain javac into tests/integration/java/out (ignored by git).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mockbroker import MockBroker

JAVA_DIR = Path(__file__).parent / "java"
POM = JAVA_DIR / "pom.xml"
SOURCE = JAVA_DIR / "src" / "AdminQuotas.java"
CLASSPATH_FILE = JAVA_DIR / "cp.txt"
OUT_DIR = JAVA_DIR / "out"
MAVEN_TIMEOUT_S = 300
JAVA_TIMEOUT_S = 120


def _tail(text: str, n: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def _newer(target: Path, *sources: Path) -> bool:
    return target.is_file() and all(target.stat().st_mtime >= s.stat().st_mtime for s in sources)


def _maven_classpath(mvn: str) -> str:
    """The kafka-clients classpath: cp.txt, (re)written by Maven when missing or older than the pom."""
    if not _newer(CLASSPATH_FILE, POM):
        common = ["-q", "-B", "-Dstyle.color=never"]
        attempts = [
            [mvn, "-o", *common, "dependency:build-classpath", f"-Dmdep.outputFile={CLASSPATH_FILE.name}"],
            [mvn, *common, "dependency:resolve", "dependency:build-classpath",
             f"-Dmdep.outputFile={CLASSPATH_FILE.name}"],
        ]
        output = ""
        for cmd in attempts:
            CLASSPATH_FILE.unlink(missing_ok=True)
            try:
                r = subprocess.run(cmd, cwd=JAVA_DIR, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S)
            except subprocess.TimeoutExpired as e:
                output = f"{' '.join(cmd)} timed out after {MAVEN_TIMEOUT_S}s\n{e.stdout or ''}"
                continue
            if r.returncode == 0 and CLASSPATH_FILE.is_file():
                break
            output = f"{' '.join(cmd)} exited {r.returncode}\n{r.stdout}\n{r.stderr}"
        else:
            pytest.skip(f"Maven could not resolve kafka-clients (see {POM}):\n{_tail(output)}")
    cp = CLASSPATH_FILE.read_text().strip()
    missing = [p for p in cp.split(os.pathsep) if p and not Path(p).is_file()]
    if not cp or missing:
        CLASSPATH_FILE.unlink(missing_ok=True)  # stale (e.g. ~/.m2 emptied): rebuilt next run
        pytest.skip(f"{CLASSPATH_FILE} lists jars that are missing: {missing[:3]}; rerun to resolve again")
    return cp


@pytest.fixture(scope="module")
def java_classpath() -> str:
    tools = {name: shutil.which(name) for name in ("java", "javac", "mvn")}
    absent = [name for name, path in tools.items() if path is None]
    if absent:
        pytest.skip(f"the Java Admin client test needs java, javac and mvn on PATH; missing: {', '.join(absent)}")
    cp = _maven_classpath(tools["mvn"])
    compiled = OUT_DIR / "AdminQuotas.class"
    if not _newer(compiled, SOURCE, CLASSPATH_FILE):
        cmd = [tools["javac"], "-cp", cp, "-d", str(OUT_DIR), str(SOURCE)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S)
        assert r.returncode == 0, f"javac failed:\n{r.stdout}\n{r.stderr}"
    return cp + os.pathsep + str(OUT_DIR)


def test_java_admin_alters_and_describes_client_quotas(java_classpath: str) -> None:
    with MockBroker() as broker:
        cmd = [shutil.which("java") or "java", "-cp", java_classpath, "AdminQuotas", broker.bootstrap_servers]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"AdminQuotas timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
        report = f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{_tail(r.stderr, 40)}"
        assert r.returncode == 0, report
        lines = r.stdout.strip().splitlines()
        assert lines == [
            "DESCRIBE all",
            "ENTITY client-id=java-app consumer_byte_rate=2048.0 producer_byte_rate=1024.0",
            "ENTITY user=<default> request_percentage=50.0",
            "INVALID InvalidRequestException: "
            "Configuration producer_byte_rate must be a Long value; cannot be a fractional value",
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
