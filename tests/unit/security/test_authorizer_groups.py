"""The checks Kafka 4.4's KafkaApis makes of share groups, streams groups and OffsetDelete, over
the wire with SASL/PLAIN principals: GROUP_AUTHORIZATION_FAILED for the whole request where Kafka
answers it so, TOPIC_AUTHORIZATION_FAILED per partition or per topic where it does."""

from __future__ import annotations

import uuid

import pytest

from mockbroker import MockBroker
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from .test_authorizer import CONFIG
from .test_authorizer import login  # noqa: F401 - a fixture (over this module's broker, b)

E = ErrorCode


@pytest.fixture(scope="module")
def b():
    # the share member's second heartbeat gets the initialized partitions at once (Kafka 4.3+: 1 s later)
    with MockBroker(config={**CONFIG, "group.share.assignment.interval.ms": 0}) as b:
        for name in ("open", "closed"):
            b.create_topic(name, 1)
        b.add_acl("TOPIC", "open", "User:bob", "READ")
        b.add_acl("GROUP", "sg", "User:bob", "READ", pattern_type="PREFIXED")
        b.add_acl("GROUP", "sg", "User:bob", "DELETE", pattern_type="PREFIXED")
        yield b


def ids(b):
    return b.call(lambda c: {n: c.metadata.topics[n].topic_id for n in ("open", "closed")})


def partitions(r):
    """(topic id, partition, error) of a ShareFetch/ShareAcknowledge response."""
    return sorted((str(t.topic_id), p.partition_index, p.error_code) for t in r.responses for p in t.partitions)


def test_offset_delete_needs_read_on_each_topic(login):
    admin, bob = login("admin"), login("bob")
    admin.request(ApiKey.OFFSET_COMMIT, 8, {
        "group_id": "sg-od", "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": t, "partitions": [{"partition_index": 0, "committed_offset": 0,
                                                "committed_leader_epoch": -1, "committed_metadata": None}]}
                   for t in ("open", "closed")]})
    r = bob.request(ApiKey.OFFSET_DELETE, 0, {"group_id": "sg-od", "topics": [
        {"name": t, "partitions": [{"partition_index": 0}]} for t in ("closed", "open")]})
    assert r.error_code == E.none
    assert [(t.name, t.partitions[0].error_code) for t in r.topics] == [
        ("closed", E.topic_authorization_failed), ("open", E.none)]


def test_share_heartbeat_fetch_and_acknowledge(b, login):
    bob, tid = login("bob"), ids(b)
    member = str(uuid.uuid4())

    def heartbeat(group, topics, member_id=member):
        return bob.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {
            "group_id": group, "member_id": member_id, "member_epoch": 0, "rack_id": None,
            "subscribed_topic_names": topics})

    assert heartbeat("other", ["open"]).error_code == E.group_authorization_failed
    assert heartbeat("sg-share", ["open", "closed"]).error_code == E.topic_authorization_failed
    assert heartbeat("sg-share", ["closed"], member_id="").error_code == E.invalid_request  # the member id first
    assert heartbeat("sg-share", ["open"]).error_code == E.none

    def fetch(group, member_id=member, epoch=0, acks=()):
        return bob.request(ApiKey.SHARE_FETCH, 2, {
            "group_id": group, "member_id": member_id, "share_session_epoch": epoch, "max_wait": 0,
            "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 10, "batch_size": 10, "share_acquire_mode": 0,
            "is_renew_ack": False, "forgotten_topics_data": [], "topics": [
                {"topic_id": tid[n], "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                    {"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}] if acks else []}]}
                for n in ("open", "closed")]})

    # the group before the member id: a client without READ on the group learns nothing else
    assert fetch("other", member_id="").error_code == E.group_authorization_failed
    assert fetch("sg-share", member_id="").error_code == E.invalid_request
    r = fetch("sg-share")
    assert r.error_code == E.none
    assert partitions(r) == sorted([(str(tid["open"]), 0, E.none),
                                    (str(tid["closed"]), 0, E.topic_authorization_failed)])
    r = fetch("sg-share", epoch=1, acks=True)
    acked = {str(t.topic_id): p.acknowledge_error_code for t in r.responses for p in t.partitions}
    assert acked[str(tid["closed"])] == E.topic_authorization_failed
    assert acked[str(tid["open"])] != E.topic_authorization_failed

    def acknowledge(group, epoch):
        return bob.request(ApiKey.SHARE_ACKNOWLEDGE, 2, {
            "group_id": group, "member_id": member, "share_session_epoch": epoch, "is_renew_ack": False,
            "topics": [{"topic_id": tid[n], "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                {"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}]}]} for n in ("open", "closed")]})

    assert acknowledge("other", 2).error_code == E.group_authorization_failed
    r = acknowledge("sg-share", 2)
    errors = {str(t.topic_id): p.error_code for t in r.responses for p in t.partitions}
    assert errors[str(tid["closed"])] == E.topic_authorization_failed
    assert errors[str(tid["open"])] != E.topic_authorization_failed


