"""KIP-664's admin APIs over a real socket against a 3-broker MockBroker: DescribeTransactions,
ListTransactions (state, producer id, duration and transactional id pattern filters) and
DescribeProducers, after ongoing, committed, aborted and empty transactions and idempotent
produces.  Time runs on a ManualClock, so start times and durations are exact."""

from __future__ import annotations

import struct
from typing import NamedTuple

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey
from .test_txn_wire import (
    add_partitions,
    end_txn,
    find_txn_coordinator,
    init_pid,
    produce,
)

E = ErrorCode
TOPIC = "adm"
T0 = 1_700_000_000_000  # the ManualClock's wall time at start
IDS = ("adm-ongoing", "adm-commit", "adm-abort", "adm-empty")


class Cluster:
    """The broker, a client per node, and what the scenario did."""

    def __init__(self, b: MockBroker) -> None:
        self.b = b
        self.clients = [RawKafkaClient.connect(a) for a in b.bootstrap_servers.split(",")]
        self.coord: dict[str, int] = {}
        self.pids: dict[str, tuple[int, int]] = {}
        self.started: dict[str, int] = {}

    def leader(self, partition: int) -> RawKafkaClient:
        return self.clients[self.b.partition_state(TOPIC, partition)["leader"]]

    def coordinator(self, tid: str) -> RawKafkaClient:
        if tid not in self.coord:
            err, node = find_txn_coordinator(self.clients[0], tid)
            assert err == E.none and node >= 0
            self.coord[tid] = node
        return self.clients[self.coord[tid]]

    def begin(self, tid: str, partitions: tuple[int, ...], records: int = 2) -> None:
        c = self.coordinator(tid)
        err, pid, epoch = init_pid(c, tid, timeout=30000)
        assert err == E.none
        self.pids[tid] = (pid, epoch)
        if not partitions:
            return
        self.started[tid] = self.b.call(lambda cl: cl.clock.time_ms())
        assert set(add_partitions(c, tid, pid, epoch, {TOPIC: list(partitions)}).values()) == {E.none}
        for p in partitions:
            r = produce(self.leader(p), TOPIC, pid, epoch, 0, records, transactional=True, partition=p, tid=tid)
            assert r.error_code == E.none

    def end(self, tid: str, commit: bool) -> None:
        pid, epoch = self.pids[tid]
        assert end_txn(self.coordinator(tid), tid, pid, epoch, commit) == E.none

    def close(self) -> None:
        for c in self.clients:
            c.close()


@pytest.fixture(scope="module")
def cluster():
    """adm-ongoing: open on partitions 0 and 1; adm-commit: committed on 2; adm-abort: aborted on
    0; adm-empty: only initialized; 1 s of clock between the steps.  Partitions have 2 replicas of
    3 brokers, so each has a broker that holds none."""
    with MockBroker(config={"mock.num.brokers": 3}, clock=ManualClock(start_wall_ms=T0)) as b:
        b.create_topic(TOPIC, 3, replication_factor=2)
        c = Cluster(b)
        try:
            c.begin("adm-empty", ())
            b.advance(1000)
            c.begin("adm-commit", (2,), records=3)
            b.advance(1000)
            c.end("adm-commit", True)
            b.advance(1000)
            c.begin("adm-abort", (0,))
            b.advance(1000)
            c.end("adm-abort", False)
            b.advance(1000)
            c.begin("adm-ongoing", (0, 1))
            b.advance(1000)
            yield c
        finally:
            c.close()


class TxnState(NamedTuple):
    error_code: ErrorCode
    transactional_id: str
    transaction_state: str
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    producer_id: int
    producer_epoch: int
    topics: list[tuple[str, list[int]]]


