"""The classic group coordinator over the wire, with the clock driven by the test.

Every deadline (initial rebalance delay, session timeout, rebalance timeout,
pending sync, offsets retention) is a delayed operation or a timer on the
ManualClock, so each test moves time to one millisecond before and at the
deadline and checks what changed.
"""

from __future__ import annotations

import select
import struct

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey
from tests.polling import until

E = ErrorCode
JOIN, SYNC, HB, LEAVE = ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP
COMMIT, FETCH_OFFSETS = ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH
SESSION, REBALANCE, DELAY = 10_000, 20_000, 300


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0 as a consumer sends it in JoinGroup."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def answered(c: RawKafkaClient, timeout: float = 0.2) -> bool:
    return bool(select.select([c.sock], [], [], timeout)[0])


def wait_for(cond, timeout_s: float = 5.0) -> None:
    until(cond, "the coordinator's state", timeout_s)


class Member:
    """One raw group member: joins, syncs, heartbeats, commits."""

    def __init__(self, b: MockBroker, group: str, client_id: str, instance_id: str | None = None,
                 protocols: list[tuple[str, bytes]] | None = None, addr: str | None = None) -> None:
        self.b = b
        self.group = group
        self.c = RawKafkaClient.connect(addr or b.bootstrap_servers.split(",")[0], client_id=client_id)
        self.instance_id = instance_id
        self.member_id = ""
        self.generation = -1
        self.protocols = protocols or [("range", subscription("t"))]
        self._corr: int | None = None

    def send_join(self, version: int = 9, session: int = SESSION, rebalance: int = REBALANCE,
                  protocol_type: str = "consumer") -> int:
        self._corr = self.c.send(JOIN, version, {
            "group_id": self.group, "session_timeout": session, "rebalance_timeout": rebalance,
            "member_id": self.member_id, "group_instance_id": self.instance_id, "protocol_type": protocol_type,
            "protocols": [{"name": n, "metadata": m} for n, m in self.protocols], "reason": None})
        self._version = version
        return self._corr

    def join_response(self):
        r = self.c.response(JOIN, self._version, self._corr)
        if r.error_code in (E.none, E.member_id_required):
            self.member_id = r.member_id
        if r.error_code == E.none:
            self.generation = r.generation_id
        return r

    def join_new(self, version: int = 9, **kw):
        """JoinGroup without an id: v4+ first gets MEMBER_ID_REQUIRED, then rejoins (the answer may wait)."""
        self.send_join(version, **kw)
        if version >= 4 and self.instance_id is None:
            r = self.join_response()
            assert r.error_code == E.member_id_required and r.member_id
            self.send_join(version, **kw)

    def sync(self, assignments: dict[str, bytes] | None = None, version: int = 5) -> int:
        return self.c.send(SYNC, version, {
            "group_id": self.group, "generation_id": self.generation, "member_id": self.member_id,
            "group_instance_id": self.instance_id, "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": k, "assignment": v} for k, v in (assignments or {}).items()]})

    def sync_response(self, corr: int, version: int = 5):
        return self.c.response(SYNC, version, corr)

    def heartbeat(self, version: int = 4, generation: int | None = None, member_id: str | None = None):
        return self.c.request(HB, version, {
            "group_id": self.group, "generation_id": self.generation if generation is None else generation,
            "member_id": self.member_id if member_id is None else member_id,
            "group_instance_id": self.instance_id}).error_code

    def leave(self, version: int = 5):
        return self.c.request(LEAVE, version, {"group_id": self.group, "member_id": self.member_id,
                                               "members": [{"member_id": self.member_id,
                                                            "group_instance_id": self.instance_id}]})

    def commit(self, offsets: dict[int, int], topic: str = "t", version: int = 8, generation: int | None = None,
               metadata: str = ""):
        r = self.c.request(COMMIT, version, {
            "group_id": self.group, "generation_id_or_member_epoch": self.generation if generation is None
            else generation, "member_id": self.member_id, "group_instance_id": self.instance_id,
            "retention_time": -1,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                 "committed_metadata": metadata} for p, o in offsets.items()]}]})
        return {p.partition_index: p.error_code for t in r.topics for p in t.partitions}

    def close(self) -> None:
        self.c.close()


