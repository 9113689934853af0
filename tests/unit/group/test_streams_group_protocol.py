"""KIP-1071 StreamsGroupHeartbeat and StreamsGroupDescribe over the wire, the clock driven by the test.

A word count's topology (split, repartition by word, count into a store) is registered by the first
member; the broker creates its repartition and changelog topics as Kafka 4.4 does, and the statuses,
epochs and tasks are checked as a member sees them: the sticky assignor's split of the tasks, a joining
member waiting for tasks another still runs, the owner revoking first, standby tasks, the initial
rebalance delay and the session timeout on the clock.
"""

from __future__ import annotations


import pytest

from mockbroker import ManualClock, MockBroker
from protocol.errors import ErrorCode
from protocol.registry import ApiKey
from tests.streams_member import (
    CHANGELOG,
    CHANGELOG_CONFIGS,
    REPARTITION,
    REPARTITION_CONFIGS,
    SGH,
    Member,
    describe,
    tasks,
    topology,
)

E = ErrorCode
SESSION = 10_000
def make_broker(**extra):
    cfg = {"group.streams.session.timeout.ms": SESSION, "group.streams.initial.rebalance.delay.ms": 0,
           "group.streams.assignment.interval.ms": 0, "mock.topics": ["input:2"],
           "mock.kafka.version": "4.4", **extra}
    return MockBroker(config=cfg, clock=ManualClock())


@pytest.fixture
def b():
    with make_broker() as broker:
        yield broker


def topic_info(b: MockBroker, name: str) -> tuple[int, dict[str, str]] | None:
    def read(br):
        t = br.metadata.topics.get(name)
        return None if t is None else (len(t.partitions), dict(t.overrides))
    return b.call(read)


def test_first_member_registers_the_topology_and_the_broker_creates_the_internal_topics(b):
    m = Member(b, process="p1")
    r = m.hb()
    assert r.error_code == E.none and r.member_epoch == 2  # a new group is at epoch 1; the join bumps it
    assert m.statuses(r) == [(3, f"Internal topics are missing: {REPARTITION}, {CHANGELOG}")]
    assert tasks(r.active_tasks) == {} and r.heartbeat_interval.total_seconds() == 5
    assert topic_info(b, REPARTITION) == (2, REPARTITION_CONFIGS)
    assert topic_info(b, CHANGELOG) == (2, CHANGELOG_CONFIGS)  # replication factor -1: the broker's default
    r = m.hb()
    assert r.error_code == E.none and m.statuses(r) == [] and r.member_epoch == 3
    assert m.active == {"0": [0, 1], "1": [0, 1]} and m.standby == {}
    g = describe(m)[0]
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (
        E.none, "Stable", 3, 3, "sticky")
    assert [(s.subtopology_id, [(t.name, t.partitions) for t in s.repartition_source_topics],
             [(t.name, t.partitions) for t in s.state_changelog_topics]) for s in g.topology.subtopologies] == [
        ("0", [], []), ("1", [(REPARTITION, 2)], [(CHANGELOG, 2)])]
    assert [(x.member_id, x.member_epoch, x.process_id) for x in g.members] == [(m.member_id, 3, "p1")]


def test_missing_source_topic_is_a_status_and_no_task_is_assigned(b):
    m = Member(b)
    r = m.hb(topo=topology(source="absent"))
    assert r.error_code == E.none and m.statuses(r) == [(1, "Source topics absent are missing.")]
    assert tasks(r.active_tasks) == {} and topic_info(b, REPARTITION) is None
    assert describe(m)[0].group_state == "NotReady"
    for states, listed in ((["not_ready"], ["wc"]), (["NotReady"], []), (["stable"], [])):
        r = m.c.request(ApiKey.LIST_GROUPS, 5, {"states_filter": states, "types_filter": []})
        assert [g.group_id for g in r.groups] == listed, states  # Kafka matches toLowerCaseString
    b.create_topic("absent", partitions=1)
    r = m.hb()
    assert m.statuses(r) == [(3, f"Internal topics are missing: {REPARTITION}, {CHANGELOG}")]
    assert topic_info(b, REPARTITION) == (1, REPARTITION_CONFIGS)


def test_existing_internal_topic_with_the_wrong_partition_count(b):
    b.create_topic(CHANGELOG, partitions=5)
    m = Member(b)
    r = m.hb()
    assert m.statuses(r) == [(2, f"Existing topic {CHANGELOG} has different number of partitions: expected 2, "
                                 "found 5")]
    assert tasks(r.active_tasks) == {} and topic_info(b, REPARTITION) is None


