"""The transaction APIs over a real socket: FindCoordinator TRANSACTION, InitProducerId with a
transactional id, AddPartitionsToTxn and EndTxn, checked against Kafka's answers."""

from __future__ import annotations

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

E = ErrorCode


def init_pid(c, tid, version=4, timeout=60000, pid=-1, epoch=-1):
    body = {"transactional_id": tid, "transaction_timeout": timeout, "producer_id": pid, "producer_epoch": epoch}
    r = c.request(ApiKey.INIT_PRODUCER_ID, version, body)
    return r.error_code, r.producer_id, r.producer_epoch


def find_txn_coordinator(c, tid, version=6):
    if version >= 4:
        (x,) = c.request(ApiKey.FIND_COORDINATOR, version, {"key_type": 1, "coordinator_keys": [tid]}).coordinators
        return x.error_code, x.node_id
    r = c.request(ApiKey.FIND_COORDINATOR, version, {"key": tid, "key_type": 1})
    return r.error_code, r.node_id


class TestFindCoordinatorAndInitProducerId:
    def test_find_coordinator_transaction_every_version(self, raw):
        c = raw()
        for v in range(1, 7):
            assert find_txn_coordinator(c, "tx-find", v) == (E.none, 0)

    def test_init_producer_id_every_version(self, raw):
        c = raw()
        for v in range(6):
            err, pid, epoch = init_pid(c, f"tx-v{v}", v)
            assert (err, epoch) == (E.none, 0) and pid >= 0
            assert init_pid(c, f"tx-v{v}", v) == (E.none, pid, 1)  # the same id, the epoch bumped

    def test_init_producer_id_checks(self, raw):
        c = raw()
        assert init_pid(c, "tx-bad", timeout=0)[0] == E.invalid_transaction_timeout
        assert init_pid(c, "tx-bad", timeout=900001)[0] == E.invalid_transaction_timeout
        assert init_pid(c, "")[0] == E.invalid_request
        assert init_pid(c, "tx-bad", pid=5, epoch=-1)[0] == E.invalid_request  # v3+: both or neither
        _, pid, _ = init_pid(c, "tx-kip360")
        assert init_pid(c, "tx-kip360", pid=pid, epoch=0) == (E.none, pid, 1)  # KIP-360 bump
        assert init_pid(c, "tx-kip360", pid=pid + 1000, epoch=1)[0] == E.producer_fenced

    def test_coordinator_is_the_transaction_state_leader(self):
        with MockBroker(config={"mock.num.brokers": 3}) as b:
            addrs = b.bootstrap_servers.split(",")
            clients = [RawKafkaClient.connect(a) for a in addrs]
            try:
                seen = set()
                for i in range(12):
                    tid = f"spread-{i}"
                    err, node = find_txn_coordinator(clients[0], tid)
                    assert err == E.none and node >= 0
                    seen.add(node)
                    assert init_pid(clients[(node + 1) % 3], tid)[0] == E.not_coordinator
                    assert init_pid(clients[node], tid)[0] == E.none
                assert seen == {0, 1, 2}
                # the coordinator stops: the id moves to another replica, which goes on with it
                err, node = find_txn_coordinator(clients[0], "spread-0")
                b.stop_broker(node)
                alive = next(c for i, c in enumerate(clients) if i != node)
                err, new = find_txn_coordinator(alive, "spread-0")
                assert err == E.none and new not in (node, -1)
                assert init_pid(clients[new], "spread-0")[::2] == (E.none, 1)  # its state moved along
            finally:
                for c in clients:
                    c.close()


