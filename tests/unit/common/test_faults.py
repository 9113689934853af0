"""Fault and latency injection (mockbroker/common/faults.py, the dispatcher's rule handling) over real
sockets, with the clock driven by the test where time matters."""

from __future__ import annotations

import pytest

from mockbroker import ManualClock, MockBroker
from mockbroker.control import InvalidArgument, NotFound
from mockbroker.common.faults import FaultRuleError, parse_rule, request_partitions
from protocol.client import RawKafkaClient
from protocol.codec import build_request
from protocol.errors import ErrorCode
from protocol.records import build_batch

from ..purgatory.test_delayed_ops import answered, fetch_body, produce_body

E = ErrorCode


def produce_two(topic, v=10, acks=1):
    return {"acks": acks, "timeout": 5000, "topic_data": [{"name": topic, "partition_data": [
        {"index": i, "records": build_batch([(b"k", b"v%d" % i, [])], base_timestamp=1)} for i in (0, 1)]}]}


@pytest.fixture
def mb():
    with MockBroker(config={"num.partitions": 2, "mock.num.brokers": 2, "default.replication.factor": 1},
                    clock=ManualClock()) as b:
        yield b


def leader_addr(b, topic, p=0):
    return b.bootstrap_servers.split(",")[b.partition_state(topic, p)["leader"]]


class TestParsing:
    @pytest.mark.parametrize("spec,field", [
        ({"api": "Produc", "errors": ["NONE"]}, "api"),
        ({"api": "Produce", "errors": ["NOT_A_CODE"]}, "errors"),
        ({"api": "Produce", "errors": ["NONE"]}, "errors"),
        ({"api": "Produce", "errors": []}, "errors"),
        ({"errors": ["UNKNOWN_SERVER_ERROR"]}, "api"),
        ({"api": "Fetch", "action": "explode"}, "action"),
        ({"api": "Fetch", "action": "delay"}, "delay_ms"),
        ({"api": "Fetch", "action": "hold", "after": True}, "after"),
        ({"api": "Fetch", "action": "drop", "partition": 1}, "partition"),
        ({"api": "Fetch", "action": "drop", "min_version": 9, "max_version": 3}, "max_version"),
        ({"api": "Fetch", "action": "drop", "count": 0}, "count"),
        ({"api": "Fetch", "action": "drop", "wat": 1}, "wat"),
        ({"api": "Fetch", "action": "hold", "errors": ["NOT_LEADER_OR_FOLLOWER"]}, "errors"),
    ])
    def test_wrong_rules_name_the_field(self, spec, field):
        with pytest.raises(FaultRuleError) as e:
            parse_rule(spec, 1)
        assert e.value.field == field

    def test_names_numbers_and_defaults(self):
        r = parse_rule({"api": "find_coordinator", "errors": [15, "coordinator_not_available",
                                                               {"error": "NOT_COORDINATOR", "delay_ms": 30}]}, 1)
        assert r.match.api_key == 10 and r.action == "error" and r.count == 3
        assert [(e.error, e.delay_ms) for e in r.errors] == [(E.coordinator_not_available, 0),
                                                             (E.coordinator_not_available, 0), (E.not_coordinator, 30)]
        assert parse_rule({"api": 0, "action": "close", "after": True}, 2).count == 1
        assert parse_rule({"api": "Fetch", "action": "hold", "count": None}, 3).count is None
        assert (parse_rule({"api": "Fetch", "action": "drop", "versions": "4-11"}, 4).match.max_version) == 11

    def test_request_partitions_of_several_apis(self):
        br = build_request
        produce = br(0, 9, produce_two("t"))
        assert request_partitions(produce) == [("t", 0), ("t", 1)]
        fetch = br(1, 12, fetch_body("f", 0, partition=3))
        assert request_partitions(fetch) == [("f", 3)]
        meta = br(3, 12, {"topics": [{"name": "m"}]})
        assert request_partitions(meta) == [("m", None)]
        commit = br(8, 8, {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
                           "topics": [{"name": "c", "partitions": [{"partition_index": 2, "committed_offset": 1}]}]})
        assert request_partitions(commit) == [("c", 2)]


