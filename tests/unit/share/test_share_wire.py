"""Share groups (KIP-932) over a real socket with the clock driven by the test: ShareGroupHeartbeat
membership, ShareFetch acquiring under a lock, ShareAcknowledge outcomes, share sessions and their
errors, as Kafka 4.4 answers them."""

from __future__ import annotations

import time
import uuid

import pytest

from mockbroker import ManualClock, MockBroker
from mockbroker.admin.metrics import render_metrics
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import build_batch
from protocol.registry import ApiKey

E = ErrorCode
SGH, SF, SA = ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4
LOCK_MS = 30_000  # group.share.record.lock.duration.ms, Kafka's default
SESSION_MS = 45_000  # group.share.session.timeout.ms


@pytest.fixture(scope="module")
def b():
    # the initialized partitions at the next heartbeat (test_share_assignment_interval: Kafka 4.3+'s 1 s)
    cfg = {"mock.topics": ["t:1", "two:2"], "group.share.assignment.interval.ms": 0}
    with MockBroker(config=cfg, clock=ManualClock()) as broker:
        yield broker


def produce(c: RawKafkaClient, topic: str, n: int) -> None:
    body = {"acks": 1, "timeout": 1000, "topic_data": [{"name": topic, "partition_data": [
        {"index": 0, "records": build_batch([(b"k", b"v", [])] * n, base_timestamp=1)}]}]}
    assert c.request(0, 9, body).responses[0].partition_responses[0].error_code == 0