def test_share_group_offsets(b, login):
    bob = login("bob")
    r = bob.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": "other", "topics": []})
    assert (r.error_code, r.error_message) == (E.group_authorization_failed, "Group authorization failed.")
    r = bob.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": "sg-offsets", "topics": [
        {"topic_name": t, "partitions": [{"partition_index": 0, "start_offset": 0}]} for t in ("open", "closed")]})
    assert r.error_code == E.none
    assert [(t.topic_name, t.partitions[0].error_code) for t in r.responses] == [
        ("closed", E.topic_authorization_failed), ("open", E.none)]
    r = bob.request(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [
        {"group_id": "other", "topics": None},
        {"group_id": "sg-offsets", "topics": None},
        {"group_id": "sg-offsets", "topics": [{"topic_name": t, "partitions": [0]} for t in ("closed", "open")]}]})
    other, every, named = r.groups
    assert other.error_code == E.group_authorization_failed
    assert [t.topic_name for t in every.topics] == ["open"]
    assert [(t.topic_name, [(p.start_offset, p.error_code, p.error_message) for p in t.partitions])
            for t in named.topics] == [("open", [(0, E.none, None)]),
                                       ("closed", [(-1, E.topic_authorization_failed, "Topic authorization failed.")])]
    r = bob.request(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, {"group_id": "other", "topics": [{"topic_name": "open"}]})
    assert (r.error_code, r.error_message) == (E.group_authorization_failed, "Group authorization failed.")
    r = bob.request(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, {"group_id": "sg-offsets", "topics": [
        {"topic_name": t} for t in ("open", "closed")]})
    assert [(t.topic_name, t.error_code, t.error_message) for t in r.responses] == [
        ("closed", E.topic_authorization_failed, "Topic authorization failed."), ("open", E.none, None)]


def test_streams_heartbeat_needs_describe_on_its_topics_and_create_for_internal_ones(b, login):
    from tests.streams_member import CHANGELOG, REPARTITION, Member, topology

    def missing(m, r):  # the MISSING_INTERNAL_TOPICS status
        return [s for s in m.statuses(r) if s[0] == 3]

    def member():
        m = Member(b, group="sg-wc")
        m.c.close()
        m.c = login("bob")
        return m

    r = member().hb(topo=topology(source="closed"))  # a source topic bob may not DESCRIBE
    assert (r.error_code, r.error_message) == (E.topic_authorization_failed, None)
    r = member().hb(topo=topology(source="open"))  # its internal topics neither
    assert r.error_code == E.topic_authorization_failed
    b.add_acl("TOPIC", "wc-count-", "User:bob", "DESCRIBE", pattern_type="PREFIXED")
    m = member()
    r = m.hb(topo=topology(source="open"))
    assert r.error_code == E.none
    assert missing(m, r) == [(3, f"Internal topics are missing: {REPARTITION}, {CHANGELOG}; "
                                 f"Unauthorized to CREATE on topics {REPARTITION},{CHANGELOG}.")]
    assert b.call(lambda c: [n for n in (REPARTITION, CHANGELOG) if n in c.metadata.topics]) == []
    b.add_acl("TOPIC", REPARTITION, "User:bob", "CREATE")
    r = m.hb()
    assert missing(m, r) == [(3, f"Internal topics are missing: {REPARTITION}, {CHANGELOG}; "
                                 f"Unauthorized to CREATE on topics {CHANGELOG}.")]
    b.add_acl("CLUSTER", "kafka-cluster", "User:bob", "CREATE")  # CREATE on the cluster covers every topic
    m.hb()
    assert b.call(lambda c: [n for n in (REPARTITION, CHANGELOG) if n in c.metadata.topics]) == [REPARTITION, CHANGELOG]