def fetch_offsets(c: RawKafkaClient, group: str, topic: str = "t", partitions=(0, 1), version: int = 8):
    r = c.request(FETCH_OFFSETS, version, {"groups": [{"group_id": group, "topics": None if partitions is None else [
        {"name": topic, "partition_indexes": list(partitions)}]}], "require_stable": False})
    g = r.groups[0]
    return g.error_code, {(t.name, p.partition_index): (p.committed_offset, p.metadata)
                          for t in g.topics for p in t.partitions}


def members(b: MockBroker, group: str, n: int) -> None:
    """Wait (bounded) until the coordinator holds ``n`` members of ``group``: the JoinGroups were read,
    so moving the clock now measures from their arrival."""
    wait_for(lambda: (g := b.group(group)) is not None and len(g["members"]) == n)


def stable_pair(b: MockBroker, group: str) -> tuple[Member, Member]:
    """Two members through a first rebalance (initial delay) and SyncGroup: a Stable group."""
    a, f = Member(b, group, "a"), Member(b, group, "f")
    a.join_new()
    f.join_new()
    wait_for(lambda: (g := b.group(group)) is not None and len(g["members"]) == 2)
    b.advance(2 * DELAY)  # the second member extended the initial delay once
    ra, rf = a.join_response(), f.join_response()
    assert ra.error_code == rf.error_code == E.none
    leader, follower = (a, f) if ra.leader == a.member_id else (f, a)
    cf = follower.sync()
    cl = leader.sync({a.member_id: b"A", f.member_id: b"F"})
    assert leader.sync_response(cl).error_code == E.none
    assert follower.sync_response(cf).error_code == E.none
    assert b.group(group)["state"] == "Stable"
    return a, f


