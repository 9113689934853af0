"""One client connection: framing, muting and in-order responses.

Mirrors Kafka's ``KafkaChannel`` + the per-connection part of
``SocketServer.Processor``.  It is an ``asyncio.Protocol`` that owns
``pause_reading``/``resume_reading`` itself: a StreamReader would resume a
paused socket on its own (style-anchors section 3.3), which would break
Kafka-style muting.

Reading stops for any of these separate reasons (``MuteReason``); the socket
is read again only when none holds (KafkaChannel's mute state machine, with
the memory-pool mute kept apart as ``Selector`` does):

* ``RESPONSE_PENDING``: a request is being handled; Kafka processes one request
  per connection at a time and answers in order.
* ``THROTTLED``: KIP-219, the response was sent and the channel stays muted
  for the throttle time (set by the quota layer).
* ``MEMORY``: the request memory pool is exhausted (KIP-72).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import TYPE_CHECKING, Any

from protocol.errors import ProtocolError
from protocol.framing import SIZE_PREFIX_BYTES, read_frame_size

if TYPE_CHECKING:
    from .server import BrokerServer

log = logging.getLogger("mockbroker.connection")


class MuteReason(enum.Flag):
    NONE = 0
    RESPONSE_PENDING = enum.auto()
    THROTTLED = enum.auto()
    MEMORY = enum.auto()


class CloseReason(enum.Enum):
    CLIENT_CLOSED = "closed by client"
    PROTOCOL_ERROR = "protocol error"
    IDLE = "idle longer than connections.max.idle.ms"
    SHUTDOWN = "broker shutting down"
    BROKER_STOPPED = "broker stopped"
    ERROR_WITH_ACKS0 = "error on a produce with acks=0"
    INJECTED = "injected fault"


class KafkaConnection(asyncio.Protocol):
    _ids = 0

    def __init__(self, server: "BrokerServer") -> None:
        self.server = server
        KafkaConnection._ids += 1
        self.conn_id = KafkaConnection._ids
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self._buf = bytearray()
        self.mute = MuteReason.NONE
        self._reading_paused = False
        self._write_paused = False
        self._processing = False
        self.closed = False
        self.client_id = ""
        self.client_software: tuple[str, str] | None = None
        self.principal = "ANONYMOUS"
        self.last_active_ms = server.clock.monotonic_ms()
        self.requests_handled = 0
        self.attrs: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (
            f"<KafkaConnection {self.conn_id} {self.peer} client_id={self.client_id!r} "
            f"mute={self.mute} buffered={len(self._buf)}{' closed' if self.closed else ''}>"
        )

    # -- asyncio.Protocol ------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.server.connection_opened(self)

    def data_received(self, data: bytes) -> None:
        self._buf += data
        self.last_active_ms = self.server.clock.monotonic_ms()
        self._process()

    def eof_received(self) -> bool | None:
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed:
            self.closed = True
            log.debug("connection %s from %s closed by client", self.conn_id, self.peer)
        self._buf = bytearray()
        self.server.connection_closed(self)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        if not self.mute & MuteReason.RESPONSE_PENDING:
            self._process()

    # -- muting ------------------------------------------------------------------------
    def mute_for(self, reason: MuteReason) -> None:
        self.mute |= reason
        self._update_reading()

    def unmute_for(self, reason: MuteReason) -> None:
        if self.mute & reason:
            self.mute &= ~reason
            self._update_reading()
            if self.mute == MuteReason.NONE and not self.closed:
                self.server.loop.call_soon(self._process)

    def _update_reading(self) -> None:
        if self.transport is None or self.closed:
            return
        want_paused = self.mute != MuteReason.NONE
        if want_paused and not self._reading_paused:
            self.transport.pause_reading()
            self._reading_paused = True
        elif not want_paused and self._reading_paused:
            self.transport.resume_reading()
            self._reading_paused = False

    # -- frames ------------------------------------------------------------------------
    def _process(self) -> None:
        """Take complete frames off the buffer while nothing mutes the channel."""
        if self._processing:
            return
        self._processing = True
        try:
            while not self.closed and self.mute == MuteReason.NONE and not self._write_paused:
                try:
                    size = read_frame_size(self._buf, self.server.max_request_bytes)
                except ProtocolError as e:
                    self.close(CloseReason.PROTOCOL_ERROR, str(e))
                    return
                if size is None or len(self._buf) < SIZE_PREFIX_BYTES + size:
                    return
                with memoryview(self._buf) as view:  # one copy out of the read buffer
                    payload = bytes(view[SIZE_PREFIX_BYTES : SIZE_PREFIX_BYTES + size])
                del self._buf[: SIZE_PREFIX_BYTES + size]
                self.mute |= MuteReason.RESPONSE_PENDING
                self.requests_handled += 1
                self.server.apis.handle(self, payload)
                # handle() either answered synchronously (RESPONSE_PENDING cleared) or
                # parked the request; in the latter case stop reading the socket.
                self._update_reading()
        finally:
            self._processing = False

    def send_response(self, frame: bytes | memoryview | None) -> None:
        """Called exactly once per request, with its framed response or None (acks=0)."""
        if self.closed:
            return
        if frame is not None and self.transport is not None:
            self.transport.write(frame)
        self.last_active_ms = self.server.clock.monotonic_ms()
        # RESPONSE_SENT: the request is done; reading resumes unless muted otherwise.
        self.mute &= ~MuteReason.RESPONSE_PENDING
        if not self._processing:
            self._update_reading()
            if self.mute == MuteReason.NONE:
                self.server.loop.call_soon(self._process)

    def close(self, reason: CloseReason, detail: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        msg = f"{reason.value}: {detail}" if detail else reason.value
        level = logging.WARNING if reason is CloseReason.PROTOCOL_ERROR else logging.INFO
        log.log(level, "closing connection %s from %s (client_id=%r): %s",
                self.conn_id, self.peer, self.client_id, msg)
        self._buf = bytearray()
        if self.transport is not None:
            self.transport.close()
