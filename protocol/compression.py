"""Decompression of a record batch's records section, as Kafka's broker reads it,
and compression as its log cleaner writes a batch back.

Decompression answers ListOffsets by timestamp (and KIP-734 max timestamp)
exactly for compressed batches and lets produce check a compressed batch's
records; fetch never decompresses, batches stay the bytes the producer sent.
Compression (``compress``) is the log cleaner's alone: a compacted batch that
lost records is written again with its own codec, in the framing Kafka's
``*Compression.wrapForOutput`` writes (gzip: one member; snappy: snappy-java's
``SnappyOutputStream`` xerial framing, 32 KiB blocks; lz4: the frame format with
independent 64 KiB blocks and no checksums but the header's, as
``Lz4BlockOutputStream``; zstd: one frame at level 3).

Each codec follows the stream class Kafka wraps the records section in
(``org.apache.kafka.common.compress.*Compression.wrapForInput``):

* 1 gzip: ``java.util.zip.GZIPInputStream`` -- one or more members, each with
  its CRC32/ISIZE trailer checked; bytes after a member that do not start a
  valid gzip header are ignored (``GZIPInputStream.readTrailer``).
* 2 snappy: snappy-java's ``SnappyInputStream`` (1.1.10.x, Kafka's version):
  input of at least 16 bytes starting with the 8-byte magic ``\\x82SNAPPY\\x00``
  is the xerial framing -- the magic, two int32 version fields (not checked
  for the first header), then blocks of [int32 length][raw snappy block], a
  repeated 16-byte header in between starting a concatenated stream; 1 to 3
  trailing bytes end the stream.  Anything else is one raw snappy block.
* 3 lz4: ``Lz4BlockInputStream`` -- the LZ4 frame format with independent
  blocks only, the header checksum checked (magic v2), block checksums
  checked when flagged, the content size and content checksum skipped.
* 4 zstd: ``ZstdInputStreamNoFinalizer`` (zstd-jni) -- one or more frames.

gzip is read with the standard library's zlib, whose ``max_length`` bounds
the output as it goes; raw snappy blocks, lz4 blocks and zstd frames with
cramjam (snappy and lz4 declare or bound each block's size before it is
written; zstd is written into a bounded buffer grown up to the limit).

A payload that cannot be decompressed raises ``DecompressionError``: in Kafka
the stream throws an ``IOException`` that ``wrapForInput`` or
``DefaultRecordBatch.StreamRecordIterator.readNext`` wraps in a plain
``KafkaException``, and ``ReplicaManager.fetchOffset`` answers the partition
with ``Errors.forException(e)``, UNKNOWN_SERVER_ERROR.  An unknown codec id
(5-7) is UNKNOWN_SERVER_ERROR too (``CompressionType.forId`` throws
``IllegalArgumentException``).  Output above ``limit`` bytes (64 MiB unless
told) is refused the same way: Kafka has no such bound, but an in-memory
broker must not let one small produced batch expand without end.
"""

from __future__ import annotations

import struct
import zlib

import cramjam

from .errors import CorruptRecordBatch, ErrorCode

# Compression codec ids of the batch attributes (records.Compression)
GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4

MAX_DECOMPRESSED_BYTES = 64 << 20

_I32 = struct.Struct(">i")
_LE_U32 = struct.Struct("<I")


