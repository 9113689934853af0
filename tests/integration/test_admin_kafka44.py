"""Three clients' admin APIs drive the topic and config admin APIs against mockbroker, then the same
scenario against a real Kafka 4.4.0: what each client sees (values and error codes) must be the same.
Kafka's Java Admin 4.4 (tests/integration/java/src/AdminTopics.java: createPartitions, describeTopics by
name and by id, incrementalAlterConfigs, deleteRecords, listOffsets, deleteConsumerGroupOffsets,
listConfigResources, describeCluster: each failed with "The node does not support ..." before), and
confluent-kafka's AdminClient (librdkafka): CreatePartitions (validate_only, INVALID_PARTITIONS, the new
partition takes records at once), IncrementalAlterConfigs (max.message.bytes refuses a larger record, DescribeConfigs shows the override
and its source, DELETE restores the default), DeleteRecords (the low watermark, ListOffsets earliest,
a consumer starting below it resets to it, an unknown partition) and DescribeCluster; kafka-python's
KafkaAdminClient for what confluent-kafka's lacks: OffsetDelete (GROUP_SUBSCRIBED_TO_TOPIC for a live
subscription, else the committed offset is gone), DescribeTopicPartitions paged by its cursor, Metadata
by topic id and ListConfigResources.  One mockbroker and one Kafka per module; every wait bounded."""

from __future__ import annotations

import shutil
import subprocess
import time
from typing import Any

import pytest

from mockbroker import MockBroker
from tests.integration.realkafka import realkafka  # noqa: F401 - a fixture

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from kafka import TopicPartition as KTopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402

TIMEOUT_S = 30.0
TOPIC, GROUP = "adm44", "adm44-group"


def _error(f: Any) -> str | None:
    """The name of the KafkaError a future failed with (None: it succeeded)."""
    try:
        f.result(timeout=TIMEOUT_S)
        return None
    except KafkaException as e:
        return e.args[0].name()


def _produce(bootstrap: str, partition: int, values: list[bytes]) -> list[str | int]:
    """Each record's outcome: its offset, or the name of the error the broker answered."""
    out: list[str | int] = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "message.max.bytes": 10_000_000,
                  "enable.idempotence": False})
    for v in values:
        p.produce(TOPIC, v, partition=partition,
                  on_delivery=lambda err, msg: out.append(err.name() if err else msg.offset()))
        assert p.flush(TIMEOUT_S) == 0
    return out


def _consumer(bootstrap: str, **extra: Any) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 10000, **extra})


def _first_offset(c: Consumer) -> int:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            return m.offset()
    raise AssertionError("no record within the deadline")


