"""Transactions under mockbroker's latency knobs, with real clients: what the clients see must be
what a Kafka 4.4 with that latency could answer.

The knobs (mockbroker/config/broker_config.py) that make the broker slower than an in-process call:

* ``mock.txn.marker.latency.ms``: the coordinator's WriteTxnMarkers reaches the leaders this late
  (Kafka's marker sender round trip), so the transaction stays PrepareCommit/PrepareAbort that long;
* ``mock.replication.lag.ms``: followers fetch this late, so acks=all produces, the markers (written
  with acks=all) and the last stable offset wait for them;
* ``mock.faults`` rules with ``action = "delay"``: a request's response is sent this late (after it
  took effect), as a slow broker or network would deliver it.

The scenario is franz-go's exactly-once consume-transform-produce loop (tests/integration/go/txn.go,
``ctp``): a ``kgo.GroupTransactSession`` in a KIP-848 group, at transaction version 2 (Produce v12+
adds the partitions, EndTxn v5 bumps the epoch) or 0 (AddPartitionsToTxn, the classic path), with
franz-go's default in-flight produce requests, so the next transaction's first batches meet the last
one's markers still being written while later batches of the same partitions pipeline behind them.
confluent-kafka (librdkafka, tests/integration/eos_member.py) runs the same loop on the classic path
under held markers with replication lag and under delayed responses.
Kafka 4.4 retries the coordinator's CONCURRENT_TRANSACTIONS inside the broker at Produce v12+
(``ReplicaManager.maybeRetryOnConcurrentTransactions``: every add.partitions.to.txn.retry.backoff.ms
for add.partitions.to.txn.retry.backoff.max.ms), so such a client sees CONCURRENT_TRANSACTIONS only
from a Produce that waited that long, and never an out-of-order sequence.  Checked: the output holds
every input record exactly once, the group's offsets reach the input's end, no produce failed, and
the broker's journal shows only answers Kafka could give (no OUT_OF_ORDER_SEQUENCE_NUMBER; a Produce
v12+ answered CONCURRENT_TRANSACTIONS only after the retry window; at least one Produce waited for
the markers when they were held).

One 3-broker cluster per knob set, shared by the module's tests of that set (a second pair for
librdkafka's).  Each run is bounded:
the Go program exits after 60 s, the subprocess is killed at 90 s.  Toolchain: go (gotools.py).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from mockbroker import MockBroker
from protocol.errors import ErrorCode

from .gotools import franz_go_binary

PARTITIONS = 4
CTP_RECORDS = 400  # ctpRecords in txn.go
RUN_TIMEOUT_S = 90
RETRY_WINDOW_MS = 100  # add.partitions.to.txn.retry.backoff.max.ms (Kafka's default)
BASE = {"mock.num.brokers": 3, "group.consumer.assignment.interval.ms": 0}
DELAYS = [{"action": "delay", "delay_ms": 30, "api": api, "count": None}
          for api in ("Produce", "EndTxn", "TxnOffsetCommit")]

# (id, config, transaction version, markers held longer than the client's first produce comes)
KNOBS = [
    ("markers50-lag20-tv2", {"mock.txn.marker.latency.ms": 50, "mock.replication.lag.ms": 20}, 2, True),
    ("markers50-tv2", {"mock.txn.marker.latency.ms": 50}, 2, True),
    ("lag20-tv2", {"mock.replication.lag.ms": 20}, 2, True),
    ("markers150-tv2", {"mock.txn.marker.latency.ms": 150}, 2, True),  # longer than the retry window
    ("markers50-lag20-tv0", {"mock.txn.marker.latency.ms": 50, "mock.replication.lag.ms": 20}, 0, False),
    ("delays30-tv2", {"mock.faults": DELAYS}, 2, False),
]


@pytest.fixture(scope="module")
def franz_go() -> str:
    return franz_go_binary()


@pytest.fixture(scope="module", params=KNOBS, ids=[k[0] for k in KNOBS])
def broker(request):
    name, knobs, tv, held = request.param
    with MockBroker(config={**BASE, **knobs, "mock.transaction.version": str(tv)}) as b:
        b.knobs, b.tv, b.held = name, tv, held
        yield b


def run(franz_go: str, b: MockBroker, scenario: str, topic: str) -> dict[str, Any]:
    cmd = [franz_go, "txn", scenario, b.bootstrap_servers, topic, str(PARTITIONS)]
    try:
        r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"txn {scenario} did not exit within {RUN_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    report = f"exit {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 1, report
    out = json.loads(lines[0])
    assert out["ok"] is True and out["scenario"] == scenario, report
    return out


def produce_answers(b: MockBroker, client_id: str) -> list[tuple[int, float, list[int]]]:
    """(Produce version, ms from receipt to response, partition error codes) of a client's Produces."""
    return [(j["api_version"], (j["sent_clock_ns"] - j["received_clock_ns"]) / 1e6,
             [p["error_code"] for p in j["partitions"]])
            for j in b.journal(api_key="PRODUCE", client_id=client_id) if j["sent_clock_ns"] is not None]


