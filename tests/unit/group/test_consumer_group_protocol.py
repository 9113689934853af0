"""KIP-848 ConsumerGroupHeartbeat over the wire, with the clock driven by the test.

The reconciliation steps are checked as a member sees them: a joining member
waits for partitions another member still owns (UNRELEASED), the owner is
asked to revoke first and keeps its epoch until it stops reporting them, and
both reach the new assignment epoch.  Deadlines (session, revocation) are
moved to one millisecond before and at their expiry.
"""

from __future__ import annotations

import uuid

import pytest

from mockbroker import ManualClock, MockBroker
from mockbroker.group.consumer_group import ConsumerGroupDescription
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

E = ErrorCode
CGH = ApiKey.CONSUMER_GROUP_HEARTBEAT
SESSION, REBALANCE_TIMEOUT, INTERVAL = 3_000, 5_000, 500


class Member:
    def __init__(self, b: MockBroker, group: str, instance_id: str | None = None, topics=("t",)) -> None:
        self.c = RawKafkaClient.connect(b.bootstrap_servers, client_id="m")
        self.group = group
        self.member_id = str(uuid.uuid4())
        self.instance_id = instance_id
        self.epoch = 0
        self.topics = list(topics)
        self.owned: dict[uuid.UUID, list[int]] = {}

    def hb(self, epoch: int | None = None, owned=None, full: bool = False, assignor: str | None = None,
           topics=None, version: int = 1, member_id: str | None = None):
        e = self.epoch if epoch is None else epoch
        joining = e == 0 or full
        r = self.c.request(CGH, version, {
            "group_id": self.group, "member_id": self.member_id if member_id is None else member_id,
            "member_epoch": e, "instance_id": self.instance_id, "rack_id": None,
            "rebalance_timeout": REBALANCE_TIMEOUT if joining else -1,
            "subscribed_topic_names": (topics or self.topics) if joining or topics else None,
            "subscribed_topic_regex": None, "server_assignor": assignor,
            "topic_partitions": [] if e == 0 else [
                {"topic_id": t, "partitions": ps} for t, ps in (self.owned if owned is None else owned).items()]})
        if r.error_code == E.none:
            self.epoch = r.member_epoch
            if r.assignment is not None:
                self.owned = {tp.topic_id: sorted(tp.partitions) for tp in r.assignment.topic_partitions}
        return r

    def partitions(self) -> list[int]:
        return sorted(p for ps in self.owned.values() for p in ps)


@pytest.fixture
def b():
    # the reconciliation steps one heartbeat at a time: a target on every epoch bump (TestAssignmentInterval
    # has Kafka 4.3+'s 1 s interval)
    cfg = {"group.consumer.session.timeout.ms": SESSION, "group.consumer.heartbeat.interval.ms": INTERVAL,
           "mock.topics": ["t:4"], "group.consumer.assignment.interval.ms": 0}
    with MockBroker(config=cfg, clock=ManualClock()) as broker:
        yield broker


def describe(b: MockBroker, group: str) -> ConsumerGroupDescription:
    return b.call(lambda br: br.groups.consumer_group_describe(0, [group])[0])


@pytest.mark.parametrize("release, first_epoch", [("4.2", 1), ("4.3", 2), ("4.4", 2)])
def test_a_new_groups_first_member_epoch_by_release(release, first_epoch):
    """Kafka 4.3 started ModernGroup's epoch at 1 (4.2.2's constructor leaves it 0, 4.3.1's and 4.4.0's
    set 1): the first member of a new group gets epoch 2, as a real Kafka 4.4.0 answers."""
    with MockBroker(config={"mock.topics": ["t:1"], "mock.kafka.version": release}) as b:
        m = Member(b, "new")
        try:
            assert (m.hb().error_code, m.epoch) == (E.none, first_epoch)
            assert describe(b, "new").group_epoch == first_epoch
        finally:
            m.c.close()


