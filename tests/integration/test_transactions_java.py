"""Kafka's Java transactional producer and read_committed consumer (kafka-clients 4.4.0) on the broker.

tests/integration/java/src/Transactions.java runs one scenario per subcommand and prints what it saw;
the tests here start it against a real ``MockBroker``, drive it through stdin where a scenario needs
the broker changed in its middle, and check its lines and the broker's state:

1. committed and aborted transactions interleaved over four partitions: read_committed sees exactly the
   committed records in order per partition, read_uncommitted all of them, no control record reaches
   the application and both consumers end at the log end offset (past the last marker);
2. zombie fencing: a second producer with the same transactional.id fences the first;
3. a transaction left open past its transaction.timeout.ms is aborted by the coordinator;
4. the coordinator's broker is stopped in the middle of a transaction; the producer finds the new
   coordinator and commits, read_committed sees every record once;
5. consume-transform-produce with sendOffsetsToTransaction(offsets, groupMetadata()) (AddOffsetsToTxn,
   TxnOffsetCommit), the member SIGKILLed in the middle of a transaction and a successor taking over
   with the same transactional id (which aborts the open transaction) or a fresh one (KIP-447: the
   open transaction ends at its timeout, OffsetFetch answers UNSTABLE_OFFSET_COMMIT until then); the
   output read_committed is every input once, the group's committed offsets are the input's ends.

The client speaks transaction version 1 here (the broker finalizes no transaction.version); every
assertion holds at version 2 too (only exception classes are allowed to differ, as Kafka's do).
Skips without java, javac or mvn, fails under CI (see javatools.py).
"""

from __future__ import annotations

import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable

import pytest

from mockbroker import MockBroker
from tests.polling import until

from .javatools import JAVA_TIMEOUT_S, tail
from .javatools import java_classpath as _java_classpath

PARTITIONS = 4
STATE_TIMEOUT_S = 20.0


@pytest.fixture(scope="module")
def java_classpath() -> str:
    return _java_classpath("Transactions")


@pytest.fixture(scope="module")
def broker():
    cfg = {"num.partitions": PARTITIONS, "transaction.abort.timed.out.transaction.cleanup.interval.ms": 100,
           "group.initial.rebalance.delay.ms": 0,
           # a KIP-848 static member killed without leaving is replaced once its session expires
           "group.consumer.session.timeout.ms": 6000, "group.consumer.heartbeat.interval.ms": 500}
    with MockBroker(config=cfg) as b:
        yield b


# -- running the program ---------------------------------------------------------------------------
def java_cmd(classpath: str, *args: object) -> list[str]:
    return [shutil.which("java") or "java", "-cp", classpath, "Transactions", *map(str, args)]


