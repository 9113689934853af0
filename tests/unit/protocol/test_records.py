"""Record batch v2: header parsing, validation against corrupt input, offset assignment."""

from __future__ import annotations

import struct

import pytest

from protocol.errors import CorruptRecordBatch, ErrorCode
from protocol.records import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    TIMESTAMP_TYPE_MASK,
    Compression,
    assign_offsets,
    build_batch,
    compute_crc,
    decode_records,
    empty_batch,
    encode_batch,
    parse_header,
    record_timestamps,
    split_batches,
    validate_batch,
)

RECS = [(b"k%d" % i, b"value-%d" % i, [("h", b"%d" % i)]) for i in range(5)]


def batch(**kw):
    return build_batch(RECS, base_timestamp=1000, **kw)


def err_of(b, max_bytes=1 << 20):
    with pytest.raises(CorruptRecordBatch) as ei:
        validate_batch(memoryview(b), max_bytes)
    return ei.value.error


def test_valid_batch_header():
    b = batch(producer_id=7, producer_epoch=1, base_sequence=10)
    h = validate_batch(memoryview(b), 1 << 20)
    assert (h.magic, h.records_count, h.last_offset_delta) == (2, 5, 4)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence) == (7, 1, 10, 14)
    assert h.size_bytes == len(b) and h.compression == Compression.NONE


def test_last_sequence_wraps_at_int_max():
    b = batch(producer_id=7, producer_epoch=0, base_sequence=2**31 - 2)
    assert parse_header(b).last_sequence == 2


def test_bad_crc_is_corrupt_message():
    b = bytearray(batch())
    b[-1] ^= 0xFF
    assert err_of(bytes(b)) == ErrorCode.corrupt_message


def test_crc_over_attributes_only_base_offset_is_outside():
    b = bytearray(batch())
    struct.pack_into(">i", b, 12, 99)  # partitionLeaderEpoch is outside the CRC
    validate_batch(memoryview(bytes(b)), 1 << 20)


def test_non_zero_base_offset_is_invalid_record():
    b = bytearray(batch())
    struct.pack_into(">q", b, 0, 5)
    assert err_of(bytes(b)) == ErrorCode.invalid_record


def test_too_large_is_message_too_large():
    b = batch()
    assert err_of(b, max_bytes=len(b) - 1) == ErrorCode.message_too_large
    validate_batch(memoryview(b), len(b))


def test_count_mismatch_is_invalid_record():
    b = bytearray(batch())
    struct.pack_into(">i", b, 57, 9)  # recordsCount
    struct.pack_into(">I", b, CRC_OFFSET, compute_crc(b))
    assert err_of(bytes(b)) == ErrorCode.invalid_record


def test_control_batch_from_client_is_invalid_record():
    assert err_of(batch(attributes=0x20)) == ErrorCode.invalid_record


def test_old_magic_is_invalid_record():
    b = bytearray(batch())
    b[16] = 1
    assert err_of(bytes(b)) == ErrorCode.invalid_record


def test_split_batches_size_below_minimum_is_corrupt():
    b = bytearray(batch())
    struct.pack_into(">i", b, 8, 13)
    with pytest.raises(CorruptRecordBatch) as ei:
        split_batches(bytes(b))
    assert ei.value.error == ErrorCode.corrupt_message


def test_split_batches_bad_magic_is_corrupt():
    b = bytearray(batch())
    b[16] = 7
    with pytest.raises(CorruptRecordBatch):
        split_batches(bytes(b))


def test_split_batches_drops_trailing_partial():
    one = batch()
    parts = split_batches(one + one + one[:30])
    assert [bytes(p) for p in parts] == [one, one]
    assert split_batches(one[:-1]) == []


def test_assign_offsets_keeps_crc_for_create_time():
    b = batch()
    stored = assign_offsets(b, 1234, 3)
    h = parse_header(stored)
    assert (h.base_offset, h.partition_leader_epoch) == (1234, 3)
    assert compute_crc(stored) == h.crc == parse_header(b).crc
    assert stored[ATTRIBUTES_OFFSET:] == b[ATTRIBUTES_OFFSET:]


def test_assign_offsets_log_append_time_rewrites_and_recomputes_crc():
    b = batch()
    stored = assign_offsets(b, 10, 0, log_append_time_ms=99_000)
    h = parse_header(stored)
    assert h.attributes & TIMESTAMP_TYPE_MASK
    assert h.max_timestamp == 99_000
    assert compute_crc(stored) == h.crc != parse_header(b).crc
    validate_batch(memoryview(bytearray(assign_offsets(stored, 0, 0))), 1 << 20)


