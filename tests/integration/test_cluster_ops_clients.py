"""Cluster operations through Kafka 4.4.0's own clients, side by side with a real Kafka 4.4.0 (one
for the module, single node, node 1; mockbroker at ``mock.kafka.version=4.4`` with node ids from 1).

* Features and the controller quorum: Java Admin (java/src/ClusterFeatures.java, one JVM for every
  cluster) describes the features, updates them (a safe downgrade, a validate-only one, four that
  Kafka refuses, an upgrade back) and describes the metadata quorum: the same lines from mockbroker
  and Kafka but for the metadata log's offsets, which count different records; a three-broker
  mockbroker shows three voters.  ``kafka-features describe`` and ``kafka-metadata-quorum describe
  --status`` print the same fields against both.
* Log directories: Java Admin (java/src/LogDirs.java) creates a topic, produces three one-record
  batches, describes every broker's log directories and the replica's, and moves it: the replica
  has the same size in bytes and lag on both, a move to a directory that does not exist is
  LogDirNotFoundException on both; on mockbroker (two directories) it then moves to the other one.
  ``kafka-log-dirs --describe`` prints the same sizes.
* Leader elections: Java Admin (java/src/ElectLeaders.java) asks for preferred and unclean
  elections: none needed on either single node, an unknown partition refused alike; on a
  three-broker mockbroker whose preferred leader failed over and came back, the preferred election
  gives it the leadership again.  ``kafka-leader-election`` prints the same against both.
* Partition reassignments: Java Admin (java/src/Reassign.java) refuses a move to a broker that is
  not registered and a cancel with none in progress with the same exceptions and messages on both;
  on a three-broker mockbroker a partition moves to two other brokers and its leader with it.
  ``kafka-reassign-partitions --execute`` then ``--verify`` moves another one.
* Client telemetry (KIP-714) without a telemetry reporter, Kafka's default: Java's Admin and producer
  (java/src/ClientTelemetry.java) set a client-metrics subscription and ask for their client instance
  id: null on both (neither broker advertises GetTelemetrySubscriptions); mockbroker with
  ``mock.client.telemetry.enabled`` is test_client_telemetry_clients.py's.
* Cluster membership: Java Admin (java/src/ClusterMembership.java) unregisters a stopped broker and
  one that never was, then removes a voter and adds it back (refused at kraft.version 0, a duplicate
  refused) on a three-broker mockbroker, as DescribeMetadataQuorum sees the voters.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from mockbroker import MockBroker
from tests.polling import until

from .javatools import JAVA_TIMEOUT_S, tail
from .javatools import java_classpath as _java_classpath
from .realkafka import kafka_tool, realkafka  # noqa: F401 - a fixture

A, B = "/var/kafka/a", "/var/kafka/b"
MOCK_44 = {"mock.kafka.version": "4.4", "node.id": 1, "log.dirs": f"{A},{B}"}


@pytest.fixture(scope="module")
def java_classpath() -> str:
    return _java_classpath("ClusterFeatures", "LogDirs", "ElectLeaders", "Reassign", "ClusterMembership",
                           "ClientTelemetry")


@pytest.fixture(scope="module")
def mocks() -> Iterator[tuple[MockBroker, MockBroker]]:
    """One broker (node 1, two log directories) and three brokers (nodes 1-3)."""
    with MockBroker(config=MOCK_44) as one, MockBroker(config={**MOCK_44, "mock.num.brokers": 3}) as three:
        yield one, three


def run(cp: str, program: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [shutil.which("java") or "java", "-cp", cp, program, *args]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{program} timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
    return r


def lines(cp: str, program: str, *args: str) -> list[str]:
    return run(cp, program, *args).stdout.strip().splitlines()


# -- features and the controller quorum -------------------------------------------------------------
def sections(stdout: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current: list[str] = []
    for line in stdout.strip().splitlines():
        if line.startswith("CLUSTER "):
            current = out.setdefault(line.split()[1], [])
        elif line != "DONE":
            current.append(line)
    return out


def comparable(lines: list[str]) -> list[str]:
    """The lines without what counts the metadata log's records (epoch, high watermark, offsets) and
    the controller listener's port."""
    out = []
    for line in lines:
        if line.startswith("EPOCH "):
            continue
        line = re.sub(r" hw=\d+", " hw=N", line)
        line = re.sub(r" leo=\d+", " leo=N", line)
        line = re.sub(r"^(NODE \d+ CONTROLLER 127\.0\.0\.1):\d+$", r"\1:PORT", line)
        out.append(line)
    return out