def bits(*ops):
    return sum(1 << int(op) for op in ops)


def test_authorized_operations_are_the_clients(b, login):
    """AuthHelper.authorizedOperations: the bit field of the operations the principal may do, only
    when asked for (else Integer.MIN_VALUE); the cluster's 0 without DESCRIBE on it."""
    from mockbroker.security.authorizer import AclOperation as Op

    admin, bob = login("admin"), login("bob")
    not_asked = -(2**31)
    every_topic_op = bits(Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.DESCRIBE_CONFIGS,
                          Op.ALTER_CONFIGS)

    def metadata(c, include, version=10):
        return c.request(ApiKey.METADATA, version, {
            "topics": [{"name": "open", "topic_id": None}], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": include, "include_topic_authorized_operations": include})

    r = metadata(bob, True)
    assert r.topics[0].topic_authorized_operations == bits(Op.READ, Op.DESCRIBE)  # READ implies DESCRIBE
    assert r.cluster_authorized_operations == 0  # no DESCRIBE on the cluster
    r = metadata(bob, False)
    assert (r.topics[0].topic_authorized_operations, r.cluster_authorized_operations) == (not_asked, not_asked)
    r = metadata(admin, True)
    assert r.topics[0].topic_authorized_operations == every_topic_op  # a super user
    assert r.cluster_authorized_operations == bits(Op.CREATE, Op.ALTER, Op.DESCRIBE, Op.CLUSTER_ACTION,
                                                   Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE)
    r = admin.request(ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True,
                                                   "endpoint_type": 1, "include_fenced_brokers": False})
    assert r.cluster_authorized_operations == metadata(admin, True).cluster_authorized_operations
    r = bob.request(ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True,
                                                 "endpoint_type": 1, "include_fenced_brokers": False})
    assert r.cluster_authorized_operations == 0
    r = bob.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [{"name": "open"}], "response_partition_limit": 10,
                                                          "cursor": None})
    assert r.topics[0].topic_authorized_operations == bits(Op.READ, Op.DESCRIBE)

    group_ops = bits(Op.READ, Op.DELETE, Op.DESCRIBE)  # bob's PREFIXED sg ACLs
    r = bob.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["sg-od"], "include_authorized_operations": True})
    assert r.groups[0].authorized_operations == group_ops
    hb = admin.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": "sg-ops", "member_id": "m1", "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout": 30000, "subscribed_topic_names": ["open"], "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": []})
    assert hb.error_code == E.none
    r = bob.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": ["sg-ops", "sg-none"],
                                                        "include_authorized_operations": True})
    # KafkaApis sets them only on the groups described without an error (sg-none does not exist)
    assert [(g.group_id, g.error_code, g.authorized_operations) for g in r.groups] == [
        ("sg-ops", E.none, group_ops), ("sg-none", E.group_id_not_found, not_asked)]
    left = admin.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {  # the partitions of "open" free for the other tests
        "group_id": "sg-ops", "member_id": "m1", "member_epoch": -1, "instance_id": None, "rack_id": None,
        "rebalance_timeout": -1, "subscribed_topic_names": None, "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": None})
    assert left.error_code == E.none
    r = bob.request(ApiKey.SHARE_GROUP_DESCRIBE, 1, {"group_ids": ["sg-share", "other"],
                                                     "include_authorized_operations": True})
    assert [(g.group_id, g.authorized_operations) for g in r.groups] == [("other", not_asked), ("sg-share", group_ops)]
    assert r.groups[0].error_code == E.group_authorization_failed
    r = bob.request(ApiKey.STREAMS_GROUP_DESCRIBE, 0, {"group_ids": ["sg-wc", "other"],
                                                       "include_authorized_operations": True})
    assert [(g.group_id, g.authorized_operations) for g in r.groups] == [("other", not_asked), ("sg-wc", group_ops)]
    assert r.groups[0].error_code == E.group_authorization_failed


