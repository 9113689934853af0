"""franz-go (kgo v1.22, kadm v1.19) transactions against a started 3-broker MockBroker.

tests/integration/go/txn.go (``groupconsumers txn SCENARIO BOOTSTRAP TOPIC PARTITIONS``) runs one
scenario and prints one JSON line of what it saw; the test asserts on it and on the broker's own
view (``MockBroker.transactions()``, the partitions' logs, the request journal).

* commit-abort: two kgo transactional producers (``kgo.TransactionalID``) with overlapping
  transactions over 4 partitions, some committed, some aborted (flushed first, so the aborted
  records are in the log): a read_committed consumer sees exactly the committed records, a
  read_uncommitted one every record, neither a control record (franz-go drops them; the logs hold a
  marker per partition and transaction).
* fence: a second producer with the same transactional id fences the first: the first's
  EndTransaction(TryCommit) gets PRODUCER_FENCED from the broker's EndTxn; a producer fenced while
  its transaction is open gets INVALID_PRODUCER_EPOCH on its next Produce (the ABORT marker the
  fence wrote carries the bumped epoch), after which kgo itself refuses the commit with
  OPERATION_NOT_ATTEMPTED (its producer id is failed; it sends no EndTxn).
* timeout: a transaction open past ``kgo.TransactionTimeout`` (1.5 s) is aborted by the coordinator
  (the broker checks every 200 ms: transaction.abort.timed.out.transaction.cleanup.interval.ms); the
  producer's EndTransaction(TryCommit) then gets PRODUCER_FENCED, as Kafka answers an EndTxn with the
  epoch the timeout's fence bumped.
* admin: kadm's DescribeTransactions, ListTransactions (all, a state filter, an id pattern) and
  DescribeProducers against the states the scenario left.

Each run is bounded: the Go program exits 1 after its 60 s deadline, the subprocess times out at 90 s.
Toolchain: go (gotools.py builds the program); skips without it, fails under CI.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from mockbroker import MockBroker
from protocol.errors import ErrorCode

from .gotools import franz_go_binary

TOPIC, PARTITIONS = "fg-txn", 4
RUN_TIMEOUT_S = 90
CONFIG = {"mock.num.brokers": 3, "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}


@pytest.fixture(scope="module")
def franz_go() -> str:
    return franz_go_binary()


@pytest.fixture(params=[2, 0], ids=["tv2", "tv0"])
def broker(request):
    """A 4.x cluster finalizes transaction.version 2 (kgo then sends EndTxn v5, and every end bumps
    the epoch, KIP-890 part 2); at level 0 it runs the classic protocol."""
    with MockBroker(config={**CONFIG, "mock.transaction.version": str(request.param)}) as b:
        b.create_topic(TOPIC, PARTITIONS, replication_factor=2)
        b.tv = request.param
        yield b


def run(franz_go: str, b: MockBroker, scenario: str) -> dict[str, Any]:
    cmd = [franz_go, "txn", scenario, b.bootstrap_servers, TOPIC, str(PARTITIONS)]
    try:
        r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"txn {scenario} did not exit within {RUN_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    report = f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr[-3000:]}"
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 1, report
    out = json.loads(lines[0])
    assert out["ok"] is True and out["scenario"] == scenario, report
    return out


def txns(b: MockBroker) -> dict[str, dict[str, Any]]:
    return {t["transactional_id"]: t for t in b.transactions()}


def test_commit_and_abort_read_committed_and_uncommitted(franz_go, broker):
    out = run(franz_go, broker, "commit-abort")
    committed, aborted = out["committed"], out["aborted"]
    # 4 rounds of 12 + 8 records (2 of the 4 transactions of each producer committed) and an end record per partition
    assert len(committed) == 12 * 2 + 8 * 2 + PARTITIONS and len(aborted) == 12 * 2 + 8 * 2
    assert not set(committed) & set(aborted)
    assert out["read_committed"] == committed
    assert out["read_uncommitted"] == sorted(committed + aborted)
    # the logs hold every record and a COMMIT or ABORT marker per partition and transaction: 8 transactions
    # touched every partition, the last one every partition too; none of the markers reached a consumer
    ends = [broker.partition_state(TOPIC, p) for p in range(PARTITIONS)]
    assert sum(e["log_end_offset"] for e in ends) == len(committed) + len(aborted) + 9 * PARTITIONS
    assert all(e["high_watermark"] == e["log_end_offset"] for e in ends)
    t = txns(broker)
    assert (t["fg-txn-a"]["state"], t["fg-txn-b"]["state"]) == ("CompleteCommit", "CompleteAbort")
    assert t["fg-txn-a"]["partitions"] == t["fg-txn-b"]["partitions"] == []
    # KIP-890 part 2 at level 2: kgo adds partitions by producing (Produce v12+), ends with EndTxn v5;
    # at level 0 it sends AddPartitionsToTxn and older versions
    adds = broker.journal(api_key="ADD_PARTITIONS_TO_TXN")
    produce_versions = {j["api_version"] for j in broker.journal(api_key="PRODUCE")}
    if broker.tv == 2:
        assert not adds and min(produce_versions) >= 12, (len(adds), produce_versions)
    else:
        assert adds and max(produce_versions) <= 11, produce_versions


def test_a_second_producer_fences_the_first(franz_go, broker):
    out = run(franz_go, broker, "fence")
    assert out["a_end_error"]["kafka"] == "PRODUCER_FENCED", out
    assert out["b_produce_error"]["kafka"] == "INVALID_PRODUCER_EPOCH", out
    assert out["b_end_error"]["kafka"] == "OPERATION_NOT_ATTEMPTED", out  # kgo's own refusal
    # epochs, TV0: a 0; b's InitProducerId fences (1) and gets 2; c's fences (3) and gets 4.  TV2: the
    # fence's abort bumps again (server level) and each commit bumps: b fences 1, abort 2, gets 3, commits
    # at 4; c fences 5, abort 6, gets 7, commits at 8
    epoch = 8 if broker.tv == 2 else 4
    assert (out["state"], out["producer_epoch"]) == ("CompleteCommit", epoch)
    t = txns(broker)["fg-fence"]
    assert (t["state"], t["producer_id"], t["producer_epoch"]) == ("CompleteCommit", out["producer_id"], epoch)
    end_versions = {j["api_version"] for j in broker.journal(api_key="END_TXN")}
    assert (min(end_versions) >= 5) == (broker.tv == 2), end_versions
    # what kgo reported is what the broker answered
    end_errors = [j["error_code"] for j in broker.journal(api_key="END_TXN")]
    assert end_errors.count(ErrorCode.producer_fenced.value) == 1, end_errors
    produce_errors = {p["error_code"] for j in broker.journal(api_key="PRODUCE") for p in j["partitions"]}
    assert ErrorCode.invalid_producer_epoch.value in produce_errors, produce_errors


def test_the_coordinator_aborts_a_timed_out_transaction(franz_go, broker):
    out = run(franz_go, broker, "timeout")
    assert out["states"] == ["Ongoing", "CompleteAbort"], out
    # the timeout's fence bumped epoch 0; at TV2 its abort bumps once more
    epoch = 2 if broker.tv == 2 else 1
    assert out["producer_epoch_after_abort"] == epoch
    assert out["end_error"]["kafka"] == "PRODUCER_FENCED", out
    t = txns(broker)["fg-timeout"]
    assert (t["state"], t["timeout_ms"], t["producer_epoch"]) == ("CompleteAbort", 1500, epoch)
    # the two records were aborted: the partition's log has them and the ABORT marker, the LSO is past them
    p0 = broker.partition_state(TOPIC, 0)
    assert p0["log_end_offset"] == 3 and p0["high_watermark"] == 3


def test_kadm_describes_and_lists(franz_go, broker):
    out = run(franz_go, broker, "admin")
    view = txns(broker)
    ids = ("fg-adm-empty", "fg-adm-commit", "fg-adm-abort", "fg-adm-open")
    assert set(view) == set(ids)
    d = out["described"]
    expected = {"fg-adm-empty": ("Empty", {}), "fg-adm-commit": ("CompleteCommit", {}),
                "fg-adm-abort": ("CompleteAbort", {}), "fg-adm-open": ("Ongoing", {TOPIC: [1, 2]})}
    for tid, (state, parts) in expected.items():
        v = view[tid]
        assert (d[tid]["state"], d[tid]["partitions"], d[tid]["error"]) == (state, parts, None), d[tid]
        assert (d[tid]["producer_id"], d[tid]["producer_epoch"], d[tid]["coordinator"], d[tid]["start"]) == (
            v["producer_id"], v["producer_epoch"], v["coordinator"], v["start_timestamp"])
        assert d[tid]["timeout_ms"] == v["timeout_ms"]
    assert d["fg-adm-empty"]["start"] == -1 and d["fg-adm-open"]["start"] > 0
    assert d["fg-adm-unknown"]["error"]["kafka"] == "TRANSACTIONAL_ID_NOT_FOUND"
    # ListTransactions asked of every broker: each id once, from its coordinator
    listed = {tid: (x["state"], x["producer_id"], x["coordinator"]) for tid, x in out["listed"].items()}
    assert listed == {tid: (view[tid]["state"], view[tid]["producer_id"], view[tid]["coordinator"]) for tid in ids}
    assert set(out["listed_ongoing"]) == {"fg-adm-open"}
    assert set(out["listed_complete"]) == {"fg-adm-commit", "fg-adm-abort"}
    assert set(out["listed_pattern"]) == {"fg-adm-empty", "fg-adm-open"}  # KIP-1152, v2
    # DescribeProducers: partitions 0-1 got one record from each of commit and abort (ended: coordinator
    # epoch set, no open transaction); the open transaction wrote 2 records to 1 and 1 to 2
    prods = {int(p): x for p, x in out["producers"].items()}
    assert sorted(prods) == list(range(PARTITIONS))
    assert all(x["error"] is None and x["leader"] == broker.partition_state(TOPIC, p)["leader"]
               for p, x in prods.items())
    pid = {tid: view[tid]["producer_id"] for tid in ids}

    def seen(p: int) -> dict[int, tuple[int, int, int]]:
        return {x["producer_id"]: (x["last_sequence"], x["coordinator_epoch"], x["txn_start_offset"])
                for x in prods[p]["producers"]}

    # an ended transaction's producer: at TV2 its marker carries the bumped epoch, which clears the
    # producer's batch metadata (ProducerStateEntry.maybeUpdateProducerEpoch): last sequence -1
    ended = (-1 if broker.tv == 2 else 0, 0, -1)
    assert seen(0) == {pid["fg-adm-commit"]: ended, pid["fg-adm-abort"]: ended}
    # partition 1: commit's record + marker, abort's record + marker, then the open transaction from offset 4
    assert seen(1) == {pid["fg-adm-commit"]: ended, pid["fg-adm-abort"]: ended,
                       pid["fg-adm-open"]: (1, -1, 4)}
    assert seen(2) == {pid["fg-adm-open"]: (0, -1, 0)}
    assert seen(3) == {}