class TestJoinAndReconcile:
    def test_join_gets_everything_then_revoke_before_assign(self, b):
        a = Member(b, "r1")
        r = a.hb()
        # a new group is at epoch 1 (Kafka 4.3+'s ModernGroup): its first member brings it to 2
        assert (r.error_code, r.member_epoch, r.heartbeat_interval.total_seconds()) == (E.none, 2, 0.5)
        assert a.partitions() == [0, 1, 2, 3]
        m2 = Member(b, "r1")
        r = m2.hb()
        # group epoch 3; m2's target partitions are still owned by a: UNRELEASED, nothing yet
        assert (r.member_epoch, m2.partitions()) == (3, [])
        assert describe(b, "r1").state == "Reconciling"
        r = a.hb()  # a must revoke two partitions first: it keeps epoch 2
        assert (r.member_epoch, len(a.partitions())) == (2, 2)
        kept = a.partitions()
        # the next heartbeat reports only the kept partitions: the revocation is done, a moves to epoch 3
        assert a.hb().member_epoch == 3 and a.partitions() == kept
        r = m2.hb()
        assert r.member_epoch == 3 and sorted(kept + m2.partitions()) == [0, 1, 2, 3]
        assert describe(b, "r1").state == "Stable"

    def test_owner_still_reporting_revoked_partitions_keeps_its_epoch(self, b):
        a = Member(b, "r2")
        a.hb()
        everything = dict(a.owned)
        Member(b, "r2").hb()
        a.hb(owned=everything)
        assert a.epoch == 2
        r = a.hb(owned=everything)  # still owns the revoked ones
        assert r.member_epoch == 2 and r.assignment is None

    def test_range_assignor(self, b):
        a, m2 = Member(b, "r3"), Member(b, "r3")
        a.hb(assignor="range")
        m2.hb(assignor="range")
        a.hb()
        a.hb()
        m2.hb()
        ids = sorted([a.member_id, m2.member_id])
        first = a if a.member_id == ids[0] else m2
        assert first.partitions() == [0, 1]  # contiguous ranges in member order
        assert describe(b, "r3").assignor_name == "range"