def test_describe_topic_partitions_describes_only_what_the_client_may(login):
    bob = login("bob")

    def described(topics):
        r = bob.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [{"name": t} for t in topics],
                                                              "response_partition_limit": 10, "cursor": None})
        return [(t.name, t.error_code, len(t.partitions)) for t in r.topics]

    assert described(["closed", "open"]) == [("open", E.none, 1), ("closed", E.topic_authorization_failed, 0)]
    assert [name for name, _, _ in described([]) if name in ("open", "closed")] == ["open"]  # all: left out


def test_a_described_group_naming_a_topic_the_client_may_not_describe_is_hidden(b, login):
    """KafkaApis (with an authorizer): Consumer/Share/StreamsGroupDescribe answer a group whose
    members' assignments (a streams group: its topology) name a topic the client may not DESCRIBE
    with TOPIC_AUTHORIZATION_FAILED and nothing else; DescribeGroups lists refused groups first."""
    from tests.streams_member import Member, topology

    admin, bob = login("admin"), login("bob")
    r = admin.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": "sg-cg", "member_id": str(uuid.uuid4()), "member_epoch": 0, "instance_id": None,
        "rack_id": None, "rebalance_timeout": 30_000, "subscribed_topic_names": ["closed"],
        "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []})
    assert r.error_code == E.none and r.assignment is not None and r.assignment.topic_partitions
    r = bob.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": ["sg-cg"], "include_authorized_operations": True})
    (g,) = r.groups
    assert (g.error_code, g.error_message, g.members, g.authorized_operations) == (
        E.topic_authorization_failed, "The group has described topic(s) that the client is not authorized to describe.",
        (), -(2**31))
    assert admin.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": ["sg-cg"], "include_authorized_operations":
                                                             False}).groups[0].error_code == E.none

    member = str(uuid.uuid4())
    for epoch in (0, 2):  # the second heartbeat brings the initialized partitions
        r = admin.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {
            "group_id": "sg-sh", "member_id": member, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": ["closed"] if epoch == 0 else None})
        assert r.error_code == E.none
    assert r.assignment.topic_partitions
    r = bob.request(ApiKey.SHARE_GROUP_DESCRIBE, 1, {"group_ids": ["sg-sh"], "include_authorized_operations": False})
    assert (r.groups[0].error_code, r.groups[0].members) == (E.topic_authorization_failed, ())

    m = Member(b, group="sg-wc2")
    m.c.close()
    m.c = admin
    assert m.hb(topo=topology(source="closed")).error_code == E.none
    r = bob.request(ApiKey.STREAMS_GROUP_DESCRIBE, 0, {"group_ids": ["sg-wc2"], "include_authorized_operations": False})
    (g,) = r.groups
    assert (g.error_code, g.error_message, g.topology, g.members) == (
        E.topic_authorization_failed, "The described group uses topics that the client is not authorized to describe.",
        None, ())

    r = bob.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["sg-od", "other"], "include_authorized_operations": False})
    assert [(g.group_id, g.error_code) for g in r.groups][0] == ("other", E.group_authorization_failed)