def _max_message_bytes(admin: AdminClient, expected: str) -> Any:
    """The topic's max.message.bytes entry once it shows ``expected`` (a Kafka broker answers
    DescribeConfigs from its metadata, which an alteration reaches a moment later), or at the deadline."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        described = admin.describe_configs([ConfigResource("TOPIC", TOPIC)])
        entry = next(iter(described.values())).result(timeout=TIMEOUT_S)["max.message.bytes"]
        if entry.value == expected or time.monotonic() > deadline:
            return entry
        time.sleep(0.1)


def scenario(bootstrap: str) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    seen: dict[str, Any] = {}
    assert _error(admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC]) is None

    # CreatePartitions
    seen["validate_only"] = _error(admin.create_partitions([NewPartitions(TOPIC, 3)], validate_only=True)[TOPIC])
    seen["partitions_after_validate"] = len(admin.list_topics(TOPIC, timeout=TIMEOUT_S).topics[TOPIC].partitions)
    seen["grow"] = _error(admin.create_partitions([NewPartitions(TOPIC, 3)])[TOPIC])
    seen["shrink"] = _error(admin.create_partitions([NewPartitions(TOPIC, 2)])[TOPIC])
    seen["same"] = _error(admin.create_partitions([NewPartitions(TOPIC, 3)])[TOPIC])
    seen["unknown"] = _error(admin.create_partitions([NewPartitions("adm44-none", 3)])["adm44-none"])
    deadline = time.monotonic() + TIMEOUT_S
    while len(admin.list_topics(TOPIC, timeout=TIMEOUT_S).topics[TOPIC].partitions) < 3:  # Kafka: propagation
        assert time.monotonic() < deadline, f"still not 3 partitions: {seen}"
        time.sleep(0.1)
    seen["new_partition_produce"] = _produce(bootstrap, 2, [b"a", b"b"])

    # IncrementalAlterConfigs and DescribeConfigs
    resource = ConfigResource("TOPIC", TOPIC, incremental_configs=[
        ConfigEntry("max.message.bytes", "1000", incremental_operation=AlterConfigOpType.SET)])
    seen["alter"] = _error(admin.incremental_alter_configs([resource])[resource])
    entry = _max_message_bytes(admin, "1000")
    seen["described"] = (entry.value, entry.source)
    seen["too_large"] = _produce(bootstrap, 1, [b"x" * 2000, b"small"])
    resource = ConfigResource("TOPIC", TOPIC, incremental_configs=[
        ConfigEntry("max.message.bytes", None, incremental_operation=AlterConfigOpType.DELETE)])
    seen["restore"] = _error(admin.incremental_alter_configs([resource])[resource])
    entry = _max_message_bytes(admin, "1048588")
    seen["restored"] = (entry.value, entry.source)

    # DeleteRecords and ListOffsets
    seen["produced"] = _produce(bootstrap, 0, [b"%d" % i for i in range(5)])
    tp = TopicPartition(TOPIC, 0, 3)
    deleted = admin.delete_records([tp])[tp].result(timeout=TIMEOUT_S)
    seen["low_watermark"] = deleted.low_watermark
    missing = TopicPartition(TOPIC, 9, 0)
    seen["delete_missing"] = _error(admin.delete_records([missing])[missing])
    earliest = admin.list_offsets({TopicPartition(TOPIC, 0): OffsetSpec.earliest()})
    seen["earliest"] = next(iter(earliest.values())).result(timeout=TIMEOUT_S).offset
    c = _consumer(bootstrap)
    try:
        c.assign([TopicPartition(TOPIC, 0, 1)])  # below the log start offset: reset to it
        seen["consumer_reset_to"] = _first_offset(c)
        c.commit(offsets=[TopicPartition(TOPIC, 0, 4)], asynchronous=False)
    finally:
        c.close()

    # OffsetDelete (kafka-python's admin: confluent-kafka has none): refused while a member subscribes
    # to the topic, then the offset goes
    kadmin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(TIMEOUT_S * 1000))
    try:
        c = _consumer(bootstrap)
        try:
            c.subscribe([TOPIC])
            deadline = time.monotonic() + TIMEOUT_S
            while not c.assignment():
                assert time.monotonic() < deadline, "no assignment"
                c.poll(0.2)
            seen["delete_offsets_live"] = _offset_delete(kadmin, GROUP)
        finally:
            c.close()
        seen["delete_offsets"] = _offset_delete(kadmin, GROUP)
        listed = admin.list_consumer_group_offsets([confluent_kafka.ConsumerGroupTopicPartitions(
            GROUP, [TopicPartition(TOPIC, 0)])])[GROUP].result(timeout=TIMEOUT_S)
        seen["offset_after_delete"] = [p.offset for p in listed.topic_partitions]
        seen["delete_offsets_nogroup"] = _offset_delete(kadmin, "adm44-nogroup")

        # DescribeTopicPartitions (paged by its cursor), Metadata by topic id, ListConfigResources
        first = kadmin.describe_topic_partitions([TOPIC], response_partition_limit=2)
        rest = kadmin.describe_topic_partitions([TOPIC], cursor=first["next_cursor"])
        seen["dtp_pages"] = [[(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in page["topics"]]
                             for page in (first, rest)]
        seen["dtp_cursors"] = [first["next_cursor"], rest["next_cursor"]]
        topic_id = first["topics"][0]["topic_id"]
        seen["by_id"] = [(t.get("name", t.get("topic")), len(t["partitions"])) for t in kadmin.describe_topics([topic_id])]
        listed_resources = kadmin.list_config_resources(["TOPIC", "GROUP"])
        seen["config_resources"] = {k: sorted(n for n in v if n.startswith("adm44")) for k, v in
                                    listed_resources.items()}
    finally:
        kadmin.close()

    # DescribeCluster
    cluster = admin.describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    seen["cluster"] = (len(cluster.nodes), cluster.controller is not None)
    return seen


def _offset_delete(kadmin: KafkaAdminClient, group: str) -> Any:
    """OffsetDelete of the topic's partition 0: the partition's error, or the request's."""
    try:
        got = kadmin.delete_group_offsets(group, [KTopicPartition(TOPIC, 0)])
    except kafka.errors.KafkaError as e:
        return type(e).__name__
    return {p.partition: e.__name__ for p, e in got.items()}


@pytest.fixture(scope="module")
def mock_seen() -> dict[str, Any]:
    with MockBroker(config={"group.initial.rebalance.delay.ms": 0}) as b:
        return scenario(b.bootstrap_servers)


