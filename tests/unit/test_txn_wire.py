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
