"""StandardAuthorizer's decisions (StandardAuthorizerData.authorize) and ACL filters
(AclBindingFilter.matches), then the ACL APIs and the checks KafkaApis makes, over the wire, with
SASL/PLAIN principals: a super user creates ACLs, another user is refused what they do not allow
with Kafka's error codes, and what was never given an ACL is closed unless
allow.everyone.if.no.acl.found."""

from __future__ import annotations

import pytest

from mockbroker import MockBroker
from mockbroker.security.authorizer import (
    AclBinding, AclFilter, AclPermissionType, PatternType, StandardAuthorizer, validate_new_acl,
)
from mockbroker.security.authorizer import AclOperation as Op
from mockbroker.security.authorizer import ResourceType as R
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode

from .test_sasl import login_plain

E = ErrorCode
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED


def acl(name, op, perm=ALLOW, principal="User:bob", rtype=R.TOPIC, pattern=LIT, host="*"):
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def test_allow_implies_describe_and_deny_wins():
    a = StandardAuthorizer(["User:admin"])
    a.add(acl("orders", Op.READ))
    assert a.authorize("bob", "127.0.0.1", Op.READ, R.TOPIC, "orders")
    assert a.authorize("bob", "127.0.0.1", Op.DESCRIBE, R.TOPIC, "orders")  # READ implies DESCRIBE
    assert not a.authorize("bob", "127.0.0.1", Op.WRITE, R.TOPIC, "orders")
    assert not a.authorize("carol", "127.0.0.1", Op.READ, R.TOPIC, "orders")
    assert a.authorize("admin", "127.0.0.1", Op.ALTER, R.CLUSTER, "kafka-cluster")  # super.users
    a.add(acl("ord", Op.READ, DENY, principal="User:*", pattern=PRE))
    assert not a.authorize("bob", "127.0.0.1", Op.READ, R.TOPIC, "orders")  # a DENY wins
    assert a.authorize("bob", "127.0.0.1", Op.DESCRIBE, R.TOPIC, "orders")  # DENY READ is not DENY DESCRIBE


def test_no_acl_found_and_hosts_and_all():
    a = StandardAuthorizer(allow_if_no_acl=True)
    assert a.authorize("bob", "10.0.0.1", Op.WRITE, R.TOPIC, "free")  # no ACL on the topic: open
    a.add(acl("*", Op.ALL, host="10.0.0.0/8"))
    assert a.authorize("bob", "10.1.2.3", Op.WRITE, R.TOPIC, "free")  # LITERAL * covers it, CIDR host
    assert not a.authorize("bob", "127.0.0.1", Op.WRITE, R.TOPIC, "free")  # has ACLs, none for this host
    assert not StandardAuthorizer().authorize("bob", "10.0.0.1", Op.WRITE, R.TOPIC, "free")  # closed by default


@pytest.mark.parametrize("pattern, host, inside", [
    ("010.1.0.0/16", "10.1.2.3", True),  # SubnetUtils reads 010 as 10 (Python's ipaddress refuses it)
    ("[::1]/128", "::1", True),  # SubnetUtils6 takes InetAddress.getByName's bracketed literal
    ("::/+0", "2001:db8::1", True),  # and Integer.parseInt's "+0"
    ("10.0.0.0/8", "::1", False), ("::/0", "10.0.0.1", False), ("10.0.0.0/33", "10.0.0.1", False),
])
def test_cidr_hosts_match_as_cidr_utils_reads_them(pattern, host, inside):
    """CidrUtils.isInRange: the CIDR blocks CreateAcls takes (test_acl_hosts_as_kafka_44_checks_them)
    match the hosts commons-net's SubnetUtils / SubnetUtils6 put in them."""
    a = StandardAuthorizer()
    a.add(acl("t", Op.READ, host=pattern))
    assert a.authorize("bob", host, Op.READ, R.TOPIC, "t") is inside