def test_topology_naming_an_internal_topic_is_invalid(b):
    r = Member(b).hb(topo=topology(source="__consumer_offsets"))
    assert r.error_code == E.streams_invalid_topology
    assert r.error_message == ("Use of Kafka internal topics __consumer_offsets in a Kafka Streams topology is "
                               "prohibited.")


def test_second_member_waits_until_the_first_revokes(b):
    a, c = Member(b, process="pa"), Member(b, process="pc")
    a.hb()
    a.hb()
    assert (a.epoch, a.active) == (3, {"0": [0, 1], "1": [0, 1]})
    r = c.hb()
    # the sticky assignor leaves a 0_0 and 1_0 (its quota of 2, taken in partition order); c gets the rest,
    # still run by a: nothing yet
    assert (r.member_epoch, tasks(r.active_tasks)) == (4, {})
    r = a.hb()
    assert (r.member_epoch, a.active) == (3, {"0": [0], "1": [0]})  # revoke first, epoch unchanged
    r = c.hb()
    assert (r.member_epoch, r.active_tasks) == (4, None)  # a has not confirmed yet
    r = a.hb()
    assert (r.member_epoch, r.active_tasks) == (4, None)
    r = c.hb()
    assert (r.member_epoch, c.active) == (4, {"0": [1], "1": [1]})
    g = describe(a)[0]
    assert (g.group_state, g.group_epoch, g.assignment_epoch) == ("Stable", 4, 4)
    # a stale epoch with tasks it no longer has is fenced
    r = c.hb(epoch=3, active={"0": [0, 1]})
    assert r.error_code == E.fenced_member_epoch
    # endpoints for interactive queries: both members' source partitions under their endpoint
    r = a.hb(endpoint_epoch=0)
    assert sorted((e.user_endpoint.port, sorted((p.topic, list(p.partitions)) for p in e.active_partitions))
                  for e in r.partitions_by_user_endpoint) == [
        (7070, [("input", [0]), (REPARTITION, [0])]), (7070, [("input", [1]), (REPARTITION, [1])])]


def test_session_timeout_fences_a_silent_member_and_its_tasks_move(b):
    a, c = Member(b, process="pa"), Member(b, process="pc")
    a.hb(), a.hb(), c.hb(), a.hb(), a.hb(), c.hb()
    assert c.active == {"0": [1], "1": [1]}
    b.advance(SESSION - 1)
    a.hb()
    b.advance(1)  # c's session ends; a's has 9999 ms to go
    r = a.hb()
    assert (r.member_epoch, a.active) == (5, {"0": [0, 1], "1": [0, 1]})
    g = describe(a)[0]
    assert [x.member_id for x in g.members] == [a.member_id]
    assert c.hb().error_code == E.unknown_member_id


def test_expel_fences_a_member_at_once_and_it_rejoins_with_epoch_0(b):
    a, c = Member(b, process="pa"), Member(b, process="pc")
    a.hb(), a.hb(), c.hb(), a.hb(), a.hb(), c.hb()
    assert c.active == {"0": [1], "1": [1]}
    view = b.expel_member("wc", c.member_id)  # as the session timeout above, without the clock moving
    assert [m["member_id"] for m in view["members"]] == [a.member_id] and view["group_epoch"] == 5
    r = a.hb()
    assert (r.member_epoch, a.active) == (5, {"0": [0, 1], "1": [0, 1]})
    assert c.hb().error_code == E.unknown_member_id
    # Kafka Streams' fenced member (StreamsMembershipManager.transitionToFenced) loses its tasks and
    # joins again at epoch 0 with the same member id: it gets half the tasks back once a revokes them
    c.active, c.standby = {}, {}
    assert (c.hb(epoch=0).error_code, c.epoch) == (E.none, 6)
    a.hb(), a.hb(), c.hb()  # a revokes, confirms; c takes them
    assert (a.active, c.active, c.epoch) == ({"0": [0], "1": [0]}, {"0": [1], "1": [1]}, 6)
    with pytest.raises(LookupError, match="no member 'nope' in group 'wc'"):
        b.expel_member("wc", "nope")


