"""Why a client channel is not read, and why it was closed.

Kafka's ``KafkaChannel`` keeps a mute state machine (``ChannelMuteState``:
NOT_MUTED, MUTED, MUTED_AND_RESPONSE_PENDING, MUTED_AND_THROTTLED, ...) and
``Selector`` keeps the channels muted for memory apart.  Here the reasons are
independent flags: the socket is read only when none holds.  This module
imports nothing, so the connection, the dispatcher, the throttle code and the
SASL authenticator can all name the reasons without importing each other.
"""

from __future__ import annotations

import enum
from typing import Any, Protocol

from protocol.gather import Frame


class MuteReason(enum.Flag):
    NONE = 0
    # A request is being handled: Kafka handles one request per connection at a time and
    # answers in order (MUTED_AND_RESPONSE_PENDING).
    RESPONSE_PENDING = enum.auto()
    # KIP-219: the response was sent and the channel stays muted for its throttle time
    # (MUTED_AND_THROTTLED).
    THROTTLED = enum.auto()
    # KIP-72: the memory pool refused the buffer of the request whose size was just read.
    MEMORY = enum.auto()
    # observe mode: a request that came before the throttle deadline waits for it; the socket
    # is still read.
    HELD = enum.auto()
    # close_after: nothing more is read; the connection closes after a delay (a failed SASL
    # authentication, Kafka's maybeDelayCloseOnAuthenticationFailure).
    CLOSING = enum.auto()


class CloseReason(enum.Enum):
    CLIENT_CLOSED = "closed by client"
    PROTOCOL_ERROR = "protocol error"
    # the broker's own fault (an unexpected exception in a handler or a completion): the
    # client did nothing wrong, only its connection is closed
    INTERNAL_ERROR = "internal error in the broker"
    IDLE = "idle longer than connections.max.idle.ms"
    BROKER_STOPPED = "broker stopped"
    ERROR_WITH_ACKS0 = "error on a produce with acks=0"
    INJECTED = "injected fault"
    AUTHENTICATION_FAILED = "failed authentication"


class Authenticator(Protocol):
    """A connection's authentication until it completes (``SaslAuthenticator`` on a
    SASL_PLAINTEXT listener); the connection, the dispatcher and the SASL handlers see it so."""

    max_receive_size: int   # frames are limited to this until authentication completes
    raw_tokens: bool        # after SaslHandshake v0: frames are bare SASL tokens
    failure: str | None     # set when the connection must close after the response

    def raw_token(self, token: memoryview) -> None: ...

    def invalid_receive_size(self, detail: str) -> None: ...

    def check_request(self, api_key: int) -> None:
        """Raise a ProtocolError for a request this state does not allow."""

    def answered(self, api_key: int, result: Any) -> None: ...

    def close_after_failure(self, response: Frame | None, reason: str | None = None) -> None: ...

    def handshake(self, version: int, mechanism: str) -> dict[str, Any]: ...

    def authenticate(self, token: bytes) -> dict[str, Any]: ...