def test_authorize_by_resource_type():
    """Authorizer.authorizeByResourceType's default method, as StandardAuthorizer keeps it."""
    a = StandardAuthorizer()
    assert not a.authorize_any("bob", "h", Op.WRITE, R.TOPIC)
    a.add(acl("logs-app", Op.WRITE))
    assert a.authorize_any("bob", "h", Op.WRITE, R.TOPIC)
    assert not a.authorize_any("bob", "h", Op.READ, R.TOPIC)  # no implication here: WRITE is not READ
    a.add(acl("logs-", Op.WRITE, DENY, pattern=PRE))  # a DENY prefix dominates the LITERAL allow
    assert not a.authorize_any("bob", "h", Op.WRITE, R.TOPIC)
    a.add(acl("metrics", Op.WRITE, pattern=PRE))
    assert a.authorize_any("bob", "h", Op.WRITE, R.TOPIC)
    a.add(acl("metrics", Op.WRITE, DENY))  # a LITERAL deny of the same name does not touch a PREFIXED allow
    assert a.authorize_any("bob", "h", Op.WRITE, R.TOPIC)
    a.add(acl("*", Op.WRITE, DENY))
    assert not a.authorize_any("bob", "h", Op.WRITE, R.TOPIC)
    assert StandardAuthorizer(allow_if_no_acl=True).authorize_any("bob", "h", Op.WRITE, R.TOPIC)
    assert StandardAuthorizer(["User:bob"]).authorize_any("bob", "h", Op.WRITE, R.TOPIC)


def test_filters_match_as_kafka():
    lit, pre, star = acl("orders", Op.READ), acl("ord", Op.READ, pattern=PRE), acl("*", Op.READ)
    match = AclFilter(R.TOPIC, "orders", PatternType.MATCH, None, None, Op.ANY, AclPermissionType.ANY)
    assert [x for x in (lit, pre, star) if match.matches(x)] == [lit, pre, star]
    exact = AclFilter(R.ANY, "ord", PatternType.ANY, None, None, Op.ANY, AclPermissionType.ANY)
    assert [x for x in (lit, pre, star) if exact.matches(x)] == [pre]
    by_op = AclFilter(R.ANY, None, PatternType.ANY, "User:bob", None, Op.WRITE, AclPermissionType.ANY)
    assert not by_op.matches(lit)


@pytest.mark.parametrize("binding, message", [
    (acl("other", Op.ALTER, rtype=R.CLUSTER), "The only valid name for the CLUSTER resource is kafka-cluster"),
    (acl("", Op.READ), "Invalid empty resource name"),
    (acl("t", Op.ANY), "Invalid operation ANY"),
    (acl("t", Op.READ, principal="bob"), "Could not parse principal from `bob` (no colon is present separating "
                                         "the principal type from the principal name)"),
])
def test_invalid_new_acls(binding, message):
    assert validate_new_acl(binding) == message


# -- over the wire ---------------------------------------------------------------------------------

CONFIG = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
          "mock.sasl.users": ["admin:admin-secret", "bob:bob-secret"],
          "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
          "super.users": "User:admin", "auto.create.topics.enable": False}


@pytest.fixture(scope="module")
def b():
    with MockBroker(config=CONFIG) as b:
        b.create_topic("open", 1)
        b.create_topic("closed", 1)
        yield b


@pytest.fixture
def login(b):
    clients = []

    def connect(user):
        c = RawKafkaClient.connect(b.bootstrap_servers)
        login_plain(c, user, f"{user}-secret")
        clients.append(c)
        return c

    yield connect
    for c in clients:
        c.close()


def creation(name, op, perm=3, principal="User:bob", rtype=2, pattern=3):
    return {"resource_type": rtype, "resource_name": name, "resource_pattern_type": pattern,
            "principal": principal, "host": "*", "operation": op, "permission_type": perm}


def filter_(rtype=1, name=None, pattern=1, principal=None):
    return {"resource_type_filter": rtype, "resource_name_filter": name, "pattern_type_filter": pattern,
            "principal_filter": principal, "host_filter": None, "operation": 1, "permission_type": 1}


