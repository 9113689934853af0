"""The transaction coordinator's state machine (mockbroker/txn) against Kafka 4.x's, on a
ManualClock, with a fake MarkerWriter whose writes complete when the test says."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from mockbroker.common.clock import ManualClock
from mockbroker.config.broker_config import BrokerConfig
from mockbroker.controller.controller import FIRST_PRODUCER_ID
from mockbroker.txn.coordinator import (
    MARKER_RETRY_BACKOFF_MS,
    InitProducerIdResult,
    TransactionCoordinator,
    error_for_client_version,
)
from mockbroker.txn.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    TV_0,
    TV_1,
    TV_2,
    IllegalStateError,
    TransactionMetadata,
    is_epoch_exhausted,
)
from mockbroker.txn.state import TransactionState
from mockbroker.txn.state_manager import TransactionConfig, TransactionStateManager
from protocol.errors import ErrorCode as E

S = TransactionState
TP0, TP1 = ("orders", 0), ("orders", 1)


@dataclass
class Node:
    node_id: int
    alive: bool = True

    def endpoint(self, listener_name: str) -> tuple[str, int] | None:
        return ("127.0.0.1", 9092 + self.node_id)


@dataclass
class Cluster:
    brokers: dict[int, Node] = field(default_factory=lambda: {i: Node(i) for i in range(3)})
    topics: dict = field(default_factory=dict)


class Ids:
    def __init__(self) -> None:
        self.next = FIRST_PRODUCER_ID

    def allocate_producer_id(self) -> int:
        self.next += 1
        return self.next - 1


@dataclass
class MarkerCall:
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: frozenset
    on_done: Callable[[dict], None]

    def complete(self, errors: dict | None = None) -> None:
        self.on_done({tp: (errors or {}).get(tp, E.none) for tp in self.partitions})


class FakeMarkerWriter:
    def __init__(self) -> None:
        self.calls: list[MarkerCall] = []

    def write_markers(self, producer_id, producer_epoch, commit, coordinator_epoch, partitions, on_done) -> None:
        self.calls.append(MarkerCall(producer_id, producer_epoch, commit, coordinator_epoch, partitions, on_done))


class Env:
    def __init__(self, tv: int = TV_0, **cfg) -> None:
        self.clock = ManualClock()
        self.cluster = Cluster()
        self.manager = TransactionStateManager(self.cluster, self.clock, TransactionConfig(transaction_version=tv, **cfg))
        self.markers = FakeMarkerWriter()
        self.coord = TransactionCoordinator(self.manager, Ids(), self.markers, lambda g: len(g) % 50)

    def init(self, tid: str | None = "t", timeout: int = 60000, expected=None, node_id=None) -> InitProducerIdResult:
        out: list[InitProducerIdResult] = []
        self.coord.handle_init_producer_id(tid, timeout, expected, out.append, node_id=node_id)
        assert len(out) == 1
        return out[0]

    def add(self, pid: int, epoch: int, parts=(TP0,), tid: str = "t", tv: int = TV_0) -> E:
        out: list[E] = []
        self.coord.handle_add_partitions(tid, pid, epoch, parts, out.append, tv)
        return out[0]

    def end(self, pid: int, epoch: int, commit: bool, tid: str = "t", tv: int = TV_0) -> tuple[E, int, int]:
        out: list[tuple[E, int, int]] = []
        self.coord.handle_end_transaction(tid, pid, epoch, commit, lambda *a: out.append(a), tv)
        return out[0]

    def md(self, tid: str = "t") -> TransactionMetadata:
        return self.manager.transactions[tid]


# -- the states ---------------------------------------------------------------------------------------
def test_valid_previous_states_are_kafkas():
    expected = {
        S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.PREPARE_COMMIT: {S.ONGOING},
        S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
        S.COMPLETE_ABORT: {S.PREPARE_ABORT},
        S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
        S.PREPARE_EPOCH_FENCE: {S.ONGOING},
    }
    assert {s: set(s.valid_previous_states) for s in S} == expected
    assert [s.state_name for s in S if s.expiration_allowed] == ["Empty", "CompleteCommit", "CompleteAbort"]
    assert S.from_name("PrepareEpochFence") is S.PREPARE_EPOCH_FENCE and S.from_name("nope") is None


def _md(state: TransactionState) -> TransactionMetadata:
    return TransactionMetadata("t", 7, NO_PRODUCER_ID, NO_PRODUCER_ID, 3, NO_PRODUCER_EPOCH, 1000, state, {TP0},
                               5, 5, TV_0)


PREPARES = {
    S.ONGOING: lambda m: m.prepare_add_partitions({TP1}, 10, TV_0),
    S.PREPARE_COMMIT: lambda m: m.prepare_abort_or_commit(S.PREPARE_COMMIT, TV_0, NO_PRODUCER_ID, 10, False),
    S.PREPARE_ABORT: lambda m: m.prepare_abort_or_commit(S.PREPARE_ABORT, TV_0, NO_PRODUCER_ID, 10, False),
    S.PREPARE_EPOCH_FENCE: lambda m: m.prepare_fence_producer_epoch(),
    S.EMPTY: lambda m: m.prepare_increment_producer_epoch(1000, None, 10),
    S.DEAD: lambda m: m.prepare_dead(),
}


@pytest.mark.parametrize("current", list(S))
@pytest.mark.parametrize("target", list(PREPARES))
def test_every_transition_is_allowed_exactly_from_its_valid_previous_states(current, target):
    m = _md(current)
    if current in target.valid_previous_states:
        assert PREPARES[target](m).txn_state is target and m.pending_state is target
    else:
        with pytest.raises(IllegalStateError):
            PREPARES[target](m)
        assert m.pending_state is None


@pytest.mark.parametrize("current", list(S))
def test_prepare_complete_only_from_prepare_states(current):
    m = _md(current)
    if current in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        t = m.prepare_complete(10)
        assert t.txn_state is (S.COMPLETE_COMMIT if current is S.PREPARE_COMMIT else S.COMPLETE_ABORT)
    else:
        with pytest.raises(IllegalStateError):
            m.prepare_complete(10)


def test_a_second_prepare_while_one_is_pending_is_refused_and_complete_checks_the_pending_state():
    m = _md(S.ONGOING)
    t = m.prepare_add_partitions({TP1}, 10, TV_0)
    with pytest.raises(IllegalStateError):
        m.prepare_abort_or_commit(S.PREPARE_COMMIT, TV_0, NO_PRODUCER_ID, 10, False)
    m.complete_transition_to(t)
    assert m.state is S.ONGOING and m.topic_partitions == {TP0, TP1} and m.pending_state is None
    with pytest.raises(IllegalStateError):  # nothing pending
        m.complete_transition_to(t)
    fence = m.prepare_fence_producer_epoch()
    with pytest.raises(IllegalStateError):  # PrepareEpochFence is never completed
        m.complete_transition_to(fence)


def test_complete_refuses_a_transit_that_does_not_follow():
    m = _md(S.ONGOING)
    t = m.prepare_add_partitions({TP1}, 10, TV_0)
    m.topic_partitions.add(("other", 0))  # the transit no longer holds every partition
    with pytest.raises(IllegalStateError):
        m.complete_transition_to(t)


# -- InitProducerId -----------------------------------------------------------------------------------
def test_init_producer_id_new_id_then_epoch_bumps():
    env = Env()
    assert env.init(None) == (FIRST_PRODUCER_ID, 0, E.none)  # idempotent producer: a new id each time
    assert env.init(None) == (FIRST_PRODUCER_ID + 1, 0, E.none)
    r = env.init()
    assert r.error is E.none and r.producer_epoch == 0
    assert env.md().state is S.EMPTY and env.md().txn_timeout_ms == 60000
    assert env.init() == (r.producer_id, 1, E.none)
    assert env.init(timeout=30000) == (r.producer_id, 2, E.none) and env.md().txn_timeout_ms == 30000
    assert env.init("").error is E.invalid_request


def test_transaction_timeout_above_the_max_is_refused():
    env = Env(transaction_max_timeout_ms=900000)
    assert env.init(timeout=900001) == (NO_PRODUCER_ID, NO_PRODUCER_EPOCH, E.invalid_transaction_timeout)
    assert env.init(timeout=0).error is E.invalid_transaction_timeout
    assert "t" not in env.manager.transactions
    assert env.init(timeout=900000).error is E.none


@pytest.mark.parametrize("tv,abort_epoch,next_epoch", [(TV_0, 1, 2), (TV_2, 2, 3)])
def test_init_fences_an_ongoing_transaction(tv, abort_epoch, next_epoch):
    env = Env(tv=tv)
    pid, _, _ = env.init()
    assert env.add(pid, 0) is E.none and env.md().state is S.ONGOING
    assert env.init() == (NO_PRODUCER_ID, NO_PRODUCER_EPOCH, E.concurrent_transactions)
    assert env.md().state is S.PREPARE_ABORT and env.md().pending_state is S.COMPLETE_ABORT
    [call] = env.markers.calls
    assert (call.producer_id, call.producer_epoch, call.commit, call.partitions) == (pid, abort_epoch, False, {TP0})
    # until the abort completes: CONCURRENT_TRANSACTIONS to the new producer and to the old one's adds (the
    # pending transition is checked first, KAFKA-18660), an old-style end is fenced; once it completes the
    # old producer is fenced everywhere
    assert env.init().error is E.concurrent_transactions
    assert env.add(pid, 0) is E.concurrent_transactions
    assert env.end(pid, 0, True)[0] is E.producer_fenced
    call.complete()
    assert env.add(pid, 0) is E.producer_fenced
    assert env.md().state is S.COMPLETE_ABORT and env.md().topic_partitions == set()
    assert env.init() == (pid, next_epoch, E.none)


def test_kip_360_recovery_with_the_expected_producer_id_and_epoch():
    env = Env()
    pid, _, _ = env.init()
    assert env.init(expected=(pid, 0)) == (pid, 1, E.none)
    assert env.md().last_producer_epoch == 0
    assert env.init(expected=(pid, 0)) == (pid, 1, E.none)  # a retry whose answer was lost: same epoch
    assert env.init(expected=(pid, 5)) == (NO_PRODUCER_ID, NO_PRODUCER_EPOCH, E.producer_fenced)
    assert env.init(expected=(pid + 99, 1)).error is E.producer_fenced
    assert env.init(expected=(pid, 1)) == (pid, 2, E.none)
    # a producer recovering from UNKNOWN_PRODUCER_ID with an id the coordinator never saw
    assert env.init("fresh", expected=(4242, 3)).error is E.none


def test_epoch_exhaustion_gives_a_new_producer_id():
    env = Env()
    pid, _, _ = env.init()
    env.md().producer_epoch = SHORT_MAX - 1
    assert is_epoch_exhausted(SHORT_MAX - 1) and not is_epoch_exhausted(SHORT_MAX - 2)
    new_pid, epoch, err = env.init(expected=(pid, SHORT_MAX - 1))
    assert err is E.none and new_pid != pid and epoch == 0
    assert env.md().prev_producer_id == pid and env.md().last_producer_epoch == SHORT_MAX - 1
    # the retry of that call (the old id, the exhausted epoch) gets the new id again
    assert env.init(expected=(pid, SHORT_MAX - 1)) == (new_pid, 0, E.none)
    env2 = Env()
    pid2, _, _ = env2.init()
    env2.md().producer_epoch = SHORT_MAX - 1
    r = env2.init()
    assert r.producer_id != pid2 and r.producer_epoch == 0 and env2.md().last_producer_epoch == NO_PRODUCER_EPOCH


# -- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------------------
def test_add_partitions_in_each_state():
    env = Env()
    pid, _, _ = env.init()
    env.clock.advance(5)
    assert env.add(pid, 0, [TP0]) is E.none  # Empty -> Ongoing
    start = env.md().txn_start_timestamp
    assert start == env.clock.time_ms()
    env.clock.advance(5)
    assert env.add(pid, 0, [TP0]) is E.none and env.md().txn_last_update_timestamp == start  # already in
    assert env.add(pid, 0, [TP1]) is E.none and env.md().topic_partitions == {TP0, TP1}
    assert env.md().txn_start_timestamp == start
    assert env.add(pid, 1) is E.producer_fenced
    assert env.add(pid + 1, 0) is E.invalid_producer_id_mapping
    assert env.add(pid, 0, tid="unknown") is E.invalid_producer_id_mapping
    assert env.add(pid, 0, tid="") is E.invalid_request
    assert env.end(pid, 0, True)[0] is E.none  # PrepareCommit, markers pending
    assert env.add(pid, 0) is E.concurrent_transactions
    env.markers.calls[0].complete()
    assert env.md().state is S.COMPLETE_COMMIT
    env.clock.advance(5)
    assert env.add(pid, 0, [TP1]) is E.none and env.md().state is S.ONGOING  # CompleteCommit -> Ongoing
    assert env.md().topic_partitions == {TP1} and env.md().txn_start_timestamp == env.clock.time_ms()
    assert env.end(pid, 0, False)[0] is E.none
    env.markers.calls[1].complete()
    assert env.add(pid, 0) is E.none and env.md().state is S.ONGOING  # CompleteAbort -> Ongoing


def test_producer_fenced_is_invalid_producer_epoch_for_old_clients():
    assert error_for_client_version("AddPartitionsToTxn", 1, E.producer_fenced) is E.invalid_producer_epoch
    assert error_for_client_version("AddPartitionsToTxn", 2, E.producer_fenced) is E.producer_fenced
    assert error_for_client_version("InitProducerId", 3, E.producer_fenced) is E.invalid_producer_epoch
    assert error_for_client_version("InitProducerId", 4, E.producer_fenced) is E.producer_fenced
    assert error_for_client_version("EndTxn", 1, E.producer_fenced) is E.invalid_producer_epoch
    assert error_for_client_version("EndTxn", 1, E.concurrent_transactions) is E.concurrent_transactions


def test_add_offsets_adds_the_groups_consumer_offsets_partition():
    env = Env()
    pid, _, _ = env.init()
    out = []
    tp = env.coord.handle_add_offsets("t", pid, 0, "group-abc", out.append)
    assert tp == ("__consumer_offsets", len("group-abc") % 50) and out == [E.none]
    assert env.md().topic_partitions == {tp} and env.md().state is S.ONGOING


def test_verify_only_checks_the_partitions_without_adding_them():
    env = Env()
    pid, _, _ = env.init()
    env.add(pid, 0, [TP0])
    out = []
    env.coord.handle_verify_partitions("t", pid, 0, [TP0, TP1], out.append)
    assert out[-1] == {TP0: E.none, TP1: E.transaction_abortable} and env.md().topic_partitions == {TP0}
    env.coord.handle_verify_partitions("t", pid, 1, [TP0], out.append)
    assert out[-1] == {TP0: E.producer_fenced}
    env.coord.handle_verify_partitions("t", pid + 1, 0, [TP0], out.append)
    assert out[-1] == {TP0: E.invalid_producer_id_mapping}
    env.end(pid, 0, True)
    env.coord.handle_verify_partitions("t", pid, 0, [TP0], out.append)
    assert out[-1] == {TP0: E.concurrent_transactions}


# -- EndTxn -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("commit", [True, False])
def test_end_transaction_writes_the_markers_then_completes(commit):
    env = Env()
    pid, _, _ = env.init()
    env.add(pid, 0, [TP0, TP1])
    assert env.end(pid, 0, commit) == (E.none, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)  # TV1 answers no id
    assert env.md().state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    [call] = env.markers.calls
    assert (call.producer_id, call.producer_epoch, call.commit, call.partitions) == (pid, 0, commit, {TP0, TP1})
    assert env.init().error is E.concurrent_transactions
    call.complete()
    assert env.md().state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert env.md().pending_state is None and env.md().producer_epoch == 0


def test_end_transaction_v1_retries_and_invalid_states():
    env = Env()
    pid, _, _ = env.init()
    assert env.end(pid, 0, True)[0] is E.invalid_txn_state  # Empty
    assert env.end(pid, 0, False)[0] is E.invalid_txn_state
    env.add(pid, 0)
    assert env.end(pid, 1, True)[0] is E.producer_fenced
    assert env.end(pid + 1, 0, True)[0] is E.invalid_producer_id_mapping
    assert env.end(pid, 0, True, tid="nope")[0] is E.invalid_producer_id_mapping
    assert env.end(pid, 0, True)[0] is E.none
    assert env.end(pid, 0, True)[0] is E.concurrent_transactions  # markers pending
    env.markers.calls[0].complete()
    assert env.end(pid, 0, True)[0] is E.none  # the retry of a completed commit
    assert env.end(pid, 0, False)[0] is E.invalid_txn_state
    assert len(env.markers.calls) == 1


def test_transaction_version_1_does_not_bump_the_epoch():
    env = Env()
    pid, _, _ = env.init()
    env.add(pid, 0, tv=TV_1)
    assert env.end(pid, 0, True, tv=TV_1) == (E.none, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    env.markers.calls[0].complete()
    assert env.md().producer_epoch == 0 and env.md().state is S.COMPLETE_COMMIT


def test_the_config_keys_feed_the_transaction_config():
    cfg = TransactionConfig.from_config(BrokerConfig({"transaction.max.timeout.ms": 1234,
                                                      "transaction.state.log.num.partitions": 7}))
    assert cfg == TransactionConfig(transaction_max_timeout_ms=1234, num_partitions=7)
    assert TransactionConfig.from_config(BrokerConfig()) == TransactionConfig()
    env = Env()
    env.manager.config = cfg
    assert env.init(timeout=1235).error is E.invalid_transaction_timeout


def test_end_transaction_v1_in_prepare_state():
    env = Env()
    pid, _, _ = env.init()
    env.add(pid, 0)
    env.end(pid, 0, False)
    env.md().pending_state = None  # as if the markers were still to be sent by a new coordinator
    assert env.end(pid, 0, False)[0] is E.concurrent_transactions
    assert env.end(pid, 0, True)[0] is E.invalid_txn_state


def test_transaction_version_2_bumps_the_epoch_at_every_end():
    env = Env(tv=TV_2)
    pid, _, _ = env.init()
    env.add(pid, 0, tv=TV_2)
    assert env.end(pid, 0, True, tv=TV_2) == (E.none, pid, 1)
    [call] = env.markers.calls
    assert call.producer_epoch == 1 and call.commit
    # in PrepareCommit (CompleteCommit pending) the retry (the epoch before the bump) waits, and so does an
    # end at the bumped epoch, commit or empty abort (KAFKA-18464: not PRODUCER_FENCED), and an add
    assert env.end(pid, 0, True, tv=TV_2)[0] is E.concurrent_transactions
    assert env.end(pid, 1, True, tv=TV_2)[0] is E.concurrent_transactions
    assert env.end(pid, 1, False, tv=TV_2)[0] is E.concurrent_transactions
    assert env.add(pid, 1, tv=TV_2) is E.concurrent_transactions
    assert env.end(pid, 2, True, tv=TV_2)[0] is E.concurrent_transactions  # the pending state comes first
    call.complete()
    assert env.md().state is S.COMPLETE_COMMIT and env.md().producer_epoch == 1
    assert env.end(pid, 0, True, tv=TV_2) == (E.none, pid, 1)  # retry: the answer again, no new markers
    assert env.end(pid, 0, False, tv=TV_2)[0] is E.invalid_txn_state  # abort retry after a commit
    assert env.end(pid, 1, True, tv=TV_2)[0] is E.invalid_txn_state  # a commit with nothing added
    assert env.add(pid, 0, tv=TV_2) is E.producer_fenced  # the old epoch is fenced by the bump
    # an abort with nothing added bumps too, and completes with no markers to write
    assert env.end(pid, 1, False, tv=TV_2) == (E.none, pid, 2)
    assert env.md().state is S.COMPLETE_ABORT and len(env.markers.calls) == 1
    assert env.end(pid, 1, False, tv=TV_2) == (E.none, pid, 2)  # its retry
    assert env.end(pid, 1, True, tv=TV_2)[0] is E.invalid_txn_state
    env.add(pid, 2, tv=TV_2)
    assert env.end(pid, 2, False, tv=TV_2) == (E.none, pid, 3)
    assert env.markers.calls[-1].producer_epoch == 3 and not env.markers.calls[-1].commit


def test_transaction_version_2_from_empty():
    env = Env(tv=TV_2)
    pid, _, _ = env.init()
    env.init()  # epoch 1
    assert env.end(pid, 1, True, tv=TV_2)[0] is E.invalid_txn_state
    assert env.end(pid, 0, False, tv=TV_2)[0] is E.producer_fenced  # "retry" on Empty
    assert env.end(pid, 1, False, tv=TV_2) == (E.none, pid, 2)
    assert env.md().state is S.COMPLETE_ABORT


def test_transaction_version_2_epoch_overflow_moves_to_the_next_producer_id():
    env = Env(tv=TV_2)
    pid, _, _ = env.init()
    env.add(pid, 0, tv=TV_2)
    env.md().producer_epoch = SHORT_MAX - 1
    assert env.end(pid, SHORT_MAX - 1, True, tv=TV_2) == (E.none, pid, SHORT_MAX)
    new_pid = env.md().next_producer_id
    assert new_pid not in (pid, NO_PRODUCER_ID) and env.markers.calls[0].producer_epoch == SHORT_MAX
    env.markers.calls[0].complete()
    md = env.md()
    assert (md.producer_id, md.producer_epoch, md.prev_producer_id, md.state) == (new_pid, 0, pid, S.COMPLETE_COMMIT)
    assert env.end(pid, SHORT_MAX - 1, True, tv=TV_2) == (E.none, new_pid, 0)  # the retry with the old id


# -- timeouts, expiration ---------------------------------------------------------------------------
@pytest.mark.parametrize("tv,abort_epoch", [(TV_0, 1), (TV_2, 2)])  # TV2: the fence, then the bump of the end
def test_timed_out_transactions_are_fenced_and_aborted(tv, abort_epoch):
    env = Env(tv=tv, abort_timed_out_transactions_interval_ms=10000)
    env.coord.startup()
    pid, _, _ = env.init(timeout=60000)
    env.add(pid, 0, [TP0])
    env.clock.advance(60000)
    assert env.markers.calls == [] and env.md().state is S.ONGOING  # not yet past the timeout
    env.clock.advance(10000)
    [call] = env.markers.calls
    assert (call.producer_id, call.producer_epoch, call.commit, call.partitions) == (pid, abort_epoch, False, {TP0})
    assert env.md().state is S.PREPARE_ABORT
    call.complete()
    assert env.md().state is S.COMPLETE_ABORT and env.md().producer_epoch == abort_epoch
    assert env.end(pid, 0, True)[0] is E.producer_fenced  # the timed-out producer
    assert env.add(pid, 0) is E.producer_fenced
    env.clock.advance(100000)
    assert len(env.markers.calls) == 1  # nothing else to abort
    env.coord.shutdown()
    assert env.clock.pending_timers == 0


def test_a_pending_transition_is_not_aborted_twice():
    env = Env()
    pid, _, _ = env.init(timeout=1000)
    env.add(pid, 0)
    env.end(pid, 0, True)  # markers pending
    env.clock.advance(5000)
    env.coord.abort_timed_out_transactions()
    assert len(env.markers.calls) == 1 and env.markers.calls[0].commit


def test_transactional_ids_expire():
    env = Env(transactional_id_expiration_ms=604800000, remove_expired_transactional_ids_interval_ms=3600000)
    env.coord.startup()
    pid, _, _ = env.init("idle")
    other, _, _ = env.init("busy", timeout=900000)
    env.add(other, 0, tid="busy")
    env.clock.advance(604800000 - 3600000)
    assert set(env.manager.transactions) == {"idle", "busy"}
    env.clock.advance(3600000)
    assert "idle" not in env.manager.transactions  # Empty, idle for transactional.id.expiration.ms
    assert "busy" in env.manager.transactions  # Ongoing: never expired (the timeout aborts it first)
    assert env.add(pid, 0, tid="idle") is E.invalid_producer_id_mapping
    assert env.init("idle").producer_id != pid
    env.coord.shutdown()


# -- markers ------------------------------------------------------------------------------------------
def test_markers_are_retried_on_retriable_errors_then_complete():
    env = Env()
    pid, _, _ = env.init()
    env.add(pid, 0, [TP0, TP1])
    env.end(pid, 0, True)
    env.markers.calls[0].complete({TP1: E.not_leader_or_follower})
    assert env.md().topic_partitions == {TP1} and env.md().state is S.PREPARE_COMMIT
    env.clock.advance(MARKER_RETRY_BACKOFF_MS - 1)
    assert len(env.markers.calls) == 1
    env.clock.advance(1)
    assert env.markers.calls[1].partitions == {TP1}
    env.markers.calls[1].complete()
    assert env.md().state is S.COMPLETE_COMMIT


def test_a_fenced_marker_write_stops_sending():
    env = Env()
    pid, _, _ = env.init()
    env.add(pid, 0)
    env.end(pid, 0, False)
    env.markers.calls[0].complete({TP0: E.transaction_coordinator_fenced})
    env.clock.advance(1000)
    assert len(env.markers.calls) == 1 and env.md().state is S.PREPARE_ABORT


# -- DescribeTransactions / ListTransactions ---------------------------------------------------------
def test_describe_and_list_transactions():
    env = Env(num_partitions=1, replication_factor=1)
    assert env.coord.handle_describe_transactions("t") == (E.coordinator_not_available, None)
    assert env.coord.handle_list_transactions([], []) == (E.coordinator_not_available, [], [])
    env.coord.startup()
    pid, _, _ = env.init()
    env.clock.advance(10)
    other, _, _ = env.init("u")
    env.add(other, 0, [TP1], tid="u")
    err, md = env.coord.handle_describe_transactions("u")
    assert err is E.none and md is not None
    assert (md.state.state_name, md.producer_id, md.topic_partitions) == ("Ongoing", other, {TP1})
    assert env.coord.handle_describe_transactions("nope") == (E.transactional_id_not_found, None)
    assert env.coord.handle_describe_transactions("") == (E.invalid_request, None)
    assert env.coord.handle_describe_transactions("t", node_id=1) == (E.not_coordinator, None)
    both = [("t", pid, "Empty"), ("u", other, "Ongoing")]
    assert env.coord.handle_list_transactions([], []) == (E.none, both, [])
    assert env.coord.handle_list_transactions([other], []) == (E.none, [("u", other, "Ongoing")], [])
    assert env.coord.handle_list_transactions([], ["Empty", "Bogus"]) == (E.none, [("t", pid, "Empty")], ["Bogus"])
    assert env.coord.handle_list_transactions([], [], node_id=1) == (E.none, [], [])
    # the duration filter compares with the start time: -1 for an id that never began one
    assert env.coord.handle_list_transactions([], [], duration_filter_ms=1000) == (E.none, [("t", pid, "Empty")], [])
    env.clock.advance(1001)
    assert env.coord.handle_list_transactions([], [], duration_filter_ms=1000) == (E.none, both, [])
    env.coord.shutdown()


# -- placement and coordinator checks ---------------------------------------------------------------
@pytest.mark.parametrize("tid,partition", [
    ("hello", 22),                # hashCode 99162322
    ("polygenelubricants", 0),    # hashCode Integer.MIN_VALUE: Utils.abs gives 0
    ("my-transactional-id", 46),  # hashCode -959806496: abs, not the 0x7fffffff mask (which gives 2)
    ("producer-txn-42", 14),      # hashCode -1335808164
    ("txn-1", 10),                # hashCode 110810510
])
def test_partition_for_is_kafkas(tid, partition):
    assert Env().manager.partition_for(tid) == partition


def test_only_the_leader_of_the_partition_coordinates():
    env = Env(num_partitions=3, replication_factor=2)
    tid = "hello"  # partition 99162322 % 3 = 1: replicas [1, 2]
    assert env.manager.partition_for(tid) == 1 and env.manager.coordinator_id(tid) == 1
    assert env.init(tid, node_id=0).error is E.not_coordinator
    r = env.init(tid, node_id=1)
    assert r.error is E.none
    env.manager.inject_loading(tid, 500)
    assert env.init(tid, node_id=1).error is E.coordinator_load_in_progress
    env.clock.advance(500)
    epoch = env.manager.coordinator_epoch(1)
    env.cluster.brokers[1].alive = False
    assert env.manager.coordinator_id(tid) == 2 and env.manager.coordinator_epoch(1) == epoch + 1
    assert env.init(tid, node_id=2) == (r.producer_id, 1, E.none)
    env.cluster.brokers[2].alive = False
    assert env.init(tid, node_id=2).error is E.coordinator_not_available


def test_a_new_coordinator_sends_the_markers_of_a_prepared_transaction_again():
    env = Env(num_partitions=1, replication_factor=2)
    pid, _, _ = env.init()
    env.add(pid, 0)
    env.end(pid, 0, True)
    [old] = env.markers.calls
    env.cluster.brokers[0].alive = False  # partition 0's leader moves from 0 to 1
    assert env.init(node_id=1).error is E.concurrent_transactions  # a request sees the move first
    env.coord.on_brokers_changed()
    [_, new] = env.markers.calls
    assert (new.producer_id, new.producer_epoch, new.commit, new.partitions) == (pid, 0, True, {TP0})
    assert new.coordinator_epoch == old.coordinator_epoch + 1
    old.complete()  # the resigned coordinator's answer changes nothing
    assert env.md().state is S.PREPARE_COMMIT and env.md().topic_partitions == {TP0}
    new.complete()
    assert env.md().state is S.COMPLETE_COMMIT
    env.coord.on_brokers_changed()  # nothing moved: nothing sent
    assert len(env.markers.calls) == 2