class TestErrors:
    def test_produce_error_stack_carries_current_leader_and_appends_nothing(self, mb):
        mb.create_topic("pe", 1, 1)
        rule = mb.inject(api="Produce", errors=["NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_OR_FOLLOWER"])
        leader = mb.partition_state("pe", 0)["leader"]
        with RawKafkaClient.connect(leader_addr(mb, "pe")) as c:
            for _ in range(2):
                r = c.request(0, 11, produce_body("pe", acks=1)).responses[0].partition_responses[0]
                assert r.error_code == E.not_leader_or_follower
                assert (r.current_leader.leader_id, r.current_leader.leader_epoch) == (leader, 0)
            assert mb.log_end_offset("pe", 0) == 0
            ok = c.request(0, 11, produce_body("pe", acks=1)).responses[0].partition_responses[0]
            assert (ok.error_code, ok.base_offset) == (E.none, 0)
        rules = {r["id"]: r for r in mb.faults()}
        assert rules[rule["id"]]["fired"] == 2 and rules[rule["id"]]["count"] == 0

    def test_partition_rule_errors_only_that_partition(self):
        with MockBroker(config={}, clock=ManualClock()) as b:
            b.create_topic("pp", 2, 1)
            b.inject(api="Produce", topic="pp", partition=1, errors=["KAFKA_STORAGE_ERROR"])
            with RawKafkaClient.connect(b.bootstrap_servers) as c:
                parts = c.request(0, 9, produce_two("pp")).responses[0].partition_responses
                assert [(p.index, p.error_code) for p in parts] == [(0, E.none), (1, E.kafka_storage_error)]
            assert (b.log_end_offset("pp", 0), b.log_end_offset("pp", 1)) == (1, 0)

    def test_fetch_partition_error_answers_at_once_with_the_leader(self, mb):
        mb.create_topic("fe", 1, 1)
        mb.inject(api="Fetch", errors=["NOT_LEADER_OR_FOLLOWER"], count=2)
        tid = mb.call(lambda cl: cl.metadata.topics["fe"].topic_id)
        body = fetch_body("fe", 0, max_wait_ms=60_000)
        body["topics"][0]["topic_id"] = tid
        with RawKafkaClient.connect(leader_addr(mb, "fe")) as c:
            # the current leader comes from v16 (KafkaApis' processResponseCallback, KIP-951)
            r = c.request(1, 16, body).responses[0].partitions[0]
            assert r.error_code == E.not_leader_or_follower
            assert r.current_leader.leader_id == mb.partition_state("fe", 0)["leader"]
            r = c.request(1, 12, fetch_body("fe", 0, max_wait_ms=60_000)).responses[0].partitions[0]
            assert (r.error_code, r.current_leader.leader_id) == (E.not_leader_or_follower, -1)

    def test_metadata_topic_error_keeps_brokers_and_other_topics(self, mb):
        mb.create_topic("ma", 1, 1)
        mb.create_topic("mb", 1, 1)
        mb.inject(api="Metadata", topic="ma", errors=["LEADER_NOT_AVAILABLE"])
        with RawKafkaClient.connect(mb.bootstrap_servers.split(",")[0]) as c:
            m = c.request(3, 12, {"topics": [{"name": "ma"}, {"name": "mb"}]})
            assert len(m.brokers) == 2
            by_name = {t.name: t for t in m.topics}
            assert by_name["ma"].error_code == E.leader_not_available and not by_name["ma"].partitions
            assert by_name["mb"].error_code == E.none and len(by_name["mb"].partitions) == 1

    def test_top_level_error_and_throttle_field_stay_right(self):
        with MockBroker(config={"mock.quotas": "clients/slow:request_rate=0.1"}, clock=ManualClock()) as b:
            b.inject(api="Heartbeat", errors=["REBALANCE_IN_PROGRESS"], count=None)
            with RawKafkaClient.connect(b.bootstrap_servers, client_id="slow") as c:
                body = {"group_id": "g", "generation_id": 1, "member_id": "m"}
                r1 = c.request(12, 4, body)
                assert r1.error_code == E.rebalance_in_progress
                b.advance(10)
                r2 = c.request(12, 4, body)  # over 0.1 request/s: the quota throttles the injected answer too
                assert r2.error_code == E.rebalance_in_progress and r2.throttle_time.total_seconds() > 0

    def test_join_group_error_has_no_generation(self, mb):
        mb.inject(api="JoinGroup", errors=["COORDINATOR_LOAD_IN_PROGRESS"])
        with RawKafkaClient.connect(mb.bootstrap_servers.split(",")[0]) as c:
            r = c.request(11, 9, {"group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 10_000,
                                  "member_id": "", "protocol_type": "consumer",
                                  "protocols": [{"name": "range", "metadata": b""}]})
            assert (r.error_code, r.generation_id, r.member_id) == (E.coordinator_load_in_progress, -1, "")

    def test_find_coordinator_batched_error(self, mb):
        mb.inject(api="FindCoordinator", errors=["COORDINATOR_NOT_AVAILABLE"])
        with RawKafkaClient.connect(mb.bootstrap_servers.split(",")[0]) as c:
            r = c.request(10, 4, {"key_type": 0, "coordinator_keys": ["a", "b"]})
            assert [(x.key, x.error_code, x.node_id) for x in r.coordinators] == [
                ("a", E.coordinator_not_available, -1), ("b", E.coordinator_not_available, -1)]
            assert c.request(10, 4, {"key_type": 0, "coordinator_keys": ["a"]}).coordinators[0].error_code == E.none

    def test_per_entry_delay(self, mb):
        mb.create_topic("ed", 1, 1)
        mb.inject(api="Produce", errors=[{"error": "NOT_ENOUGH_REPLICAS", "delay_ms": 300}])
        with RawKafkaClient.connect(leader_addr(mb, "ed")) as c:
            corr = c.send(0, 9, produce_body("ed", acks=1))
            assert not answered(c)
            mb.advance(299)
            assert not answered(c)
            mb.advance(1)
            r = c.response(0, 9, corr).responses[0].partition_responses[0]
            assert r.error_code == E.not_enough_replicas


