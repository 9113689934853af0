"""Idempotent-producer state per partition (Kafka's ``ProducerStateManager``,
``ProducerStateEntry`` and ``ProducerAppendInfo``).

Per producer id: the current epoch and the metadata of the last 5 batches
(``NUM_BATCHES_TO_RETAIN``).  On append, in Kafka's order:

1. a batch whose (epoch, first seq, last seq) matches a retained batch is a
   duplicate: acknowledged with its original offsets, not appended again;
2. an epoch below the current one is INVALID_PRODUCER_EPOCH;
3. a new epoch must start at sequence 0 (unless the producer was unknown);
4. otherwise the first sequence must follow the last one (wrapping at
   Integer.MAX_VALUE), else OUT_OF_ORDER_SEQUENCE_NUMBER.

An unknown producer (no entry, e.g. after retention removed its batches) is
accepted at any sequence, as ``checkSequence`` does for NO_PRODUCER_EPOCH, and
at any epoch from -1 up (``checkProducerEpoch`` against an empty entry).
Producer id -1 means no checks at all.

Transactions (``ProducerAppendInfo.appendDataBatch`` / ``appendEndTxnMarker``):
a transactional batch of a producer with no open transaction begins one at its
first offset (``ProducerStateEntry.currentTxnFirstOffset``, a ``TxnMetadata``
in ``ongoingTxns``, keyed and ordered by first offset); a non-transactional
batch while one is open is INVALID_TXN_STATE.  A COMMIT/ABORT marker written
by the coordinator (origin COORDINATOR) is checked as ``checkProducerEpoch``
(older epoch: INVALID_PRODUCER_EPOCH; with transaction version 2 an equal epoch
too, unless no transaction is open: an idempotent retry, KAFKA-19999) and
``checkCoordinatorEpoch`` (TRANSACTION_COORDINATOR_FENCED), then closes the open
transaction as a ``CompletedTxn``, which moves from ``ongoingTxns`` to
``unreplicatedTxns`` until the high watermark passes its marker
(``ProducerStateManager.completeTxn`` / ``onHighWatermarkUpdated``).  The first
unstable offset is the smallest first offset of both (``firstUnstableOffset``).

KIP-890 verification (``VerificationStateEntry``, ``VerificationGuard``,
``UnifiedLog.maybeStartTransactionVerification``): before a transactional batch of
a producer with no transaction open here at its epoch is verified with the
coordinator, the partition keeps a verification state for the producer: a guard
(the request that verified must present it: another one is INVALID_TXN_STATE,
"Record was not part of an ongoing transaction", while verification is on), the
epoch and the lowest sequence seen, and whether the request may bump the epoch
(Produce v12+, transaction version 2).  Until a transactional batch of the producer
is appended (which clears it; a transaction version 2 marker at its epoch leaves it:
the next transaction began verifying before the last one's marker came), the
sequence checks of ``ProducerAppendInfo.checkSequence`` come first:

* at Produce v12+, a first sequence other than 0 from a producer with no batch here
  (unknown, or whose batches an epoch-bumping marker cleared) is
  OUT_OF_ORDER_SEQUENCE_NUMBER ("Expected sequence 0 for transactions v2 idempotent
  producer with no existing state");
* a first sequence above the lowest one seen while verifying is
  OUT_OF_ORDER_SEQUENCE_NUMBER (a later pipelined batch must not overtake the first).

Otherwise a producer known at the batch's epoch must continue its sequence even when
it has no batch left here (Kafka takes the last sequence as -1: only 0 follows).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from itertools import count

from protocol.errors import ErrorCode
from protocol.records import BatchHeader

NUM_BATCHES_TO_RETAIN = 5
INT_MAX = (1 << 31) - 1
NO_PRODUCER_EPOCH = -1
# VerificationGuard.SENTINEL: no verification (a request that verified nothing carries it)
SENTINEL_GUARD = 0
_guards = count(1)  # VerificationGuard's INCREMENTING_ID


@dataclass(slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    last_timestamp_ms: int = -1
    current_txn_first_offset: int = -1  # currentTxnFirstOffset: -1 when no transaction is open
    coordinator_epoch: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


@dataclass(slots=True)
class TxnMetadata:
    """An open (or completed, not yet replicated) transaction in a partition (Kafka's ``TxnMetadata``)."""

    producer_id: int
    first_offset: int
    last_offset: int = -1  # the marker's offset once completed


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended (Kafka's ``CompletedTxn``): last_offset is the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(slots=True)
class VerificationStateEntry:
    """Kafka's ``VerificationStateEntry``: a producer's verification in progress in one partition."""

    timestamp_ms: int           # when it was created (producer.id.expiration.ms removes it)
    lowest_sequence: int
    epoch: int
    supports_epoch_bump: bool   # the request that created it may bump the epoch (Produce v12+)
    guard: int = field(default_factory=lambda: next(_guards))

    def maybe_update_lowest_sequence_and_epoch(self, sequence: int, epoch: int) -> None:
        if epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence
        if epoch > self.epoch:
            self.epoch = epoch
            self.lowest_sequence = sequence


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}
        # ongoingTxns / unreplicatedTxns: first offset -> TxnMetadata, in offset order (appends only grow)
        self.ongoing_txns: dict[int, TxnMetadata] = {}
        self.unreplicated_txns: dict[int, TxnMetadata] = {}
        # verificationStates: producer id -> its verification in progress here
        self.verification_states: dict[int, VerificationStateEntry] = {}

    # -- KIP-890 verification (UnifiedLog.maybeStartTransactionVerification) -----------------------
    def has_ongoing_transaction(self, producer_id: int, epoch: int) -> bool:
        """``UnifiedLog.hasOngoingTransaction``: a transaction of the producer is open here at ``epoch``."""
        entry = self.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0 and entry.epoch == epoch

    def maybe_start_transaction_verification(self, producer_id: int, sequence: int, epoch: int,
                                             supports_epoch_bump: bool,
                                             now_ms: int) -> tuple[ErrorCode, str | None, int]:
        """``UnifiedLog.maybeStartTransactionVerification``: (error, message, guard).  An epoch below
        the producer's is INVALID_PRODUCER_EPOCH; a transaction already open at this epoch needs no
        verification (SENTINEL_GUARD); otherwise the producer's verification state, created or
        updated (``maybeCreateVerificationStateEntry``), and its guard."""
        entry = self.producers.get(producer_id)
        if entry is not None and epoch < entry.epoch:
            return (ErrorCode.invalid_producer_epoch,
                    f"Epoch of producer {producer_id} is {epoch}, which is smaller than the last seen epoch "
                    f"{entry.epoch}", SENTINEL_GUARD)
        if self.has_ongoing_transaction(producer_id, epoch):
            return ErrorCode.none, None, SENTINEL_GUARD
        state = self.verification_states.get(producer_id)
        if state is None:
            state = self.verification_states[producer_id] = VerificationStateEntry(
                now_ms, sequence, epoch, supports_epoch_bump)
        state.maybe_update_lowest_sequence_and_epoch(sequence, epoch)
        return ErrorCode.none, None, state.guard

    def verification_guard(self, producer_id: int) -> int:
        state = self.verification_states.get(producer_id)
        return SENTINEL_GUARD if state is None else state.guard

    def check(self, h: BatchHeader, guard: int = SENTINEL_GUARD,
              verification_enabled: bool = False) -> tuple[ErrorCode, BatchMetadata | None, str | None]:
        """Validate a batch before append: (error, duplicate-batch-or-None, message), as
        ``UnifiedLog.analyzeAndValidateProducerState`` (origin CLIENT): a duplicate of a retained batch;
        for a transactional batch with no transaction open at its epoch, an older epoch
        (INVALID_PRODUCER_EPOCH) and, with transaction.partition.verification.enable, a ``guard`` other
        than the producer's verification guard (``batchMissingRequiredVerification``: INVALID_TXN_STATE);
        then ``ProducerAppendInfo``'s epoch and sequence checks."""
        if not h.has_producer_id:
            return ErrorCode.none, None, None
        pid = h.producer_id
        entry = self.producers.get(pid)
        if entry is not None and h.producer_epoch == entry.epoch:
            for b in entry.batches:
                if b.first_seq == h.base_sequence and b.last_seq == h.last_sequence:
                    return ErrorCode.none, b, None
        if h.is_transactional and not self.has_ongoing_transaction(pid, h.producer_epoch):
            if entry is not None and h.producer_epoch < entry.epoch:
                return (ErrorCode.invalid_producer_epoch, None,
                        f"Epoch of producer {pid} is {h.producer_epoch}, which is smaller than the last seen epoch "
                        f"{entry.epoch}")
            if verification_enabled and (guard == SENTINEL_GUARD or guard != self.verification_guard(pid)):
                return ErrorCode.invalid_txn_state, None, "Record was not part of an ongoing transaction"
        current = entry.epoch if entry is not None else NO_PRODUCER_EPOCH
        if h.producer_epoch < current:  # checkProducerEpoch
            return (ErrorCode.invalid_producer_epoch, None,
                    f"Epoch of producer {pid} at offset is {h.producer_epoch}, which is smaller than the last "
                    f"seen epoch {current}")
        error = self._check_sequence(h, entry)
        if error is not None:
            return ErrorCode.out_of_order_sequence_number, None, error
        if entry is None:
            return ErrorCode.none, None, None
        if entry.current_txn_first_offset >= 0 and not h.is_transactional:
            # appendDataBatch: a non-transactional write while a transaction is open
            return (
                ErrorCode.invalid_txn_state,
                None,
                f"Expected transactional write from producer {h.producer_id}",
            )
        return ErrorCode.none, None, None

    def _check_sequence(self, h: BatchHeader, entry: ProducerStateEntry | None) -> str | None:
        """``ProducerAppendInfo.checkSequence``: None when the batch's first sequence may follow,
        else why not (OUT_OF_ORDER_SEQUENCE_NUMBER)."""
        pid, seq = h.producer_id, h.base_sequence
        state = self.verification_states.get(pid)
        empty = entry is None or not entry.batches
        if state is not None and state.supports_epoch_bump and seq != 0 and empty:
            return (f"Invalid sequence number for producer {pid}: {seq} (incoming seq. number). Expected "
                    f"sequence 0 for transactions v2 idempotent producer with no existing state.")
        if state is not None and seq > state.lowest_sequence:
            return (f"Out of order sequence number for producer {pid}: {seq} (incoming seq. number), "
                    f"{state.lowest_sequence} (earliest seen sequence)")
        if entry is None:
            return None  # ProducerStateEntry.empty: epoch -1, any sequence
        if h.producer_epoch != entry.epoch:
            if seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                return (f"Invalid sequence number for new epoch of producer {pid}: {h.producer_epoch} (request "
                        f"epoch), {seq} (seq. number), {entry.epoch} (current producer epoch)")
            return None
        # the same epoch: the last sequence kept, -1 when none is (only 0 follows then)
        if entry.epoch != NO_PRODUCER_EPOCH and not in_sequence(entry.last_seq, seq):
            return (f"Out of order sequence number for producer {pid}: {seq} (incoming seq. number), "
                    f"{entry.last_seq} (current end sequence number)")
        return None

    def update(self, h: BatchHeader, first_offset: int, last_offset: int, timestamp_ms: int) -> None:
        """``ProducerAppendInfo.appendDataBatch``: ``timestamp_ms`` is the batch's max timestamp as
        appended (the append time on a LogAppendTime topic), what Kafka keeps as the producer's
        lastTimestamp (DescribeProducers shows it; producer.id.expiration.ms counts from it)."""
        if not h.has_producer_id:
            return
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = self.producers[h.producer_id] = ProducerStateEntry(h.producer_id)
        if h.producer_epoch != entry.epoch:
            entry.epoch = h.producer_epoch
            entry.batches.clear()
        entry.batches.append(
            BatchMetadata(h.base_sequence, h.last_sequence, first_offset, last_offset, timestamp_ms)
        )
        entry.last_timestamp_ms = timestamp_ms
        if h.is_transactional and entry.current_txn_first_offset < 0:
            # appendDataBatch: "Began a new transaction"
            entry.current_txn_first_offset = first_offset
            self.ongoing_txns[first_offset] = TxnMetadata(h.producer_id, first_offset)
        if h.is_transactional:  # UnifiedLog.updateProducers: the verification is done
            self.verification_states.pop(h.producer_id, None)

    # -- transaction markers (origin COORDINATOR) ------------------------------------------------
    def check_end_txn_marker(self, producer_id: int, epoch: int, coordinator_epoch: int,
                             transaction_version: int) -> tuple[ErrorCode, str | None]:
        """``checkProducerEpoch`` and ``checkCoordinatorEpoch`` for a marker from the coordinator."""
        entry = self.producers.get(producer_id)
        current = entry.epoch if entry else NO_PRODUCER_EPOCH
        open_txn = entry is not None and entry.current_txn_first_offset >= 0
        invalid = epoch <= current if transaction_version >= 2 else epoch < current
        # TV2: the same epoch again is a retried marker once the transaction completed, or at the
        # last epoch there is (Short.MAX_VALUE)
        if invalid and not (transaction_version >= 2 and epoch == current and (not open_txn or epoch == 32767)):
            cmp = "<=" if transaction_version >= 2 else "<"
            return ErrorCode.invalid_producer_epoch, (
                f"Epoch of producer {producer_id} is {epoch}, which is {cmp} the last seen epoch {current} "
                f"(TV{transaction_version})")
        current_coordinator = entry.coordinator_epoch if entry is not None else -1  # ProducerStateEntry.empty
        if current_coordinator > coordinator_epoch:
            return ErrorCode.transaction_coordinator_fenced, (
                f"Invalid coordinator epoch for producerId {producer_id}: {coordinator_epoch} (zombie), "
                f"{current_coordinator} (current)")
        return ErrorCode.none, None

    def append_end_txn_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, is_abort: bool,
                              offset: int, now_ms: int) -> CompletedTxn | None:
        """``appendEndTxnMarker`` (after ``check_end_txn_marker``): the ``CompletedTxn`` when a
        transaction was open (an empty one does not move the LSO nor enter the index), with the
        entry's epoch and coordinator epoch updated (``ProducerStateEntry.update``)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id)
        completed = None
        if entry.current_txn_first_offset >= 0:
            completed = CompletedTxn(producer_id, entry.current_txn_first_offset, offset, is_abort)
        if epoch != entry.epoch:  # maybeUpdateProducerEpoch
            entry.epoch = epoch
            entry.batches.clear()
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = -1
        entry.last_timestamp_ms = now_ms
        # UnifiedLog.updateProducers: a marker clears the producer's verification state, unless a
        # transaction version 2 request began verifying the next transaction at the marker's epoch
        state = self.verification_states.get(producer_id)
        if state is not None and not (state.supports_epoch_bump and state.epoch == epoch):
            del self.verification_states[producer_id]
        return completed

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO recorded with an aborted transaction in the index (``lastStableOffset(CompletedTxn)``):
        the first offset of the first open transaction of another producer, else the marker's offset + 1."""
        for txn in self.ongoing_txns.values():
            if txn.producer_id != completed.producer_id:
                return txn.first_offset
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        """``completeTxn``: the transaction leaves ``ongoingTxns`` and waits in ``unreplicatedTxns``."""
        txn = self.ongoing_txns.pop(completed.first_offset)
        txn.last_offset = completed.last_offset
        self.unreplicated_txns[completed.first_offset] = txn

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """``firstUnstableOffset`` after ``onHighWatermarkUpdated(high_watermark)``: the smallest first
        offset of an open transaction or of a completed one whose marker the HW has not passed."""
        if not self.ongoing_txns and not self.unreplicated_txns:
            return None  # no transaction here: every fetch of a plain topic asks, keep it cheap
        for first in [f for f, t in self.unreplicated_txns.items() if t.last_offset < high_watermark]:
            del self.unreplicated_txns[first]
        firsts = [next(iter(d)) for d in (self.ongoing_txns, self.unreplicated_txns) if d]
        return min(firsts) if firsts else None

    def truncate(self, offset: int) -> None:
        """Forget batches at or above ``offset`` after the log was truncated there
        (Kafka rebuilds producer state from the log on truncation): transactions begun at or
        above it are gone; one whose marker was cut off is open again."""
        for first in [f for f in self.ongoing_txns if f >= offset]:
            txn = self.ongoing_txns.pop(first)
            entry = self.producers.get(txn.producer_id)
            if entry is not None:
                entry.current_txn_first_offset = -1
        for first in [f for f, t in self.unreplicated_txns.items() if t.last_offset >= offset]:
            txn = self.unreplicated_txns.pop(first)
            if first < offset:
                txn.last_offset = -1
                self.ongoing_txns[first] = txn
                entry = self.producers.get(txn.producer_id)
                if entry is not None:
                    entry.current_txn_first_offset = first
        self.ongoing_txns = dict(sorted(self.ongoing_txns.items()))
        for pid in list(self.producers):
            entry = self.producers[pid]
            while entry.batches and entry.batches[-1].last_offset >= offset:
                entry.batches.pop()
            if not entry.batches and entry.current_txn_first_offset < 0:
                del self.producers[pid]

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """``onLogStartOffsetIncremented``: completed transactions whose markers are below the new log
        start offset need not wait for the high watermark any more (``removeUnreplicatedTransactions``)."""
        for first in [f for f, t in self.unreplicated_txns.items() if 0 <= t.last_offset < log_start_offset]:
            del self.unreplicated_txns[first]

    def expire(self, now_ms: int, expiration_ms: int) -> None:
        """Drop producers idle for producer.id.expiration.ms (removeExpiredProducers); one with an
        open transaction never expires (``isProducerExpired``)."""
        for pid in [p for p, e in self.producers.items()
                    if e.current_txn_first_offset < 0 and now_ms - e.last_timestamp_ms >= expiration_ms]:
            del self.producers[pid]
        for pid in [p for p, v in self.verification_states.items() if now_ms - v.timestamp_ms >= expiration_ms]:
            del self.verification_states[pid]
