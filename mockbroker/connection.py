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

On a SASL_PLAINTEXT listener ``sasl`` holds the authenticator until
authentication completes: frames are limited to ``sasl.server.max.receive.size``
meanwhile, and after a SaslHandshake v0 the frames are raw SASL tokens (no
Kafka header) that go to the authenticator instead of the dispatcher.
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
    HELD = enum.auto()  # observe mode: a request waits for the throttle deadline; the socket is still read


# Reasons that stop reading the socket at once.  RESPONSE_PENDING pauses lazily, only
# when more bytes arrive (no epoll churn per long poll); HELD never pauses.
_PAUSE_EAGERLY = MuteReason.THROTTLED | MuteReason.MEMORY


class CloseReason(enum.Enum):
    CLIENT_CLOSED = "closed by client"
    PROTOCOL_ERROR = "protocol error"
    IDLE = "idle longer than connections.max.idle.ms"
    SHUTDOWN = "broker shutting down"
    BROKER_STOPPED = "broker stopped"
    ERROR_WITH_ACKS0 = "error on a produce with acks=0"
    INJECTED = "injected fault"
    AUTHENTICATION_FAILED = "failed authentication"


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
        self.principal = "ANONYMOUS"  # the SASL username once authenticated
        # SASL_PLAINTEXT: the authenticator until authentication completes (see sasl.py); else None
        self.sasl = server.new_authenticator(self)
        self.last_active_ms = server.clock.monotonic_ms()
        self.requests_handled = 0
        self.attrs: dict[str, Any] = {}
        self.last_throttle: Any = None
        self.throttle_deadline_ms: int | None = None
        self._throttle_ended_ms: int | None = None

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
        if self.mute & MuteReason.RESPONSE_PENDING and not self._reading_paused and self.transport is not None:
            # a request is in flight and the client sends more: stop reading, as Kafka's muted channel
            self.transport.pause_reading()
            self._reading_paused = True
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
        want_paused = bool(self.mute & _PAUSE_EAGERLY)
        if want_paused and not self._reading_paused:
            self.transport.pause_reading()
            self._reading_paused = True
        elif not want_paused and self._reading_paused and not self.mute & MuteReason.RESPONSE_PENDING:
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
                sasl = self.sasl  # before authentication: sasl.server.max.receive.size
                try:
                    size = read_frame_size(self._buf, self.server.max_request_bytes if sasl is None
                                           else sasl.max_receive_size)
                except ProtocolError as e:
                    if sasl is None:
                        self.close(CloseReason.PROTOCOL_ERROR, str(e))
                    else:  # a SaslAuthenticationException in Kafka: the delayed failure close
                        sasl.close_after_failure(None, f"Failing SASL authentication due to invalid receive size: {e}")
                    return
                if size is None or len(self._buf) < SIZE_PREFIX_BYTES + size:
                    return
                if self._hold_until_deadline():
                    return
                with memoryview(self._buf) as view:  # one copy out of the read buffer
                    payload = bytes(view[SIZE_PREFIX_BYTES : SIZE_PREFIX_BYTES + size])
                del self._buf[: SIZE_PREFIX_BYTES + size]
                self.mute |= MuteReason.RESPONSE_PENDING
                self.requests_handled += 1
                self._note_next_request()
                if sasl is not None and sasl.raw_tokens:  # after SaslHandshake v0: a bare SASL token
                    sasl.raw_token(payload)
                else:
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

    # -- throttling (KIP-219) --------------------------------------------------------------
    def deliver(self, frame: bytes | memoryview, throttle_ms: int, ctx: Any, quota_type: str) -> None:
        """Send a response carrying ``throttle_ms`` as ``mock.throttle.mode`` says."""
        if throttle_ms <= 0:
            self.send_response(frame)
            return
        mode = self.server.throttle_mode
        clock = self.server.clock
        event = self.server.record_throttle(self, ctx, throttle_ms, mode, quota_type)
        self.last_throttle = event
        if mode == "delay":  # Kafka < 2.0 ThrottledResponse: hold the response itself
            clock.call_later(throttle_ms, lambda: self.send_response(frame))
            return
        self.send_response(frame)
        if mode == "mute":  # ThrottledChannel: startThrottling now, endThrottling at the deadline
            self.mute_for(MuteReason.THROTTLED)
            clock.call_later(throttle_ms, self._end_throttle)
        else:  # observe: keep reading; requests arriving early are held in _hold_until_deadline
            self.throttle_deadline_ms = event.deadline_ms

    def _end_throttle(self) -> None:
        self._throttle_ended_ms = self.server.clock.monotonic_ms()
        self.unmute_for(MuteReason.THROTTLED)

    def _hold_until_deadline(self) -> bool:
        """observe mode: a complete request before the deadline waits, its arrival recorded."""
        deadline = self.throttle_deadline_ms
        if deadline is None:
            return False
        now = self.server.clock.monotonic_ms()
        if now >= deadline:
            self.throttle_deadline_ms = None
            return False
        ev = self.last_throttle
        if ev is not None and ev.next_request_ms is None:
            ev.next_request_ms = now
            ev.early_ms = deadline - now
        self.mute |= MuteReason.HELD
        self.server.clock.call_later(deadline - now, lambda: self.unmute_for(MuteReason.HELD))
        return True

    def _note_next_request(self) -> None:
        ev = self.last_throttle
        if ev is None or ev.next_request_ms is not None:
            return
        now = self.server.clock.monotonic_ms()
        ev.next_request_ms = now
        ev.early_ms = max(ev.deadline_ms - now, 0)
        if ev.mode == "mute":
            # read within a tick of the mute ending: the request was waiting in the socket
            ev.held_while_muted = self._throttle_ended_ms is not None and now - self._throttle_ended_ms <= 1

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
