"""The topic and config admin APIs of Kafka 4.4 over a real socket, as a client's admin sends them:
DeleteRecords (21), AlterConfigs (33), CreatePartitions (37), IncrementalAlterConfigs (44), OffsetDelete
(47), ListConfigResources (74), DescribeTopicPartitions (75), Metadata by topic id and TxnOffsetCommit v6
(topic ids).  Each answers as Kafka 4.4 does (error codes and messages) and takes effect: the log start
offset moves, new partitions take records at once, an altered topic config refuses what it should, an
offset deleted is gone.  (The catalogue's values are checked against a recorded Kafka 4.4.0 in
test_config_catalog.py; the real clients' admin APIs in tests/integration/test_admin_kafka44.py.)"""

from __future__ import annotations

import uuid

import pytest

from mockbroker import ManualClock, MockBroker
from mockbroker.server.config_catalog import BROKER, BROKER_LOGGER, CLIENT_METRICS, DELETE, GROUP, SET, TOPIC
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import build_batch
from protocol.registry import ApiKey

from ..server.test_delete_records import earliest, fetch
from ..group.test_groups import Member, fetch_offsets, subscription, wait_for
from ..txn.test_txn_offsets import add_offsets, init_pid

E = ErrorCode
DELAY = 300


@pytest.fixture(scope="module")
def b():
    cfg = {"group.initial.rebalance.delay.ms": DELAY, "log.retention.check.interval.ms": 1000,
           "group.consumer.assignment.interval.ms": 0}  # a new target at the heartbeat that bumps the epoch
    with MockBroker(config=cfg, clock=ManualClock(start_wall_ms=1_800_000_000_000)) as broker:
        yield broker


def topic_id(b, name):
    return b.call(lambda cl: cl.metadata.topics[name].topic_id)


def produce(c, topic, partition=0, n=1, value=b"v"):
    batch = build_batch([(b"k", value, [])] * n, base_timestamp=1_800_000_000_000)
    r = c.request(ApiKey.PRODUCE, 9, {"acks": -1, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
    p = r.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def delete_records(c, topic, offsets, version=2):
    r = c.request(ApiKey.DELETE_RECORDS, version, {"timeout": 1000, "topics": [
        {"name": topic, "partitions": [{"partition_index": p, "offset": o} for p, o in offsets.items()]}]})
    return {p.partition_index: (p.error_code, p.low_watermark) for t in r.topics for p in t.partitions}


def create_partitions(c, topics, validate_only=False, version=3):
    """{name: (error, message)} for ``topics`` [(name, count, assignments or None)]."""
    r = c.request(ApiKey.CREATE_PARTITIONS, version, {"timeout": 1000, "validate_only": validate_only, "topics": [
        {"name": n, "count": k, "assignments": None if a is None else [{"broker_ids": ids} for ids in a]}
        for n, k, a in topics]})
    return [(t.name, t.error_code, t.error_message) for t in r.results]


def incremental(c, rtype, name, ops, validate_only=False, version=1):
    r = c.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, version, {"validate_only": validate_only, "resources": [
        {"resource_type": rtype, "resource_name": name,
         "configs": [{"name": k, "config_operation": op, "value": v} for op, k, v in ops]}]})
    (res,) = r.responses
    return res.error_code, res.error_message


def alter(c, resources, validate_only=False, version=2):
    r = c.request(ApiKey.ALTER_CONFIGS, version, {"validate_only": validate_only, "resources": [
        {"resource_type": t, "resource_name": n, "configs": [{"name": k, "value": v} for k, v in cfg.items()]}
        for t, n, cfg in resources]})
    return [(res.resource_name, res.error_code, res.error_message) for res in r.responses]


def describe(c, rtype, name, keys=None):
    r = c.request(ApiKey.DESCRIBE_CONFIGS, 4, {"include_synonyms": False, "include_documentation": False,
                                               "resources": [{"resource_type": rtype, "resource_name": name,
                                                              "configuration_keys": keys}]})
    (res,) = r.results
    return res.error_code, {e.name: (e.value, e.config_source) for e in res.configs}


def partitions_of(c, topic):
    r = c.request(ApiKey.METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                        "allow_auto_topic_creation": False,
                                        "include_topic_authorized_operations": False})
    return sorted(p.partition_index for p in r.topics[0].partitions)


