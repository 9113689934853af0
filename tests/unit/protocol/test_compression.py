"""protocol/compression.py: each Kafka codec read as the broker's stream classes read it, checked
against compressors that share no code with it (stdlib gzip and cramjam's flate2 for gzip;
python-snappy, kafka-python's xerial framing and a hand-written literal encoder for snappy;
python-lz4's frames; python-zstandard), corrupt input and the output bound."""

from __future__ import annotations

import gzip
import os
import struct
import time
import zlib

import cramjam
import lz4.block
import lz4.frame
import pytest
import snappy
import zstandard
from kafka.codec import snappy_encode

from protocol.compression import (
    GZIP,
    LZ4,
    MAX_DECOMPRESSED_BYTES,
    SNAPPY,
    ZSTD,
    DecompressionError,
    decompress,
    xxh32,
)
from protocol.errors import ErrorCode

# compressible, with an incompressible stretch, several lz4/xerial blocks long
DATA = b"".join(b"record %06d|%s|" % (i, b"v" * (i % 50)) for i in range(5000)) + os.urandom(3000)


def _lz4(data: bytes, **kw) -> bytes:
    return lz4.frame.compress(data, block_linked=False, **kw)


COMPRESSORS = {
    GZIP: gzip.compress,
    SNAPPY: lambda d: snappy_encode(d, xerial_compatible=True),
    LZ4: _lz4,
    ZSTD: zstandard.ZstdCompressor().compress,
}


# -- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", sorted(COMPRESSORS), ids=["gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("data", [b"x", DATA], ids=["one-byte", "large"])
def test_round_trip(codec, data):
    assert decompress(codec, COMPRESSORS[codec](data)) == data


def test_accepts_memoryview_slices():
    blob = b"\0" * 61 + gzip.compress(DATA)
    assert decompress(GZIP, memoryview(blob)[61:]) == DATA


# -- gzip ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [1, 6, 9])
def test_gzip_levels_and_cramjam_flate2(level):
    assert decompress(GZIP, gzip.compress(DATA, compresslevel=level)) == DATA
    assert decompress(GZIP, bytes(cramjam.gzip.compress(DATA, level=level))) == DATA


def _stored_member(payload: bytes, flags: int = 0, extra: bytes = b"", name: bytes = b"", comment: bytes = b"") -> bytes:
    """A gzip member written by hand: a header with the optional fields, stored deflate blocks."""
    head = bytes([0x1F, 0x8B, 8, flags]) + b"\0\0\0\0\0\xff"
    if flags & 4:
        head += struct.pack("<H", len(extra)) + extra
    if flags & 8:
        head += name + b"\0"
    if flags & 16:
        head += comment + b"\0"
    if flags & 2:
        head += struct.pack("<H", zlib.crc32(head) & 0xFFFF)
    body = b""
    chunks = [payload[i : i + 65535] for i in range(0, len(payload), 65535)] or [b""]
    for n, c in enumerate(chunks):
        final = 1 if n == len(chunks) - 1 else 0
        body += bytes([final]) + struct.pack("<HH", len(c), len(c) ^ 0xFFFF) + c
    return head + body + struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)


def test_gzip_hand_written_members_with_every_header_field():
    m = _stored_member(DATA[:100_000], flags=2 | 4 | 8 | 16, extra=b"xx", name=b"records", comment=b"c")
    assert decompress(GZIP, m) == DATA[:100_000]


def test_gzip_concatenated_members_are_one_stream():
    blob = gzip.compress(DATA[:5000]) + _stored_member(DATA[5000:9000], flags=8, name=b"n") + gzip.compress(b"end")
    assert decompress(GZIP, blob) == DATA[:9000] + b"end"


@pytest.mark.parametrize("tail", [b"\x1f", b"\x1f\x8b", b"garbage after the member", b"\x1f\x8b\x07" + b"\0" * 20])
def test_gzip_bytes_after_a_member_that_are_no_header_are_ignored(tail):
    # GZIPInputStream.readTrailer: a malformed next header ends the stream without error
    assert decompress(GZIP, gzip.compress(DATA) + tail) == DATA


def test_gzip_a_valid_next_header_with_a_corrupt_body_is_an_error():
    with pytest.raises(DecompressionError):
        decompress(GZIP, gzip.compress(DATA) + gzip.compress(DATA)[:30])


# -- snappy --------------------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _snappy_literals(data: bytes) -> bytes:
    """A raw snappy block of literal elements only, written from the format description."""
    out = bytearray(_varint(len(data)))
    for i in range(0, len(data), 1000):
        lit = data[i : i + 1000]
        if len(lit) <= 60:
            out.append((len(lit) - 1) << 2)
        else:
            out += bytes([61 << 2]) + struct.pack("<H", len(lit) - 1)
        out += lit
    return bytes(out)


def _xerial(blocks: list[bytes], version: int = 1, compat: int = 1) -> bytes:
    out = b"\x82SNAPPY\x00" + struct.pack(">ii", version, compat)
    for b in blocks:
        out += struct.pack(">i", len(b)) + b
    return out


