"""The group registry and the Group protocol, without a broker.

* placement: a group is coordinated by the leader of __consumer_offsets
  partition abs(Java hashCode) % offsets.topic.num.partitions; the expected
  hash codes and partitions were printed by Java with kafka-clients 4.1.1's
  ``Utils.abs(groupId.hashCode()) % 50``;
* a coordinator move (its broker stops) is told to the listeners, once;
* the injected COORDINATOR_LOAD_IN_PROGRESS window, on a ManualClock;
* ``validate_offset_commit`` / ``validate_offset_fetch`` of a classic and of a
  consumer group give Kafka's errors;
* no module of mockbroker/group or mockbroker/apis asks ``isinstance`` of a
  group class, and mockbroker/group imports nothing above it.
"""

from __future__ import annotations

import ast
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mockbroker.common.clock import ManualClock
from mockbroker.group.consumer_group import ConsumerGroup, ConsumerGroupMember
from mockbroker.group.group import Group, GroupType
from mockbroker.group.classic_group import GroupMetadata, GroupState, MemberMetadata
from mockbroker.group.registry import GroupRegistry, java_string_hash
from protocol.errors import ErrorCode

E = ErrorCode
ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Node:
    node_id: int
    host: str = "localhost"
    port: int = 9092
    alive: bool = True


@dataclass
class Topic:
    topic_id: uuid.UUID
    partitions: list = field(default_factory=list)


@dataclass
class Cluster:
    brokers: dict[int, Node]
    topics: dict[str, Topic] = field(default_factory=dict)


def registry(n_brokers: int = 3, partitions: int = 50, rf: int = 3, clock: ManualClock | None = None
             ) -> tuple[GroupRegistry, Cluster, ManualClock]:
    cluster = Cluster({i: Node(i) for i in range(n_brokers)})
    clock = clock or ManualClock()
    return GroupRegistry(cluster, clock, partitions, rf), cluster, clock


# -- placement ------------------------------------------------------------------------------------
# (group id, String.hashCode, Utils.abs(hashCode) % 50), as Java and kafka-clients 4.1.1 print them
JAVA = [
    ("hello", 99162322, 22),
    ("polygenelubricants", -2147483648, 0),  # Integer.MIN_VALUE: Utils.abs gives 0
    ("\U0001F600", 1772899, 49),              # one code point, two UTF-16 units
    ("console-consumer-12345", 158455506, 6),
    ("my-group", -1906497762, 12),            # negative: Math.abs, not a bit mask (that gives 36)
    ("test-group-42", -559024281, 31),
]


@pytest.mark.parametrize("group_id,hash_code,partition", JAVA)
def test_partition_is_abs_java_hash_code_mod_partitions(group_id, hash_code, partition):
    assert java_string_hash(group_id) == hash_code & 0xFFFFFFFF
    reg, _, _ = registry()
    assert reg.partition_for(group_id) == partition


def test_coordinator_is_the_first_live_replica_of_the_partition():
    reg, cluster, _ = registry(n_brokers=3)
    # "hello" is on partition 22: replicas start at broker 22 % 3 = 1
    assert reg.coordinator_id("hello") == 1
    assert reg.validate_group_status("hello", 1) is None
    assert reg.validate_group_status("hello", 0) is E.not_coordinator
    cluster.brokers[1].alive = False
    assert reg.coordinator_id("hello") == 2  # the next replica takes over
    cluster.brokers[1].alive = True
    assert reg.coordinator_id("hello") == 2  # and keeps it (no preferred-leader election)
    for n in cluster.brokers.values():
        n.alive = False
    assert reg.coordinator_node("hello") is None
    assert reg.validate_group_status("hello", 2) is E.coordinator_not_available


def test_replication_factor_limits_the_replicas_that_can_take_over():
    reg, cluster, _ = registry(n_brokers=3, rf=1)
    assert reg.coordinator_id("hello") == 1
    cluster.brokers[1].alive = False
    assert reg.coordinator_id("hello") == -1


def test_group_id_checks():
    reg, _, _ = registry()
    assert reg.validate_group_status(None, 1) is E.invalid_group_id
    assert reg.validate_group_status("", 1) is E.invalid_group_id
    assert reg.validate_group_status("", reg.coordinator_id(""), allow_empty_id=True) is None


