"""Cluster membership over the wire: UnregisterBroker and UnregisterController as Kafka 4.4's
controller answers them, AddRaftVoter and RemoveRaftVoter (KIP-853) changing the voters DescribeQuorum
lists, with raft's checks (kraft.version 1, DUPLICATE_VOTER, VOTER_NOT_FOUND, a caught-up voter) and
messages.  Time runs on a ManualClock."""

from __future__ import annotations

import base64
import uuid

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

E = ErrorCode
T0 = 1_700_000_000_000


@pytest.fixture
def b():
    with MockBroker(config={"mock.num.brokers": 3}, clock=ManualClock(start_wall_ms=T0)) as broker:
        yield broker


def connect(b, node=None):
    addresses = b.bootstrap_servers.split(",")
    return RawKafkaClient.connect(addresses[node] if node is not None else addresses[-1])


def quorum(c):
    r = c.request(ApiKey.DESCRIBE_QUORUM, 2, {"topics": [{"topic_name": "__cluster_metadata",
                                                          "partitions": [{"partition_index": 0}]}]})
    return r, r.topics[0].partitions[0]


def kraft_v1(c):
    r = c.request(ApiKey.UPDATE_FEATURES, 1, {"timeout": 60000, "validate_only": False, "feature_updates": [
        {"feature": "kraft.version", "max_version_level": 1, "upgrade_type": 1, "allow_downgrade": False}]})
    assert r.error_code == E.none


def directories(c):
    _, p = quorum(c)
    return {v.replica_id: v.replica_directory_id for v in (*p.current_voters, *p.observers)}


def remove(c, node, directory, cluster_id=None):
    r = c.request(ApiKey.REMOVE_RAFT_VOTER, 0, {"cluster_id": cluster_id, "voter_id": node,
                                                "voter_directory_id": directory})
    return r.error_code, r.error_message


def add(c, node, directory, port, listener="CONTROLLER", version=1):
    body = {"cluster_id": None, "timeout": 30000, "voter_id": node, "voter_directory_id": directory,
            "listeners": [{"name": listener, "host": "127.0.0.1", "port": port}]}
    if version >= 1:
        body["ack_when_committed"] = True
    r = c.request(ApiKey.ADD_RAFT_VOTER, version, body)
    return r.error_code, r.error_message


def key(node, directory):
    """``ReplicaKey.toString``; the directory id as Kafka's ``Uuid.toString`` (URL-safe base64, unpadded)."""
    return f"ReplicaKey(id={node}, directoryId={base64.urlsafe_b64encode(directory.bytes).decode().rstrip('=')})"


# -- UnregisterBroker ------------------------------------------------------------------------------
def test_unregister_broker_removes_a_stopped_brokers_registration(b):
    with connect(b) as c:
        r = c.request(ApiKey.UNREGISTER_BROKER, 0, {"broker_id": 7})
        assert (r.error_code, r.error_message) == (E.broker_id_not_registered, "Broker ID 7 is not currently registered")
        b.stop_broker(1)
        r = c.request(ApiKey.UNREGISTER_BROKER, 0, {"broker_id": 1})
        assert (r.error_code, r.error_message) == (E.none, None)
        # one broker fewer for placement: a replication factor of 3 cannot be reached, broker 1 is unknown
        r = c.request(ApiKey.CREATE_TOPICS, 7, {"topics": [
            {"name": "t3", "num_partitions": 1, "replication_factor": 3, "assignments": [], "configs": []},
            {"name": "m", "num_partitions": -1, "replication_factor": -1, "configs": [],
             "assignments": [{"partition_index": 0, "broker_ids": [0, 1]}]}], "timeout": 1000, "validate_only": True})
        assert [(t.name, t.error_code, t.error_message) for t in r.topics] == [
            ("t3", E.invalid_replication_factor, "Unable to replicate the partition 3 time(s): The target replication "
             "factor of 3 cannot be reached because only 2 broker(s) are registered or some brokers have all their "
             "log directories cordoned."),
            ("m", E.invalid_replica_assignment, "The manual partition assignment includes broker 1, but no such "
             "broker is registered.")]
        r = c.request(ApiKey.UNREGISTER_BROKER, 0, {"broker_id": 1})
        assert r.error_code == E.broker_id_not_registered
        b.start_broker(1)  # it registers again
        r = c.request(ApiKey.CREATE_TOPICS, 7, {"topics": [
            {"name": "t3", "num_partitions": 1, "replication_factor": 3, "assignments": [], "configs": []}],
            "timeout": 1000, "validate_only": True})
        assert r.topics[0].error_code == E.none