@pytest.fixture
def b():
    cfg = {"group.initial.rebalance.delay.ms": DELAY, "num.partitions": 2, "mock.topics": ["t:2"],
           "offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1000}
    with MockBroker(config=cfg, clock=ManualClock()) as broker:
        yield broker


class TestJoin:
    def test_member_id_required_then_initial_delay_then_leader_gets_metadata(self, b):
        a = Member(b, "g1", "a")
        r = (a.send_join(), a.join_response())[1]
        assert r.error_code == E.member_id_required and r.member_id.startswith("a-")
        assert b.group("g1")["members"] == []  # pending, not yet a member
        a.send_join()
        f = Member(b, "g1", "f", protocols=[("roundrobin", subscription("t")), ("range", subscription("t"))])
        f.join_new()
        wait_for(lambda: len(b.group("g1")["members"]) == 2)
        b.advance(DELAY - 1)
        assert not answered(a.c) and not answered(f.c)
        # a member arrived during the delay: InitialDelayedJoin waits another delay (bounded by the rebalance timeout)
        b.advance(1)
        assert not answered(a.c, 0.1)
        b.advance(DELAY)
        ra, rf = a.join_response(), f.join_response()
        assert ra.generation_id == rf.generation_id == 1
        assert ra.protocol_name == rf.protocol_name == "range"  # a votes range, f roundrobin; a tie goes to the first member's choice
        assert ra.leader == rf.leader == a.member_id
        assert {m.member_id for m in ra.members} == {a.member_id, f.member_id}
        assert rf.members == ()
        assert b.group("g1")["state"] == "CompletingRebalance"

    def test_v3_joins_without_member_id_required(self, b):
        a = Member(b, "g2", "a")
        a.send_join(version=3)
        members(b, "g2", 1)
        b.advance(DELAY)
        r = a.join_response()
        assert r.error_code == E.none and r.member_id.startswith("a-") and r.leader == r.member_id

    @pytest.mark.parametrize("field,value,error", [
        ("group", "", E.invalid_group_id),
        ("session", 5, E.invalid_session_timeout),
        ("session", 1_800_001, E.invalid_session_timeout),
    ])
    def test_invalid_join(self, b, field, value, error):
        a = Member(b, value if field == "group" else "g3", "a")
        a.send_join(**({"session": value} if field == "session" else {}))
        assert a.join_response().error_code == error

    def test_inconsistent_protocol_and_unknown_member(self, b):
        a, f = stable_pair(b, "g4")
        x = Member(b, "g4", "x", protocols=[("other", b"")])
        x.send_join()  # checked before a member id is handed out
        assert x.join_response().error_code == E.inconsistent_group_protocol
        y = Member(b, "g4", "y")
        y.member_id = "not-a-member"
        y.send_join()
        assert y.join_response().error_code == E.unknown_member_id

    def test_group_max_size(self):
        cfg = {"group.initial.rebalance.delay.ms": DELAY, "group.max.size": 2}
        with MockBroker(config=cfg, clock=ManualClock()) as b:
            ms = [Member(b, "gm", f"m{i}") for i in range(3)]
            for m in ms[:2]:
                m.join_new()
            members(b, "gm", 2)
            ms[2].send_join()  # two members already wait in the join phase
            assert ms[2].join_response().error_code == E.group_max_size_reached
            b.advance(2 * DELAY)
            assert [m.join_response().error_code for m in ms[:2]] == [E.none, E.none]
            assert len(b.group("gm")["members"]) == 2
            ms[2].send_join()  # and once the group is complete
            assert ms[2].join_response().error_code == E.group_max_size_reached


class TestSyncAndHeartbeat:
    def test_follower_waits_for_leader_assignment(self, b):
        a, f = Member(b, "s1", "a"), Member(b, "s1", "f")
        a.join_new()
        f.join_new()
        wait_for(lambda: len(b.group("s1")["members"]) == 2)
        b.advance(2 * DELAY)
        ra, _ = a.join_response(), f.join_response()
        assert ra.leader == a.member_id
        cf = f.sync()
        assert not answered(f.c)
        assert a.heartbeat() == E.none  # heartbeats while CompletingRebalance are fine
        cl = a.sync({a.member_id: b"for-a"})  # the leader leaves f out: f gets an empty assignment
        ra2 = a.sync_response(cl)
        rf2 = f.sync_response(cf)
        assert (ra2.error_code, ra2.assignment, ra2.protocol_name) == (E.none, b"for-a", "range")
        assert (rf2.error_code, rf2.assignment) == (E.none, b"")
        # a late SyncGroup in Stable returns the stored assignment
        assert a.sync_response(a.sync()).assignment == b"for-a"

    def test_session_timeout_expels_silent_member_then_survivor_rejoins(self, b):
        a, f = stable_pair(b, "s2")
        b.advance(SESSION - 1)
        assert f.heartbeat() == E.none  # f's session restarts; a stays silent
        assert b.group("s2")["state"] == "Stable"
        b.advance(1)  # a's session.timeout.ms since its last sign of life
        g = b.group("s2")
        assert g["state"] == "PreparingRebalance" and [m["member_id"] for m in g["members"]] == [f.member_id]
        assert f.heartbeat() == E.rebalance_in_progress
        assert a.heartbeat() == E.unknown_member_id
        f.send_join()
        r = f.join_response()  # every remaining member rejoined: the join phase completes at once
        assert (r.error_code, r.generation_id, r.leader) == (E.none, 2, f.member_id)

    def test_expel_removes_a_member_at_once_as_its_session_timeout_would(self, b):
        a, f = stable_pair(b, "s5")
        g = b.expel_member("s5", a.member_id)  # no time passes
        assert g["state"] == "PreparingRebalance" and [m["member_id"] for m in g["members"]] == [f.member_id]
        assert f.heartbeat() == E.rebalance_in_progress
        assert a.heartbeat() == E.unknown_member_id
        f.send_join()
        r = f.join_response()
        assert (r.error_code, r.generation_id, r.leader) == (E.none, 2, f.member_id)
        with pytest.raises(LookupError, match="no member"):
            b.expel_member("s5", a.member_id)

    def test_rebalance_timeout_removes_member_that_does_not_rejoin(self, b):
        a, f = stable_pair(b, "s3")
        a.send_join()  # the leader rejoins: a rebalance starts
        wait_for(lambda: b.group("s3")["state"] == "PreparingRebalance")
        assert f.heartbeat() == E.rebalance_in_progress
        for _ in range(3):  # f heartbeats every 5 s (its session stays alive) but never rejoins
            b.advance(5_000)
            assert f.heartbeat() == E.rebalance_in_progress
        b.advance(REBALANCE - 15_000 - 1)
        assert f.heartbeat() == E.rebalance_in_progress
        assert not answered(a.c, 0.05)
        b.advance(1)
        r = a.join_response()
        assert r.error_code == E.none and r.generation_id == 2 and [m.member_id for m in r.members] == [a.member_id]
        assert f.heartbeat() == E.unknown_member_id

    def test_member_that_never_syncs_is_removed_after_rebalance_timeout(self, b):
        a, f = Member(b, "s4", "a"), Member(b, "s4", "f")
        a.join_new(session=30_000)  # sessions outlast the rebalance timeout: only DelayedSync can remove f
        f.join_new(session=30_000)
        wait_for(lambda: len(b.group("s4")["members"]) == 2)
        b.advance(2 * DELAY)
        a.join_response(), f.join_response()
        assert a.sync_response(a.sync({a.member_id: b"x", f.member_id: b"y"})).error_code == E.none
        b.advance(REBALANCE - DELAY - 1)
        assert a.heartbeat() == E.none
        assert b.group("s4")["state"] == "Stable"
        b.advance(DELAY + 1)  # DelayedSync: f never sent SyncGroup within the rebalance timeout
        g = b.group("s4")
        assert g["state"] == "PreparingRebalance" and [m["member_id"] for m in g["members"]] == [a.member_id]

    def test_stale_generation_and_unknown_member(self, b):
        a, f = stable_pair(b, "s5")
        assert a.heartbeat(generation=0) == E.illegal_generation
        assert a.heartbeat(member_id="nobody") == E.unknown_member_id
        assert Member(b, "no-such-group", "z").heartbeat() == E.unknown_member_id

    def test_leave_group_v0_and_batched_v3(self, b):
        a, f = stable_pair(b, "s6")
        r = a.c.request(LEAVE, 0, {"group_id": "s6", "member_id": "nobody"})
        assert r.error_code == E.unknown_member_id  # v0-2 carry the member's error at the top level
        r = a.c.request(LEAVE, 3, {"group_id": "s6", "members": [
            {"member_id": f.member_id, "group_instance_id": None}, {"member_id": "nobody", "group_instance_id": None}]})
        assert r.error_code == E.none and [m.error_code for m in r.members] == [E.none, E.unknown_member_id]
        assert b.group("s6")["state"] == "PreparingRebalance"
        assert a.heartbeat() == E.rebalance_in_progress


class TestStaticMembership:
    def test_restart_within_session_keeps_assignment_without_rebalance(self, b):
        s = Member(b, "st", "s", instance_id="host-1")
        o = Member(b, "st", "o")
        s.join_new()
        o.join_new()
        wait_for(lambda: len(b.group("st")["members"]) == 2)
        b.advance(2 * DELAY)
        rs, _ = s.join_response(), o.join_response()
        assert rs.error_code == E.none  # a static member joins without MEMBER_ID_REQUIRED
        leader, follower = (s, o) if rs.leader == s.member_id else (o, s)
        cf = follower.sync()
        leader.sync_response(leader.sync({s.member_id: b"S", o.member_id: b"O"}))
        follower.sync_response(cf)
        old_id, gen = s.member_id, b.group("st")["generation_id"]
        s.close()  # gone without LeaveGroup (static members do not send it)
        b.advance(SESSION - 1)
        assert o.heartbeat() == E.none
        s2 = Member(b, "st", "s", instance_id="host-1")
        s2.send_join()
        r = s2.join_response()
        assert r.error_code == E.none and r.member_id != old_id and r.generation_id == gen
        g = b.group("st")
        assert g["state"] == "Stable" and g["generation_id"] == gen
        assert s2.sync_response(s2.sync()).assignment == b"S"
        assert o.heartbeat() == E.none
        # the old incarnation is fenced
        assert s2.heartbeat(member_id=old_id) == E.fenced_instance_id
        b.advance(1)
        assert b.group("st")["state"] == "Stable"  # the replaced id's session expired without effect

    def test_static_member_removed_by_instance_id(self, b):
        s = Member(b, "st2", "s", instance_id="host-2")
        s.send_join()
        members(b, "st2", 1)
        b.advance(DELAY)
        assert s.join_response().error_code == E.none
        r = s.c.request(LEAVE, 4, {"group_id": "st2", "members": [{"member_id": "", "group_instance_id": "host-2"}]})
        assert [m.error_code for m in r.members] == [E.none]
        assert b.group("st2")["members"] == []


class TestOffsets:
    def test_commit_fetch_generation_checks(self, b):
        a, f = stable_pair(b, "o1")
        assert a.commit({0: 5, 1: 7}, metadata="m") == {0: E.none, 1: E.none}
        assert fetch_offsets(a.c, "o1") == (E.none, {("t", 0): (5, "m"), ("t", 1): (7, "m")})
        assert a.commit({0: 6}, generation=0) == {0: E.illegal_generation}
        assert a.commit({0: 6}, generation=-1) == {0: E.illegal_generation}
        outsider = Member(b, "o1", "x")  # no member id, generation -1: only an Empty group takes it
        assert outsider.commit({0: 6}, generation=-1) == {0: E.unknown_member_id}
        assert fetch_offsets(a.c, "o1")[1][("t", 0)] == (5, "m")
        assert a.commit({5: 1}) == {5: E.unknown_topic_or_partition}
        assert a.commit({0: 1}, topic="nope") == {0: E.unknown_topic_or_partition}
        assert a.commit({0: 1}, metadata="x" * 4097) == {0: E.offset_metadata_too_large}
        # all committed partitions (null topics)
        assert fetch_offsets(a.c, "o1", partitions=None)[1] == {("t", 0): (5, "m"), ("t", 1): (7, "m")}

    def test_commit_during_completing_rebalance(self, b):
        a = Member(b, "o2", "a")
        a.join_new()
        members(b, "o2", 1)
        b.advance(DELAY)
        a.join_response()
        assert a.commit({0: 1}) == {0: E.rebalance_in_progress}

    def test_standalone_commit_and_v1_fetch(self, b):
        c = RawKafkaClient.connect(b.bootstrap_servers)
        r = c.request(COMMIT, 2, {"group_id": "o3", "generation_id_or_member_epoch": -1, "member_id": "",
                                  "retention_time": -1, "topics": [{"name": "t", "partitions": [
                                      {"partition_index": 1, "committed_offset": 42, "committed_metadata": None}]}]})
        assert r.topics[0].partitions[0].error_code == E.none
        r = c.request(FETCH_OFFSETS, 1, {"group_id": "o3", "topics": [{"name": "t", "partition_indexes": [0, 1]}]})
        assert [(p.committed_offset, p.error_code) for p in r.topics[0].partitions] == [(-1, E.none), (42, E.none)]
        assert b.group("o3")["protocol_type"] is None
        c.close()

    def test_offsets_survive_empty_then_expire_after_retention(self, b):
        a, f = stable_pair(b, "o4")
        assert a.commit({0: 3}) == {0: E.none}
        assert f.leave().error_code == E.none
        a.send_join()
        a.join_response()
        assert a.leave().error_code == E.none
        assert b.group("o4")["state"] == "Empty"
        assert fetch_offsets(a.c, "o4")[1][("t", 0)] == (3, "")
        b.advance(60_000 - 1000)  # offsets.retention.minutes = 1, counted from the moment the group became Empty
        assert b.committed_offsets("o4") == {("t", 0): 3}
        b.advance(2000)  # the next offsets.retention.check.interval.ms (1 s) check after the retention removes it
        assert b.committed_offsets("o4") == {}
        assert b.group("o4") is None  # an Empty group without offsets is removed

    def test_offsets_of_a_deleted_topic_go(self, b):
        b.create_topic("gone", 1)
        c = RawKafkaClient.connect(b.bootstrap_servers)
        c.request(COMMIT, 8, {"group_id": "o5", "generation_id_or_member_epoch": -1, "member_id": "",
                              "topics": [{"name": "gone", "partitions": [
                                  {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                                   "committed_metadata": ""}]}]})
        assert b.committed_offsets("o5") == {("gone", 0): 1}
        c.request(ApiKey.DELETE_TOPICS, 4, {"topic_names": ["gone"], "timeout": 1000})
        assert b.committed_offsets("o5") == {}
        c.close()


class TestAdmin:
    def test_describe_list_delete(self, b):
        a, f = stable_pair(b, "ad")
        r = a.c.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["ad", "missing"], "include_authorized_operations": True})
        g, missing = r.groups
        assert (g.group_state, g.protocol_type, g.protocol_data) == ("Stable", "consumer", "range")
        assert {m.member_id: bytes(m.member_assignment) for m in g.members} == {a.member_id: b"A", f.member_id: b"F"}
        assert all(m.client_host == "/127.0.0.1" for m in g.members)
        assert (missing.error_code, missing.group_state) == (E.none, "Dead")
        r6 = a.c.request(ApiKey.DESCRIBE_GROUPS, 6, {"groups": ["missing"], "include_authorized_operations": False})
        assert r6.groups[0].error_code == E.group_id_not_found
        lst = a.c.request(ApiKey.LIST_GROUPS, 5, {"states_filter": ["stable"], "types_filter": []})
        assert [(x.group_id, x.group_state, x.group_type) for x in lst.groups] == [("ad", "Stable", "classic")]
        dl = a.c.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["ad", "missing"]})
        assert [(x.group_id, x.error_code) for x in dl.results] == [("ad", E.non_empty_group),
                                                                     ("missing", E.group_id_not_found)]
        a.leave()
        f.leave()
        b.advance(DELAY)
        assert b.group("ad")["state"] == "Empty"
        dl = a.c.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["ad"]})
        assert dl.results[0].error_code == E.none and b.group("ad") is None


