"""pytest fixtures for testing a PySpark pipeline against mockbroker: copy this file next to your tests.

* ``broker``: a MockBroker for the test module (a fresh one per module: topics, quotas and throttle
  records do not leak between modules);
* ``spark``: one local[2] SparkSession for the whole run (Spark takes ~10 s to start), with Spark's
  Kafka connector, the driver bound to 127.0.0.1, two shuffle partitions, UTC.

The Kafka connector (``spark-sql-kafka-0-10``) is not part of PySpark:

* inside the mockbroker repository, ``tests.integration.sparktools`` hands Spark the connector's
  jars as local files, resolved by Maven into ~/.m2 (scripts/toolchains.sh): offline, and the same
  settings as the repository's own Spark tests; it skips when Java, Maven or pyspark is missing
  (fails under CI);
* anywhere else (a copy of this file in your project) it falls back to
  ``spark.jars.packages=org.apache.spark:spark-sql-kafka-0-10_2.13:<pyspark version>``: Spark
  downloads the connector and its dependencies with Ivy on first use (needs Maven Central, cached in
  ~/.ivy2 afterwards).
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import pytest

from mockbroker import MockBroker

#: the PySpark (and so Spark Kafka connector) version this example is tested with: the `spark` extra
#: of mockbroker pins it; the connector must be exactly PySpark's version
TESTED_PYSPARK = "4.2.0"
#: the repository root when this file is examples/spark/conftest.py of mockbroker's repository
_REPO = Path(__file__).resolve().parents[2]
#: what the session looks like outside the repository (sparktools.BASE_CONF inside it)
LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",        # Spark binds the host's outward address by default
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.shuffle.partitions": "2",     # 200 by default: 200 tiny state stores per micro-batch
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",  # no progress bars in the test output
}


def version_mismatch(pyspark_version: str) -> str | None:
    """What to tell a user whose PySpark is not the one the example is tested with (None when it is)."""
    if pyspark_version == TESTED_PYSPARK:
        return None
    return (f"pyspark {pyspark_version} is installed, but this example is tested with pyspark "
            f"{TESTED_PYSPARK}: Spark needs its Kafka connector at exactly pyspark's version "
            f"(spark-sql-kafka-0-10_2.13:{pyspark_version}), which may not be resolvable; "
            f"install the tested one with: python3 -m pip install 'pyspark=={TESTED_PYSPARK}'")


def _sparktools():
    """``tests.integration.sparktools`` of the mockbroker repository, or None outside it."""
    if (_REPO / "tests" / "integration" / "sparktools.py").is_file() and str(_REPO) not in sys.path:
        sys.path.insert(0, str(_REPO))
    try:
        from tests.integration import sparktools
    except ImportError:
        return None
    return sparktools


@pytest.fixture(scope="module")
def broker():
    """A MockBroker on a free port of 127.0.0.1 (``broker.bootstrap_servers``)."""
    with MockBroker() as b:
        yield b


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession with the Kafka connector (one SparkContext per JVM: when another
    fixture of the run already made one, getOrCreate returns that session)."""
    sparktools = _sparktools()
    if sparktools is not None:
        session = sparktools.spark_session("mockbroker-examples", {"spark.ui.showConsoleProgress": "false"})
    else:
        pyspark = pytest.importorskip("pyspark")
        from pipeline import connector_package
        from pyspark.sql import SparkSession

        mismatch = version_mismatch(pyspark.__version__)
        if mismatch:
            warnings.warn(mismatch, stacklevel=1)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = (SparkSession.builder.master("local[2]").appName("mockbroker-examples")
                   .config("spark.jars.packages", connector_package()))
        for key, value in LOCAL_CONF.items():
            builder = builder.config(key, value)
        try:
            session = builder.getOrCreate()
        except Exception as e:  # noqa: BLE001 - Ivy's resolution error, or the JVM's: said in one line
            pytest.fail(f"Spark could not start with the Kafka connector {connector_package()}: "
                        f"{str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}"
                        + (f"; {mismatch}" if mismatch else ""), pytrace=False)
        session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
