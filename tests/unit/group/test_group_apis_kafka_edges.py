"""The group APIs at their edges, as a real Kafka 4.4.0 answers them.

Each test is a case the differential tester (tests/differential/) found answered otherwise by
mockbroker, with Kafka 4.4.0's answer as it was observed side by side: a name listed twice, an empty
list of partitions, a generation or epoch a client should not send, the fields of an error answer.
"""

from __future__ import annotations

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey
from tests.polling import until

E = ErrorCode


@pytest.fixture
def b():
    with MockBroker(config={"mock.topics": ["t:2"]}, clock=ManualClock()) as broker:
        yield broker


@pytest.fixture
def c(b):
    client = RawKafkaClient.connect(b.bootstrap_servers)
    yield client
    client.close()


def simple_commit(c: RawKafkaClient, group: str, partitions=(0,), version: int = 8) -> None:
    """A generation -1 commit without a member: an Empty classic group that only stores offsets."""
    r = c.request(ApiKey.OFFSET_COMMIT, version, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": "t", "partitions": [
            {"partition_index": p, "committed_offset": 1, "committed_leader_epoch": -1, "committed_metadata": ""}
            for p in partitions]}]})
    assert {p.error_code for t in r.topics for p in t.partitions} == {E.none}


class TestDeleteGroups:
    @pytest.mark.parametrize("version", [0, 3])
    def test_a_group_named_twice_is_deleted_and_answered_once(self, b, c, version):
        """KafkaApis takes the names distinct: one result, NONE (mockbroker answered it twice, the
        second GROUP_ID_NOT_FOUND since the first had deleted it)."""
        simple_commit(c, "twice")
        r = c.request(ApiKey.DELETE_GROUPS, version, {"groups_names": ["twice", "twice", "absent", "absent"]})
        assert [(x.group_id, x.error_code) for x in r.results] == [("twice", E.none), ("absent", E.group_id_not_found)]
        assert b.group("twice") is None


def offset_delete(c: RawKafkaClient, group: str, topics: list[tuple[str, list[int]]]):
    r = c.request(ApiKey.OFFSET_DELETE, 0, {"group_id": group, "topics": [
        {"name": n, "partitions": [{"partition_index": p} for p in ps]} for n, ps in topics]})
    return r.error_code, [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics]


class TestOffsetDelete:
    """KafkaApis answers unknown topics and partitions itself (OffsetDeleteResponse.Builder, one entry
    per topic name), sends the topics with a partition left to the coordinator (which answers each as
    listed) and merges the two."""

    def test_a_topic_listed_without_partitions(self, b, c):
        simple_commit(c, "od", (0, 1))
        # a topic of the cluster with no partitions is not sent, an unknown one is answered, empty
        assert offset_delete(c, "od", [("t", []), ("nope", [])]) == (E.none, [("nope", [])])
        assert offset_delete(c, "od", [("t", [])]) == (E.none, [])
        # the group is still checked with nothing to delete
        assert offset_delete(c, "absent", [("t", [])]) == (E.group_id_not_found, [])

    def test_a_topic_listed_twice(self, b, c):
        simple_commit(c, "od2", (0, 1))
        # the coordinator answers each entry as listed
        assert offset_delete(c, "od2", [("t", [0]), ("t", [1])]) == (E.none, [("t", [(0, E.none)]), ("t", [(1, E.none)])])
        # with a partition the broker refused, the coordinator's entries join the broker's one
        assert offset_delete(c, "od2", [("t", [0, 7]), ("t", [1])]) == (
            E.none, [("t", [(7, E.unknown_topic_or_partition), (0, E.none), (1, E.none)])])
        assert offset_delete(c, "od2", [("nope", [0]), ("nope", [1])]) == (
            E.none, [("nope", [(0, E.unknown_topic_or_partition), (1, E.unknown_topic_or_partition)])])


