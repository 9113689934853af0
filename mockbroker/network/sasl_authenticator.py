"""One connection's SASL authentication on a ``SASL_PLAINTEXT`` listener (Kafka's
``SaslServerAuthenticator``); the mechanisms themselves are in ``sasl_mechanisms.py``.

States of one connection, as Kafka's authenticator has them:

* ``HANDSHAKE_OR_VERSIONS``: only ApiVersions (once) or SaslHandshake.
* ``HANDSHAKE``: ApiVersions was answered; only SaslHandshake.
* ``AUTHENTICATE``: the mechanism is chosen.  After SaslHandshake v1 the
  tokens arrive in SaslAuthenticate requests; after v0 they arrive as raw
  tokens framed only by the 4-byte size and are answered the same way
  (``raw_tokens``; the connection hands those frames to ``raw_token``).
* complete: the username becomes the connection's principal and the
  connection drops its authenticator, so every later request takes the
  ordinary path (a later SaslHandshake/SaslAuthenticate gets
  ILLEGAL_SASL_STATE from its handler).

Any other request before completion closes the connection (Kafka's
``InvalidRequestException``/``IllegalSaslStateException``): the dispatcher
asks ``check_request`` before decoding.  A failed SaslHandshake or
SaslAuthenticate is answered and the connection closed, both after
``connection.failed.authentication.delay.ms`` (Kafka's
``Selector.maybeDelayCloseOnAuthenticationFailure``: the channel is muted
meanwhile, ``KafkaConnection.close_after``); so is a frame over
``sasl.server.max.receive.size`` (the limit until completion) and a raw
PLAIN token with a wrong password (no answer).  Those responses are not
charged to quotas.
"""

from __future__ import annotations

import enum
import logging
from typing import Any

from protocol.errors import ErrorCode, ProtocolError
from protocol.framing import frame
from protocol.gather import Frame
from protocol.registry import ApiKey

from ..common.channel import CloseReason
from .connection import KafkaConnection
from ..security.sasl_mechanisms import (
    CredentialStore, IllegalSaslState, PlainServer, SaslAuthenticationFailed, SaslFailed, ScramServer, create_server,
)

log = logging.getLogger("mockbroker.sasl")


