"""One client connection: framing, the request memory pool, muting and in-order responses.

Mirrors Kafka's ``KafkaChannel`` + ``NetworkReceive`` + the per-connection part
of ``SocketServer.Processor``.  It is an ``asyncio.BufferedProtocol`` that owns
``pause_reading``/``resume_reading`` itself: asyncio's StreamReader resumes a
paused socket on its own once its buffer drains, which would break
Kafka-style muting.

The connection knows only its ``ConnectionOwner`` (the broker that accepted it: clock, memory pool,
the dispatcher to hand requests to) and, on a SASL listener, an ``Authenticator`` until
authentication completes.  It does not know the broker, the quota code or SASL: those call it
through ``send_response``, ``close``, ``close_after``, ``start_throttling`` / ``end_throttling``,
``hold_until`` and ``authenticated``.

Reading a request is ``NetworkReceive.readFrom``: first the 4-byte size
prefix, which is checked (negative or above ``socket.request.max.bytes``
closes), then a buffer of exactly that size is taken from the memory pool
(KIP-72, ``memory_pool.py``; without a pool, ``queued.max.request.bytes`` <= 0,
``MemoryPool.NONE``, it is allocated) and the body is read straight into it.
Pool or not, the prefix is read into a 4-byte buffer of its own, so a
connection holds nothing but those 4 bytes until its request's size is known,
and a request's memory is allocated once, at its size.  A size of 0 takes
nothing from the pool (Kafka's empty buffer) and fails on its header.
Frames read before SASL authentication completes are not taken from the pool
either (Kafka's authenticator reads them with its own ``NetworkReceive``).

A pool buffer belongs to its request until the request is done: it is
released (exactly once) when the response is written (``send_response``,
also with no response for acks=0), or when the connection closes with the
request still being read, held, waiting in a purgatory or delayed by a
throttle.

Reading stops for any of these separate reasons (``channel.MuteReason``); the
socket is read again only when none holds (KafkaChannel's mute state machine,
with the memory-pool mute kept apart as ``Selector`` does):

* ``RESPONSE_PENDING``: a request is being handled; Kafka processes one request
  per connection at a time and answers in order.
* ``THROTTLED``: KIP-219, the response was sent and the channel stays muted
  for the throttle time (``start_throttling``/``end_throttling``, called by
  ``throttled_channel.ThrottledChannel``).  Kafka unregisters OP_READ; here the
  connection goes on watching the socket until the client's next request
  begins, reading its first byte (and nothing more) to see when it arrived: the
  throttle's verdict is taken from what the client did, not from a timer racing
  the deadline.  That byte waits in the connection's buffer and the rest in the
  socket, so the request is served when the mute ends, as Kafka would serve it;
  what differs is one byte of the kernel's receive buffer, and a client that
  closes during the mute is seen closing at once rather than at the mute's end.
* ``MEMORY``: the pool refused the buffer of the request whose size prefix was
  just read (KIP-72); ``MemoryMutedChannels`` gives it the memory and unmutes
  it when memory comes back.
* ``HELD`` (observe mode, ``hold_until``) and ``CLOSING`` (``close_after``).

On a SASL listener ``authenticator`` is set until authentication completes: frames are limited to
its ``max_receive_size`` meanwhile, and after a SaslHandshake v0 the frames are raw SASL tokens (no
Kafka header) that go to the authenticator instead of the dispatcher.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Protocol, cast

from protocol.errors import ProtocolError
from protocol.framing import SIZE_PREFIX_BYTES, read_frame_size
from protocol.gather import Frame

from ..common.channel import Authenticator, CloseReason, MuteReason
from ..common.clock import Clock
from .socket_io import unread_bytes, write_frame
from .memory_pool import MemoryMutedChannels

log = logging.getLogger("mockbroker.connection")

# Reasons that stop reading the socket at once.  RESPONSE_PENDING pauses lazily, only
# when more bytes arrive (no epoll churn per long poll); HELD never pauses.
_PAUSE_EAGERLY = MuteReason.THROTTLED | MuteReason.MEMORY | MuteReason.CLOSING
_NOT_RESPONSE_PENDING = ~MuteReason.RESPONSE_PENDING  # computed once: a Flag operation is a Python call

_CONNECTION_IDS = itertools.count(1)


class ConnectionOwner(Protocol):
    """What a connection needs from the broker that accepted it (Kafka's ``Processor``)."""

    clock: Clock
    loop: asyncio.AbstractEventLoop
    max_request_bytes: int                 # socket.request.max.bytes
    memory_mutes: MemoryMutedChannels      # the broker's request memory pool and its waiting channels

    def new_authenticator(self, conn: "KafkaConnection") -> Authenticator | None: ...

    def dispatch(self, conn: "KafkaConnection", payload: memoryview) -> None:
        """Handle one complete request; it answers through ``send_response`` exactly once."""

    def connection_opened(self, conn: "KafkaConnection") -> None: ...

    def connection_closed(self, conn: "KafkaConnection") -> None: ...


class KafkaConnection(asyncio.BufferedProtocol):
    def __init__(self, owner: ConnectionOwner, listener_name: str = "PLAINTEXT",
                 security_protocol: str = "PLAINTEXT") -> None:
        self.owner = owner
        # the listener this connection was accepted on (Kafka's RequestContext.listenerName): Metadata and
        # the other broker addresses are answered with this listener's advertised endpoints
        self.listener_name = listener_name
        self.security_protocol = security_protocol
        self.clock = owner.clock
        self.conn_id = next(_CONNECTION_IDS)
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self._memory: MemoryMutedChannels = owner.memory_mutes
        # The size prefix being read (NetworkReceive's 4-byte size buffer), allocated on the first byte
        self._head_size = SIZE_PREFIX_BYTES
        self._head: bytearray | None = None
        self._head_len = 0
        self._frame: bytearray | None = None  # the request being read (NetworkReceive's buffer)
        self._frame_pos = 0
        self._frame_pooled = False
        self._wanted: int | None = None       # size of the request waiting for pool memory
        self._inflight: bytearray | None = None  # pool buffer of the request being handled
        self.mute = MuteReason.NONE
        self._reading_paused = False
        self._write_paused = False
        self._processing = False
        self.closed = False
        self.client_id = ""
        self.client_software: tuple[str, str] | None = None
        self.principal = "ANONYMOUS"  # the SASL username once authenticated
        self.token_authenticated = False  # logged in with a delegation token
        # SASL_PLAINTEXT: the authenticator until authentication completes; else None
        self.authenticator: Authenticator | None = owner.new_authenticator(self)
        self.last_active_ms = owner.clock.monotonic_ms()
        # called once with the monotonic ms at which the next request began to arrive: its first byte read
        # (or watched, while throttled), or its taking
        self.next_request_observer: Callable[[int], None] | None = None
        self._watching = False  # throttled, but reading one byte to see the next request begin
        self.hold_deadline_ms: int | None = None  # observe mode: requests before this wait for it
        self._arrived_ns = 0             # broker clock: the frame being taken was complete (before any hold)
        self.request_arrived_ns = 0      # ... for the request being handled
        self._backlog: memoryview | None = None  # TLS: bytes decrypted before start(), read first

    def __repr__(self) -> str:
        frame = "" if self._frame is None else f" reading={self._frame_pos}/{len(self._frame)}"
        return (
            f"<KafkaConnection {self.conn_id} {self.peer} client_id={self.client_id!r} "
            f"mute={self.mute} buffered={self._head_len}{frame}{' closed' if self.closed else ''}>"
        )

    @property
    def memory_held(self) -> int:
        """Pool bytes this connection holds (the request being read and the one being handled)."""
        held = len(self._frame) if self._frame is not None and self._frame_pooled else 0
        return held + (len(self._inflight) if self._inflight is not None else 0)

    @property
    def read_buffer_bytes(self) -> int:
        """Bytes of the buffers this connection reads into, pool or not: the size prefix's and the
        buffer of the request being read (what a half-sent request costs)."""
        head = len(self._head) if self._head is not None else 0
        return head + (len(self._frame) if self._frame is not None else 0)

    # -- asyncio.BufferedProtocol --------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # an asyncio.Transport by its methods: uvloop's (mock.event.loop) does not subclass it
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.owner.connection_opened(self)

    def start(self, transport: asyncio.Transport, early: bytes) -> None:
        """TLS handshake done (tls.py); ``early``, decrypted before this start, is read first as if from the socket."""
        self.connection_made(transport)
        transport.pause_reading()  # until the backlog is read
        self._backlog = memoryview(early)
        self._read_backlog()

    def _read_backlog(self) -> None:
        while (view := self._backlog) is not None and not self.closed and not self._reading_paused:
            buf = self.get_buffer(view.nbytes)
            if not (n := min(len(buf), view.nbytes)):
                if not view.nbytes and self.transport is not None:  # all read: the socket's turn
                    self._backlog = None
                    self.transport.resume_reading()
                return
            buf[:n], self._backlog = view[:n], view[n:]
            self.buffer_updated(n)

    def get_buffer(self, sizehint: int) -> memoryview:
        frame = self._frame
        if frame is not None and self._frame_pos < len(frame):
            return memoryview(frame)[self._frame_pos:]  # the body goes straight into its own buffer
        head = self._head
        if head is None:
            head = self._head = bytearray(self._head_size)
        # never full here: reading is paused whenever the head is (_needs_pause)
        if self._watching:  # throttled: the first byte of the next request, no more
            return memoryview(head)[self._head_len:self._head_len + 1]
        return memoryview(head)[self._head_len:]

    def buffer_updated(self, nbytes: int) -> None:
        now = self.last_active_ms = self.clock.monotonic_ms()
        if self.next_request_observer is not None:
            self._observe_next_request(now)  # after a throttled response: the next request begins
        if self._watching:
            self._watching = False
            self._head_len += nbytes
            self._update_reading()  # still throttled: nothing more is read until the mute ends
            return
        frame = self._frame
        if frame is not None and self._frame_pos < len(frame):
            self._frame_pos += nbytes
        else:
            self._head_len += nbytes
            if self.mute & MuteReason.RESPONSE_PENDING and not self._reading_paused and self.transport is not None:
                # a request is in flight and the client sends more: stop reading, as Kafka's muted channel
                self.transport.pause_reading()
                self._reading_paused = True
        self._process()

    def eof_received(self) -> bool | None:  # close the transport
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed:
            self.closed = True
            log.debug("connection %s from %s: %s", self.conn_id, self.peer, CloseReason.CLIENT_CLOSED.value)
        self._release_all()
        self.owner.connection_closed(self)

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
                self.owner.loop.call_soon(self._process)

    def _needs_pause(self) -> bool:
        mute = self.mute
        if mute is not MuteReason.NONE:  # (a Flag operation is a Python call: none when unmuted)
            eager = mute & _PAUSE_EAGERLY
            if eager:
                return not (self._watching and eager == MuteReason.THROTTLED)
        frame = self._frame
        if frame is not None and self._frame_pos < len(frame):
            return False  # a request with its memory: read its body
        return self._head_len >= self._head_size  # nowhere to read into until a frame is taken

    def _update_reading(self) -> None:
        if self.transport is None or self.closed:
            return
        if self._needs_pause():
            if not self._reading_paused:
                self.transport.pause_reading()
                self._reading_paused = True
        elif self._reading_paused and not self.mute & MuteReason.RESPONSE_PENDING:
            self._reading_paused = False
            if self._backlog is not None:  # TLS bytes read before the start come first
                self.owner.loop.call_soon(self._read_backlog)
            else:
                self.transport.resume_reading()

    # -- frames ------------------------------------------------------------------------
    def _process(self) -> None:
        """Take complete requests while nothing mutes the channel, one at a time."""
        if self._processing:
            return
        self._processing = True
        try:
            while not self.closed and self.mute == MuteReason.NONE and not self._write_paused:
                if self._frame is None and not self._begin_receive():
                    return
                frame = self._frame
                assert frame is not None
                if self._frame_pos < len(frame):
                    return  # the body is still arriving
                if not self._arrived_ns:
                    self._arrived_ns = self.clock.monotonic_ns()
                if self._hold_until_deadline():
                    return
                self.request_arrived_ns, self._arrived_ns = self._arrived_ns, 0
                self._frame = None
                self._frame_pos = 0
                if self._frame_pooled:
                    self._inflight = frame  # released once the request is done
                    self._frame_pooled = False
                self.mute |= MuteReason.RESPONSE_PENDING
                self._observe_next_request(self.clock.monotonic_ms())
                payload = memoryview(frame).toreadonly()  # no copy: decoders read the request buffer
                auth = self.authenticator
                if auth is not None and auth.raw_tokens:  # after SaslHandshake v0: a bare SASL token
                    auth.raw_token(payload)
                else:
                    self.owner.dispatch(self, payload)
                # handle() either answered synchronously (RESPONSE_PENDING cleared) or
                # parked the request; in the latter case stop reading the socket.
        finally:
            self._processing = False
            self._update_reading()

    def _begin_receive(self) -> bool:
        """The size prefix is read: check it and take the request's buffer (NetworkReceive.readFrom)."""
        if self._head_len < SIZE_PREFIX_BYTES:
            return False
        head = self._head
        assert head is not None
        auth = self.authenticator  # before authentication: sasl.server.max.receive.size
        try:
            size = read_frame_size(head, self.owner.max_request_bytes if auth is None else auth.max_receive_size)
        except ProtocolError as e:
            if auth is None:
                self.close(CloseReason.PROTOCOL_ERROR, str(e))
            else:
                auth.invalid_receive_size(str(e))
            return False
        assert size is not None
        self._consume_head(SIZE_PREFIX_BYTES)
        if size == 0 or auth is not None or not self._memory.pool.enabled:
            self._set_frame(bytearray(size), pooled=False)
            return True
        buf = self._memory.allocate(self, size)
        if buf is None:  # the pool is out of memory: mute until it gives us the buffer
            self._wanted = size
            self.mute_for(MuteReason.MEMORY)
            return False
        self._set_frame(buf, pooled=True)
        return True

    def retry_allocation(self) -> bool:
        """Called by ``MemoryMutedChannels`` when memory came back: True once this connection
        no longer waits (it got its buffer and is unmuted, or it is gone)."""
        size = self._wanted
        if self.closed or size is None:
            return True
        buf = self._memory.pool.try_allocate(size)
        if buf is None:
            return False
        self._wanted = None
        self._set_frame(buf, pooled=True)
        self.unmute_for(MuteReason.MEMORY)
        return True

    def _set_frame(self, buf: bytearray, pooled: bool) -> None:
        """Start reading a request into ``buf``, with the body bytes already read ahead."""
        take = min(len(buf), self._head_len)
        if take:
            assert self._head is not None
            buf[:take] = memoryview(self._head)[:take]
            self._consume_head(take)
        self._frame = buf
        self._frame_pos = take
        self._frame_pooled = pooled

    def _consume_head(self, n: int) -> None:
        head = self._head
        assert head is not None
        rest = self._head_len - n
        if rest:
            head[:rest] = head[n : n + rest]
        self._head_len = rest

    def _release_all(self) -> None:
        """The connection is gone: return every pool buffer it holds (KafkaChannel.close)."""
        if self._wanted is not None:
            self._wanted = None
            self._memory.forget(self)
        frame, pooled = self._frame, self._frame_pooled
        self._frame, self._frame_pooled, self._frame_pos = None, False, 0
        if frame is not None and pooled:
            self._memory.release(frame)
        self._release_inflight()
        self._head = None
        self._head_len = 0

    def _release_inflight(self) -> None:
        buf = self._inflight
        if buf is not None:
            self._inflight = None
            self._memory.release(buf)

    def send_response(self, frame: Frame | None) -> None:
        """Called exactly once per request, with its framed response or None (acks=0)."""
        if self.closed:
            return
        if frame is not None and self.transport is not None:
            write_frame(self.transport, frame)  # a GatherFrame's segments with one sendmsg
        self.last_active_ms = self.clock.monotonic_ms()
        # RESPONSE_SENT: the request is done, its memory goes back to the pool;
        # reading resumes unless muted otherwise.
        self._release_inflight()
        # muted for this response alone (the usual case): unmuted without a Flag operation
        mute = self.mute
        self.mute = MuteReason.NONE if mute is MuteReason.RESPONSE_PENDING else mute & _NOT_RESPONSE_PENDING
        if not self._processing:
            self._update_reading()
            if self.mute is MuteReason.NONE:
                self.owner.loop.call_soon(self._process)

    # -- throttling (KIP-219), called by throttled_channel.ThrottledChannel ----------------------
    def start_throttling(self, watch: bool = False) -> None:
        """KafkaChannel's MUTED_AND_THROTTLED: the response was sent, nothing is served until the end.
        ``watch`` (nothing of a next request is here yet): read the first byte that comes, to tell
        ``next_request_observer`` when the next request arrived; it waits for the mute's end."""
        self._watching = watch
        self.mute_for(MuteReason.THROTTLED)

    def end_throttling(self) -> None:
        self._watching = False
        self.unmute_for(MuteReason.THROTTLED)

    def input_waiting(self) -> int:
        """Bytes of next requests here, unread: in this connection's buffer (read before reading
        paused) plus the socket's kernel receive buffer (FIONREAD), which a muted connection leaves
        unread.  Says, during a throttle, whether the client has sent more since it began."""
        frame = self._frame
        own = self._head_len + (len(frame) - self._frame_pos if frame is not None else 0)
        return own if self.transport is None or self.closed else own + unread_bytes(self.transport)

    def hold_until(self, deadline_ms: int) -> None:
        """observe mode: keep reading, but a request complete before ``deadline_ms`` waits for it."""
        self.hold_deadline_ms = deadline_ms

    def _hold_until_deadline(self) -> bool:
        """observe mode: a complete request before the deadline waits, its arrival observed."""
        deadline = self.hold_deadline_ms
        if deadline is None:
            return False
        now = self.clock.monotonic_ms()
        if now >= deadline:
            self.hold_deadline_ms = None
            return False
        self._observe_next_request(now)
        self.mute |= MuteReason.HELD
        self.clock.call_later(deadline - now, lambda: self.unmute_for(MuteReason.HELD))
        return True

    def _observe_next_request(self, now_ms: int) -> None:
        observer = self.next_request_observer
        if observer is not None:
            self.next_request_observer = None
            observer(now_ms)

    # -- authentication ------------------------------------------------------------------------
    def authenticated(self, principal: str, token_authenticated: bool = False) -> None:
        """SASL completed: later requests take the ordinary path, as ``principal`` (a token's owner)."""
        self.principal = principal
        self.token_authenticated = token_authenticated
        self.authenticator = None

    # -- closing -------------------------------------------------------------------------------
    def close_after(self, delay_ms: int, response: Frame | None, reason: CloseReason,
                    detail: str = "") -> None:
        """Read nothing more; after ``delay_ms`` send ``response`` (if any) and close (Kafka's
        ``Selector.maybeDelayCloseOnAuthenticationFailure``)."""
        self.mute_for(MuteReason.CLOSING)

        def complete() -> None:
            if self.closed:
                return
            if response is not None:
                self.send_response(response)
            self.close(reason, detail)

        if delay_ms > 0:
            self.clock.call_later(delay_ms, complete)
        else:
            complete()

    def close(self, reason: CloseReason, detail: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        msg = f"{reason.value}: {detail}" if detail else reason.value
        level = logging.WARNING if reason in (CloseReason.PROTOCOL_ERROR, CloseReason.INTERNAL_ERROR) else logging.INFO
        log.log(level, "closing connection %s from %s (client_id=%r): %s",
                self.conn_id, self.peer, self.client_id, msg)
        self._release_all()
        if self.transport is not None:
            self.transport.close()
