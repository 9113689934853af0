"""Fixtures shared by the integration tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession with Spark's Kafka connector for every Spark test of the run (Spark takes
    ~10 s to start); skips, or fails under CI, when Java, Maven or pyspark is missing (sparktools)."""
    from tests.integration import sparktools

    session = sparktools.spark_session("mockbroker-tests")
    yield session
    session.stop()
