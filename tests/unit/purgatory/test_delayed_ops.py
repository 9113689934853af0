"""DelayedProduce and DelayedFetch through the purgatory, with the clock driven by the test."""

from __future__ import annotations

import select
import time

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import build_batch

E = ErrorCode


def answered(c: RawKafkaClient, timeout: float = 0.2) -> bool:
    """Whether a response is waiting on the socket (without reading it)."""
    return bool(select.select([c.sock], [], [], timeout)[0])


def parked(b: MockBroker, purgatory: str, node_id: int | None = None, n: int = 1, timeout_s: float = 5.0) -> None:
    """Wait (bounded) until ``n`` operations wait in a purgatory: the request was read and parked,
    so advancing the clock now measures from its arrival."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if b.purgatory_gauges(node_id)[purgatory]["NumDelayedOperations"] == n:
            return
        time.sleep(0.005)
    raise AssertionError(f"{purgatory} purgatory never held {n} operation(s)")


def produce_body(topic, acks=-1, timeout_ms=30_000, n=1, partition=0):
    return {"acks": acks, "timeout": timeout_ms, "topic_data": [{"name": topic, "partition_data": [
        {"index": partition, "records": build_batch([(b"k", b"v" * 20, [])] * n, base_timestamp=1)}]}]}


def fetch_body(topic, offset, max_wait_ms=500, min_bytes=1, isolation=0, partition=0):
    return {"replica_id": -1, "max_wait": max_wait_ms, "min_bytes": min_bytes, "max_bytes": 1 << 20,
            "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset,
                                                        "partition_max_bytes": 1 << 20, "log_start_offset": -1,
                                                        "current_leader_epoch": -1}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def leader_client(b: MockBroker, topic: str, partition: int = 0) -> RawKafkaClient:
    leader = b.partition_state(topic, partition)["leader"]
    addr = b.bootstrap_servers.split(",")[leader]
    return RawKafkaClient.connect(addr)


@pytest.fixture
def cluster():
    clock = ManualClock()
    cfg = {"mock.num.brokers": 3, "default.replication.factor": 3, "mock.replication.lag.ms": 100}
    with MockBroker(config=cfg, clock=clock) as b:
        yield b


@pytest.fixture
def single():
    with MockBroker(config={}, clock=ManualClock()) as b:
        yield b


class TestDelayedProduce:
    def test_acks_all_completes_when_followers_catch_up(self, cluster):
        cluster.create_topic("dp1", 1, 3)
        with leader_client(cluster, "dp1") as c:
            corr = c.send(0, 9, produce_body("dp1"))
            parked(cluster, "Produce", cluster.partition_state("dp1", 0)["leader"])
            cluster.advance(99)
            assert not answered(c)
            cluster.advance(1)
            r = c.response(0, 9, corr).responses[0].partition_responses[0]
            assert (r.error_code, r.base_offset) == (E.none, 0)
        st = cluster.partition_state("dp1", 0)
        assert st["high_watermark"] == st["log_end_offset"] == 1

    def test_acks_1_answers_at_once_and_high_watermark_follows_later(self, cluster):
        cluster.create_topic("dp2", 1, 3)
        with leader_client(cluster, "dp2") as c:
            r = c.request(0, 9, produce_body("dp2", acks=1)).responses[0].partition_responses[0]
            assert r.error_code == E.none
            assert cluster.partition_state("dp2", 0)["high_watermark"] == 0
            cluster.advance(100)
            assert cluster.partition_state("dp2", 0)["high_watermark"] == 1

    def test_timeout_gives_request_timed_out_for_waiting_partitions(self, cluster):
        cluster.create_topic("dp3", 1, 3)
        cluster.set_replication_lag(5000)
        with leader_client(cluster, "dp3") as c:
            corr = c.send(0, 9, produce_body("dp3", timeout_ms=1000))
            parked(cluster, "Produce", cluster.partition_state("dp3", 0)["leader"])
            cluster.advance(999)
            assert not answered(c)
            cluster.advance(1)
            r = c.response(0, 9, corr).responses[0].partition_responses[0]
            assert (r.error_code, r.base_offset) == (E.request_timed_out, 0)
        assert cluster.partition_state("dp3", 0)["log_end_offset"] == 1  # appended, just not replicated

    def test_not_enough_replicas_before_append(self, cluster):
        cluster.create_topic("dp4", 1, 3, configs={"min.insync.replicas": "2"})
        leader = cluster.partition_state("dp4", 0)["leader"]
        cluster.set_isr("dp4", 0, [leader])
        with leader_client(cluster, "dp4") as c:
            r = c.request(0, 9, produce_body("dp4")).responses[0].partition_responses[0]
            assert r.error_code == E.not_enough_replicas
            assert c.request(0, 9, produce_body("dp4", acks=1)).responses[0].partition_responses[0].error_code == 0
        assert cluster.partition_state("dp4", 0)["log_end_offset"] == 1  # only the acks=1 batch

    def test_not_enough_replicas_after_append_when_isr_shrinks_while_waiting(self, cluster):
        cluster.create_topic("dp5", 1, 3, configs={"min.insync.replicas": "2"})
        leader = cluster.partition_state("dp5", 0)["leader"]
        with leader_client(cluster, "dp5") as c:
            corr = c.send(0, 9, produce_body("dp5"))
            parked(cluster, "Produce", leader)
            cluster.set_isr("dp5", 0, [leader])  # followers dropped before they caught up
            r = c.response(0, 9, corr).responses[0].partition_responses[0]
            assert r.error_code == E.not_enough_replicas_after_append

    def test_slow_follower_on_one_broker_holds_the_high_watermark(self, cluster):
        cluster.create_topic("dp6", 1, 3)
        st = cluster.partition_state("dp6", 0)
        slow = [r for r in st["replicas"] if r != st["leader"]][0]
        cluster.set_replication_lag(1000, broker_id=slow)
        with leader_client(cluster, "dp6") as c:
            corr = c.send(0, 9, produce_body("dp6"))
            parked(cluster, "Produce", st["leader"])
            cluster.advance(100)
            assert not answered(c)  # the fast follower alone does not move the HW
            cluster.advance(900)
            assert c.response(0, 9, corr).responses[0].partition_responses[0].error_code == E.none


class TestDelayedFetch:
    def test_idle_fetch_answers_at_max_wait_empty_without_error(self, single):
        single.create_topic("df1", 1)
        with RawKafkaClient.connect(single.bootstrap_servers) as c:
            corr = c.send(1, 12, fetch_body("df1", 0, max_wait_ms=500))
            parked(single, "Fetch")
            single.advance(499)
            assert not answered(c)
            single.advance(1)
            p = c.response(1, 12, corr).responses[0].partitions[0]
            assert (p.error_code, p.records) == (E.none, b"")
            assert single.purgatory_gauges()["Fetch"]["NumDelayedOperations"] == 0

    def test_produce_wakes_a_parked_fetch_at_once(self, single):
        single.create_topic("df2", 1)
        with RawKafkaClient.connect(single.bootstrap_servers) as c, \
                RawKafkaClient.connect(single.bootstrap_servers) as p:
            corr = c.send(1, 12, fetch_body("df2", 0, max_wait_ms=30_000))
            parked(single, "Fetch")
            p.request(0, 9, produce_body("df2", acks=1))
            assert answered(c, timeout=2)  # no clock advance needed
            part = c.response(1, 12, corr).responses[0].partitions[0]
            assert part.records and part.high_watermark == 1

    def test_min_bytes_accumulates(self, single):
        single.create_topic("df3", 1)
        with RawKafkaClient.connect(single.bootstrap_servers) as c, \
                RawKafkaClient.connect(single.bootstrap_servers) as p:
            corr = c.send(1, 12, fetch_body("df3", 0, max_wait_ms=30_000, min_bytes=500))
            parked(single, "Fetch")
            p.request(0, 9, produce_body("df3", acks=1, n=2))  # ~100 bytes: not enough
            assert not answered(c)
            p.request(0, 9, produce_body("df3", acks=1, n=30))  # now well over 500 bytes
            assert answered(c, timeout=2)
            assert len(c.response(1, 12, corr).responses[0].partitions[0].records) >= 500

    def test_woken_by_the_high_watermark_not_by_the_append(self, cluster):
        cluster.create_topic("df4", 1, 3)
        with leader_client(cluster, "df4") as c, leader_client(cluster, "df4") as p:
            corr = c.send(1, 12, fetch_body("df4", 0, max_wait_ms=30_000))
            parked(cluster, "Fetch", cluster.partition_state("df4", 0)["leader"])
            p.request(0, 9, produce_body("df4", acks=1))
            assert not answered(c)  # appended but not yet replicated: invisible to consumers
            cluster.advance(100)
            assert answered(c, timeout=2)
            assert c.response(1, 12, corr).responses[0].partitions[0].high_watermark == 1

    def test_client_gone_while_parked(self, single):
        single.create_topic("df5", 1)
        c = RawKafkaClient.connect(single.bootstrap_servers)
        c.send(1, 12, fetch_body("df5", 0, max_wait_ms=1000))
        parked(single, "Fetch")
        c.close()
        single.advance(1000)
        assert single.purgatory_gauges()["Fetch"]["NumDelayedOperations"] == 0
        with RawKafkaClient.connect(single.bootstrap_servers) as c2:
            assert c2.request(3, 12, {"topics": None}).brokers


def test_stop_and_start_broker_moves_leadership_and_isr(cluster):
    cluster.create_topic("lead", 1, 3)
    before = cluster.partition_state("lead", 0)
    old = before["leader"]
    with leader_client(cluster, "lead") as c:
        c.request(0, 9, produce_body("lead", acks=1))
    cluster.advance(100)
    cluster.stop_broker(old)
    during = cluster.partition_state("lead", 0)
    assert during["leader"] != old and during["leader_epoch"] == before["leader_epoch"] + 1
    assert old not in during["isr"] and during["log_end_offset"] == 1
    with leader_client(cluster, "lead") as c:
        meta = c.request(3, 12, {"topics": [{"name": "lead"}]})
        assert old not in [b.node_id for b in meta.brokers]
        assert meta.topics[0].partitions[0].leader_id == during["leader"]
        assert list(meta.topics[0].partitions[0].offline_replicas) == [old]
        r = c.request(23, 4, {"replica_id": -1, "topics": [{"topic": "lead", "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "leader_epoch": before["leader_epoch"]}]}]})
        assert (r.topics[0].partitions[0].leader_epoch, r.topics[0].partitions[0].end_offset) == (
            before["leader_epoch"], 1)
    cluster.start_broker(old)
    assert old not in cluster.partition_state("lead", 0)["isr"]  # still catching up
    cluster.advance(100)
    assert old in cluster.partition_state("lead", 0)["isr"]


def test_unreplicated_records_are_truncated_when_leadership_moves(cluster):
    cluster.create_topic("trunc", 1, 3)
    old = cluster.partition_state("trunc", 0)["leader"]
    with leader_client(cluster, "trunc") as c:
        c.request(0, 9, produce_body("trunc", acks=1))
        cluster.advance(100)
        c.request(0, 9, produce_body("trunc", acks=1))  # acknowledged by the leader only
    cluster.stop_broker(old)
    st = cluster.partition_state("trunc", 0)
    assert st["log_end_offset"] == st["high_watermark"] == 1  # the new leader never had offset 1


class TestIsrShrink:
    """replica.lag.time.max.ms: Partition.maybeShrinkIsr, checked every half of it."""

    def test_lagging_follower_leaves_the_isr_and_acks_all_completes(self):
        clock = ManualClock()
        cfg = {"mock.num.brokers": 3, "default.replication.factor": 3, "replica.lag.time.max.ms": 10_000}
        with MockBroker(config=cfg, clock=clock) as b:
            b.create_topic("shr", 1, 3)
            leader = b.partition_state("shr", 0)["leader"]
            slow = next(r for r in b.partition_state("shr", 0)["replicas"] if r != leader)
            b.set_replication_lag(60_000, broker_id=slow)  # this follower's fetches take a minute
            with leader_client(b, "shr") as c:
                corr = c.send(0, 9, produce_body("shr"))
                parked(b, "Produce", leader)
                # checks at 5 s and 10 s: not caught up for 10 s is not yet "more than" 10 s
                b.advance(10_000)
                assert not answered(c)
                assert slow in b.partition_state("shr", 0)["isr"]
                b.advance(5_000)  # the 15 s check: out of sync for 15 s > 10 s
                st = b.partition_state("shr", 0)
                assert slow not in st["isr"] and len(st["isr"]) == 2
                r = c.response(0, 9, corr).responses[0].partition_responses[0]
                assert (r.error_code, r.base_offset) == (E.none, 0)  # the smaller ISR has the record
            b.set_replication_lag(0, broker_id=slow)
            b.advance(45_000)  # the slow fetch lands at 60 s: the follower reaches the HW and rejoins
            assert slow in b.partition_state("shr", 0)["isr"]

    def test_idle_followers_stay_in_sync(self):
        clock = ManualClock()
        cfg = {"mock.num.brokers": 2, "default.replication.factor": 2, "replica.lag.time.max.ms": 1_000}
        with MockBroker(config=cfg, clock=clock) as b:
            b.create_topic("idle", 1, 2)
            b.advance(60_000)  # no appends: every follower is at the log end
            assert len(b.partition_state("idle", 0)["isr"]) == 2