def test_the_admin_apis_take_effect_on_mockbroker(mock_seen):
    assert mock_seen == {
        "validate_only": None, "partitions_after_validate": 1, "grow": None,
        "shrink": "INVALID_PARTITIONS", "same": "INVALID_PARTITIONS", "unknown": "UNKNOWN_TOPIC_OR_PART",
        "new_partition_produce": [0, 1],
        "alter": None, "described": ("1000", 1),  # ConfigSource DYNAMIC_TOPIC_CONFIG
        "too_large": ["MSG_SIZE_TOO_LARGE", 0],
        "restore": None, "restored": ("1048588", 5),  # DEFAULT_CONFIG
        "produced": [0, 1, 2, 3, 4], "low_watermark": 3,
        "delete_missing": "_NOENT",  # librdkafka's own: the partition is not in its metadata
        "earliest": 3, "consumer_reset_to": 3,
        "delete_offsets_live": {0: "GroupSubscribedToTopicError"}, "delete_offsets": {0: "NoError"},
        "offset_after_delete": [-1001],  # OFFSET_INVALID: no committed offset
        "delete_offsets_nogroup": "GroupIdNotFoundError",
        "dtp_pages": [[("adm44", [0, 1])], [("adm44", [2])]],
        "dtp_cursors": [{"topic_name": "adm44", "partition_index": 2}, None],
        "by_id": [("adm44", 3)], "config_resources": {"topic": ["adm44"]},
        "cluster": (1, True),
    }


def test_the_same_as_a_real_kafka(mock_seen, realkafka):  # noqa: F811 - the fixture
    assert scenario(realkafka.bootstrap) == mock_seen


def _java_admin_topics(bootstrap: str) -> list[str]:
    """tests/integration/java/src/AdminTopics.java against ``bootstrap``: its output lines."""
    from .javatools import JAVA_TIMEOUT_S, java_classpath, tail

    cmd = [shutil.which("java") or "java", "-cp", java_classpath("AdminTopics"), "AdminTopics", bootstrap]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"AdminTopics timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
    return r.stdout.strip().splitlines()


@pytest.fixture(scope="module")
def java_mock_seen() -> list[str]:
    with MockBroker() as b:
        return _java_admin_topics(b.bootstrap_servers)


def test_the_java_admin_reaches_every_api(java_mock_seen):
    """Kafka's Java Admin 4.4 reads ApiVersions and sends each of these only to a broker that lists it."""
    assert java_mock_seen == [
        "CREATE ok", "GROW validate ok", "GROW ok", "SHRINK InvalidPartitionsException",
        "GROW unknown UnknownTopicOrPartitionException",
        "DESCRIBE name partitions=3", "DESCRIBE id name=jadm partitions=3",
        "DESCRIBE unknown id UnknownTopicIdException",
        "ALTER ok", "CONFIG 86400000 DYNAMIC_TOPIC_CONFIG", "ALTER bad InvalidConfigurationException",
        "ALTER delete ok", "CONFIG 604800000 DEFAULT_CONFIG",
        "DELETE_RECORDS low=3", "EARLIEST 3", "DELETE_RECORDS beyond OffsetOutOfRangeException",
        "COMMIT ok", "OFFSET_DELETE ok", "OFFSETS left=0", "OFFSET_DELETE nogroup GroupIdNotFoundException",
        "CONFIG_RESOURCES [TOPIC:jadm]", "CLUSTER nodes=1", "DONE",
    ]


def test_the_java_admin_sees_the_same_as_on_a_real_kafka(java_mock_seen, realkafka):  # noqa: F811 - the fixture
    assert _java_admin_topics(realkafka.bootstrap) == java_mock_seen


def test_the_java_admin_on_three_brokers(java_mock_seen):
    """The same on a 3-broker mockbroker: each request reaches the broker Kafka's Admin picks (the
    partition leader for DeleteRecords and ListOffsets, the coordinator for OffsetDelete)."""
    with MockBroker(config={"mock.num.brokers": 3}) as b:
        seen = _java_admin_topics(b.bootstrap_servers)
    assert seen == [line if not line.startswith("CLUSTER") else "CLUSTER nodes=3" for line in java_mock_seen]


def test_kadm_on_a_real_kafka(realkafka):  # noqa: F811 - the fixture
    """test_admin_tour.py's franz-go kadm program against this module's Kafka: what mockbroker answers."""
    from .test_admin_tour import KADM, kadm

    assert kadm(realkafka.bootstrap) == KADM


def test_the_admin_tour_on_a_real_kafka(realkafka):  # noqa: F811 - the fixture
    """test_admin_tour.py's tour of Kafka's Java Admin against this module's Kafka: every method the
    tour does not skip succeeds with the answers mockbroker gives (so its list is honest).  Last in
    the module: the tour ends by unregistering the broker, after which Kafka's controlled shutdown
    waits out the fixture's whole stop timeout (30 s), so the broker is killed here instead."""
    from .test_admin_tour import SKIPPED, expected, tour

    try:
        seen = tour(realkafka.bootstrap)
    finally:
        for node in realkafka.nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.proc.kill()
                node.proc.wait(10)
    assert {m: v for m, v in seen.items() if v[0] != "SKIP"} == expected(1)
    assert {m for m, (status, _) in seen.items() if status == "SKIP"} == SKIPPED
