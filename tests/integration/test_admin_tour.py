"""A tour of Kafka's Java Admin 4.4 (tests/integration/java/src/AdminTour.java): every method of
``org.apache.kafka.clients.admin.Admin`` called once, in one JVM per cluster, against mockbroker at 1
and at 3 brokers here, and against a real Kafka 4.4.0 single node in test_admin_kafka44.py (reusing
that module's Kafka: one start fewer).  Every method Kafka answers without an
authorizer, SASL or a plugin must succeed on all three (so the list is honest: what is OK here is OK on
Kafka), and what each answered must be the same where a correct broker answers the same; the methods
Kafka itself refuses in that setup (or that send no request) are SKIP, listed here with the reason.
Before this tour mockbroker failed one: ``abortTransaction`` ("The node does not support
WRITE_TXN_MARKERS").  franz-go's kadm (tests/integration/go/kadm.go) then drives the admin APIs it
has the same way: what it sees on mockbroker is what it sees on Kafka (test_admin_kafka44.py)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from mockbroker import MockBroker
from tests.toolchains import which

from .gotools import franz_go_binary
from .javatools import JAVA_TIMEOUT_S, java_classpath, tail

# Kafka refuses these without an authorizer (SECURITY_DISABLED), SASL (delegation tokens need a
# SASL-authenticated, non-token connection), a dynamic quorum
# (kraft.version 1: the realkafka fixture's quorum is static, controller.quorum.voters) or a second
# controller (the active one cannot unregister itself); the rest send no request.
SKIPPED = {
    "describeAcls", "createAcls", "deleteAcls",
    "createDelegationToken", "renewDelegationToken", "expireDelegationToken", "describeDelegationToken",
    "addRaftVoter", "removeRaftVoter", "unregisterController",
    "registerMetricForSubscription", "unregisterMetricFromSubscription", "metrics", "close",
}
LINE = re.compile(r"^(\w+)(?:\(\w+\))?: (OK|FAIL|SKIP) ?(.*)$")


def tour(bootstrap: str) -> dict[str, tuple[str, str]]:
    """AdminTour against ``bootstrap``: per line, the method (with its variant) -> (status, summary)."""
    cmd = [shutil.which("java") or "java", "-Xmx256m", "-cp", java_classpath("AdminTour"), "AdminTour", bootstrap]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"AdminTour timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
    lines = r.stdout.strip().splitlines()
    assert lines[-1] == "DONE", r.stdout
    seen = {}
    for line in lines[:-1]:
        m = LINE.match(line)
        assert m, line
        method = line.split(":")[0]
        assert method not in seen, line
        seen[method] = (m.group(2), m.group(3))
    return seen


# What each method answered, on one broker: what the tour's own steps made (Kafka answers the same,
# test_admin_kafka44.py::test_the_admin_tour_on_a_real_kafka)
EXPECTED = {
    'createTopics': '2 topics',
    'createPartitions': 'to 3',
    'listTopics': '[tour, tour-gone]',
    'describeTopics(names)': 'tour partitions=3',
    'describeTopics(ids)': 'tour-gone partitions=1',
    'deleteTopics': 'by id',
    'listOffsets': '{tour-0=0, tour-2=5}',
    'deleteRecords': '2',
    'listTransactions': '[tour-txn:Ongoing]',
    'describeTransactions': 'Ongoing [tour-1]',
    'describeProducers': '[txnStart=OptionalLong[5]]',
    'abortTransaction': '[txnStart=OptionalLong.empty]',
    'fenceProducers': 'tour-txn',
    'forceTerminateTransaction': 'tour-txn',
    'incrementalAlterConfigs': 'retention.ms streams.initial.rebalance.delay.ms',
    'describeConfigs': '86400000 DYNAMIC_TOPIC_CONFIG 0 DYNAMIC_GROUP_CONFIG',
    'listConfigResources': '[tour]',
    'listClientMetricsResources': '0',
    'describeCluster': 'nodes=1 controller=true clusterId=true',
    'describeFeatures': '[eligible.leader.replicas.version, group.version, metadata.version, share.version, '
                        'streams.version, transaction.version]',
    'updateFeatures': 'transaction.version=2 validateOnly',
    'describeMetadataQuorum': 'voters=1',
    'describeLogDirs': 'dirs=1 tour-0=true',
    'describeReplicaLogDirs': 'current=true future=null',
    'alterReplicaLogDirs': 'same dir',
    'alterPartitionReassignments': 'to the leader',
    'listPartitionReassignments': '0',
    'electLeaders': 'ElectionNotNeededException',
    'listConsumerGroups': '[tour-cg]',
    'listGroups': '[tour-cg:Classic]',
    'describeConsumerGroups': 'Stable Classic members=1',
    'describeClassicGroups': 'Stable consumer members=1',
    'removeMembersFromConsumerGroup': 'Empty',
    'alterConsumerGroupOffsets': '2 partitions',
    'listConsumerGroupOffsets': '{tour-0=4, tour-2=1}',
    'deleteConsumerGroupOffsets': 'tour-0',
    'deleteConsumerGroups': 'tour-cg',
    'alterShareGroupOffsets': '1 partition',
    'describeShareGroups': 'Empty members=0',
    'listShareGroupOffsets': '{tour-0=2}',
    'deleteShareGroupOffsets': 'tour',
    'deleteShareGroups': 'tour-sg',
    'describeStreamsGroups': 'members=1 subtopologies=1',
    'alterStreamsGroupOffsets': '1 partition',
    'listStreamsGroupOffsets': '2',
    'deleteStreamsGroupOffsets': 'tour-0',
    'deleteStreamsGroups': 'tour-stg',
    'alterClientQuotas': 'producer_byte_rate',
    'describeClientQuotas': '{producer_byte_rate=1048576.0}',
    'alterUserScramCredentials': 'tour-user',
    'describeUserScramCredentials': '[ScramCredentialInfo{mechanism=SCRAM_SHA_256, iterations=8192}]',
    'clientInstanceId': 'null',  # no telemetry reporter: GetTelemetrySubscriptions not advertised
    'unregisterBroker': 'the highest id',
}


def expected(brokers: int = 1) -> dict[str, tuple[str, str]]:
    """The whole tour's lines on a cluster of ``brokers``: each method OK with its answer, the rest SKIP."""
    sized = {"describeCluster": f"nodes={brokers} controller=true clusterId=true",
             "describeMetadataQuorum": f"voters={brokers}"}
    return {m: ("OK", sized.get(m, v)) for m, v in EXPECTED.items()}