def test_unregister_a_running_broker_keeps_it_registered(b):
    with connect(b) as c:
        assert c.request(ApiKey.UNREGISTER_BROKER, 0, {"broker_id": 0}).error_code == E.none
        assert c.request(ApiKey.UNREGISTER_BROKER, 0, {"broker_id": 0}).error_code == E.none


# -- UnregisterController --------------------------------------------------------------------------
def test_unregister_controller_as_the_active_controller_answers(b):
    with connect(b) as c:
        r = c.request(ApiKey.UNREGISTER_CONTROLLER, 0, {"controller_id": 0})  # the raft leader
        assert (r.error_code, r.error_message) == (E.invalid_request,
                                                   "Controller cannot unregister itself while it is active.")
        r = c.request(ApiKey.UNREGISTER_CONTROLLER, 0, {"controller_id": 9})
        assert (r.error_code, r.error_message) == (E.controller_id_not_registered,
                                                   "Controller ID 9 is not currently registered.")
        b.stop_broker(1)
        assert c.request(ApiKey.UNREGISTER_CONTROLLER, 0, {"controller_id": 1}).error_code == E.none
        r = c.request(ApiKey.UNREGISTER_CONTROLLER, 0, {"controller_id": 1})
        assert r.error_code == E.controller_id_not_registered
        b.start_broker(1)  # registers again
        assert c.request(ApiKey.UNREGISTER_CONTROLLER, 0, {"controller_id": 1}).error_code == E.none
        # a running controller registers again at once
        assert c.request(ApiKey.UNREGISTER_CONTROLLER, 0, {"controller_id": 1}).error_code == E.none


# -- RemoveRaftVoter / AddRaftVoter ----------------------------------------------------------------
def test_voter_changes_need_kraft_version_1(b):
    with connect(b) as c:
        d = uuid.uuid4()
        assert remove(c, 1, d) == (E.unsupported_version, "Cluster doesn't support removing voter because the "
                                                           "kraft.version feature is 0")
        assert add(c, 1, d, 1) == (E.unsupported_version, "Cluster doesn't support adding voter because the "
                                                           "kraft.version feature is 0")


def test_remove_then_add_a_voter_changes_describe_quorum(b):
    with connect(b) as c:
        kraft_v1(c)
        dirs = directories(c)
        _, p = quorum(c)
        epoch, end = p.leader_epoch, p.high_watermark
        # the leader (0) leaves the voters: it resigns, 1 leads with a new epoch; 0 is an observer
        assert remove(c, 0, dirs[0]) == (E.none, None)
        r, p = quorum(c)
        assert (p.leader_id, p.leader_epoch, p.high_watermark) == (1, epoch + 1, end + 1)
        assert [v.replica_id for v in p.current_voters] == [1, 2]
        assert [(o.replica_id, o.replica_directory_id) for o in p.observers] == [(0, dirs[0])]
        assert [n.node_id for n in r.nodes] == [1, 2]
        assert remove(c, 0, dirs[0]) == (E.voter_not_found, f"Cannot remove voter {key(0, dirs[0])} from the set of "
                                                            f"voters [{key(1, dirs[1])}, {key(2, dirs[2])}]")
        # adding 1 again: a duplicate; 0 with another directory id: not caught up
        assert add(c, 1, dirs[1], 9) == (E.duplicate_voter, f"The voter id for {key(1, dirs[1])} is already part "
                                                            f"of the set of voters [{key(1, dirs[1])}, {key(2, dirs[2])}].")
        other = uuid.uuid4()
        assert add(c, 0, other, 9) == (E.request_timed_out,
                                       f"Aborted add voter operation for {key(0, other)} since it is lagging behind")
        assert add(c, 0, dirs[0], 19092) == (E.none, None)
        r, p = quorum(c)
        assert [v.replica_id for v in p.current_voters] == [0, 1, 2] and p.observers == ()
        assert p.leader_id == 1  # the leader does not move back
        assert [(n.node_id, n.listeners[0].port) for n in r.nodes][0] == (0, 19092)


