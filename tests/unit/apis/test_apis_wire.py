"""Each served API over a real socket, checked against Kafka's answers."""

from __future__ import annotations

import struct

import uuid

import pytest

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode
from protocol.records import build_batch, parse_header
from protocol.registry import ApiKey

E = ErrorCode


def produce(c, topic, partition, records, version=9, acks=-1):
    body = {"acks": acks, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": records}]}]}
    resp = c.request(0, version, body)
    return resp.responses[0].partition_responses[0]


def batch(n=3, **kw):
    return build_batch([(b"k%d" % i, b"v%d" % i, [("h", b"x")]) for i in range(n)], base_timestamp=1000, **kw)


def test_api_versions_lists_served_ranges(raw):
    resp = raw().request(18, 4, {"client_software_name": "t", "client_software_version": "1"})
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert ranges[ApiKey.PRODUCE] == (0, 13)
    assert ranges[ApiKey.FETCH] == (4, 18)
    assert ranges[ApiKey.LIST_OFFSETS] == (1, 11)
    assert ranges[ApiKey.METADATA] == (0, 13)
    assert ranges[ApiKey.API_VERSIONS] == (0, 5)
    assert ranges[ApiKey.CREATE_TOPICS] == (2, 7) and ranges[ApiKey.DELETE_TOPICS] == (1, 6)
    assert ranges[ApiKey.INIT_PRODUCER_ID] == (0, 5) and ranges[ApiKey.DESCRIBE_CONFIGS] == (1, 4)
    assert ranges[ApiKey.DESCRIBE_CLUSTER] == (0, 2) and ranges[ApiKey.TXN_OFFSET_COMMIT] == (0, 6)
    assert ranges[ApiKey.DELETE_RECORDS] == (0, 2) and ranges[ApiKey.CREATE_PARTITIONS] == (0, 3)
    assert ranges[ApiKey.ALTER_CONFIGS] == (0, 2) and ranges[ApiKey.INCREMENTAL_ALTER_CONFIGS] == (0, 1)
    assert ranges[ApiKey.OFFSET_DELETE] == (0, 0) and ranges[ApiKey.DESCRIBE_TOPIC_PARTITIONS] == (0, 0)
    assert ranges[ApiKey.LIST_CONFIG_RESOURCES] == (0, 1)
    # not advertised, like a broker without a client-metrics plugin
    assert 71 not in ranges and 72 not in ranges
    assert timedelta_ms(resp.throttle_time) == 0


def test_api_versions_every_version_answers(raw):
    c = raw()
    for v in range(0, 5):
        body = {"client_software_name": "t", "client_software_version": "1"}
        assert c.request(18, v, body).error_code == 0


@pytest.mark.parametrize("version", range(0, 14))
def test_metadata_every_version(raw, broker, version):
    broker.create_topic(f"meta-{version}", 2)
    c = raw()
    resp = c.request(3, version, {"topics": [{"name": f"meta-{version}"}], "allow_auto_topic_creation": False})
    (t,) = [t for t in resp.topics if t.name == f"meta-{version}"]
    assert t.error_code == 0 and [p.partition_index for p in t.partitions] == [0, 1]
    assert t.partitions[0].leader_id == 0 and list(t.partitions[0].replica_nodes) == [0]
    host, port = broker.bootstrap_servers.split(":")
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [(0, host, int(port))]
    if version >= 10:
        assert t.topic_id != uuid.UUID(int=0)
    if version >= 2:
        assert resp.cluster_id == "mockbroker-cluster-0001"


def test_metadata_auto_create_answers_unknown_topic_then_exists(raw, broker):
    c = raw()
    resp = c.request(3, 12, {"topics": [{"name": "auto-1"}], "allow_auto_topic_creation": True})
    assert resp.topics[0].error_code == E.unknown_topic_or_partition  # Kafka 4.4's AutoTopicCreationManager
    resp = c.request(3, 12, {"topics": [{"name": "auto-1"}], "allow_auto_topic_creation": True})
    assert resp.topics[0].error_code == 0 and len(resp.topics[0].partitions) == 3  # num.partitions=3
    resp = c.request(3, 12, {"topics": [{"name": "auto-2"}], "allow_auto_topic_creation": False})
    assert resp.topics[0].error_code == E.unknown_topic_or_partition
    resp = c.request(3, 12, {"topics": [{"name": "bad/name"}], "allow_auto_topic_creation": True})
    assert resp.topics[0].error_code == E.invalid_topic_exception


def test_metadata_by_topic_id(raw, broker):
    broker.create_topic("by-id", 1)
    c = raw()
    tid = c.request(3, 12, {"topics": [{"name": "by-id"}]}).topics[0].topic_id
    resp = c.request(3, 12, {"topics": [{"name": None, "topic_id": tid}]})
    assert resp.topics[0].name == "by-id"
    resp = c.request(3, 12, {"topics": [{"name": None, "topic_id": uuid.uuid4()}]})
    assert resp.topics[0].error_code == E.unknown_topic_id


class TestProduce:
    def test_appends_and_returns_base_offsets(self, raw, broker):
        broker.create_topic("p1", 1)
        c = raw()
        r1 = produce(c, "p1", 0, batch(3))
        r2 = produce(c, "p1", 0, batch(2))
        assert (r1.error_code, r1.base_offset, r2.base_offset) == (0, 0, 3)
        assert r2.log_start_offset == 0
        stored = broker.partition_records("p1", 0)
        assert parse_header(stored[1]).base_offset == 3

    @pytest.mark.parametrize("version", range(3, 14))
    def test_every_version(self, raw, broker, version):
        topic = f"pv-{version}"
        broker.create_topic(topic, 1)
        c = raw()
        td = {"name": topic, "partition_data": [{"index": 0, "records": batch(1)}]}
        if version >= 13:
            meta = c.request(3, 12, {"topics": [{"name": topic}]})
            td["topic_id"] = meta.topics[0].topic_id
        resp = c.request(0, version, {"acks": 1, "timeout": 1000, "topic_data": [td]})
        assert resp.responses[0].partition_responses[0].error_code == 0
        assert broker.log_end_offset(topic, 0) == 1

    def test_invalid_required_acks(self, raw, broker):
        broker.create_topic("p2", 1)
        r = produce(raw(), "p2", 0, batch(), acks=2)
        assert r.error_code == E.invalid_required_acks
        assert broker.log_end_offset("p2", 0) == 0

    def test_bad_crc_is_corrupt_message_and_nothing_appended(self, raw, broker):
        broker.create_topic("p3", 1)
        b = bytearray(batch())
        b[-3] ^= 0x55
        r = produce(raw(), "p3", 0, bytes(b))
        assert r.error_code == E.corrupt_message
        assert broker.log_end_offset("p3", 0) == 0

    def test_two_batches_is_invalid_record(self, raw, broker):
        broker.create_topic("p4", 1)
        r = produce(raw(), "p4", 0, batch() + batch())
        # KafkaApis answers ProduceRequest.validateRecords' error without a message (Kafka 4.4.0 does)
        assert r.error_code == E.invalid_record and r.error_message is None
        assert broker.log_end_offset("p4", 0) == 0

    def test_message_too_large_per_topic_config(self, raw, broker):
        broker.create_topic("p5", 1, configs={"max.message.bytes": "100"})
        r = produce(raw(), "p5", 0, batch(10))
        assert r.error_code == E.message_too_large
        assert produce(raw(), "p5", 0, batch(1)).error_code == 0

    def test_unknown_topic_and_partition(self, raw, broker):
        broker.create_topic("p6", 1)
        c = raw()
        assert produce(c, "nope", 0, batch()).error_code == E.unknown_topic_or_partition
        assert produce(c, "p6", 3, batch()).error_code == E.unknown_topic_or_partition

    def test_zstd_below_v7_unsupported(self, raw, broker):
        broker.create_topic("p7", 1)
        b = build_batch([(None, None, [])], attributes=4, payload=b"\x28\xb5\x2f\xfd")
        assert produce(raw(), "p7", 0, b, version=6).error_code == E.unsupported_compression_type

    def test_log_append_time_topic(self, raw, broker):
        broker.create_topic("p8", 1, configs={"message.timestamp.type": "LogAppendTime"})
        r = produce(raw(), "p8", 0, batch())
        assert r.error_code == 0 and r.log_append_time is not None
        h = parse_header(broker.partition_records("p8", 0)[0])
        assert h.attributes & 0x08 and h.max_timestamp > 1000


class TestIdempotence:
    def pid(self, c):
        r = c.request(22, 4, {"transactional_id": None, "transaction_timeout": 60000,
                              "producer_id": -1, "producer_epoch": -1})
        assert r.error_code == 0 and r.producer_epoch == 0
        return r.producer_id

    def test_retry_acknowledged_with_original_offset_not_appended_twice(self, raw, broker):
        broker.create_topic("i1", 1)
        c = raw()
        pid = self.pid(c)
        b0 = batch(2, producer_id=pid, producer_epoch=0, base_sequence=0)
        b1 = batch(2, producer_id=pid, producer_epoch=0, base_sequence=2)
        assert produce(c, "i1", 0, b0).base_offset == 0
        assert produce(c, "i1", 0, b1).base_offset == 2
        again = produce(c, "i1", 0, b0)
        assert (again.error_code, again.base_offset) == (0, 0)
        assert broker.log_end_offset("i1", 0) == 4

    def test_gap_and_old_epoch(self, raw, broker):
        broker.create_topic("i2", 1)
        c = raw()
        pid = self.pid(c)
        assert produce(c, "i2", 0, batch(2, producer_id=pid, producer_epoch=1, base_sequence=0)).error_code == 0
        gap = produce(c, "i2", 0, batch(2, producer_id=pid, producer_epoch=1, base_sequence=5))
        assert gap.error_code == E.out_of_order_sequence_number
        old = produce(c, "i2", 0, batch(2, producer_id=pid, producer_epoch=0, base_sequence=2))
        assert old.error_code == E.invalid_producer_epoch
        assert broker.log_end_offset("i2", 0) == 2

    def test_transactional_id_served_by_the_coordinator(self, raw):
        r = raw().request(22, 4, {"transactional_id": "tx", "transaction_timeout": 60000,
                                  "producer_id": -1, "producer_epoch": -1})
        assert r.error_code == E.none and r.producer_id >= 0 and r.producer_epoch == 0


class TestListOffsets:
    def test_earliest_latest_timestamp_max(self, raw, broker):
        broker.create_topic("lo", 1)
        c = raw()
        produce(c, "lo", 0, build_batch([(b"a", b"1", [])] * 2, base_timestamp=100))
        produce(c, "lo", 0, build_batch([(b"b", b"2", [])], base_timestamp=500))
        produce(c, "lo", 0, build_batch([(b"c", b"3", [])], base_timestamp=300))

        def lookup(ts, version=7):
            r = c.request(2, version, {"replica_id": -1, "isolation_level": 0, "topics": [
                {"name": "lo", "partitions": [{"partition_index": 0, "timestamp": ts}]}]})
            p = r.topics[0].partitions[0]
            return p.error_code, p.offset, p.timestamp

        assert lookup(-2) == (0, 0, -1)
        assert lookup(-1) == (0, 4, -1)
        assert lookup(200) == (0, 2, 500)
        assert lookup(501) == (0, -1, -1)
        assert lookup(-3) == (0, 2, 500)
        assert lookup(-4, version=8) == (0, 0, -1)
        for v in range(1, 12):
            assert lookup(-1, version=v)[:2] == (0, 4)


class TestTopicsAdmin:
    def test_create_errors_and_validate_only(self, raw, broker):
        c = raw()

        def create(name, n=1, rf=1, configs=(), validate=False, version=7):
            r = c.request(19, version, {"topics": [{"name": name, "num_partitions": n, "replication_factor": rf,
                                                    "assignments": [], "configs": list(configs)}],
                                        "timeout": 1000, "validate_only": validate})
            return r.topics[0]

        t = create("ct-1", 2)
        assert t.error_code == 0 and t.num_partitions == 2 and t.topic_id != uuid.UUID(int=0)
        assert {cf.name for cf in t.configs} >= {"retention.ms", "max.message.bytes"}
        assert create("ct-1").error_code == E.topic_already_exists
        assert create("bad name").error_code == E.invalid_topic_exception
        assert create("ct-2", n=0).error_code == E.invalid_partitions
        assert create("ct-3", rf=2).error_code == E.invalid_replication_factor
        assert create("ct-4", configs=[{"name": "retention.msx", "value": "1"}]).error_code == E.invalid_config
        assert create("ct-5", configs=[{"name": "retention.ms", "value": "x"}]).error_code == E.invalid_config
        assert create("ct-6", validate=True).error_code == 0
        assert create("ct-6", n=-1, rf=-1).num_partitions == 3  # num.partitions default
        for v in range(2, 8):
            assert create(f"ct-v{v}", version=v).error_code == 0

    def test_delete(self, raw, broker):
        broker.create_topic("dt-1", 1)
        c = raw()
        r = c.request(20, 5, {"topic_names": ["dt-1", "dt-missing"], "timeout": 1000})
        assert [(x.name, x.error_code) for x in r.responses] == [("dt-1", 0), ("dt-missing", E.unknown_topic_or_partition)]
        r = c.request(3, 12, {"topics": [{"name": "dt-1"}], "allow_auto_topic_creation": False})
        assert r.topics[0].error_code == E.unknown_topic_or_partition
        broker.create_topic("dt-2", 1)
        tid = c.request(3, 12, {"topics": [{"name": "dt-2"}]}).topics[0].topic_id
        r = c.request(20, 6, {"topics": [{"name": None, "topic_id": tid}], "timeout": 1000})
        assert (r.responses[0].name, r.responses[0].error_code) == ("dt-2", 0)

    def test_describe_configs(self, raw, broker):
        broker.create_topic("dc-1", 1, configs={"retention.ms": "1234"})
        c = raw()
        r = c.request(32, 4, {"resources": [
            {"resource_type": 2, "resource_name": "dc-1", "configuration_keys": None},
            {"resource_type": 2, "resource_name": "nope", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "0", "configuration_keys": ["num.partitions"]},
        ], "include_synonyms": True, "include_documentation": False})
        topic, missing, brk = r.results
        cfg = {e.name: e for e in topic.configs}
        assert cfg["retention.ms"].value == "1234" and cfg["retention.ms"].config_source == 1
        assert cfg["max.message.bytes"].value == "1048588" and cfg["max.message.bytes"].config_source == 5
        assert missing.error_code == E.unknown_topic_or_partition
        assert [(e.name, e.value, e.config_source) for e in brk.configs] == [("num.partitions", "3", 4)]

    def test_describe_cluster(self, raw, broker):
        r = raw().request(60, 1, {"include_cluster_authorized_operations": False, "endpoint_type": 1})
        assert r.error_code == 0 and r.cluster_id == "mockbroker-cluster-0001"
        assert [b.broker_id for b in r.brokers] == [0] and r.controller_id == 0
        # AuthHelper.computeDescribeClusterResponse: a broker asked for controllers, an unknown type
        r = raw().request(60, 1, {"include_cluster_authorized_operations": False, "endpoint_type": 2})
        assert r.error_code == E.mismatched_endpoint_type and r.brokers == () and r.controller_id == -1
        r = raw().request(60, 1, {"include_cluster_authorized_operations": False, "endpoint_type": 7})
        assert r.error_code == E.unsupported_endpoint_type and r.error_message == "Unsupported endpoint type 7"
        r = raw().request(60, 0, {"include_cluster_authorized_operations": False})
        assert r.error_code == 0 and r.controller_id == 0


class TestCoordinatorStubs:
    def test_find_coordinator_every_version(self, raw, broker):
        c = raw()
        for v in range(0, 4):
            r = c.request(10, v, {"key": "g1", "key_type": 0})
            assert r.error_code == 0 and r.node_id == 0
        for v in (4, 5, 6):
            r = c.request(10, v, {"key_type": 0, "coordinator_keys": ["g1", "g2"]})
            assert [(x.key, x.error_code, x.node_id) for x in r.coordinators] == [("g1", 0, 0), ("g2", 0, 0)]

    def test_offset_fetch_no_commits(self, raw, broker):
        c = raw()
        r = c.request(9, 7, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}],
                             "require_stable": True})
        assert [(p.partition_index, p.committed_offset) for p in r.topics[0].partitions] == [(0, -1), (1, -1)]
        r = c.request(9, 8, {"groups": [{"group_id": "g", "topics": None}], "require_stable": False})
        assert r.groups[0].error_code == 0 and list(r.groups[0].topics) == []