def _ok(seen: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """The lines of the methods the tour does not skip (a FAIL shows with its exception)."""
    return {m: v for m, v in seen.items() if v[0] != "SKIP"}


@pytest.fixture(scope="module")
def mock_tour() -> dict[str, tuple[str, str]]:
    with MockBroker(config={"group.initial.rebalance.delay.ms": 0}) as b:  # as the realkafka fixture's
        return tour(b.bootstrap_servers)


def test_the_tour_calls_every_method_of_the_admin_interface(mock_tour):
    """The methods the tour prints are the Admin interface's (read from the kafka-clients jar), less
    the static factory ``create``; those it skips are SKIPPED."""
    (javap,) = which("javap", needed_by="the Admin tour")
    r = subprocess.run([javap, "-cp", java_classpath("AdminTour"), "org.apache.kafka.clients.admin.Admin"],
                       capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    assert r.returncode == 0, r.stderr
    declared = {m.group(1) for m in re.finditer(r"^\s*public (?!static)[^(\n]* (\w+)\(", r.stdout, re.M)}
    assert len(declared) > 60 and {m.split("(")[0] for m in mock_tour} == declared
    assert {m for m, (status, _) in mock_tour.items() if status == "SKIP"} == SKIPPED


def test_every_method_succeeds_on_mockbroker(mock_tour):
    assert _ok(mock_tour) == expected(1)


def test_every_method_succeeds_on_three_brokers():
    """Each request reaches the broker Kafka's Admin picks: a partition's leader, a group's or a
    transactional id's coordinator, the controller."""
    with MockBroker(config={"mock.num.brokers": 3, "group.initial.rebalance.delay.ms": 0}) as b:
        seen = tour(b.bootstrap_servers)
    assert _ok(seen) == expected(3)
    assert {m for m, (status, _) in seen.items() if status == "SKIP"} == SKIPPED


# franz-go's kadm (tests/integration/go/kadm.go): its lines on one broker, the same on Kafka
KADM = [
    "ListBrokers: 1",
    "CreatePartitions +2: OK",
    "UpdatePartitions 2: INVALID_PARTITIONS",
    "DeleteRecords: OK low=3",
    "ListStartOffsets: 3",
    "AlterTopicConfigs: OK",
    "DescribeTopicConfigs retention.ms: 86400000 DYNAMIC_TOPIC_CONFIG",
    "AlterTopicConfigs bad value: INVALID_CONFIG",
    "AlterTopicConfigsState: OK",  # AlterConfigs: every other dynamic config of the topic goes
    "DescribeTopicConfigs after: retention.ms 604800000 DEFAULT_CONFIG, max.message.bytes 500000 DYNAMIC_TOPIC_CONFIG",
    "AlterBrokerConfigs: OK",
    "DescribeBrokerConfigs log.cleaner.backoff.ms: 20000 DYNAMIC_BROKER_CONFIG",
    "ElectLeaders preferred: ELECTION_NOT_NEEDED",
    "DeleteOffsets: OK",
    "FetchOffsets after: [2=0]",
    "DeleteOffsets no group: GROUP_ID_NOT_FOUND",
    "DescribeAllLogDirs: dirs holding kadm-0: 1",
    "UpdateFeatures validate: OK",
    "AlterPartitionAssignments: OK",
    "ListPartitionReassignments: 0",
    "DescribeProducers: 1 open from offset 0",
    "WriteTxnMarkers abort: OK",
    "DescribeProducers after: 0 open",
    "DONE",
]


def kadm(bootstrap: str) -> list[str]:
    """kadm.go against ``bootstrap``: its output lines."""
    try:
        r = subprocess.run([franz_go_binary(), "kadm", bootstrap], capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"kadm timed out\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 20)}"
    return r.stdout.strip().splitlines()


@pytest.mark.parametrize("brokers", [1, 3])
def test_kadm_on_mockbroker(brokers):
    """kadm sends each request where Kafka's brokers want it: DeleteRecords, DescribeProducers and
    WriteTxnMarkers to the partition's leader, OffsetDelete to the group's coordinator, the
    alterations to the controller (any broker forwards)."""
    with MockBroker(config={"mock.num.brokers": brokers}) as b:
        assert kadm(b.bootstrap_servers) == [f"ListBrokers: {brokers}", *KADM[1:]]