def commit(c: RawKafkaClient, group: str, topics: list[tuple[str, list[int]]], generation: int = -1,
           member_id: str = "", version: int = 8, metadata: str = ""):
    r = c.request(ApiKey.OFFSET_COMMIT, version, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member_id,
        "group_instance_id": None, "retention_time": -1, "topics": [{"name": n, "partitions": [
            {"partition_index": p, "committed_offset": 1, "committed_leader_epoch": -1, "committed_metadata": metadata}
            for p in ps]} for n, ps in topics]})
    return [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics]


class TestOffsetCommit:
    """KafkaApis answers unknown topics and partitions itself (OffsetCommitResponse.Builder) and sends
    the coordinator only the topics with an existing partition; ClassicGroup.validateOffsetCommit takes
    any negative generation in an Empty group first."""

    def test_a_topic_listed_without_partitions(self, b, c):
        assert commit(c, "oc-a", [("t", []), ("nope", [])]) == [("nope", [])]
        assert b.group("oc-a") is None  # nothing was sent to the coordinator: no group made

    def test_nothing_for_the_coordinator_is_answered_without_the_group(self, b, c):
        """A generation of 5 for a group that does not exist would be ILLEGAL_GENERATION; with only
        unknown partitions the group is not looked at."""
        assert commit(c, "oc-b", [("t", [9]), ("nope", [0])], generation=5) == [
            ("t", [(9, E.unknown_topic_or_partition)]), ("nope", [(0, E.unknown_topic_or_partition)])]
        assert b.group("oc-b") is None

    def test_the_groups_refusal_answers_only_the_partitions_sent_to_it(self, b, c):
        assert commit(c, "oc-e", [("t", [0, 9])], generation=5, version=9) == [
            ("t", [(9, E.unknown_topic_or_partition), (0, E.group_id_not_found)])]
        assert commit(c, "oc-e", [("t", [0])], generation=5, version=8) == [("t", [(0, E.illegal_generation)])]

    def test_a_negative_generation_with_a_member_id_commits_to_an_empty_group(self, b, c):
        simple_commit(c, "oc-c")
        assert commit(c, "oc-c", [("t", [0])], member_id="someone") == [("t", [(0, E.none)])]
        assert commit(c, "oc-d", [("t", [0])], generation=-2, member_id="someone") == [("t", [(0, E.none)])]
        assert b.committed_offsets("oc-d") == {("t", 0): 1}

    def test_a_topic_listed_twice(self, b, c):
        assert commit(c, "oc-g", [("t", [0]), ("t", [1])]) == [("t", [(0, E.none)]), ("t", [(1, E.none)])]
        assert commit(c, "oc-g", [("t", [0, 9]), ("t", [1])]) == [
            ("t", [(9, E.unknown_topic_or_partition), (0, E.none), (1, E.none)])]

    def test_metadata_too_large_is_counted_in_java_chars(self, b, c):
        """offset.metadata.max.bytes (4096) compares String.length(): 4096 two-byte characters pass, 2049
        characters outside the BMP (two UTF-16 units each) do not."""
        assert commit(c, "oc-i", [("t", [0])], metadata="é" * 4096) == [("t", [(0, E.none)])]
        assert commit(c, "oc-i", [("t", [0])], metadata="\U0001F600" * 2048) == [("t", [(0, E.none)])]
        assert commit(c, "oc-i", [("t", [0])], metadata="\U0001F600" * 2049) == [("t", [(0, E.offset_metadata_too_large)])]
        assert commit(c, "oc-i", [("t", [0])], metadata="x" * 4097) == [("t", [(0, E.offset_metadata_too_large)])]


INVALID_REQUEST_MESSAGE = ("This most likely occurs because of a request being malformed by the client library or the "
                           "message was sent to an incompatible broker. See the broker logs for more details.")