def test_delete_records_moves_the_log_start_offset(b, c):
    b.create_topic("dr", 2)
    assert [produce(c, "dr")[1] for _ in range(5)] == [0, 1, 2, 3, 4]
    for v in (0, 1, 2):
        assert delete_records(c, "dr", {0: 1 + v}, version=v) == {0: (E.none, 1 + v)}
    assert fetch(b, "dr", 2) == (E.offset_out_of_range, -1, None)  # an error answers every offset -1
    assert fetch(b, "dr", 3)[:2] == (E.none, 3)
    assert earliest(b, "dr") == (E.none, 3)
    assert delete_records(c, "dr", {0: -1, 1: 1, 5: 0}) == {0: (E.none, 5), 1: (E.offset_out_of_range, -1),
                                                            5: (E.unknown_topic_or_partition, -1)}
    assert delete_records(c, "dr-none", {0: 0}) == {0: (E.unknown_topic_or_partition, -1)}


def test_create_partitions_serve_at_once(b, c):
    b.create_topic("cp", 1)
    assert create_partitions(c, [("cp", 3, None)], validate_only=True) == [("cp", E.none, None)]
    assert partitions_of(c, "cp") == [0]
    assert create_partitions(c, [("cp", 3, None)]) == [("cp", E.none, None)]
    assert partitions_of(c, "cp") == [0, 1, 2]
    assert produce(c, "cp", partition=2, n=2) == (E.none, 0)  # the new partition takes records at once
    assert produce(c, "cp", partition=2) == (E.none, 2)
    assert create_partitions(c, [("cp", 3, None), ("cp-none", 2, None)]) == [
        ("cp", E.invalid_partitions, "Topic already has 3 partition(s)."),
        ("cp-none", E.unknown_topic_or_partition, None)]
    assert create_partitions(c, [("cp", 2, None)]) == [
        ("cp", E.invalid_partitions, "The topic cp currently has 3 partition(s); 2 would not be an increase.")]
    assert create_partitions(c, [("cp", 5, [[0]])]) == [
        ("cp", E.invalid_replica_assignment,
         "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.")]
    assert create_partitions(c, [("cp", 4, [[7]])]) == [
        ("cp", E.invalid_replica_assignment,
         "The manual partition assignment includes broker 7, but no such broker is registered.")]
    assert create_partitions(c, [("cp", 4, None), ("cp", 5, None)]) == [
        ("cp", E.invalid_request, "Duplicate topic name.")]
    assert create_partitions(c, [("cp", 4, [[0]])], version=0) == [("cp", E.none, None)]
    assert partitions_of(c, "cp") == [0, 1, 2, 3]


def test_incremental_alter_configs_take_effect(b, c):
    b.create_topic("iac", 1)
    big = b"x" * 2000
    assert produce(c, "iac", value=big)[0] == E.none
    assert incremental(c, TOPIC, "iac", [(SET, "max.message.bytes", "1000")], validate_only=True) == (E.none, None)
    assert describe(c, TOPIC, "iac", ["max.message.bytes"])[1] == {"max.message.bytes": ("1048588", 5)}
    assert incremental(c, TOPIC, "iac", [(SET, "max.message.bytes", "1000")]) == (E.none, None)
    assert describe(c, TOPIC, "iac", ["max.message.bytes"])[1] == {"max.message.bytes": ("1000", 1)}
    assert produce(c, "iac", value=big)[0] == E.message_too_large
    assert produce(c, "iac", value=b"small")[0] == E.none
    assert incremental(c, TOPIC, "iac", [(DELETE, "max.message.bytes", None)]) == (E.none, None)
    assert produce(c, "iac", value=big)[0] == E.none
    error, message = incremental(c, TOPIC, "iac", [(SET, "max.message.bytes", "lots")])
    assert error == E.invalid_config and "max.message.bytes" in message
    assert incremental(c, TOPIC, "iac-none", [(SET, "retention.ms", "1")])[0] == E.unknown_topic_or_partition
    # a group config and the cluster-wide broker default
    assert incremental(c, GROUP, "iac-group", [(SET, "consumer.session.timeout.ms", "50000")]) == (E.none, None)
    assert describe(c, GROUP, "iac-group", ["consumer.session.timeout.ms"])[1] == {
        "consumer.session.timeout.ms": ("50000", 8)}  # ConfigSource.GROUP_CONFIG
    assert incremental(c, BROKER, "", [(SET, "log.retention.ms", "604800001")]) == (E.none, None)
    assert describe(c, TOPIC, "iac", ["retention.ms"])[1] == {"retention.ms": ("604800001", 3)}
    assert incremental(c, BROKER, "", [(DELETE, "log.retention.ms", None)]) == (E.none, None)


