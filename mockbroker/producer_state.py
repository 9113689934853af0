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
accepted at any sequence, as ``checkSequence`` does for NO_PRODUCER_EPOCH.
Producer id -1 means no checks at all.
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

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}

    def check(self, h: BatchHeader) -> tuple[ErrorCode, BatchMetadata | None, str | None]:
        """Validate a batch before append: (error, duplicate-batch-or-None, message)."""
        if not h.has_producer_id:
            return ErrorCode.none, None, None
        entry = self.producers.get(h.producer_id)
        if entry is None:
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
        return ErrorCode.none, None, None

    def update(self, h: BatchHeader, first_offset: int, last_offset: int, now_ms: int) -> None:
        if not h.has_producer_id:
            return
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = self.producers[h.producer_id] = ProducerStateEntry(h.producer_id)
        if h.producer_epoch != entry.epoch:
            entry.epoch = h.producer_epoch
            entry.batches.clear()
        entry.batches.append(
            BatchMetadata(h.base_sequence, h.last_sequence, first_offset, last_offset, h.max_timestamp)
        )
        entry.last_timestamp_ms = now_ms

    def truncate(self, offset: int) -> None:
        """Forget batches at or above ``offset`` after the log was truncated there
        (Kafka rebuilds producer state from the log on truncation)."""
        for pid in list(self.producers):
            entry = self.producers[pid]
            while entry.batches and entry.batches[-1].last_offset >= offset:
                entry.batches.pop()
            if not entry.batches:
                del self.producers[pid]

    def expire(self, now_ms: int, expiration_ms: int) -> None:
        """Drop producers idle for producer.id.expiration.ms (removeExpiredProducers)."""
        for pid in [p for p, e in self.producers.items() if now_ms - e.last_timestamp_ms >= expiration_ms]:
            del self.producers[pid]