# -- coordinator moves -------------------------------------------------------------------------------
def test_a_coordinator_move_notifies_the_listeners_once():
    reg, cluster, clock = registry(n_brokers=3)
    moved: list[tuple[str, int, int]] = []
    reg.add_listener(lambda g, old, new: moved.append((g.group_id, old, new)))
    hello, other = GroupMetadata("hello", clock.time_ms()), GroupMetadata("my-group", clock.time_ms())
    reg.put(hello)  # partition 22 -> broker 1
    reg.put(other)  # broker 0
    assert (reg.owner("hello"), reg.owner("my-group")) == (1, 0)
    cluster.brokers[1].alive = False
    reg.on_brokers_changed()
    assert moved == [("hello", 1, 2)]  # my-group's coordinator did not change
    reg.on_brokers_changed()
    assert moved == [("hello", 1, 2)]  # nothing moved since
    for n in cluster.brokers.values():
        n.alive = False
    reg.on_brokers_changed()
    assert moved[1:] == [("hello", 2, -1), ("my-group", 0, -1)]


def test_a_leadership_move_moves_every_group_of_the_partition_and_stays():
    reg, cluster, clock = registry(n_brokers=3)
    moved: list[tuple[str, int, int]] = []
    reg.add_listener(lambda g, old, new: moved.append((g.group_id, old, new)))
    # "hello" and "g85" share partition 22 (replicas 1, 2, 0); "my-group" is on partition 12 (broker 0)
    assert reg.partition_for("g85") == reg.partition_for("hello") == 22
    for gid in ("hello", "g85", "my-group"):
        reg.put(GroupMetadata(gid, clock.time_ms()))
    reg.move_coordinator("hello", 0)
    assert sorted(moved) == [("g85", 1, 0), ("hello", 1, 0)]
    assert (reg.validate_group_status("hello", 1), reg.validate_group_status("hello", 0)) == (E.not_coordinator, None)
    reg.on_brokers_changed()  # it stays where it was moved
    assert len(moved) == 2 and reg.coordinator_id("g85") == 0
    cluster.brokers[2].alive = False
    with pytest.raises(ValueError):  # a stopped replica cannot lead
        reg.move_coordinator("hello", 2)
    assert reg.coordinator_id("hello") == 0 and len(moved) == 2


def test_only_a_replica_can_take_the_leadership():
    reg, _, _ = registry(n_brokers=3, rf=2)  # partition 22: replicas 1 and 2
    with pytest.raises(ValueError):
        reg.move_coordinator("hello", 0)
    reg.move_coordinator("hello", 2)
    assert reg.coordinator_id("hello") == 2


def test_a_replaced_group_keeps_its_owner_and_a_removed_one_forgets_it():
    reg, cluster, clock = registry(n_brokers=3)
    reg.put(GroupMetadata("hello", clock.time_ms()))
    cluster.brokers[1].alive = False  # not yet told: the group is still owned by broker 1
    reg.put(ConsumerGroup("hello", clock.time_ms()))  # the same group changing protocol
    assert reg.owner("hello") == 1 and reg.get("hello").group_type is GroupType.CONSUMER
    reg.remove("hello")
    assert reg.get("hello") is None and reg.owner("hello") is None


def test_groups_coordinated_by_a_node():
    reg, _, clock = registry(n_brokers=3)
    for gid in ("hello", "my-group", "test-group-42"):  # brokers 1, 0, 1 (partitions 22, 12, 31)
        reg.put(GroupMetadata(gid, clock.time_ms()))
    assert sorted(g.group_id for g in reg.groups_coordinated_by(1)) == ["hello", "test-group-42"]
    assert [g.group_id for g in reg.groups_coordinated_by(0)] == ["my-group"]
    assert reg.groups_coordinated_by(2) == []


# -- injected loading --------------------------------------------------------------------------------
def test_loading_window_on_a_manual_clock():
    reg, _, clock = registry(n_brokers=1)
    assert reg.validate_group_status("hello", 0) is None
    reg.inject_loading("hello", 500)
    assert reg.is_loading("hello")
    assert reg.validate_group_status("hello", 0) is E.coordinator_load_in_progress
    # the whole __consumer_offsets partition loads: another group on partition 22 too, not others
    same = next(f"g{i}" for i in range(10_000) if reg.partition_for(f"g{i}") == 22)
    assert reg.is_loading(same) and not reg.is_loading("my-group")
    clock.advance(499)
    assert reg.validate_group_status("hello", 0) is E.coordinator_load_in_progress
    clock.advance(1)
    assert not reg.is_loading("hello")
    assert reg.validate_group_status("hello", 0) is None