def test_record_timestamps():
    recs = [(b"k", b"v", []) for _ in range(3)]
    b = assign_offsets(build_batch(recs, base_timestamp=500), 40, 0)
    assert record_timestamps(b) == [(40, 500), (41, 500), (42, 500)]
    # compressed batches are decompressed (tests/unit/storage/test_list_offsets_compressed.py); this is no gzip
    gz = build_batch([(None, None, [])], attributes=Compression.GZIP, payload=b"\x1f\x8b....")
    with pytest.raises(CorruptRecordBatch) as e:
        record_timestamps(gz)
    assert e.value.error == ErrorCode.unknown_server_error


def test_decode_and_encode_records_round_trip():
    """What the log cleaner reads of a batch and writes back: every field of every record, a negative
    timestamp delta, null keys and values, headers; each codec in the framing Kafka writes."""
    stamps = [1000, 940, 1200]
    recs = [(b"k0", b"v0", [("h", b"1"), ("n", None)]), (None, b"v1", []), (b"k2", None, [])]
    plain = build_batch(recs, base_timestamp=1000, timestamps=stamps, producer_id=9, producer_epoch=2,
                        base_sequence=4)
    h, records = decode_records(plain)
    assert [(r.offset_delta, r.timestamp, r.key, r.value, r.headers) for r in records] == [
        (0, 1000, b"k0", b"v0", [(b"h", b"1"), (b"n", None)]), (1, 940, None, b"v1", []), (2, 1200, b"k2", None, [])]
    again = encode_batch(records, base_offset=0, last_offset_delta=2, attributes=0, base_timestamp=1000,
                         max_timestamp=1200, producer_id=9, producer_epoch=2, base_sequence=4,
                         partition_leader_epoch=-1)
    assert again == plain
    for codec in (Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD):
        kept = [records[0], records[2]]
        b = encode_batch(kept, base_offset=40, last_offset_delta=2, attributes=codec | 0x40, base_timestamp=5000,
                         max_timestamp=1200, producer_id=9, producer_epoch=2, base_sequence=4,
                         partition_leader_epoch=3)
        bh, back = decode_records(b)
        assert (bh.base_offset, bh.last_offset_delta, bh.records_count, bh.compression) == (40, 2, 2, codec)
        assert bh.delete_horizon_ms == 5000 and bh.crc == compute_crc(b)
        assert [(r.offset_delta, r.timestamp, r.key) for r in back] == [(0, 1000, b"k0"), (2, 1200, b"k2")]
        assert record_timestamps(b) == [(40, 1000), (42, 1200)]  # the delete horizon is only the base
    assert parse_header(plain).delete_horizon_ms is None


def test_an_empty_batch_keeps_its_offsets_and_producer():
    """DefaultRecordBatch.writeEmptyHeader: the cleaner's BatchRetention.RETAIN_EMPTY."""
    b = assign_offsets(build_batch([(b"k", b"v", [])] * 3, base_timestamp=700, producer_id=5, producer_epoch=1,
                                   base_sequence=0, attributes=0x10), 20, 4)
    e = empty_batch(parse_header(b))
    h = parse_header(e)
    assert (h.base_offset, h.last_offset_delta, h.records_count, len(e)) == (20, 2, 0, 61)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.is_transactional) == (5, 1, 0, True)
    assert (h.base_timestamp, h.max_timestamp, h.partition_leader_epoch) == (-1, 700, 4)
    assert h.crc == compute_crc(e) and decode_records(e)[1] == [] and record_timestamps(e) == []


@pytest.mark.parametrize("records", [10, 1000])  # below and above assign_offsets' one-copy threshold
def test_assign_offsets_sets_offset_and_epoch_only(records):
    from protocol.records import _ONE_COPY_FROM, assign_offsets, build_batch, parse_header

    batch = build_batch([(b"k", b"v" * 100, [])] * records)
    assert (len(batch) > _ONE_COPY_FROM) == (records == 1000)
    for given in (batch, memoryview(batch)):
        stored = assign_offsets(given, 1234, 7)
        assert isinstance(stored, bytes) and len(stored) == len(batch)
        assert stored[:8] == (1234).to_bytes(8, "big") and stored[12:16] == (7).to_bytes(4, "big")
        assert stored[8:12] == batch[8:12] and stored[16:] == batch[16:]
        assert parse_header(stored).base_offset == 1234