class TestFindCoordinator:
    """Below v4 the answer is prepareOldResponse (the error's default message, "NONE" on success); from
    v4 KafkaApis sets no message per key, but the whole request's error answer carries the default."""

    def test_error_messages(self, b, c):
        r = c.request(ApiKey.FIND_COORDINATOR, 2, {"key": "g", "key_type": 0})
        assert (r.error_code, r.error_message, r.node_id) == (E.none, "NONE", 0)
        (x,) = c.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g"]}).coordinators
        assert (x.error_code, x.error_message, x.node_id) == (E.none, "", 0)

    def test_an_unknown_key_type_fails_the_whole_request(self, b, c):
        r = c.request(ApiKey.FIND_COORDINATOR, 2, {"key": "g", "key_type": 5})
        assert (r.error_code, r.error_message, r.node_id, r.host, r.port) == (
            E.invalid_request, INVALID_REQUEST_MESSAGE, -1, "", -1)
        r = c.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 7, "coordinator_keys": ["g", "h"]})
        assert [(x.key, x.error_code, x.error_message) for x in r.coordinators] == [
            ("g", E.invalid_request, INVALID_REQUEST_MESSAGE), ("h", E.invalid_request, INVALID_REQUEST_MESSAGE)]

    def test_share_keys(self, b, c):
        r = c.request(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 2})  # below v6
        assert (r.error_code, r.error_message) == (E.invalid_request, INVALID_REQUEST_MESSAGE)
        r = c.request(ApiKey.FIND_COORDINATOR, 5, {"key_type": 2, "coordinator_keys": ["g:AAAAAAAAAAAAAAAAAAAAAA:0"]})
        assert [(x.error_code, x.error_message) for x in r.coordinators] == [(E.invalid_request, "")]
        keys = ["g", "a:b:c", "g:AAAAAAAAAAAAAAAAAAAAAQ:x", "g:AAAAAAAAAAAAAAAAAAAAAA:0", "::AAAAAAAAAAAAAAAAAAAAAQ:1",
                "g:AAAAAAAAAAAAAAAAAAAAAQ:1:"]
        r = c.request(ApiKey.FIND_COORDINATOR, 6, {"key_type": 2, "coordinator_keys": keys})
        assert [(x.key, x.error_code, x.node_id) for x in r.coordinators] == [
            ("g", E.invalid_request, -1), ("a:b:c", E.invalid_request, -1),
            ("g:AAAAAAAAAAAAAAAAAAAAAQ:x", E.invalid_request, -1), ("g:AAAAAAAAAAAAAAAAAAAAAA:0", E.none, 0),
            ("::AAAAAAAAAAAAAAAAAAAAAQ:1", E.none, 0), ("g:AAAAAAAAAAAAAAAAAAAAAQ:1:", E.none, 0)]


MIN_INT = -(2**31)  # Integer.MIN_VALUE: no authorized operations


def join_consumer_group(c: RawKafkaClient, group: str, member_id: str = "m1") -> int:
    r = c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": group, "member_id": member_id, "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout": 30000, "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": []})
    assert r.error_code == E.none
    return r.member_epoch