def test_leaving_member_and_the_group_in_list_and_delete(b):
    a = Member(b)
    a.hb()
    r = a.hb(epoch=-1)
    assert (r.error_code, r.member_epoch) == (E.none, -1)
    g = describe(a)[0]
    assert (g.group_state, g.members) == ("Empty", ())
    listed = a.c.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["streams"]})
    assert [(x.group_id, x.group_state, x.group_type) for x in listed.groups] == [("wc", "Empty", "streams")]
    dg = a.c.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["wc"], "include_authorized_operations": False})
    # not a classic group: Dead, and GROUP_ID_NOT_FOUND from v6 on (KIP-1043)
    assert (dg.groups[0].error_code, dg.groups[0].group_state) == (E.none, "Dead")
    deleted = a.c.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["wc"]})
    assert deleted.results[0].error_code == E.none
    assert describe(a)[0].error_code == E.group_id_not_found


def test_shutdown_request_reaches_every_member(b):
    a, c = Member(b), Member(b)
    a.hb(), c.hb()
    a.hb(shutdown=True)
    detail = f"Streams group member {a.member_id} encountered a fatal error and requested a shutdown for the " \
             "entire application."
    assert (4, detail) in c.statuses(c.hb())


def test_initial_rebalance_delay_then_standby_tasks():
    with make_broker(**{"group.streams.initial.rebalance.delay.ms": 3000,
                        "group.streams.num.standby.replicas": 1}) as b:
        b.create_topic(REPARTITION, partitions=2)
        b.create_topic(CHANGELOG, partitions=2)
        a, c = Member(b, process="pa"), Member(b, process="pc")
        r = a.hb()
        assert m_status(a, r) == [5] and tasks(r.active_tasks) == {}
        r = c.hb()
        assert m_status(c, r) == [5]
        b.advance(2999)
        assert m_status(a, a.hb()) == [5]
        b.advance(1)  # the delayed assignment is computed for both members
        a.hb()
        c.hb()
        a.hb()
        c.hb()
        assert sorted([a.active, c.active], key=str) == [{"0": [0], "1": [0]}, {"0": [1], "1": [1]}]
        # a standby of each stateful task (subtopology 1) on the other process
        assert a.standby == {"1": c.active["1"]} and c.standby == {"1": a.active["1"]}


def m_status(m: Member, r) -> list[int]:
    return [code for code, _ in m.statuses(r)]


def test_group_configs_override_the_broker_defaults(b):
    # what IncrementalAlterConfigs on the group stores (ConfigResource.Type.GROUP = 32, SET = 0)
    res = b.call(lambda c: c.config_catalog.incremental_alter(
        0, 32, "wc", [(0, "streams.heartbeat.interval.ms", "6000"), (0, "streams.num.standby.replicas", "1")],
        False))
    assert res.error == E.none
    a, c = Member(b, process="pa"), Member(b, process="pc")
    r = a.hb()
    assert r.heartbeat_interval.total_seconds() == 6
    a.hb(), c.hb(), a.hb(), a.hb(), c.hb()
    assert a.standby == {"1": c.active["1"]} and c.standby == {"1": a.active["1"]}
    assert Member(b, group="other").hb().heartbeat_interval.total_seconds() == 5


def test_streams_group_view_of_the_control_plane(b):
    a, c = Member(b, process="pa"), Member(b, process="pc")
    a.hb()
    v = b.streams_group("wc")
    assert v["status"] == {"code": "MISSING_INTERNAL_TOPICS",
                           "detail": f"Internal topics are missing: {REPARTITION}, {CHANGELOG}"}
    assert v["topology_ready"] is False and v["topology"]["epoch"] == 1
    a.hb(), c.hb(), a.hb(), a.hb(), c.hb(), c.hb(shutdown=True)
    v = b.streams_group("wc")
    assert (v["type"], v["state"], v["group_epoch"], v["assignment_epoch"], v["status"]) == (
        "streams", "Stable", 4, 4, None)
    assert v["shutdown_requested_by"] == c.member_id
    members = {m["process_id"]: m for m in v["members"]}
    assert {p: (m["member_epoch"], m["state"], m["active"], m["target_active"], m["user_endpoint"])
            for p, m in members.items()} == {
        "pa": (4, "STABLE", {"0": [0], "1": [0]}, {"0": [0], "1": [0]}, "localhost:7070"),
        "pc": (4, "STABLE", {"0": [1], "1": [1]}, {"0": [1], "1": [1]}, "localhost:7070")}
    assert [s["repartition_source_topics"][0]["partitions"] for s in v["topology"]["subtopologies"][1:]] == [2]
    assert b.group("wc")["type"] == "streams"  # GET /groups/{g} shows it too
    assert b.streams_group("nope") is None
    a.c.request(ApiKey.OFFSET_COMMIT, 8, {  # a classic group, by a simple commit
        "group_id": "cg", "generation_id_or_member_epoch": -1, "member_id": "",
        "topics": [{"name": "input", "partitions": [{"partition_index": 0, "committed_offset": 1}]}]})
    assert b.group("cg")["type"] == "classic" and b.streams_group("cg") is None


