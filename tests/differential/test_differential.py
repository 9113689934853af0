"""The differential tester's seeded slice in the suite: mockbroker answers as the suite's Kafka 4.4.0 does.

The slice is the oldest, the newest and one seeded version between of every key both brokers
advertise, ``SLICE_PER_VERSION`` requests each (the valid one and mutations), sent to a real Kafka
4.4.0 (``realkafka``) and to a mockbroker configured alike (``BROKER_CONFIG``) from equal state.
Every difference must be one docs/differences.md lists; the failure message has each other one as a
one-line reproducer.  ``python -m tests.differential --full`` runs every version, 50 requests each.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from mockbroker import MockBroker
from tests.differential.__main__ import BROKER_CONFIG, SLICE_PER_VERSION
from tests.differential.run import Differential, known_differences
from tests.integration.realkafka import realkafka  # noqa: F401 - a fixture

SEED = int(os.environ.get("DIFFERENTIAL_SEED", "1"))
TIME_BOUND_S = 900.0  # the slice takes 2-4 minutes on a 2-core machine; a slower one checks a prefix


@pytest.fixture(scope="module")
def differential_mockbroker() -> Iterator[MockBroker]:
    with MockBroker(config=dict(BROKER_CONFIG)) as broker:
        yield broker


@pytest.mark.timeout(int(TIME_BOUND_S) + 600)
def test_slice_answers_as_kafka(realkafka, differential_mockbroker: MockBroker) -> None:  # noqa: F811
    lines: list[str] = []
    d = Differential(realkafka.bootstrap, differential_mockbroker.bootstrap_servers, seed=SEED,
                     per_version=SLICE_PER_VERSION, versions="slice", log=lines.append, deadline=TIME_BOUND_S)
    started = time.monotonic()
    d.run()
    d.classify(known_differences())
    took = time.monotonic() - started
    print(f"{len(d.results)} requests in {took:.0f} s (seed {SEED})\n{d.table()}")
    assert len(d.results) > 500, f"the slice sent only {len(d.results)} requests:\n" + "\n".join(lines)
    assert not d.setup_failures, "setup failed on a broker:\n" + "\n".join(d.setup_failures)
    unknown = d.unknown()
    assert not unknown, (f"{len(unknown)} answers differ from Kafka 4.4.0's and docs/differences.md does not list "
                         "them:\n" + "\n".join(d.line(r) for r in unknown[:60]) + "\n" + d.table())