def test_java_admin_features_and_quorum_as_kafka_4_4(realkafka, mocks, java_classpath):  # noqa: F811
    one, three = mocks
    clusters = [one.bootstrap_servers, realkafka.bootstrap, three.bootstrap_servers]
    r = run(java_classpath, "ClusterFeatures", *clusters)
    report = f"stdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
    out = sections(r.stdout)
    mock, kafka, mock3 = (out[c] for c in clusters)
    assert comparable(mock) == comparable(kafka), report
    failed = "InvalidUpdateVersionException: The update failed for all features since the following feature had an error: "
    assert comparable(mock) == [
        "SUPPORTED eligible.leader.replicas.version 0-1",
        "SUPPORTED group.version 0-1",
        "SUPPORTED kraft.version 0-1",
        "SUPPORTED metadata.version 7-33",
        "SUPPORTED share.version 0-2",
        "SUPPORTED streams.version 0-1",
        "SUPPORTED transaction.version 0-2",
        "FINALIZED eligible.leader.replicas.version 1",
        "FINALIZED group.version 1",
        "FINALIZED metadata.version 33",
        "FINALIZED share.version 2",
        "FINALIZED streams.version 1",
        "FINALIZED transaction.version 2",
        "UPDATE transaction.version=1 SAFE_DOWNGRADE: OK",
        "UPDATE share.version=0 SAFE_DOWNGRADE validate: OK",
        "UPDATE transaction.version=3 UPGRADE: " + failed + "Invalid update version 3 for feature transaction.version. "
        "Local controller 1 only supports versions 0-2",
        "UPDATE share.version=1 UPGRADE: " + failed + "Invalid update version 1 for feature share.version. Can't "
        "downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.",
        "UPDATE metadata.version=14 SAFE_DOWNGRADE: " + failed + "Unsupported metadata.version downgrade from 33 to "
        "14. Refusing to perform the requested downgrade because it might delete metadata information.",
        "UPDATE no.such.feature=1 UPGRADE: " + failed + "Invalid update version 1 for feature no.such.feature. Local "
        "controller 1 does not support this feature.",
        "AFTER transaction.version share.version 1 2",
        "UPDATE transaction.version=2 UPGRADE: OK",
        "QUORUM leader=1 epoch=1 hw=N voters=1 observers=",
        "VOTER 1 leo=N fetched=true",
        "NODE 1 CONTROLLER 127.0.0.1:PORT",
    ], report
    # the high watermark is the leader's log end offset: all records committed
    hw = re.findall(r" hw=(\d+)", "\n".join(mock))
    assert len(hw) == 1 and f"VOTER 1 leo={hw[0]} fetched=true" in mock, report
    # three brokers: three voters, node 1 leads, each voter's endpoint its broker's address
    ports = [a.rsplit(":", 1)[1] for a in three.bootstrap_servers.split(",")]
    assert [re.sub(r" hw=\d+", "", line) for line in mock3 if line.startswith(("QUORUM", "NODE"))] == [
        "QUORUM leader=1 epoch=1 voters=1,2,3 observers=",
        *(f"NODE {i + 1} CONTROLLER 127.0.0.1:{ports[i]}" for i in range(3))], report
    # what the Admin saw is the broker's state: transaction.version back at 2 for the coordinator
    assert one.call(lambda cl: cl.txn.config.transaction_version) == 2


def fields(stdout: str) -> list[dict[str, str]]:
    """``kafka-features describe``: one feature a line, ``Key: value`` pairs in aligned columns."""
    return [dict(re.findall(r"(\w+): (\S+)", line)) for line in stdout.strip().splitlines()]