class TestDescribes:
    """A group described with an error carries the schema's defaults (epochs 0) and, whatever the
    request asks, no authorized operations: KafkaApis sets them only on groups described without one."""

    def test_describe_groups_of_an_unknown_group(self, b, c):
        (g,) = c.request(ApiKey.DESCRIBE_GROUPS, 6, {"groups": ["nope"], "include_authorized_operations": True}).groups
        assert (g.error_code, g.error_message, g.group_state, g.authorized_operations) == (
            E.group_id_not_found, "Group nope not found.", "Dead", MIN_INT)
        (g,) = c.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["nope"], "include_authorized_operations": True}).groups
        assert (g.error_code, g.group_state, g.authorized_operations) == (E.none, "Dead", 3400)

    def test_describe_groups_of_a_consumer_group(self, b, c):
        """GroupMetadataManager.classicGroup: a KIP-848 group is not a classic group."""
        join_consumer_group(c, "cg")
        (g,) = c.request(ApiKey.DESCRIBE_GROUPS, 6, {"groups": ["cg"], "include_authorized_operations": True}).groups
        assert (g.error_code, g.error_message, g.group_state, g.protocol_type, g.protocol_data, g.members,
                g.authorized_operations) == (
            E.group_id_not_found, "Group cg is not a classic group.", "Dead", "", "", (), MIN_INT)
        (g,) = c.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["cg"], "include_authorized_operations": True}).groups
        assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data, g.authorized_operations) == (
            E.none, "Dead", "", "", 3400)

    @pytest.mark.parametrize("version", [0, 1])
    def test_consumer_group_describe_of_an_unknown_group(self, b, c, version):
        (g,) = c.request(ApiKey.CONSUMER_GROUP_DESCRIBE, version, {
            "group_ids": ["nope"], "include_authorized_operations": True}).groups
        assert (g.error_code, g.error_message, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name,
                g.authorized_operations) == (E.group_id_not_found, "Group nope not found.", "", 0, 0, "", MIN_INT)

    def test_consumer_group_describe_a_member_without_a_regex(self, b, c):
        join_consumer_group(c, "cg2")
        (g,) = c.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {
            "group_ids": ["cg2"], "include_authorized_operations": False}).groups
        assert [(m.subscribed_topic_names, m.subscribed_topic_regex) for m in g.members] == [(("t",), "")]

    @pytest.mark.parametrize("version", [0, 1])
    def test_streams_group_describe_of_an_unknown_group(self, b, c, version):
        body = {"group_ids": ["nope"], "include_authorized_operations": True}
        if version >= 1:
            body["include_topology_description"] = True
        (g,) = c.request(ApiKey.STREAMS_GROUP_DESCRIBE, version, body).groups
        assert (g.error_code, g.error_message, g.group_state, g.group_epoch, g.assignment_epoch, g.topology,
                g.authorized_operations) == (E.group_id_not_found, "Group nope not found.", "", 0, 0, None, MIN_INT)
        if version >= 1:
            assert g.assignor_name is None


def cgh(c: RawKafkaClient, group: str, member_id: str, epoch: int, topics=("t",), instance_id: str | None = None,
        owned: list | None = ()):
    """ConsumerGroupHeartbeat v1: a full one (rebalance timeout, subscription, owned partitions) unless
    ``topics`` is None (then a plain heartbeat or a leave)."""
    full = topics is not None
    return c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": group, "member_id": member_id, "member_epoch": epoch, "instance_id": instance_id,
        "rack_id": None, "rebalance_timeout": 30000 if full else -1,
        "subscribed_topic_names": list(topics) if full else None, "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": None if owned is None else list(owned)})


def partitions(r) -> list[int] | None:
    return None if r.assignment is None else sorted(p for t in r.assignment.topic_partitions for p in t.partitions)


def described(c: RawKafkaClient, group: str):
    (g,) = c.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}).groups
    return g.group_state, g.group_epoch, g.assignment_epoch, sorted(
        (m.member_id, m.instance_id, m.member_epoch, sorted(p for t in m.assignment.topic_partitions for p in t.partitions))
        for m in g.members)


