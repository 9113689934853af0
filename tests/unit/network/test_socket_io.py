"""socket_io.write_frame: a GatherFrame goes to a real socket with sendmsg, in order, whole, even
when the kernel takes only part of it or the transport already holds bytes; on uvloop's transport
(mock.event.loop = "uvloop") through its writelines, as whole and in order."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from mockbroker.network.socket_io import IOV_MAX, unread_bytes, write_frame
from protocol.gather import GatherFrame


class Sink(asyncio.Protocol):
    pass


async def _pipe(sndbuf: int = 4096) -> tuple[asyncio.Transport, socket.socket]:
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)  # a small send buffer: partial sends
    transport, _ = await asyncio.get_running_loop().connect_accepted_socket(Sink, a)
    b.setblocking(False)
    return transport, b  # type: ignore[return-value]  # connect_accepted_socket's transport is a Transport


async def _read(loop: asyncio.AbstractEventLoop, sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        out += await asyncio.wait_for(loop.sock_recv(sock, 1 << 16), 10)
    return bytes(out)


def _run(main: Callable[[], Coroutine[Any, Any, None]], kind: str) -> None:
    """``main()`` on asyncio's own loop, or on uvloop's (skipped when it is not installed)."""
    if kind == "uvloop":
        uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed (pip install 'mockbroker[uvloop]')")
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    else:
        asyncio.run(main())


@pytest.mark.parametrize("kind", ["asyncio", "uvloop"])
def test_frames_arrive_whole_and_in_order_through_partial_sends(kind):
    async def main() -> None:
        loop = asyncio.get_running_loop()
        transport, peer = await _pipe()
        big = bytes(range(256)) * 4096  # 1 MiB: far beyond the send buffer
        frames = [
            GatherFrame(b"HEAD", [bytearray(b"ab"), big, memoryview(big)[7:5000], b"tail"], 0),
            b"plain-bytes-between",
            GatherFrame(b"H2", [b"x" * 600] * (IOV_MAX + 5), 0),  # more segments than one sendmsg takes
        ]
        for f in frames:
            if isinstance(f, GatherFrame):
                f.nbytes = len(bytes(f))
            write_frame(transport, f)
        assert transport.get_write_buffer_size() > 0  # the kernel took only part: the rest is buffered
        want = b"".join(bytes(f) for f in frames)
        assert await _read(loop, peer, len(want)) == want
        # reading paused: unread_bytes sees the peer's bytes in the kernel
        transport.pause_reading()
        peer.send(b"12345")
        await asyncio.sleep(0.05)
        assert unread_bytes(transport) == 5
        transport.close()
        peer.close()

    _run(main, kind)


def test_more_segments_than_one_sendmsg_takes_all_go_out_at_once():
    async def main() -> None:
        loop = asyncio.get_running_loop()
        transport, peer = await _pipe(1 << 20)
        segments = [bytes([i % 251]) * 10 for i in range(2 * IOV_MAX + 3)]
        frame = GatherFrame(b"HEAD", segments, 4 + 10 * len(segments))
        write_frame(transport, frame)
        assert transport.get_write_buffer_size() == 0  # every group taken by the kernel, nothing joined
        assert await _read(loop, peer, len(frame)) == bytes(frame)
        transport.close()
        peer.close()

    asyncio.run(main())