def _one_stable_member(b: MockBroker, addr: str) -> tuple[Member, int]:
    """Group "mv" with one member joined and synced (assignment b"x") on its coordinator at ``addr``;
    the member and the generation."""
    m = Member(b, "mv", "m", addr=addr)
    m.join_new()
    members(b, "mv", 1)
    b.advance(1)
    assert m.join_response().error_code == E.none
    m.sync_response(m.sync({m.member_id: b"x"}))
    return m, b.group("mv")["generation_id"]


class TestCoordinatorMove:
    def test_not_coordinator_then_move_on_broker_stop(self):
        cfg = {"mock.num.brokers": 3, "group.initial.rebalance.delay.ms": 0}
        with MockBroker(config=cfg, clock=ManualClock()) as b:
            addrs = b.bootstrap_servers.split(",")
            c = RawKafkaClient.connect(addrs[0])
            r = c.request(ApiKey.FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": ["mv"]})
            node = r.coordinators[0].node_id
            other = (node + 1) % 3
            m = Member(b, "mv", "m", addr=addrs[other])
            m.send_join()
            assert m.join_response().error_code == E.not_coordinator
            m, gen = _one_stable_member(b, addrs[node])
            b.stop_broker(node)
            r = c.request(ApiKey.FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": ["mv"]})
            new = r.coordinators[0].node_id
            assert new not in (node, -1) and r.coordinators[0].error_code == E.none
            # loaded on the new coordinator from what was stored: Stable, same generation and assignment
            m2 = Member(b, "mv", "m", addr=addrs[new])
            m2.member_id, m2.generation = m.member_id, gen
            assert m2.heartbeat() == E.none
            assert m2.sync_response(m2.sync()).assignment == b"x"
            b.advance(SESSION - 1)
            assert b.group("mv")["state"] == "Stable"
            b.advance(1)  # its session runs on the new coordinator too: the last member goes, the group empties
            g = b.group("mv")
            assert (g["state"], g["generation_id"], g["members"]) == ("Empty", gen + 1, [])
            c.close()

    def test_not_coordinator_then_move_on_a_leadership_move(self):
        """The leadership of the group's __consumer_offsets partition moves (move_coordinator, as a
        preferred-replica election would) while every broker stays up: the old coordinator answers
        NOT_COORDINATOR, FindCoordinator names the new one, which loaded the group as stored."""
        cfg = {"mock.num.brokers": 3, "group.initial.rebalance.delay.ms": 0}
        with MockBroker(config=cfg, clock=ManualClock()) as b:
            addrs = b.bootstrap_servers.split(",")
            c = RawKafkaClient.connect(addrs[0])
            node = c.request(ApiKey.FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": ["mv"]}).coordinators[0].node_id
            m, gen = _one_stable_member(b, addrs[node])
            new = (node + 1) % 3
            with pytest.raises(ValueError):  # broker 7 is no replica; the coordinator stays
                b.move_coordinator("mv", 7)
            assert b.group("mv")["coordinator"] == node
            assert b.move_coordinator("mv", new)["coordinator"] == new
            assert m.heartbeat() == E.not_coordinator  # the old one, still up
            r = c.request(ApiKey.FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": ["mv"]})
            assert (r.coordinators[0].node_id, r.coordinators[0].error_code) == (new, E.none)
            m2 = Member(b, "mv", "m", addr=addrs[new])
            m2.member_id, m2.generation = m.member_id, gen
            assert m2.heartbeat() == E.none
            assert m2.sync_response(m2.sync()).assignment == b"x"
            assert b.group("mv")["state"] == "Stable"
            c.close()


class TestInjectedLoading:
    def test_coordinator_load_in_progress_only_when_injected(self, b):
        a, f = stable_pair(b, "ld")
        b.inject_coordinator_loading("ld", 500)
        assert a.heartbeat() == E.none  # answered blindly while loading
        assert a.sync_response(a.sync()).error_code == E.rebalance_in_progress
        assert fetch_offsets(a.c, "ld")[0] == E.coordinator_load_in_progress
        assert a.commit({0: 1}) == {0: E.coordinator_load_in_progress}
        x = Member(b, "ld", "x")
        x.send_join()
        assert x.join_response().error_code == E.coordinator_load_in_progress
        b.advance(500)
        assert a.commit({0: 1}) == {0: E.none}
        assert fetch_offsets(a.c, "ld")[0] == E.none


class TestCoordinatorUnavailable:
    def test_no_live_replica_of_the_offsets_partition(self):
        cfg = {"mock.num.brokers": 2, "offsets.topic.replication.factor": 1, "group.initial.rebalance.delay.ms": 0}
        with MockBroker(config=cfg, clock=ManualClock()) as b:
            addrs = b.bootstrap_servers.split(",")
            c = RawKafkaClient.connect(addrs[0])
            node = c.request(ApiKey.FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": ["un"]}).coordinators[0]
            survivor = 1 - node.node_id
            b.stop_broker(node.node_id)
            c2 = RawKafkaClient.connect(addrs[survivor])
            r = c2.request(ApiKey.FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": ["un"]}).coordinators[0]
            assert (r.error_code, r.node_id) == (E.coordinator_not_available, -1)
            m = Member(b, "un", "m", addr=addrs[survivor])
            m.send_join()
            assert m.join_response().error_code == E.coordinator_not_available
            b.start_broker(node.node_id)  # the only replica is back: it leads the partition again
            r = c2.request(ApiKey.FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": ["un"]}).coordinators[0]
            assert (r.error_code, r.node_id) == (E.none, node.node_id)
            c.close()
            c2.close()


class TestThrottledGroupApis:
    def test_throttled_heartbeats_carry_the_throttle_and_keep_the_member(self, b):
        a, f = stable_pair(b, "th")
        b.set_quota(client_id="a", request_rate=1)  # KIP-124 draft quota: 1 request/s for client-id "a"
        throttles = []
        for _ in range(15):  # the rate is measured over the 10 s padded window: the 11th request exceeds it
            r = a.c.request(HB, 4, {"group_id": "th", "generation_id": a.generation, "member_id": a.member_id,
                                    "group_instance_id": None})
            assert r.error_code == E.none
            throttles.append(round(r.throttle_time.total_seconds() * 1000))
            b.advance(throttles[-1])  # honour it: the mute ends at the deadline
        assert throttles[:10] == [0] * 10 and all(t > 0 for t in throttles[10:]), throttles
        assert b.group("th")["state"] == "Stable"
        events = b.throttle_events(client_id="a")
        assert [e["api_key"] for e in events] == [ApiKey.HEARTBEAT] * 5 and all(e["client_should_throttle"] for e in events)
        assert all(e["next_request_ms"] is None or e["next_request_ms"] >= e["deadline_ms"] for e in events)
