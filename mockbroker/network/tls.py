"""The TLS handshake of each connection accepted on an SSL or SASL_SSL listener (Kafka's
``SslTransportLayer`` handshake) and the client certificate's principal (``DefaultKafkaPrincipalBuilder``);
the contexts and principal mappers come from ``tls_config.py``.

A connection is accepted as plain TCP; ``TlsHandshake`` runs the handshake (``loop.start_tls``) and only
then makes the ``KafkaConnection``: a failed handshake (a plaintext client on a TLS port, an untrusted or
expired client certificate, no certificate with ``ssl.client.auth=required``, no common protocol or
cipher, a client gone) closes that connection with one log line naming the peer and the reason, and
nothing else sees it.  Bytes the TLS layer decrypted before the connection started (a TLS 1.3 client
sends its first request right after its Finished) are handed to the connection first
(``KafkaConnection.start``).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from typing import cast

from .connection import KafkaConnection
from ..security.tls_config import NoMatchingRule, ServerContext

log = logging.getLogger("mockbroker.tls")

# asyncio's default (constants.SSL_HANDSHAKE_TIMEOUT); Kafka has none of its own: connections.max.idle.ms
HANDSHAKE_TIMEOUT_S = 60.0


def peer_subject(sslobj: ssl.SSLObject) -> str | None:
    """The client certificate's subject as Kafka names it (``X500Principal.getName()``, RFC 2253:
    ``CN=...,OU=...,O=...``), None without a verified client certificate."""
    der = sslobj.getpeercert(binary_form=True)
    if not der:
        return None
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


# -- the handshake ------------------------------------------------------------------------------------
def _reason(exc: BaseException) -> str:
    """A handshake failure in a few words (the log line's reason)."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"client certificate refused: {exc.verify_message}"
    if isinstance(exc, ssl.SSLError):
        reason = exc.reason or ""
        if reason in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL", "RECORD_LAYER_FAILURE",
                      "PACKET_LENGTH_TOO_LONG"):
            return f"not a TLS client hello ({reason}): a plaintext client on a TLS listener?"
        if reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE":
            return "no client certificate (ssl.client.auth=required)"
        if reason == "UNEXPECTED_EOF_WHILE_READING":
            return "the client closed the connection during the handshake"
        if reason.startswith(("TLSV1_ALERT", "SSLV3_ALERT")):
            return f"the client aborted the handshake ({reason}): it does not trust the broker's certificate?"
        return reason or str(exc)
    if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
        return "the client closed the connection during the handshake"
    if isinstance(exc, TimeoutError | ConnectionAbortedError):
        return f"no handshake within {HANDSHAKE_TIMEOUT_S:g} s"
    return f"{type(exc).__name__}: {exc}"


class _EarlyBytes(asyncio.BufferedProtocol):
    """The TLS transport's protocol between the handshake and the connection's start: keeps what it
    decrypts meanwhile (``KafkaConnection.start`` takes it first)."""

    def __init__(self) -> None:
        self.data = bytearray()
        self._buf = bytearray(65536)
        self.lost = False

    def get_buffer(self, sizehint: int) -> memoryview:
        return memoryview(self._buf)

    def buffer_updated(self, nbytes: int) -> None:
        self.data += self._buf[:nbytes]

    def eof_received(self) -> bool | None:
        self.lost = True
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True


class TlsHandshake(asyncio.Protocol):
    """The protocol of an accepted TCP connection on a TLS listener until its handshake is done: then
    ``make_connection`` makes the ``KafkaConnection``, ``principal`` names it from the TLS session, and
    the connection starts on the TLS transport."""

    def __init__(self, loop: asyncio.AbstractEventLoop, context: ssl.SSLContext, listener: str,
                 make_connection: Callable[[], KafkaConnection],
                 principal: Callable[[ssl.SSLObject], str | None],
                 pending: set[asyncio.Task[None]]) -> None:
        self._loop = loop
        self._context = context
        self._listener = listener
        self._make_connection = make_connection
        self._principal = principal
        self._pending = pending

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # an asyncio.Transport by its methods: uvloop's (mock.event.loop) does not subclass it
        transport = cast(asyncio.Transport, transport)
        transport.pause_reading()  # the client hello waits for start_tls
        peer = transport.get_extra_info("peername")
        task = self._loop.create_task(self._handshake(transport, f"{peer[0]}:{peer[1]}" if peer else "?"))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _handshake(self, transport: asyncio.Transport, peer: str) -> None:
        early = _EarlyBytes()
        if isinstance(self._context, ServerContext):
            self._context.alert_to = transport  # taken by wrap_bio within start_tls's first step
        try:
            tls = await self._loop.start_tls(transport, early, self._context, server_side=True,
                                             ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S)
        except asyncio.CancelledError:
            transport.abort()
            raise
        except Exception as e:  # noqa: BLE001 - every failure is this client's: log it, close it
            log.info("TLS handshake from %s on listener %s failed: %s; connection closed", peer,
                     self._listener, _reason(e))
            transport.abort()
            return
        if tls is None or early.lost or tls.is_closing():
            log.debug("connection from %s on listener %s closed right after its TLS handshake", peer, self._listener)
            if tls is not None:
                tls.close()
            return
        sslobj = tls.get_extra_info("ssl_object")
        try:
            principal = self._principal(sslobj)
        except NoMatchingRule as e:  # DefaultKafkaPrincipalBuilder: the authentication fails
            log.info("TLS client %s on listener %s refused: %s (ssl.principal.mapping.rules); connection closed",
                     peer, self._listener, e)
            tls.abort()
            return
        conn = self._make_connection()
        if principal is not None:
            conn.principal = principal
        tls.set_protocol(conn)
        conn.start(tls, bytes(early.data))
        log.debug("connection %s from %s on listener %s: TLS %s, %s, principal %s", conn.conn_id, peer,
                  self._listener, sslobj.version(), (sslobj.cipher() or ("?",))[0], conn.principal)