class Member:
    def __init__(self, b: MockBroker, group: str, topics: tuple[str, ...] = ("t",)) -> None:
        self.c = RawKafkaClient.connect(b.bootstrap_servers, client_id="share")
        self.group = group
        self.member_id = str(uuid.uuid4())
        self.epoch = 0
        self.topics = list(topics)
        self.session = 0
        self.assigned: dict[uuid.UUID, list[int]] = {}

    def hb(self, epoch: int | None = None, topics: list[str] | None = None):
        e = self.epoch if epoch is None else epoch
        r = self.c.request(SGH, 1, {"group_id": self.group, "member_id": self.member_id, "member_epoch": e,
                                    "rack_id": None,
                                    "subscribed_topic_names": topics if topics is not None
                                    else (self.topics if e == 0 else None)})
        if r.error_code == E.none:
            self.epoch = r.member_epoch
            if r.assignment is not None:
                self.assigned = {tp.topic_id: sorted(tp.partitions) for tp in r.assignment.topic_partitions}
        return r

    def join(self) -> None:
        assert self.hb().error_code == E.none
        assert self.hb().error_code == E.none  # the second heartbeat brings the initialized partitions

    def fetch(self, topic_id: uuid.UUID, acks=(), epoch: int | None = None, max_wait: int = 0, version: int = 2,
              max_records: int = 500):
        e = self.session if epoch is None else epoch
        body = {"group_id": self.group, "member_id": self.member_id, "share_session_epoch": e,
                "max_wait": max_wait, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": max_records,
                "batch_size": 500, "share_acquire_mode": 0, "is_renew_ack": False,
                "topics": [{"topic_id": topic_id, "partitions": [
                    {"partition_index": 0, "acknowledgement_batches": [
                        {"first_offset": f, "last_offset": la, "acknowledge_types": list(t)} for f, la, t in acks]}]}],
                "forgotten_topics_data": []}
        r = self.c.request(SF, version, body)
        if r.error_code == E.none:
            self.session = 1 if e == 0 else (e + 1 if e > 0 else 0)
        return r

    def ack(self, topic_id: uuid.UUID, acks, epoch: int | None = None, version: int = 2):
        e = self.session if epoch is None else epoch
        r = self.c.request(SA, version, {
            "group_id": self.group, "member_id": self.member_id, "share_session_epoch": e, "is_renew_ack": False,
            "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                {"first_offset": f, "last_offset": la, "acknowledge_types": list(t)} for f, la, t in acks]}]}]})
        if r.error_code == E.none and e >= 0:
            self.session = e + 1
        return r


def topic_id(b: MockBroker, name: str) -> uuid.UUID:
    return b.call(lambda c: c.metadata.topics[name].topic_id)


def acquired(r) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in r.responses for p in t.partitions for a in p.acquired_records]


def test_membership_assigns_after_the_state_is_initialized(b):
    m = Member(b, "g-join")
    r = m.hb()
    # a new group is at epoch 1 (Kafka 4.3+'s ModernGroup): its first member brings it to 2
    assert (r.error_code, r.member_epoch, r.heartbeat_interval.total_seconds()) == (E.none, 2, 5.0)
    assert r.assignment is not None and m.assigned == {}  # not initialized yet
    r = m.hb()
    assert (r.member_epoch, m.assigned) == (3, {topic_id(b, "t"): [0]})
    m2 = Member(b, "g-join")
    r = m2.hb()
    assert r.member_epoch == 4 and m2.assigned == {topic_id(b, "t"): [0]}  # one partition, shared
    assert m.hb(epoch=2).error_code == E.none  # the previous epoch is accepted
    assert m.hb(epoch=9).error_code == E.fenced_member_epoch
    assert Member(b, "g-join").hb(epoch=3).error_code == E.unknown_member_id
    assert m.hb(epoch=0, topics=[]).error_code == E.invalid_request  # SubscribedTopicNames must be set
    listed = b.call(lambda c: [g.as_listed_group() for g in c.groups.registry.groups.values()
                               if g.group_id == "g-join"])
    assert (listed[0].protocol_type, listed[0].group_type, listed[0].state) == ("share", "share", "Stable")
    assert m.hb(epoch=-1).member_epoch == -1 and m2.hb(epoch=-1).error_code == E.none
    assert b.call(lambda c: c.groups.registry.get("g-join").state) == "Empty"


def test_share_assignment_interval():
    """Kafka 4.3+: a share group's target is recomputed at most once per share.assignment.interval.ms
    (1000 ms): the partitions initialized after the first heartbeat come with the first heartbeat past
    the interval, not the next one (a real share consumer gets its records about a second later)."""
    with MockBroker(config={"mock.topics": ["t:1"]}, clock=ManualClock()) as kb:
        m = Member(kb, "g-interval")
        try:
            assert (m.hb().member_epoch, m.assigned) == (2, {})  # the first target (nothing initialized yet)
            kb.advance(999)
            assert (m.hb().member_epoch, m.assigned) == (2, {})  # epoch 3 waits for the interval
            kb.advance(1)
            assert (m.hb().member_epoch, m.assigned) == (3, {topic_id(kb, "t"): [0]})
        finally:
            m.c.close()


def test_session_timeout_fences_a_silent_member(b):
    m = Member(b, "g-timeout")
    m.join()
    b.advance(SESSION_MS - 1)
    assert m.hb().error_code == E.none  # in time: the deadline moves
    b.advance(SESSION_MS)
    assert m.hb().error_code == E.unknown_member_id


def test_fetch_acquires_release_redelivers_and_lock_expiry_returns_records(b):
    tid = topic_id(b, "two")
    m = Member(b, "g-deliver", ("two",))
    m.join()
    assert acquired(m.fetch(tid)) == []  # the share-partition starts at the log end (latest)
    produce(m.c, "two", 5)
    r = m.fetch(tid)
    assert (r.error_code, r.acquisition_lock_timeout.total_seconds()) == (E.none, LOCK_MS / 1000)
    assert acquired(r) == [(0, 4, 1)]
    other = Member(b, "g-deliver", ("two",))
    other.join()
    assert acquired(other.fetch(tid)) == []  # locked by m: no record goes to two members at once
    r = m.ack(tid, [(0, 1, [ACCEPT]), (2, 2, [RELEASE]), (3, 3, [REJECT])])
    assert [p.error_code for t in r.responses for p in t.partitions] == [E.none]
    assert acquired(other.fetch(tid)) == [(2, 2, 2)]  # released: redelivered, second delivery
    view = b.share_group("g-deliver")
    records = {r["first_offset"]: (r["state"], r["delivery_count"], r["member_id"])
               for r in view["share_partitions"][0]["records"]}
    assert records == {2: ("ACQUIRED", 2, other.member_id), 3: ("ARCHIVED", 1, None), 4: ("ACQUIRED", 1, m.member_id)}
    assert view["share_partitions"][0]["start_offset"] == 2
    assert view["acknowledgements"] == {"ACCEPT": 2, "RELEASE": 1, "REJECT": 1}
    b.advance(LOCK_MS)  # offset 4 (m's) and 2 (other's) locks expire
    assert acquired(m.fetch(tid)) == [(2, 2, 3), (4, 4, 2)]
    r = m.fetch(tid, acks=[(2, 2, [ACCEPT]), (4, 4, [ACCEPT])])  # piggy-backed
    assert [p.acknowledge_error_code for t in r.responses for p in t.partitions] == [E.none]
    state = b.call(lambda c: c.brokers[0].share_partitions.group_partitions("g-deliver")[0].view())
    assert (state["start_offset"], state["records"]) == (5, [])


def test_acknowledging_what_another_member_holds_is_an_invalid_record_state(b):
    tid = topic_id(b, "t")
    a, c = Member(b, "g-owner"), Member(b, "g-owner")
    a.join()
    c.join()
    assert acquired(a.fetch(tid)) == []
    produce(a.c, "t", 2)
    got = acquired(a.fetch(tid))
    assert got and acquired(c.fetch(tid)) == []
    first, last, _ = got[0]
    r = c.ack(tid, [(first, last, [ACCEPT])])
    assert [p.error_code for t in r.responses for p in t.partitions] == [E.invalid_record_state]
    r = a.ack(tid, [(first, last, [ACCEPT, ACCEPT, ACCEPT][: last - first + 2])])  # one type too many
    assert [p.error_code for t in r.responses for p in t.partitions] == [E.invalid_request]


def test_share_session_errors(b):
    tid = topic_id(b, "t")
    m = Member(b, "g-session")
    m.join()
    assert m.fetch(tid, epoch=1).error_code == E.share_session_not_found
    assert m.ack(tid, [], epoch=1).error_code == E.share_session_not_found
    assert m.fetch(tid, epoch=0, acks=[(0, 0, [ACCEPT])]).error_code == E.invalid_request
    assert m.fetch(tid, epoch=0).error_code == E.none
    assert m.fetch(tid, epoch=5).error_code == E.invalid_share_session_epoch
    assert m.ack(tid, [], epoch=0).error_code == E.invalid_share_session_epoch
    assert m.fetch(tid).error_code == E.none  # epoch 1
    bad = m.c.request(SF, 1, {"group_id": "g-session", "member_id": "", "share_session_epoch": 0, "max_wait": 0,
                              "min_bytes": 1, "max_bytes": 1, "max_records": 1, "batch_size": 1, "topics": [],
                              "forgotten_topics_data": []})
    # ShareFetchRequest.getErrorResponse keeps the code only: Kafka 4.4.0 answers no message
    assert (bad.error_code, bad.error_message) == (E.invalid_request, None)
    assert m.fetch(tid, epoch=-1).error_code == E.none  # closed
    assert m.fetch(tid, epoch=2).error_code == E.share_session_not_found


def test_a_long_poll_waits_for_records_and_wakes_on_produce(b):
    tid = topic_id(b, "t")
    m = Member(b, "g-poll")
    m.join()
    producer = RawKafkaClient.connect(b.bootstrap_servers, client_id="p")
    assert acquired(m.fetch(tid)) == []  # latest: nothing yet
    corr = m.c.send(SF, 2, {"group_id": "g-poll", "member_id": m.member_id, "share_session_epoch": m.session,
                     "max_wait": 10_000, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 500, "batch_size": 500,
                     "share_acquire_mode": 0, "is_renew_ack": False,
                     "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0,
                                                                "acknowledgement_batches": []}]}],
                     "forgotten_topics_data": []})
    for _ in range(200):  # the request reaches the broker and waits in its ShareFetch purgatory
        if b'numdelayedoperations{broker="0",delayedOperation="ShareFetch"} 1.0' in b.call(
                lambda c: render_metrics(c)[0]):
            break
        time.sleep(0.01)
    else:
        raise AssertionError("the ShareFetch did not wait in the purgatory")
    produce(producer, "t", 3)
    r = m.c.response(SF, 2, corr)
    assert len(acquired(r)) == 1 and acquired(r)[0][2] == 1