def raw(m: Member, **fields):
    body = {"group_id": m.group, "member_id": m.member_id, "member_epoch": 0, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout": 30_000, "topology": topology(),
            "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": m.process,
            "user_endpoint": None, "client_tags": [], "task_offsets": None, "task_end_offsets": None,
            "shutdown_application": False, **fields}
    return m.c.request(SGH, 1, body)


@pytest.mark.parametrize("fields,error,message", [
    ({"active_tasks": [{"subtopology_id": "0", "partitions": [0]}]}, E.invalid_request,
     "ActiveTasks must be empty when (re-)joining."),
    ({"topology": None}, E.invalid_request, "Topology must be non-null when (re-)joining."),
    ({"member_epoch": 3}, E.invalid_request, "Topology can only be provided when (re-)joining."),
    ({"member_epoch": -3, "topology": None}, E.invalid_request,
     "MemberEpoch is -3, but must be greater than or equal to -2."),
    ({"member_epoch": 1, "topology": None}, E.unknown_member_id, None),
    ({"rebalance_timeout": -1}, E.invalid_request, "RebalanceTimeoutMs must be provided in first request."),
    ({"standby_tasks": None}, E.invalid_request, "If one task-type is non-null, all must be non-null."),
])
def test_bad_heartbeats_get_kafkas_errors(b, fields, error, message):
    a = Member(b)
    a.hb()  # the group exists
    r = raw(Member(b), **fields)
    assert r.error_code == error
    if message is not None:
        assert r.error_message == message


def test_member_that_does_not_revoke_is_fenced_after_its_rebalance_timeout(b):
    a, c = Member(b, process="pa"), Member(b, process="pc")
    a.hb(), a.hb(), c.hb()
    everything = {"0": [0, 1], "1": [0, 1]}
    r = a.hb(active=everything)  # asked to give up 0_1 and 1_1; keeps reporting them
    assert (r.member_epoch, a.active) == (3, {"0": [0], "1": [0]})
    for _ in range(5):  # both keep their sessions alive; a never revokes
        b.advance(5_000)
        assert a.hb(active=everything).error_code == E.none
        c.hb()
    b.advance(5_000)  # 30 s since the revocation was asked: a's rebalance timeout
    assert a.hb(active=everything).error_code == E.unknown_member_id
    c.hb()
    assert c.active == {"0": [0, 1], "1": [0, 1]}


def test_static_member_leaves_and_its_next_incarnation_takes_its_tasks_without_a_rebalance(b):
    a, c = Member(b, process="pa", instance_id="i-a"), Member(b, process="pc")
    a.hb(), a.hb(), c.hb(), a.hb(), a.hb(), c.hb()
    tasks_a = a.active
    epoch = describe(a)[0].group_epoch
    r = raw(a, member_epoch=-2, topology=None, active_tasks=None, standby_tasks=None, warmup_tasks=None,
            instance_id="i-a", rebalance_timeout=-1)
    assert (r.error_code, r.member_epoch) == (E.none, -2)
    again = Member(b, process="pa", instance_id="i-a")
    r = again.hb()
    assert r.error_code == E.none and again.active == tasks_a
    assert describe(again)[0].group_epoch == epoch  # no rebalance
    r = raw(Member(b), instance_id="i-a")  # a third one while the second holds the instance id
    assert r.error_code == E.unreleased_instance_id


def test_fault_rules_and_the_journal_see_the_streams_apis(b):
    a = Member(b)
    b.inject(api="StreamsGroupHeartbeat", action="error", errors=["COORDINATOR_NOT_AVAILABLE"])
    b.inject(api="StreamsGroupDescribe", action="error", errors=["NOT_COORDINATOR"])
    r = a.hb()
    # StreamsGroupHeartbeatRequest.getErrorResponse: the schema's defaults beside the error (epoch 0)
    assert (r.error_code, r.member_epoch, r.active_tasks) == (E.coordinator_not_available, 0, None)
    assert [(g.group_id, g.error_code) for g in describe(a, "wc", "other")] == [
        ("wc", E.not_coordinator), ("other", E.not_coordinator)]
    assert a.hb().error_code == E.none  # each rule fired once
    assert [rec["error_code"] for rec in b.journal(api_key="StreamsGroupHeartbeat")] == [
        E.coordinator_not_available, E.none]
    assert [rec["error_code"] for rec in b.journal(api_key="StreamsGroupDescribe")] == [E.not_coordinator]


