"""The brokers the benchmarks measure: ``mockbroker serve`` as a subprocess, and a real Apache Kafka.

Shared by the bench scripts (bench/ is not a package: each script puts this directory on
``sys.path`` and imports ``brokers``) and by the side-by-side integration tests
(tests/integration/realkafka.py loads this file).

* ``serve_mockbroker(config, cwd)``: ``python -m mockbroker serve --port 0`` from the checkout ``cwd``
  (its own package wins: ``-m`` puts the working directory first on ``sys.path``), stdout read up to
  its ``mockbroker ready bootstrap=...`` line; stderr (warnings, errors) passes through.
* ``RealKafka``: a KRaft cluster of 1 (default) or more combined broker+controller nodes, Kafka
  ``KAFKA_VERSION`` (4.4.0) or another release, from the jars that bench/realkafka/pom.xml resolves
  (``mvn -q dependency:build-classpath -Dkafka.version=V -Dmdep.outputFile=cp-V.txt``, run by
  ``kafka_classpath(V)`` when cp-V.txt is missing or older than the pom; offline first), each node's
  storage formatted with kafka.tools.StorageTool in a temp dir.  Without java or mvn, or when Maven
  cannot resolve Kafka, ``kafka_classpath()`` raises ``Unavailable`` with the reason.
  ``RealKafka(version="4.1")`` runs a recorded release line's patch release (``kafka_release``: the
  one protocol/kafka_releases.py recorded, 4.1.2) from its own classpath; every release from 3.7 starts
  with the same properties but the share coordinator's (4.0 on), and 3.x, which logs through log4j 1
  (reload4j), gets log4j.properties' quiet logging (``legacy_log_opts``).
* ``kafka_tool(cp, "kafka-topics", "--bootstrap-server", b, "--list")``: one of Kafka's command-line
  tools (``KAFKA_TOOLS``: the main class each bin/ script runs, from the kafka-tools and kafka_2.13
  jars of the same classpath), its exit code, stdout and stderr.
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
import zipfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KAFKA_DIR = Path(__file__).resolve().parent / "realkafka"
POM = KAFKA_DIR / "pom.xml"
LOG4J2 = KAFKA_DIR / "log4j2.properties"
LOG4J1 = KAFKA_DIR / "log4j.properties"  # Kafka 3.x: log4j 1 (reload4j)

# The release the benchmarks and the side-by-side tests run (any other: kafka_classpath(version)).
KAFKA_VERSION = "4.4.0"
MAVEN_TIMEOUT_S = 600
JAVA_TOOL_TIMEOUT_S = 90
KAFKA_READY_TIMEOUT_S = 90
KAFKA_STOP_TIMEOUT_S = 30
JVM_OPTS = ["-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={LOG4J2}"]
# Kafka's bin/kafka-run-class.sh gives its tools -Xmx256M (KAFKA_HEAP_OPTS)
TOOL_JVM_OPTS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
                 f"-Dlog4j2.configurationFile={LOG4J2}"]


class Unavailable(Exception):
    """Java, Maven or Kafka cannot be used here: the benchmark says why and exits 0."""


def tail(text: str, n: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


# --- mockbroker serve -----------------------------------------------------------------------------

@contextlib.contextmanager
def serve_mockbroker(config: list[str], cwd: Path = ROOT, port: int = 0) -> Iterator[tuple[subprocess.Popen, str]]:
    """``mockbroker serve --port 0 -c key=value ...`` from the checkout ``cwd``: (process, bootstrap)
    once it printed its ready line; terminated on exit. ``port``: another than a free one."""
    args = [sys.executable, "-m", "mockbroker", "serve", "--port", str(port), "--log-level", "WARNING"]
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


# --- real Kafka ------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cp_file(version: str = KAFKA_VERSION) -> Path:
    """The classpath file of a Kafka release (bench/realkafka/cp-<version>.txt)."""
    return KAFKA_DIR / f"cp-{version}.txt"


def kafka_classpath(version: str = KAFKA_VERSION) -> str:
    """The classpath of Kafka ``version``'s broker and tools (written by Maven when missing)."""
    tools = {name: shutil.which(name) for name in ("java", "mvn")}
    absent = [name for name, path in tools.items() if path is None]
    if absent:
        raise Unavailable(f"needs java and mvn on PATH; missing: {', '.join(absent)}")
    out = cp_file(version)
    fresh = out.is_file() and out.stat().st_mtime >= POM.stat().st_mtime
    if not fresh:
        common = ["-q", "-B", "-Dstyle.color=never", "dependency:build-classpath", f"-Dkafka.version={version}",
                  f"-Dmdep.outputFile={out.name}"]
        output = ""
        for cmd in ([tools["mvn"], "-o", *common], [tools["mvn"], *common]):  # offline first, then online
            out.unlink(missing_ok=True)
            try:
                r = subprocess.run(cmd, check=False, cwd=KAFKA_DIR, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                output = f"{' '.join(cmd)} timed out after {MAVEN_TIMEOUT_S}s"
                continue
            if r.returncode == 0 and out.is_file():
                break
            output = f"{' '.join(cmd)} exited {r.returncode}\n{r.stdout}\n{r.stderr}"
        else:
            raise Unavailable(f"Maven could not resolve kafka_2.13 {version} ({POM}):\n{tail(output)}")
    cp = out.read_text().strip()
    missing = [p for p in cp.split(os.pathsep) if p and not Path(p).is_file()]
    if not cp or missing:
        out.unlink(missing_ok=True)
        raise Unavailable(f"{out} lists missing jars ({missing[:3]}); rerun to resolve again")
    return cp


def kafka_release(version: str) -> str:
    """The Kafka version to run for ``version``: a release line ("4.1") is the patch release recorded
    for it (protocol/kafka_releases.py: 4.1.2); a full version ("4.1.1") is itself."""
    if version.count(".") >= 2:
        return version
    sys.path.insert(0, str(ROOT))
    from protocol.kafka_releases import RECORDED

    if version not in RECORDED:
        raise ValueError(f"no recorded Kafka {version}; recorded: {', '.join(RECORDED)} (or name a full x.y.z)")
    return str(RECORDED[version]["kafka"])


def kafka_line(version: str) -> tuple[int, int]:
    """"3.9.2" -> (3, 9)."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def legacy_log_opts(cp: str) -> list[str]:
    """The JVM option that gives a Kafka 3.x classpath (log4j 1 through reload4j, whose slf4j binding comes
    first) quiet logging to stderr, as log4j2.properties gives 4.x; none for 4.x."""
    return [f"-Dlog4j.configuration=file:{LOG4J1}"] if "/slf4j-reload4j-" in cp else []


def run_java(cp: str, main: str, *args: str, jvm_opts: list[str] = TOOL_JVM_OPTS,
             timeout: float = JAVA_TOOL_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """``java -cp cp main args...``: its exit code, stdout and stderr (stdin closed)."""
    return subprocess.run(["java", *jvm_opts, *legacy_log_opts(cp), "-cp", cp, main, *args], check=False,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def java_tool(cp: str, main: str, *args: str) -> str:
    r = run_java(cp, main, *args)
    if r.returncode != 0:
        raise RuntimeError(f"{main} {' '.join(args)} exited {r.returncode}:\n{tail(r.stdout + r.stderr)}")
    return r.stdout.strip()


# Kafka's command-line tools: bin/<name>.sh -> the main class it runs (kafka-run-class.sh), the first of
# the candidates the classpath has (ConfigCommand moved from core's kafka.admin to kafka-tools in 4.4).
KAFKA_TOOLS: dict[str, tuple[str, ...]] = {
    "kafka-topics": ("org.apache.kafka.tools.TopicCommand",),
    "kafka-configs": ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"),
    "kafka-delegation-tokens": ("org.apache.kafka.tools.DelegationTokenCommand",),
    "kafka-consumer-groups": ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                              "kafka.admin.ConsumerGroupCommand"),  # 3.7
    "kafka-share-groups": ("org.apache.kafka.tools.consumer.group.ShareGroupCommand",),
    "kafka-transactions": ("org.apache.kafka.tools.TransactionsCommand",),
    "kafka-features": ("org.apache.kafka.tools.FeatureCommand",),
    "kafka-metadata-quorum": ("org.apache.kafka.tools.MetadataQuorumCommand",),
    "kafka-delete-records": ("org.apache.kafka.tools.DeleteRecordsCommand",),
    "kafka-leader-election": ("org.apache.kafka.tools.LeaderElectionCommand",),
    "kafka-log-dirs": ("org.apache.kafka.tools.LogDirsCommand",),
    "kafka-reassign-partitions": ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand",),
    "kafka-get-offsets": ("org.apache.kafka.tools.GetOffsetShell",),
    "kafka-storage": ("kafka.tools.StorageTool",),
    "kafka-acls": ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand"),  # 3.x
}
_CLASSES: dict[str, frozenset[str]] = {}


def classes_of(cp: str) -> frozenset[str]:
    """Every class name in the Kafka jars of ``cp`` (read once per classpath)."""
    if cp not in _CLASSES:
        names = set()
        for jar in cp.split(os.pathsep):
            if "/org/apache/kafka/" in jar and jar.endswith(".jar"):
                with zipfile.ZipFile(jar) as z:
                    names.update(n[:-6].replace("/", ".") for n in z.namelist() if n.endswith(".class"))
        _CLASSES[cp] = frozenset(names)
    return _CLASSES[cp]


def tool_main(cp: str, tool: str) -> str:
    """The main class of Kafka's ``tool`` ("kafka-topics", ...) in the classpath ``cp``."""
    for main in KAFKA_TOOLS[tool]:
        if main in classes_of(cp):
            return main
    raise Unavailable(f"no main class of {tool} ({', '.join(KAFKA_TOOLS[tool])}) in the classpath")


def kafka_tool(cp: str, tool: str, *args: str, timeout: float = JAVA_TOOL_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Run Kafka's command-line ``tool`` ("kafka-topics", "kafka-configs", ...) with ``args`` as its bin/
    script would: its exit code, stdout and stderr (warnings only: log4j2.properties)."""
    return run_java(cp, tool_main(cp, tool), *args, timeout=timeout)


def cluster_id() -> str:
    for _ in range(100):  # Kafka's Uuid.randomUuid avoids ids that start with '-' (they look like options)
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid
    raise RuntimeError("no cluster id")


class KafkaNode:
    """One combined broker+controller of a RealKafka cluster: its ports, directory and JVM."""

    def __init__(self, node_id: int, root: Path, taken: set[int]) -> None:
        self.node_id = node_id
        self.dir = root / f"node-{node_id}"
        self.dir.mkdir(parents=True)
        self.port = self._port(taken)
        self.controller_port = self._port(taken)
        self.proc: subprocess.Popen | None = None
        self.stderr = None

    @staticmethod
    def _port(taken: set[int]) -> int:
        port = free_port()
        while port in taken:
            port = free_port()
        taken.add(port)
        return port

    @property
    def log(self) -> Path:
        return self.dir / "kafka.stderr.log"


class RealKafka:
    """A KRaft Kafka cluster of ``nodes`` combined broker+controller nodes (a static quorum of all of
    them) in a temp dir: Kafka ``version`` (x.y.z, or a recorded line x.y: ``kafka_release``), from the
    jars of ``cp`` (by default ``kafka_classpath(version)``, resolved by Maven when missing).
    ``bootstrap`` lists every node; ``port``, ``proc`` and ``dir`` are the first node's."""

    def __init__(self, cp: str | None = None, nodes: int = 1, version: str = KAFKA_VERSION,
                 jvm_opts: list[str] = JVM_OPTS, extra_props: dict[str, str] | None = None) -> None:
        self.version = kafka_release(version)
        self.cp = cp if cp is not None else kafka_classpath(self.version)
        self.jvm_opts = jvm_opts
        self.extra_props = dict(extra_props or {})
        self.format_args: list[str] = []  # more StorageTool format arguments (e.g. --add-scram ...)
        self.root = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
        taken: set[int] = set()
        self.nodes = [KafkaNode(i + 1, self.root, taken) for i in range(nodes)]
        self.bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        self.cluster_id = cluster_id()

    @property
    def dir(self) -> Path:
        return self.nodes[0].dir

    @property
    def port(self) -> int:
        return self.nodes[0].port

    @property
    def proc(self) -> subprocess.Popen | None:
        return self.nodes[0].proc

    def start(self) -> None:
        self.format()
        self.spawn()
        self._wait_ready()

    def properties(self, node: KafkaNode) -> dict[str, str]:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        rf = str(min(3, len(self.nodes)))
        # the share coordinator's state topic (ShareCoordinatorConfig) from Kafka 4.0; 3.x would warn
        share = {"share.coordinator.state.topic.replication.factor": rf,
                 "share.coordinator.state.topic.min.isr": "1"} if kafka_line(self.version) >= (4, 0) else {}
        return {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.quorum.voters": voters,
            "log.dirs": str(node.dir / "data"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": "1",
            **share,
            "group.initial.rebalance.delay.ms": "0",
            "quota.window.num": "11",  # Kafka's defaults, stated: mockbroker uses the same
            "quota.window.size.seconds": "1",
            **self.extra_props,
        }

    def format(self) -> None:
        """Write each node's server.properties and format its storage (a JVM each, side by side)."""
        procs = []
        for node in self.nodes:
            props = node.dir / "server.properties"
            props.write_text("".join(f"{k}={v}\n" for k, v in self.properties(node).items()))
            procs.append(subprocess.Popen(
                ["java", *TOOL_JVM_OPTS, *legacy_log_opts(self.cp), "-cp", self.cp, "kafka.tools.StorageTool",
                 "format", "-t", self.cluster_id,
                 "-c", str(props), *self.format_args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL))
        for p in procs:
            out, _ = p.communicate(timeout=JAVA_TOOL_TIMEOUT_S)
            if p.returncode != 0:
                raise RuntimeError(f"kafka.tools.StorageTool format exited {p.returncode}:\n{tail(out)}")

    def spawn(self, jvm_opts: list[str] | None = None, stdout: int | None = None) -> None:
        """Start each node's JVM on its formatted storage (stdout to the node's log file unless given)."""
        for node in self.nodes:
            node.stderr = open(node.log, "wb")
            node.proc = subprocess.Popen(
                ["java", *(jvm_opts or self.jvm_opts), *legacy_log_opts(self.cp), "-cp", self.cp, "kafka.Kafka",
                 str(node.dir / "server.properties")],
                stdout=node.stderr if stdout is None else stdout,
                stderr=node.stderr if stdout is not None else subprocess.STDOUT,
                stdin=subprocess.DEVNULL)

    def log_tail(self) -> str:
        out = []
        for node in self.nodes:
            try:
                text = tail(node.log.read_text(errors="replace"))
            except OSError:
                continue
            out.append(text if len(self.nodes) == 1 else f"[node {node.node_id}]\n{text}")
        return "\n".join(out)

    def _wait_ready(self) -> None:
        """Until every node answers Metadata listing all the brokers and a controller."""
        sys.path.insert(0, str(ROOT))
        from protocol.client import RawKafkaClient

        deadline = time.monotonic() + KAFKA_READY_TIMEOUT_S
        last: object = None
        pending = list(self.nodes)
        while pending and time.monotonic() < deadline:
            node = pending[0]
            if node.proc is not None and node.proc.poll() is not None:
                raise RuntimeError(f"Kafka node {node.node_id} exited {node.proc.returncode} while starting:\n"
                                   f"{self.log_tail()}")
            try:
                with RawKafkaClient("127.0.0.1", node.port, client_id="bench-ready", timeout=5) as c:
                    md = c.request(3, 12, {"topics": None, "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False})
                if len(md.brokers) == len(self.nodes) and md.controller_id >= 0:
                    pending.pop(0)
                    continue
                last = f"{len(md.brokers)} of {len(self.nodes)} brokers, controller {md.controller_id}"
            except (OSError, ConnectionError) as e:
                last = e
            time.sleep(0.3)
        if pending:
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

    def tool(self, tool: str, *args: str, timeout: float = JAVA_TOOL_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        """Kafka's command-line ``tool`` of this cluster's release (``kafka_tool``)."""
        return kafka_tool(self.cp, tool, *args, timeout=timeout)

    def set_quota(self, client_id: str, key: str, value: int) -> str:
        main = tool_main(self.cp, "kafka-configs")
        java_tool(self.cp, main, "--bootstrap-server", self.bootstrap, "--alter",
                  "--add-config", f"{key}={value}", "--entity-type", "clients", "--entity-name", client_id)
        return java_tool(self.cp, main, "--bootstrap-server", self.bootstrap, "--describe",
                         "--entity-type", "clients", "--entity-name", client_id)

    def stop(self, kill: bool = False) -> None:
        """SIGTERM (Kafka's controlled shutdown), or with ``kill`` SIGKILL: a throwaway test cluster
        whose directories are removed next has nothing to shut down cleanly for (three nodes take
        5-8 s over a controlled shutdown)."""
        try:
            for node in self.nodes:
                if node.proc is not None and node.proc.poll() is None:
                    if kill:
                        node.proc.kill()
                    else:
                        node.proc.terminate()  # SIGTERM: Kafka's controlled shutdown
            for node in self.nodes:
                if node.proc is None:
                    continue
                try:
                    node.proc.wait(KAFKA_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    print(f"  Kafka node {node.node_id} still running {KAFKA_STOP_TIMEOUT_S}s after SIGTERM: killing it",
                          flush=True)
                    node.proc.kill()
                    node.proc.wait(10)
        finally:
            for node in self.nodes:
                if node.stderr is not None:
                    node.stderr.close()
            shutil.rmtree(self.root, ignore_errors=True)