def test_a_fetch_at_the_log_end_reads_nothing_from_the_log(b, monkeypatch):
    """A ShareFetch (or a Fetch) whose offset is the high watermark answers without reading the log, as
    the read would answer (no records); one below it reads."""
    from mockbroker.storage.log import PartitionLog

    reads: list[int] = []
    real_read = PartitionLog.read
    monkeypatch.setattr(PartitionLog, "read",
                        lambda log, offset, *a, **kw: reads.append(offset) or real_read(log, offset, *a, **kw))
    tid = topic_id(b, "t")
    m = Member(b, "g-end")
    m.join()
    assert acquired(m.fetch(tid)) == [] and reads == []  # latest: at the end, nothing read
    producer = RawKafkaClient.connect(b.bootstrap_servers, client_id="p")
    produce(producer, "t", 2)
    got = acquired(m.fetch(tid))
    assert len(got) == 1 and got[0][2] == 1 and len(reads) == 1  # records below the end: read once
    assert acquired(m.fetch(tid, acks=[(got[0][0], got[0][1], [ACCEPT])])) == [] and len(reads) == 1


def test_share_group_describe_list_and_delete(b):
    m = Member(b, "g-describe")
    m.join()
    r = m.c.request(ApiKey.SHARE_GROUP_DESCRIBE, 1, {"group_ids": ["g-describe", "nope"],
                                                      "include_authorized_operations": False})
    g, missing = r.groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (
        E.none, "Stable", 3, 3, "simple")
    (member,) = g.members
    assert (member.member_id, member.member_epoch, member.client_id, member.subscribed_topic_names) == (
        m.member_id, 3, "share", ("t",))
    assert [(tp.topic_name, tp.partitions) for tp in member.assignment.topic_partitions] == [("t", (0,))]
    assert (missing.error_code, missing.error_message) == (E.group_id_not_found, "Group nope not found.")
    listed = m.c.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]})
    assert "g-describe" in [x.group_id for x in listed.groups]
    assert all(x.group_type == "share" for x in listed.groups)
    d = m.c.request(ApiKey.DESCRIBE_GROUPS, 6, {"groups": ["g-describe"], "include_authorized_operations": False})
    assert (d.groups[0].error_code, d.groups[0].error_message, d.groups[0].group_state) == (
        E.group_id_not_found, "Group g-describe is not a classic group.", "Dead")
    delete = m.c.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g-describe"]})
    assert delete.results[0].error_code == E.non_empty_group
    assert m.hb(epoch=-1).error_code == E.none
    keys = b.call(lambda c: [k for k in c.share_persister.states if k[0] == "g-describe"])
    assert keys  # the share coordinator keeps the group's share-partitions' state ...
    assert m.c.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g-describe"]}).results[0].error_code == E.none
    assert b.share_group("g-describe") is None
    assert b.call(lambda c: [k for k in c.share_persister.states if k[0] == "g-describe"]) == []  # ... until deleted