def test_internal_topic_the_controller_would_refuse_stays_missing(b):
    topo = topology()
    topo["subtopologies"][1]["state_changelog_topics"][0]["topic_configs"] = [
        {"key": "cleanup.policy", "value": "sometimes"}]
    topo["subtopologies"][1]["repartition_source_topics"][0]["replication_factor"] = 3  # one broker
    m = Member(b)
    for _ in range(2):
        r = m.hb(topo=topo, epoch=0) if m.epoch == 0 else m.hb()
        assert m.statuses(r) == [(3, f"Internal topics are missing: {REPARTITION}, {CHANGELOG}")]
    assert topic_info(b, CHANGELOG) is None and topic_info(b, REPARTITION) is None


def test_classic_join_to_a_streams_group(b):
    a = Member(b)
    a.hb()

    def join():
        return a.c.request(ApiKey.JOIN_GROUP, 9, {
            "group_id": "wc", "session_timeout": 10_000, "rebalance_timeout": 10_000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}], "reason": None})

    r = join()  # members: Kafka's classicGroupJoin refuses
    assert (r.error_code, r.member_id) == (E.inconsistent_group_protocol, "")
    a.hb(epoch=-1)
    r = join()  # empty: it becomes a classic group (a new member is asked to rejoin with its id)
    assert r.error_code == E.member_id_required
    assert b.group("wc")["type"] == "classic" and b.streams_group("wc") is None


def test_streams_member_joining_a_group_of_another_type(b):
    m = Member(b, group="cg")
    m.c.request(ApiKey.OFFSET_COMMIT, 8, {  # an empty classic group with an offset
        "group_id": "cg", "generation_id_or_member_epoch": -1, "member_id": "",
        "topics": [{"name": "input", "partitions": [{"partition_index": 0, "committed_offset": 7}]}]})
    assert m.hb().error_code == E.none  # converted, as getOrCreateStreamsGroup does
    assert b.streams_group("cg") is not None and b.committed_offsets("cg") == {("input", 0): 7}
    r = m.c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
        "group_id": "kg", "member_id": "", "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout": 30_000, "subscribed_topic_names": ["input"], "server_assignor": None,
        "topic_partitions": []})
    assert r.error_code == E.none
    m.c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
        "group_id": "kg", "member_id": r.member_id, "member_epoch": -1, "instance_id": None, "rack_id": None,
        "rebalance_timeout": -1, "subscribed_topic_names": None, "server_assignor": None, "topic_partitions": None})
    r = Member(b, group="kg").hb()  # an empty consumer group is not converted
    assert (r.error_code, r.error_message) == (E.group_id_not_found, "Group kg is not a streams group.")


def test_offset_delete_refuses_the_topics_a_streams_group_reads(b):
    a = Member(b)
    a.hb(), a.hb()
    b.create_topic("other", partitions=1)
    r = a.c.request(ApiKey.OFFSET_COMMIT, 9, {
        "group_id": "wc", "generation_id_or_member_epoch": a.epoch, "member_id": a.member_id,
        "topics": [{"name": "input", "partitions": [{"partition_index": 0, "committed_offset": 5}]},
                   {"name": "other", "partitions": [{"partition_index": 0, "committed_offset": 3}]}]})
    assert [p.error_code for t in r.topics for p in t.partitions] == [E.none, E.none]

    def delete():
        r = a.c.request(ApiKey.OFFSET_DELETE, 0, {"group_id": "wc", "topics": [
            {"name": n, "partitions": [{"partition_index": 0}]} for n in ("input", "other")]})
        return r.error_code, [(t.name, t.partitions[0].error_code) for t in r.topics]

    assert delete() == (E.none, [("input", E.group_subscribed_to_topic), ("other", E.none)])
    a.hb(epoch=-1)
    assert delete() == (E.none, [("input", E.none), ("other", E.none)])
    assert b.committed_offsets("wc") == {}
