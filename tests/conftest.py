from __future__ import annotations

import os

# Before anything imports protocol.codec: a response key no version of its message has is an error
# under tests (protocol/codec.py), here and in every broker process a test starts.
os.environ["PROTOCOL_STRICT_KEYS"] = "1"

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from mockbroker import MockBroker  # noqa: E402
from protocol.client import RawKafkaClient  # noqa: E402

# Hypothesis: a small deterministic profile for CI, a smaller one for the edit loop, an exhaustive one on demand.
settings.register_profile("deterministic", derandomize=True, max_examples=50, deadline=None)
settings.register_profile("exhaustive", max_examples=5000, deadline=None)
settings.register_profile("quick", derandomize=True, max_examples=10, deadline=None)  # scripts/test.sh --quick
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