class _Reader:
    """DescribeTransactionsResponse v0 read by hand: kio's reader refuses the TransactionStartTimeMs
    of -1 that Kafka (and this broker) answer for an id with no transaction started ("Cannot parse
    negative timestamp"), so the response is read field by field here, in the schema's order."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def fixed(self, fmt: str) -> int:
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(v)

    def uvarint(self) -> int:
        out = shift = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            out |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return out

    def string(self) -> str:
        n = self.uvarint() - 1
        self.pos += n
        return self.data[self.pos - n:self.pos].decode()

    def array(self, item):
        return [item() for _ in range(self.uvarint() - 1)]

    def no_tags(self) -> None:
        assert self.uvarint() == 0


def describe(c: RawKafkaClient, *tids: str) -> dict[str, TxnState]:
    corr = c.send(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": list(tids)})
    r = _Reader(c.recv_frame())
    assert r.fixed(">i") == corr
    r.no_tags()  # response header v1
    r.fixed(">i")  # throttle time

    def topic() -> tuple[str, list[int]]:
        name, parts = r.string(), r.array(lambda: r.fixed(">i"))
        r.no_tags()
        return name, parts

    def state() -> TxnState:
        s = TxnState(ErrorCode(r.fixed(">h")), r.string(), r.string(), r.fixed(">i"), r.fixed(">q"), r.fixed(">q"),
                     r.fixed(">h"), r.array(topic))
        r.no_tags()
        return s

    states = r.array(state)
    r.no_tags()
    assert r.pos == len(r.data)
    return {s.transactional_id: s for s in states}


def list_txns(c: RawKafkaClient, version: int = 2, states=(), pids=(), duration=-1, pattern=None):
    body = {"state_filters": list(states), "producer_id_filters": list(pids)}
    if version >= 1:
        body["duration_filter"] = duration
    if version >= 2:
        body["transactional_id_pattern"] = pattern
    r = c.request(ApiKey.LIST_TRANSACTIONS, version, body)
    return r.error_code, {(s.transactional_id, s.producer_id, s.transaction_state) for s in r.transaction_states}, \
        list(r.unknown_state_filters)


def list_all(cluster: Cluster, **kw) -> set[tuple[str, int, str]]:
    """Every broker's listing, merged as an admin client does (each id on its coordinator only)."""
    out: set[tuple[str, int, str]] = set()
    for node, c in enumerate(cluster.clients):
        err, listed, _ = list_txns(c, **kw)
        assert err == E.none
        assert all(cluster.coord.get(tid, node) == node for tid, _, _ in listed), (node, listed)
        out |= listed
    return out


class TestDescribeTransactions:
    def test_states_as_the_coordinator_holds_them(self, cluster):
        expected = {"adm-ongoing": ("Ongoing", [(TOPIC, [0, 1])]), "adm-commit": ("CompleteCommit", []),
                    "adm-abort": ("CompleteAbort", []), "adm-empty": ("Empty", [])}
        for tid, (state, topics) in expected.items():
            (s,) = describe(cluster.coordinator(tid), tid).values()
            assert s.error_code == E.none, tid
            assert (s.transaction_state, s.topics) == (state, topics)
            assert (s.producer_id, s.producer_epoch) == cluster.pids[tid]
            assert s.transaction_timeout_ms == 30000
            # the start of the last transaction (kept by Complete*), -1 when none was started
            assert s.transaction_start_time_ms == cluster.started.get(tid, -1), tid
        assert cluster.started["adm-ongoing"] == T0 + 5000

    def test_wrong_coordinator_unknown_and_empty_ids(self, cluster):
        tid = "adm-ongoing"
        other = cluster.clients[(cluster.coord[tid] + 1) % 3]
        got = describe(other, tid)
        assert got[tid].error_code == E.not_coordinator and got[tid].transaction_state == ""
        # several ids in one request, each answered on its own
        unknown = next(f"adm-unknown-{i}" for i in range(100)
                       if find_txn_coordinator(cluster.clients[0], f"adm-unknown-{i}")[1] == cluster.coord[tid])
        got = describe(cluster.coordinator(tid), tid, unknown, "")
        assert {k: s.error_code for k, s in got.items()} == {
            tid: E.none, unknown: E.transactional_id_not_found, "": E.invalid_request}
        # the schema's defaults beside the error, as Kafka 4.4.0 answers (the differential tester)
        assert got[unknown][2:] == ("", 0, 0, 0, 0, [])

    def test_matches_the_control_plane_view(self, cluster):
        view = {t["transactional_id"]: t for t in cluster.b.transactions()}
        assert set(view) == set(IDS)
        for tid in IDS:
            (s,) = describe(cluster.coordinator(tid), tid).values()
            v = view[tid]
            assert (v["state"], v["producer_id"], v["producer_epoch"], v["timeout_ms"], v["coordinator"]) == (
                s.transaction_state, s.producer_id, s.producer_epoch, 30000, cluster.coord[tid])
            assert v["partitions"] == [(t, p) for t, ps in s.topics for p in ps]
            assert v["pending_state"] is None