def test_offsets_admin_describe_alter_delete(b):
    tid = topic_id(b, "two")
    m = Member(b, "g-offsets", ("two",))
    m.join()
    assert acquired(m.fetch(tid)) == []  # loaded at the log end
    produce(m.c, "two", 4)
    got = acquired(m.fetch(tid))
    first = got[0][0]
    m.ack(tid, [(first, first + 1, [ACCEPT])])
    c = m.c
    DSGO, ASGO, DELSGO = (ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, ApiKey.ALTER_SHARE_GROUP_OFFSETS,
                          ApiKey.DELETE_SHARE_GROUP_OFFSETS)
    r = c.request(DSGO, 1, {"groups": [{"group_id": "g-offsets", "topics": None}]})
    (g,) = r.groups
    (t,) = g.topics
    (p0, p1) = sorted(t.partitions, key=lambda p: p.partition_index)
    # the start offset as written (before the move past the accepted records), the lag as Kafka counts it
    assert (t.topic_name, p0.start_offset, p0.lag, p1.start_offset, p1.lag) == ("two", first, 2, -1, -1)
    r = c.request(DSGO, 1, {"groups": [{"group_id": "g-offsets", "topics": [
        {"topic_name": "nope", "partitions": [0]}, {"topic_name": "two", "partitions": [0]}]}]})
    assert [(t.topic_name, [p.start_offset for p in t.partitions]) for t in r.groups[0].topics] == [
        ("two", [first]), ("nope", [-1])]
    alter = {"group_id": "g-offsets", "topics": [{"topic_name": "two", "partitions": [
        {"partition_index": 0, "start_offset": 1}, {"partition_index": 7, "start_offset": 0}]}]}
    r = c.request(ASGO, 0, alter)
    assert (r.error_code, r.error_message) == (E.non_empty_group, "The group is not empty.")  # only when Empty
    assert m.fetch(tid, epoch=-1).error_code == E.none and m.hb(epoch=-1).error_code == E.none
    c = RawKafkaClient.connect(b.bootstrap_servers, client_id="admin")
    m.c.close()  # the consumer is gone: the broker drops the group's share-partitions (onGroupEmpty)
    for _ in range(200):
        if not b.share_group("g-offsets")["share_partitions"]:
            break
        time.sleep(0.01)
    assert b.share_group("g-offsets")["share_partitions"] == []
    r = c.request(ASGO, 0, alter)
    assert r.error_code == E.none
    assert [(p.partition_index, p.error_code) for p in r.responses[0].partitions] == [
        (0, E.none), (7, E.unknown_topic_or_partition)]
    again = Member(b, "g-offsets", ("two",))
    again.join()
    assert acquired(again.fetch(tid)) == [(1, first + 3, 1)]  # from the altered start offset to the log end, afresh
    assert again.hb(epoch=-1).error_code == E.none and again.fetch(tid, epoch=-1).error_code == E.none
    r = c.request(DELSGO, 0, {"group_id": "g-offsets", "topics": [{"topic_name": "two"}, {"topic_name": "t"}]})
    assert [(t.topic_name, t.error_code, t.error_message) for t in r.responses] == [
        ("two", E.none, None), ("t", E.unknown_topic_or_partition, "There is no offset information to delete.")]
    r = c.request(DSGO, 1, {"groups": [{"group_id": "g-offsets", "topics": [{"topic_name": "two", "partitions": [0]}]}]})
    assert [p.start_offset for p in r.groups[0].topics[0].partitions] == [-1]
    r = c.request(DELSGO, 0, {"group_id": "no-group", "topics": [{"topic_name": "two"}]})
    assert (r.error_code, r.error_message) == (E.group_id_not_found, "Group no-group not found.")