def test_snappy_raw_block_without_xerial_header():
    assert decompress(SNAPPY, snappy.compress(DATA)) == DATA
    assert decompress(SNAPPY, _snappy_literals(DATA)) == DATA
    assert decompress(SNAPPY, _snappy_literals(b"short")) == b"short"  # under 16 bytes: raw


def test_snappy_xerial_several_blocks():
    blob = snappy_encode(DATA, xerial_compatible=True, xerial_blocksize=4096)
    assert blob[:8] == b"\x82SNAPPY\x00" and len(DATA) // 4096 > 10
    assert decompress(SNAPPY, blob) == DATA
    hand = _xerial([_snappy_literals(DATA[i : i + 7000]) for i in range(0, len(DATA), 7000)])
    assert decompress(SNAPPY, hand) == DATA


def test_snappy_xerial_first_header_versions_are_not_checked():
    # SnappyInputStream.readHeader checks only the 8-byte magic of the first header
    assert decompress(SNAPPY, _xerial([_snappy_literals(b"abc")], version=0, compat=77)) == b"abc"


def test_snappy_xerial_concatenated_streams():
    one = _xerial([_snappy_literals(b"first ")])
    two = _xerial([_snappy_literals(b"second")])
    assert decompress(SNAPPY, one + two) == b"first second"
    with pytest.raises(DecompressionError):  # a concatenated header of version 0 is refused
        decompress(SNAPPY, one + _xerial([_snappy_literals(b"x")], version=0))
    # a header that starts like the magic but is not it ends the stream (hasNextChunk: false)
    bad = b"\x82SNAxxxx" + b"\0" * 8 + struct.pack(">i", 3) + b"\x01\x00z"
    assert decompress(SNAPPY, one + bad) == b"first "


@pytest.mark.parametrize("n", [1, 2, 3])
def test_snappy_xerial_one_to_three_trailing_bytes_end_the_stream(n):
    assert decompress(SNAPPY, _xerial([_snappy_literals(DATA[:100])]) + b"\x00" * n) == DATA[:100]


@pytest.mark.parametrize("blob", [
    b"",
    b"\xff\xff\xff\xff\x0f garbage",
    _xerial([b"\x05\x00"]),  # claims 5 bytes, holds none
    _xerial([]) + struct.pack(">i", 100) + b"short",  # chunk longer than the input
    _xerial([]) + struct.pack(">i", -5) + b"abcd",  # negative chunk size
    _xerial([b""]),  # an empty chunk is no snappy block
], ids=["empty", "raw-garbage", "bad-block", "short-chunk", "negative-chunk", "empty-chunk"])
def test_snappy_corrupt(blob):
    with pytest.raises(DecompressionError):
        decompress(SNAPPY, blob)


# -- lz4 ------------------------------------------------------------------------------------------


def test_xxh32_known_values():
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"", seed=1) != xxh32(b"")


@pytest.mark.parametrize("block_size", [lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX256KB,
                                        lz4.frame.BLOCKSIZE_MAX1MB, lz4.frame.BLOCKSIZE_MAX4MB])
def test_lz4_block_sizes(block_size):
    assert decompress(LZ4, _lz4(DATA, block_size=block_size)) == DATA


def test_lz4_checksums_and_content_size():
    # block checksums are XXH32 of each block (checked, so this exercises xxh32 on long input);
    # the content size is skipped and the content checksum read but not verified, as Kafka does
    blob = _lz4(DATA, block_checksum=True, content_checksum=True, store_size=True)
    assert decompress(LZ4, blob) == DATA
    assert decompress(LZ4, blob[:-4] + b"\0\0\0\0") == DATA


def test_lz4_uncompressed_blocks():
    noise = os.urandom(200_000)
    blob = _lz4(noise, store_size=False)  # header: magic, FLG, BD, HC
    (first,) = struct.unpack_from("<I", blob, 7)
    assert first & 0x80000000  # the library stored the incompressible block as is
    assert decompress(LZ4, blob) == noise


def _frame(blocks: list[bytes], flg: int = 0x60, bd: int = 0x40, block_checksum: bool = False) -> bytes:
    desc = bytes([flg, bd])
    out = struct.pack("<I", 0x184D2204) + desc + bytes([(xxh32(desc) >> 8) & 0xFF])
    for b in blocks:
        out += struct.pack("<I", len(b)) + b
        if block_checksum:
            out += struct.pack("<I", xxh32(b))
    return out + b"\0\0\0\0"


def test_lz4_hand_built_frame_with_many_blocks():
    chunks = [DATA[i : i + 65536] for i in range(0, len(DATA), 65536)]
    blocks = [lz4.block.compress(c, store_size=False) for c in chunks]
    assert len(blocks) > 3
    assert decompress(LZ4, _frame(blocks)) == DATA
    assert decompress(LZ4, _frame(blocks, flg=0x70, block_checksum=True)) == DATA