class TestFencing:
    def test_epochs_and_unknown_member(self, b):
        a = Member(b, "f1")
        a.hb()
        assert a.hb(epoch=7).error_code == E.fenced_member_epoch
        assert a.hb(epoch=1, member_id=str(uuid.uuid4())).error_code == E.unknown_member_id
        # getOrMaybeCreateConsumerGroup: a heartbeat past the join to no group (as Kafka 4.4.0 answers)
        assert Member(b, "nope").hb(epoch=3).error_code == E.group_id_not_found

    def test_session_timeout_fences_and_survivor_takes_over(self, b):
        a, m2 = Member(b, "f2"), Member(b, "f2")
        a.hb()
        m2.hb()
        a.hb()
        a.hb()
        m2.hb()
        assert len(a.partitions()) == len(m2.partitions()) == 2
        b.advance(SESSION - 1)
        a.hb()
        assert len(describe(b, "f2").members) == 2
        b.advance(1)  # m2 silent for the session timeout
        assert [m.member_id for m in describe(b, "f2").members] == [a.member_id]
        r = a.hb()
        assert r.member_epoch == 4 and a.partitions() == [0, 1, 2, 3]  # epochs: a joins 2, m2 joins 3, m2 fenced 4
        assert m2.hb().error_code == E.unknown_member_id

    def test_expel_fences_at_once_as_the_session_timeout_would(self, b):
        a, m2 = Member(b, "f5"), Member(b, "f5")
        a.hb(), m2.hb(), a.hb(), a.hb(), m2.hb()
        assert len(a.partitions()) == len(m2.partitions()) == 2
        view = b.expel_member("f5", m2.member_id)  # no time passes
        assert [m["member_id"] for m in view["members"]] == [a.member_id] and view["group_epoch"] == 4
        r = a.hb()
        assert r.member_epoch == 4 and a.partitions() == [0, 1, 2, 3]  # as the session timeout's fencing
        assert m2.hb().error_code == E.unknown_member_id
        m2.epoch, m2.owned = 0, {}
        assert m2.hb().error_code == E.none and m2.epoch == 5  # it rejoins with epoch 0, as a fenced consumer does
        with pytest.raises(LookupError, match="no member 'nope'"):
            b.expel_member("f5", "nope")
        with pytest.raises(LookupError, match="no group 'f-none'"):
            b.expel_member("f-none", a.member_id)

    def test_revocation_timeout_fences_a_member_that_does_not_revoke(self, b):
        a = Member(b, "f3")
        a.hb()
        everything = dict(a.owned)
        m2 = Member(b, "f3")
        m2.hb()
        a.hb(owned=everything)  # asked to revoke: the member's rebalance timeout starts
        for _ in range(4):
            b.advance(1_000)
            a.hb(owned=everything)
            m2.hb()
        b.advance(REBALANCE_TIMEOUT - 4_000 - 1)
        assert len(describe(b, "f3").members) == 2
        b.advance(1)
        assert [m.member_id for m in describe(b, "f3").members] == [m2.member_id]
        assert m2.hb().member_epoch == 4 and m2.partitions() == [0, 1, 2, 3]

    def test_leave_and_static_rejoin_without_rebalance(self, b):
        s = Member(b, "f4", instance_id="host-1")
        o = Member(b, "f4")
        s.hb()
        o.hb()
        s.hb()
        s.hb()
        o.hb()
        kept, epoch = s.partitions(), describe(b, "f4").group_epoch
        r = s.hb(epoch=-2)  # a static member leaves for a while: its partitions stay reserved
        assert (r.error_code, r.member_epoch) == (E.none, -2)
        s2 = Member(b, "f4", instance_id="host-1")
        r = s2.hb()
        assert r.error_code == E.none and s2.partitions() == kept and describe(b, "f4").group_epoch == epoch
        s3 = Member(b, "f4", instance_id="host-1")
        assert s3.hb().error_code == E.unreleased_instance_id
        r = o.hb(epoch=-1)
        assert (r.error_code, r.member_epoch) == (E.none, -1)
        assert describe(b, "f4").group_epoch == epoch + 1

    @pytest.mark.parametrize("change,error", [
        ({"member_id": ""}, E.invalid_request),
        ({"assignor": "sticky"}, E.unsupported_assignor),
        ({"epoch": -3}, E.invalid_request),
    ])
    def test_invalid_requests(self, b, change, error):
        assert Member(b, "f5").hb(**change).error_code == error

    def test_classic_join_to_a_consumer_group_is_refused(self, b):
        Member(b, "f6").hb()
        c = RawKafkaClient.connect(b.bootstrap_servers)
        r = c.request(ApiKey.JOIN_GROUP, 9, {"group_id": "f6", "session_timeout": 10_000, "rebalance_timeout": 10_000,
                                             "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                                             "protocols": [{"name": "range", "metadata": b""}], "reason": None})
        assert r.error_code == E.inconsistent_group_protocol
        lst = c.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["consumer"]})
        assert [(g.group_id, g.group_type) for g in lst.groups] == [("f6", "consumer")]


class TestOffsets:
    def _commit(self, m: Member, epoch: int, version: int = 9):
        tid = next(iter(m.owned))
        body = {"group_id": m.group, "generation_id_or_member_epoch": epoch, "member_id": m.member_id,
                "group_instance_id": None, "topics": [{"name": "t", "topic_id": tid, "partitions": [
                    {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                     "committed_metadata": ""}]}]}
        r = m.c.request(ApiKey.OFFSET_COMMIT, version, body)
        return r.topics[0].partitions[0].error_code

    def test_member_epoch_checked_on_commit_and_fetch(self, b):
        a = Member(b, "o1")
        a.hb()
        assert self._commit(a, a.epoch - 1) == E.stale_member_epoch
        assert self._commit(a, a.epoch, version=8) == E.unsupported_version
        assert self._commit(a, a.epoch) == E.none
        assert self._commit(a, a.epoch, version=10) == E.none
        def fetch(member_id, epoch):
            r = a.c.request(ApiKey.OFFSET_FETCH, 9, {"groups": [{"group_id": "o1", "member_id": member_id,
                                                                  "member_epoch": epoch, "topics": None}],
                                                      "require_stable": False})
            return r.groups[0]
        g = fetch(a.member_id, a.epoch)
        assert g.error_code == E.none and g.topics[0].partitions[0].committed_offset == 5
        assert fetch(a.member_id, a.epoch + 1).error_code == E.stale_member_epoch
        assert fetch(None, -1).error_code == E.none  # an admin client