# -- the Group protocol: classic groups ---------------------------------------------------------------
def classic(state: GroupState = GroupState.STABLE, members=("m1", "m2"), static: dict[str, str] | None = None
            ) -> GroupMetadata:
    g = GroupMetadata("c", 0)
    static = static or {}
    for mid in members:
        g.add(MemberMetadata(mid, static.get(mid), "client", "/127.0.0.1", 10_000, 10_000, "consumer",
                             [("range", b"")]), None)
    path = {GroupState.EMPTY: [], GroupState.PREPARING_REBALANCE: [GroupState.PREPARING_REBALANCE],
            GroupState.COMPLETING_REBALANCE: [GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE],
            GroupState.STABLE: [GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                                GroupState.STABLE],
            GroupState.DEAD: [GroupState.DEAD]}[state]
    for s in path:
        g.transition_to(s, 0)
    g.generation_id = 3
    return g


@pytest.mark.parametrize("group,member,instance,generation,expected", [
    (classic(), "m1", None, 3, None),
    (classic(), "nobody", None, 3, E.unknown_member_id),
    (classic(), "m1", None, 2, E.illegal_generation),
    (classic(GroupState.PREPARING_REBALANCE), "m1", None, 3, None),
    (classic(GroupState.COMPLETING_REBALANCE), "m1", None, 3, E.rebalance_in_progress),
    (classic(GroupState.COMPLETING_REBALANCE), "m1", None, 2, E.illegal_generation),
    (classic(GroupState.DEAD), "m1", None, 3, E.coordinator_not_available),
    (classic(static={"m1": "host-1"}), "m1", "host-1", 3, None),
    (classic(static={"m1": "host-1"}), "m2", "host-1", 3, E.fenced_instance_id),
    (classic(), "m1", "host-9", 3, E.unknown_member_id),
    # generation -1 without a member id (assign() consumers, the admin client): only to a group
    # without members
    (classic(), "", None, -1, E.unknown_member_id),
    (classic(GroupState.EMPTY, members=()), "", None, -1, None),
], ids=lambda v: v.state.value if isinstance(v, GroupMetadata) else None)
def test_classic_validate_offset_commit(group, member, instance, generation, expected):
    assert group.validate_offset_commit(member, instance, generation, 9) is expected


def test_classic_groups_do_not_check_the_offset_fetch_member():
    assert classic().validate_offset_fetch("nobody", 7) is None
    assert classic().validate_offset_fetch(None, -1) is None


def test_classic_delete_and_state():
    assert classic().validate_delete_group() is E.non_empty_group
    empty = classic(GroupState.EMPTY, members=())
    assert empty.validate_delete_group() is None and empty.is_empty() and not empty.has_members()
    assert classic().state_as_string() == "Stable" and classic().group_type is GroupType.CLASSIC
    empty.transition_to_dead(5)
    assert empty.state is GroupState.DEAD


# -- the Group protocol: consumer groups --------------------------------------------------------------
def consumer(members: dict[str, int] | None = None) -> ConsumerGroup:
    g = ConsumerGroup("k", 0)
    for mid, epoch in (members if members is not None else {"m1": 5}).items():
        g.members[mid] = ConsumerGroupMember(mid, member_epoch=epoch)
    return g


@pytest.mark.parametrize("members,member,epoch,version,expected", [
    ({"m1": 5}, "m1", 5, 9, None),
    ({"m1": 5}, "m1", 4, 9, None),  # an older epoch: decided per partition (below)
    ({"m1": 5}, "m1", 6, 9, E.stale_member_epoch),
    ({"m1": 5}, "m1", 5, 8, E.unsupported_version),  # below v9 a member epoch cannot be sent
    ({"m1": 5}, "nobody", 5, 9, E.unknown_member_id),
    ({"m1": 5}, "", -1, 9, E.unknown_member_id),     # a group with members: only they commit
    ({}, "", -1, 2, None),                           # an empty group takes anyone's commit
    ({}, "m1", 3, 9, E.unknown_member_id),
])
def test_consumer_validate_offset_commit(members, member, epoch, version, expected):
    assert consumer(members).validate_offset_commit(member, None, epoch, version) is expected