def test_kafka_features_describe_as_kafka_4_4(realkafka, mocks):  # noqa: F811
    one, _ = mocks
    runs = {name: kafka_tool("kafka-features", "--bootstrap-server", boot, "describe")
            for name, boot in (("mockbroker", one.bootstrap_servers), ("kafka", realkafka.bootstrap))}
    for name, run in runs.items():
        assert run.returncode == 0, f"{name}: {run.stdout}\n{run.stderr}"
    mock, kafka = (fields(runs[n].stdout) for n in ("mockbroker", "kafka"))
    assert [{k: v for k, v in f.items() if k != "Epoch"} for f in mock] == \
        [{k: v for k, v in f.items() if k != "Epoch"} for f in kafka], (runs["mockbroker"].stdout, runs["kafka"].stdout)
    assert {"Feature": "metadata.version", "SupportedMinVersion": "3.3-IV3", "SupportedMaxVersion": "4.4-IV2",
            "FinalizedVersionLevel": "4.4-IV2"}.items() <= mock[[f["Feature"] for f in mock].index("metadata.version")].items()
    assert all(int(f["Epoch"]) >= 16 for f in mock)


def status(stdout: str) -> dict[str, str]:
    """``kafka-metadata-quorum describe --status``: ``Key: value`` lines."""
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in stdout.strip().splitlines())}


def test_kafka_metadata_quorum_status_as_kafka_4_4(realkafka, mocks):  # noqa: F811
    one, _ = mocks
    runs = {name: kafka_tool("kafka-metadata-quorum", "--bootstrap-server", boot, "describe", "--status")
            for name, boot in (("mockbroker", one.bootstrap_servers), ("kafka", realkafka.bootstrap))}
    for name, run in runs.items():
        assert run.returncode == 0, f"{name}: {run.stdout}\n{run.stderr}"
    mock, kafka = (status(runs[n].stdout) for n in ("mockbroker", "kafka"))
    report = (runs["mockbroker"].stdout, runs["kafka"].stdout)
    assert list(mock) == list(kafka), report
    for key in ("LeaderId", "LeaderEpoch", "MaxFollowerLag", "CurrentObservers"):
        assert mock[key] == kafka[key], (key, report)
    assert mock["ClusterId"] == one.call(lambda cl: cl.metadata.cluster_id)
    voters = json.loads(mock["CurrentVoters"])
    assert [(v["id"], v["endpoints"]) for v in voters] == [(1, [f"CONTROLLER://{one.bootstrap_servers}"])], report
    assert [v["id"] for v in json.loads(kafka["CurrentVoters"])] == [1]


# -- log directories ------------------------------------------------------------------------------------
def test_java_admin_describes_and_moves_log_dirs_as_kafka_4_4(realkafka, mocks, java_classpath):  # noqa: F811
    mock, _ = mocks
    kafka = lines(java_classpath, "LogDirs", realkafka.bootstrap, "dirs")
    ours = lines(java_classpath, "LogDirs", mock.bootstrap_servers, "dirs", B)
    # the same replica, the same bytes: three one-record batches of the Java producer
    replica = [line for line in kafka if line.startswith("REPLICA ")]
    assert len(replica) == 1 and replica[0].startswith("REPLICA 1 dirs-0 size="), kafka
    assert kafka == [
        "DIRS 1 1 totals=true", replica[0], "CURRENT dirs-0 true future=null",
        "ALTER nowhere: LogDirNotFoundException", "ALTER current: OK", "DONE"]
    # mockbroker: two directories, the replica in the first, then moved to the other
    assert ours == [
        "DIRS 1 2 totals=true", replica[0], "CURRENT dirs-0 true future=null",
        "ALTER nowhere: LogDirNotFoundException", "ALTER current: OK", "ALTER other: OK", f"MOVED dirs-0 {B}", "DONE"]
    size = int(replica[0].split("size=")[1].split()[0])
    assert size == mock.call(lambda cl: cl.metadata.partition("dirs", 0).log.size_bytes) > 0


def log_dirs(stdout: str) -> dict[str, object]:
    """``kafka-log-dirs --describe``: the JSON line after its two progress lines."""
    return json.loads(next(line for line in stdout.splitlines() if line.startswith("{")))


