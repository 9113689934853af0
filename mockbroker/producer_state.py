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
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from protocol.errors import ErrorCode
from protocol.records import BatchHeader

NUM_BATCHES_TO_RETAIN = 5
INT_MAX = (1 << 31) - 1
NO_PRODUCER_EPOCH = -1


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


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}
        # ongoingTxns / unreplicatedTxns: first offset -> TxnMetadata, in offset order (appends only grow)
        self.ongoing_txns: dict[int, TxnMetadata] = {}
        self.unreplicated_txns: dict[int, TxnMetadata] = {}

    def check(self, h: BatchHeader) -> tuple[ErrorCode, BatchMetadata | None, str | None]:
        """Validate a batch before append: (error, duplicate-batch-or-None, message)."""
        if not h.has_producer_id:
            return ErrorCode.none, None, None
        entry = self.producers.get(h.producer_id)
        if entry is None:
            if h.producer_epoch < NO_PRODUCER_EPOCH:
                # checkProducerEpoch against ProducerStateEntry.empty (epoch -1)
                return (ErrorCode.invalid_producer_epoch, None,
                        f"Epoch of producer {h.producer_id} at offset is {h.producer_epoch}, which is smaller "
                        f"than the last seen epoch {NO_PRODUCER_EPOCH}")
            return ErrorCode.none, None, None
        if h.producer_epoch == entry.epoch:
            for b in entry.batches:
                if b.first_seq == h.base_sequence and b.last_seq == h.last_sequence:
                    return ErrorCode.none, b, None
        if h.producer_epoch < entry.epoch:
            return (
                ErrorCode.invalid_producer_epoch,
                None,
                f"Epoch of producer {h.producer_id} at offset is {h.producer_epoch}, "
                f"which is smaller than the last seen epoch {entry.epoch}",
            )
        if h.producer_epoch != entry.epoch:
            if h.base_sequence != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                return (
                    ErrorCode.out_of_order_sequence_number,
                    None,
                    f"Invalid sequence number for new epoch of producer {h.producer_id} at offset: "
                    f"{h.producer_epoch} (request epoch), {h.base_sequence} (seq. number), "
                    f"{entry.epoch} (current producer epoch)",
                )
        elif entry.batches and not in_sequence(entry.last_seq, h.base_sequence):
            return (
                ErrorCode.out_of_order_sequence_number,
                None,
                f"Out of order sequence number for producer {h.producer_id}: "
                f"{h.base_sequence} (incoming seq. number), {entry.last_seq} (current end sequence number)",
            )
        if entry.current_txn_first_offset >= 0 and not h.is_transactional:
            # appendDataBatch: a non-transactional write while a transaction is open
            return (
                ErrorCode.invalid_txn_state,
                None,
                f"Expected transactional write from producer {h.producer_id}",
            )
        return ErrorCode.none, None, None

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