def _corrupt_lz4_cases():
    good = _lz4(DATA)
    hc = bytearray(good)
    hc[6] ^= 0xFF
    blk = _lz4(DATA, block_checksum=True)
    bad_sum = bytearray(blk)
    bad_sum[-8] ^= 0xFF  # the last block's checksum
    body = bytearray(good)
    body[20:40] = b"\xff" * 20
    yield "linked-blocks", lz4.frame.compress(DATA, block_linked=True)
    yield "magic", b"\0\0\0\0" + good[4:]
    yield "header-checksum", bytes(hc)
    yield "block-checksum", bytes(bad_sum)
    yield "no-end-mark", good[:-4]
    yield "truncated", good[: len(good) // 2]
    yield "short", good[:5]
    yield "corrupt-block", bytes(body)
    yield "block-over-max", _frame([b"\0" * 70000])
    # a block with python-lz4's 4-byte size prefix is no frame block (cramjam's block_into alone would
    # retry it as prefixed and accept it)
    yield "size-prefixed-block", _frame([lz4.block.compress(b"xyz" * 100, store_size=True)])
    yield "version-0", _frame([], flg=0x20)
    yield "reserved-bd", _frame([], bd=0x41)
    yield "block-size-3", _frame([], bd=0x30)


@pytest.mark.parametrize("blob", [b for _, b in _corrupt_lz4_cases()], ids=[n for n, _ in _corrupt_lz4_cases()])
def test_lz4_corrupt(blob):
    with pytest.raises(DecompressionError):
        decompress(LZ4, blob)


def test_lz4_bytes_after_the_end_mark_are_ignored():
    assert decompress(LZ4, _lz4(DATA) + b"trailing") == DATA


# -- zstd -----------------------------------------------------------------------------------------


def test_zstd_frames_with_and_without_content_size_and_concatenated():
    with_size = zstandard.ZstdCompressor(write_content_size=True).compress(DATA)
    streamed = zstandard.ZstdCompressor(write_content_size=False, write_checksum=True).compress(DATA)
    assert decompress(ZSTD, with_size) == DATA
    assert decompress(ZSTD, streamed) == DATA
    assert decompress(ZSTD, with_size + streamed) == DATA + DATA


def test_zstd_output_larger_than_the_first_buffer_guess():
    big = DATA * 20  # ~ 3.4 MB from a few KB: the buffer grows
    blob = zstandard.ZstdCompressor(level=19).compress(big)
    assert len(blob) * 4 < len(big)
    assert decompress(ZSTD, blob) == big


@pytest.mark.parametrize("blob", [
    b"not zstd at all",
    zstandard.ZstdCompressor().compress(DATA)[:-10],
    zstandard.ZstdCompressor().compress(DATA) + b"trailing junk",
], ids=["garbage", "truncated", "trailing-junk"])
def test_zstd_corrupt(blob):
    with pytest.raises(DecompressionError):
        decompress(ZSTD, blob)


# -- errors and the bound -------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD], ids=["gzip", "snappy", "lz4", "zstd"])
def test_garbage_is_unknown_server_error(codec):
    with pytest.raises(DecompressionError) as e:
        decompress(codec, b"\x1f\x8b\x08\x00 this is not compressed data at all, in any codec")
    assert e.value.error == ErrorCode.unknown_server_error


@pytest.mark.parametrize("codec", [0, 5, 6, 7])
def test_unknown_codec(codec):
    with pytest.raises(DecompressionError, match="Unknown compression type id"):
        decompress(codec, b"abc")


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD], ids=["gzip", "snappy", "lz4", "zstd"])
def test_size_bound(codec):
    blob = COMPRESSORS[codec](DATA)
    assert decompress(codec, blob, limit=len(DATA)) == DATA
    with pytest.raises(DecompressionError, match="exceed"):
        decompress(codec, blob, limit=len(DATA) - 1)


def test_raw_snappy_bound_is_checked_before_decompressing():
    blob = snappy.compress(DATA)
    with pytest.raises(DecompressionError, match="exceed"):
        decompress(SNAPPY, blob, limit=100)


@pytest.mark.parametrize("codec", [GZIP, ZSTD, LZ4], ids=["gzip", "zstd", "lz4"])
def test_default_bound_stops_a_bomb_quickly(codec):
    zeros = bytes(MAX_DECOMPRESSED_BYTES + (1 << 20))
    blob = {GZIP: lambda d: zlib.compress(d, 1, wbits=31), ZSTD: zstandard.ZstdCompressor(level=1).compress,
            LZ4: lambda d: _lz4(d, block_size=lz4.frame.BLOCKSIZE_MAX4MB)}[codec](zeros)
    del zeros
    assert len(blob) < MAX_DECOMPRESSED_BYTES // 100
    t = time.monotonic()
    with pytest.raises(DecompressionError, match="exceed"):
        decompress(codec, blob)
    assert time.monotonic() - t < 10
