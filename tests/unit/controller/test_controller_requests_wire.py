"""The requests a Kafka 4.4 broker forwards to its controller -- CreateTopics (19), DeleteTopics (20),
CreatePartitions (37), ElectLeaders (43), AlterPartitionReassignments (45) -- over a real socket, answered
as a Kafka 4.4.0 answered them side by side (tests/differential): names given twice, the controller's
deadline (a timeout of 0 or less: REQUEST_TIMED_OUT for the whole request and nothing applied, unless
nothing reaches the controller), CreateTopics' configs and validate-only answer; and Metadata's answer for
a topic it auto-creates (through the controller, as AutoTopicCreationManager does)."""

from __future__ import annotations

import uuid

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

E = ErrorCode
ZERO = uuid.UUID(int=0)
NO_ID = None  # the zero uuid, as kio reads it in a response


@pytest.fixture(scope="module")
def b():
    with MockBroker(config={"num.partitions": 1}, clock=ManualClock()) as broker:
        yield broker


def exists(b, name):
    return b.call(lambda cl: name in cl.metadata.topics)


def create(c, topics, timeout=30000, validate_only=False, version=7):
    """CreateTopics of [(name, partitions, replication factor)]: the results."""
    r = c.request(ApiKey.CREATE_TOPICS, version, {"timeout": timeout, "validate_only": validate_only, "topics": [
        {"name": n, "num_partitions": p, "replication_factor": rf, "assignments": [], "configs": []}
        for n, p, rf in topics]})
    return list(r.topics)


def delete(c, names, timeout=30000, version=5):
    r = c.request(ApiKey.DELETE_TOPICS, version, {"timeout": timeout, "topic_names": names})
    return [(x.name, x.error_code, x.error_message) for x in r.responses]


def delete_v6(c, topics, timeout=30000):
    r = c.request(ApiKey.DELETE_TOPICS, 6, {"timeout": timeout, "topics": [
        {"name": n, "topic_id": i} for n, i in topics]})
    return [(x.name, x.topic_id, x.error_code, x.error_message) for x in r.responses]


