"""Exactly-once consume-transform-produce against the broker (AddOffsetsToTxn, TxnOffsetCommit,
the markers on __consumer_offsets): input offsets and output records commit together; a member
killed mid-transaction is fenced by its successor (same transactional id), its transaction aborted;
the output after recovery holds every input exactly once and the group's offsets reach the end."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from mockbroker import MockBroker

ck = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")

MEMBER = Path(__file__).with_name("eos_member.py")
N = 120
PARTITIONS = 2


@pytest.fixture(scope="module")
def broker():
    with MockBroker(config={"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 5,
                            "transaction.state.log.num.partitions": 5}) as b:
        yield b


def fill_input(bootstrap: str, topic: str) -> list[bytes]:
    p = ck.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    values = [f"rec-{i:03d}".encode() for i in range(N)]
    for i, v in enumerate(values):
        p.produce(topic, v, partition=i % PARTITIONS)
    assert p.flush(30) == 0
    return values


def read_committed(bootstrap: str, topic: str, expect: int, deadline_s: float = 20.0) -> list[bytes]:
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}", "isolation.level":
                     "read_committed", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([ck.TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: list[bytes] = []
    end = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end:
            msgs = c.consume(num_messages=500, timeout=0.3)
            got.extend(m.value() for m in msgs if m.error() is None)
            if len(got) >= expect and not msgs:
                break
        return got
    finally:
        c.close()


def committed(bootstrap: str, group: str, topic: str) -> list[int]:
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return [tp.offset for tp in c.committed([ck.TopicPartition(topic, p) for p in range(PARTITIONS)], 10)]
    finally:
        c.close()


def run_member(bootstrap: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(MEMBER), bootstrap, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_line(proc: subprocess.Popen, prefix: str, deadline_s: float = 40.0) -> list[str]:
    """The member's lines up to the first starting with ``prefix`` (bounded)."""
    lines: list[str] = []
    end = time.monotonic() + deadline_s
    assert proc.stdout is not None
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.strip())
        if line.startswith(prefix):
            return lines
    proc.kill()
    raise AssertionError(f"no {prefix!r} from the member: {lines}\n{proc.stderr.read() if proc.stderr else ''}")


def test_killed_member_is_fenced_and_the_output_has_every_input_once(broker):
    bootstrap = broker.bootstrap_servers
    broker.create_topic("eos-in", PARTITIONS)
    broker.create_topic("eos-out", PARTITIONS)
    values = fill_input(bootstrap, "eos-in")
    first = run_member(bootstrap, "eos-g", "eos-tx", "eos-in", "eos-out", "40")
    try:
        lines = wait_line(first, "HANGING")
        assert any(line.startswith("COMMITTED") for line in lines)
        # the hung transaction's records are in the log, uncommitted; its offsets wait for the marker
        state = broker.call(lambda cl: cl.txn.txn_manager.transactions["eos-tx"].state.state_name)
        assert state == "Ongoing"
    finally:
        first.kill()
        first.wait(10)
    second = run_member(bootstrap, "eos-g", "eos-tx", "eos-in", "eos-out", "0")
    try:
        lines = wait_line(second, "DONE")
        assert second.wait(20) == 0
    finally:
        if second.poll() is None:
            second.kill()
    out = read_committed(bootstrap, "eos-out", N)
    assert sorted(out) == sorted(v.upper() for v in values)  # every input once: none lost, none twice
    assert committed(bootstrap, "eos-g", "eos-in") == [N // PARTITIONS] * PARTITIONS
    # the killed member's epoch was fenced and its transaction aborted (an ABORT marker in the output)
    aborted = broker.call(lambda cl: sum(len(cl.metadata.partition("eos-out", p).log.aborted_txns)
                                         for p in range(PARTITIONS)))
    assert aborted >= 1


def test_kafka_python_send_offsets_commit_and_abort(broker):
    """kafka-python 3.x: sendOffsetsToTransaction with the consumer's group metadata; an aborted
    transaction leaves the group's offsets where the last commit put them."""
    from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition

    bootstrap = broker.bootstrap_servers
    broker.create_topic("kp-eos-in", 1)
    broker.create_topic("kp-eos-out", 1)
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-eos")
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id="kp-eos-g", enable_auto_commit=False)
    try:
        p.init_transactions()
        tp = TopicPartition("kp-eos-in", 0)
        for offset, commit in ((5, True), (9, False), (12, True), (20, False)):
            p.begin_transaction()
            p.send("kp-eos-out", f"upto-{offset}".encode(), partition=0)
            p.send_offsets_to_transaction({tp: OffsetAndMetadata(offset, "", -1)}, "kp-eos-g")
            if commit:
                p.commit_transaction()
            else:
                p.abort_transaction()
            assert c.committed(tp) == (offset if commit else {5: 5, 9: 5, 12: 12, 20: 12}[offset])
    finally:
        p.close()
        c.close()