def test_voter_changes_refused_as_raft_refuses_them(b):
    with connect(b, 0) as c:
        kraft_v1(c)
        dirs = directories(c)
        assert remove(c, 2, dirs[2], cluster_id="other") == (
            E.inconsistent_cluster_id, f'The given id "other" doesn\'t match the cluster id "{b.cluster.metadata.cluster_id}"')
        assert remove(c, 2, None) == (E.invalid_request, "Remove voter request didn't include a valid voter")
        assert add(c, 2, None, 1) == (E.invalid_request, "Add voter request didn't include a valid voter")
        assert remove(c, 2, uuid.uuid4())[0] == E.voter_not_found
        assert add(c, 7, uuid.uuid4(), 1, listener="PLAINTEXT")[0] == E.invalid_request
        assert add(c, 7, uuid.uuid4(), 1, version=0)[0] == E.request_timed_out  # no such node to reach
        # a stopped voter: a removal leaving a majority running commits; then the last two
        b.stop_broker(2)
        assert remove(c, 2, dirs[2]) == (E.none, None)
        assert add(c, 2, dirs[2], 1)[0] == E.request_timed_out  # not running
        assert remove(c, 1, dirs[1]) == (E.none, None)
        assert remove(c, 0, dirs[0])[0] == E.voter_not_found  # the last voter stays
        _, p = quorum(c)
        assert [v.replica_id for v in p.current_voters] == [0] and p.leader_id == 0


def test_create_topics_checks_manual_assignments_as_kafka_4_4(b):
    """ReplicationControlManager.createTopic's manual-assignment branch: its messages, in its order
    (kafka-topics --create --replica-assignment prints them)."""
    def topic(name, assignments, partitions=-1, rf=-1):
        return {"name": name, "num_partitions": partitions, "replication_factor": rf, "configs": [],
                "assignments": [{"partition_index": i, "broker_ids": ids} for i, ids in assignments]}

    with connect(b) as c:
        r = c.request(ApiKey.CREATE_TOPICS, 7, {"timeout": 1000, "validate_only": False, "topics": [
            topic("rf", [(0, [0])], rf=1), topic("np", [(0, [0])], partitions=1),
            topic("dup", [(0, [0]), (0, [1])]), topic("gap", [(0, [0]), (2, [1])]),
            topic("unknown", [(0, [0, 7])]), topic("twice", [(0, [1, 1])]), topic("empty", [(0, [])]),
            topic("uneven", [(0, [0, 1]), (1, [2])]), topic("ok", [(1, [2, 0]), (0, [1, 2])])]})
    manual = "The manual partition assignment includes "
    assert [(t.name, t.error_code, t.error_message) for t in r.topics] == [
        ("rf", E.invalid_request, "A manual partition assignment was specified, but replication factor was not set "
         "to -1."),
        ("np", E.invalid_request, "A manual partition assignment was specified, but numPartitions was not set to -1."),
        ("dup", E.invalid_replica_assignment, "Found multiple manual partition assignments for partition 0"),
        ("gap", E.invalid_replica_assignment, "partitions should be a consecutive 0-based integer sequence"),
        ("unknown", E.invalid_replica_assignment, manual + "broker 7, but no such broker is registered."),
        ("twice", E.invalid_replica_assignment, manual + "the broker 1 more than once."),
        ("empty", E.invalid_replica_assignment, manual + "an empty replica list."),
        ("uneven", E.invalid_replica_assignment, manual + "a partition with 1 replica(s), but this is not consistent "
         "with previous partitions, which have 2 replica(s)."),
        ("ok", E.none, None)]
    assert [b.partition_state("ok", p)["replicas"] for p in (0, 1)] == [[1, 2], [2, 0]]
