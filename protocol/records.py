"""Record batch v2 (magic 2): header parsing, CRC32C, in-place offset assignment.

Batches stay bytes.  The broker reads the fixed 61-byte header, checks the
CRC32C over ``attributes .. end`` and rewrites ``baseOffset`` and
``partitionLeaderEpoch`` (both outside the CRC).  With LogAppendTime it also
sets the timestamp-type attribute bit and ``maxTimestamp`` and recomputes the
CRC, as Kafka's ``LogValidator`` / ``DefaultRecordBatch.setMaxTimestamp`` do.

The record count is checked against the records (``check_record_count``), as
``LogValidator`` does by iterating them: the record length varints of an
uncompressed batch are walked in place; a compressed batch (gzip, snappy in
both framings, lz4, zstd; ``compression.py``) is decompressed first, as Kafka
decompresses every compressed batch a client produces.  The same walk reads,
when asked, each record's timestamp delta (for ``message.timestamp.before/after.max.ms``)
and key length (for a compacted topic's keyless records), never keys, values
or headers.  Fetch never touches the records.  The log cleaner decodes them
whole (``decode_records``) and writes retained ones back (``encode_batch``),
off the produce and fetch path.  Layout (``DefaultRecordBatch.java``)::

    0  baseOffset            int64
    8  batchLength           int32
    12 partitionLeaderEpoch  int32
    16 magic                 int8
    17 crc                   uint32     CRC32C of bytes [21, end)
    21 attributes            int16
    23 lastOffsetDelta       int32
    27 baseTimestamp         int64
    35 maxTimestamp          int64
    43 producerId            int64
    51 producerEpoch         int16
    53 baseSequence          int32
    57 recordsCount          int32
    61 records ...

Over 500 lines on purpose: every read and write of the batch format (header, CRC, the record
walks, markers, cleaned batches) uses the same offsets and varint readers, kept in one module.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache
from typing import Any

from .compression import compress, decompress
from .errors import CorruptRecordBatch, ErrorCode

HEADER = struct.Struct(">qiibIhiqqqhii")
RECORD_BATCH_OVERHEAD = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength, not counted in batchLength
MIN_RECORD_OVERHEAD = 14  # LegacyRecord.RECORD_OVERHEAD_V0, ByteBufferLogInputStream's floor
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # 1 = LogAppendTime
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40  # baseTimestamp holds the delete horizon (KIP-534), set by the log cleaner

LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


def wrap64(v: int) -> int:
    """``v`` as Java's long arithmetic leaves it (two's complement, 64 bits)."""
    return ((v - LONG_MIN) & 0xFFFFFFFFFFFFFFFF) + LONG_MIN

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1


class Compression:
    NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4


@dataclass(slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        # DefaultRecordBatch.incrementSequence wraps at Integer.MAX_VALUE
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def delete_horizon_ms(self) -> int | None:
        """``DefaultRecordBatch.deleteHorizonMs``: the base timestamp when the delete-horizon bit is set."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG else None


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    return BatchHeader(*HEADER.unpack_from(buf, pos))


def first_batch(buf: bytes | memoryview) -> memoryview | None:
    """The first complete batch of a records field, as ``ByteBufferLogInputStream.nextBatch`` reads
    it (None when there is none), raising CorruptRecordBatch as its ``nextBatchSize`` does."""
    view = memoryview(buf)
    end = len(view)
    if end < LOG_OVERHEAD:
        return None
    (length,) = _I32.unpack_from(view, 8)
    if length < MIN_RECORD_OVERHEAD:
        raise CorruptRecordBatch(
            ErrorCode.corrupt_message,
            f"Record size {length} is less than the minimum record overhead ({MIN_RECORD_OVERHEAD})",
        )
    if end < LOG_OVERHEAD + 5:
        return None
    magic = view[16]
    if magic > 2:
        raise CorruptRecordBatch(ErrorCode.corrupt_message, f"Invalid magic found in record: {_signed(magic)}")
    size = length + LOG_OVERHEAD
    return view[:size] if end >= size else None


def _signed(byte: int) -> int:
    return byte - 256 if byte > 127 else byte