class TestListTransactions:
    def test_each_broker_lists_what_it_coordinates(self, cluster):
        expected = {(tid, cluster.pids[tid][0], state) for tid, state in zip(
            IDS, ("Ongoing", "CompleteCommit", "CompleteAbort", "Empty"), strict=True)}
        for v in (0, 1, 2):
            assert list_all(cluster, version=v) == expected

    def test_state_and_producer_id_filters(self, cluster):
        assert {x[0] for x in list_all(cluster, states=["Ongoing"])} == {"adm-ongoing"}
        assert {x[0] for x in list_all(cluster, states=["CompleteCommit", "CompleteAbort"])} == {
            "adm-commit", "adm-abort"}
        pid = cluster.pids["adm-abort"][0]
        assert {x[0] for x in list_all(cluster, pids=[pid, 987654])} == {"adm-abort"}
        assert list_all(cluster, pids=[pid], states=["Ongoing"]) == set()
        # names that are no state come back, and match nothing
        node = cluster.coord["adm-ongoing"]
        err, listed, unknown = list_txns(cluster.clients[node], version=0, states=["Ongoing", "Bogus", "ongoing"])
        assert (err, {x[0] for x in listed}, sorted(unknown)) == (E.none, {"adm-ongoing"}, ["Bogus", "ongoing"])

    def test_duration_filter(self, cluster):
        # now = T0 + 6000; adm-ongoing started at T0 + 5000: listed only past a duration below 1000 ms
        assert cluster.b.call(lambda cl: cl.clock.time_ms()) == T0 + 6000
        started = {x[0] for x in list_all(cluster, version=1, duration=999)}
        assert "adm-ongoing" in started and "adm-abort" in started  # adm-abort started at T0 + 3000
        assert "adm-ongoing" not in {x[0] for x in list_all(cluster, version=1, duration=1000)}
        assert "adm-abort" not in {x[0] for x in list_all(cluster, version=1, duration=3000)}
        assert "adm-abort" in {x[0] for x in list_all(cluster, version=1, duration=2999)}
        # Kafka compares with txnStartTimestamp whatever the state: -1 (never started) is always old enough
        assert {x[0] for x in list_all(cluster, version=1, duration=10**9)} == {"adm-empty"}

    def test_transactional_id_pattern(self, cluster):
        assert {x[0] for x in list_all(cluster, pattern="adm-(ongoing|commit)")} == {"adm-ongoing", "adm-commit"}
        assert list_all(cluster, pattern="adm") == set()  # the whole id must match
        assert {x[0] for x in list_all(cluster, pattern="")} == set(IDS)  # empty: no filter
        assert {x[0] for x in list_all(cluster, pattern=".*t", states=["CompleteAbort", "Ongoing"])} == {
            "adm-abort"}
        for c in cluster.clients:
            assert list_txns(c, pattern="adm-[")[:2] == (E.invalid_regular_expression, set())

    def test_a_backtracking_pattern_cannot_stall_the_broker(self, cluster):
        """RE2 (as Kafka's RE2/J) matches in linear time: a pattern that makes a backtracking engine
        take 2^n steps over this id is answered at once (with Python's re this request would hang
        the broker's loop, and every connection with it)."""
        tid = "a" * 40 + "!"
        assert cluster.coordinator(tid) is not None and init_pid(cluster.coordinator(tid), tid)[0] == E.none
        assert list_all(cluster, pattern="(a+)+$") == set()
        assert {x[0] for x in list_all(cluster, pattern="(a+)+!")} == {tid}