def test_acl_apis_and_enforcement(login):
    admin, bob = login("admin"), login("bob")
    # bob may not touch ACLs: ALTER/DESCRIBE on the cluster
    r = bob.request(30, 3, {"creations": [creation("open", int(Op.READ))]})
    assert [x.error_code for x in r.results] == [E.cluster_authorization_failed]
    assert bob.request(29, 3, filter_()).error_code == E.cluster_authorization_failed
    # the super user gives bob READ+WRITE on "open" and READ on group "g", and a bad one
    r = admin.request(30, 3, {"creations": [creation("open", int(Op.READ)), creation("open", int(Op.WRITE)),
                                            creation("g", int(Op.READ), rtype=3), creation("", int(Op.READ))]})
    assert [(x.error_code, x.error_message) for x in r.results] == [
        (E.none, ""), (E.none, ""), (E.none, ""), (E.invalid_request, "Invalid empty resource name")]
    described = admin.request(29, 3, filter_())
    assert [(x.resource_type, x.resource_name, len(x.acls)) for x in described.resources] == [(2, "open", 2), (3, "g", 1)]
    # Metadata: all topics lists only what bob may describe; a named closed topic is refused
    meta = bob.request(3, 12, {"topics": None, "allow_auto_topic_creation": False})
    assert [t.name for t in meta.topics] == ["open"]
    meta = bob.request(3, 12, {"topics": [{"name": "closed", "topic_id": None}], "allow_auto_topic_creation": False})
    assert meta.topics[0].error_code == E.topic_authorization_failed
    # ListOffsets per topic
    lo = bob.request(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": n, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}
        for n in ("open", "closed")]})
    assert [t.partitions[0].error_code for t in lo.topics] == [E.none, E.topic_authorization_failed]
    # FindCoordinator: group g is readable (DESCRIBE implied), group h is not
    fc = bob.request(10, 4, {"key_type": 0, "coordinator_keys": ["g", "h"]})
    assert [x.error_code for x in fc.coordinators] == [E.none, E.group_authorization_failed]
    # a whole request refused: Heartbeat in group h
    hb = bob.request(12, 4, {"group_id": "h", "generation_id": 1, "member_id": "m", "group_instance_id": None})
    assert hb.error_code == E.group_authorization_failed
    # InitProducerId: idempotent needs IDEMPOTENT_WRITE or WRITE on some topic (bob has WRITE on open)
    ip = bob.request(22, 4, {"transactional_id": None, "transaction_timeout": 60000, "producer_id": -1,
                             "producer_epoch": -1})
    assert ip.error_code == E.none
    ip = bob.request(22, 4, {"transactional_id": "tx", "transaction_timeout": 60000, "producer_id": -1,
                             "producer_epoch": -1})
    assert ip.error_code == E.transactional_id_authorization_failed
    # CreateTopics needs CREATE
    ct = bob.request(19, 7, {"topics": [{"name": "new", "num_partitions": 1, "replication_factor": 1,
                                         "assignments": [], "configs": []}], "timeout": 5000, "validate_only": False})
    assert ct.topics[0].error_code == E.topic_authorization_failed
    # DeleteAcls removes what the filter matches; bob loses "open"
    d = admin.request(31, 3, {"filters": [filter_(rtype=2, name="open", pattern=3)]})
    assert len(d.filter_results[0].matching_acls) == 2
    meta = bob.request(3, 12, {"topics": None, "allow_auto_topic_creation": False})
    assert [t.name for t in meta.topics] == []


# -- ACLs set at start, from Python and over the admin API ------------------------------------------