class TestConsumerGroupHeartbeat:
    """GroupMetadataManager.consumerGroupHeartbeat with Kafka's 1 s assignment interval, each answer as
    Kafka 4.4.0 gave it side by side (a new group's first member gets epoch 2)."""

    def test_an_error_answer_carries_epoch_0(self, b, c):
        r = cgh(c, "h-none", "m1", 5)
        assert (r.error_code, r.error_message, r.member_id, r.member_epoch, r.heartbeat_interval.total_seconds()) == (
            E.group_id_not_found, "Consumer group h-none not found.", None, 0, 0)
        r = cgh(c, "h-none", "m1", -1, topics=None, owned=None)
        assert (r.error_code, r.error_message, r.member_epoch) == (E.group_id_not_found, "Group h-none not found.", 0)
        r = cgh(c, "", "m1", 0)
        assert (r.error_code, r.member_epoch) == (E.invalid_request, 0)

    def test_a_member_rejoining_with_epoch_0_keeps_its_state(self, b, c):
        assert (partitions(cgh(c, "h1", "m1", 0)), described(c, "h1")[1]) == ([0, 1], 2)
        r = cgh(c, "h1", "m1", 0)
        assert (r.error_code, r.member_epoch, partitions(r)) == (E.none, 2, [0, 1])
        # naming an instance id now: the same member, now static
        r = cgh(c, "h1", "m1", 0, instance_id="i1")
        assert (r.error_code, r.member_epoch, partitions(r)) == (E.none, 2, [0, 1])
        assert described(c, "h1") == ("Stable", 2, 2, [("m1", "i1", 2, [0, 1])])

    def test_rejoining_subscribed_to_nothing_gives_everything_up_at_once(self, b, c):
        """CurrentAssignmentBuilder.updateCurrentAssignment: the target is not computed again within the
        interval, but the partitions of topics no longer subscribed go at once."""
        cgh(c, "h2", "m1", 0)
        r = cgh(c, "h2", "m1", 0, topics=[])
        assert (r.error_code, r.member_epoch, partitions(r)) == (E.none, 2, [])
        assert described(c, "h2") == ("Assigning", 3, 2, [("m1", None, 2, [])])
        b.advance(1000)  # past the interval: the target of epoch 3
        cgh(c, "h3", "m1", 0)
        b.advance(1000)
        r = cgh(c, "h3", "m1", 0, topics=[])
        assert (r.member_epoch, partitions(r)) == (3, [])
        assert described(c, "h3") == ("Stable", 3, 3, [("m1", None, 3, [])])

    def test_a_subscription_is_a_set_of_names(self, b, c):
        assert cgh(c, "h4", "m1", 0, topics=["t", "t"]).member_epoch == 2
        assert cgh(c, "h4", "m1", 2, topics=["t"]).member_epoch == 2
        assert described(c, "h4")[:3] == ("Stable", 2, 2)  # no epoch bump

    def test_a_new_member_subscribed_to_nothing_does_not_bump_the_epoch(self, b, c):
        cgh(c, "h5", "m1", 0)
        r = cgh(c, "h5", "m2", 0, topics=[])
        assert (r.member_epoch, partitions(r)) == (2, [])
        assert described(c, "h5") == ("Stable", 2, 2, [("m1", None, 2, [0, 1]), ("m2", None, 2, [])])

    def test_static_members(self, b, c):
        cgh(c, "h6", "m1", 0)
        r = cgh(c, "h6", "m1", 2, instance_id="i9")
        assert (r.error_code, r.error_message, r.member_epoch) == (E.unknown_member_id, "Instance id i9 is unknown.", 0)
        assert cgh(c, "h7", "m2", 0, instance_id="i2").member_epoch == 2
        r = cgh(c, "h7", "m3", 0, instance_id="i2")
        assert (r.error_code, r.error_message) == (
            E.unreleased_instance_id,
            "Static member m3 with instance id i2 cannot join the group because the instance id is owned by m2 member.")
        r = cgh(c, "h7", "m4", 2, instance_id="i2")
        assert (r.error_code, r.error_message) == (
            E.fenced_instance_id, "Static member m4 with instance id i2 was fenced by member m2.")
        for epoch in (-1, -2):
            r = cgh(c, "h7", "zz", epoch, instance_id="i2", topics=None, owned=None)
            assert (r.error_code, r.member_epoch) == (E.fenced_instance_id, 0)
        r = cgh(c, "h7", "zz", -1, instance_id="i7", topics=None, owned=None)
        assert (r.error_code, r.error_message) == (E.unknown_member_id, "Instance id i7 is unknown.")

    def test_a_static_member_comes_back_and_the_last_one_leaves(self, b, c):
        cgh(c, "h8", "m1", 0, instance_id="i1")
        cgh(c, "h8", "m2", 0)
        r = cgh(c, "h8", "m1", -2, instance_id="i1", topics=None, owned=None)
        assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval.total_seconds()) == (E.none, "m1", -2, 0)
        assert described(c, "h8") == ("Assigning", 3, 2, [("m1", "i1", -2, [0, 1]), ("m2", None, 2, [])])
        r = cgh(c, "h8", "m3", 0, instance_id="i1")  # the new incarnation takes the assignment over
        assert (r.member_epoch, partitions(r)) == (2, [0, 1])
        assert cgh(c, "h8", "m2", -1, topics=None, owned=None).member_epoch == -1
        assert cgh(c, "h8", "m3", -1, instance_id="i1", topics=None, owned=None).member_epoch == -1
        assert described(c, "h8") == ("Empty", 5, 5, [])
        # the last member out reset the target's timestamp: the next target is computed at once
        r = cgh(c, "h8", "m4", 0)
        assert (r.member_epoch, partitions(r)) == (6, [0, 1])