class DecompressionError(CorruptRecordBatch):
    """A records section that cannot be decompressed: UNKNOWN_SERVER_ERROR for the partition."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.unknown_server_error, message)


def decompress(codec: int, data: bytes | bytearray | memoryview, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """The records section ``data`` of a batch compressed with ``codec``, decompressed.

    Raises ``DecompressionError`` for a corrupt payload, an unknown codec, or
    output of more than ``limit`` bytes.
    """
    data = bytes(data)
    if codec == GZIP:
        return _gzip(data, limit)
    if codec == SNAPPY:
        return _snappy(data, limit)
    if codec == LZ4:
        return _lz4(data, limit)
    if codec == ZSTD:
        return _zstd(data, limit)
    raise DecompressionError(f"Unknown compression type id: {codec}")


def _too_large(limit: int) -> DecompressionError:
    return DecompressionError(f"Decompressed records exceed {limit} bytes")


# -- gzip ---------------------------------------------------------------------------------

_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 2, 4, 8, 16


def _gzip_header_ok(buf: bytes) -> bool:
    """Whether ``buf`` starts with a gzip member header GZIPInputStream.readHeader accepts."""
    if len(buf) < 10 or buf[0] != 0x1F or buf[1] != 0x8B or buf[2] != 8:
        return False
    flg = buf[3]
    pos = 10
    if flg & _FEXTRA:
        if len(buf) < pos + 2:
            return False
        pos += 2 + int.from_bytes(buf[pos : pos + 2], "little")
    for flag in (_FNAME, _FCOMMENT):
        if flg & flag:
            end = buf.find(b"\0", pos)
            if end < 0:
                return False
            pos = end + 1
    if flg & _FHCRC:
        if len(buf) < pos + 2 or zlib.crc32(buf[:pos]) & 0xFFFF != int.from_bytes(buf[pos : pos + 2], "little"):
            return False
        pos += 2
    return len(buf) >= pos


def _gzip(data: bytes, limit: int) -> bytes:
    out = bytearray()
    src = data
    while True:
        d = zlib.decompressobj(31)  # gzip wrapper: header, CRC32 and ISIZE checked
        try:
            out += d.decompress(src, limit - len(out) + 1)  # at most one byte past the limit (never 0: no limit)
        except zlib.error as e:
            raise DecompressionError(f"gzip: {e}") from None
        if len(out) > limit:
            raise _too_large(limit)
        if not d.eof:
            raise DecompressionError("gzip: Unexpected end of ZLIB input stream")
        src = d.unused_data
        if not src or not _gzip_header_ok(src):  # readTrailer: anything else after a member is ignored
            return bytes(out)


# -- snappy -------------------------------------------------------------------------------

_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_MAGIC_HEAD = _I32.unpack(_SNAPPY_MAGIC[:4])[0]  # SnappyCodec.MAGIC_HEADER_HEAD
_SNAPPY_HEADER_SIZE = 16
_SNAPPY_MAX_CHUNK = 512 << 20  # SnappyInputStream.MAX_CHUNK_SIZE


def _snappy_raw(block: bytes, budget: int, limit: int) -> bytes:
    try:
        n = cramjam.snappy.decompress_raw_len(block)
    except cramjam.DecompressionError as e:
        raise DecompressionError(f"snappy: {e}") from None
    if n > budget:
        raise _too_large(limit)
    try:
        out = bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as e:
        raise DecompressionError(f"snappy: {e}") from None
    if len(out) != n:
        raise DecompressionError(f"snappy: expected {n} bytes, but decompressed chunk has {len(out)} bytes")
    return out


def _snappy(data: bytes, limit: int) -> bytes:
    if not data:
        raise DecompressionError("snappy: Cannot decompress empty stream")
    if len(data) < _SNAPPY_HEADER_SIZE or data[:8] != _SNAPPY_MAGIC:
        return _snappy_raw(data, limit, limit)  # SnappyInputStream.readFully: one raw block
    out = bytearray()
    pos = _SNAPPY_HEADER_SIZE
    while len(data) - pos >= 4:  # hasNextChunk: fewer than 4 bytes left ends the stream
        (size,) = _I32.unpack_from(data, pos)
        pos += 4
        if size == _SNAPPY_MAGIC_HEAD:  # a concatenated stream's header
            if len(data) - pos < _SNAPPY_HEADER_SIZE - 4:
                raise DecompressionError("snappy: Insufficient header size in a concatenated block")
            header = data[pos - 4 : pos + _SNAPPY_HEADER_SIZE - 4]
            pos += _SNAPPY_HEADER_SIZE - 4
            if header[:8] != _SNAPPY_MAGIC:
                break
            version = _I32.unpack_from(header, 8)[0]
            if version < 1:
                raise DecompressionError(f"snappy: Compressed with an incompatible codec version {version}")
            continue
        if size < 0 or size > _SNAPPY_MAX_CHUNK:
            raise DecompressionError(f"snappy: invalid chunk size {size}")
        if len(data) - pos < size:
            raise DecompressionError("snappy: failed to read chunk")
        out += _snappy_raw(data[pos : pos + size], limit - len(out), limit)
        pos += size
    return bytes(out)


# -- lz4 ----------------------------------------------------------------------------------

_LZ4_MAGIC = 0x184D2204
_LZ4_INCOMPRESSIBLE = 0x80000000

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32, the checksum of the LZ4 frame format (header and block checksums)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed, (seed - _P1) & _M32
        stripes = n - n % 16
        for a, b, c, d in struct.iter_unpack("<4I", data[:stripes]):
            v1 = _rotl((v1 + a * _P2) & _M32, 13) * _P1 & _M32
            v2 = _rotl((v2 + b * _P2) & _M32, 13) * _P1 & _M32
            v3 = _rotl((v3 + c * _P2) & _M32, 13) * _P1 & _M32
            v4 = _rotl((v4 + d * _P2) & _M32, 13) * _P1 & _M32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
        pos = stripes
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (w,) = _LE_U32.unpack_from(data, pos)
        h = _rotl((h + w * _P3) & _M32, 17) * _P4 & _M32
        pos += 4
    while pos < n:
        h = _rotl((h + data[pos] * _P5) & _M32, 11) * _P1 & _M32
        pos += 1
    h ^= h >> 15
    h = h * _P2 & _M32
    h ^= h >> 13
    h = h * _P3 & _M32
    h ^= h >> 16
    return h


def _lz4(data: bytes, limit: int) -> bytes:
    # Lz4BlockInputStream.readHeader
    if len(data) < 6:
        raise DecompressionError("lz4: Stream ended prematurely")
    if _LE_U32.unpack_from(data, 0)[0] != _LZ4_MAGIC:
        raise DecompressionError("lz4: Stream unsupported (invalid magic bytes)")
    flg, bd = data[4], data[5]
    if flg & 0x03:
        raise DecompressionError("lz4: Reserved bits must be 0")
    if not flg & 0x20:
        raise DecompressionError("lz4: Dependent block stream is unsupported")
    if flg >> 6 != 1:
        raise DecompressionError(f"lz4: Version {flg >> 6} is unsupported")
    if bd & 0x8F:
        raise DecompressionError("lz4: Reserved BD bits must be 0")
    if not 4 <= (bd >> 4) & 7 <= 7:
        raise DecompressionError("lz4: Block size value must be between 4 and 7")
    max_block = 1 << (2 * ((bd >> 4) & 7) + 8)
    content_checksum, block_checksum = bool(flg & 0x04), bool(flg & 0x10)
    pos = 6
    if flg & 0x08:  # content size: skipped
        if len(data) < pos + 8:
            raise DecompressionError("lz4: Stream ended prematurely")
        pos += 8
    if len(data) <= pos or data[pos] != (xxh32(data[4:pos]) >> 8) & 0xFF:
        raise DecompressionError("lz4: Stream frame descriptor corrupted")
    pos += 1
    # Lz4BlockInputStream.readBlock, up to the end mark
    out = bytearray()
    buf = bytearray(max_block)
    while True:
        if len(data) - pos < 4:
            raise DecompressionError("lz4: Stream ended prematurely")
        (size,) = _LE_U32.unpack_from(data, pos)
        pos += 4
        compressed = not size & _LZ4_INCOMPRESSIBLE
        size &= ~_LZ4_INCOMPRESSIBLE
        if size == 0:  # end mark; a content checksum after it is read, not verified
            if content_checksum and len(data) - pos < 4:
                raise DecompressionError("lz4: Stream ended prematurely")
            return bytes(out)
        if size > max_block:
            raise DecompressionError(f"lz4: Block size {size} exceeded max: {max_block}")
        if len(data) - pos < size:
            raise DecompressionError("lz4: Stream ended prematurely")
        block = data[pos : pos + size]
        pos += size
        if block_checksum:
            if len(data) - pos < 4 or xxh32(block) != _LE_U32.unpack_from(data, pos)[0]:
                raise DecompressionError("lz4: Block checksum mismatch")
            pos += 4
        if compressed:
            try:
                # LZ4SafeDecompressor into maxBlockSize bytes.  decompress_block_into retries a
                # block that fails as one with a 4-byte size prefix (and without output_len even
                # tries that first), so decompress_block, which never does, decides validity and
                # decompress_block_into, the same decoding then, gives the length.
                cramjam.lz4.decompress_block(block, output_len=max_block)
                n = cramjam.lz4.decompress_block_into(block, buf, output_len=max_block)
            except cramjam.DecompressionError as e:
                raise DecompressionError(f"lz4: {e}") from None
            if len(out) + n > limit:
                raise _too_large(limit)
            out += buf[:n]
        else:
            if len(out) + size > limit:
                raise _too_large(limit)
            out += block


# -- zstd ---------------------------------------------------------------------------------


def _zstd(data: bytes, limit: int) -> bytes:
    # decompress_into a fixed buffer fails once the output would not fit; grow it up to the limit
    size = min(limit + 1, max(64 << 10, 4 * len(data)))
    while True:
        buf = bytearray(size)
        try:
            n = cramjam.zstd.decompress_into(data, buf)
        except cramjam.DecompressionError as e:
            if "failed to write whole buffer" not in str(e):
                raise DecompressionError(f"zstd: {e}") from None
            if size > limit:
                raise _too_large(limit) from None
            size = min(limit + 1, size * 4)
            continue
        if n > limit:
            raise _too_large(limit)
        return bytes(buf[:n])


# -- compression (the log cleaner's rewritten batches) ------------------------------------

_SNAPPY_BLOCK = 32 * 1024  # SnappyOutputStream's default block size
_LZ4_BLOCK = 64 * 1024  # Lz4BlockOutputStream.BLOCKSIZE_64KB


def compress(codec: int, data: bytes) -> bytes:
    """``data`` (a records section) compressed with ``codec`` in the framing Kafka writes."""
    if codec == GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)  # a gzip member, GZIPOutputStream's default level
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        out = bytearray(_SNAPPY_MAGIC + _I32.pack(1) + _I32.pack(1))  # magic, version, compatible version
        for i in range(0, len(data), _SNAPPY_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[i:i + _SNAPPY_BLOCK]))
            out += _I32.pack(len(block)) + block
        return bytes(out)
    if codec == LZ4:
        flg, bd = 0x60, 0x40  # version 1, independent blocks; 64 KiB blocks
        out = bytearray(_LE_U32.pack(_LZ4_MAGIC) + bytes((flg, bd, (xxh32(bytes((flg, bd))) >> 8) & 0xFF)))
        for i in range(0, len(data), _LZ4_BLOCK):
            raw = data[i:i + _LZ4_BLOCK]
            block = bytes(cramjam.lz4.compress_block(raw, store_size=False))
            if len(block) >= len(raw):
                out += _LE_U32.pack(len(raw) | _LZ4_INCOMPRESSIBLE) + raw
            else:
                out += _LE_U32.pack(len(block)) + block
        return bytes(out + _LE_U32.pack(0))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data, level=3))
    raise DecompressionError(f"Unknown compression type id: {codec}")
