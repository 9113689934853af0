"""Fault rules on the cluster operations (UpdateFeatures, DescribeQuorum, Describe/AlterReplicaLogDirs,
ElectLeaders, Alter/ListPartitionReassignments, UnregisterBroker/Controller, Add/RemoveRaftVoter): an injected error comes back where Kafka's
``getErrorResponse`` puts it, at every served version, nothing takes effect, and the journal records
the request with it."""

from __future__ import annotations

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

E = ErrorCode
ERROR = "NOT_CONTROLLER"


def partition_error(results: str, partitions: str):
    return lambda r: getattr(getattr(r, results)[0], partitions)[0].error_code


CASES = {
    ApiKey.UPDATE_FEATURES: ({"timeout": 1000, "validate_only": False, "feature_updates": [
        {"feature": "transaction.version", "max_version_level": 1, "upgrade_type": 2, "allow_downgrade": True}]},
        lambda r: r.error_code),
    ApiKey.DESCRIBE_QUORUM: ({"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]},
                             lambda r: r.error_code),
    # v1-2 have no error field: the error response is one without directories
    ApiKey.DESCRIBE_LOG_DIRS: ({"topics": None}, lambda r: getattr(r, "error_code", E.not_controller if not r.results
                                                                 else E.none)),
    ApiKey.ALTER_REPLICA_LOG_DIRS: ({"dirs": [{"path": "/tmp/kafka-logs", "topics": [{"name": "f", "partitions": [0]}]}]},
                                    partition_error("results", "partitions")),
    ApiKey.ELECT_LEADERS: ({"election_type": 0, "timeout": 1000, "topic_partitions": [{"topic": "f", "partitions": [0]}]},
                           partition_error("replica_election_results", "partition_result")),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: ({"timeout": 1000, "allow_replication_factor_change": True, "topics": [
        {"name": "f", "partitions": [{"partition_index": 0, "replicas": [1]}]}]}, partition_error("responses", "partitions")),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: ({"timeout": 1000, "topics": None}, lambda r: r.error_code),
    ApiKey.UNREGISTER_BROKER: ({"broker_id": 1}, lambda r: r.error_code),
    ApiKey.UNREGISTER_CONTROLLER: ({"controller_id": 1}, lambda r: r.error_code),
    ApiKey.ADD_RAFT_VOTER: ({"cluster_id": None, "timeout": 1000, "voter_id": 1, "voter_directory_id": None,
                             "listeners": [], "ack_when_committed": True}, lambda r: r.error_code),
    ApiKey.REMOVE_RAFT_VOTER: ({"cluster_id": None, "voter_id": 1, "voter_directory_id": None}, lambda r: r.error_code),
}


@pytest.fixture(scope="module")
def b():
    with MockBroker(config={"mock.num.brokers": 2}, clock=ManualClock()) as broker:
        broker.create_topic("f", 1, replication_factor=1)
        yield broker


@pytest.mark.parametrize("api", list(CASES), ids=lambda k: ApiKey(k).name)
def test_an_injected_error_is_answered_and_changes_nothing(b, api):
    body, error_of = CASES[api]
    spec = b.call(lambda cl: cl.registry.get(api))
    before = (b.partition_state("f", 0), b.call(lambda cl: cl.txn.config.transaction_version))
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        for version in range(spec.min_version, spec.max_version + 1):
            b.inject(api=int(api), errors=[ERROR])
            assert error_of(c.request(api, version, body)) == E.not_controller, version
    assert (b.partition_state("f", 0), b.call(lambda cl: cl.txn.config.transaction_version)) == before
    journaled = b.journal(api_key=int(api))
    assert len(journaled) == spec.max_version - spec.min_version + 1
    assert all(j["error_code"] == E.not_controller for j in journaled), journaled