def test_franz_go_consume_transform_produce_is_exactly_once(franz_go, broker):
    topic = f"ctp-{broker.knobs}"
    broker.create_topic(topic, PARTITIONS, replication_factor=2)
    broker.create_topic(f"{topic}-out", PARTITIONS, replication_factor=2)
    out = run(franz_go, broker, "ctp", topic)
    expected = sorted(f"out-in-{i:03d}" for i in range(CTP_RECORDS))
    ends = [f"end-{p}" for p in range(PARTITIONS)]
    assert out["output"] == sorted(expected + ends), (len(out["output"]), out.get("produce_errors"))
    assert out["produce_errors"] == [] and out["aborted"] == 0, out
    assert out["committed_offsets"] == out["end_offsets"] == {str(p): CTP_RECORDS // PARTITIONS
                                                              for p in range(PARTITIONS)}
    answers = produce_answers(broker, "kgo")
    versions = {v for v, _ms, _errors in answers}
    assert (min(versions) >= 12) == (broker.tv == 2), versions
    errors = [(v, ms, e) for v, ms, errs in answers for e in errs if e != ErrorCode.none.value]
    # a sequence never arrives out of order: a later batch does not overtake the first of a transaction
    assert not [x for x in errors if x[2] == ErrorCode.out_of_order_sequence_number.value], errors
    # Produce v12+ meets CONCURRENT_TRANSACTIONS only once the broker's retries ran out; below v12 the
    # verifying broker answers NOT_ENOUGH_REPLICAS for it
    conc = [x for x in errors if x[2] == ErrorCode.concurrent_transactions.value]
    assert all(v >= 12 and ms >= RETRY_WINDOW_MS for v, ms, _e in conc), conc
    if broker.tv == 2 and broker.held:
        # the next transaction's first produce waited inside the broker for the last one's markers
        assert any(ms >= 2 * 20 for _v, ms, _errs in answers), sorted(ms for _v, ms, _e in answers)[-5:]
    t = {x["transactional_id"]: x for x in broker.transactions()}["fg-ctp"]
    assert t["state"] == "CompleteCommit" and t["partitions"] == []


# one TV1 client per kind of knob: markers held with replication lag, delayed responses
RDK_KNOBS = [k for k in KNOBS if k[0] in ("markers50-lag20-tv2", "delays30-tv2")]


@pytest.fixture(scope="module", params=RDK_KNOBS, ids=[k[0] for k in RDK_KNOBS])
def rdk_broker(request):
    name, knobs, tv, held = request.param
    with MockBroker(config={**BASE, **knobs, "mock.transaction.version": str(tv)}) as b:
        b.knobs = name
        yield b


def test_librdkafka_consume_transform_produce_is_exactly_once(rdk_broker):
    """confluent-kafka (librdkafka, the classic path: AddPartitionsToTxn, which it retries on
    CONCURRENT_TRANSACTIONS itself, Produce below v12) in a classic group: tests/integration/eos_member.py
    reads the input a poll at a time, read_committed, and writes it upper-cased in transactions that
    commit the group's offsets with it."""
    pytest.importorskip("confluent_kafka")
    broker = rdk_broker
    from .test_transactions_eos import N, PARTITIONS as EOS_PARTITIONS, committed, fill_input, read_committed, \
        run_member, wait_line

    bootstrap, topic = broker.bootstrap_servers, f"rdk-{broker.knobs}"
    broker.create_topic(topic, EOS_PARTITIONS, replication_factor=2)
    broker.create_topic(f"{topic}-out", EOS_PARTITIONS, replication_factor=2)
    values = fill_input(bootstrap, topic)
    member = run_member(bootstrap, f"{topic}-g", f"{topic}-tx", topic, f"{topic}-out", "0")
    try:
        wait_line(member, "DONE")
        assert member.wait(20) == 0
    finally:
        if member.poll() is None:
            member.kill()
            member.wait(10)
    assert sorted(read_committed(bootstrap, f"{topic}-out", N)) == sorted(v.upper() for v in values)
    assert committed(bootstrap, f"{topic}-g", topic) == [N // EOS_PARTITIONS] * EOS_PARTITIONS
    mine = broker.journal(api_key="PRODUCE", client_id="rdkafka")
    assert mine and max(j["api_version"] for j in mine) <= 11
    errors = {p["error_code"] for j in mine for p in j["partitions"]}
    assert errors <= {ErrorCode.none.value, ErrorCode.not_enough_replicas.value}, errors