def test_alter_configs_replaces_the_set(b, c):
    b.create_topic("ac", 1, configs={"retention.ms": "1000000"})
    assert alter(c, [(TOPIC, "ac", {"cleanup.policy": "compact"})]) == [("ac", E.none, None)]
    got = describe(c, TOPIC, "ac", ["cleanup.policy", "retention.ms"])[1]
    assert got == {"cleanup.policy": ("compact", 1), "retention.ms": ("604800000", 5)}
    assert alter(c, [(TOPIC, "ac", {}), (TOPIC, "ac", {})]) == [
        ("ac", E.invalid_request, "Each resource must appear at most once."),
        ("ac", E.invalid_request, "Each resource must appear at most once.")]
    assert alter(c, [(TOPIC, "ac", {})], validate_only=True) == [("ac", E.none, None)]
    assert describe(c, TOPIC, "ac", ["cleanup.policy"])[1] == {"cleanup.policy": ("compact", 1)}
    assert alter(c, [(BROKER, "7", {})])[0][1] == E.invalid_request


def test_retention_ms_altered_moves_the_log_start_offset(b, c):
    b.create_topic("ret", 1, configs={"internal.segment.bytes": "1"})
    for _ in range(3):
        produce(c, "ret")
    b.advance(10_000)
    assert earliest(b, "ret") == (E.none, 0)
    assert incremental(c, TOPIC, "ret", [(SET, "retention.ms", "5000")]) == (E.none, None)
    b.advance(1000)  # the next retention pass: every segment is older (a new empty one is rolled first)
    assert earliest(b, "ret") == (E.none, 3)
    assert fetch(b, "ret", 2) == (E.offset_out_of_range, -1, None)


def test_offset_delete(b, c):
    b.create_topic("od", 2)
    b.create_topic("od-other", 1)
    m = Member(b, "od-g", "od-client", protocols=[("range", subscription("od"))])
    try:
        m.join_new()
        wait_for(lambda: (g := b.group("od-g")) is not None and len(g["members"]) == 1)
        b.advance(DELAY)
        assert m.join_response().error_code == E.none
        assert m.sync_response(m.sync({m.member_id: b""})).error_code == E.none
        assert m.commit({0: 5, 1: 6}, topic="od") == {0: E.none, 1: E.none}
        assert m.commit({0: 7}, topic="od-other") == {0: E.none}
        r = c.request(ApiKey.OFFSET_DELETE, 0, {"group_id": "od-g", "topics": [
            {"name": "od", "partitions": [{"partition_index": 0}]},
            {"name": "od-other", "partitions": [{"partition_index": 0}, {"partition_index": 3}]},
            {"name": "od-none", "partitions": [{"partition_index": 0}]}]})
        assert r.error_code == E.none
        assert {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions} == {
            ("od", 0): E.group_subscribed_to_topic, ("od-other", 0): E.none,
            ("od-other", 3): E.unknown_topic_or_partition, ("od-none", 0): E.unknown_topic_or_partition}
        assert fetch_offsets(c, "od-g", "od-other", (0,))[1] == {("od-other", 0): (-1, "")}
        assert fetch_offsets(c, "od-g", "od", (0,))[1] == {("od", 0): (5, "")}
    finally:
        m.close()
    r = c.request(ApiKey.OFFSET_DELETE, 0, {"group_id": "od-nogroup", "topics": [
        {"name": "od", "partitions": [{"partition_index": 0}]}]})
    assert (r.error_code, r.topics) == (E.group_id_not_found, ())