class TestActions:
    def test_delay_on_one_broker_only(self, mb):
        mb.create_topic("dl", 1, 1)
        leader = mb.partition_state("dl", 0)["leader"]
        other = 1 - leader
        mb.inject(action="delay", delay_ms=200, broker=leader, count=None)
        addrs = mb.bootstrap_servers.split(",")
        with RawKafkaClient.connect(addrs[leader]) as slow, RawKafkaClient.connect(addrs[other]) as fast:
            corr = slow.send(0, 9, produce_body("dl", acks=1))
            assert fast.request(3, 12, {"topics": None}).brokers  # the other broker answers at once
            assert not answered(slow)
            mb.advance(200)
            assert slow.response(0, 9, corr).responses[0].partition_responses[0].error_code == E.none

    def test_hold_until_released_keeps_the_connection_waiting(self, mb):
        mb.create_topic("ho", 1, 1)
        rule = mb.inject(api="Produce", action="hold")
        with RawKafkaClient.connect(leader_addr(mb, "ho")) as c:
            c1 = c.send(0, 9, produce_body("ho", acks=1))
            c2 = c.send(3, 12, {"topics": None})  # pipelined behind it: answered in order, after it
            assert not answered(c)
            assert mb.held() == [{"rule": rule["id"], "connection": mb.connections(client_id="raw-client")[0]["id"],
                                  "api": "PRODUCE", "correlation_id": c1}]
            assert mb.log_end_offset("ho", 0) == 0  # not handled yet
            assert mb.release() == 1
            assert c.response(0, 9, c1).responses[0].partition_responses[0].error_code == E.none
            assert c.response(3, 12, c2).brokers
        assert mb.log_end_offset("ho", 0) == 1

    def test_drop_before_never_answers_and_takes_no_effect(self, mb):
        mb.create_topic("dr", 1, 1)
        mb.inject(api="Produce", action="drop")
        with RawKafkaClient.connect(leader_addr(mb, "dr")) as c, \
                RawKafkaClient.connect(leader_addr(mb, "dr")) as other:
            c.send(0, 9, produce_body("dr", acks=1))
            assert not answered(c, 0.3)
            assert not c.is_closed_by_peer(0.1)
            assert other.request(0, 9, produce_body("dr", acks=1)).responses[0].partition_responses[0].base_offset == 0
        assert mb.log_end_offset("dr", 0) == 1
        journal = mb.journal(api_key="Produce")
        assert [r["outcome"] for r in journal] == ["dropped", "response"] and journal[0]["fault_rule"] is not None

    def test_close_before_and_after(self, mb):
        mb.create_topic("cl", 1, 1)
        mb.inject(api="Produce", action="close")
        with RawKafkaClient.connect(leader_addr(mb, "cl")) as c:
            c.send(0, 9, produce_body("cl", acks=1))
            assert c.is_closed_by_peer()
        assert mb.log_end_offset("cl", 0) == 0
        mb.lose_response(0, "close")  # after: appended, then closed
        with RawKafkaClient.connect(leader_addr(mb, "cl")) as c:
            c.send(0, 9, produce_body("cl", acks=1))
            assert c.is_closed_by_peer()
        assert mb.log_end_offset("cl", 0) == 1

    def test_match_by_version_and_client_id(self, mb):
        mb.inject(api="Metadata", versions="9-12", client_id="target", errors=["UNKNOWN_SERVER_ERROR"], count=None)
        mb.create_topic("mv", 1, 1)
        addr = mb.bootstrap_servers.split(",")[0]
        body = {"topics": [{"name": "mv"}]}
        with RawKafkaClient.connect(addr, client_id="target") as t, RawKafkaClient.connect(addr, client_id="x") as x:
            assert t.request(3, 12, body).topics[0].error_code == E.unknown_server_error
            assert t.request(3, 8, body).topics[0].error_code == E.none  # below the range
            assert x.request(3, 12, body).topics[0].error_code == E.none  # another client
            assert t.request(3, 12, body).topics[0].error_code == E.unknown_server_error  # persistent
        assert mb.faults()[0]["fired"] == 2