def sgh(c: RawKafkaClient, group: str, member_id: str, epoch: int, version: int = 1, shutdown: bool = False):
    """StreamsGroupHeartbeat: a join (epoch 0, the topology reading "t") or a plain heartbeat / leave."""
    join = epoch == 0
    body = {"group_id": group, "member_id": member_id, "member_epoch": epoch, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout": 30000 if join else -1,
            "topology": {"epoch": 0, "subtopologies": [{
                "subtopology_id": "0", "source_topics": ["t"], "source_topic_regex": [], "state_changelog_topics": [],
                "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}]}
            if join else None,
            "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": "p0" if join else None,
            "user_endpoint": None, "client_tags": [] if join else None, "task_offsets": [], "task_end_offsets": [],
            "shutdown_application": shutdown}
    return c.request(ApiKey.STREAMS_GROUP_HEARTBEAT, version, body)


class TestStreamsGroupHeartbeat:
    """An answer with an error carries the schema's defaults beside it (epoch 0, no statuses), as Kafka
    4.4.0's GroupCoordinatorService builds it; v0's AcceptableRecoveryLagLegacy is never set (0)."""

    @pytest.mark.parametrize("version", [0, 1])
    def test_error_answers(self, b, c, version):
        assert sgh(c, "s1", "m1", 0, version).error_code == E.none
        r = sgh(c, "s1", "zz", 3, version)
        assert (r.error_code, r.error_message, r.member_id, r.member_epoch, r.status, r.active_tasks) == (
            E.unknown_member_id, "Member zz is not a member of group s1.", "", 0, (), None)
        r = sgh(c, "s-none", "zz", -1, version)
        assert (r.error_code, r.error_message, r.member_epoch, r.status) == (
            E.group_id_not_found, "Group s-none not found.", 0, ())
        r = sgh(c, "s1", "m1", -1, version)  # a leave
        assert (r.error_code, r.member_id, r.member_epoch, r.status) == (E.none, "m1", -1, ())

    def test_v0_acceptable_recovery_lag_legacy_is_0(self, b, c):
        r = sgh(c, "s0", "m1", 0, version=0)
        assert (r.error_code, r.member_epoch, r.acceptable_recovery_lag) == (E.none, 1, 0)

    def test_a_leave_asking_for_the_shutdown_asks_before_the_member_is_looked_up(self, b, c):
        sgh(c, "s2", "m1", 0)
        r = sgh(c, "s2", "zz", -1, shutdown=True)
        assert r.error_code == E.unknown_member_id
        statuses = [(s.status_code, s.status_detail) for s in sgh(c, "s2", "m1", 1).status]
        assert (4, "Streams group member zz encountered a fatal error and requested a shutdown for the entire "
                   "application.") in statuses


class TestJoinGroup:
    def test_a_protocol_named_twice_is_counted_once(self, b, c):
        """Kafka 4.4.0 never answers such a JoinGroup (ClassicGroupMember.vote throws when the join
        phase completes: docs/differences.md, the differential tester's known differences); mockbroker
        answers as if the protocol were named once."""
        from tests.differential.state import subscription

        meta = subscription(["t"])
        corr = c.send(ApiKey.JOIN_GROUP, 3, {
            "group_id": "j-dup", "session_timeout": 30000, "rebalance_timeout": 30000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": meta}] * 2})
        until(lambda: (g := b.group("j-dup")) is not None and len(g["members"]) == 1, "the member joined", 5)
        b.advance(3000)  # group.initial.rebalance.delay.ms
        r = c.response(ApiKey.JOIN_GROUP, 3, corr)
        assert (r.error_code, r.protocol_name, r.leader == r.member_id, len(r.members)) == (E.none, "range", True, 1)


class TestConsumerGroupOffsetCommit:
    def test_a_commit_from_an_older_epoch_for_partitions_held_since(self, b, c):
        """ConsumerGroup.createAssignmentEpochValidator: from an epoch older than the member's, only the
        partitions assigned to it at that epoch or before (Kafka 4.4.0 side by side)."""
        b.create_topic("u", 1)
        assert cgh(c, "oe", "m1", 0).member_epoch == 2  # t-0, t-1 assigned at epoch 2
        cgh(c, "oe", "m2", 0, topics=["u"])  # the group epoch moves to 3
        b.advance(1000)  # the assignment interval: the target of epoch 3
        t_id = b.call(lambda cl: cl.metadata.topics["t"].topic_id)
        r = cgh(c, "oe", "m1", 2, topics=None, owned=[{"topic_id": t_id, "partitions": [0, 1]}])
        assert (r.error_code, r.member_epoch) == (E.none, 3)

        def commit_at(epoch: int, topic: str = "t", version: int = 9):
            return commit(c, "oe", [(topic, [0])], generation=epoch, member_id="m1", version=version)[0][1][0][1]

        assert commit_at(2) == E.none  # held since epoch 2
        assert commit_at(3) == E.none
        assert commit_at(1) == E.stale_member_epoch  # before it was assigned
        assert commit_at(2, "u") == E.stale_member_epoch  # never assigned to m1
        assert commit_at(4) == E.stale_member_epoch  # newer than the member's
        assert commit_at(-1) == E.stale_member_epoch
        assert commit_at(2, version=8) == E.unsupported_version


def cgh_regex(c: RawKafkaClient, group: str, member_id: str, epoch: int, regex: str | None = None):
    """A join (epoch 0) or a plain heartbeat that may bring a new regex."""
    join = epoch == 0
    return c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": group, "member_id": member_id, "member_epoch": epoch, "instance_id": None, "rack_id": None,
        "rebalance_timeout": 30000 if join else -1, "subscribed_topic_names": None, "subscribed_topic_regex": regex,
        "server_assignor": None, "topic_partitions": [] if join else None})


def described_regex(c: RawKafkaClient, group: str):
    (g,) = c.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}).groups
    return g.group_state, g.group_epoch, g.assignment_epoch, sorted(
        (m.member_id, m.member_epoch, m.subscribed_topic_regex,
         sorted(p for t in m.assignment.topic_partitions for p in t.partitions)) for m in g.members)


class TestConsumerGroupRegex:
    """GroupMetadataManager.maybeUpdateRegularExpressions: a regex new to the group is resolved after
    the heartbeat that brought it (Kafka: in the background, within milliseconds), at most once every
    10 s per group, and moves the group epoch only when what it matches changed; a regex another member
    has is resolved already.  Each step as Kafka 4.4.0 answered it side by side."""

    def test_a_member_joining_by_regex(self, b, c):
        r = cgh_regex(c, "rx", "m1", 0, "t.*")
        assert (r.error_code, r.member_epoch, partitions(r)) == (E.none, 1, [])  # nothing resolved yet
        assert described_regex(c, "rx") == ("Assigning", 2, 1, [("m1", 1, "t.*", [])])  # resolved: epoch 2
        b.advance(300)  # the first target was never computed (the group's initial one): no interval to wait
        r = cgh_regex(c, "rx", "m1", 1)
        assert (r.member_epoch, partitions(r)) == (2, [0, 1])

    def test_a_regex_matching_nothing_moves_nothing(self, b, c):
        assert cgh(c, "rx0", "m1", 0).member_epoch == 2
        r = cgh_regex(c, "rx0", "m1", 2, "zzz-.*")
        assert (r.error_code, r.member_epoch, r.assignment) == (E.none, 2, None)
        assert described_regex(c, "rx0") == ("Stable", 2, 2, [("m1", 2, "zzz-.*", [0, 1])])

    def test_a_second_member_and_a_regex_changed_within_10_s(self, b, c):
        cgh_regex(c, "rx2", "m1", 0, "t")
        b.advance(1200)
        assert cgh_regex(c, "rx2", "m1", 1).member_epoch == 2
        r = cgh_regex(c, "rx2", "m2", 0, "t")  # resolved already: the group epoch moves at once
        assert (r.member_epoch, partitions(r)) == (2, [])
        assert described_regex(c, "rx2")[:3] == ("Assigning", 3, 2)
        cgh_regex(c, "rx2", "m2", 2, "t.*")  # resolved at most once every 10 s: not yet
        assert described_regex(c, "rx2")[:3] == ("Assigning", 3, 2)
        b.advance(1200)
        assert cgh_regex(c, "rx2", "m1", 2).member_epoch == 3
        b.create_topic("t2", 2)
        b.advance(9000)  # 10 s since the last resolution: the next heartbeat has the regexes resolved again
        assert cgh_regex(c, "rx2", "m2", 2).member_epoch == 3
        assert described_regex(c, "rx2")[:3] == ("Assigning", 4, 3)

    def test_an_invalid_regex(self, b, c):
        r = cgh_regex(c, "rx-bad", "m1", 0, "(?<=a)b")
        assert (r.error_code, r.member_epoch) == (E.invalid_regular_expression, 0)
        # Kafka's detail is RE2/J's ("invalid named capture."), here RE2's
        assert r.error_message.startswith("SubscribedTopicRegex `(?<=a)b` is not a valid regular expression: ")
        (g,) = c.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": ["rx-bad"],
                                                            "include_authorized_operations": False}).groups
        assert g.error_code == E.group_id_not_found  # no group made


