"""TransactionMetadata and TxnTransitMetadata (Kafka 4.x ``TransactionMetadata.java``).

Every change is two steps, as in Kafka: a ``prepare_*`` method checks the transition against
``TransactionState.valid_previous_states``, sets the pending state and returns the would-be
metadata (a ``TxnTransitMetadata``); once that is "written to the log",
``complete_transition_to`` checks it again and applies it.  A second prepare while one is
pending, or a transition Kafka refuses, raises ``IllegalStateError`` (Kafka's
IllegalStateException: a coordinator bug, never an answer to a client).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from protocol.errors import ErrorCode

from ..state.cluster_view import TopicPartition
from .state import TransactionState

S = TransactionState
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767
# TransactionVersion feature levels: 2 (KIP-890 part 2) bumps the epoch at every EndTxn
TV_0, TV_1, TV_2 = 0, 1, 2



def supports_epoch_bump(transaction_version: int) -> bool:
    return transaction_version >= TV_2


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """An epoch of Short.MAX_VALUE - 1 or more is never handed out again, so the coordinator
    can always fence with one more bump."""
    return producer_epoch >= SHORT_MAX - 1


class IllegalStateError(Exception):
    """Kafka's IllegalStateException from the state machine: a transition it never makes."""


class TxnCoordinatorError(Exception):
    """An error answered to the client (Kafka's ``Errors.X.exception()`` thrown by the metadata)."""

    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.error = error


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int


@dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    client_transaction_version: int = TV_0
    pending_state: TransactionState | None = None
    # a fence whose log write failed: the next fence does not bump the epoch again
    has_failed_epoch_fence: bool = False

    # -- queries -----------------------------------------------------------------------------------
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    def remove_partition(self, tp: TopicPartition) -> None:
        """A marker was written to ``tp``: it leaves the transaction (only while Prepare*)."""
        if self.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise IllegalStateError(f"removing partition {tp} of {self.transactional_id} in state {self.state.state_name}")
        self.topic_partitions.discard(tp)

    # -- prepare -----------------------------------------------------------------------------------
    def _data(self, new_state: TransactionState, **changes: object) -> TxnTransitMetadata:
        base = TxnTransitMetadata(self.producer_id, self.prev_producer_id, self.next_producer_id, self.producer_epoch,
                                  self.last_producer_epoch, self.txn_timeout_ms, new_state,
                                  frozenset(self.topic_partitions), self.txn_start_timestamp,
                                  self.txn_last_update_timestamp, self.client_transaction_version)
        return dataclasses.replace(base, **changes)  # type: ignore[arg-type]  # each change names a field of its type

    def _prepare_transition_to(self, data: TxnTransitMetadata) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalStateError(f"preparing transition of {self.transactional_id} to {data.txn_state.state_name} "
                                    f"while it already has the pending state {self.pending_state.state_name}")
        if data.producer_id < 0:
            raise IllegalStateError(f"illegal new producer id {data.producer_id}")
        if data.txn_state is not S.DEAD and data.producer_epoch < 0:
            raise IllegalStateError(f"illegal new producer epoch {data.producer_epoch}")
        if self.state not in data.txn_state.valid_previous_states:
            raise IllegalStateError(f"{self.transactional_id}: {data.txn_state.state_name} is not reachable from "
                                    f"{self.state.state_name}")
        # the transit's prev_producer_id is the current producer id (Kafka's prepareTransitionTo)
        data = dataclasses.replace(data, prev_producer_id=self.producer_id)
        self.pending_state = data.txn_state
        return data

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        bumped = self.producer_epoch if self.has_failed_epoch_fence or self.producer_epoch == SHORT_MAX \
            else self.producer_epoch + 1
        return self._prepare_transition_to(self._data(S.PREPARE_EPOCH_FENCE, producer_epoch=bumped))

    def prepare_increment_producer_epoch(self, new_txn_timeout_ms: int, expected_producer_epoch: int | None,
                                         update_timestamp: int) -> TxnTransitMetadata:
        """InitProducerId on Empty/Complete*: the next epoch; a KIP-360 retry with the previous epoch
        gets the current one again; any other expected epoch is PRODUCER_FENCED."""
        if self.is_producer_epoch_exhausted():
            raise IllegalStateError(f"cannot allocate any more producer epochs for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_producer_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            raise TxnCoordinatorError(ErrorCode.producer_fenced)
        return self._prepare_transition_to(self._data(
            S.EMPTY, producer_epoch=epoch, last_producer_epoch=last, txn_timeout_ms=new_txn_timeout_ms,
            topic_partitions=frozenset(), txn_start_timestamp=-1, txn_last_update_timestamp=update_timestamp))

    def prepare_producer_id_rotation(self, new_producer_id: int, new_txn_timeout_ms: int, update_timestamp: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        if self.has_pending_transaction():
            raise IllegalStateError("cannot rotate producer ids while a transaction is still pending")
        return self._prepare_transition_to(self._data(
            S.EMPTY, producer_id=new_producer_id, producer_epoch=0,
            last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            txn_timeout_ms=new_txn_timeout_ms, topic_partitions=frozenset(), txn_start_timestamp=-1,
            txn_last_update_timestamp=update_timestamp))

    def prepare_add_partitions(self, added: set[TopicPartition] | frozenset[TopicPartition], update_timestamp: int,
                               client_transaction_version: int) -> TxnTransitMetadata:
        start = update_timestamp if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) \
            else self.txn_start_timestamp
        return self._prepare_transition_to(self._data(
            S.ONGOING, topic_partitions=frozenset(self.topic_partitions | set(added)), txn_start_timestamp=start,
            txn_last_update_timestamp=update_timestamp, client_transaction_version=client_transaction_version))

    def prepare_abort_or_commit(self, new_state: TransactionState, client_transaction_version: int,
                                next_producer_id: int, update_timestamp: int, no_partition_added: bool
                                ) -> TxnTransitMetadata:
        if supports_epoch_bump(client_transaction_version):
            # TV2: every end bumps the epoch (an abort at Short.MAX_VALUE goes through unbumped)
            epoch = self.producer_epoch if (self.producer_epoch == SHORT_MAX and new_state is S.PREPARE_ABORT) \
                else self.producer_epoch + 1
            last = self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        return self._prepare_transition_to(self._data(
            new_state, producer_epoch=epoch, last_producer_epoch=last,
            txn_start_timestamp=update_timestamp if no_partition_added else self.txn_start_timestamp,
            next_producer_id=next_producer_id, txn_last_update_timestamp=update_timestamp,
            client_transaction_version=client_transaction_version))

    def prepare_complete(self, update_timestamp: int) -> TxnTransitMetadata:
        self.has_failed_epoch_fence = False
        new_state = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if supports_epoch_bump(self.client_transaction_version) and self.next_producer_id != NO_PRODUCER_ID:
            pid, epoch = self.next_producer_id, 0  # the epoch overflowed at this end: the next producer id
        else:
            pid, epoch = self.producer_id, self.producer_epoch
        return self._prepare_transition_to(self._data(
            new_state, producer_id=pid, producer_epoch=epoch, next_producer_id=NO_PRODUCER_ID,
            topic_partitions=frozenset(), txn_last_update_timestamp=update_timestamp))

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare_transition_to(self._data(S.DEAD, topic_partitions=frozenset()))

    # -- complete ----------------------------------------------------------------------------------
    def complete_transition_to(self, t: TxnTransitMetadata) -> None:
        to = self.pending_state
        if to is None:
            raise IllegalStateError(f"{self.transactional_id} completing a transition without a pending state")
        if to is not t.txn_state:
            self._fail(t)
        if to is S.EMPTY:  # from InitProducerId
            if (self.producer_epoch != t.producer_epoch and not self._valid_producer_epoch_bump(t)) \
                    or t.topic_partitions or t.txn_start_timestamp != -1:
                self._fail(t)
        elif to is S.ONGOING:  # from AddPartitions
            if not self._valid_producer_epoch(t) or not t.topic_partitions >= self.topic_partitions \
                    or self.txn_timeout_ms != t.txn_timeout_ms:
                self._fail(t)
        elif to in (S.PREPARE_ABORT, S.PREPARE_COMMIT):  # from EndTxn
            allowed_empty_abort = to is S.PREPARE_ABORT and supports_epoch_bump(t.client_transaction_version) \
                and self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
            valid_ts = self.txn_start_timestamp == t.txn_start_timestamp or allowed_empty_abort
            if not self._valid_producer_epoch(t) or self.topic_partitions != t.topic_partitions \
                    or self.txn_timeout_ms != t.txn_timeout_ms or not valid_ts:
                self._fail(t)
        elif to in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT):  # from the markers
            if not self._valid_producer_epoch(t) or self.txn_timeout_ms != t.txn_timeout_ms \
                    or t.txn_start_timestamp == -1:
                self._fail(t)
        elif to is S.PREPARE_EPOCH_FENCE:
            self._fail(t)  # only ever pending: the fence goes on to PrepareAbort
        elif to is S.DEAD:
            raise IllegalStateError(f"{self.transactional_id} completing a transition to Dead: an expired id is "
                                    "removed, never stored as Dead")
        self.producer_id = t.producer_id
        self.prev_producer_id = t.prev_producer_id
        self.next_producer_id = t.next_producer_id
        self.producer_epoch = t.producer_epoch
        self.last_producer_epoch = t.last_producer_epoch
        self.txn_timeout_ms = t.txn_timeout_ms
        self.topic_partitions = set(t.topic_partitions)
        self.txn_start_timestamp = t.txn_start_timestamp
        self.txn_last_update_timestamp = t.txn_last_update_timestamp
        self.client_transaction_version = t.client_transaction_version
        self.pending_state = None
        self.state = to

    def _valid_producer_epoch(self, t: TxnTransitMetadata) -> bool:
        v2 = supports_epoch_bump(t.client_transaction_version)
        if v2 and t.txn_state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and t.producer_epoch == 0:
            return t.last_producer_epoch == self.last_producer_epoch and t.prev_producer_id == self.producer_id
        if v2 and t.txn_state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return t.last_producer_epoch == self.producer_epoch and t.producer_id == self.producer_id
        return t.producer_epoch == self.producer_epoch and t.producer_id == self.producer_id

    def _valid_producer_epoch_bump(self, t: TxnTransitMetadata) -> bool:
        return t.producer_epoch == self.producer_epoch + 1 or (t.producer_epoch == 0 and t.producer_id != self.producer_id)

    def _fail(self, t: TxnTransitMetadata) -> None:
        raise IllegalStateError(f"{self.transactional_id} failed transition to {t}: unexpected metadata")
