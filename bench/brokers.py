"""The brokers the benchmarks measure: ``mockbroker serve`` as a subprocess, and a real Apache Kafka 4.1.1.

Shared by the bench scripts (bench/ is not a package: each script puts this directory on
``sys.path`` and imports ``brokers``).

* ``serve_mockbroker(config, cwd)``: ``python -m mockbroker serve --port 0`` from the checkout ``cwd``
  (its own package wins: ``-m`` puts the working directory first on ``sys.path``), stdout read up to
  its ``mockbroker ready bootstrap=...`` line; stderr (warnings, errors) passes through.
* ``RealKafka``: a single-node KRaft broker+controller from the jars that bench/realkafka/pom.xml
  resolves (``mvn -q dependency:build-classpath -Dmdep.outputFile=cp.txt``, run by
  ``kafka_classpath()`` when cp.txt is missing or older than the pom; offline first), storage
  formatted with kafka.tools.StorageTool in a temp dir.  Without java or mvn, or when Maven cannot
  resolve Kafka, ``kafka_classpath()`` raises ``Unavailable`` with the reason.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KAFKA_DIR = Path(__file__).resolve().parent / "realkafka"
POM = KAFKA_DIR / "pom.xml"
CP_FILE = KAFKA_DIR / "cp.txt"
LOG4J2 = KAFKA_DIR / "log4j2.properties"

MAVEN_TIMEOUT_S = 600
JAVA_TOOL_TIMEOUT_S = 90
KAFKA_READY_TIMEOUT_S = 90
KAFKA_STOP_TIMEOUT_S = 30
JVM_OPTS = ["-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={LOG4J2}"]


class Unavailable(Exception):
    """Java, Maven or Kafka cannot be used here: the benchmark says why and exits 0."""


def tail(text: str, n: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


# --- mockbroker serve -----------------------------------------------------------------------------

@contextlib.contextmanager
def serve_mockbroker(config: list[str], cwd: Path = ROOT) -> Iterator[tuple[subprocess.Popen, str]]:
    """``mockbroker serve --port 0 -c key=value ...`` from the checkout ``cwd``: (process, bootstrap)
    once it printed its ready line; terminated on exit."""
    args = [sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--log-level", "WARNING"]
    for item in config:
        args += ["-c", item]
    proc = subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE, text=True)  # stderr passes through
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("mockbroker ready bootstrap="):
            raise RuntimeError(f"unexpected first line: {line!r}")
        yield proc, line.split("=", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# --- real Kafka 4.1.1 -----------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kafka_classpath() -> str:
    tools = {name: shutil.which(name) for name in ("java", "mvn")}
    absent = [name for name, path in tools.items() if path is None]
    if absent:
        raise Unavailable(f"needs java and mvn on PATH; missing: {', '.join(absent)}")
    fresh = CP_FILE.is_file() and CP_FILE.stat().st_mtime >= POM.stat().st_mtime
    if not fresh:
        common = ["-q", "-B", "-Dstyle.color=never", "dependency:build-classpath", f"-Dmdep.outputFile={CP_FILE.name}"]
        output = ""
        for cmd in ([tools["mvn"], "-o", *common], [tools["mvn"], *common]):  # offline first, then online
            CP_FILE.unlink(missing_ok=True)
            try:
                r = subprocess.run(cmd, check=False, cwd=KAFKA_DIR, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                output = f"{' '.join(cmd)} timed out after {MAVEN_TIMEOUT_S}s"
                continue
            if r.returncode == 0 and CP_FILE.is_file():
                break
            output = f"{' '.join(cmd)} exited {r.returncode}\n{r.stdout}\n{r.stderr}"
        else:
            raise Unavailable(f"Maven could not resolve kafka_2.13 4.1.1 ({POM}):\n{tail(output)}")
    cp = CP_FILE.read_text().strip()
    missing = [p for p in cp.split(os.pathsep) if p and not Path(p).is_file()]
    if not cp or missing:
        CP_FILE.unlink(missing_ok=True)
        raise Unavailable(f"{CP_FILE} lists missing jars ({missing[:3]}); rerun to resolve again")
    return cp


def java_tool(cp: str, main: str, *args: str) -> str:
    cmd = ["java", f"-Dlog4j2.configurationFile={LOG4J2}", "-cp", cp, main, *args]
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=JAVA_TOOL_TIMEOUT_S)
    if r.returncode != 0:
        raise RuntimeError(f"{main} {' '.join(args)} exited {r.returncode}:\n{tail(r.stdout + r.stderr)}")
    return r.stdout.strip()


def cluster_id() -> str:
    for _ in range(100):  # Kafka's Uuid.randomUuid avoids ids that start with '-' (they look like options)
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid
    raise RuntimeError("no cluster id")


class RealKafka:
    """A single-node KRaft Kafka 4.1.1 (broker and controller) in a temp dir."""

    def __init__(self, cp: str) -> None:
        self.cp = cp
        self.dir = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
        self.port = free_port()
        self.controller_port = free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.stderr = None

    def start(self) -> None:
        self.format()
        self.spawn()
        self._wait_ready()

    def format(self) -> None:
        """Write server.properties and format the storage (a JVM of its own)."""
        props = self.dir / "server.properties"
        props.write_text("\n".join([
            "process.roles=broker,controller",
            "node.id=1",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
            f"log.dirs={self.dir / 'data'}",
            "num.partitions=1",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            "quota.window.num=11",  # Kafka's defaults, stated: mockbroker uses the same
            "quota.window.size.seconds=1",
            "",
        ]))
        java_tool(self.cp, "kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", str(props))

    def spawn(self, jvm_opts: list[str] = JVM_OPTS, stdout: int | None = None) -> None:
        """Start the broker's JVM on the formatted storage (stdout to the log file unless given)."""
        self.stderr = open(self.dir / "kafka.stderr.log", "wb")
        self.proc = subprocess.Popen(["java", *jvm_opts, "-cp", self.cp, "kafka.Kafka", str(self.dir / "server.properties")],
                                     stdout=self.stderr if stdout is None else stdout,
                                     stderr=self.stderr if stdout is not None else subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)

    def log_tail(self) -> str:
        try:
            return tail((self.dir / "kafka.stderr.log").read_text(errors="replace"))
        except OSError:
            return ""

    def _wait_ready(self) -> None:
        from kafka import KafkaAdminClient

        deadline = time.monotonic() + KAFKA_READY_TIMEOUT_S
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Kafka exited {self.proc.returncode} while starting:\n{self.log_tail()}")
            try:  # listening at all? (keeps kafka-python from logging refused connections)
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            except OSError as e:
                last = e
                time.sleep(0.3)
                continue
            try:
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=5000,
                                         client_id="bench-admin")
                try:
                    admin.describe_cluster()
                    return
                finally:
                    admin.close()
            except Exception as e:  # not listening yet, or no metadata yet
                last = e
                time.sleep(0.5)
        raise RuntimeError(f"Kafka not ready after {KAFKA_READY_TIMEOUT_S}s ({last!r}):\n{self.log_tail()}")

    def create_topic(self, name: str, partitions: int = 1) -> None:
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=10000,
                                 client_id="bench-admin")
        try:
            admin.create_topics({name: {"num_partitions": partitions, "replication_factor": 1}}, timeout_ms=10000)
            admin.wait_for_topics([name], timeout_ms=30000)
        finally:
            admin.close()

    def set_quota(self, client_id: str, key: str, value: int) -> str:
        java_tool(self.cp, "kafka.admin.ConfigCommand", "--bootstrap-server", self.bootstrap, "--alter",
                  "--add-config", f"{key}={value}", "--entity-type", "clients", "--entity-name", client_id)
        return java_tool(self.cp, "kafka.admin.ConfigCommand", "--bootstrap-server", self.bootstrap, "--describe",
                         "--entity-type", "clients", "--entity-name", client_id)

    def stop(self) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()  # SIGTERM: Kafka's controlled shutdown
                try:
                    self.proc.wait(KAFKA_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    print(f"  Kafka still running {KAFKA_STOP_TIMEOUT_S}s after SIGTERM: killing it", flush=True)
                    self.proc.kill()
                    self.proc.wait(10)
        finally:
            if self.stderr is not None:
                self.stderr.close()
            shutil.rmtree(self.dir, ignore_errors=True)