def add_partitions(c, tid, pid, epoch, topics, version=3):
    """AddPartitionsToTxn v0-3: {(topic, partition): error}."""
    body = {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
    r = c.request(ApiKey.ADD_PARTITIONS_TO_TXN, version, body)
    return {(t.name, p.partition_index): p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


def end_txn(c, tid, pid, epoch, commit, version=3):
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": commit}
    return c.request(ApiKey.END_TXN, version, body).error_code


def txn_state(b, tid):
    md = b.call(lambda cl: cl.txn.txn_manager.transactions.get(tid))
    return None if md is None else (md.state.state_name, sorted(md.topic_partitions))


def begin(b, c, tid, topic, partitions=(0,), n=2, timeout=60000):
    """InitProducerId, AddPartitionsToTxn and a transactional batch to each partition: (pid, epoch)."""
    err, pid, epoch = init_pid(c, tid, timeout=timeout)
    assert err == E.none
    assert set(add_partitions(c, tid, pid, epoch, {topic: list(partitions)}).values()) == {E.none}
    for p in partitions:
        assert produce(c, topic, pid, epoch, 0, n, transactional=True, partition=p, tid=tid).error_code == E.none
    return pid, epoch


def produce(c, topic, pid, epoch, seq, n, transactional, partition=0, tid="t", version=9, acks=-1, timestamp=1):
    from protocol.records import TRANSACTIONAL_FLAG, build_batch
    batch = build_batch([(b"k", b"v", [])] * n, base_timestamp=timestamp, producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, attributes=TRANSACTIONAL_FLAG if transactional else 0)
    body = {"acks": acks, "timeout": 5000, "transactional_id": tid if transactional else None,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    return c.request(ApiKey.PRODUCE, version, body).responses[0].partition_responses[0]


def partition_state(b, topic, partition=0):
    """(log end offset, last stable offset, aborted producers) of a partition."""
    def read(cl):
        log = cl.metadata.partition(topic, partition).log
        return log.log_end_offset, log.last_stable_offset, [a.producer_id for a in log.aborted_txns]
    return b.call(read)


class TestAddPartitionsAndEndTxn:
    def test_commit_writes_a_marker_to_every_partition(self, raw, broker):
        broker.create_topic("tw-commit", 2)
        c = raw()
        pid, epoch = begin(broker, c, "tw-c", "tw-commit", (0, 1), n=2)
        assert txn_state(broker, "tw-c") == ("Ongoing", [("tw-commit", 0), ("tw-commit", 1)])
        assert partition_state(broker, "tw-commit")[:2] == (2, 0)  # the open transaction holds the LSO
        assert end_txn(c, "tw-c", pid, epoch, True) == E.none
        for p in (0, 1):
            assert partition_state(broker, "tw-commit", p) == (3, 3, [])  # 2 records + the COMMIT marker
        assert txn_state(broker, "tw-c") == ("CompleteCommit", [])
        # the next transaction of the same producer
        assert set(add_partitions(c, "tw-c", pid, epoch, {"tw-commit": [0]}).values()) == {E.none}
        assert end_txn(c, "tw-c", pid, epoch, False) == E.none
        assert partition_state(broker, "tw-commit", 0) == (4, 4, [])  # an ABORT marker, nothing to abort

    def test_abort_indexes_the_aborted_transaction(self, raw, broker):
        broker.create_topic("tw-abort", 1)
        c = raw()
        pid, epoch = begin(broker, c, "tw-a", "tw-abort", n=3)
        assert end_txn(c, "tw-a", pid, epoch, False, version=5) == E.none
        assert partition_state(broker, "tw-abort") == (4, 4, [pid])
        assert txn_state(broker, "tw-a") == ("CompleteAbort", [])

    def test_every_version(self, raw, broker):
        broker.create_topic("tw-ver", 1)
        c = raw()
        for v in range(4):
            tid = f"tw-ver-{v}"
            _, pid, epoch = init_pid(c, tid)
            assert add_partitions(c, tid, pid, epoch, {"tw-ver": [0]}, version=v) == {("tw-ver", 0): E.none}
            assert end_txn(c, tid, pid, epoch, True, version=v) == E.none
        for v in (4, 5):
            tid = f"tw-ver-{v}"
            _, pid, epoch = init_pid(c, tid)
            assert end_txn(c, tid, pid, epoch, True, version=v) == E.invalid_txn_state  # Empty: nothing to end

    def test_errors(self, raw, broker):
        broker.create_topic("tw-err", 1)
        c = raw()
        _, pid, epoch = init_pid(c, "tw-e")
        assert add_partitions(c, "tw-e", pid, epoch, {"tw-err": [0, 7], "tw-missing": [0]}) == {
            ("tw-err", 0): E.operation_not_attempted, ("tw-err", 7): E.unknown_topic_or_partition,
            ("tw-missing", 0): E.unknown_topic_or_partition}
        assert txn_state(broker, "tw-e") == ("Empty", [])
        assert add_partitions(c, "tw-e", pid + 1, epoch, {"tw-err": [0]}) == {
            ("tw-err", 0): E.invalid_producer_id_mapping}
        # a fenced epoch: PRODUCER_FENCED from v2, INVALID_PRODUCER_EPOCH before (KIP-588)
        assert add_partitions(c, "tw-e", pid, epoch - 1, {"tw-err": [0]}, version=2) == {
            ("tw-err", 0): E.producer_fenced}
        assert add_partitions(c, "tw-e", pid, epoch - 1, {"tw-err": [0]}, version=1) == {
            ("tw-err", 0): E.invalid_producer_epoch}
        assert end_txn(c, "tw-e", pid, epoch - 1, True, version=1) == E.invalid_producer_epoch
        assert end_txn(c, "tw-e", pid, epoch, True) == E.invalid_txn_state
        assert end_txn(c, "tw-unknown", 1, 0, True) == E.invalid_producer_id_mapping
        # a new producer with the same id fences the ongoing transaction: aborted, the new one retries
        assert set(add_partitions(c, "tw-e", pid, epoch, {"tw-err": [0]}).values()) == {E.none}
        assert init_pid(c, "tw-e")[0] == E.concurrent_transactions
        assert txn_state(broker, "tw-e") == ("CompleteAbort", [])
        # the fence took epoch + 1, the abort at the cluster's transaction.version 2 epoch + 2
        # (TransactionCoordinator: "Since this is not from client, use server TV")
        assert init_pid(c, "tw-e") == (E.none, pid, epoch + 3)
        assert end_txn(c, "tw-e", pid, epoch, False) == E.producer_fenced

    def test_batched_and_verify_only(self, raw, broker):
        broker.create_topic("tw-batch", 2)
        c = raw()
        ids = {tid: init_pid(c, tid)[1:] for tid in ("tw-b1", "tw-b2")}

        def request(verify, *tids, topic="tw-batch", partitions=(0,)):
            body = {"transactions": [
                {"transactional_id": t, "producer_id": ids[t][0], "producer_epoch": ids[t][1], "verify_only": verify,
                 "topics": [{"name": topic, "partitions": list(partitions)}]} for t in tids]}
            r = c.request(ApiKey.ADD_PARTITIONS_TO_TXN, 5, body)
            assert r.error_code == E.none
            return {x.transactional_id: {(t.name, p.partition_index): p.partition_error_code
                                         for t in x.topic_results for p in t.results_by_partition}
                    for x in r.results_by_transaction}

        assert request(True, "tw-b1", partitions=(0, 1)) == {
            "tw-b1": {("tw-batch", 0): E.transaction_abortable, ("tw-batch", 1): E.transaction_abortable}}
        assert request(False, "tw-b1", "tw-b2") == {"tw-b1": {("tw-batch", 0): E.none},
                                                    "tw-b2": {("tw-batch", 0): E.none}}
        assert request(True, "tw-b1", partitions=(0, 1)) == {
            "tw-b1": {("tw-batch", 0): E.none, ("tw-batch", 1): E.transaction_abortable}}
        assert txn_state(broker, "tw-b1") == ("Ongoing", [("tw-batch", 0)])
        # a transactional id given twice is served twice, as Kafka 4.4.0 serves it (the differential tester)
        assert request(False, "tw-b1", "tw-b1")["tw-b1"] == {("tw-batch", 0): E.none}


class TestCoordinatorTimers:
    def test_timed_out_transaction_is_aborted_on_the_cluster_clock(self):
        from mockbroker import ManualClock
        cfg = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000}
        with MockBroker(config=cfg, clock=ManualClock()) as b:
            b.create_topic("tw-timeout", 1)
            c = RawKafkaClient.connect(b.bootstrap_servers)
            try:
                pid, epoch = begin(b, c, "tw-t", "tw-timeout", timeout=5000)
                b.advance(5000)
                assert txn_state(b, "tw-t")[0] == "Ongoing"
                b.advance(1000)  # past the timeout at the next check: fenced and aborted
                assert txn_state(b, "tw-t") == ("CompleteAbort", [])
                assert partition_state(b, "tw-timeout") == (3, 3, [pid])
                assert end_txn(c, "tw-t", pid, epoch, True) == E.producer_fenced
                # the fence took epoch + 1, the abort at the cluster's TV2 epoch + 2
                assert init_pid(c, "tw-t") == (E.none, pid, epoch + 3)
            finally:
                c.close()

    def test_idle_transactional_id_expires(self):
        from mockbroker import ManualClock
        cfg = {"transactional.id.expiration.ms": 10000,
               "transaction.remove.expired.transaction.cleanup.interval.ms": 1000}
        with MockBroker(config=cfg, clock=ManualClock()) as b:
            c = RawKafkaClient.connect(b.bootstrap_servers)
            try:
                _, pid, _ = init_pid(c, "tw-x")
                b.advance(9000)
                assert txn_state(b, "tw-x") is not None
                b.advance(1000)  # not updated for transactional.id.expiration.ms: gone at the next check
                assert txn_state(b, "tw-x") is None
                err, pid2, epoch = init_pid(c, "tw-x")
                assert err == E.none and pid2 != pid and epoch == 0
            finally:
                c.close()
