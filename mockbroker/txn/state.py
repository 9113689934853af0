"""TransactionState: the states of a transactional id and the states each may be entered from
(Kafka 4.x ``TransactionState.java``, ``validPreviousStates``).

Empty -> Ongoing (AddPartitions/AddOffsets) -> PrepareCommit | PrepareAbort (EndTxn)
-> CompleteCommit | CompleteAbort (markers written).  PrepareEpochFence is only ever pending:
InitProducerId or a timeout fences an Ongoing transaction, which then goes to PrepareAbort.
With transaction version 2 an abort may start from Empty, CompleteCommit or CompleteAbort too.
Dead: the id expired and is about to be forgotten.
"""

from __future__ import annotations

import enum


class TransactionState(enum.Enum):
    # (id in the __transaction_state value, name shown by DescribeTransactions, expiration allowed)
    EMPTY = (0, "Empty", True)
    ONGOING = (1, "Ongoing", False)
    PREPARE_COMMIT = (2, "PrepareCommit", False)
    PREPARE_ABORT = (3, "PrepareAbort", False)
    COMPLETE_COMMIT = (4, "CompleteCommit", True)
    COMPLETE_ABORT = (5, "CompleteAbort", True)
    DEAD = (6, "Dead", False)
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence", False)

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def state_name(self) -> str:
        return self.value[1]

    @property
    def expiration_allowed(self) -> bool:
        return self.value[2]

    @property
    def valid_previous_states(self) -> frozenset[TransactionState]:
        return _VALID_PREVIOUS[self]

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        """ListTransactions' state filter names states as DescribeTransactions shows them."""
        return next((s for s in cls if s.state_name == name), None)


S = TransactionState
_VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