def test_consumer_commit_from_an_older_epoch_is_decided_per_partition():
    """ConsumerGroup.createAssignmentEpochValidator: a partition held since that epoch, or before."""
    g = consumer({"m1": 5})
    t = uuid.uuid4()
    g.topic_id_of = lambda name: t if name == "t" else None
    g.members["m1"].partition_epochs = {(t, 0): 3, (t, 1): 5}
    assert g.commit_partition_error("m1", 5, ("t", 2)) is None  # the member's epoch: every partition
    assert g.commit_partition_error("m1", 4, ("t", 0)) is None
    assert g.commit_partition_error("m1", 3, ("t", 0)) is None
    assert g.commit_partition_error("m1", 2, ("t", 0)) is E.stale_member_epoch
    assert g.commit_partition_error("m1", 4, ("t", 1)) is E.stale_member_epoch
    assert g.commit_partition_error("m1", 4, ("t", 2)) is E.stale_member_epoch  # not held
    assert g.commit_partition_error("m1", 4, ("other", 0)) is E.stale_member_epoch


@pytest.mark.parametrize("member,epoch,expected", [
    (None, -1, None),          # no member (OffsetFetch before v9, the admin client)
    ("m1", 5, None),
    ("m1", 4, E.stale_member_epoch),
    ("nobody", 5, E.unknown_member_id),
    ("", -1, E.unknown_member_id),
])
def test_consumer_validate_offset_fetch(member, epoch, expected):
    assert consumer().validate_offset_fetch(member, epoch) is expected


def test_consumer_delete_and_state():
    assert consumer().validate_delete_group() is E.non_empty_group
    empty = consumer({})
    assert empty.validate_delete_group() is None and empty.is_empty() and not empty.has_members()
    assert empty.state_as_string() == "Empty" and empty.group_type is GroupType.CONSUMER


def test_both_group_types_have_every_member_of_the_group_protocol():
    names = {n for n in vars(Group) if not n.startswith("_")} | set(Group.__annotations__)
    assert {"validate_offset_commit", "validate_offset_fetch", "group_type", "offsets"} <= names
    for g in (classic(), consumer()):
        missing = sorted(n for n in names if not hasattr(g, n))
        assert not missing, (type(g).__name__, missing)


# -- the source -------------------------------------------------------------------------------------------
GROUP_CLASSES = {"ConsumerGroup", "GroupMetadata", "ClassicGroup"}


def _sources(*packages: str) -> list[Path]:
    return [p for pkg in packages for p in sorted((ROOT / "mockbroker" / pkg).rglob("*.py"))]


def _isinstance_on_group_classes(tree: ast.AST) -> list[int]:
    def names(node: ast.expr) -> set[str]:
        if isinstance(node, ast.Tuple):
            return {n for e in node.elts for n in names(e)}
        if isinstance(node, ast.Name):
            return {node.id}
        if isinstance(node, ast.Attribute):
            return {node.attr}
        return set()

    return [n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "isinstance"
            and len(n.args) == 2 and names(n.args[1]) & GROUP_CLASSES]


def test_the_check_finds_isinstance_on_a_group_class():
    tree = ast.parse("if isinstance(g, (int, ConsumerGroup)):\n    pass\nisinstance(g, metadata.GroupMetadata)\n")
    assert _isinstance_on_group_classes(tree) == [1, 3]


def test_no_isinstance_on_group_classes_in_group_or_apis():
    found = {str(p.relative_to(ROOT)): lines for p in _sources("group", "apis")
             if (lines := _isinstance_on_group_classes(ast.parse(p.read_text())))}
    assert found == {}


def test_the_group_package_imports_nothing_above_it():
    allowed = ("mockbroker.group", "mockbroker.common.clock", "mockbroker.purgatory", "mockbroker.state.cluster_view")
    bad = []
    for p in _sources("group"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level == 1:
                    continue  # within mockbroker/group
                mod = "mockbroker." + (node.module or "") if node.level == 2 else (node.module or "")
            elif isinstance(node, ast.Import):
                mod = node.names[0].name
            else:
                continue
            if mod.startswith("mockbroker") and not mod.startswith(allowed):
                bad.append((p.name, mod))
    assert bad == []