def split_batches(buf: bytes | memoryview) -> list[memoryview]:
    """Split a records field into complete batches, as ``ByteBufferLogInputStream``.

    A batch whose size field is below 14 or whose magic is not 0..2 is
    CORRUPT_MESSAGE.  A trailing partial batch is dropped silently (Kafka stops
    iterating when fewer bytes remain than the batch claims).
    """
    view = memoryview(buf)
    out = []
    pos = 0
    end = len(view)
    while end - pos >= LOG_OVERHEAD:
        (length,) = _I32.unpack_from(view, pos + 8)
        if length < MIN_RECORD_OVERHEAD:
            raise CorruptRecordBatch(
                ErrorCode.corrupt_message,
                f"Record size {length} is less than the minimum record overhead ({MIN_RECORD_OVERHEAD})",
            )
        if end - pos < LOG_OVERHEAD + 5:
            break
        magic = view[pos + 16]
        if magic > 2:
            raise CorruptRecordBatch(ErrorCode.corrupt_message, f"Invalid magic found in record: {_signed(magic)}")
        size = length + LOG_OVERHEAD
        if end - pos < size:
            break
        out.append(view[pos : pos + size])
        pos += size
    return out


def compute_crc(batch: bytes | bytearray | memoryview) -> int:
    return crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:])


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli) of ``data``, Kafka's ``Crc32C.compute``."""
    crc: int = _crc32c()(data)
    return crc


@cache
def _crc32c() -> Any:
    # Imported on the first use, not at start-up: crc32c's __init__ reads its own version
    # through importlib.metadata and imports argparse for its CLI (~20-35 ms).
    from crc32c import crc32c

    return crc32c


def validate_batch(batch: memoryview, max_message_bytes: int) -> BatchHeader:
    """Kafka's per-batch checks for a client produce (UnifiedLog.analyzeAndValidateRecords
    and LogValidator), in Kafka's order.  Raises ``CorruptRecordBatch``.
    """
    if len(batch) < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordBatch(
            ErrorCode.corrupt_message,
            f"Record batch is corrupt (the size {len(batch)} is smaller than the minimum "
            f"allowed overhead {RECORD_BATCH_OVERHEAD})",
        )
    h = parse_header(batch)
    if h.magic != 2:
        # ProduceRequest.validateRecords: v3+ only accepts magic v2
        raise CorruptRecordBatch(ErrorCode.invalid_record, "Produce requests with version 3 and above must use magic v2")
    if h.base_offset != 0:
        raise CorruptRecordBatch(
            ErrorCode.invalid_record,
            f"The baseOffset of the record batch in the append to a partition should be 0, but it is {h.base_offset}",
        )
    if h.size_bytes > max_message_bytes:
        raise CorruptRecordBatch(
            ErrorCode.message_too_large,
            f"The record batch size in the append is {h.size_bytes} bytes which exceeds the "
            f"maximum configured value of {max_message_bytes}.",
        )
    actual = compute_crc(batch)
    if actual != h.crc:
        raise CorruptRecordBatch(
            ErrorCode.corrupt_message,
            f"Record is corrupt (stored crc = {h.crc}, computed crc = {actual})",
        )
    # LogValidator.validateBatch (origin CLIENT), in its order
    if h.last_offset_delta < 0:
        raise CorruptRecordBatch(
            ErrorCode.invalid_record, f"Batch has an invalid offset range: [0, {h.last_offset_delta}]")
    if h.records_count <= 0:
        raise CorruptRecordBatch(ErrorCode.invalid_record, f"Invalid reported count for record batch: {h.records_count}")
    if h.records_count != h.last_offset_delta + 1:
        raise CorruptRecordBatch(
            ErrorCode.invalid_record,
            f"Inconsistent batch offset range [0, {h.last_offset_delta}] and count of records {h.records_count}",
        )
    if h.is_control:
        raise CorruptRecordBatch(ErrorCode.invalid_record, "Clients are not allowed to write control records")
    if h.has_producer_id and h.base_sequence < 0:
        raise CorruptRecordBatch(
            ErrorCode.invalid_record,
            f"Invalid sequence number {h.base_sequence} in record batch with producerId {h.producer_id}",
        )
    return h


# The smallest record: length, attributes, timestamp delta, offset delta, key length, value
# length and header count, one byte each (DefaultRecord.sizeInBytes of an empty record).
MIN_RECORD_SIZE = 7