class TestCreateTopics:
    def test_a_name_given_twice_is_answered_once_and_the_others_are_created(self, b, c):
        (dup,) = create(c, [("ct-dup", 1, 1), ("ct-dup", 1, 1)])
        assert (dup.name, dup.error_code, dup.error_message) == ("ct-dup", E.invalid_request, "Duplicate topic name.")
        assert (dup.topic_id, dup.num_partitions, dup.replication_factor, list(dup.configs)) == (NO_ID, -1, -1, [])
        results = create(c, [("ct-dup", 1, 1), ("ct-other", 1, 1), ("ct-dup", 1, 1)])
        assert [(t.name, t.error_code, t.error_message) for t in results] == [
            ("ct-other", E.none, None), ("ct-dup", E.invalid_request, "Duplicate topic name.")]
        assert exists(b, "ct-other") and not exists(b, "ct-dup")

    @pytest.mark.parametrize("timeout", [0, -1, -5])
    def test_a_timeout_of_zero_or_less_times_out_every_topic_and_creates_none(self, b, c, timeout):
        names = [f"ct-t{-timeout}-a", f"ct-t{-timeout}-a", f"ct-t{-timeout}-b"]
        results = create(c, [(n, 1, 1) for n in names], timeout=timeout)
        assert [(t.name, t.error_code, t.error_message, t.topic_id, t.num_partitions) for t in results] == [
            (n, E.request_timed_out, None, NO_ID, -1) for n in names]
        assert [list(t.configs) for t in results] == [[], [], []]
        assert not exists(b, names[0]) and not exists(b, names[2])
        v2 = create(c, [(names[2], 1, 1)], timeout=timeout, version=2)
        assert [(t.name, t.error_code) for t in v2] == [(names[2], E.request_timed_out)]
        assert not exists(b, names[2])

    def test_nothing_for_the_controller_is_answered_whatever_the_timeout(self, b, c):
        assert create(c, [], timeout=0) == []
        (dup,) = create(c, [("ct-t-dup", 1, 1), ("ct-t-dup", 1, 1)], timeout=0)
        assert (dup.error_code, dup.error_message) == (E.invalid_request, "Duplicate topic name.")

    def test_a_small_positive_timeout_creates(self, b, c):
        (t,) = create(c, [("ct-1ms", 1, 1)], timeout=1)
        assert t.error_code == E.none and exists(b, "ct-1ms")

    def test_the_configs_of_a_created_topic_are_every_topic_config(self, b, c):
        (t,) = create(c, [("ct-configs", 1, 1)])
        configs = {x.name: (x.value, x.config_source, x.read_only, x.is_sensitive) for x in t.configs}
        assert len(configs) == 37 and [x.name for x in t.configs] == sorted(configs)
        assert configs["compression.gzip.level"] == ("-1", 5, False, False)
        assert configs["max.decompressed.message.bytes"] == ("2147483639", 5, False, False)
        assert configs["remote.log.copy.disable"] == ("false", 5, False, False)
        assert configs["follower.replication.throttled.replicas"] == ("", 5, False, False)
        assert configs["min.insync.replicas"] == ("1", 3, False, False)  # the cluster default Kafka formats
        assert "internal.segment.bytes" not in configs

    def test_validate_only_answers_an_id_and_the_configs_and_creates_nothing(self, b, c):
        (t,) = create(c, [("ct-validate", 2, 1)], validate_only=True)
        assert t.error_code == E.none and t.topic_id not in (NO_ID, ZERO)
        assert (t.num_partitions, t.replication_factor, len(t.configs)) == (2, 1, 37)
        assert not exists(b, "ct-validate")

    @pytest.mark.parametrize("rf", [0, -2, -32768])
    def test_a_replication_factor_below_one_and_not_minus_one(self, c, rf):
        (t,) = create(c, [("ct-rf", 0, rf)])  # the replication factor is checked first
        assert (t.error_code, t.error_message) == (
            E.invalid_replication_factor, "Replication factor must be larger than 0, or -1 to use the default value.")
        assert (t.topic_id, t.num_partitions, t.replication_factor, list(t.configs)) == (NO_ID, -1, -1, [])

    @pytest.mark.parametrize("partitions", [0, -2])
    def test_a_partition_count_below_one_and_not_minus_one(self, c, partitions):
        (t,) = create(c, [("ct-np", partitions, 1)])
        assert (t.error_code, t.error_message) == (
            E.invalid_partitions, "Number of partitions was set to an invalid non-positive value.")

    def test_more_replicas_than_brokers(self, c):
        (t,) = create(c, [("ct-rf-big", 1, 32767)])
        assert (t.error_code, t.error_message) == (
            E.invalid_replication_factor, "Unable to replicate the partition 32767 time(s): The target replication "
            "factor of 32767 cannot be reached because only 1 broker(s) are registered or some brokers have all their "
            "log directories cordoned.")

    def test_cluster_metadata_is_refused(self, c):
        (t,) = create(c, [("__cluster_metadata", 1, 1)])
        assert (t.error_code, t.error_message) == (
            E.invalid_request, "Creation of internal topic __cluster_metadata is prohibited.")