class TestConsumerGroupHeartbeatChecks:
    """GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid, in Kafka's order and with
    its messages (Kafka 4.4.0 side by side)."""

    def test_the_member_id_is_checked_first(self, b, c):
        r = c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
            "group_id": "", "member_id": "", "member_epoch": 5, "instance_id": None, "rack_id": None,
            "rebalance_timeout": 30000, "subscribed_topic_names": ["t"], "server_assignor": None,
            "topic_partitions": []})
        assert (r.error_code, r.error_message) == (E.invalid_request, "MemberId can't be empty.")

    def test_v0_a_static_leave_without_a_member_id_is_fenced(self, b, c):
        """v0 needs no member id for epoch -2: the instance id's member is found, and it is not this one."""
        assert cgh(c, "ck", "m1", 0, instance_id="i1").member_epoch == 2
        r = c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
            "group_id": "ck", "member_id": "", "member_epoch": -2, "instance_id": "i1", "rack_id": None,
            "rebalance_timeout": -1, "subscribed_topic_names": None, "server_assignor": None,
            "topic_partitions": None})
        assert (r.error_code, r.error_message) == (
            E.fenced_instance_id, "Static member  with instance id i1 was fenced by member m1.")

    def test_messages(self, b, c):
        def v0(**kw):
            body = {"group_id": "ck2", "member_id": "m1", "member_epoch": 0, "instance_id": None, "rack_id": None,
                    "rebalance_timeout": 30000, "subscribed_topic_names": ["t"], "server_assignor": None,
                    "topic_partitions": []}
            return c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {**body, **kw})

        assert (v0(member_epoch=-3).error_message, v0(subscribed_topic_names=None).error_message) == (
            "MemberEpoch is invalid.", "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                                       "(re-)joining.")

    def test_a_coordinator_error_has_no_message(self, b, c):
        b.inject_coordinator_loading("ck3", 500)
        r = cgh(c, "ck3", "m1", 0)
        assert (r.error_code, r.error_message, r.member_epoch) == (E.coordinator_load_in_progress, None, 0)
