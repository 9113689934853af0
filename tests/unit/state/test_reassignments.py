"""Alter/ListPartitionReassignments over the wire, through the replication simulator: added replicas
catch up after the replication lag, the reassignment completes when they are all in the ISR (the
replicas leaving go, a leader among them hands over), a cancel reverts, and the per-partition errors
and messages are Kafka's ``ReplicationControlManager``'s.  Time runs on a ManualClock."""

from __future__ import annotations

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import build_batch
from protocol.registry import ApiKey

E = ErrorCode


@pytest.fixture
def b():
    with MockBroker(config={"mock.num.brokers": 3}, clock=ManualClock()) as broker:
        yield broker


@pytest.fixture
def c(b):
    with RawKafkaClient.connect(b.bootstrap_servers) as client:
        yield client


def alter(c, moves, allow=True, version=1):
    """{(topic, partition): replicas or None} -> {(topic, partition): (error, message)}."""
    topics: dict[str, list] = {}
    for (t, p), replicas in moves.items():
        topics.setdefault(t, []).append({"partition_index": p, "replicas": replicas})
    r = c.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, version, {
        "timeout": 30000, "allow_replication_factor_change": allow,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
    assert r.error_code == E.none
    return {(t.name, p.partition_index): (p.error_code, p.error_message) for t in r.responses for p in t.partitions}


def listed(c, topics=None):
    body = {"timeout": 30000, "topics": None if topics is None else
            [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}
    r = c.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, body)
    assert r.error_code == E.none
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in r.topics for p in t.partitions}


def produce(b, topic, n):
    leader = b.partition_state(topic, 0)["leader"]
    with RawKafkaClient.connect(b.bootstrap_servers.split(",")[leader]) as c:
        body = {"acks": -1, "timeout": 5000, "topic_data": [{"name": topic, "partition_data": [
            {"index": 0, "records": build_batch([(b"k", b"v", [])] * n, base_timestamp=1)}]}]}
        assert c.request(ApiKey.PRODUCE, 9, body).responses[0].partition_responses[0].error_code == E.none


def test_a_move_completes_once_the_new_replica_caught_up(b, c):
    b.create_topic("m", 1, replication_factor=1)
    old = b.partition_state("m", 0)
    [source] = old["replicas"]
    dest = (source + 1) % 3
    produce(b, "m", 5)
    b.set_replication_lag(1000)
    assert alter(c, {("m", 0): [dest]}) == {("m", 0): (E.none, None)}
    # in progress: the target then the replica leaving; the leader stays until the move completes
    assert listed(c) == {("m", 0): ([dest, source], [dest], [source])}
    mid = b.partition_state("m", 0)
    assert (mid["replicas"], mid["isr"], mid["leader"]) == ([dest, source], [source], source)
    assert b.call(lambda cl: cl.metadata.partition("m", 0).replica_leo[dest]) == 0  # an empty log
    b.advance(1000)
    done = b.partition_state("m", 0)
    assert (done["replicas"], done["isr"], done["leader"]) == ([dest], [dest], dest)
    assert done["leader_epoch"] == old["leader_epoch"] + 1
    assert (done["log_end_offset"], done["high_watermark"]) == (5, 5)  # nothing lost
    assert listed(c) == {}
    # Kafka 4.4.0 sends no message: the exception's is the error's own, which ApiError.fromThrowable drops
    assert alter(c, {("m", 0): None}) == {("m", 0): (E.no_reassignment_in_progress, None)}


def test_removing_only_completes_at_once_and_bumps_the_epoch(b, c):
    b.create_topic("s", 1, replication_factor=3)
    old = b.partition_state("s", 0)
    leader, *followers = old["replicas"]
    assert alter(c, {("s", 0): [leader, followers[0]]}) == {("s", 0): (E.none, None)}
    new = b.partition_state("s", 0)
    assert (new["replicas"], new["isr"], new["leader"]) == ([leader, followers[0]], [leader, followers[0]], leader)
    assert new["leader_epoch"] == old["leader_epoch"] + 1
    assert listed(c) == {}
    # dropping the leader: the first staying ISR member leads
    assert alter(c, {("s", 0): [followers[0]]}) == {("s", 0): (E.none, None)}
    assert b.partition_state("s", 0)["leader"] == followers[0]


def test_a_cancel_reverts_to_the_replicas_before(b, c):
    b.create_topic("x", 1, replication_factor=1)
    [source] = b.partition_state("x", 0)["replicas"]
    others = [i for i in range(3) if i != source]
    b.set_replication_lag(60_000)
    assert alter(c, {("x", 0): others}) == {("x", 0): (E.none, None)}
    assert listed(c, {"x": [0, 3], "nope": [0]}) == {("x", 0): ([*others, source], others, [source])}
    assert alter(c, {("x", 0): None}) == {("x", 0): (E.none, None)}
    back = b.partition_state("x", 0)
    assert (back["replicas"], back["isr"], back["leader"]) == ([source], [source], source)
    assert listed(c) == {}
    b.advance(60_000)  # the cancelled replicas' fetches land on nothing
    assert b.partition_state("x", 0)["replicas"] == [source]


def test_errors_with_kafkas_messages(b, c):
    b.create_topic("e", 1, replication_factor=2)
    before = b.partition_state("e", 0)
    assert alter(c, {("nope", 0): [0], ("e", 4): [0], ("e", 0): []}) == {
        ("nope", 0): (E.unknown_topic_or_partition, "Unable to find a topic named nope."),
        ("e", 4): (E.unknown_topic_or_partition, "Unable to find partition e:4."),
        ("e", 0): (E.invalid_replica_assignment, "The manual partition assignment includes an empty replica list.")}
    assert alter(c, {("e", 0): [0, 7]}) == {("e", 0): (
        E.invalid_replica_assignment, "The manual partition assignment includes broker 7, but no such broker is "
                                      "registered.")}
    assert alter(c, {("e", 0): [1, 1]}) == {("e", 0): (
        E.invalid_replica_assignment, "The manual partition assignment includes the broker 1 more than once.")}
    assert alter(c, {("e", 0): [0, 1, 2]}, allow=False) == {("e", 0): (
        E.invalid_replication_factor, "The replication factor is changed from 2 to 3")}
    assert b.partition_state("e", 0) == before  # nothing changed
    assert listed(c) == {}
