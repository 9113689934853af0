"""Fixtures shared by the unit tests that start their own module broker ``b``."""

from __future__ import annotations

import pytest

from protocol.client import RawKafkaClient


@pytest.fixture
def c(b):
    """A raw wire client of the module's broker ``b``, closed after the test."""
    client = RawKafkaClient.connect(b.bootstrap_servers)
    yield client
    client.close()
