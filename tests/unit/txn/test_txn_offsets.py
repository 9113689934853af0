"""AddOffsetsToTxn and TxnOffsetCommit over a real socket: the consume-transform-produce half of
a transaction.  Offsets committed in a transaction wait for its marker (COMMIT commits them, ABORT
drops them), OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT meanwhile, and the
checks Kafka makes (KIP-447 member/generation, KIP-890 verification) answer as Kafka's do."""

from __future__ import annotations

import pytest

from mockbroker import MockBroker
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from .test_txn_wire import add_partitions, end_txn, init_pid, txn_state

E = ErrorCode


def add_offsets(c, tid, pid, epoch, group, version=3):
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": group}
    return c.request(ApiKey.ADD_OFFSETS_TO_TXN, version, body).error_code


def txn_commit(c, tid, pid, epoch, group, offsets, version=3, member="", generation=-1):
    """TxnOffsetCommit: {(topic, partition): error} for ``offsets`` {(topic, partition): offset}."""
    topics: dict[str, list] = {}
    for (t, p), off in offsets.items():
        topics.setdefault(t, []).append({"partition_index": p, "committed_offset": off,
                                         "committed_leader_epoch": -1, "committed_metadata": "m"})
    body = {"transactional_id": tid, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
            "generation_id": generation, "member_id": member, "group_instance_id": None,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
    r = c.request(ApiKey.TXN_OFFSET_COMMIT, version, body)
    return {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}


def fetch(c, group, partitions, require_stable, version=7):
    """OffsetFetch v7: {(topic, partition): (error, offset)}."""
    topics: dict[str, list[int]] = {}
    for t, p in partitions:
        topics.setdefault(t, []).append(p)
    body = {"group_id": group, "require_stable": require_stable,
            "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}
    r = c.request(ApiKey.OFFSET_FETCH, version, body)
    assert r.error_code == E.none
    return {(t.name, p.partition_index): (p.error_code, p.committed_offset) for t in r.topics for p in t.partitions}


def offsets_partition(b, group):
    return ("__consumer_offsets", b.call(lambda cl: cl.groups.registry.partition_for(group)))


class TestAddOffsetsToTxn:
    def test_the_groups_offsets_partition_joins_the_transaction(self, raw, broker):
        c = raw()
        _, pid, epoch = init_pid(c, "ao-1")
        for v in range(5):
            assert add_offsets(c, "ao-1", pid, epoch, "ao-group", v) == E.none
        assert txn_state(broker, "ao-1") == ("Ongoing", [offsets_partition(broker, "ao-group")])

    def test_errors_as_add_partitions(self, raw, broker):
        c = raw()
        _, pid, epoch = init_pid(c, "ao-2")
        assert add_offsets(c, "ao-2", pid + 1, epoch, "g") == E.invalid_producer_id_mapping
        assert add_offsets(c, "ao-2", pid, epoch + 1, "g", version=2) == E.producer_fenced
        assert add_offsets(c, "ao-2", pid, epoch + 1, "g", version=1) == E.invalid_producer_epoch  # KIP-588
        assert add_offsets(c, "ao-unknown", pid, epoch, "g") == E.invalid_producer_id_mapping
        assert add_offsets(c, "", pid, epoch, "g") == E.invalid_request


class TestTxnOffsetCommit:
    def test_commit_marker_commits_the_offsets_abort_drops_them(self, raw, broker):
        broker.create_topic("to-in", 2)
        c = raw()
        _, pid, epoch = init_pid(c, "to-1")
        tps = {("to-in", 0): 5, ("to-in", 1): 7}
        assert add_offsets(c, "to-1", pid, epoch, "to-g") == E.none
        assert txn_commit(c, "to-1", pid, epoch, "to-g", tps) == dict.fromkeys(tps, E.none)
        # pending: require_stable waits, a plain read sees nothing committed yet
        assert fetch(c, "to-g", tps, True) == dict.fromkeys(tps, (E.unstable_offset_commit, -1))
        assert fetch(c, "to-g", tps, False) == dict.fromkeys(tps, (E.none, -1))
        assert broker.group("to-g")["pending_transactional_offsets"] == [
            {"producer_id": pid, "topic": "to-in", "partition": p, "offset": off} for (_t, p), off in tps.items()]
        assert [(t["transactional_id"], t["state"], t["producer_id"]) for t in broker.transactions()
                if t["transactional_id"] == "to-1"] == [("to-1", "Ongoing", pid)]
        assert end_txn(c, "to-1", pid, epoch, True) == E.none
        assert fetch(c, "to-g", tps, True) == {tp: (E.none, off) for tp, off in tps.items()}
        assert broker.group("to-g")["pending_transactional_offsets"] == []
        # the next transaction aborts: the committed offsets stay as they were
        assert add_offsets(c, "to-1", pid, epoch, "to-g") == E.none
        assert txn_commit(c, "to-1", pid, epoch, "to-g", {("to-in", 0): 50}) == {("to-in", 0): E.none}
        assert fetch(c, "to-g", tps, True)[("to-in", 0)] == (E.unstable_offset_commit, -1)
        assert end_txn(c, "to-1", pid, epoch, False) == E.none
        assert fetch(c, "to-g", tps, True) == {tp: (E.none, off) for tp, off in tps.items()}
        assert txn_state(broker, "to-1") == ("CompleteAbort", [])

    def test_offsets_and_records_commit_together(self, raw, broker):
        """Consume-transform-produce: the output partition and the offsets partition share the marker."""
        broker.create_topic("ctp-in", 1)
        broker.create_topic("ctp-out", 1)
        c = raw()
        _, pid, epoch = init_pid(c, "ctp-1")
        assert add_partitions(c, "ctp-1", pid, epoch, {"ctp-out": [0]}) == {("ctp-out", 0): E.none}
        assert add_offsets(c, "ctp-1", pid, epoch, "ctp-g") == E.none
        assert txn_state(broker, "ctp-1")[1] == sorted([("ctp-out", 0), offsets_partition(broker, "ctp-g")])
        assert txn_commit(c, "ctp-1", pid, epoch, "ctp-g", {("ctp-in", 0): 3}) == {("ctp-in", 0): E.none}
        assert end_txn(c, "ctp-1", pid, epoch, True) == E.none
        assert fetch(c, "ctp-g", [("ctp-in", 0)], True) == {("ctp-in", 0): (E.none, 3)}

    def test_a_later_plain_commit_wins_over_the_transactional_one(self, raw, broker):
        """replayEndTransactionMarker keeps the most recently written commit of a partition."""
        broker.create_topic("lw-in", 1)
        c = raw()
        _, pid, epoch = init_pid(c, "lw-1")
        assert add_offsets(c, "lw-1", pid, epoch, "lw-g") == E.none
        assert txn_commit(c, "lw-1", pid, epoch, "lw-g", {("lw-in", 0): 10}) == {("lw-in", 0): E.none}
        r = c.request(ApiKey.OFFSET_COMMIT, 8, {
            "group_id": "lw-g", "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": "lw-in", "partitions": [
                {"partition_index": 0, "committed_offset": 20, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]})
        assert r.topics[0].partitions[0].error_code == E.none
        assert end_txn(c, "lw-1", pid, epoch, True) == E.none
        assert fetch(c, "lw-g", [("lw-in", 0)], True) == {("lw-in", 0): (E.none, 20)}

    def test_verification_needs_add_offsets_first(self, raw, broker):
        """KIP-890 part 1: the offsets partition must be in the transaction."""
        broker.create_topic("vf-in", 1)
        c = raw()
        _, pid, epoch = init_pid(c, "vf-1")
        tp = {("vf-in", 0): 1}
        assert txn_commit(c, "vf-1", pid, epoch, "vf-g", tp, version=4) == {("vf-in", 0): E.transaction_abortable}
        assert txn_commit(c, "vf-1", pid, epoch, "vf-g", tp, version=3) == {("vf-in", 0): E.invalid_txn_state}
        assert add_offsets(c, "vf-1", pid, epoch, "vf-g") == E.none
        assert txn_commit(c, "vf-1", pid, epoch, "vf-g", tp, version=3, generation=-1) == {("vf-in", 0): E.none}
        assert txn_commit(c, "vf-1", pid, epoch + 1, "vf-g", tp) == {("vf-in", 0): E.invalid_producer_epoch}
        assert txn_commit(c, "vf-other", pid, epoch, "vf-g", tp) == {("vf-in", 0): E.invalid_producer_id_mapping}

    def test_v5_adds_the_offsets_partition_itself(self, raw, broker):
        """KIP-890 part 2: a transaction version 2 client sends no AddOffsetsToTxn; TxnOffsetCommit
        v5 adds the group's offsets partition (verifyOnly=false), v4 only verifies."""
        broker.create_topic("v5-in", 1)
        c = raw()
        _, pid, epoch = init_pid(c, "v5-1")
        tp = {("v5-in", 0): 6}
        assert txn_commit(c, "v5-1", pid, epoch, "v5-g", tp, version=4) == {("v5-in", 0): E.transaction_abortable}
        assert txn_commit(c, "v5-1", pid, epoch, "v5-g", tp, version=5) == {("v5-in", 0): E.none}
        assert txn_state(broker, "v5-1") == ("Ongoing", [offsets_partition(broker, "v5-g")])
        r = c.request(ApiKey.END_TXN, 5, {"transactional_id": "v5-1", "producer_id": pid, "producer_epoch": epoch,
                                          "committed": True})
        assert (r.error_code, r.producer_epoch) == (E.none, epoch + 1)  # TV2: the end bumps the epoch
        assert fetch(c, "v5-g", tp, True) == {("v5-in", 0): (E.none, 6)}

    def test_unknown_partition_and_group_errors(self, raw, broker):
        broker.create_topic("ue-in", 1)
        c = raw()
        _, pid, epoch = init_pid(c, "ue-1")
        assert add_offsets(c, "ue-1", pid, epoch, "ue-g") == E.none
        got = txn_commit(c, "ue-1", pid, epoch, "ue-g", {("ue-in", 0): 1, ("ue-in", 5): 1, ("ue-none", 0): 1})
        assert got == {("ue-in", 0): E.none, ("ue-in", 5): E.unknown_topic_or_partition,
                       ("ue-none", 0): E.unknown_topic_or_partition}
        assert txn_commit(c, "ue-1", pid, epoch, "", {("ue-in", 0): 1}) == {("ue-in", 0): E.invalid_group_id}
        # a generation for a group that does not exist (after the verification, which comes first)
        assert txn_commit(c, "ue-1", pid, epoch, "ue-nogroup", {("ue-in", 0): 1}, generation=3,
                          member="m-1") == {("ue-in", 0): E.invalid_txn_state}
        assert add_offsets(c, "ue-1", pid, epoch, "ue-nogroup") == E.none
        assert txn_commit(c, "ue-1", pid, epoch, "ue-nogroup", {("ue-in", 0): 1}, generation=3,
                          member="m-1") == {("ue-in", 0): E.illegal_generation}


def test_member_and_generation_are_checked(raw, broker):
    """KIP-447: the group metadata the producer sends is checked as OffsetCommit's, but not the
    group's state: the producer of a group in CompletingRebalance still commits."""
    from ..group.test_groups import Member

    broker.create_topic("mg-in", 1)
    m = Member(broker, "mg-g", "mg-client")
    try:
        m.join_new()
        r = m.join_response()
        assert r.error_code == E.none and m.generation >= 1
        # the leader has not synced yet: CompletingRebalance (OffsetCommit answers REBALANCE_IN_PROGRESS)
        c = raw()
        _, pid, epoch = init_pid(c, "mg-1")
        assert add_offsets(c, "mg-1", pid, epoch, "mg-g") == E.none
        tp = {("mg-in", 0): 9}
        assert txn_commit(c, "mg-1", pid, epoch, "mg-g", tp, member=m.member_id,
                          generation=m.generation) == {("mg-in", 0): E.none}
        assert txn_commit(c, "mg-1", pid, epoch, "mg-g", tp, member=m.member_id,
                          generation=m.generation + 1) == {("mg-in", 0): E.illegal_generation}
        assert txn_commit(c, "mg-1", pid, epoch, "mg-g", tp, member="nobody",
                          generation=m.generation) == {("mg-in", 0): E.unknown_member_id}
        # v0-2 producers send no group metadata: accepted although the group has a member
        assert txn_commit(c, "mg-1", pid, epoch, "mg-g", tp, version=2) == {("mg-in", 0): E.none}
        assert end_txn(c, "mg-1", pid, epoch, True) == E.none
        assert fetch(c, "mg-g", tp, True) == {("mg-in", 0): (E.none, 9)}
    finally:
        m.close()


def test_wrong_broker_and_verification_off():
    with MockBroker(config={"mock.num.brokers": 2, "transaction.partition.verification.enable": False,
                            "offsets.topic.num.partitions": 4, "offsets.topic.replication.factor": 1}) as b:
        from protocol.client import RawKafkaClient
        clients = [RawKafkaClient.connect(a) for a in b.bootstrap_servers.split(",")]
        try:
            b.create_topic("wb-in", 1)
            group = "wb-g"
            gnode = b.call(lambda cl: cl.groups.registry.coordinator_id(group))
            r = clients[0].request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["wb-1"]})
            tnode = r.coordinators[0].node_id
            _, pid, epoch = init_pid(clients[tnode], "wb-1")
            other = clients[1 - gnode]
            assert txn_commit(other, "wb-1", pid, epoch, group, {("wb-in", 0): 4}) == {("wb-in", 0): E.not_coordinator}
            # verification off: no AddOffsetsToTxn needed, the offsets still wait for a marker
            gc = clients[gnode]
            assert txn_commit(gc, "wb-1", pid, epoch, group, {("wb-in", 0): 4}) == {("wb-in", 0): E.none}
            assert fetch(gc, group, [("wb-in", 0)], True) == {("wb-in", 0): (E.unstable_offset_commit, -1)}
            assert txn_state(b, "wb-1") == ("Empty", [])  # v3 added nothing
            # v5 (transaction version 2) adds the offsets partition whatever the config says, as
            # ReplicaManager.maybeSendPartitionToTransactionCoordinator does: its COMMIT marker commits them
            assert txn_commit(gc, "wb-1", pid, epoch, group, {("wb-in", 0): 6}, version=5) == {("wb-in", 0): E.none}
            assert txn_state(b, "wb-1") == ("Ongoing", [offsets_partition(b, group)])
            r = clients[tnode].request(ApiKey.END_TXN, 5, {"transactional_id": "wb-1", "producer_id": pid,
                                                           "producer_epoch": epoch, "committed": True})
            assert r.error_code == E.none
            assert fetch(gc, group, [("wb-in", 0)], True) == {("wb-in", 0): (E.none, 6)}
        finally:
            for c in clients:
                c.close()


@pytest.fixture(scope="module")
def broker():
    with MockBroker(config={"offsets.topic.num.partitions": 4, "group.initial.rebalance.delay.ms": 0}) as b:
        yield b


def test_transactional_apis_are_charged_to_the_request_quota():
    """Every transactional API carries its throttle field and counts against request_rate: at 2
    requests/s over Kafka's padded 10 s window the 21st request of a burst is throttled, whichever
    transactional API it is, and a client honouring the throttles settles at the quota."""
    from mockbroker import ManualClock
    from protocol.client import RawKafkaClient
    from protocol.codec import timedelta_ms

    clock = ManualClock()
    with MockBroker(config={"mock.throttle.mode": "observe", "mock.quotas": "clients/txq:request_rate=2"},
                    clock=clock) as b:
        b.create_topic("tq-in", 1)
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="txq") as c:
            body = {"transactional_id": "tq-1", "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1}
            r = c.request(ApiKey.INIT_PRODUCER_ID, 4, body)
            pid, epoch = r.producer_id, r.producer_epoch
            throttles, apis = [timedelta_ms(r.throttle_time)], ["InitProducerId"]
            for i in range(12):
                for api, version, body in (
                        (ApiKey.ADD_OFFSETS_TO_TXN, 3, {"transactional_id": "tq-1", "producer_id": pid,
                                                        "producer_epoch": epoch, "group_id": "tq-g"}),
                        (ApiKey.TXN_OFFSET_COMMIT, 3, {
                            "transactional_id": "tq-1", "group_id": "tq-g", "producer_id": pid,
                            "producer_epoch": epoch, "generation_id": -1, "member_id": "",
                            "group_instance_id": None, "topics": [{"name": "tq-in", "partitions": [
                                {"partition_index": 0, "committed_offset": i, "committed_leader_epoch": -1,
                                 "committed_metadata": ""}]}]}),
                        (ApiKey.END_TXN, 3, {"transactional_id": "tq-1", "producer_id": pid,
                                             "producer_epoch": epoch, "committed": True})):
                    r = c.request(api, version, body)
                    assert r.error_code == E.none if hasattr(r, "error_code") else \
                        r.topics[0].partitions[0].error_code == E.none
                    throttles.append(timedelta_ms(r.throttle_time))
                    apis.append(api.name)
                    b.advance(throttles[-1])  # a client that honours every throttle
            assert throttles[:20] == [0] * 20 and throttles[20] > 0, list(zip(apis, throttles))
            assert {apis[i] for i, t in enumerate(throttles) if t > 0} == {
                "ADD_OFFSETS_TO_TXN", "TXN_OFFSET_COMMIT", "END_TXN"}
            assert max(throttles) <= 1000  # capped at one quota window


def test_pending_offsets_outlive_retention_and_go_with_their_group():
    """A partition with a transactional offset waiting for its marker does not expire, nor does its
    group (OffsetMetadataManager.cleanupExpiredOffsets); DeleteGroups drops the pending offsets with
    the group (deleteAllOffsets)."""
    from mockbroker import ManualClock
    from protocol.client import RawKafkaClient

    with MockBroker(config={"offsets.retention.minutes": 1, "offsets.topic.num.partitions": 1},
                    clock=ManualClock()) as b:
        b.create_topic("ret-in", 1)
        tp = {("ret-in", 0): 7}
        with RawKafkaClient.connect(b.bootstrap_servers) as c:
            r = c.request(ApiKey.OFFSET_COMMIT, 8, {
                "group_id": "ret-g", "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
                "topics": [{"name": "ret-in", "partitions": [{"partition_index": 0, "committed_offset": 3,
                                                              "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
            assert r.topics[0].partitions[0].error_code == E.none
            _, pid, epoch = init_pid(c, "ret-1", timeout=900_000)
            assert add_offsets(c, "ret-1", pid, epoch, "ret-g") == E.none
            assert txn_commit(c, "ret-1", pid, epoch, "ret-g", tp) == {("ret-in", 0): E.none}
            b.advance(61_000)
            assert b.call(lambda cl: cl.groups.expire_offsets()) == 0  # kept: a transactional offset waits
            assert b.committed_offsets("ret-g") == {("ret-in", 0): 3}
            assert end_txn(c, "ret-1", pid, epoch, False) == E.none  # aborted: nothing waits any more
            assert b.call(lambda cl: cl.groups.expire_offsets()) == 1
            assert b.group("ret-g") is None  # Empty and without offsets: removed
            # a pending offset goes with its group
            _, pid, epoch = init_pid(c, "ret-1", timeout=900_000)
            assert add_offsets(c, "ret-1", pid, epoch, "ret-g") == E.none
            assert txn_commit(c, "ret-1", pid, epoch, "ret-g", tp) == {("ret-in", 0): E.none}
            r = c.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["ret-g"]})
            assert r.results[0].error_code == E.none
            assert fetch(c, "ret-g", tp, True) == {("ret-in", 0): (E.none, -1)}  # nothing pending, nothing committed
            assert end_txn(c, "ret-1", pid, epoch, True) == E.none
            assert fetch(c, "ret-g", tp, True) == {("ret-in", 0): (E.none, -1)}  # the commit found nothing