def test_kafka_log_dirs_describe_as_kafka_4_4(realkafka, mocks):  # noqa: F811
    mock, _ = mocks
    runs = {name: kafka_tool("kafka-log-dirs", "--bootstrap-server", boot, "--describe", "--topic-list", "dirs")
            for name, boot in (("mockbroker", mock.bootstrap_servers), ("kafka", realkafka.bootstrap))}
    for name, r in runs.items():
        assert r.returncode == 0, f"{name}: {r.stdout}\n{r.stderr}"
    ours, kafka = (log_dirs(runs[n].stdout) for n in ("mockbroker", "kafka"))
    report = (runs["mockbroker"].stdout, runs["kafka"].stdout)

    def replicas(doc):
        return [(b["broker"], p) for b in doc["brokers"] for d in b["logDirs"] for p in d["partitions"]]

    assert replicas(ours) == replicas(kafka), report  # size, offsetLag and isFuture of dirs-0 on broker 1
    assert [[(d["logDir"], d["error"]) for d in b["logDirs"]] for b in ours["brokers"]] == [[(A, None), (B, None)]], report


# -- leader elections -----------------------------------------------------------------------------------
def create(bootstrap: str, topic: str) -> None:
    r = kafka_tool("kafka-topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
                   "--partitions", "1", "--replication-factor", "1")
    assert r.returncode == 0, r.stdout + r.stderr


NOT_NEEDED = [
    "PREFERRED asked: el-0=ElectionNotNeededException el-9=UnknownTopicOrPartitionException",
    "PREFERRED asked: el-0=ElectionNotNeededException",
    "UNCLEAN asked: el-0=ElectionNotNeededException",
    "PREFERRED all:",
]


def test_java_admin_elects_leaders_as_kafka_4_4(realkafka, mocks, java_classpath):  # noqa: F811
    one, _ = mocks
    one.create_topic("el", 1, replication_factor=1)
    create(realkafka.bootstrap, "el")
    assert lines(java_classpath, "ElectLeaders", realkafka.bootstrap, "el") == [*NOT_NEEDED, "LEADER el-0 1", "DONE"]
    assert lines(java_classpath, "ElectLeaders", one.bootstrap_servers, "el") == [*NOT_NEEDED, "LEADER el-0 1", "DONE"]
    # the CLI tool: the same words from both
    for boot in (one.bootstrap_servers, realkafka.bootstrap):
        r = kafka_tool("kafka-leader-election", "--bootstrap-server", boot, "--election-type", "PREFERRED",
                       "--topic", "el", "--partition", "0")
        assert (r.returncode, r.stdout.strip()) == (0, "Valid replica already elected for partitions el-0"), \
            r.stdout + r.stderr


def test_java_admin_gives_the_leadership_back_to_the_preferred_replica(java_classpath):
    with MockBroker(config={**MOCK_44, "mock.num.brokers": 3}) as three:
        three.create_topic("el", 1, replication_factor=3)
        preferred = three.partition_state("el", 0)["replicas"][0]
        three.stop_broker(preferred)
        three.start_broker(preferred)
        until(lambda: preferred in three.partition_state("el", 0)["isr"], "the preferred replica back in the ISR")
        assert three.partition_state("el", 0)["leader"] != preferred
        assert lines(java_classpath, "ElectLeaders", three.bootstrap_servers, "el") == [
            "PREFERRED asked: el-0=OK el-9=UnknownTopicOrPartitionException",
            "PREFERRED asked: el-0=ElectionNotNeededException",
            "UNCLEAN asked: el-0=ElectionNotNeededException",
            "PREFERRED all:",
            f"LEADER el-0 {preferred}", "DONE"]


# -- partition reassignments ----------------------------------------------------------------------------
REASSIGN_ERRORS = [
    "UNREGISTERED: InvalidReplicaAssignmentException: The manual partition assignment includes broker 7, but no "
    "such broker is registered.",
    "CANCEL: NoReassignmentInProgressException: No partition reassignment is in progress.",
    "LIST 0",
]


def test_java_admin_reassigns_partitions_as_kafka_4_4(realkafka, mocks, java_classpath):  # noqa: F811
    _, three = mocks
    assert lines(java_classpath, "Reassign", realkafka.bootstrap, "ra") == [*REASSIGN_ERRORS, "DONE"]
    out = lines(java_classpath, "Reassign", three.bootstrap_servers, "ra", "3,2")
    created = int(out[-3].split()[-1])
    leader = created if created in (3, 2) else 3  # a leader that stays a replica keeps leading
    assert out == [*REASSIGN_ERRORS, "MOVE [3, 2]: OK", f"CREATED on {created}", f"REPLICAS ra-0 [3, 2] leader={leader}",
                   "DONE"]
    after = three.partition_state("ra", 0)
    assert (after["replicas"], sorted(after["isr"]), after["leader"]) == ([3, 2], [2, 3], leader)