def test_heartbeats_leader_epochs_markers_and_config_resources(b, login):
    """ConsumerGroupHeartbeat (DESCRIBE on the subscribed topics), OffsetForLeaderEpoch (DESCRIBE per
    topic), StreamsGroupTopologyDescriptionUpdate (READ on the group), ListConfigResources
    (DESCRIBE_CONFIGS on the cluster), WriteTxnMarkers (CLUSTER_ACTION), AddPartitionsToTxn (v4+
    CLUSTER_ACTION; below, WRITE on each topic)."""
    admin, bob = login("admin"), login("bob")

    def cgh(topics):
        return bob.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
            "group_id": "sg-cgh", "member_id": str(uuid.uuid4()), "member_epoch": 0, "instance_id": None,
            "rack_id": None, "rebalance_timeout": 30_000, "subscribed_topic_names": topics,
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []})

    assert cgh(["open", "closed"]).error_code == E.topic_authorization_failed
    assert cgh(["open"]).error_code == E.none

    r = bob.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [
        {"topic": t, "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}
        for t in ("closed", "open")]})
    assert [(t.topic, t.partitions[0].error_code) for t in r.topics] == [
        ("open", E.none), ("closed", E.topic_authorization_failed)]

    r = bob.request(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, {
        "group_id": "other", "member_id": "m", "topology_epoch": 1, "topology_description": {"subtopologies": []}})
    assert r.error_code == E.group_authorization_failed

    assert bob.request(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": []}).error_code == \
        E.cluster_authorization_failed
    assert admin.request(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": []}).error_code == E.none

    r = bob.request(ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [
        {"producer_id": 1, "producer_epoch": 0, "transaction_result": True, "coordinator_epoch": 0,
         "transaction_version": 0, "topics": [{"name": "open", "partition_indexes": [0]}]}]})
    assert [p.error_code for m in r.markers for t in m.topics for p in t.partitions] == [
        E.cluster_authorization_failed]

    r = bob.request(ApiKey.ADD_PARTITIONS_TO_TXN, 4, {"transactions": [
        {"transactional_id": "sg-tx", "producer_id": 1, "producer_epoch": 0, "verify_only": True,
         "topics": [{"name": "open", "partitions": [0]}]}]})
    assert r.error_code == E.cluster_authorization_failed
    b.create_topic("writable", 1)
    b.add_acl("TOPIC", "writable", "User:bob", "WRITE")
    b.add_acl("TRANSACTIONAL_ID", "sg-tx", "User:bob", "WRITE")
    r = bob.request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": "sg-tx", "v3_and_below_producer_id": 1, "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": t, "partitions": [0]} for t in ("writable", "closed")]})
    assert sorted((t.name, t.results_by_partition[0].partition_error_code) for t in r.results_by_topic_v3_and_below) \
        == [("closed", E.topic_authorization_failed), ("writable", E.operation_not_attempted)]


def test_a_fetch_from_a_follower_needs_cluster_action(b, login):
    """KafkaApis.handleFetchRequest: a replica id of 0 or more is a follower's fetch, which needs
    CLUSTER_ACTION on the cluster (then no READ on the topics); without it every partition is
    TOPIC_AUTHORIZATION_FAILED."""
    admin, bob = login("admin"), login("bob")

    def fetch(c, replica_id):
        r = c.request(ApiKey.FETCH, 12, {
            "replica_id": replica_id, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [], "topics": [
                {"topic": "open", "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                                                  "last_fetched_epoch": -1, "log_start_offset": -1,
                                                  "partition_max_bytes": 1 << 20}]}]})
        return r.responses[0].partitions[0].error_code

    assert fetch(bob, -1) == E.none  # a consumer: READ on the topic
    assert fetch(bob, 1) == E.topic_authorization_failed
    assert fetch(admin, 1) != E.topic_authorization_failed
