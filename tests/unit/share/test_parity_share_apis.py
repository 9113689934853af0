"""Share-group APIs at the edges, as Kafka 4.4.0 answers them (found by tests/differential against a real
Kafka 4.4.0; each test failed before its fix): ShareFetch's partitions carry the schema's current
leader (0, 0) unless the leader moved and never an error message, an unknown share_acquire_mode fails
the request, whole-request refusals carry no message; an unknown group's described operations; the
start offsets of share-partitions as the share coordinator initialized them, topics named twice, and
what the persister refuses."""

from __future__ import annotations

import uuid

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode

from .test_share_wire import SA, SF, Member, topic_id

E = ErrorCode
MIN_INT = -2 ** 31
DSGO = 90


@pytest.fixture(scope="module")
def b():
    cfg = {"mock.topics": ["t:1", "two:2"], "group.share.assignment.interval.ms": 0}
    with MockBroker(config=cfg, clock=ManualClock()) as broker:
        yield broker


def test_share_fetch_partitions_have_the_schema_leader_and_no_message(b):
    """processShareFetchResponse sets current_leader on NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH only
    (else LeaderIdAndEpoch's 0, 0), and createResponse rebuilds each partition without its message."""
    m = Member(b, "p-leader")
    m.join()
    r = m.fetch(topic_id(b, "t"))
    (p,) = r.responses[0].partitions
    assert (p.error_code, p.current_leader.leader_id, p.current_leader.leader_epoch) == (E.none, 0, 0)
    stranger = Member(b, "p-leader-unknown")  # never joined: the fetch fails per partition
    r = stranger.fetch(topic_id(b, "t"))
    (p,) = r.responses[0].partitions
    assert p.error_code != E.none and p.error_message is None
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (0, 0)


def test_unknown_share_acquire_mode_fails_the_request(b):
    """ShareAcquireMode.forId throws for a mode other than 0 and 1: UNKNOWN_SERVER_ERROR, no partitions."""
    m = Member(b, "p-mode")
    m.join()
    body = {"group_id": m.group, "member_id": m.member_id, "share_session_epoch": 0, "max_wait": 0,
            "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 10, "batch_size": 10, "share_acquire_mode": 2,
            "is_renew_ack": False, "topics": [{"topic_id": topic_id(b, "t"), "partitions": [
                {"partition_index": 0, "acknowledgement_batches": []}]}], "forgotten_topics_data": []}
    r = m.c.request(SF, 2, body)
    assert (r.error_code, r.error_message, r.acquisition_lock_timeout.total_seconds(), list(r.responses)) == (
        E.unknown_server_error, None, 0, [])
    body["share_acquire_mode"] = 1  # record_limit: served
    assert m.c.request(SF, 2, body).error_code == E.none


def test_whole_request_refusals_carry_no_message(b):
    """Share{Fetch,Acknowledge}Request.getErrorResponse keeps the error code only."""
    c = RawKafkaClient.connect(b.bootstrap_servers)
    fetch = c.request(SF, 1, {"group_id": None, "member_id": "m", "share_session_epoch": 0, "max_wait": 0,
                              "min_bytes": 1, "max_bytes": 1, "max_records": 1, "batch_size": 1, "topics": [],
                              "forgotten_topics_data": []})
    ack = c.request(SA, 1, {"group_id": None, "member_id": "m", "share_session_epoch": 1, "topics": []})
    assert (fetch.error_code, fetch.error_message) == (E.invalid_request, None)
    assert (ack.error_code, ack.error_message) == (E.invalid_request, None)


def test_an_unknown_share_group_has_no_authorized_operations(b):
    c = RawKafkaClient.connect(b.bootstrap_servers)
    r = c.request(77, 1, {"group_ids": ["p-nobody"], "include_authorized_operations": True})
    (g,) = r.groups
    assert g.error_code == E.group_id_not_found and g.authorized_operations == MIN_INT


def describe(c: RawKafkaClient, group: str, topics) -> object:
    r = c.request(DSGO, 1, {"groups": [{"group_id": group, "topics": None if topics is None else [
        {"topic_name": n, "partitions": ps} for n, ps in topics]}]})
    return r.groups[0]


def test_initialized_share_partitions_have_leader_epoch_zero(b):
    """ShareGroupOffset.fromRequest: an initialized share-partition's leader epoch is 0, its start -1."""
    m = Member(b, "p-epoch", ("two",))
    m.join()
    c = RawKafkaClient.connect(b.bootstrap_servers)
    for topics in (None, [("two", [0, 1])]):
        g = describe(c, m.group, topics)
        assert [(p.partition_index, p.start_offset, p.leader_epoch, p.lag)
                for t in g.topics for p in t.partitions] == [(0, -1, 0, -1), (1, -1, 0, -1)]


def test_a_topic_named_twice_is_described_once(b):
    c = RawKafkaClient.connect(b.bootstrap_servers)
    g = describe(c, "p-twice", [("two", [1, 0]), ("two", [0])])
    assert [(t.topic_name, [p.partition_index for p in t.partitions]) for t in g.topics] == [("two", [0, 1])]


@pytest.mark.parametrize("group, topics", [
    ("p-refused", [("two", [])]),  # a topic with no partitions
    ("p-refused", [("two", [0, -1])]),  # a negative partition
    ("", [("two", [0])]),  # no group id
])
def test_what_the_persister_refuses_fails_the_group(b, group, topics):
    """DefaultStatePersister.validate throws IllegalArgumentException: the group's UNKNOWN_SERVER_ERROR
    with Errors' message and no topics, unknown topics included."""
    c = RawKafkaClient.connect(b.bootstrap_servers)
    g = describe(c, group, topics + [("no-such-topic", [0])])
    assert (g.error_code, g.error_message, list(g.topics)) == (
        E.unknown_server_error, "The server experienced an unexpected error when processing the request.", [])


def test_only_unknown_topics_reach_no_persister(b):
    """No known topic: nothing read from the share coordinator, so nothing to refuse."""
    c = RawKafkaClient.connect(b.bootstrap_servers)
    g = describe(c, "", [("no-such-topic", [])])
    assert g.error_code == E.none
    assert [(t.topic_name, t.topic_id or uuid.UUID(int=0)) for t in g.topics] == [("no-such-topic", uuid.UUID(int=0))]


def test_a_partition_named_twice_fails_the_share_fetch(b):
    m = Member(b, "p-twice-fetch")
    m.join()
    tid = topic_id(b, "t")
    body = {"group_id": m.group, "member_id": m.member_id, "share_session_epoch": 0, "max_wait": 0,
            "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 10, "batch_size": 10,
            "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": []},
                                                        {"partition_index": 0, "acknowledgement_batches": []}]}],
            "forgotten_topics_data": []}
    r = m.c.request(SF, 1, body)
    assert (r.error_code, list(r.responses)) == (E.unknown_server_error, [])
    assert m.fetch(tid, epoch=1).error_code == E.share_session_not_found  # no session was opened


@pytest.mark.parametrize("member_id", ["", "m" * 37])
def test_a_heartbeat_with_an_invalid_member_id_is_refused_without_a_message(b, member_id):
    """KafkaApis.isMemberIdValid (not empty, at most 36 characters) before the coordinator."""
    c = RawKafkaClient.connect(b.bootstrap_servers)
    r = c.request(76, 1, {"group_id": "p-hb", "member_id": member_id, "member_epoch": 0, "rack_id": None,
                          "subscribed_topic_names": ["t"]})
    assert (r.error_code, r.error_message) == (E.invalid_request, None)
