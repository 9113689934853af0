"""Fixtures shared by the integration tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark_session():
    """One local[2] SparkSession with Spark's Kafka connector for every Spark test of the run (Spark takes
    ~10 s to start); skips, or fails under CI, when Java, Maven or pyspark is missing (sparktools)."""
    from tests.integration import sparktools

    session = sparktools.spark_session("mockbroker-tests")
    yield session
    session.stop()


@pytest.fixture
def spark(spark_session):
    """The shared SparkSession; after each test, its streaming queries are stopped and its jobs cancelled,
    so that a failed test cannot leave tasks holding local[2]'s two slots for the tests after it."""
    yield spark_session
    for query in spark_session.streams.active:
        try:
            query.stop()
        except Exception as e:  # noqa: BLE001 -- a query that will not stop must not hide the test's result
            print(f"stopping streaming query {query.name or query.id}: {e}")
    spark_session.sparkContext.cancelAllJobs()
