"""PySpark with Spark's Kafka connector, for the Spark pipeline tests and examples/spark.

PySpark comes from pip (the ``spark`` extra); its ``jars/`` directory holds Spark but not the Kafka
source and sink.  tests/integration/spark/pom.xml names the connector (``spark-sql-kafka-0-10_2.13``,
the same version as pyspark); Maven resolves it and its dependencies into ~/.m2 once
(scripts/toolchains.sh) and writes the classpath to cp.txt.  ``connector_jars`` hands Spark the jars of
that classpath PySpark does not ship already (the connector, Spark's Kafka token provider,
kafka-clients, commons-pool2) as local files, so Spark starts offline and never meets two versions of
one library.

Without java or mvn on PATH, without pyspark, or with a pyspark whose version is not the pom's, the
Spark tests skip with the reason -- and fail under CI (tests/toolchains.py).

Spark binds the driver to 127.0.0.1 (network tests stay on loopback; by default it picks the host's
outward address) and runs ``local[2]`` with the UI off.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.integration.javatools import maven_classpath
from tests.toolchains import unavailable, which

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SPARK_DIR = Path(__file__).parent / "spark"
#: what a test run's Spark sees: small shuffles, no UI, the driver on loopback
BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    # a stopped streaming query waits this long for its thread before giving up
    "spark.sql.streaming.stopTimeout": "30s",
}


def pom_spark_version() -> str:
    """The Spark version tests/integration/spark/pom.xml resolves the connector for."""
    m = re.search(r"<spark\.version>([^<]+)</spark\.version>", (SPARK_DIR / "pom.xml").read_text())
    assert m, f"no <spark.version> in {SPARK_DIR / 'pom.xml'}"
    return m.group(1)


def _pyspark_jars_dir() -> Path:
    try:
        import pyspark
    except ImportError:
        unavailable("the PySpark tests cannot run: pyspark is not installed (pip install -e '.[spark]')")
    want = pom_spark_version()
    if pyspark.__version__ != want:
        unavailable(f"the PySpark tests cannot run: pyspark {pyspark.__version__} is installed but "
                    f"{SPARK_DIR / 'pom.xml'} resolves the Kafka connector for Spark {want}")
    return Path(pyspark.__file__).parent / "jars"


def _shipped(artifact: str, names: list[str]) -> bool:
    """Whether a jar named ``<artifact>-<version>.jar`` is among ``names``."""
    return any(n.startswith(artifact + "-") and n[len(artifact) + 1:][:1].isdigit() for n in names)


def connector_jars() -> list[str]:
    """Local paths of the jars Spark's Kafka connector needs beyond PySpark's own."""
    _java, mvn = which("java", "mvn", needed_by="the PySpark tests")
    cp = maven_classpath(mvn, SPARK_DIR, "Spark's Kafka connector spark-sql-kafka-0-10")
    shipped = sorted(p.name for p in _pyspark_jars_dir().glob("*.jar"))
    # ~/.m2/repository/<group path>/<artifactId>/<version>/<artifactId>-<version>.jar
    return [p for p in cp.split(os.pathsep) if p and not _shipped(Path(p).parent.parent.name, shipped)]


#: whether the JVM PySpark runs in this process was launched here, with the connector on its classpath
_launched_with_connector = False


def _relaunch_jvm_without_connector() -> None:
    """A JVM launched in this process by another SparkSession (the report's tests) has no connector on
    its driver classpath: ``spark.jars`` of a later SparkContext reaches only the executors, so Spark's
    driver would not find the ``kafka`` data source.  Stop that session and its JVM; the next session
    launches a new one with the connector."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    gateway = SparkContext._gateway
    if gateway is None or _launched_with_connector:
        return
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    gateway.shutdown()
    proc = getattr(gateway, "proc", None)
    if proc is not None:  # the JVM's gateway server exits when its stdin closes
        proc.stdin.close()
        proc.wait(timeout=30)
    SparkContext._gateway = None
    SparkContext._jvm = None


def spark_session(app: str, conf: dict[str, Any] | None = None) -> SparkSession:
    """A local[2] SparkSession with the Kafka connector, on loopback, logging errors only."""
    global _launched_with_connector
    jars = connector_jars()
    from pyspark.sql import SparkSession

    _relaunch_jvm_without_connector()

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master("local[2]").appName(app).config("spark.jars", ",".join(jars))
    for key, value in {**BASE_CONF, **(conf or {})}.items():
        builder = builder.config(key, str(value))
    session = builder.getOrCreate()
    _launched_with_connector = True
    session.sparkContext.setLogLevel("ERROR")
    return session
