"""WriteTxnMarkers over a real socket, as Kafka's Admin ``abortTransaction`` (``kafka-transactions
abort``) sends it: an ABORT marker for a hanging transaction closes it on the partition's leader
(the last stable offset moves past it, the producer's open transaction goes, consumers skip its
records), a broker without a replica answers UNKNOWN_TOPIC_OR_PARTITION, an older producer epoch
INVALID_PRODUCER_EPOCH and a follower NOT_LEADER_OR_FOLLOWER, each per partition as
``KafkaApis.handleWriteTxnMarkersRequest`` does.  Before the handler the broker did not list key
27 and Kafka's Admin failed with "The node does not support WRITE_TXN_MARKERS"."""

from __future__ import annotations

import pytest

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey
from .test_txn_wire import add_partitions, find_txn_coordinator, init_pid, partition_state, produce

E = ErrorCode
TOPIC = "wtm"


def write_markers(c: RawKafkaClient, pid: int, epoch: int, partitions: list[int], commit: bool = False,
                  coordinator_epoch: int = 0, version: int = 1) -> dict[int, int]:
    r = c.request(ApiKey.WRITE_TXN_MARKERS, version, {"markers": [
        {"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit, "coordinator_epoch":
         coordinator_epoch, "transaction_version": 0, "topics": [{"name": TOPIC, "partition_indexes": partitions}]}]})
    (m,) = r.markers
    assert m.producer_id == pid
    return {p.partition_index: p.error_code for t in m.topics for p in t.partitions}


@pytest.fixture
def cluster():
    """3 brokers; the topic's 2 partitions have 2 replicas each, so one broker holds none of each."""
    with MockBroker(config={"mock.num.brokers": 3}) as b:
        b.create_topic(TOPIC, 2, replication_factor=2)
        clients = [RawKafkaClient.connect(a) for a in b.bootstrap_servers.split(",")]
        try:
            yield b, clients
        finally:
            for c in clients:
                c.close()


def _begin(b: MockBroker, clients: list[RawKafkaClient], tid: str, n: int) -> tuple[int, int]:
    """A transaction of ``n`` records left open on partition 0, its producer initialized twice (epoch
    1): (producer id, epoch)."""
    err, node = find_txn_coordinator(clients[0], tid)
    assert err == E.none
    for _ in range(2):
        err, pid, epoch = init_pid(clients[node], tid)
        assert err == E.none
    assert add_partitions(clients[node], tid, pid, epoch, {TOPIC: [0]}) == {(TOPIC, 0): E.none}
    leader = b.partition_state(TOPIC, 0)["leader"]
    assert produce(clients[leader], TOPIC, pid, epoch, 0, n, transactional=True, tid=tid).error_code == E.none
    return pid, epoch


def _roles(b: MockBroker, partition: int) -> tuple[int, int, int]:
    """(leader, follower, a broker without a replica) of the partition."""
    s = b.partition_state(TOPIC, partition)
    follower = next(r for r in s["replicas"] if r != s["leader"])
    outside = next(n for n in range(3) if n not in s["replicas"])
    return s["leader"], follower, outside


@pytest.mark.parametrize("version", [1, 2])
def test_an_abort_marker_closes_a_hanging_transaction(cluster, version):
    b, clients = cluster
    leader, follower, outside = _roles(b, 0)
    pid, epoch = _begin(b, clients, "wtm-hang", 3)
    assert epoch == 1
    assert partition_state(b, TOPIC, 0) == (3, 0, [])  # the open transaction holds the last stable offset

    assert write_markers(clients[outside], pid, epoch, [0], version=version) == {0: E.unknown_topic_or_partition}
    assert write_markers(clients[follower], pid, epoch, [0], version=version) == {0: E.not_leader_or_follower}
    assert write_markers(clients[leader], pid, epoch - 1, [0], version=version) == {0: E.invalid_producer_epoch}
    assert partition_state(b, TOPIC, 0) == (3, 0, [])  # nothing written yet
    assert write_markers(clients[leader], pid, epoch, [0], version=version) == {0: E.none}
    assert partition_state(b, TOPIC, 0) == (4, 4, [pid])  # the marker at 3; the records aborted
    assert b.call(lambda cl: cl.metadata.partition(TOPIC, 0).producers.producers[pid].current_txn_first_offset) == -1


def test_each_partition_answers_for_itself(cluster):
    b, clients = cluster
    leader, _, _ = _roles(b, 0)
    pid, epoch = _begin(b, clients, "wtm-mixed", 1)
    assert write_markers(clients[leader], pid, epoch, [0, 7, 0]) == {0: E.none, 7: E.unknown_topic_or_partition}
    assert partition_state(b, TOPIC, 0) == (2, 2, [pid])  # the record and one marker, though 0 was named twice