def test_acls_from_config_python_and_the_admin_api():
    from mockbroker.config.broker_config import BrokerConfig, ConfigError

    from ..admin.test_admin_api import http

    start = [{"resource_type": "TOPIC", "name": "open", "principal": "User:bob", "operation": "WRITE"}]
    with pytest.raises(ConfigError, match="mock.acls needs an authorizer"):
        BrokerConfig({"mock.acls": start})
    with pytest.raises(ConfigError, match="ACL 1: Invalid operation ANY"):
        BrokerConfig({"mock.acls": [{**start[0], "operation": "any"}]})
    with MockBroker(config={**CONFIG, "mock.acls": start, "mock.admin.listener": "127.0.0.1:0"}) as b:
        b.create_topic("open", 1)
        assert [a["operation"] for a in b.acls()] == ["WRITE"]
        c = RawKafkaClient.connect(b.bootstrap_servers)
        try:
            login_plain(c, "bob", "bob-secret")
            names = lambda: [t.name for t in c.request(3, 12, {"topics": None, "allow_auto_topic_creation": False}).topics]  # noqa: E731
            assert names() == ["open"]  # WRITE implies DESCRIBE
            b.remove_acls(principal="User:bob")
            assert names() == []
            status, body = http(b.admin_url + "/acls", "POST", {"resource_type": "topic", "name": "o",
                                                                "pattern_type": "prefixed", "principal": "User:bob",
                                                                "operation": "describe"})
            assert status == 201 and body["pattern_type"] == "PREFIXED"
            assert names() == ["open"]
            status, body = http(b.admin_url + "/acls", "POST", {"resource_type": "TOPIC", "name": "o",
                                                                "principal": "bob", "operation": "READ"})
            assert status == 400 and body["error"].startswith("Could not parse principal from `bob`")
            assert http(b.admin_url + "/acls")[1] == b.acls() and len(b.acls()) == 1
            status, body = http(b.admin_url + "/acls", "DELETE", {"operation": "DESCRIBE"})
            assert status == 200 and len(body) == 1 and names() == []
        finally:
            c.close()
    with MockBroker(config={"mock.admin.listener": "127.0.0.1:0"}) as b:
        status, body = http(b.admin_url + "/acls")
        assert status == 404 and body["field"] == "authorizer"


def test_every_whole_request_check_can_be_answered():
    """A whole-request check answers through the API's error response: one without would pass unchecked."""
    from mockbroker.apis import error_responder
    from mockbroker.apis.authorization import WHOLE_REQUEST

    assert [k for k in WHOLE_REQUEST if error_responder(k) is None] == []


def test_groups_and_cluster_operations(b, login):
    admin, bob = login("admin"), login("bob")
    r = admin.request(30, 3, {"creations": [creation("mine", int(Op.DESCRIBE), rtype=3),
                                            creation("mine", int(Op.DELETE), rtype=3)]})
    assert [x.error_code for x in r.results] == [E.none, E.none]
    for gid in ("mine", "theirs"):  # two empty classic groups: offsets committed by the super user
        admin.request(8, 8, {"group_id": gid, "generation_id_or_member_epoch": -1, "member_id": "",
                             "group_instance_id": None, "topics": [{"name": "open", "partitions": [
                                 {"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1,
                                  "committed_metadata": None}]}]})
    described = bob.request(15, 5, {"groups": ["mine", "theirs"], "include_authorized_operations": False})
    assert [(g.group_id, g.error_code) for g in described.groups] == [  # KafkaApis: the refused ones first
        ("theirs", E.group_authorization_failed), ("mine", E.none)]
    listed = bob.request(16, 5, {"states_filter": [], "types_filter": []})
    assert [g.group_id for g in listed.groups] == ["mine"]
    assert {g.group_id for g in admin.request(16, 5, {"states_filter": [], "types_filter": []}).groups} >= {
        "mine", "theirs"}
    deleted = bob.request(42, 2, {"groups_names": ["theirs", "mine"]})
    assert [(x.group_id, x.error_code) for x in deleted.results] == [
        ("theirs", E.group_authorization_failed), ("mine", E.none)]
    # an operation on the cluster: DESCRIBE for DescribeLogDirs, ALTER for ElectLeaders
    logdirs = bob.request(35, 4, {"topics": None})
    assert logdirs.error_code == E.cluster_authorization_failed and logdirs.results == ()
    assert admin.request(35, 4, {"topics": None}).error_code == E.none


