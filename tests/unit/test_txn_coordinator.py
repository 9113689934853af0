"""The transaction coordinator's state machine (mockbroker/txn) against Kafka 4.x's."""

from __future__ import annotations

import pytest

from mockbroker.txn.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TV_0,
    IllegalStateError,
    TransactionMetadata,
)
from mockbroker.txn.state import TransactionState

S = TransactionState
TP0, TP1 = ("orders", 0), ("orders", 1)


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