def test_fault_rules_and_the_fetch_quota_apply_to_the_share_apis(b):
    tid = topic_id(b, "t")
    m = Member(b, "g-faults")
    m.c.client_id = "share-faulty"
    m.join()
    assert m.fetch(tid).error_code == E.none
    b.inject(api="ShareFetch", errors=["UNKNOWN_SERVER_ERROR"], client_id="share-faulty")
    b.inject(api="ShareGroupHeartbeat", errors=["COORDINATOR_NOT_AVAILABLE"], client_id="share-faulty")
    try:
        r = m.fetch(tid)
        assert (r.error_code, r.responses) == (E.unknown_server_error, ())
        assert m.hb().error_code == E.coordinator_not_available
        assert m.hb().error_code == E.none  # one each
        assert m.fetch(tid).error_code == E.none  # the injected answer did not touch the session
    finally:
        b.clear_faults()
    b.set_quota(client_id="share-faulty", consumer_byte_rate=100)
    try:
        produce(m.c, "t", 200)
        r = m.fetch(tid)
        # throttled: sent without partitions (ShareFetchContext.throttleResponse), yet the records were
        # acquired for the member and stay locked until their lock expires, as in Kafka
        assert r.throttle_time.total_seconds() > 0 and r.responses == ()
        states = {x["state"] for p in b.share_group("g-faults")["share_partitions"] for x in p["records"]}
        assert states == {"ACQUIRED"}
        b.advance(LOCK_MS)
        states = {x["state"] for p in b.share_group("g-faults")["share_partitions"] for x in p["records"]}
        assert states == {"AVAILABLE"}
    finally:
        b.set_quota(client_id="share-faulty", consumer_byte_rate=None)


