"""Streams groups (KIP-1071) below the wire: the topology's internal topics as
Kafka 4.4's InternalTopicManager decides them, the StickyTaskAssignor, the
member's reconciliation (CurrentAssignmentBuilder) and StreamsGroup's offset
commit checks.

Expected values are worked out from Kafka's rules by hand (named in each test),
not read back from the code under test.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

import pytest

from mockbroker.group.streams_assignor import AssignorMember, AssignorSubtopology, assign
from mockbroker.group.streams_group import StreamsGroup, StreamsGroupState
from mockbroker.group.streams_tasks import (
    CurrentAssignmentBuilder,
    MemberState,
    StreamsGroupMember,
    TasksTuple,
    TasksTupleWithEpochs,
)
from mockbroker.group.streams_topology import (
    CopartitionGroup,
    Status,
    StreamsInvalidTopology,
    StreamsTopology,
    Subtopology,
    TopicInfo,
    configure_topics,
    java_hash_order,
    summarize_topics,
)
from protocol.errors import ErrorCode


@dataclass
class Topic:
    partitions: list[int]
    topic_id: uuid.UUID = field(default_factory=uuid.uuid4)


def topics(**counts: int) -> dict[str, Topic]:
    return {name.replace("_", "-"): Topic(list(range(n))) for name, n in counts.items()}


# word count: split words (0) -> repartition by word -> count into a store (1)
WORD_COUNT = StreamsTopology(1, {
    "0": Subtopology("0", source_topics=("input",), repartition_sink_topics=("wc-count-repartition",)),
    "1": Subtopology("1", repartition_source_topics=(TopicInfo("wc-count-repartition"),),
                     state_changelog_topics=(TopicInfo("wc-count-changelog",
                                                       topic_configs=(("cleanup.policy", "compact"),)),)),
})


# -- InternalTopicManager.configureTopics ------------------------------------------------------------
def test_missing_source_topics_is_reported_sorted_and_summarized() -> None:
    t = StreamsTopology(1, {"0": Subtopology("0", source_topics=("d", "b", "a", "c"))})
    c = configure_topics(t, 0, topics(b=1))
    assert not c.is_ready and c.subtopologies is None and c.internal_topics_to_create == {}
    assert c.error is not None and c.error.status is Status.MISSING_SOURCE_TOPICS
    assert c.error.message == "Source topics a, c, d are missing."
    assert summarize_topics(["a", "b", "c", "d", "e"]) == "a, b, c and 2 additional topics"


def test_internal_topics_get_the_partition_count_of_the_sources_and_are_to_be_created() -> None:
    c = configure_topics(WORD_COUNT, 7, topics(input=3))
    assert c.error is not None and c.error.status is Status.MISSING_INTERNAL_TOPICS
    # in the order Kafka's HashMap holds them (String.hashCode buckets), as Kafka 4.4 answers
    assert c.error.message == "Internal topics are missing: wc-count-repartition, wc-count-changelog"
    assert list(c.internal_topics_to_create) == ["wc-count-repartition", "wc-count-changelog"]
    made = {n: (t.partitions, t.replication_factor, t.topic_configs) for n, t in c.internal_topics_to_create.items()}
    assert made == {"wc-count-repartition": (3, None, ()),
                    "wc-count-changelog": (3, None, (("cleanup.policy", "compact"),))}
    assert c.subtopologies is not None and c.subtopologies["1"].number_of_tasks == 3


def test_java_hash_map_order() -> None:
    # "Aa" and "BB" share String.hashCode 2112 (bucket 0 of 16: insertion order), "a" is 97 (bucket 1);
    # a 13th key doubles the table
    assert java_hash_order(["BB", "Aa", "a"], 3) == ["BB", "Aa", "a"]
    assert java_hash_order(["a", "Aa", "BB"], 3) == ["Aa", "BB", "a"]
    keys = [f"t{i}" for i in range(13)]
    assert java_hash_order(keys, 13) != java_hash_order(keys, 12)


def test_topology_is_ready_once_the_internal_topics_exist() -> None:
    c = configure_topics(WORD_COUNT, 7, topics(input=3, wc_count_repartition=3, wc_count_changelog=3))
    assert c.is_ready and c.internal_topics_to_create == {} and c.metadata_hash == 7
    assert c.subtopologies is not None
    assert {sid: s.number_of_tasks for sid, s in c.subtopologies.items()} == {"0": 3, "1": 3}


def test_existing_internal_topic_with_another_partition_count_is_incorrectly_partitioned() -> None:
    c = configure_topics(WORD_COUNT, 0, topics(input=3, wc_count_repartition=3, wc_count_changelog=2))
    assert c.error is not None and c.error.status is Status.INCORRECTLY_PARTITIONED_TOPICS
    assert c.error.message == ("Existing topic wc-count-changelog has different number of partitions: "
                               "expected 3, found 2")


def test_declared_repartition_count_wins_over_the_sources() -> None:
    t = StreamsTopology(1, {
        "0": Subtopology("0", source_topics=("input",), repartition_sink_topics=("r",)),
        "1": Subtopology("1", repartition_source_topics=(TopicInfo("r", partitions=5),)),
    })
    c = configure_topics(t, 0, topics(input=2))
    assert c.internal_topics_to_create["r"].partitions == 5
    assert c.subtopologies is not None and c.subtopologies["1"].number_of_tasks == 5


def test_copartitioned_source_topics_must_have_the_same_partition_count() -> None:
    join = StreamsTopology(1, {"0": Subtopology("0", source_topics=("left", "right"),
                                                copartition_groups=(CopartitionGroup(source_topics=(0, 1)),))})
    bad = configure_topics(join, 0, topics(left=2, right=3))
    assert bad.error is not None and bad.error.status is Status.INCORRECTLY_PARTITIONED_TOPICS
    assert bad.error.message == "Following topics do not have the same number of partitions: [{left=2, right=3}]"
    assert configure_topics(join, 0, topics(left=3, right=3)).is_ready


def test_flexible_repartition_topic_copartitioned_with_a_source_takes_its_count() -> None:
    # CopartitionedTopicsEnforcer: a repartition topic without a declared count follows the source topics
    t = StreamsTopology(1, {
        "0": Subtopology("0", source_topics=("a",), repartition_sink_topics=("r",)),
        "1": Subtopology("1", source_topics=("b",), repartition_source_topics=(TopicInfo("r"),),
                         copartition_groups=(CopartitionGroup(source_topics=(0,), repartition_source_topics=(0,)),)),
    })
    c = configure_topics(t, 0, topics(a=6, b=4))
    assert c.internal_topics_to_create["r"].partitions == 4


def test_repartition_source_never_written_is_an_invalid_topology() -> None:
    t = StreamsTopology(1, {"0": Subtopology("0", repartition_source_topics=(TopicInfo("orphan"),))})
    with pytest.raises(StreamsInvalidTopology) as e:
        configure_topics(t, 0, {})
    assert e.value.error is ErrorCode.streams_invalid_topology


# -- StickyTaskAssignor ------------------------------------------------------------------------------
def member(mid: str, process: str | None = None, active=None, standby=None, offsets=None) -> AssignorMember:
    return AssignorMember(mid, process or "p-" + mid, active or {}, standby or {}, offsets or {})


def counts(result, kind: int) -> dict[str, int]:
    return {m: sum(len(ps) for ps in r[kind].values()) for m, r in result.items()}


def all_tasks(result, kind: int) -> list[tuple[str, int]]:
    return sorted((s, p) for r in result.values() for s, ps in r[kind].items() for p in ps)


SUBS = [AssignorSubtopology("0", 3, False), AssignorSubtopology("1", 3, True)]


def test_assignor_spreads_active_tasks_evenly_with_no_history() -> None:
    r = assign([member("a"), member("b"), member("c")], SUBS, 0)
    assert counts(r, 0) == {"a": 2, "b": 2, "c": 2}
    assert all_tasks(r, 0) == [(s, p) for s in "01" for p in range(3)]
    assert all_tasks(r, 1) == []


def test_assignor_keeps_active_tasks_with_their_previous_owner() -> None:
    prev_a = {"0": {0, 2}, "1": {1}}
    prev_b = {"0": {1}, "1": {0, 2}}
    r = assign([member("a", active=prev_a), member("b", active=prev_b)], SUBS, 0)
    assert r["a"][0] == prev_a and r["b"][0] == prev_b


def test_a_new_member_takes_only_what_is_over_the_quota() -> None:
    # 6 tasks over 3 members: a quota of 2 each; a and b each keep the first 2 of their 3 in the order
    # the assignor walks them (partition, then subtopology: 0_0 1_0 0_1 1_1 0_2 1_2), c gets the rest
    prev_a = {"0": {0, 1}, "1": {0}}
    prev_b = {"0": {2}, "1": {1, 2}}
    r = assign([member("a", active=prev_a), member("b", active=prev_b), member("c")], SUBS, 0)
    assert r["a"][0] == {"0": {0}, "1": {0}} and r["b"][0] == {"0": {2}, "1": {1}}
    assert r["c"][0] == {"0": {1}, "1": {2}}


def test_active_task_goes_to_a_previous_standby_before_the_least_loaded() -> None:
    # b held 1_0 as a standby: when a (its owner) leaves, b gets it
    subs = [AssignorSubtopology("1", 2, True)]
    r = assign([member("b", standby={"1": {0}}), member("c")], subs, 0)
    assert r["b"][0] == {"1": {0}} and r["c"][0] == {"1": {1}}


def test_standby_tasks_only_for_stateful_subtopologies_and_never_with_the_active() -> None:
    r = assign([member("a"), member("b"), member("c")], SUBS, 1)
    assert all_tasks(r, 1) == [("1", p) for p in range(3)]
    for m, (active, standby) in r.items():
        for s, ps in standby.items():
            assert not ps & active.get(s, set()), m
    # 9 tasks over 3 members: 3 each
    assert {m: counts(r, 0)[m] + counts(r, 1)[m] for m in r} == {"a": 3, "b": 3, "c": 3}


def test_standby_not_placed_on_the_process_running_the_active() -> None:
    # two members of one process and one of another: each standby must be on the other process
    subs = [AssignorSubtopology("1", 2, True)]
    r = assign([member("a1", "p1"), member("a2", "p1"), member("b", "p2")], subs, 1)
    proc = {"a1": "p1", "a2": "p1", "b": "p2"}
    active_proc = {(s, p): proc[m] for m, (act, _) in r.items() for s, ps in act.items() for p in ps}
    standby_proc = {(s, p): proc[m] for m, (_, sb) in r.items() for s, ps in sb.items() for p in ps}
    assert set(active_proc) == {("1", 0), ("1", 1)}
    for task, p in standby_proc.items():
        assert p != active_proc[task]


def test_standby_stays_with_the_member_that_restored_the_most() -> None:
    subs = [AssignorSubtopology("1", 1, True)]
    ms = [member("a", active={"1": {0}}), member("b", offsets={"1": {0: 10}}), member("c", offsets={"1": {0: 500}})]
    r = assign(ms, subs, 1)
    assert r["a"][0] == {"1": {0}} and r["c"][1] == {"1": {0}} and r["b"] == ({}, {})


def test_not_enough_processes_for_the_standby_replicas() -> None:
    subs = [AssignorSubtopology("1", 1, True)]
    r = assign([member("a")], subs, 2)
    assert r["a"] == ({"1": {0}}, {})


# -- CurrentAssignmentBuilder ------------------------------------------------------------------------
def build(m: StreamsGroupMember, target: TasksTuple, epoch: int, owned: TasksTuple | None,
          active_owner=lambda s, p: None) -> StreamsGroupMember:
    return CurrentAssignmentBuilder(m, epoch, target, active_owner, lambda s, p: set(), lambda s, p: set(),
                                    owned).build()


def test_member_revokes_before_it_moves_to_the_new_epoch() -> None:
    m = StreamsGroupMember("m", member_epoch=3, process_id="p",
                           assigned=TasksTupleWithEpochs(active={"0": {0: 2, 1: 3}}))
    target = TasksTuple(active={"0": {0}})
    m1 = build(m, target, 4, TasksTuple(active={"0": {0, 1}}))
    assert m1.state is MemberState.UNREVOKED_TASKS and m1.member_epoch == 3
    assert m1.assigned.active == {"0": {0: 2}} and m1.pending_revocation.active == {"0": {1: 3}}
    still = build(m1, target, 4, TasksTuple(active={"0": {0, 1}}))
    assert still == m1
    m2 = build(m1, target, 4, TasksTuple(active={"0": {0}}))
    assert m2.state is MemberState.STABLE and m2.member_epoch == 4 and m2.previous_member_epoch == 3
    assert m2.assigned.active == {"0": {0: 2}} and m2.pending_revocation.is_empty()


def test_task_another_process_still_runs_is_unreleased() -> None:
    m = StreamsGroupMember("m", member_epoch=1, process_id="p")
    target = TasksTuple(active={"0": {0, 1}})
    m1 = build(m, target, 2, TasksTuple(), active_owner=lambda s, p: "other" if p == 1 else None)
    assert m1.state is MemberState.UNRELEASED_TASKS and m1.member_epoch == 2
    assert m1.assigned.active == {"0": {0: 2}}
    m2 = build(m1, target, 2, TasksTuple(active={"0": {0}}))
    assert m2.state is MemberState.STABLE and m2.assigned.active == {"0": {0: 2, 1: 2}}


def test_active_task_demoted_to_standby_of_the_same_member_is_granted_at_once() -> None:
    m = StreamsGroupMember("m", member_epoch=1, process_id="p", assigned=TasksTupleWithEpochs(active={"1": {0: 1}}))
    m1 = build(m, TasksTuple(standby={"1": {0}}), 2, TasksTuple(active={"1": {0}}))
    assert m1.state is MemberState.UNREVOKED_TASKS
    assert m1.assigned.standby == {"1": {0}} and m1.pending_revocation.active == {"1": {0: 1}}


# -- StreamsGroup: offset commits, state ---------------------------------------------------------------
def test_streams_group_commit_checks_the_epoch_per_task() -> None:
    g = StreamsGroup("app")
    g.topology = WORD_COUNT
    g.update_member(StreamsGroupMember("m", member_epoch=5, process_id="p",
                                       assigned=TasksTupleWithEpochs(active={"0": {0: 3}, "1": {0: 5}})))
    assert g.validate_offset_commit("x", None, 5, 9) is ErrorCode.unknown_member_id
    assert g.validate_offset_commit("m", None, 6, 9) is ErrorCode.stale_member_epoch
    assert g.validate_offset_commit("m", None, 5, 8) is ErrorCode.unsupported_version
    assert g.validate_offset_commit("m", None, 4, 9) is None  # older: checked per partition
    assert g.commit_partition_error("m", 4, ("input", 0)) is None              # 0_0 held since epoch 3
    assert g.commit_partition_error("m", 4, ("wc-count-repartition", 0)) is ErrorCode.stale_member_epoch  # since 5
    assert g.commit_partition_error("m", 4, ("input", 1)) is ErrorCode.stale_member_epoch  # not its task
    assert g.commit_partition_error("m", 5, ("input", 1)) is None
    assert g.validate_delete_group() is ErrorCode.non_empty_group
    assert g.state is StreamsGroupState.NOT_READY
    g.remove_member("m", 1_000)
    assert g.state is StreamsGroupState.EMPTY and g.validate_delete_group() is None and g.empty_since_ms == 1_000


def test_streams_group_state_follows_the_epochs() -> None:
    g = StreamsGroup("app")
    g.topology = WORD_COUNT
    g.validated_topology_epoch = 1
    g.update_member(StreamsGroupMember("m", member_epoch=1, process_id="p"))
    g.group_epoch = 2
    assert g.state is StreamsGroupState.ASSIGNING
    g.assignment_epoch = 2
    assert g.state is StreamsGroupState.RECONCILING
    g.update_member(replace(g.members["m"], member_epoch=2))
    assert g.state is StreamsGroupState.STABLE
    assert g.as_listed_group().group_type.value == "streams"
    assert g.as_described_group().error is ErrorCode.group_id_not_found