@dataclass(slots=True)
class RecordScan:
    """What a walk over a batch's records read besides their count (``check_record_count``): the
    smallest and largest timestamp delta (asked with ``timestamps``; 0 and 0 otherwise) and whether
    some record has a null key (asked with ``keys``)."""

    min_timestamp_delta: int = 0
    max_timestamp_delta: int = 0
    keyless: bool = False


_NO_SCAN = RecordScan()


def check_record_count(batch: memoryview, h: BatchHeader, *, timestamps: bool = False,
                       keys: bool = False) -> RecordScan:
    """Check that ``batch`` holds exactly ``h.records_count`` records, as Kafka's
    ``LogValidator`` finds out by iterating them (``DefaultRecordBatch.RecordIterator``):
    fewer is "premature EOF", more is "records still remaining", both INVALID_RECORD.

    An uncompressed batch's record length varints are walked in place (a count above what
    its length can hold is refused without walking).  A compressed batch is decompressed
    first (``compression.decompress``; a payload that cannot be is UNKNOWN_SERVER_ERROR, as
    the ``KafkaException`` Kafka's stream throws), then walked the same way.  Only the framing
    is checked: Kafka's ``DefaultRecord.readFrom`` also checks each record's inner structure
    (an uncompressed batch) or reads it instead of trusting the length (``readPartiallyFrom``,
    a compressed one).  Raises ``CorruptRecordBatch``.

    With ``timestamps`` the same walk reads each record's timestamp delta (the varlong after its
    attributes byte) and returns the smallest and largest; with ``keys`` also its key length (after
    the offset delta) and whether one is null (negative): what ``LogValidator.validateRecord`` needs
    of a record for ``message.timestamp.before/after.max.ms`` and a compacted topic.  A record too
    short to hold them is "Found invalid record structure" (INVALID_RECORD), as ``readFrom`` says.
    """
    count = h.records_count
    if h.compression == Compression.NONE:
        body: bytes | memoryview = batch
        pos = RECORD_BATCH_OVERHEAD
    else:
        body = decompress(h.compression, batch[RECORD_BATCH_OVERHEAD:])
        pos = 0
    end = len(body)
    if count > (end - pos) // MIN_RECORD_SIZE:
        raise _invalid("Incorrect declared batch size, premature EOF reached")
    fields = timestamps or keys
    lo = hi = 0
    keyless = False
    n = 0
    while n < count:
        if pos >= end:
            raise _invalid("Incorrect declared batch size, premature EOF reached")
        b = body[pos]
        if b < 0x80:  # one-byte varint: a record body below 64 bytes
            pos += 1
            size = (b >> 1) ^ -(b & 1)
        elif pos + 1 < end and body[pos + 1] < 0x80:  # two bytes: below 8 KiB
            v = (b & 0x7F) | (body[pos + 1] << 7)
            pos += 2
            size = (v >> 1) ^ -(v & 1)
        else:
            size, pos = _record_size(body, pos, end)
        if size < 0 or size > end - pos:
            raise _invalid(f"Invalid record size: expected {size} bytes in record payload, but instead the "
                           f"buffer has only {end - pos} remaining bytes.")
        if fields:
            rec_end = pos + size
            p = pos + 1  # after the attributes byte
            if p >= rec_end:
                raise _invalid("Found invalid record structure")
            b = body[p]
            if b < 0x80:  # within 64 ms of the base timestamp
                p += 1
                delta = (b >> 1) ^ -(b & 1)
            elif p + 1 < rec_end and body[p + 1] < 0x80:  # within 8 s
                v = (b & 0x7F) | (body[p + 1] << 7)
                p += 2
                delta = (v >> 1) ^ -(v & 1)
            else:
                delta, p = _field_varint(body, p, rec_end, 10)
            if n == 0:
                lo = hi = delta
            elif delta < lo:
                lo = delta
            elif delta > hi:
                hi = delta
            if keys:
                # the offset delta, skipped
                if p + 1 < rec_end and body[p] < 0x80:
                    p += 1
                elif p + 2 < rec_end and body[p + 1] < 0x80:
                    p += 2
                else:
                    _, p = _field_varint(body, p, rec_end, 5)
                if p >= rec_end:
                    raise _invalid("Found invalid record structure")
                b = body[p]
                if b < 0x80:
                    key_size = (b >> 1) ^ -(b & 1)
                else:
                    key_size, p = _field_varint(body, p, rec_end, 5)
                if key_size < 0:
                    keyless = True
        pos += size
        n += 1
    if pos != end:
        raise _invalid("Incorrect declared batch size, records still remaining in file")
    return RecordScan(lo, hi, keyless) if fields else _NO_SCAN