def test_kafka_reassign_partitions_moves_a_partition(mocks, tmp_path):
    """``kafka-reassign-partitions --execute`` (DescribeLogDirs for the rollback file, then
    AlterPartitionReassignments) and ``--verify`` (ListPartitionReassignments) on three brokers."""
    _, three = mocks
    three.create_topic("rt", 1, replication_factor=1)
    [before] = three.partition_state("rt", 0)["replicas"]
    target = [b for b in (1, 2, 3) if b != before]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "rt", "partition": 0, "replicas": target}]}))
    tool = ("kafka-reassign-partitions", "--bootstrap-server", three.bootstrap_servers, "--reassignment-json-file",
            str(plan))
    execute = kafka_tool(*tool, "--execute")
    assert execute.returncode == 0, execute.stdout + execute.stderr
    # the rollback file names the directory the replica was in (DescribeLogDirs on its broker)
    [rollback] = json.loads(execute.stdout.split("\n\n")[1])["partitions"]
    assert rollback == {"topic": "rt", "partition": 0, "replicas": [before], "log_dirs": [rollback["log_dirs"][0]]}
    assert rollback["log_dirs"][0] in (A, B)
    assert "Successfully started partition reassignment for rt-0" in execute.stdout
    verify = kafka_tool(*tool, "--verify", "--preserve-throttles")
    assert (verify.returncode, verify.stdout.strip()) == (
        0, "Status of partition reassignment:\nReassignment of partition rt-0 is completed."), verify.stdout + verify.stderr
    after = three.partition_state("rt", 0)
    assert (after["replicas"], sorted(after["isr"]), after["leader"]) == (target, target, target[0])



# -- cluster membership ---------------------------------------------------------------------------------
def test_java_admin_unregisters_a_broker_and_moves_a_voter(java_classpath):
    """Admin.unregisterBroker on a stopped broker, then removeRaftVoter/addRaftVoter (after the
    quorum is raised to kraft.version 1) as DescribeMetadataQuorum sees them, on three brokers."""
    with MockBroker(config={**MOCK_44, "mock.num.brokers": 3}) as three:
        three.stop_broker(3)
        assert lines(java_classpath, "ClusterMembership", three.bootstrap_servers, "unregister", "3") == [
            "UNREGISTER 7: BrokerIdNotRegisteredException: Broker ID 7 is not currently registered",
            "UNREGISTER 3: OK", "DONE"]
        three.start_broker(3)
        out = lines(java_classpath, "ClusterMembership", three.bootstrap_servers, "voters", "3")
        assert out[0] == ("REMOVE 3: UnsupportedVersionException: Cluster doesn't support removing voter because the "
                          "kraft.version feature is 0")
        assert out[1:4] == ["KRAFT 1: OK", "REMOVE 3: OK", "QUORUM voters=[1, 2] observers=[3]"]
        assert out[4].startswith("ADD 1: DuplicateVoterException: The voter id for ReplicaKey(id=1, directoryId="), out
        assert out[5:] == ["ADD 3: OK", "QUORUM voters=[1, 2, 3] observers=[]", "DONE"]


# -- client telemetry -------------------------------------------------------------------------------
def test_java_client_instance_id_without_a_telemetry_reporter_as_kafka_4_4(realkafka, mocks, java_classpath):  # noqa: F811
    one, _ = mocks
    cmd = [shutil.which("java") or "java", "-cp", java_classpath, "ClientTelemetry",
           f"{one.bootstrap_servers}:1000", f"{realkafka.bootstrap}:1000"]
    r = subprocess.run(cmd, input="close\nclose\n", capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
    out = sections(r.stdout)
    mock, kafka = out[one.bootstrap_servers], out[realkafka.bootstrap]
    assert [x for x in kafka if not x.startswith("CLOSED")] == ["SUBSCRIBE OK", "ADMIN null", "PRODUCER null", "WAITING"]
    assert [x for x in mock if not x.startswith("CLOSED")] == [x for x in kafka if not x.startswith("CLOSED")]