def describe_producers(c: RawKafkaClient, topics: dict[str, list[int]]):
    r = c.request(ApiKey.DESCRIBE_PRODUCERS, 0,
                  {"topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]})
    return {(t.name, p.partition_index): p for t in r.topics for p in t.partitions}


def producers(c: RawKafkaClient, partition: int) -> dict[int, tuple[int, int, int, int, int]]:
    (p,) = describe_producers(c, {TOPIC: [partition]}).values()
    assert p.error_code == E.none
    return {s.producer_id: (s.producer_epoch, s.last_sequence, s.last_timestamp, s.coordinator_epoch,
                            s.current_txn_start_offset) for s in p.active_producers}


class TestDescribeProducers:
    def test_transactional_producers(self, cluster):
        ongoing, aborted, committed = (cluster.pids[t] for t in ("adm-ongoing", "adm-abort", "adm-commit"))
        # partition 0: adm-abort's 2 records + ABORT marker (offsets 0-2), then adm-ongoing's 2 from offset 3;
        # the last timestamp is the last batch's max timestamp (1: the records') or the marker's time
        assert producers(cluster.leader(0), 0) == {
            aborted[0]: (aborted[1], 1, T0 + 4000, 0, -1),   # the marker's time and coordinator epoch
            ongoing[0]: (ongoing[1], 1, 1, -1, 3),           # its open transaction starts at offset 3
        }
        assert producers(cluster.leader(1), 1) == {ongoing[0]: (ongoing[1], 1, 1, -1, 0)}
        assert producers(cluster.leader(2), 2) == {committed[0]: (committed[1], 2, T0 + 2000, 0, -1)}

    def test_idempotent_producer(self, cluster):
        c = cluster.clients[0]
        pid = c.request(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout": 60000,
                                                      "producer_id": -1, "producer_epoch": -1}).producer_id
        leader = cluster.leader(2)
        # Kafka's ProducerStateEntry keeps the batch's max timestamp, not the time of the append
        for seq, n, ts in ((0, 4, T0 + 100), (4, 3, T0 - 86_400_000)):
            assert produce(leader, TOPIC, pid, 0, seq, n, transactional=False, partition=2,
                           timestamp=ts).error_code == E.none
        assert producers(leader, 2)[pid] == (0, 6, T0 - 86_400_000, -1, -1)

    def test_errors_per_partition(self, cluster):
        state = cluster.b.partition_state(TOPIC, 0)
        (outsider,) = set(range(3)) - set(state["replicas"])
        follower = next(r for r in state["replicas"] if r != state["leader"])
        got = describe_producers(cluster.clients[outsider], {TOPIC: [0, 7], "adm-missing": [0], "bad name!": [1]})
        assert {k: p.error_code for k, p in got.items()} == {
            (TOPIC, 0): E.not_leader_or_follower, (TOPIC, 7): E.unknown_topic_or_partition,
            ("adm-missing", 0): E.unknown_topic_or_partition, ("bad name!", 1): E.invalid_topic_exception}
        assert got[("bad name!", 1)].error_message.startswith("Topic name is invalid: ")  # Kafka 4.4's Topic.validate
        assert all(not p.active_producers for p in got.values())
        # a follower answers from its replica, as Kafka's Partition.activeProducerState does
        assert producers(cluster.clients[follower], 0) == producers(cluster.leader(0), 0)