def test_offsets_of_groups_and_topics(b, login):
    """OffsetCommit needs READ on each topic (after READ on the group); OffsetFetch DESCRIBE on the
    group (v8+: per group) and lists only the topics the client may DESCRIBE."""
    admin, bob = login("admin"), login("bob")
    r = admin.request(30, 3, {"creations": [creation("og", int(Op.READ), rtype=3),
                                            creation("open", int(Op.READ))]})
    assert [x.error_code for x in r.results] == [E.none, E.none]

    def commit(c, topics):
        r = c.request(8, 8, {"group_id": "og", "generation_id_or_member_epoch": -1, "member_id": "",
                             "group_instance_id": None, "topics": [{"name": t, "partitions": [
                                 {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                                  "committed_metadata": None}]} for t in topics]})
        return [(t.name, t.partitions[0].error_code) for t in r.topics]

    assert commit(admin, ["open", "closed"]) == [("open", E.none), ("closed", E.none)]
    # KafkaApis.handleOffsetCommitRequest: the broker's own answers (the refused topic) first, then the
    # coordinator's merged after them (OffsetCommitResponse.Builder.merge)
    assert commit(bob, ["open", "closed"]) == [("closed", E.topic_authorization_failed), ("open", E.none)]
    fetched = bob.request(9, 9, {"groups": [{"group_id": "og", "member_id": None, "member_epoch": -1, "topics": None},
                                            {"group_id": "other", "member_id": None, "member_epoch": -1,
                                             "topics": None}], "require_stable": False})
    (og, other) = fetched.groups
    assert [t.name for t in og.topics] == ["open"] and og.error_code == E.none  # "closed" is not listed
    assert other.error_code == E.group_authorization_failed
    asked = bob.request(9, 7, {"group_id": "og", "topics": [{"name": "closed", "partition_indexes": [0]}],
                               "require_stable": False})
    assert asked.topics[0].partitions[0].error_code == E.topic_authorization_failed
    assert bob.request(9, 7, {"group_id": "other", "topics": None, "require_stable": False}).error_code == \
        E.group_authorization_failed


def test_configs_partitions_records_producers_and_transactions(b, login):
    """Per-resource checks: DESCRIBE_CONFIGS / ALTER_CONFIGS on a topic (TOPIC_...) or a broker (the
    cluster's, CLUSTER_...), ALTER for CreatePartitions, DELETE for DeleteRecords, READ for
    DescribeProducers, DESCRIBE on transactional ids, ConsumerGroupDescribe per group."""
    admin, bob = login("admin"), login("bob")
    r = admin.request(30, 3, {"creations": [creation("open", int(Op.DESCRIBE_CONFIGS))]})
    assert [x.error_code for x in r.results] == [E.none]
    described = bob.request(32, 4, {"resources": [
        {"resource_type": 2, "resource_name": n, "configuration_keys": ["retention.ms"]} for n in ("open", "closed")
    ] + [{"resource_type": 4, "resource_name": "0", "configuration_keys": ["num.io.threads"]}],
        "include_synonyms": False, "include_documentation": False})
    # ConfigHelper: a refused resource carries its error's own message, a described one the default ""
    assert [(x.resource_name, x.error_code, x.error_message, len(x.configs)) for x in described.results] == [
        ("open", E.none, "", 1), ("closed", E.topic_authorization_failed, "Topic authorization failed.", 0),
        ("0", E.cluster_authorization_failed, "Cluster authorization failed.", 0)]
    altered = bob.request(44, 1, {"resources": [{"resource_type": 2, "resource_name": "open", "configs": [
        {"name": "retention.ms", "config_operation": 0, "value": "1000"}]}], "validate_only": True})
    assert altered.responses[0].error_code == E.topic_authorization_failed  # DESCRIBE_CONFIGS is not ALTER_CONFIGS
    cp = bob.request(37, 3, {"topics": [{"name": "closed", "count": 3, "assignments": None}], "timeout": 5000,
                             "validate_only": True})
    assert cp.results[0].error_code == E.topic_authorization_failed
    dr = bob.request(21, 2, {"topics": [{"name": "closed", "partitions": [{"partition_index": 0, "offset": 0}]}],
                             "timeout": 5000})
    assert dr.topics[0].partitions[0].error_code == E.topic_authorization_failed
    dp = bob.request(61, 0, {"topics": [{"name": "closed", "partition_indexes": [0]}]})
    assert dp.topics[0].partitions[0].error_code == E.topic_authorization_failed
    from ..txn.test_txn_admin_wire import describe as describe_transactions  # reads Kafka's -1 start time

    assert describe_transactions(bob, "tx")["tx"].error_code == E.transactional_id_authorization_failed
    cgd = bob.request(69, 1, {"group_ids": ["nobody-else"], "include_authorized_operations": False})
    assert cgd.groups[0].error_code == E.group_authorization_failed


