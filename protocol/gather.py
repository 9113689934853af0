"""Responses as segments: record bytes sent from where they are stored, never joined.

Kafka's ``FetchResponse`` goes out as a ``MultiRecordsSend``: the response header and the
per-partition fields are written into small buffers, and each partition's records are a
``FileRecords`` the network layer transfers straight from the log segment
(``FileRecords.writeTo``, zero-copy).  Here the same: ``encode_response_gather`` runs kio's
writer into a ``GatherBuffer``, which copies the small writes (lengths, offsets, error codes)
into one buffer and keeps every large one -- a record set -- as a reference to the stored
bytes.  The result, a ``GatherFrame``, is handed to the socket as a list (``sendmsg``,
scatter-gather: ``mockbroker/network/socket_io.py``).

``RecordChunks`` is a record set read as several stored batches: kio writes its total length,
then the ``GatherBuffer`` takes its batches one by one, so a read across batches is not joined
into a new bytes object either.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from .codec import _writer
from .registry import ApiSpec

_I32 = struct.Struct(">i")
# writes of at least this many bytes are kept by reference, not copied (a record set; a copy of a
# few hundred bytes costs less than a segment more in sendmsg's iovec)
ZERO_COPY_MIN = 512


class RecordChunks:
    """A record set as stored batches (bytes or memoryviews), sent one after the other unjoined.

    ``len()`` is the total size (what kio writes as the records' length); ``bytes()`` joins them
    (for a reader that needs one buffer)."""

    __slots__ = ("parts", "nbytes")

    def __init__(self, parts: Sequence[bytes | memoryview], nbytes: int) -> None:
        self.parts = parts
        self.nbytes = nbytes

    def __len__(self) -> int:
        return self.nbytes

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)


class GatherBuffer:
    """A writable for kio's writers: small writes are copied into one growing buffer, large ones
    (``ZERO_COPY_MIN``; a ``RecordChunks`` always) are kept as segments of their own."""

    __slots__ = ("segments", "_cur", "nbytes")

    def __init__(self) -> None:
        self.segments: list[Any] = []
        self._cur = bytearray()
        self.nbytes = 0

    def write(self, data: Any) -> int:
        n = len(data)
        self.nbytes += n
        if type(data) is RecordChunks:
            self._flush()
            self.segments.extend(data.parts)
        elif n >= ZERO_COPY_MIN:
            self._flush()
            self.segments.append(data)
        else:
            self._cur += data
        return n

    def _flush(self) -> None:
        if self._cur:
            self.segments.append(self._cur)
            self._cur = bytearray()

    def getsegments(self) -> list[Any]:
        self._flush()
        return self.segments


class GatherFrame:
    """A framed response as segments: ``head`` (size, correlation id, header tags and whatever
    else is particular to this response) then ``body``, segments that several responses may share.
    ``len()`` is the frame's size; ``bytes()`` joins it."""

    __slots__ = ("head", "body", "nbytes")

    def __init__(self, head: bytes | bytearray, body: Sequence[Any], nbytes: int) -> None:
        self.head = head
        self.body = body
        self.nbytes = nbytes

    def __len__(self) -> int:
        return self.nbytes

    def __bytes__(self) -> bytes:
        return b"".join([self.head, *self.body])

    def segments(self) -> list[Any]:
        return [self.head, *self.body]


# a framed response as the connection sends it: one buffer or segments
Frame = bytes | bytearray | memoryview | GatherFrame


def encode_body_gather(body: Any) -> tuple[list[Any], int]:
    """A kio response body as (segments, size): record sets by reference."""
    buf = GatherBuffer()
    _writer(type(body))(buf, body)
    return buf.getsegments(), buf.nbytes


def response_head(spec: ApiSpec, version: int, correlation_id: int, body_bytes: int) -> bytearray:
    """The frame's first bytes: size, correlation id, empty header tags (response header v1)."""
    flexible = spec.response_header_version(version) == 1
    head = bytearray(9 if flexible else 8)
    _I32.pack_into(head, 0, len(head) - 4 + body_bytes)
    _I32.pack_into(head, 4, correlation_id)
    return head


def encode_response_gather(spec: ApiSpec, version: int, correlation_id: int, body: Any) -> GatherFrame:
    """``codec.encode_response`` as segments: the same bytes, record sets not copied."""
    segments, n = encode_body_gather(body)
    head = response_head(spec, version, correlation_id, n)
    return GatherFrame(head, segments, len(head) + n)
