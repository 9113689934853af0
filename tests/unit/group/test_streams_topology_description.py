"""KIP-1331 StreamsGroupTopologyDescriptionUpdate (key 93) over the wire: the heartbeat asks for the
description once per topology epoch, a member pushes it, StreamsGroupDescribe v1 and the control plane
show it; Kafka's errors for a broker without a plugin, an unknown group or member, a stale epoch."""

from __future__ import annotations

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.errors import ErrorCode
from protocol.registry import ApiKey
from tests.streams_member import SGD, Member

E = ErrorCode
SGTDU = ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE
PLUGIN = "group.streams.topology.description.plugin.class"


def make_broker(**extra):
    cfg = {"group.streams.initial.rebalance.delay.ms": 0, "group.streams.assignment.interval.ms": 0,
           "mock.topics": ["input:2"], "mock.kafka.version": "4.4", **extra}
    return MockBroker(config=cfg, clock=ManualClock())


@pytest.fixture
def b():
    with make_broker(**{PLUGIN: "org.example.InMemoryTopologyPlugin"}) as broker:
        yield broker


def node(name: str, node_type: int, successors=(), source_topics=(), sink=None, stores=()) -> dict:
    return {"name": name, "node_type": node_type, "source_topics": list(source_topics), "sink_topic": sink,
            "stores": list(stores), "successors": list(successors)}


DESCRIPTION = {
    "subtopologies": [
        {"subtopology_id": "0", "nodes": [
            node("KSTREAM-SOURCE-0000000000", 1, ["KSTREAM-FLATMAPVALUES-0000000001"], source_topics=["input"]),
            node("KSTREAM-FLATMAPVALUES-0000000001", 2, ["KSTREAM-SINK-0000000002"]),
            node("KSTREAM-SINK-0000000002", 3, sink="wc-count-repartition")]},
        {"subtopology_id": "1", "nodes": [
            node("KSTREAM-SOURCE-0000000003", 1, ["KSTREAM-AGGREGATE-0000000004"],
                 source_topics=["wc-count-repartition"]),
            node("KSTREAM-AGGREGATE-0000000004", 2, stores=["count"])]}],
    "global_stores": [{"source": node("KSTREAM-SOURCE-0000000005", 1, ["KTABLE-SOURCE-0000000006"],
                                      source_topics=["globals"]),
                       "processor": node("KTABLE-SOURCE-0000000006", 2, stores=["global-store"])}],
}


def push(m: Member, member_id: str | None = None, epoch: int = 1, group: str | None = None):
    return m.c.request(SGTDU, 0, {"group_id": m.group if group is None else group,
                                  "member_id": m.member_id if member_id is None else member_id,
                                  "topology_epoch": epoch, "topology_description": DESCRIPTION})


def describe_with(m: Member):
    return m.c.request(SGD, 1, {"group_ids": [m.group], "include_authorized_operations": False,
                                "include_topology_description": True}).groups[0]


def test_heartbeat_asks_once_a_member_pushes_and_describe_returns_it(b):
    m = Member(b, process="p1")
    r = m.hb()
    assert r.error_code == E.none and r.topology_description_required is True
    r = m.hb()
    assert r.topology_description_required is False  # asked once for the epoch
    g = describe_with(m)
    assert (g.topology_description_status, g.topology_description) == (1, None)  # NOT_STORED
    r = push(m)
    assert (r.error_code, r.error_message) == (E.none, None)
    g = describe_with(m)
    assert g.topology_description_status == 3  # AVAILABLE
    d = g.topology_description
    assert [(s.subtopology_id, [(n.name, n.node_type, list(n.source_topics), n.sink_topic, list(n.stores),
                                 list(n.successors)) for n in s.nodes]) for s in d.subtopologies] == [
        ("0", [("KSTREAM-SOURCE-0000000000", 1, ["input"], None, [], ["KSTREAM-FLATMAPVALUES-0000000001"]),
               ("KSTREAM-FLATMAPVALUES-0000000001", 2, [], None, [], ["KSTREAM-SINK-0000000002"]),
               ("KSTREAM-SINK-0000000002", 3, [], "wc-count-repartition", [], [])]),
        ("1", [("KSTREAM-SOURCE-0000000003", 1, ["wc-count-repartition"], None, [], ["KSTREAM-AGGREGATE-0000000004"]),
               ("KSTREAM-AGGREGATE-0000000004", 2, [], None, ["count"], [])])]
    assert [(s.source.name, list(s.processor.stores)) for s in d.global_stores] == [
        ("KSTREAM-SOURCE-0000000005", ["global-store"])]
    m2 = Member(b, process="p2")
    assert m2.hb().topology_description_required is False  # stored for the current epoch
    plain = m.c.request(SGD, 1, {"group_ids": ["wc"], "include_authorized_operations": False,
                                 "include_topology_description": False}).groups[0]
    assert (plain.topology_description_status, plain.topology_description) == (0, None)  # NOT_REQUESTED
    v = b.streams_group("wc")
    assert v["topology_description_epoch"] == 1 and v["topology_description"] == DESCRIPTION


def test_errors_for_unknown_group_member_and_epoch(b):
    m = Member(b, process="p1")
    m.hb()
    cases = [
        (push(m, epoch=2), E.invalid_request, "Topology epoch 2 does not match the group's current topology epoch 1."),
        (push(m, member_id="ghost"), E.unknown_member_id, "Member ghost is not a member of group wc."),
        (push(m, group="nope"), E.group_id_not_found, "Streams group nope not found."),
        (push(m, member_id=""), E.invalid_request, "MemberId can't be empty."),
        (push(m, group=""), E.invalid_request, "GroupId can't be empty."),
    ]
    assert [(r.error_code, r.error_message) for r, _, _ in cases] == [(e, msg) for _, e, msg in cases]
    assert describe_with(m).topology_description_status == 1  # nothing stored by the refused pushes
    assert b.streams_group("wc")["topology_description"] is None


def test_without_a_plugin_kafka_answers_unsupported_version():
    with make_broker() as b:
        m = Member(b, process="p1")
        assert m.hb().topology_description_required is False  # never asked
        r = push(m)
        assert (r.error_code, r.error_message) == (
            E.unsupported_version, "The broker has no streams group topology description plugin configured.")
        assert describe_with(m).topology_description_status == 1
