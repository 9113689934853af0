"""Kafka framing: a 4-byte big-endian size prefix, then that many bytes.

Pure functions over buffers, no asyncio.  Mirrors the size checks of
``org.apache.kafka.common.network.NetworkReceive.readFrom``: a negative size or
one above ``socket.request.max.bytes`` is refused before anything is allocated.
A size of zero passes here (as in Kafka) and fails later when the header
cannot be parsed.
"""

from __future__ import annotations

import struct

from .errors import InvalidFrameSize

SIZE_PREFIX_BYTES = 4
_SIZE = struct.Struct(">i")


def read_frame_size(buf: bytes | bytearray | memoryview, max_bytes: int) -> int | None:
    """Return the payload size announced at the start of ``buf``.

    ``None`` when fewer than 4 bytes are buffered.  Raises ``InvalidFrameSize``
    for a negative size or one larger than ``max_bytes``.
    """
    if len(buf) < SIZE_PREFIX_BYTES:
        return None
    size: int = _SIZE.unpack_from(buf, 0)[0]
    if size < 0:
        raise InvalidFrameSize(f"Invalid receive (size = {size})")
    if size > max_bytes:
        # a TLS record (handshake 0x16, version 0x03xx) read as a size: the log line says what it likely is
        hint = ": a TLS client hello on a PLAINTEXT listener?" if buf[0] == 0x16 and buf[1] == 0x03 else ""
        raise InvalidFrameSize(f"Invalid receive (size = {size} larger than {max_bytes}){hint}")
    return size


def frame(payload: bytes | bytearray) -> bytes:
    """Prefix ``payload`` with its 4-byte size."""
    return _SIZE.pack(len(payload)) + payload