class SaslState(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


_HANDSHAKE_STATES = (SaslState.HANDSHAKE_OR_VERSIONS, SaslState.HANDSHAKE)


def _api_name(api_key: int) -> str:
    return ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else str(api_key)


class SaslAuthenticator:
    """One connection's authentication; the connection's ``authenticator`` until it completes."""

    def __init__(self, conn: KafkaConnection, store: CredentialStore, mechanisms: list[str],
                 max_receive_size: int, failed_delay_ms: int) -> None:
        self.conn = conn
        self.store = store
        self.mechanisms = mechanisms
        self.max_receive_size = max_receive_size
        self.failed_delay_ms = failed_delay_ms
        self.state = SaslState.HANDSHAKE_OR_VERSIONS
        self.mechanism: str | None = None
        self.server: PlainServer | ScramServer | None = None
        self.raw_tokens = False  # SaslHandshake v0: tokens without Kafka headers
        self.failure: str | None = None  # set when the connection must close after the response

    def __repr__(self) -> str:
        return f"<SaslAuthenticator {self.state.value} mechanism={self.mechanism}>"

    # -- the gate (the dispatcher asks before anything is decoded) --------------------------------
    def check_request(self, api_key: int) -> None:
        """Refuse (close) a request this state does not allow."""
        state = self.state
        if state in _HANDSHAKE_STATES:
            if api_key not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE):
                raise IllegalSaslState(f"Unexpected Kafka request of type {_api_name(api_key)} during SASL handshake.")
            if api_key == ApiKey.API_VERSIONS and state is not SaslState.HANDSHAKE_OR_VERSIONS:
                raise IllegalSaslState(
                    f"Unexpected ApiVersions request received during SASL authentication state {state.value}")
        elif state is SaslState.AUTHENTICATE:
            if api_key != ApiKey.SASL_AUTHENTICATE:
                raise IllegalSaslState(
                    f"Unexpected Kafka request of type {_api_name(api_key)} during SASL authentication.")
        else:
            raise IllegalSaslState(f"request in SASL state {state.value}")

    def answered(self, api_key: int, result: Any) -> None:
        """After a pre-authentication response: a successful ApiVersions allows only the handshake next."""
        if api_key == ApiKey.API_VERSIONS and isinstance(result, dict) and not result.get("error_code"):
            self.state = SaslState.HANDSHAKE

    # -- SaslHandshake ------------------------------------------------------------------------------
    def handshake(self, version: int, mechanism: str) -> dict[str, Any]:
        if mechanism not in self.mechanisms:
            self._fail(f"Unsupported SASL mechanism {mechanism}")
            return {"error_code": ErrorCode.unsupported_sasl_mechanism, "mechanisms": list(self.mechanisms)}
        self.mechanism = mechanism
        self.server = create_server(mechanism, self.store)
        self.raw_tokens = version == 0
        self.state = SaslState.AUTHENTICATE
        return {"error_code": ErrorCode.none, "mechanisms": list(self.mechanisms)}

    # -- tokens --------------------------------------------------------------------------------------
    def authenticate(self, token: bytes) -> dict[str, Any]:
        """One SaslAuthenticate request (after SaslHandshake v1)."""
        try:
            out = self._evaluate(token)
        except (SaslFailed, SaslAuthenticationFailed) as e:
            return {"error_code": ErrorCode.sasl_authentication_failed, "error_message": self._client_message(e),
                    "auth_bytes": b""}
        return {"error_code": ErrorCode.none, "error_message": "", "auth_bytes": out, "session_lifetime": 0}

    def raw_token(self, token: memoryview) -> None:
        """One raw token (after SaslHandshake v0): the answer is size-framed bytes; a failure closes."""
        conn = self.conn
        try:
            out = self._evaluate(token)
        except SaslAuthenticationFailed:  # an AuthenticationException: the delayed close
            self.close_after_failure(None)
            return
        except SaslFailed:  # a SaslException, an IOException to Kafka: closed at once
            conn.close(CloseReason.AUTHENTICATION_FAILED, self.failure or "")
            return
        except ProtocolError as e:
            conn.close(CloseReason.PROTOCOL_ERROR, str(e))
            return
        conn.send_response(frame(out))

    def invalid_receive_size(self, detail: str) -> None:
        """A frame over sasl.server.max.receive.size (or a bad size) before authentication completed:
        a SaslAuthenticationException in Kafka, so the delayed failure close."""
        self.close_after_failure(None, f"Failing SASL authentication due to invalid receive size: {detail}")

    def close_after_failure(self, response: Frame | None, reason: str | None = None) -> None:
        """Kafka's failed-authentication close: nothing more is read, and after
        ``connection.failed.authentication.delay.ms`` the failure response (if any) is sent and
        the connection closed."""
        if reason is not None:
            self._fail(reason)
        self.conn.close_after(self.failed_delay_ms, response, CloseReason.AUTHENTICATION_FAILED, self.failure or "")

    def _evaluate(self, token: bytes | memoryview) -> bytes:
        assert self.server is not None
        try:
            out = self.server.evaluate(bytes(token))
        except SaslAuthenticationFailed as e:
            self._fail(str(e))
            raise
        except SaslFailed as e:
            self._fail(f"{self._generic_message()} ({e})")
            raise
        if self.server.complete:
            self._complete()
        return out

    def _generic_message(self) -> str:
        return ("Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{self.mechanism}")

    def _client_message(self, e: Exception) -> str:
        return str(e) if isinstance(e, SaslAuthenticationFailed) else self._generic_message()

    def _fail(self, reason: str) -> None:
        self.state = SaslState.FAILED
        self.failure = reason

    def _complete(self) -> None:
        assert self.server is not None and self.server.authorization_id is not None
        self.state = SaslState.COMPLETE
        conn = self.conn
        # every later request takes the ordinary path
        conn.authenticated(self.server.authorization_id, self.server.token_authenticated)
        log.debug("connection %s from %s authenticated as %s with %s", conn.conn_id, conn.peer,
                  conn.principal, self.mechanism)