class TestDeleteTopics:
    def test_a_name_given_twice_is_refused_and_not_deleted(self, b, c):
        b.create_topic("dt-dup", 1)
        b.create_topic("dt-other", 1)
        assert delete(c, ["dt-dup", "dt-dup"]) == [("dt-dup", E.invalid_request, "Duplicate topic name.")]
        assert exists(b, "dt-dup")
        assert sorted(delete(c, ["dt-dup", "dt-other", "dt-dup"])) == [
            ("dt-dup", E.invalid_request, "Duplicate topic name."), ("dt-other", E.none, None)]
        assert exists(b, "dt-dup") and not exists(b, "dt-other")

    def test_a_timeout_of_zero_or_less_times_out_every_topic_and_deletes_none(self, b, c):
        b.create_topic("dt-t0", 1)
        assert delete(c, ["dt-t0", "dt-t0", "dt-missing"], timeout=0) == [
            ("dt-t0", E.request_timed_out, None), ("dt-t0", E.request_timed_out, None),
            ("dt-missing", E.request_timed_out, None)]
        r = c.request(ApiKey.DELETE_TOPICS, 1, {"timeout": -1, "topic_names": ["dt-t0", "dt-missing"]})
        assert [(x.name, x.error_code) for x in r.responses] == [("dt-t0", E.request_timed_out),
                                                                  ("dt-missing", E.request_timed_out)]
        unknown = uuid.UUID(int=5)
        assert delete_v6(c, [("dt-t0", ZERO), (None, unknown)], timeout=0) == [
            ("dt-t0", NO_ID, E.request_timed_out, None), (None, unknown, E.request_timed_out, None)]
        assert exists(b, "dt-t0")
        # nothing for the controller: answered
        assert delete(c, ["dt-t0", "dt-t0"], timeout=0) == [("dt-t0", E.invalid_request, "Duplicate topic name.")]
        assert delete(c, [], timeout=0) == []

    def test_unknown_names_and_ids_carry_the_errors_own_message(self, c):
        assert delete(c, ["dt-nope"]) == [("dt-nope", E.unknown_topic_or_partition,
                                           "This server does not host this topic-partition.")]
        unknown = uuid.UUID(int=7)
        assert delete_v6(c, [(None, unknown)]) == [(None, unknown, E.unknown_topic_id,
                                                    "This server does not host this topic ID.")]

    def test_topic_ids_given_twice_or_with_a_name_or_with_neither(self, b, c):
        b.create_topic("dt-ids", 1)
        tid = b.call(lambda cl: cl.metadata.topics["dt-ids"].topic_id)
        assert delete_v6(c, [(None, tid), (None, tid)]) == [(None, tid, E.invalid_request, "Duplicate topic id.")]
        assert delete_v6(c, [(None, ZERO)]) == [(None, NO_ID, E.invalid_request,
                                                 "Neither topic name nor id were specified.")]
        assert delete_v6(c, [("dt-ids", tid)]) == [("dt-ids", tid, E.invalid_request,
                                                    "You may not specify both topic name and topic id.")]
        assert delete_v6(c, [(None, tid), ("dt-ids", ZERO)]) == [
            ("dt-ids", tid, E.invalid_request, "The provided topic name maps to an ID that was already supplied.")]
        assert exists(b, "dt-ids")
        assert delete_v6(c, [(None, tid)]) == [("dt-ids", tid, E.none, None)]
        assert not exists(b, "dt-ids")


class TestCreatePartitions:
    def body(self, topics, timeout, validate_only=False):
        return {"timeout": timeout, "validate_only": validate_only,
                "topics": [{"name": n, "count": k, "assignments": None} for n, k in topics]}

    def test_a_timeout_of_zero_or_less_times_out_every_topic_and_adds_none(self, b, c):
        b.create_topic("cp-t0", 1)
        for version, timeout in ((3, 0), (0, -1), (2, -7)):
            r = c.request(ApiKey.CREATE_PARTITIONS, version, self.body([("cp-t0", 4), ("cp-t0", 4), ("cp-x", 4)], timeout))
            assert [(x.name, x.error_code, x.error_message) for x in r.results] == [
                ("cp-t0", E.request_timed_out, None), ("cp-t0", E.request_timed_out, None),
                ("cp-x", E.request_timed_out, None)]
        r = c.request(ApiKey.CREATE_PARTITIONS, 0, self.body([("cp-t0", 4)], 0, validate_only=True))
        assert [(x.name, x.error_code) for x in r.results] == [("cp-t0", E.request_timed_out)]
        assert b.call(lambda cl: len(cl.metadata.topics["cp-t0"].partitions)) == 1
        r = c.request(ApiKey.CREATE_PARTITIONS, 3, self.body([("cp-t0", 4), ("cp-t0", 4)], -1))  # nothing to send
        assert [(x.name, x.error_code, x.error_message) for x in r.results] == [
            ("cp-t0", E.invalid_request, "Duplicate topic name.")]
        r = c.request(ApiKey.CREATE_PARTITIONS, 3, self.body([("cp-t0", 4)], 1))
        assert [(x.name, x.error_code) for x in r.results] == [("cp-t0", E.none)]