def test_list_config_resources(b, c):
    b.create_topic("lcr", 1)
    assert incremental(c, GROUP, "lcr-group", [(SET, "consumer.heartbeat.interval.ms", "6000")]) == (E.none, None)
    r = c.request(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": []})
    got = [(x.resource_type, x.resource_name) for x in r.config_resources]
    assert r.error_code == E.none
    assert (GROUP, "lcr-group") in got and (TOPIC, "lcr") in got
    assert (BROKER, "0") in got and (BROKER_LOGGER, "0") in got
    assert [t for t, _ in got] == sorted((t for t, _ in got), key=[GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER,
                                                                    TOPIC].index)
    r = c.request(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": [TOPIC]})
    assert {x.resource_type for x in r.config_resources} == {TOPIC}
    r = c.request(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": [99]})
    assert (r.error_code, r.config_resources) == (E.unsupported_version, ())
    r = c.request(ApiKey.LIST_CONFIG_RESOURCES, 0, {})
    assert (r.error_code, r.config_resources) == (E.none, ())  # v0: client-metrics subscriptions only


def test_describe_topic_partitions_pages_with_its_cursor(b, c):
    b.create_topic("dtp-a", 3)
    b.create_topic("dtp-b", 2)

    def page(cursor, limit=2, names=("dtp-a", "dtp-b", "dtp-none")):
        r = c.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {
            "topics": [{"name": n} for n in names], "response_partition_limit": limit, "cursor": cursor})
        got = [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in r.topics]
        nxt = None if r.next_cursor is None else (r.next_cursor.topic_name, r.next_cursor.partition_index)
        return got, nxt

    assert page(None) == ([("dtp-a", E.none, [0, 1])], ("dtp-a", 2))
    assert page({"topic_name": "dtp-a", "partition_index": 2}) == ([("dtp-a", E.none, [2]),
                                                                   ("dtp-b", E.none, [0])], ("dtp-b", 1))
    assert page({"topic_name": "dtp-b", "partition_index": 1}) == ([("dtp-b", E.none, [1]),
                                                                   ("dtp-none", E.unknown_topic_or_partition, [])],
                                                                  None)
    got, _ = page({"topic_name": "zzz", "partition_index": 0})
    assert got == [(n, E.invalid_request, []) for n in ("dtp-a", "dtp-b", "dtp-none")]
    r = c.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [{"name": "dtp-b"}],
                                                        "response_partition_limit": 10, "cursor": None})
    (t,) = r.topics
    assert t.topic_id == topic_id(b, "dtp-b") and [p.leader_id for p in t.partitions] == [0, 0]


def test_metadata_by_topic_id(b, c):
    """The Java Admin's describeTopics by id on a broker without DescribeTopicPartitions: Metadata v12+
    with name "" beside each id."""
    b.create_topic("md-id", 2)
    tid, unknown = topic_id(b, "md-id"), uuid.uuid4()
    r = c.request(ApiKey.METADATA, 13, {"topics": [{"name": "", "topic_id": tid}, {"name": "", "topic_id": unknown}],
                                        "allow_auto_topic_creation": False,
                                        "include_topic_authorized_operations": False})
    assert [(t.error_code, t.name, t.topic_id, len(t.partitions)) for t in r.topics] == [
        (E.unknown_topic_id, None, unknown, 0), (E.none, "md-id", tid, 2)]
    r = c.request(ApiKey.METADATA, 11, {"topics": [{"name": "", "topic_id": tid}],
                                        "allow_auto_topic_creation": False,
                                        "include_topic_authorized_operations": False})
    assert [t.error_code for t in r.topics] == [E.invalid_request]  # ids before v12: getErrorResponse


