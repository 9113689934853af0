"""A real Apache Kafka 4.4.0 for side-by-side tests: the same scenario against mockbroker and Kafka.

The broker is bench/brokers.py's ``RealKafka`` (loaded from that file: one implementation for the
benchmarks and the tests): KRaft nodes that are broker and controller at once, from the jars
bench/realkafka/pom.xml resolves (kafka_2.13 and kafka-tools 4.4.0; scripts/toolchains.sh's
``toolchain_realkafka`` resolves them once, online, so the tests run offline), each JVM with
``-Xmx512m``.  Import the fixtures into a test module::

    from tests.integration.realkafka import kafka_tool, realkafka  # noqa: F401 - a fixture

* ``realkafka``: a started single-node Kafka 4.4.0 for the module (``.bootstrap``, ``.tool(...)``);
* ``realkafka_cluster``: three nodes (a static three-voter quorum, internal topics with three
  replicas), for the module;
* ``kafka_tool(tool, *args)``: one of Kafka 4.4.0's command-line tools (``brokers.KAFKA_TOOLS``:
  ``kafka-topics``, ``kafka-configs``, ``kafka-consumer-groups``, ``kafka-transactions``,
  ``kafka-features``, ``kafka-metadata-quorum``, ``kafka-delete-records``, ``kafka-leader-election``,
  ``kafka-log-dirs``, ``kafka-reassign-partitions``, ``kafka-get-offsets``), run as its bin/ script
  would run it, against whatever ``--bootstrap-server`` the arguments name: its exit code, stdout
  and stderr.

Without java or mvn, or when Maven cannot resolve Kafka, the tests skip with the reason; under CI
they fail instead (tests/toolchains.py).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.toolchains import unavailable, which

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_brokers", ROOT / "bench" / "brokers.py")
assert _spec is not None and _spec.loader is not None
brokers = importlib.util.module_from_spec(_spec)
sys.modules["bench_brokers"] = brokers
_spec.loader.exec_module(brokers)

KAFKA_VERSION = brokers.KAFKA_VERSION
JVM_OPTS = ["-Xms256m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={brokers.LOG4J2}"]
NEEDED_BY = f"the side-by-side tests with a real Kafka {KAFKA_VERSION}"


def kafka_classpath(version: str = KAFKA_VERSION) -> str:
    """The classpath of Kafka ``version``'s broker and tools; ``unavailable`` with the reason otherwise."""
    which("java", "mvn", needed_by=NEEDED_BY)
    try:
        return brokers.kafka_classpath(version)
    except brokers.Unavailable as e:
        unavailable(f"{NEEDED_BY} cannot run: {e}")


def kafka_tool(tool: str, *args: str, version: str = KAFKA_VERSION,
               timeout: float = brokers.JAVA_TOOL_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Kafka's command-line ``tool`` ("kafka-topics", ...) with ``args``: exit code, stdout, stderr."""
    return brokers.kafka_tool(kafka_classpath(version), tool, *args, timeout=timeout)


def start(nodes: int, version: str = KAFKA_VERSION,
          configure: Callable[[brokers.RealKafka], None] | None = None) -> Iterator[brokers.RealKafka]:
    """Kafka ``version`` on ``nodes`` nodes; ``configure`` may set ``extra_props`` (over the
    server.properties written) and ``format_args`` (more kafka-storage format arguments, e.g.
    ``--add-scram``) once the nodes' ports are chosen, before they start."""
    kafka = brokers.RealKafka(kafka_classpath(version), nodes=nodes, version=version, jvm_opts=JVM_OPTS)
    if configure is not None:
        configure(kafka)
    try:
        kafka.start()
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        kafka.stop()
        pytest.fail(f"Kafka {version} ({nodes} node(s)) did not start: {e}", pytrace=False)
    try:
        yield kafka
    finally:
        kafka.stop(kill=True)  # nothing of it is kept: no controlled shutdown to wait for


@pytest.fixture(scope="module")
def realkafka() -> Iterator[brokers.RealKafka]:
    """A single-node KRaft Kafka 4.4.0 (broker and controller), started for the module."""
    yield from start(1)


@pytest.fixture(scope="module")
def realkafka_cluster() -> Iterator[brokers.RealKafka]:
    """Three KRaft Kafka 4.4.0 nodes (each broker and controller), started for the module."""
    yield from start(3)