def run(classpath: str, *args: object) -> list[str]:
    """The program's stdout lines; fails the test on a non-zero exit or a timeout."""
    try:
        r = subprocess.run(java_cmd(classpath, *args), check=False, capture_output=True, text=True,
                           timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"Transactions {args[0]} timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    assert r.returncode == 0, f"{args}: exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
    return r.stdout.splitlines()


class Interactive:
    """The program running in the background: its lines as they come, GO on its stdin."""

    def __init__(self, classpath: str, *args: object) -> None:
        self.args = args
        self.proc = subprocess.Popen(java_cmd(classpath, *args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, prefix: str, timeout_s: float = JAVA_TIMEOUT_S) -> str:
        """The next line starting with ``prefix`` (the lines before it are kept in ``seen``)."""
        end = time.monotonic() + timeout_s
        while True:
            try:
                line = self.lines.get(timeout=max(end - time.monotonic(), 0.01))
            except queue.Empty:
                pytest.fail(f"no {prefix!r} from {self.args} in {timeout_s}s; so far {self.seen}")
            if line is None:
                pytest.fail(f"{self.args} ended without {prefix!r}: {self.seen}\nstderr:\n{self.stderr()}")
            self.seen.append(line)
            if line.startswith(prefix):
                return line

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("GO\n")
        self.proc.stdin.flush()

    def finish(self) -> list[str]:
        """Every line after the ones expected; the exit status must be 0."""
        try:
            self.proc.wait(timeout=JAVA_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"{self.args} did not end in {JAVA_TIMEOUT_S}s: {self.seen}")
        rest = []
        while (line := self.lines.get(timeout=5)) is not None:
            rest.append(line)
        self.seen.extend(rest)
        assert self.proc.returncode == 0, f"{self.args}: exit {self.proc.returncode} {self.seen}\n{self.stderr()}"
        return rest

    def stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return "(running)"
        return tail(self.proc.stderr.read(), 40)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # SIGKILL
        self.proc.wait(timeout=10)


def field(lines: list[str], key: str) -> str:
    found = [line.split(" ", 1)[1] if " " in line else "" for line in lines if line.split(" ", 1)[0] == key]
    assert len(found) == 1, f"one {key} line expected: {lines}"
    return found[0]


def consume(classpath: str, topic: str, isolation: str, bootstrap: str, partitions: int = PARTITIONS
            ) -> tuple[dict[int, list[str]], dict[int, int]]:
    """Every record of the topic read by the Java consumer: values and final position per partition."""
    lines = run(classpath, "consume", bootstrap, topic, partitions, isolation)
    records, positions = {}, {}
    for line in lines:
        kind, *rest = line.split(" ")
        if kind == "RECORDS":
            records[int(rest[0])] = [v for v in rest[1:] if v]
        elif kind == "POSITION":
            positions[int(rest[0])] = int(rest[1])
    assert sorted(records) == sorted(positions) == list(range(partitions)) and lines[-1] == "DONE", lines
    return records, positions


# -- the broker's view -------------------------------------------------------------------------------
def txn_state(broker: MockBroker, tid: str) -> tuple[str, str | None]:
    """The coordinator's state of ``tid`` and its pending transition (None when there is none)."""
    def get(c) -> tuple[str, str | None]:
        md = c.txn.txn_manager.transactions.get(tid)
        if md is None:
            return "-", None
        return md.state.state_name, md.pending_state.state_name if md.pending_state else None

    return broker.call(get)


def wait_until(cond: Callable[[], bool], timeout_s: float, what: Callable[[], str]) -> None:
    until(cond, what, timeout_s, step=0.02)


def wait_complete(broker: MockBroker, tid: str, state: str = "CompleteCommit") -> None:
    """Until the coordinator wrote every marker of ``tid``'s last transaction (EndTxn is answered
    before that, as in Kafka, so a read_committed read could otherwise stop short at the LSO)."""
    wait_until(lambda: txn_state(broker, tid) == (state, None), STATE_TIMEOUT_S,
               lambda: f"{tid} in {state}: {txn_state(broker, tid)}")


def log_ends(broker: MockBroker, topic: str, partitions: int = PARTITIONS) -> dict[int, int]:
    return {p: broker.log_end_offset(topic, p) for p in range(partitions)}


# -- 1. interleaved commits and aborts -------------------------------------------------------------
def txn_values(name: str, p: int) -> list[str]:
    return [f"{name}-{p}-{i}" for i in range(4)]


def test_interleaved_commits_and_aborts(java_classpath, broker):
    topic, tid = "java-txn-interleaved", "java-interleaved"
    broker.create_topic(topic, PARTITIONS)
    lines = run(java_classpath, "interleaved", broker.bootstrap_servers, topic, PARTITIONS, tid)
    assert lines == ["TXN c1 COMMITTED", "TXN a1 ABORTED", "TXN c2 COMMITTED", "TXN a2 ABORTED",
                     "TXN c3 COMMITTED", "DONE"], lines
    wait_complete(broker, tid)
    ends = log_ends(broker, topic)
    # 5 transactions x 4 records per partition, and one marker each: 25 offsets per partition
    assert ends == {p: 25 for p in range(PARTITIONS)}, ends

    committed, positions = consume(java_classpath, topic, "read_committed", broker.bootstrap_servers)
    assert committed == {p: txn_values("c1", p) + txn_values("c2", p) + txn_values("c3", p)
                         for p in range(PARTITIONS)}
    assert positions == ends  # past the last COMMIT marker
    everything, positions = consume(java_classpath, topic, "read_uncommitted", broker.bootstrap_servers)
    assert everything == {p: [v for name in ("c1", "a1", "c2", "a2", "c3") for v in txn_values(name, p)]
                          for p in range(PARTITIONS)}
    assert positions == ends


# -- 2. zombie fencing ------------------------------------------------------------------------------
def test_second_producer_fences_the_first(java_classpath, broker):
    topic, tid = "java-txn-fence", "java-fence"
    broker.create_topic(topic, PARTITIONS)
    lines = run(java_classpath, "fence", broker.bootstrap_servers, topic, tid)
    assert field(lines, "INIT_B") == "OK" and field(lines, "COMMIT_B") == "OK", lines
    # The zombie's late Produce is answered INVALID_PRODUCER_EPOCH (the partition saw B's abort marker
    # at a newer epoch: ProducerAppendInfo; a PRODUCER_FENCED verification answer is mapped to it too,
    # AddPartitionsToTxnManager.scala); the client makes that an abortable error (handleFailedBatch),
    # which commitTransaction rethrows as is (maybeFailWithError); the abort then reaches the
    # coordinator with the old epoch and its PRODUCER_FENCED is fatal (EndTxnHandler: fatalError).
    assert field(lines, "SEND_A") == "InvalidProducerEpochException", lines
    assert field(lines, "COMMIT_A") == "InvalidProducerEpochException", lines
    assert field(lines, "ABORT_A") == "ProducerFencedException", lines
    wait_complete(broker, tid)
    committed, _ = consume(java_classpath, topic, "read_committed", broker.bootstrap_servers)
    assert committed == {0: [], 1: ["b-committed"], 2: [], 3: []}
    everything, _ = consume(java_classpath, topic, "read_uncommitted", broker.bootstrap_servers)
    assert everything[0] == ["a-open"], everything  # aborted by B's initTransactions; "a-late" never written


# -- 3. the coordinator aborts a transaction past its timeout ---------------------------------------
TXN_TIMEOUT_MS = 1000


def test_timed_out_transaction_is_aborted(java_classpath, broker):
    topic, tid = "java-txn-timeout", "java-timeout"
    broker.create_topic(topic, PARTITIONS)
    prog = Interactive(java_classpath, "timeout", broker.bootstrap_servers, topic, PARTITIONS, tid, TXN_TIMEOUT_MS)
    try:
        prog.expect("OPEN")
        opened = time.monotonic()
        assert txn_state(broker, tid) == ("Ongoing", None)
        wait_complete(broker, tid, "CompleteAbort")
        waited = time.monotonic() - opened
        assert waited < TXN_TIMEOUT_MS / 1000 + 5.0, waited
        # on the broker's clock: the abort came once the timeout had passed, at a cleanup round (every
        # 100 ms) soon after, not before (the tolerance is for the markers and a loaded machine)
        started, ended = broker.call(lambda c: (c.txn.txn_manager.transactions[tid].txn_start_timestamp,
                                                c.txn.txn_manager.transactions[tid].txn_last_update_timestamp))
        assert TXN_TIMEOUT_MS <= ended - started < TXN_TIMEOUT_MS + 2000, (started, ended)
        prog.go()
        commit = field([prog.expect("COMMIT")], "COMMIT")
        prog.finish()
    finally:
        prog.kill()
    # the coordinator bumped the epoch when it aborted (prepareFenceProducerEpoch); the producer's EndTxn
    # with its old epoch is answered PRODUCER_FENCED, which kafka-clients makes a fatal
    # ProducerFencedException (TransactionManager.EndTxnHandler); at transaction version 2 the client
    # may see it as InvalidProducerEpochException instead
    if broker.call(lambda c: c.txn.txn_manager.config.transaction_version) < 2:
        assert commit == "ProducerFencedException", prog.seen
    else:
        assert commit in ("ProducerFencedException", "InvalidProducerEpochException"), prog.seen
    committed, positions = consume(java_classpath, topic, "read_committed", broker.bootstrap_servers)
    assert committed == {p: [] for p in range(PARTITIONS)}
    assert positions == log_ends(broker, topic)
    everything, _ = consume(java_classpath, topic, "read_uncommitted", broker.bootstrap_servers)
    assert everything == {p: [f"t-{p}"] for p in range(PARTITIONS)}  # written, then aborted


# -- 4. the coordinator moves in the middle of a transaction ----------------------------------------
@pytest.fixture
def cluster():
    config = {"mock.num.brokers": 3, "num.partitions": PARTITIONS, "default.replication.factor": 3,
              "mock.replication.lag.ms": 20}
    with MockBroker(config=config) as b:
        yield b


def test_coordinator_moves_mid_transaction(java_classpath, cluster):
    topic, tid = "java-txn-move", "java-move"
    cluster.create_topic(topic, PARTITIONS, replication_factor=3)
    prog = Interactive(java_classpath, "move", cluster.bootstrap_servers, topic, PARTITIONS, tid)
    try:
        prog.expect("SENT")
        old = cluster.call(lambda c: c.txn.find_coordinator(tid).node_id)
        assert txn_state(cluster, tid) == ("Ongoing", None)
        cluster.stop_broker(old)
        new = cluster.call(lambda c: c.txn.find_coordinator(tid).node_id)
        assert new != old
        prog.go()
        commit = field([prog.expect("COMMIT")], "COMMIT")
        assert commit == "OK", prog.seen
        prog.finish()
    finally:
        prog.kill()
    wait_complete(cluster, tid)
    # read with the old coordinator still down: each record once, in send order
    committed, positions = consume(java_classpath, topic, "read_committed", cluster.bootstrap_servers)
    assert committed == {p: [f"m1-{p}", f"m2-{p}"] for p in range(PARTITIONS)}
    assert positions == log_ends(cluster, topic)
    # the producer's EndTxn went to the new coordinator (and only there)
    end_txns = cluster.journal(api_key=26)
    assert [(r["broker"], r["error_code"]) for r in end_txns] == [(new, 0)], end_txns


# -- 5. consume-transform-produce --------------------------------------------------------------------
N_INPUT, PER_TXN, CRASH_AFTER = 200, 10, 5
CTP_TXN_TIMEOUT_MS = 5000
UNSTABLE_OFFSET_COMMIT = 88


def produce_input(bootstrap: str, topic: str) -> None:
    """Values "in-0".."in-<N_INPUT-1>" (record i to partition i % PARTITIONS), with kafka-python."""
    kafka = pytest.importorskip("kafka")
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap)
    futures = [p.send(topic, f"in-{i}".encode(), partition=i % PARTITIONS) for i in range(N_INPUT)]
    p.flush(30)
    p.close()
    assert all(f.succeeded() for f in futures)


@pytest.mark.parametrize(("successor", "protocol"), [("same-transactional-id", "classic"),
                                                     ("fresh-transactional-id", "classic"),
                                                     ("same-transactional-id", "consumer")])
def test_consume_transform_produce_survives_a_killed_member(java_classpath, broker, successor, protocol):
    """The successor is the same static group member (group.instance.id) with the killed one's
    transactional id -- its initTransactions aborts the open transaction at once -- or with a fresh
    one (KIP-447): then the killed member's transaction stays open until its transaction.timeout.ms
    and the successor's OffsetFetch (require_stable) is answered UNSTABLE_OFFSET_COMMIT meanwhile.
    With group.protocol=consumer (KIP-848) TxnOffsetCommit carries the member epoch as generation."""
    name = f"{successor}-{protocol}"
    source, sink, group = f"java-ctp-in-{name}", f"java-ctp-out-{name}", f"java-ctp-{name}"
    first_tid = f"java-ctp-{name}-1"
    second_tid = first_tid if successor == "same-transactional-id" else f"java-ctp-{name}-2"
    broker.create_topic(source, PARTITIONS)
    broker.create_topic(sink, PARTITIONS)
    produce_input(broker.bootstrap_servers, source)
    inputs, _ = consume(java_classpath, source, "read_uncommitted", broker.bootstrap_servers)
    assert sum(map(len, inputs.values())) == N_INPUT

    def member(tid: str, crash_after: int) -> Interactive:
        # KIP-848: a static member killed without leaving holds its instance id until its session
        # expires (the successor would get UNRELEASED_INSTANCE_ID, fatal to the Java consumer), so the
        # consumer-protocol members are dynamic: the killed one's partitions move when it times out
        instance = "member" if protocol == "classic" else "-"
        return Interactive(java_classpath, "ctp", broker.bootstrap_servers, source, sink, group, tid, instance,
                           PER_TXN, crash_after, CTP_TXN_TIMEOUT_MS, protocol)

    first = member(first_tid, CRASH_AFTER)
    try:
        in_flight = int(field([first.expect("MIDTXN")], "MIDTXN"))
        assert [line for line in first.seen if line.startswith("TXN")] == [f"TXN {PER_TXN}"] * CRASH_AFTER
        assert txn_state(broker, first_tid) == ("Ongoing", None)
    finally:
        first.kill()
    assert in_flight > 0
    killed_at_ms = broker.call(lambda c: c.clock.monotonic_ms())

    second = member(second_tid, -1)
    try:
        done = int(field([second.expect("DONE")], "DONE"))
        second.finish()
    finally:
        second.kill()
    # the successor redid the killed member's open transaction: its records, as its offsets, were aborted
    assert done == N_INPUT - CRASH_AFTER * PER_TXN, second.seen
    wait_complete(broker, second_tid)
    if second_tid != first_tid:
        wait_complete(broker, first_tid, "CompleteAbort")  # by the coordinator, on the timeout
        unstable = [r for r in broker.journal(api_key=9) if r["received_clock_ns"] // 1_000_000 >= killed_at_ms
                    and any(q["error_code"] == UNSTABLE_OFFSET_COMMIT for q in r["partitions"])]
        assert unstable, "the successor never waited for the killed member's transactional offsets"

    committed, positions = consume(java_classpath, sink, "read_committed", broker.bootstrap_servers)
    assert committed == {p: [v.upper() for v in vs] for p, vs in inputs.items()}
    assert positions == log_ends(broker, sink)
    everything, _ = consume(java_classpath, sink, "read_uncommitted", broker.bootstrap_servers)
    assert sum(map(len, everything.values())) == N_INPUT + in_flight  # the aborted ones are in the log
    assert broker.committed_offsets(group) == {(source, p): broker.log_end_offset(source, p)
                                               for p in range(PARTITIONS)}
    assert broker.group(group)["type"] == protocol