def test_every_served_api_and_version_answers_with_its_throttle_field(raw, broker):
    """A minimal request of every advertised (api, version) is answered; the
    throttle field is present exactly in the versions whose schema has it."""
    from dataclasses import fields

    from protocol.codec import response_class

    registry = broker.call(lambda b: b.registry)
    overrides = {ApiKey.PRODUCE: {"acks": 1}, ApiKey.API_VERSIONS: {"client_software_name": "t",
                                                                     "client_software_version": "1"},
                 # all zeros is UNKNOWN everywhere, which DescribeAclsRequest refuses (Kafka closes too)
                 ApiKey.DESCRIBE_ACLS: {"resource_type_filter": 1, "pattern_type_filter": 1, "operation": 1,
                                        "permission_type": 1}}
    # Create/Renew/ExpireDelegationToken over PLAINTEXT answer DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    # with Kafka's -1 timestamps, which kio's reader refuses: their error code is read from the
    # frame (after the correlation id and a flexible header's empty tagged fields)
    raw_read = {ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN}
    c = raw()
    seen = 0
    for spec in registry:
        for v in range(spec.min_version, spec.max_version + 1):
            if spec.key in raw_read:
                c.send(spec.key, v, {})
                error = struct.unpack_from(">h", c.recv_frame(), 4 + (v >= 2))[0]
                assert error == ErrorCode.delegation_token_request_not_allowed and spec.has_throttle_field(v)
                seen += 1
                continue
            resp = c.request(spec.key, v, overrides.get(spec.key, {}))
            has_field = "throttle_time" in {f.name for f in fields(response_class(spec.key, v))}
            assert has_field == spec.has_throttle_field(v)
            if has_field:
                assert timedelta_ms(resp.throttle_time) == 0
            seen += 1
    assert seen > 80


def test_controller_id_is_a_live_broker_after_a_stop():
    """Metadata and DescribeCluster name a controller that is in the broker list they return: after
    broker 0 stops, it is no longer 0 (the lowest live id, as clients need one they can reach)."""
    with MockBroker(config={"mock.num.brokers": 3}) as b:
        addrs = b.bootstrap_servers.split(",")
        with RawKafkaClient.connect(addrs[1]) as c:
            before = c.request(3, 12, {"topics": None})
            assert before.controller_id == 0
            b.stop_broker(0)
            for version in (1, 12):
                m = c.request(3, version, {"topics": None})
                assert {x.node_id for x in m.brokers} == {1, 2}
                assert m.controller_id == 1
            d = c.request(60, 0, {"include_cluster_authorized_operations": False})
            assert {x.broker_id for x in d.brokers} == {1, 2}
            assert d.controller_id == 1
            b.start_broker(0)
            assert c.request(3, 12, {"topics": None}).controller_id == 0