def test_a_share_group_id_is_refused_by_the_other_protocols(b):
    m = Member(b, "g-types")
    m.join()
    assert m.hb(epoch=-1).error_code == E.none  # Empty, and still a share group
    join = m.c.request(ApiKey.JOIN_GROUP, 9, {
        "group_id": "g-types", "session_timeout": 10_000, "rebalance_timeout": 10_000, "member_id": "",
        "group_instance_id": None, "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}],
        "reason": None})
    assert (join.error_code, join.member_id) == (E.inconsistent_group_protocol, "")
    cgh = m.c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": "g-types", "member_id": str(uuid.uuid4()), "member_epoch": 0, "instance_id": None,
        "rack_id": None, "rebalance_timeout": 10_000, "subscribed_topic_names": ["t"],
        "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []})
    assert (cgh.error_code, cgh.error_message) == (E.group_id_not_found, "Group g-types is not a consumer group.")
    assert b.share_group("g-types") is not None


def test_renew_extends_the_lock_from_v2_only(b):
    tid = topic_id(b, "two")
    m = Member(b, "g-renew", ("two",))
    m.join()
    assert acquired(m.fetch(tid)) == []
    produce(m.c, "two", 2)
    (first, last, _), = acquired(m.fetch(tid))
    v1 = m.ack(tid, [(first, last, [RENEW])], version=1)  # RENEW is ShareAcknowledge v2's (KIP-1222)
    assert [p.error_code for t in v1.responses for p in t.partitions] == [E.invalid_request]
    b.advance(LOCK_MS - 1)
    r = m.ack(tid, [(first, last, [RENEW])])
    assert [p.error_code for t in r.responses for p in t.partitions] == [E.none]
    b.advance(LOCK_MS - 1)  # past the first lock's deadline: still held
    records = b.share_group("g-renew")["share_partitions"][0]["records"]
    assert {x["state"] for x in records} == {"ACQUIRED"}
    bad = m.c.request(SF, 2, {"group_id": "g-renew", "member_id": m.member_id, "share_session_epoch": m.session,
                              "max_wait": 0, "min_bytes": 1, "max_bytes": 100, "max_records": 0, "batch_size": 0,
                              "share_acquire_mode": 0, "is_renew_ack": True, "topics": [],
                              "forgotten_topics_data": []})
    assert (bad.error_code, bad.error_message) == (E.invalid_request, None)  # the reason is logged only