def test_unknown_elements_close_the_connection(b, login, caplog):
    """A resource type, pattern type, operation or permission type of code 0 (UNKNOWN) fails the
    request's own validation: Kafka cannot parse the request and closes the connection; one log line,
    no traceback, nothing else affected."""
    admin = login("admin")
    admin.send(30, 3, {"creations": [creation("t", 0)]})
    assert admin.is_closed_by_peer()
    assert "CreateAclsRequest contains UNKNOWN elements" in caplog.text and "Traceback" not in caplog.text
    other = login("admin")
    assert other.request(29, 3, filter_()).error_code == E.none


# Kafka 4.4.0 with StandardAuthorizer (the differential tester): a code its enums lack is read as
# UNKNOWN by fromCode (the request's validation refuses only code 0); CreateAcls refuses it per
# creation (AclControlManager.validateNewAcl), DeleteAcls per filter (validateFilter), DescribeAcls
# matches nothing with it.
def test_codes_kafka_does_not_know_are_unknown(b, login):
    admin = login("admin")
    r = admin.request(30, 3, {"creations": [creation("u", 127), creation("u", 3, rtype=-1), creation("u", 3, pattern=9),
                                            creation("u", 3, perm=9), creation("u", 3)]})
    assert [(x.error_code, x.error_message) for x in r.results] == [
        (E.invalid_request, "Invalid operation UNKNOWN"), (E.invalid_request, "Invalid resourceType UNKNOWN"),
        (E.invalid_request, "Invalid patternType UNKNOWN"), (E.invalid_request, "Invalid permissionType UNKNOWN"),
        (E.none, "")]
    for change in ({"operation": 127}, {"resource_type_filter": -1}, {"pattern_type_filter": 5}, {"permission_type": 4}):
        d = admin.request(29, 3, {**filter_(), **change})
        assert (d.error_code, d.error_message, list(d.resources)) == (E.none, "", [])
    r = admin.request(31, 3, {"filters": [{**filter_(name="u"), "operation": 127},
                                          {**filter_(name="u"), "resource_type_filter": -1},
                                          {**filter_(name="u"), "pattern_type_filter": 5},
                                          {**filter_(name="u"), "permission_type": 4}]})
    assert [(x.error_code, x.error_message, list(x.matching_acls)) for x in r.filter_results] == [
        (E.invalid_request, "Unknown entryFilter.", []), (E.invalid_request, "Unknown patternFilter.", []),
        (E.invalid_request, "Unknown patternFilter.", []), (E.invalid_request, "Unknown entryFilter.", [])]
    d = admin.request(29, 3, filter_(name="u"))
    assert [(x.resource_name, len(x.acls)) for x in d.resources] == [("u", 1)]  # nothing removed
    assert len(admin.request(31, 3, {"filters": [filter_(name="u")]}).filter_results[0].matching_acls) == 1


