"""EndTxn under a slow follower (acks=all semantics for the markers), on the driven clock: the
client is answered once PrepareCommit is written; the markers count only when the follower has them,
and until then the producer's next transaction gets CONCURRENT_TRANSACTIONS (Kafka's
TransactionMarkerChannelManager completes the transaction only after every marker is acknowledged)."""

from __future__ import annotations

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey
from tests.polling import until

from .test_txn_offsets import add_offsets, fetch, txn_commit
from .test_txn_wire import add_partitions, end_txn, init_pid, produce, txn_state

E = ErrorCode


def test_markers_wait_for_the_follower_and_the_next_transaction_waits_for_the_markers():
    with MockBroker(config={"mock.num.brokers": 2, "transaction.state.log.num.partitions": 1,
                            "offsets.topic.num.partitions": 1}, clock=ManualClock()) as b:
        b.create_topic("sr-out", 1, replication_factor=2)
        leader = b.call(lambda cl: cl.metadata.partition("sr-out", 0).leader_id)
        tnode = b.call(lambda cl: cl.txn.txn_manager.coordinator_id("sr-1"))
        gnode = b.call(lambda cl: cl.groups.registry.coordinator_id("sr-g"))
        addrs = b.bootstrap_servers.split(",")
        with RawKafkaClient.connect(addrs[tnode]) as tc, RawKafkaClient.connect(addrs[leader]) as pc, \
                RawKafkaClient.connect(addrs[gnode]) as gc:
            _, pid, epoch = init_pid(tc, "sr-1")
            assert add_partitions(tc, "sr-1", pid, epoch, {"sr-out": [0]}) == {("sr-out", 0): E.none}
            assert add_offsets(tc, "sr-1", pid, epoch, "sr-g") == E.none
            assert produce(pc, "sr-out", pid, epoch, 0, 3, transactional=True, tid="sr-1").error_code == E.none
            assert txn_commit(gc, "sr-1", pid, epoch, "sr-g", {("sr-out", 0): 3}) == {("sr-out", 0): E.none}
            b.set_replication_lag(1000)
            assert end_txn(tc, "sr-1", pid, epoch, True) == E.none  # answered after PrepareCommit
            assert txn_state(b, "sr-1")[0] == "PrepareCommit"
            # the __consumer_offsets marker is in (the group coordinator's own log), the output's is not
            assert fetch(gc, "sr-g", [("sr-out", 0)], True) == {("sr-out", 0): (E.none, 3)}
            assert add_partitions(tc, "sr-1", pid, epoch, {"sr-out": [0]}) == {("sr-out", 0): E.concurrent_transactions}
            assert end_txn(tc, "sr-1", pid, epoch, True) == E.concurrent_transactions
            lso = b.call(lambda cl: cl.metadata.partition("sr-out", 0).log.last_stable_offset)
            assert lso == 0
            b.advance(1000)  # the follower catches up: the marker counts, the transaction completes
            until(lambda: txn_state(b, "sr-1")[0] == "CompleteCommit", "the transaction to complete", 5)
            assert b.call(lambda cl: cl.metadata.partition("sr-out", 0).log.last_stable_offset) == 4
            assert add_partitions(tc, "sr-1", pid, epoch, {"sr-out": [0]}) == {("sr-out", 0): E.none}


def test_marker_latency_holds_the_next_transaction_until_the_markers_land():
    """mock.txn.marker.latency.ms: WriteTxnMarkers reaches the leaders that much later (Kafka's marker
    sender thread and its network round trip), on the driven clock."""
    with MockBroker(config={"mock.txn.marker.latency.ms": 50}, clock=ManualClock()) as b:
        b.create_topic("ml-out", 1)
        with RawKafkaClient.connect(b.bootstrap_servers) as c:
            _, pid, epoch = init_pid(c, "ml-1")
            assert add_partitions(c, "ml-1", pid, epoch, {"ml-out": [0]}) == {("ml-out", 0): E.none}
            assert produce(c, "ml-out", pid, epoch, 0, 2, transactional=True, tid="ml-1").error_code == E.none
            assert end_txn(c, "ml-1", pid, epoch, True) == E.none
            assert txn_state(b, "ml-1")[0] == "PrepareCommit"
            assert add_partitions(c, "ml-1", pid, epoch, {"ml-out": [0]}) == {("ml-out", 0): E.concurrent_transactions}
            b.advance(49)
            assert b.call(lambda cl: cl.metadata.partition("ml-out", 0).log.log_end_offset) == 2  # no marker yet
            b.advance(1)
            until(lambda: txn_state(b, "ml-1")[0] == "CompleteCommit", "the markers to land", 5)
            assert b.call(lambda cl: cl.metadata.partition("ml-out", 0).log.last_stable_offset) == 3
            assert add_partitions(c, "ml-1", pid, epoch, {"ml-out": [0]}) == {("ml-out", 0): E.none}