def test_group_configs_set_over_the_wire_take_effect(b):
    """IncrementalAlterConfigs on the GROUP resource (as kafka-configs --entity-type groups does):
    the share group reads its configs at each use."""
    tid = topic_id(b, "t")
    m = Member(b, "g-configs")
    alter = m.c.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False, "resources": [
        {"resource_type": 32, "resource_name": "g-configs", "configs": [
            {"name": "share.record.lock.duration.ms", "config_operation": 0, "value": "15000"},
            {"name": "share.heartbeat.interval.ms", "config_operation": 0, "value": "6000"},
            {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}]})
    assert [r.error_code for r in alter.responses] == [E.none]
    assert m.hb().heartbeat_interval.total_seconds() == 6.0
    m.hb()
    produce(m.c, "t", 3)  # before the share-partition is loaded: read from the log start all the same
    r = m.fetch(tid)
    assert r.acquisition_lock_timeout.total_seconds() == 15.0
    got = acquired(r)
    assert got and got[0][0] == 0  # earliest
    b.advance(15_000)
    assert {x["state"] for p in b.share_group("g-configs")["share_partitions"] for x in p["records"]} == {"AVAILABLE"}


def test_the_broker_share_configs_are_start_up_configs():
    """group.share.* in the broker's configuration, as in Kafka's server.properties: the broker's
    defaults and the bounds of the group configs (ShareGroupConfig, validated at start)."""
    with MockBroker(config={"mock.topics": ["t:1"], "group.share.min.record.lock.duration.ms": 1000,
                            "group.share.record.lock.duration.ms": 2000, "group.share.delivery.count.limit": 3},
                    clock=ManualClock()) as broker:
        tid = topic_id(broker, "t")
        m = Member(broker, "g-static")
        alter = m.c.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False, "resources": [
            {"resource_type": 32, "resource_name": "g-static", "configs": [
                {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]},
            {"resource_type": 32, "resource_name": "g-lock", "configs": [  # under Kafka's default minimum
                {"name": "share.record.lock.duration.ms", "config_operation": 0, "value": "1000"}]},
            {"resource_type": 32, "resource_name": "g-over", "configs": [
                {"name": "share.record.lock.duration.ms", "config_operation": 0, "value": "70000"}]}]})
        assert [(r.error_code, r.error_message) for r in alter.responses] == [
            (E.none, None), (E.none, None),
            (E.invalid_config, "share.record.lock.duration.ms must be in the range 1000 to 60000 inclusive.")]
        m.join()
        produce(m.c, "t", 1)
        for delivery in (1, 2, 3):  # the broker's lock duration and delivery-count limit
            r = m.fetch(tid)
            assert r.acquisition_lock_timeout.total_seconds() == 2.0
            assert [d for _, _, d in acquired(r)] == [delivery], r
            broker.advance(2000)
        assert acquired(m.fetch(tid)) == []
        described = m.c.request(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": 4, "resource_name": "0", "configuration_keys": ["group.share.record.lock.duration.ms"]}],
            "include_synonyms": False, "include_documentation": False})
        assert [(c.name, c.value, c.config_source) for c in described.results[0].configs] == [
            ("group.share.record.lock.duration.ms", "2000", 4)]  # STATIC_BROKER_CONFIG


@pytest.mark.parametrize("config, message", [
    ({"group.share.record.lock.duration.ms": 10_000},
     "group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"),
    ({"group.share.delivery.count.limit": 8, "group.share.max.delivery.count.limit": 6},
     "group.share.max.delivery.count.limit must be greater than or equal to group.share.delivery.count.limit"),
    ({"group.share.min.record.lock.duration.ms": 999}, "group.share.min.record.lock.duration.ms .*at least 1000"),
    ({"group.share.delivery.count.limit": 11}, "group.share.delivery.count.limit .*no more than 10"),
])
def test_inconsistent_broker_share_configs_stop_the_start(config, message):
    with pytest.raises(Exception, match=message):
        MockBroker(config=config).start()