# Kafka 4.4.0: CreateAclsRequest.aclBinding's ResourcePattern / AccessControlEntry constructors throw
# IllegalArgumentException for ANY (or a MATCH pattern type): the whole request is answered
# UNKNOWN_SERVER_ERROR without a message for every creation, and none is created
@pytest.mark.parametrize("bad", [dict(rtype=1), dict(pattern=1), dict(pattern=2), dict(op=1), dict(perm=1)])
def test_a_creation_kafka_cannot_bind_fails_the_request(b, login, bad):
    admin = login("admin")
    r = admin.request(30, 3, {"creations": [creation("bind-ok", 3), creation("bind-bad", **{"op": 3, **bad})]})
    assert [(x.error_code, x.error_message) for x in r.results] == [(E.unknown_server_error, None)] * 2
    assert list(admin.request(29, 3, filter_(name="bind-ok")).resources) == []


# Kafka 4.4.0's answers (AclControlManager.validateHostPattern at metadata.version 4.4-IV2): a host
# without "/" is taken as it is, one with "/" must be a CIDR block as commons-net's SubnetUtils reads it
@pytest.mark.parametrize("host, error, message", [
    ("*", E.none, ""), ("someone", E.none, ""), ("x" * 250, E.none, ""), ("10.0.0.1", E.none, ""),
    ("1.2.3.4/8", E.none, ""), ("fe80::/10", E.none, ""), ("[::1]/100", E.none, ""), ("::1/+8", E.none, ""),
    ("", E.invalid_request, "Host pattern cannot be null or empty"),
    ("1.2.3.4/33", E.invalid_request, "Invalid CIDR notation '1.2.3.4/33': Value [33] not in range [0,32]"),
    ("1.2.3.4/+8", E.invalid_request, "Invalid CIDR notation '1.2.3.4/+8': Could not parse [1.2.3.4/+8]"),
    ("::1/129", E.invalid_request,
     "Invalid CIDR notation '::1/129': Could not parse [::1/129] - prefix length must be between 0 and 128"),
    ("::1/ 8", E.invalid_request, "Invalid CIDR notation '::1/ 8': Could not parse [::1/ 8] - invalid prefix length"),
    ("::ffff:1.2.3.4/100", E.invalid_request,
     "Invalid CIDR notation '::ffff:1.2.3.4/100': Could not parse [::ffff:1.2.3.4] - not an IPv6 address"),
])
def test_acl_hosts_as_kafka_44_checks_them(b, login, host, error, message):
    admin = login("admin")
    r = admin.request(30, 3, {"creations": [{**creation("hosts", 3), "host": host}]})
    assert [(x.error_code, x.error_message) for x in r.results] == [(error, message)]

def test_a_cidr_host_below_metadata_version_4_4_iv1_is_unsupported():
    """Kafka 4.4.0 formatted with --release-version 4.3-IV0 answers a host with "/" UNSUPPORTED_VERSION
    (AclControlManager.validateHostPattern) after the other checks; here metadata.version 4.3-IV0 is
    what mock.kafka.version 4.3 finalizes."""
    assert validate_new_acl(acl("t", Op.READ, host="1.2.3.4/8"), cidr_supported=False) == (
        "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher.")
    with MockBroker(config={**CONFIG, "mock.kafka.version": "4.3"}) as b43:
        c = RawKafkaClient.connect(b43.bootstrap_servers)
        try:
            login_plain(c, "admin", "admin-secret")
            r = c.request(30, 3, {"creations": [{**creation("t", 3), "host": "1.2.3.4/8"},
                                                {**creation("t", 3), "host": "a/b"},
                                                {**creation("t", 3, principal="nocolon"), "host": "1.2.3.4/8"},
                                                {**creation("t", 3), "host": "10.0.0.1"}]})
            assert [(x.error_code, x.error_message) for x in r.results] == [
                (E.unsupported_version, "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher."),
                (E.unsupported_version, "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher."),
                (E.invalid_request, "Could not parse principal from `nocolon` (no colon is present separating the "
                                    "principal type from the principal name)"),
                (E.none, "")]
        finally:
            c.close()
