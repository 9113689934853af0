"""ElectLeaders over the wire, through the replication simulator: a preferred election gives the
leadership back to the first replica once it has caught up, an unclean one gives a leaderless
partition to an out-of-sync replica (its log wins: what it had not copied is gone), with the
per-partition errors and messages of Kafka's ``ReplicationControlManager.electLeader``.  Time runs
on a ManualClock."""

from __future__ import annotations

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import build_batch
from protocol.registry import ApiKey

E = ErrorCode
PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED = (E.election_not_needed, "Leader election not needed for topic partition.")
NOT_AVAILABLE = (E.preferred_leader_not_available, "The preferred leader was not available.")


@pytest.fixture
def b():
    with MockBroker(config={"mock.num.brokers": 3}, clock=ManualClock()) as broker:
        yield broker


def elect(c, election, partitions, version=2):
    """{topic: [partitions]} (None: all) -> (top-level error, {(topic, partition): (error, message)})."""
    body = {"election_type": election, "timeout": 30000,
            "topic_partitions": None if partitions is None else
            [{"topic": t, "partitions": ps} for t, ps in partitions.items()]}
    r = c.request(ApiKey.ELECT_LEADERS, version, body)
    return (getattr(r, "error_code", None),
            {(t.topic, p.partition_id): (p.error_code, p.error_message)
             for t in r.replica_election_results for p in t.partition_result})


def produce(b, topic, n):
    state = b.partition_state(topic, 0)
    with RawKafkaClient.connect(b.bootstrap_servers.split(",")[state["leader"]]) as c:
        body = {"acks": 1, "timeout": 5000, "topic_data": [{"name": topic, "partition_data": [
            {"index": 0, "records": build_batch([(b"k", b"v", [])] * n, base_timestamp=1)}]}]}
        assert c.request(ApiKey.PRODUCE, 9, body).responses[0].partition_responses[0].error_code == E.none


def test_a_preferred_election_gives_the_leadership_back(b):
    b.create_topic("p", 1, replication_factor=2)
    first = b.partition_state("p", 0)
    preferred, other = first["replicas"]
    with RawKafkaClient.connect(b.bootstrap_servers.split(",")[other]) as c:
        assert elect(c, PREFERRED, {"p": [0]}) == (E.none, {("p", 0): NOT_NEEDED})
        b.stop_broker(preferred)
        moved = b.partition_state("p", 0)
        assert moved["leader"] == other
        assert elect(c, PREFERRED, {"p": [0]}) == (E.none, {("p", 0): NOT_AVAILABLE})  # down
        b.set_replication_lag(1000, broker_id=preferred)
        b.start_broker(preferred)
        assert elect(c, PREFERRED, {"p": [0]}) == (E.none, {("p", 0): NOT_AVAILABLE})  # not caught up yet
        b.advance(1000)
        assert preferred in b.partition_state("p", 0)["isr"]
        # every partition of every topic: those whose election was needed are listed
        assert elect(c, PREFERRED, None) == (E.none, {("p", 0): (E.none, None)})
        after = b.partition_state("p", 0)
        assert (after["leader"], after["leader_epoch"]) == (preferred, moved["leader_epoch"] + 1)
        assert elect(c, PREFERRED, {"p": [0]}) == (E.none, {("p", 0): NOT_NEEDED})
        assert elect(c, PREFERRED, None) == (E.none, {})


def test_an_unclean_election_loses_what_the_new_leader_had_not_copied(b):
    b.create_topic("u", 1, replication_factor=2)
    leader, follower = b.partition_state("u", 0)["replicas"]
    produce(b, "u", 3)  # both have 3
    b.set_isr("u", 0, [leader])  # the follower falls out of the ISR and stays out
    b.set_replication_lag(60_000, broker_id=follower)
    produce(b, "u", 2)  # only the leader has these
    b.stop_broker(leader)
    assert b.partition_state("u", 0)["leader"] == -1
    with RawKafkaClient.connect(b.bootstrap_servers.split(",")[follower]) as c:
        assert elect(c, PREFERRED, {"u": [0]}) == (E.none, {("u", 0): NOT_AVAILABLE})
        assert elect(c, UNCLEAN, {"u": [0]}) == (E.none, {("u", 0): (E.none, None)})
        state = b.partition_state("u", 0)
        assert (state["leader"], state["isr"], state["log_end_offset"]) == (follower, [follower], 3)
        assert elect(c, UNCLEAN, {"u": [0]}) == (E.none, {("u", 0): NOT_NEEDED})
        # the old leader returns as a follower, its two records truncated away
        b.set_replication_lag(0, broker_id=leader)
        b.start_broker(leader)
        b.advance(1)
        assert b.call(lambda cl: cl.metadata.partition("u", 0).replica_leo[leader]) == 3
        assert b.partition_state("u", 0)["isr"] == [follower, leader]


def test_no_live_replica(b):
    b.create_topic("gone", 1, replication_factor=1)
    node = b.partition_state("gone", 0)["leader"]
    b.stop_broker(node)
    alive = next(i for i in range(3) if i != node)
    with RawKafkaClient.connect(b.bootstrap_servers.split(",")[alive]) as c:
        assert elect(c, UNCLEAN, {"gone": [0]}) == (E.none, {("gone", 0): (
            E.eligible_leaders_not_available, "Eligible topic partition leaders are not available.")})
        assert elect(c, PREFERRED, {"gone": [0]}) == (E.none, {("gone", 0): NOT_AVAILABLE})


def test_unknown_partitions_bad_types_and_v0(b):
    b.create_topic("k", 1, replication_factor=1)
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert elect(c, PREFERRED, {"k": [0, 3], "nope": [0]}) == (E.none, {
            ("k", 0): NOT_NEEDED, ("k", 3): (E.unknown_topic_or_partition, "No such partition as k-3"),
            ("nope", 0): (E.unknown_topic_or_partition, "No such topic as nope")})
        assert elect(c, 7, {"k": [0]}) == (E.invalid_request, {("k", 0): (E.invalid_request, "Unknown election type 7")})
        # v0: preferred, no top-level error
        assert elect(c, UNCLEAN, {"k": [0]}, version=0) == (None, {("k", 0): NOT_NEEDED})