class TestRegexSubscription:
    def _hb(self, b, group, regex, member_id: str | None = None, epoch: int = 0):
        c = RawKafkaClient.connect(b.bootstrap_servers, client_id="rx")
        r = c.request(CGH, 1, {
            "group_id": group, "member_id": member_id or str(uuid.uuid4()), "member_epoch": epoch,
            "instance_id": None, "rack_id": None, "rebalance_timeout": REBALANCE_TIMEOUT,
            "subscribed_topic_names": None, "subscribed_topic_regex": regex, "server_assignor": None,
            "topic_partitions": []})
        c.close()
        return r

    def test_regex_subscribes_matching_topics(self, b):
        """The regex is resolved after the join's answer (Kafka resolves it in the background): the
        next heartbeat brings the topics it matches."""
        b.create_topic("rx-one", 2)
        b.create_topic("rx-two", 1)
        r = self._hb(b, "rx1", "rx-.*", member_id="m1")
        assert (r.error_code, r.member_epoch, r.assignment.topic_partitions) == (E.none, 1, ())
        r = self._hb(b, "rx1", "rx-.*", member_id="m1", epoch=1)
        assert r.error_code == E.none and sum(len(tp.partitions) for tp in r.assignment.topic_partitions) == 3

    def test_catastrophic_backtracking_pattern_is_matched_in_linear_time(self, b):
        # with a backtracking engine (Python's re) this fullmatch takes about 2^100 steps: the answer
        # would never come and every other client would stall with it
        b.create_topic("a" * 100 + "b", 1)
        r = self._hb(b, "rx2", "(a+)+", member_id="m1")
        assert r.error_code == E.none and r.assignment.topic_partitions == ()
        r = self._hb(b, "rx2", "(a+)+", member_id="m1", epoch=1)
        assert r.error_code == E.none and r.assignment.topic_partitions == ()

    def test_pattern_re2_cannot_compile_is_an_invalid_regular_expression(self, b):
        r = self._hb(b, "rx3", "(?<=a)b")  # lookbehind: not in RE2 (nor in Kafka's RE2/J)
        assert r.error_code == E.invalid_regular_expression and "not a valid regular expression" in r.error_message
        assert describe(b, "rx3").error == E.group_id_not_found  # nothing was made


class TestGroupConfigs:
    """consumer.session.timeout.ms / consumer.heartbeat.interval.ms set on the group (IncrementalAlterConfigs
    on the GROUP resource) override the broker's group.consumer.* for that group only, from the member's next
    heartbeat (GroupMetadataManager reads GroupConfigManager at each one)."""

    def _alter(self, b, group: str, **configs: str | None) -> None:
        c = RawKafkaClient.connect(b.bootstrap_servers, client_id="admin")
        r = c.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
            "resource_type": 32, "resource_name": group, "configs": [
                {"name": k.replace("_", "."), "config_operation": 0 if v is not None else 1, "value": v}
                for k, v in configs.items()]}], "validate_only": False})
        c.close()
        assert r.responses[0].error_code == E.none, r.responses[0].error_message

    def test_a_member_expires_at_its_groups_session_timeout_not_the_brokers(self, b):
        self._alter(b, "gc1", consumer_session_timeout_ms="50000", consumer_heartbeat_interval_ms="7000")
        a, other = Member(b, "gc1"), Member(b, "gc-other")
        assert a.hb().heartbeat_interval.total_seconds() == 7
        assert other.hb().heartbeat_interval.total_seconds() == INTERVAL / 1000  # the broker's
        b.advance(SESSION)
        assert describe(b, "gc-other").members == []  # the broker's session timeout
        b.advance(50_000 - SESSION - 1)
        assert len(describe(b, "gc1").members) == 1
        b.advance(1)
        assert describe(b, "gc1").members == []

    def test_an_alteration_holds_for_a_live_group_from_its_next_heartbeat(self, b):
        a = Member(b, "gc2")
        assert a.hb().heartbeat_interval.total_seconds() == INTERVAL / 1000
        self._alter(b, "gc2", consumer_session_timeout_ms="45000", consumer_heartbeat_interval_ms="6000")
        b.advance(SESSION - 1)  # the deadline set before the alteration still stands until the next heartbeat
        assert a.hb().heartbeat_interval.total_seconds() == 6
        b.advance(45_000 - 1)
        assert len(describe(b, "gc2").members) == 1
        assert a.hb().member_epoch == 2
        self._alter(b, "gc2", consumer_session_timeout_ms=None, consumer_heartbeat_interval_ms=None)
        assert a.hb().heartbeat_interval.total_seconds() == INTERVAL / 1000  # deleted: the broker's again
        b.advance(SESSION)
        assert describe(b, "gc2").members == []

    def test_a_static_member_that_leaves_keeps_its_place_for_the_groups_session_timeout(self, b):
        self._alter(b, "gc3", consumer_session_timeout_ms="46000")
        s = Member(b, "gc3", instance_id="host-1")
        s.hb()
        assert s.hb(epoch=-2).error_code == E.none
        b.advance(46_000 - 1)
        assert len(describe(b, "gc3").members) == 1
        b.advance(1)
        assert describe(b, "gc3").members == []


