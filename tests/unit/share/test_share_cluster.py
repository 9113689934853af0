"""Share groups at 3 brokers (KIP-932): a share-partition's state lives in the share coordinator, not in
its leader's memory, so it survives a leader election and the stop of its leader, as Kafka's does;
the old leader answers NOT_LEADER_OR_FOLLOWER with the new one, and its locks are fenced."""

from __future__ import annotations

import uuid

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import build_batch
from protocol.registry import ApiKey

E = ErrorCode
ACCEPT, RELEASE = 1, 2
LOCK_MS = 30_000


@pytest.fixture(scope="module")
def b():
    cfg = {"mock.num.brokers": 3, "mock.replication.lag.ms": 0,
           "group.share.assignment.interval.ms": 0}  # the initialized partitions at the next heartbeat
    with MockBroker(config=cfg, clock=ManualClock()) as broker:
        yield broker


def connect(b: MockBroker, node_id: int) -> RawKafkaClient:
    (node,) = [x for x in b.brokers() if x["id"] == node_id]
    return RawKafkaClient.connect(f"127.0.0.1:{node['port']}", client_id="share")


def heartbeat(c: RawKafkaClient, group: str, member: str, epoch: int, topics=None):
    return c.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {"group_id": group, "member_id": member, "member_epoch": epoch,
                                                        "rack_id": None, "subscribed_topic_names": topics})


def fetch(c: RawKafkaClient, group: str, member: str, tid: uuid.UUID, epoch: int, acks=()):
    return c.request(ApiKey.SHARE_FETCH, 2, {
        "group_id": group, "member_id": member, "share_session_epoch": epoch, "max_wait": 0, "min_bytes": 1,
        "max_bytes": 1 << 20, "max_records": 500, "batch_size": 500, "share_acquire_mode": 0, "is_renew_ack": False,
        "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
            {"first_offset": f, "last_offset": la, "acknowledge_types": list(t)} for f, la, t in acks]}]}],
        "forgotten_topics_data": []})


def acquired(r) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in r.responses for p in t.partitions for a in p.acquired_records]


def join(b: MockBroker, group: str, topic: str) -> str:
    coordinator = b.call(lambda c: c.groups.find_coordinator(group).node_id)
    member = str(uuid.uuid4())
    with connect(b, coordinator) as c:
        assert heartbeat(c, group, member, 0, [topic]).member_epoch == 2  # a new group is at 1 (Kafka 4.3+)
        assert heartbeat(c, group, member, 2).member_epoch == 3  # the partitions, initialized
    return member


@pytest.mark.parametrize("how", ["elect", "stop"])
def test_share_state_survives_the_leader_moving(b, how):
    topic, group = f"moving-{how}", f"g-{how}"
    b.create_topic(topic, 1, replication_factor=3)
    tid = b.call(lambda c: c.metadata.topics[topic].topic_id)
    old = b.partition_state(topic, 0)["leader"]
    member = join(b, group, topic)
    c = connect(b, old)
    assert acquired(fetch(c, group, member, tid, 0)) == []  # loaded at the log end
    body = {"acks": -1, "timeout": 1000, "topic_data": [{"name": topic, "partition_data": [
        {"index": 0, "records": build_batch([(b"k", b"v", [])] * 5, base_timestamp=1)}]}]}
    assert c.request(ApiKey.PRODUCE, 9, body).responses[0].partition_responses[0].error_code == E.none
    assert acquired(fetch(c, group, member, tid, 1)) == [(0, 4, 1)]
    r = fetch(c, group, member, tid, 2, acks=[(0, 1, [ACCEPT]), (2, 2, [RELEASE])])
    assert [p.acknowledge_error_code for t in r.responses for p in t.partitions] == [E.none]
    new = next(n for n in (0, 1, 2) if n != old)
    if how == "elect":
        b.elect_leader(topic, 0, new)
        r = fetch(c, group, member, tid, 3)
        (p,) = [p for t in r.responses for p in t.partitions]
        assert (p.error_code, p.current_leader.leader_id) == (E.not_leader_or_follower, new)
        assert [n.node_id for n in r.node_endpoints] == [new]
    else:
        b.stop_broker(old)  # its share sessions and locks go with it, unwritten
        new = b.partition_state(topic, 0)["leader"]
    with connect(b, new) as c2:
        # the new leader reads the share coordinator's state: 0-1 done, 2 released once; 2 (acquired
        # again by the fetch that acknowledged) and 3-4 were only acquired there (nothing written)
        assert acquired(fetch(c2, group, member, tid, 0)) == [(2, 2, 2), (3, 4, 1)]
        b.advance(LOCK_MS)  # every lock expires (the old leader's are fenced by the leader epoch)
        assert acquired(fetch(c2, group, member, tid, 1)) == [(2, 2, 3), (3, 4, 2)]
        # read while c2's share session is open: the broker drops a group's share-partitions when the
        # last connection with a share session of the group closes (as Kafka does)
        view = b.share_group(group)
    assert [(p["leader"], p["leader_epoch"]) for p in view["share_partitions"]] == [
        (new, b.partition_state(topic, 0)["leader_epoch"])]
    if how == "stop":
        b.start_broker(old)
    else:
        c.close()
