"""DescribeLogDirs and AlterReplicaLogDirs over the wire: two log directories per broker, replicas
placed in the one with the fewest, real sizes (a lagging follower's copy is smaller), a move through a
future replica that catches up after the replication lag, and the per-partition errors Kafka's
``ReplicaManager.alterReplicaLogDirs`` gives.  Time runs on a ManualClock."""

from __future__ import annotations

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import build_batch
from protocol.registry import ApiKey

E = ErrorCode
A, B = "/var/kafka/a", "/var/kafka/b"
TOTAL = 1 << 30


@pytest.fixture
def b():
    config = {"mock.num.brokers": 2, "log.dirs": f"{A},{B}", "mock.log.dir.total.bytes": TOTAL}
    with MockBroker(config=config, clock=ManualClock()) as broker:
        yield broker


def client(b, node):
    return RawKafkaClient.connect(b.bootstrap_servers.split(",")[node])


def produce(c, topic, partition, n):
    records = build_batch([(b"k%d" % i, b"v" * 100, []) for i in range(n)], base_timestamp=1000)
    body = {"acks": 1, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": records}]}]}
    r = c.request(ApiKey.PRODUCE, 9, body).responses[0].partition_responses[0]
    assert r.error_code == E.none
    return len(records)


def describe(c, topics=None, version=4):
    """directory -> (error, {(topic, partition): (size, lag, future)}, total, usable)."""
    body = {"topics": None if topics is None else [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
    r = c.request(ApiKey.DESCRIBE_LOG_DIRS, version, body)
    assert r.error_code == E.none
    return {d.log_dir: (d.error_code, {(t.name, p.partition_index): (p.partition_size, p.offset_lag, p.is_future_key)
                                       for t in d.topics for p in t.partitions},
                        getattr(d, "total_bytes", None), getattr(d, "usable_bytes", None))
            for d in r.results}


def alter(c, moves):
    """{(topic, partition): directory} -> {(topic, partition): error}."""
    dirs: dict[str, dict[str, list[int]]] = {}
    for (t, p), d in moves.items():
        dirs.setdefault(d, {}).setdefault(t, []).append(p)
    body = {"dirs": [{"path": d, "topics": [{"name": t, "partitions": ps} for t, ps in ts.items()]}
                     for d, ts in dirs.items()]}
    r = c.request(ApiKey.ALTER_REPLICA_LOG_DIRS, 2, body)
    return {(t.topic_name, p.partition_index): p.error_code for t in r.results for p in t.partitions}


def leader(b, topic, partition):
    return b.partition_state(topic, partition)["leader"]


def test_replicas_spread_over_the_directories_with_their_sizes(b):
    b.create_topic("t", 2, replication_factor=2)
    c0 = client(b, 0)
    try:
        sizes = {p: produce(client(b, leader(b, "t", p)), "t", p, 5) for p in (0, 1)}
        dirs = describe(c0)
        assert list(dirs) == [A, B]
        # broker 0 holds both partitions: one in each directory (the one with fewer replicas first)
        assert dirs[A][1] == {("t", 0): (sizes[0], 0, False)}
        assert dirs[B][1] == {("t", 1): (sizes[1], 0, False)}
        assert [(d[0], d[2], d[3]) for d in dirs.values()] == [
            (E.none, TOTAL, TOTAL - sizes[0]), (E.none, TOTAL, TOTAL - sizes[1])]
        # only what is asked: a directory without it answers no topics
        asked = describe(c0, {"t": [1], "missing": [0]})
        assert (asked[A][1], asked[B][1]) == ({}, {("t", 1): (sizes[1], 0, False)})
        assert describe(c0, {}) == {A: (E.none, {}, TOTAL, TOTAL - sizes[0]), B: (E.none, {}, TOTAL, TOTAL - sizes[1])}
        # v1-3: no total or usable bytes
        assert describe(c0, version=3)[A] == (E.none, {("t", 0): (sizes[0], 0, False)}, None, None)
    finally:
        c0.close()


def test_a_lagging_follower_holds_less(b):
    b.create_topic("lag", 1, replication_factor=2)
    lead = leader(b, "lag", 0)
    follower = 1 - lead
    b.set_replication_lag(1000, broker_id=follower)
    with client(b, lead) as cl, client(b, follower) as cf:
        first = produce(cl, "lag", 0, 3)
        b.advance(1000)
        second = produce(cl, "lag", 0, 3)
        on_follower = {k: v for d in describe(cf).values() for k, v in d[1].items()}
        on_leader = {k: v for d in describe(cl).values() for k, v in d[1].items()}
        assert on_leader[("lag", 0)] == (first + second, 0, False)
        assert on_follower[("lag", 0)] == (first, 0, False)
        b.advance(1000)
        assert {k: v for d in describe(cf).values() for k, v in d[1].items()}[("lag", 0)] == (first + second, 0, False)


def test_a_move_copies_into_a_future_replica_then_replaces_it(b):
    b.create_topic("m", 1, replication_factor=1)
    node = leader(b, "m", 0)
    b.set_replication_lag(500, broker_id=node)
    with client(b, node) as c:
        size = produce(c, "m", 0, 4)
        [(source, _)] = [(d, v) for d, v in describe(c).items() if ("m", 0) in v[1]]
        target = B if source == A else A
        assert alter(c, {("m", 0): target}) == {("m", 0): E.none}
        dirs = describe(c)
        # the future replica starts empty at the log start, 4 records behind
        assert dirs[source][1] == {("m", 0): (size, 0, False)}
        assert dirs[target][1] == {("m", 0): (0, 4, True)}
        assert dirs[target][3] == TOTAL  # nothing copied yet
        assert alter(c, {("m", 0): target}) == {("m", 0): E.none}  # already moving there: nothing new
        more = produce(c, "m", 0, 2)  # the end moves while the copy runs: one more round
        b.advance(500)
        assert describe(c)[target][1] == {("m", 0): (size, 2, True)}
        b.advance(500)
        dirs = describe(c)
        assert (dirs[source][1], dirs[target][1]) == ({}, {("m", 0): (size + more, 0, False)})
        assert dirs[source][3] == TOTAL
        # back again, and a third request changes its mind before it lands: the last one counts
        assert alter(c, {("m", 0): source}) == {("m", 0): E.none}
        assert alter(c, {("m", 0): target}) == {("m", 0): E.none}  # already there: the move stops
        b.advance(1000)
        assert describe(c)[target][1] == {("m", 0): (size + more, 0, False)}
        assert describe(c)[source][1] == {}


def test_alter_errors(b):
    b.create_topic("e", 1, replication_factor=1)
    node = leader(b, "e", 0)
    with client(b, node) as c, client(b, 1 - node) as other:
        assert alter(c, {("e", 0): "/nowhere", ("e", 7): A}) == {
            ("e", 0): E.log_dir_not_found, ("e", 7): E.unknown_topic_or_partition}
        assert alter(other, {("e", 0): B}) == {("e", 0): E.replica_not_available}
        # a partition not there yet keeps the directory: created later, it lands there
        assert alter(c, {("later", 0): B}) == {("later", 0): E.unknown_topic_or_partition}
        b.create_topic("later", 1, replication_factor=2)
        assert ("later", 0) in describe(c)[B][1]


def test_a_topic_name_too_long_for_the_future_directory(b):
    """Kafka 4.4.0 (ReplicaManager.alterReplicaLogDirs): "<topic>-<partition>.<32 hex>-future" longer than
    255 characters is INVALID_TOPIC_EXCEPTION before the directory or the partition is looked at."""
    with client(b, 0) as c:
        assert alter(c, {("y" * 213, 0): A, ("y" * 214, 0): A, ("z" * 211, 1_000_000): "/nowhere",
                         ("x" * 249, -1): A}) == {
            ("y" * 213, 0): E.unknown_topic_or_partition, ("y" * 214, 0): E.invalid_topic_exception,
            ("z" * 211, 1_000_000): E.invalid_topic_exception, ("x" * 249, -1): E.invalid_topic_exception}


def test_v5_on_kafka_4_4_says_no_directory_is_cordoned():
    with MockBroker(config={"mock.kafka.version": "4.4", "log.dirs": f"{A},{B}"}, clock=ManualClock()) as b, \
            RawKafkaClient.connect(b.bootstrap_servers) as c:
        r = c.request(ApiKey.DESCRIBE_LOG_DIRS, 5, {"topics": None})
        assert [(d.log_dir, d.error_code, d.is_cordoned) for d in r.results] == [(A, E.none, False), (B, E.none, False)]