def test_txn_offset_commit_v6_names_topics_by_id(b, c):
    """KIP-1319: v6 carries topic ids; an unknown id is UNKNOWN_TOPIC_ID, a generation for a group that
    does not exist GROUP_ID_NOT_FOUND (ILLEGAL_GENERATION before v6).  The connection stays open."""
    b.create_topic("tv6", 1)
    tid, unknown = topic_id(b, "tv6"), uuid.uuid4()
    _, pid, epoch = init_pid(c, "tv6-txn")
    assert add_offsets(c, "tv6-txn", pid, epoch, "tv6-g") == E.none

    def commit(topics, version=6, generation=-1, member="", group="tv6-g"):
        r = c.request(ApiKey.TXN_OFFSET_COMMIT, version, {
            "transactional_id": "tv6-txn", "group_id": group, "producer_id": pid, "producer_epoch": epoch,
            "generation_id": generation, "member_id": member, "group_instance_id": None,
            "topics": [{"name": "tv6" if version < 6 else "", "topic_id": t, "partitions": [
                {"partition_index": 0, "committed_offset": 3, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]} for t in topics]})
        return [(t.topic_id if version >= 6 else t.name, [p.error_code for p in t.partitions]) for t in r.topics]

    # the broker's own answers (TxnOffsetCommitResponse.Builder) first, the coordinator's merged after
    assert commit([tid, unknown]) == [(unknown, [E.unknown_topic_id]), (tid, [E.none])]
    # an unknown id listed twice is one entry with both lists of partitions
    assert commit([unknown, unknown]) == [(unknown, [E.unknown_topic_id, E.unknown_topic_id])]
    assert add_offsets(c, "tv6-txn", pid, epoch, "tv6-nogroup") == E.none
    assert commit([tid], generation=3, member="m", group="tv6-nogroup") == [(tid, [E.group_id_not_found])]
    assert commit([tid], version=5, generation=3, member="m", group="tv6-nogroup") == [
        ("tv6", [E.illegal_generation])]
    assert commit([tid]) == [(tid, [E.none])]  # the same connection still answers


def test_txn_offset_commit_without_group_metadata_to_a_consumer_group_with_members(b, c):
    """ConsumerGroup.validateOffsetCommit: a transactional commit with epoch -1, no member id and no
    instance id (a producer that sends no group metadata) is accepted by a KIP-848 group with members."""
    from ..group.test_consumer_group_protocol import Member as Kip848Member

    b.create_topic("tx848", 1)
    m = Kip848Member(b, "tx848-g", topics=("tx848",))
    try:
        assert m.hb().error_code == E.none and m.epoch > 0
        _, pid, epoch = init_pid(c, "tx848-txn")
        assert add_offsets(c, "tx848-txn", pid, epoch, "tx848-g") == E.none
        for version in (2, 6):
            r = c.request(ApiKey.TXN_OFFSET_COMMIT, version, {
                "transactional_id": "tx848-txn", "group_id": "tx848-g", "producer_id": pid,
                "producer_epoch": epoch, "generation_id": -1, "member_id": "", "group_instance_id": None,
                "topics": [{"name": "tx848", "topic_id": topic_id(b, "tx848"), "partitions": [
                    {"partition_index": 0, "committed_offset": 4, "committed_leader_epoch": -1,
                     "committed_metadata": ""}]}]})
            assert [p.error_code for t in r.topics for p in t.partitions] == [E.none], version
    finally:
        m.c.close()


def test_api_versions_v5_checks_the_cluster_and_node(b, c):
    """KIP-1242: a client that names the cluster and node it meant gets REBOOTSTRAP_REQUIRED from
    another one; one without the other is INVALID_REQUEST (ApiVersionsRequest.isValid)."""
    cluster = b.call(lambda cl: cl.metadata.cluster_id)

    def versions(cluster_id, node_id):
        r = c.request(ApiKey.API_VERSIONS, 5, {"client_software_name": "t", "client_software_version": "1",
                                               "cluster_id": cluster_id, "node_id": node_id})
        return r.error_code, len(r.api_keys)

    assert versions(None, -1)[0] == E.none and versions(cluster, 0)[0] == E.none
    assert versions("another-cluster", 0) == (E.rebootstrap_required, 0)
    assert versions(cluster, 5) == (E.rebootstrap_required, 0)
    assert versions(cluster, -1) == (E.invalid_request, 0)
    assert versions(None, 0) == (E.invalid_request, 0)


def test_a_v1_client_reads_every_new_api_as_advertised():
    """ApiVersions at the default (Kafka 4.4) lists the APIs above with Kafka 4.4's ranges."""
    with MockBroker() as broker, RawKafkaClient.connect(broker.bootstrap_servers) as c:
        r = c.request(ApiKey.API_VERSIONS, 5, {"client_software_name": "t", "client_software_version": "1",
                                               "cluster_id": None, "node_id": -1})
    ranges = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert {k: ranges.get(k) for k in (21, 33, 37, 44, 47, 74, 75, 60, 28)} == {
        21: (0, 2), 33: (0, 2), 37: (0, 3), 44: (0, 1), 47: (0, 0), 74: (0, 1), 75: (0, 0), 60: (0, 2), 28: (0, 6)}


def test_create_partitions_over_ten_thousand_is_a_policy_violation(b, c):
    """ReplicationControlManager.validateTotalNumberOfPartitions: the whole request is refused."""
    b.create_topic("cp-many", 1)
    assert create_partitions(c, [("cp-many", 10_002, None), ("cp-none", 2, None)]) == [
        ("cp-many", E.policy_violation, "Excessively large number of additional partitions per request."),
        ("cp-none", E.policy_violation, "Excessively large number of additional partitions per request.")]
    assert partitions_of(c, "cp-many") == [0]


def test_a_consumer_group_gets_the_new_partitions_at_its_next_heartbeat(b, c):
    """KIP-848: the group's assignment follows the topic's partitions (the metadata image changed)."""
    from ..group.test_consumer_group_protocol import Member as Kip848Member

    b.create_topic("cp848", 1)
    m = Kip848Member(b, "cp848-g", topics=("cp848",))
    try:
        assert m.hb().error_code == E.none and (m.epoch, m.partitions()) == (2, [0])  # a new group starts at epoch 1 (Kafka 4.3+)
        assert create_partitions(c, [("cp848", 3, None)]) == [("cp848", E.none, None)]
        assert m.hb().error_code == E.none and (m.epoch, m.partitions()) == (3, [0, 1, 2])
    finally:
        m.c.close()