class TestAssignmentInterval:
    """Kafka 4.3+ (GroupMetadataManager.maybeUpdateTargetAssignment, canComputeNextTargetAssignment):
    a bumped group epoch gets a new target assignment at most once per consumer.assignment.interval.ms
    (1000 ms by default); inside the interval a heartbeat answers the last target, the group ASSIGNING.
    The sequence is the one a real Kafka 4.4.0 answered bench/scaling.py's three members joining at once."""

    @pytest.fixture
    def kb(self):
        cfg = {"group.consumer.session.timeout.ms": SESSION, "group.consumer.heartbeat.interval.ms": INTERVAL,
               "mock.topics": ["t:4"]}
        with MockBroker(config=cfg, clock=ManualClock()) as broker:
            yield broker

    def test_a_join_inside_the_interval_waits_for_the_next_target(self, kb):
        a, m2 = Member(kb, "ai"), Member(kb, "ai")
        assert (a.hb().member_epoch, a.partitions()) == (2, [0, 1, 2, 3])  # the first target: no wait
        r = m2.hb()
        # group epoch 3, but no new target yet: m2 is at the assignment epoch 2 with nothing
        assert (r.error_code, r.member_epoch, m2.partitions()) == (E.none, 2, [])
        d = describe(kb, "ai")
        assert (d.state, d.group_epoch, d.assignment_epoch) == ("Assigning", 3, 2)
        kb.advance(999)
        assert (a.hb().member_epoch, a.partitions(), describe(kb, "ai").state) == (2, [0, 1, 2, 3], "Assigning")
        kb.advance(1)  # the interval since the first target has passed: this heartbeat computes the next
        r = a.hb()
        assert (r.member_epoch, len(a.partitions())) == (2, 2)  # a revokes two first, keeping epoch 2
        assert describe(kb, "ai").assignment_epoch == 3
        assert a.hb().member_epoch == 3
        assert m2.hb().member_epoch == 3 and sorted(a.partitions() + m2.partitions()) == [0, 1, 2, 3]
        assert describe(kb, "ai").state == "Stable"

    @pytest.mark.parametrize("how", ["release 4.2", "group config 0"])
    def test_no_interval_before_kafka_4_3_or_at_0(self, how):
        cfg = {"mock.topics": ["t:4"], "mock.kafka.version": "4.2" if how == "release 4.2" else "4.4"}
        with MockBroker(config=cfg, clock=ManualClock()) as kb:
            if how == "group config 0":
                kb.call(lambda c: c.config_catalog.groups.setdefault("ni", {}).update(
                    {"consumer.assignment.interval.ms": "0"}))  # as kafka-configs --entity-type groups would set it
            a, m2 = Member(kb, "ni"), Member(kb, "ni")
            try:
                a.hb()
                m2.hb()
                d = describe(kb, "ni")
                assert (d.state, d.assignment_epoch) == ("Reconciling", d.group_epoch)
            finally:
                a.c.close()
                m2.c.close()