class TestElectLeaders:
    def elect(self, c, partitions, timeout, election=0, version=2):
        r = c.request(ApiKey.ELECT_LEADERS, version, {"election_type": election, "timeout": timeout,
                                                      "topic_partitions": None if partitions is None else [
                                                          {"topic": t, "partitions": ps} for t, ps in partitions]})
        return (getattr(r, "error_code", None),
                [(t.topic, p.partition_id, p.error_code, p.error_message)
                 for t in r.replica_election_results for p in t.partition_result])

    def test_a_timeout_of_zero_or_less(self, b, c):
        b.create_topic("el-t0", 2)
        assert self.elect(c, [("el-t0", [0, 1])], 0) == (E.request_timed_out, [
            ("el-t0", 0, E.request_timed_out, None), ("el-t0", 1, E.request_timed_out, None)])
        r = c.request(ApiKey.ELECT_LEADERS, 2, {"election_type": 0, "timeout": 0, "topic_partitions": None})
        assert (r.error_code, list(r.replica_election_results)) == (E.request_timed_out, [])
        assert self.elect(c, [("el-t0", [0])], -1, version=0) == (None, [("el-t0", 0, E.request_timed_out, None)])
        # the deadline before the election type (checked in the controller's event)
        assert self.elect(c, [("el-t0", [0])], 0, election=4)[0] == E.request_timed_out

    def test_no_partitions_is_answered_at_once(self, c):
        assert self.elect(c, [], 0) == (E.none, [])
        assert self.elect(c, [], 30000, election=4) == (E.none, [])

    def test_an_unknown_election_type(self, b, c):
        b.create_topic("el-type", 2)
        assert self.elect(c, [("el-type", [0, 1])], 30000, election=4) == (E.invalid_request, [
            ("el-type", 0, E.invalid_request, "Unknown election type 4"),
            ("el-type", 1, E.invalid_request, "Unknown election type 4")])
        r = c.request(ApiKey.ELECT_LEADERS, 2, {"election_type": 2, "timeout": 30000, "topic_partitions": None})
        assert (r.error_code, list(r.replica_election_results)) == (E.invalid_request, [])


class TestAlterPartitionReassignments:
    def test_a_timeout_of_zero_or_less_and_no_topics(self, b, c):
        b.create_topic("apr-t0", 1)
        body = {"timeout": 0, "allow_replication_factor_change": True, "topics": [
            {"name": "apr-t0", "partitions": [{"partition_index": 0, "replicas": [0]}]},
            {"name": "apr-x", "partitions": [{"partition_index": 0, "replicas": None}]}]}
        r = c.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, body)
        assert (r.error_code, r.error_message) == (E.request_timed_out, None)
        assert [(t.name, p.partition_index, p.error_code, p.error_message) for t in r.responses
                for p in t.partitions] == [("apr-t0", 0, E.request_timed_out, None),
                                           ("apr-x", 0, E.request_timed_out, None)]
        r = c.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {"timeout": 0, "topics": []})
        assert (r.error_code, r.error_message, list(r.responses)) == (E.none, "", [])


class TestMetadataAutoCreation:
    @pytest.mark.parametrize("version", [0, 1, 3, 4, 9, 12])
    def test_an_auto_created_topic_is_unknown_in_the_answer_that_creates_it(self, b, c, version):
        name = f"md-auto-{version}"
        body = {"topics": [{"name": name, "topic_id": ZERO}], "allow_auto_topic_creation": True,
                "include_topic_authorized_operations": False}
        (t,) = c.request(ApiKey.METADATA, version, body).topics
        assert (t.name, t.error_code, list(t.partitions)) == (name, E.unknown_topic_or_partition, [])
        assert exists(b, name)
        (t,) = c.request(ApiKey.METADATA, version, body).topics
        assert t.error_code == E.none and len(t.partitions) == 1

    def test_authorized_operations_of_a_topic_that_does_not_exist(self, c):
        body = {"topics": [{"name": "x" * 250, "topic_id": ZERO}, {"name": "md-missing", "topic_id": ZERO}],
                "allow_auto_topic_creation": False, "include_topic_authorized_operations": True}
        topics = {t.name: t for t in c.request(ApiKey.METADATA, 12, body).topics}
        assert topics["x" * 250].error_code == E.invalid_topic_exception
        assert topics["md-missing"].error_code == E.unknown_topic_or_partition
        # READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS: every one, no authorizer
        assert {t.topic_authorized_operations for t in topics.values()} == {3576}
