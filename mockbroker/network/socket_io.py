"""A connection's socket below its transport: frames written scatter-gather, bytes waiting unread.

Writing a response frame: a ``GatherFrame`` goes out with one ``sendmsg`` (scatter-gather).

Kafka's ``Selector`` writes a ``MultiRecordsSend`` with ``GatheringByteChannel.write(ByteBuffer[])``
and transfers record sets from the segment file (``FileRecords.writeTo``): nothing is joined.
asyncio's socket transport joins a ``writelines`` list into one buffer before Python 3.12, so a
frame of segments goes to the socket here with ``socket.sendmsg`` when the transport is a plain
selector socket transport with nothing buffered (what ``_SelectorSocketTransport.write`` does with
one buffer, ``_write_sendmsg`` in 3.12 with several); whatever the kernel did not take goes to
``transport.write``, joined once, and is sent in order from the transport's buffer.  Any other
transport (TLS) takes the segments through ``writelines``.

``unread_bytes``: what the kernel holds in the socket's receive buffer (FIONREAD), which a muted
connection leaves unread.
"""

from __future__ import annotations

import array
import asyncio
import fcntl
import os
import termios
from asyncio import selector_events
from typing import Any

from protocol.gather import GatherFrame

try:
    IOV_MAX = max(16, min(os.sysconf("SC_IOV_MAX"), 1024))
except (ValueError, OSError, AttributeError):  # pragma: no cover - a platform without it
    IOV_MAX = 16
# asyncio's plain socket transport (private; its attributes are read as its own ``write`` reads them)
_SOCKET_TRANSPORT = getattr(selector_events, "_SelectorSocketTransport", None)


def write_frame(transport: asyncio.WriteTransport, frame: Any) -> None:
    """Write one framed response (bytes-like or a ``GatherFrame``) in order after what is buffered."""
    if type(frame) is not GatherFrame:
        transport.write(frame)
        return
    segments = frame.segments()
    if type(transport) is not _SOCKET_TRANSPORT:
        transport.writelines(segments)
        return
    t: Any = transport
    if t._buffer or t._conn_lost or t._eof or t._empty_waiter is not None:
        transport.write(b"".join(segments))  # the transport's own checks and buffer order
        return
    sock = t._sock
    i, count = 0, len(segments)
    while i < count:
        group = segments[i:i + IOV_MAX]
        try:
            sent = sock.sendmsg(group)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            # let the transport meet the error as its own write would (_fatal_error, one log line)
            transport.write(b"".join(segments[i:]))
            return
        for seg in group:
            n = len(seg) if type(seg) is not memoryview else seg.nbytes
            if sent < n:
                rest = [memoryview(seg)[sent:], *segments[i + 1:]] if sent else segments[i:]
                transport.write(b"".join(rest))  # buffered: the write handler sends it in order
                return
            sent -= n
            i += 1


def unread_bytes(transport: asyncio.BaseTransport) -> int:
    """Bytes in the socket's kernel receive buffer (FIONREAD); 0 without a socket."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0
    try:
        n = array.array("i", [0])
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, n, True)
    except OSError:
        return 0
    return n[0]