def test_offsets_marker_waits_for_a_leader_of_the_groups_partition():
    """WriteTxnMarkers to a __consumer_offsets partition without a live leader answers
    NOT_LEADER_OR_FOLLOWER: the coordinator writes it again every 100 ms (on the driven clock) and
    completes the transaction once the partition's broker is back."""
    from .test_txn_offsets import add_offsets, fetch, txn_commit

    cfg = {"mock.num.brokers": 3, "offsets.topic.num.partitions": 3, "offsets.topic.replication.factor": 1,
           "transaction.state.log.num.partitions": 3}
    with MockBroker(config=cfg, clock=ManualClock()) as b:
        b.create_topic("ol-in", 1, replication_factor=3)
        tid = "ol-1"
        tnode = b.call(lambda cl: cl.txn.txn_manager.coordinator_id(tid))
        group = next(g for g in (f"ol-g{i}" for i in range(50))
                     if b.call(lambda cl, g=g: cl.groups.registry.coordinator_id(g)) != tnode)
        gnode = b.call(lambda cl: cl.groups.registry.coordinator_id(group))
        addrs = b.bootstrap_servers.split(",")
        with RawKafkaClient.connect(addrs[tnode]) as tc, RawKafkaClient.connect(addrs[gnode]) as gc:
            _, pid, epoch = init_pid(tc, tid)
            assert add_offsets(tc, tid, pid, epoch, group) == E.none
            assert txn_commit(gc, tid, pid, epoch, group, {("ol-in", 0): 5}) == {("ol-in", 0): E.none}
        b.stop_broker(gnode)  # the group's offsets partition has no other replica: no leader
        with RawKafkaClient.connect(addrs[tnode]) as tc:
            assert end_txn(tc, tid, pid, epoch, True) == E.none
            for _ in range(3):
                b.advance(100)
                assert txn_state(b, tid)[0] == "PrepareCommit"  # written again, refused again
            b.start_broker(gnode)
            b.advance(100)
            until(lambda: txn_state(b, tid)[0] == "CompleteCommit", "the offsets marker to land", 5)
        with RawKafkaClient.connect(addrs[gnode]) as gc:
            assert fetch(gc, group, [("ol-in", 0)], True) == {("ol-in", 0): (E.none, 5)}


def test_tv2_end_at_the_bumped_epoch_waits_for_the_markers():
    """KAFKA-18464: under transaction version 2 an EndTxn v5 bumps the epoch; the producer's next end at that
    bumped epoch (Streams' EOSv2 commit, or an empty abort) while the previous markers are still on their
    way is CONCURRENT_TRANSACTIONS, which clients retry -- not PRODUCER_FENCED -- and succeeds once they land."""
    with MockBroker(config={"mock.txn.marker.latency.ms": 50}, clock=ManualClock()) as b:
        b.create_topic("kb-out", 1)
        with RawKafkaClient.connect(b.bootstrap_servers) as c:
            _, pid, epoch = init_pid(c, "kb-1")
            assert add_partitions(c, "kb-1", pid, epoch, {"kb-out": [0]}) == {("kb-out", 0): E.none}
            assert produce(c, "kb-out", pid, epoch, 0, 2, transactional=True, tid="kb-1").error_code == E.none
            r = c.request(ApiKey.END_TXN, 5, {"transactional_id": "kb-1", "producer_id": pid,
                                              "producer_epoch": epoch, "committed": True})
            assert (r.error_code, r.producer_id, r.producer_epoch) == (E.none, pid, epoch + 1)
            assert txn_state(b, "kb-1")[0] == "PrepareCommit"
            for commit in (False, True):
                assert end_txn(c, "kb-1", pid, epoch + 1, commit, version=5) == E.concurrent_transactions
            b.advance(50)
            until(lambda: txn_state(b, "kb-1")[0] == "CompleteCommit", "the markers to land", 5)
            assert end_txn(c, "kb-1", pid, epoch + 1, False, version=5) == E.none  # the empty abort, retried
