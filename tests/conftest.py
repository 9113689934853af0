from __future__ import annotations

import os

import pytest
from hypothesis import settings

from mockbroker import MockBroker
from protocol.client import RawKafkaClient

# Hypothesis: a small deterministic profile for CI, an exhaustive one on demand.
settings.register_profile("deterministic", derandomize=True, max_examples=50, deadline=None)
settings.register_profile("exhaustive", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture(scope="module")
def broker():
    """One broker per test module (3 partitions per auto-created topic)."""
    with MockBroker(config={"num.partitions": 3}) as b:
        yield b


@pytest.fixture
def raw(broker):
    """A factory of raw wire clients connected to the module's broker."""
    clients: list[RawKafkaClient] = []

    def connect(**kw):
        c = RawKafkaClient.connect(broker.bootstrap_servers, **kw)
        clients.append(c)
        return c

    yield connect
    for c in clients:
        c.close()