class TestControl:
    def test_rules_listed_removed_cleared(self, mb):
        a = mb.inject(api="Fetch", action="drop")
        b = mb.inject(api="Produce", errors=["NOT_LEADER_OR_FOLLOWER"])
        assert [r["id"] for r in mb.faults()] == [a["id"], b["id"]]
        mb.remove_fault(a["id"])
        assert [r["id"] for r in mb.faults()] == [b["id"]]
        with pytest.raises(NotFound):
            mb.remove_fault(a["id"])
        mb.clear_faults()
        assert mb.faults() == []

    def test_unknown_broker_and_bad_rule(self, mb):
        with pytest.raises(NotFound) as e:
            mb.inject(api="Fetch", action="drop", broker=7)
        assert e.value.field == "broker"
        with pytest.raises(InvalidArgument) as e:
            mb.inject(api="Fetch", action="delay")
        assert e.value.field == "delay_ms"

    def test_rules_from_configuration(self):
        rules = [{"api": "ApiVersions", "errors": ["UNKNOWN_SERVER_ERROR"]}]
        with MockBroker(config={"mock.faults": rules}) as b:
            with RawKafkaClient.connect(b.bootstrap_servers) as c:
                assert c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code \
                    == E.unknown_server_error
                assert c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code \
                    == E.none
            assert b.faults()[0]["fired"] == 1


def test_a_partition_rule_matches_an_incremental_fetch_of_its_session(mb):
    """An incremental Fetch names no partition it has no news for, but is served its whole session:
    a rule naming one of the session's partitions applies to it."""
    mb.create_topic("fs", 1, 1)
    body = fetch_body("fs", 0, max_wait_ms=0)
    with RawKafkaClient.connect(leader_addr(mb, "fs")) as c:
        full = c.request(1, 12, {**body, "session_id": 0, "session_epoch": 0})
        assert full.session_id != 0
        mb.inject(api="Fetch", topic="fs", partition=0, errors=["NOT_LEADER_OR_FOLLOWER"])
        incremental = c.request(1, 12, {**body, "session_id": full.session_id, "session_epoch": 1, "topics": []})
        parts = [(t.topic, p.partition_index, p.error_code) for t in incremental.responses for p in t.partitions]
        assert parts == [("fs", 0, E.not_leader_or_follower)]
    assert mb.faults()[0]["fired"] == 1


def test_the_journal_records_a_per_item_error(mb):
    """FindCoordinator v4+ has no top-level error code: the journal takes the coordinators' one."""
    mb.inject(api="FindCoordinator", errors=["COORDINATOR_NOT_AVAILABLE"])
    with RawKafkaClient.connect(mb.bootstrap_servers.split(",")[0], client_id="fc") as c:
        c.request(10, 4, {"key_type": 0, "coordinator_keys": ["g"]})
        c.request(10, 4, {"key_type": 0, "coordinator_keys": ["g"]})
    assert [r["error_code"] for r in mb.journal(api_key="FindCoordinator", client_id="fc")] == [15, 0]


def test_refused_rules_take_no_id(mb):
    """Rule ids count the accepted rules: one refused by parsing, by its broker or by its API uses none up."""
    with pytest.raises(InvalidArgument):
        mb.inject(api="Produce", errors=["NOT_A_CODE"])
    with pytest.raises(NotFound):
        mb.inject(action="delay", delay_ms=5, broker=7)
    with pytest.raises(InvalidArgument):
        mb.inject(api="InitializeShareGroupState", errors=["UNKNOWN_SERVER_ERROR"])  # not served
    assert mb.inject(api="Metadata", action="delay", delay_ms=5)["id"] == 1
    with pytest.raises(NotFound):
        mb.inject(action="delay", delay_ms=5, broker=7)
    assert mb.inject(api="Fetch", action="hold")["id"] == 2
    assert [r["id"] for r in mb.faults()] == [1, 2]