def _field_varint(body: bytes | memoryview, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """A zigzag varint (5 bytes) or varlong (10) inside one record ending at ``end``: running past
    it, or a varint too long, is ``DefaultRecord.readFrom``'s "Found invalid record structure"."""
    return _varint(body, pos, max_bytes, end, "Found invalid record structure", "Found invalid record structure")


def _record_size(body: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """A record's length varint of two bytes or more (``ByteUtils.readVarint``).  Kafka reads it
    outside ``DefaultRecord.readFrom``'s try: one over 5 bytes is an ``IllegalArgumentException``
    that reaches the partition as UNKNOWN_SERVER_ERROR; running out of bytes is premature EOF."""
    value = 0
    for i in range(5):
        if pos >= end:
            raise _invalid("Incorrect declared batch size, premature EOF reached")
        b = body[pos]
        pos += 1
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            value &= 0xFFFFFFFF
            return (value >> 1) ^ -(value & 1), pos
    raise CorruptRecordBatch(ErrorCode.unknown_server_error, "Varint is too long, the most significant bit in the "
                             "5th byte is set")


def clear_log_append_time(batch: bytes | bytearray | memoryview) -> bytes:
    """``batch`` with the LogAppendTime attribute cleared and its CRC recomputed: what a
    CreateTime topic stores of a client batch that set it (``LogValidator`` reads every record's
    timestamp as the batch's maxTimestamp, keeps that as the maximum, and
    ``DefaultRecordBatch.setMaxTimestamp(CREATE_TIME, ...)`` rewrites the attributes)."""
    out = bytearray(batch)
    (attrs,) = _I16.unpack_from(out, ATTRIBUTES_OFFSET)
    _I16.pack_into(out, ATTRIBUTES_OFFSET, attrs & ~TIMESTAMP_TYPE_MASK)
    _U32.pack_into(out, CRC_OFFSET, compute_crc(out))
    return bytes(out)


_ONE_COPY_FROM = 8192  # batch bytes from which assign_offsets joins views rather than copying twice


def assign_offsets(
    batch: memoryview | bytes,
    base_offset: int,
    partition_leader_epoch: int,
    log_append_time_ms: int | None = None,
) -> bytes:
    """Return the stored form of ``batch``: offsets and leader epoch set in place.

    ``log_append_time_ms`` set means the topic uses LogAppendTime: the
    timestamp-type bit and maxTimestamp change, so the CRC is recomputed.
    """
    if log_append_time_ms is None and len(batch) > _ONE_COPY_FROM:
        # one copy: the two new fields joined with views of the rest, where a bytearray and bytes() of it
        # copy every byte twice (bench/assign_offsets.py: ~45x faster for a 1 MB batch; below ~8 KB
        # the two copies cost less than the views)
        view = memoryview(batch)
        return b"".join((_I64.pack(base_offset), view[8:12], _I32.pack(partition_leader_epoch), view[16:]))
    out = bytearray(batch)
    _I64.pack_into(out, 0, base_offset)
    _I32.pack_into(out, 12, partition_leader_epoch)
    if log_append_time_ms is None:
        return bytes(out)
    # LogAppendTime: the attributes and max timestamp change, and the CRC with them
    (attrs,) = _I16.unpack_from(out, ATTRIBUTES_OFFSET)
    _I16.pack_into(out, ATTRIBUTES_OFFSET, attrs | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(out, MAX_TIMESTAMP_OFFSET, log_append_time_ms)
    _U32.pack_into(out, CRC_OFFSET, compute_crc(out))
    return bytes(out)


# -- record walking (ListOffsets by timestamp, and produce's record errors once a scan found one) --


def _invalid(message: str) -> CorruptRecordBatch:
    # InvalidRecordException: Errors.INVALID_RECORD through ReplicaManager.fetchOffset's Errors.forException
    return CorruptRecordBatch(ErrorCode.invalid_record, message)


def _varint(buf: bytes | memoryview, pos: int, max_bytes: int = 5, end: int | None = None,
            past_end: str = "Incorrect declared batch size, premature EOF reached",
            too_long: str = "Found invalid record structure (varint too long)") -> tuple[int, int]:
    """A zigzag varint (ByteUtils.readVarint: 5 bytes at most, 32 bits) or varlong (10, 64 bits) read
    from ``pos`` up to ``end`` (the buffer's end by default); INVALID_RECORD with ``past_end`` or
    ``too_long`` when it cannot be."""
    limit = len(buf) if end is None else end
    bits = 7 * max_bytes - (3 if max_bytes == 5 else 6)  # 32 or 64
    result = 0
    for i in range(max_bytes):
        if pos >= limit:
            raise _invalid(past_end)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            result &= (1 << bits) - 1
            return (result >> 1) ^ -(result & 1), pos
    raise _invalid(too_long)


def _walk_records(buf: bytes | memoryview, pos: int, count: int) -> list[tuple[int, int, int]]:
    """(offset delta, timestamp delta, key size) of ``count`` records from ``pos`` (a key size
    below 0 is a null key), checked as ``DefaultRecord.readFrom``; bytes left after the last
    record are an error (``RecordIterator.next``: "records still remaining")."""
    out = []
    end_all = len(buf)
    for _ in range(count):
        size, pos = _varint(buf, pos)
        if size < 0 or end_all - pos < size:
            raise _invalid(f"Invalid record size: expected {size} bytes in record payload, "
                           f"but the buffer has only {end_all - pos} remaining bytes")
        end = pos + size
        rec = buf[pos:end]
        if not rec:
            raise _invalid("Found invalid record structure")
        ts_delta, p = _varint(rec, 1, 10)  # after the attributes byte
        off_delta, p = _varint(rec, p)
        key_size, p = _varint(rec, p)
        p += max(key_size, 0)
        n, p = _varint(rec, p)  # value: a negative length is null
        p += max(n, 0)
        n_headers, p = _varint(rec, p)
        if n_headers < 0 or n_headers > len(rec) - min(p, len(rec)):
            raise _invalid(f"Found invalid number of record headers {n_headers}")
        for _h in range(n_headers):
            n, p = _varint(rec, p)
            if n < 0:
                raise _invalid(f"Invalid negative header key size {n}")
            p += n
            n, p = _varint(rec, p)
            p += max(n, 0)
        if p != size:
            raise _invalid(f"Invalid record size: expected to read {size} bytes in record payload, but instead read {p}")
        out.append((off_delta, ts_delta, key_size))
        pos = end
    if pos != end_all:
        raise _invalid("Incorrect declared batch size, records still remaining in file")
    return out


def _records_body(view: memoryview, h: BatchHeader) -> bytes | memoryview:
    if h.compression == Compression.NONE:
        return view[RECORD_BATCH_OVERHEAD:]
    return decompress(h.compression, view[RECORD_BATCH_OVERHEAD:])


def record_timestamps(batch: bytes | memoryview) -> list[tuple[int, int]]:
    """(offset, timestamp) of every record of a stored batch, as Kafka's ``DefaultRecordBatch``
    iterator reads them: a compressed batch's records section is decompressed first
    (``compression.decompress``), and with LogAppendTime every record's timestamp is the
    batch's maxTimestamp (``RecordIterator`` passes it to ``DefaultRecord.readFrom`` as
    ``logAppendTime``).

    Used only to answer ListOffsets by timestamp exactly (``FileRecords.searchForTimestamp``,
    ``RecordBatch.offsetOfMaxTimestamp``).  Raises ``CorruptRecordBatch``: INVALID_RECORD for a
    malformed record, UNKNOWN_SERVER_ERROR (``compression.DecompressionError``) for a payload
    that cannot be decompressed.  Every record is read, as ``iterator()`` does for a compressed
    batch (an uncompressed one Kafka reads lazily; its records were validated on produce).
    """
    view = memoryview(batch)
    h = parse_header(view)
    if h.records_count < 0:
        raise _invalid(f"Found invalid record count {h.records_count} in magic v{h.magic} batch")
    if h.records_count == 0:
        return []
    body = _records_body(view, h)
    log_append_time = h.max_timestamp if h.attributes & TIMESTAMP_TYPE_MASK else None
    return [
        (h.base_offset + off_delta,
         wrap64(h.base_timestamp + ts_delta) if log_append_time is None else log_append_time)
        for off_delta, ts_delta, _key in _walk_records(body, 0, h.records_count)
    ]


def record_fields(batch: bytes | memoryview, h: BatchHeader) -> list[tuple[int, int, bool]]:
    """(offset delta, timestamp, has key) of every record of a produced batch, read whole as
    ``DefaultRecord.readFrom`` reads them (a compressed batch decompressed): what
    ``LogValidator.validateRecord`` looks at.  A record's timestamp is baseTimestamp + its delta in
    Java's long arithmetic, or the batch's maxTimestamp when the batch says LogAppendTime.  Only
    called when ``check_record_count``'s scan found something to report.  Raises
    ``CorruptRecordBatch``."""
    view = memoryview(batch)
    body = _records_body(view, h)
    lat = h.max_timestamp if h.attributes & TIMESTAMP_TYPE_MASK else None
    return [(off, wrap64(h.base_timestamp + ts) if lat is None else lat, key >= 0)
            for off, ts, key in _walk_records(body, 0, h.records_count)]


# -- whole records: the log cleaner's reading and writing (never on produce or fetch) --


@dataclass(slots=True)
class Record:
    """One record of a v2 batch (``DefaultRecord``): its offset delta, its timestamp (absolute:
    the batch's base timestamp plus its delta), key, value and headers (null key/value: None)."""

    offset_delta: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[bytes, bytes | None]]


def decode_records(batch: bytes | memoryview) -> tuple[BatchHeader, list[Record]]:
    """The header and every record of a stored batch, decoded whole (a compressed batch
    decompressed first): what the log cleaner reads of a batch it may rewrite.  A record's
    timestamp is its own (base timestamp + delta, also when the base timestamp is a delete
    horizon), not the LogAppendTime a reader would see.  Raises ``CorruptRecordBatch``."""
    view = memoryview(batch)
    h = parse_header(view)
    if h.records_count <= 0:
        return h, []
    body = _records_body(view, h)
    out = []
    pos = 0
    for _ in range(h.records_count):
        size, pos = _varint(body, pos)
        end = pos + size
        if size < 0 or end > len(body):
            raise _invalid(f"Invalid record size: expected {size} bytes in record payload")
        rec = body[pos:end]
        ts_delta, p = _varint(rec, 1, 10)
        off_delta, p = _varint(rec, p)
        key, p = _bytes_at(rec, p)
        value, p = _bytes_at(rec, p)
        n_headers, p = _varint(rec, p)
        headers = []
        for _h in range(max(n_headers, 0)):
            hk, p = _bytes_at(rec, p)
            hv, p = _bytes_at(rec, p)
            headers.append((hk or b"", hv))
        out.append(Record(off_delta, wrap64(h.base_timestamp + ts_delta), key, value, headers))
        pos = end
    return h, out


def _bytes_at(rec: bytes | memoryview, p: int) -> tuple[bytes | None, int]:
    n, p = _varint(rec, p)
    if n < 0:
        return None, p
    if p + n > len(rec):
        raise _invalid("Found invalid record structure")
    return bytes(rec[p:p + n]), p + n


def encode_records(records: list[Record], base_timestamp: int) -> bytes:
    """The records section of a v2 batch (``DefaultRecord.writeTo``: attributes 0, the deltas
    against ``base_timestamp`` and the offset deltas as given)."""
    out = bytearray()
    for r in records:
        rec = bytearray(b"\0")
        rec += _zigzag(wrap64(r.timestamp - base_timestamp)) + _zigzag(r.offset_delta)
        rec += _bytes_field(r.key) + _bytes_field(r.value)
        rec += _zigzag(len(r.headers))
        for hk, hv in r.headers:
            rec += _bytes_field(hk) + _bytes_field(hv)
        out += _zigzag(len(rec)) + rec
    return bytes(out)


def encode_batch(records: list[Record], *, base_offset: int, last_offset_delta: int, attributes: int,
                 base_timestamp: int, max_timestamp: int, producer_id: int, producer_epoch: int,
                 base_sequence: int, partition_leader_epoch: int) -> bytes:
    """A v2 batch around ``records`` (``MemoryRecordsBuilder`` with its header fields given, as
    ``MemoryRecords.buildRetainedRecordsInto`` fills them): compressed with the codec of
    ``attributes`` (``compression.compress``), the record count the records', the CRC computed."""
    body = encode_records(records, base_timestamp)
    codec = attributes & COMPRESSION_MASK
    if codec != Compression.NONE:
        body = compress(codec, body)
    head = HEADER.pack(
        base_offset, RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(body), partition_leader_epoch, 2, 0, attributes,
        last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, len(records))
    out = bytearray(head) + body
    _U32.pack_into(out, CRC_OFFSET, compute_crc(out))
    return bytes(out)


def empty_batch(h: BatchHeader) -> bytes:
    """``DefaultRecordBatch.writeEmptyHeader``: a batch of no records keeping ``h``'s offsets, producer
    metadata, timestamp type, max timestamp (base timestamp -1) and transactional and control flags
    (what the cleaner keeps of a batch it must not drop, BatchRetention.RETAIN_EMPTY)."""
    attributes = h.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_FLAG | CONTROL_FLAG)
    head = HEADER.pack(h.base_offset, RECORD_BATCH_OVERHEAD - LOG_OVERHEAD, h.partition_leader_epoch, 2, 0,
                       attributes, h.last_offset_delta, -1, h.max_timestamp, h.producer_id,
                       h.producer_epoch, h.base_sequence, 0)
    out = bytearray(head)
    _U32.pack_into(out, CRC_OFFSET, compute_crc(out))
    return bytes(out)


def build_batch(
    records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    *,
    base_timestamp: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    attributes: int = 0,
    payload: bytes | None = None,
    timestamps: list[int] | None = None,
) -> bytes:
    """Build an uncompressed v2 batch (a test and tool helper; the broker builds only
    end-transaction markers with it, ``build_end_txn_marker``).

    ``payload`` replaces the encoded records (to build a batch around a
    pre-compressed blob, set ``attributes`` accordingly).  ``timestamps`` gives each
    record its own timestamp (deltas against ``base_timestamp``, which may be above
    some of them, as a producer's first record's may); the max timestamp is theirs.
    """
    stamps = timestamps if timestamps is not None else [base_timestamp] * len(records)
    body = bytearray()
    if payload is None:
        for i, (key, value, headers) in enumerate(records):
            rec = bytearray(b"\0")
            rec += _zigzag(stamps[i] - base_timestamp) + _zigzag(i)
            rec += _bytes_field(key) + _bytes_field(value)
            rec += _zigzag(len(headers))
            for hk, hv in headers:
                rec += _bytes_field(hk.encode()) + _bytes_field(hv)
            body += _zigzag(len(rec)) + rec
    else:
        body += payload
    n = max(len(records), 1)
    max_timestamp = max(stamps) if timestamps else base_timestamp
    head = HEADER.pack(
        0, RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(body), -1, 2, 0, attributes, n - 1,
        base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, n,
    )
    out = bytearray(head) + body
    _U32.pack_into(out, CRC_OFFSET, compute_crc(out))
    return bytes(out)


# ControlRecordType (the control record's key: version int16 0, type int16)
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")  # EndTransactionMarker value v0: version int16, coordinatorEpoch int32


def build_end_txn_marker(producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                         timestamp_ms: int) -> bytes:
    """The control batch a transaction coordinator's WriteTxnMarkers leaves in a partition
    (``MemoryRecords.withEndTransactionMarker``): transactional and control attributes, the
    producer id and epoch, base sequence -1 (NO_SEQUENCE), CreateTime ``timestamp_ms``, and one
    record: key ``ControlRecordType`` (version 0, ABORT=0 / COMMIT=1), value ``EndTransactionMarker``
    (version 0, coordinator epoch), no headers.  Base offset 0, to be assigned on append.
    """
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = _END_TXN_VALUE.pack(0, coordinator_epoch)
    return build_batch([(key, value, [])], base_timestamp=timestamp_ms, producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=NO_SEQUENCE,
                       attributes=TRANSACTIONAL_FLAG | CONTROL_FLAG)


def _zigzag(v: int) -> bytes:
    v = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _bytes_field(b: bytes | None) -> bytes:
    if b is None:
        return _zigzag(-1)
    return _zigzag(len(b)) + b
