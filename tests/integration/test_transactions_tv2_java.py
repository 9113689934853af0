"""Kafka's Java producer (kafka-clients 4.4.0) runs KIP-890 part 2 against the broker when it
finalizes transaction.version 2, and falls back to the TV1 protocol when it does not.

tests/integration/java/src/TxnTv2.java commits, aborts and commits a transaction of 10 records
over two partitions.  At transaction.version 2 (the default for Kafka 4.x releases) the client
sends no AddPartitionsToTxn: its Produce v12 requests add the partitions, and EndTxn v5 bumps
the epoch at every end (three ends: the epoch InitProducerId gave + 3).  With
mock.transaction.version=0 the same program sends AddPartitionsToTxn, Produce at v11 or below
and EndTxn below v5, and the epoch stays.  Either way a read_committed consumer sees the two
committed transactions only.  Skips (fails under CI) without java, javac and mvn (javatools).
"""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from mockbroker import MockBroker

from .javatools import JAVA_TIMEOUT_S, tail
from .javatools import java_classpath as _java_classpath

kafka = pytest.importorskip("kafka")


@pytest.fixture(scope="module")
def java_classpath() -> str:
    return _java_classpath("TxnTv2")


def read_committed(bootstrap: str, topic: str, expect: int, deadline_s: float = 20.0) -> list[str]:
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                            isolation_level="read_committed")
    try:
        c.assign([kafka.TopicPartition(topic, p) for p in (0, 1)])
        got: list[str] = []
        end = time.monotonic() + deadline_s
        while len(got) < expect and time.monotonic() < end:
            for msgs in c.poll(timeout_ms=300).values():
                got.extend(m.value.decode() for m in msgs)
        for msgs in c.poll(timeout_ms=300).values():  # one more poll: nothing extra may come
            got.extend(m.value.decode() for m in msgs)
        return sorted(got)
    finally:
        c.close()


@pytest.mark.parametrize("transaction_version", ["2", "0"])
def test_java_producer_follows_the_finalized_transaction_version(java_classpath: str, transaction_version: str):
    tv2 = transaction_version == "2"
    topic, tid = f"java-tv{transaction_version}", f"java-tv{transaction_version}-txn"
    with MockBroker(config={"mock.transaction.version": transaction_version}) as broker:
        broker.create_topic(topic, 2)
        cmd = [shutil.which("java") or "java", "-cp", java_classpath, "TxnTv2", broker.bootstrap_servers, topic, tid]
        try:
            r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"TxnTv2 timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
        report = f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
        assert r.returncode == 0, report
        assert r.stdout.split() == ["COMMIT", "c1", "ABORT", "a1", "COMMIT", "c2", "DONE"], report

        mine = broker.journal(client_id=tid)
        by_api: dict[str, list[int]] = {}
        for rec in mine:
            by_api.setdefault(rec["api"], []).append(rec["api_version"])
        assert all(p["error_code"] == 0 for rec in mine if rec["api"] in ("PRODUCE", "END_TXN")
                   for p in rec["partitions"]), by_api
        init = next(rec for rec in mine if rec["api"] == "INIT_PRODUCER_ID")
        assert init["error_code"] == 0
        md = broker.call(lambda cl: cl.txn.txn_manager.transactions[tid])
        if tv2:
            assert "ADD_PARTITIONS_TO_TXN" not in by_api, by_api
            assert min(by_api["PRODUCE"]) >= 12 and set(by_api["END_TXN"]) == {5}, by_api
            assert (md.state.state_name, md.producer_epoch) == ("CompleteCommit", 3)  # epoch 0 + three ends
        else:
            assert by_api.get("ADD_PARTITIONS_TO_TXN"), by_api
            assert max(by_api["PRODUCE"]) <= 11 and max(by_api["END_TXN"]) <= 4, by_api
            assert (md.state.state_name, md.producer_epoch) == ("CompleteCommit", 0)

        def state(cl):
            return [(p.log.last_stable_offset == p.log.log_end_offset, [a.producer_id for a in p.log.aborted_txns])
                    for p in (cl.metadata.partition(topic, i) for i in (0, 1))]

        assert broker.call(state) == [(True, [md.producer_id])] * 2  # a1 aborted on both partitions
        committed = sorted(f"{prefix}-{i}" for prefix in ("c1", "c2") for i in range(10))
        assert read_committed(broker.bootstrap_servers, topic, len(committed)) == committed
