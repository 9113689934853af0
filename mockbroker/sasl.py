"""SASL on a ``SASL_PLAINTEXT`` listener: the per-connection authenticator and the
PLAIN and SCRAM server mechanisms (Kafka's ``SaslServerAuthenticator``,
``PlainSaslServer`` and ``ScramSaslServer``).

States of one connection, as Kafka's authenticator has them:

* ``HANDSHAKE_OR_VERSIONS``: only ApiVersions (once) or SaslHandshake.
* ``HANDSHAKE``: ApiVersions was answered; only SaslHandshake.
* ``AUTHENTICATE``: the mechanism is chosen.  After SaslHandshake v1 the
  tokens arrive in SaslAuthenticate requests; after v0 they arrive as raw
  tokens framed only by the 4-byte size and are answered the same way
  (``raw_tokens``; the connection hands those frames to ``raw_token``).
* complete: the username becomes ``conn.principal`` and ``conn.sasl`` is
  cleared, so every later request takes the ordinary path (a later
  SaslHandshake/SaslAuthenticate gets ILLEGAL_SASL_STATE from its handler).

Any other request before completion closes the connection (Kafka's
``InvalidRequestException``/``IllegalSaslStateException``).  A failed
SaslHandshake/SaslAuthenticate is answered and the connection closed, both
after ``connection.failed.authentication.delay.ms`` (Kafka's
``Selector.maybeDelayCloseOnAuthenticationFailure``: the channel is muted
meanwhile); so is a frame over ``sasl.server.max.receive.size`` (the limit
until completion) and a raw PLAIN token with a wrong password (no answer).

Mechanism errors come in Kafka's two kinds: ``SaslAuthenticationFailed``
carries a message the client may see (PLAIN's "Invalid username or
password"), ``SaslFailed`` does not (the client gets "Authentication failed
during authentication due to invalid credentials with SASL mechanism M").

SCRAM credentials (RFC 5802 / RFC 7677) are derived at start-up from the
configured passwords with a random salt and 4096 iterations, as
``kafka-configs --alter --add-config 'SCRAM-SHA-256=[password=...]'`` stores
them.  Passwords are used as UTF-8 bytes without SASLprep, as Kafka does.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode, ProtocolError
from protocol.framing import frame
from protocol.registry import ApiKey

if TYPE_CHECKING:
    from .connection import KafkaConnection

log = logging.getLogger("mockbroker.sasl")

PLAIN = "PLAIN"
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = (PLAIN, *SCRAM_HASHES)
SCRAM_ITERATIONS = 4096  # kafka-configs' default
SCRAM_MIN_ITERATIONS = 4096  # ScramMechanism.minIterations for both hashes
DEFAULT_MAX_RECEIVE_SIZE = 524288  # sasl.server.max.receive.size
DEFAULT_FAILED_AUTHENTICATION_DELAY_MS = 100  # connection.failed.authentication.delay.ms


class SaslFailed(Exception):
    """Kafka's ``SaslException``: the client is told only that its credentials were invalid."""


class SaslAuthenticationFailed(Exception):
    """Kafka's ``SaslAuthenticationException``: the message is sent to the client."""


class IllegalSaslState(ProtocolError):
    """A request the authentication state does not allow: the connection is closed."""


def parse_users(items: Iterable[str]) -> dict[str, str]:
    """``user:password`` items (the password may contain ':') -> {user: password}."""
    users: dict[str, str] = {}
    for item in items:
        user, sep, password = item.partition(":")
        if not sep or not user or not password:
            raise ValueError(f"mock.sasl.users item {item!r} is not user:password")
        if user in users:
            raise ValueError(f"mock.sasl.users names {user!r} twice")
        users[user] = password
    return users


# -- credentials --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What a broker stores per SCRAM user: never the password itself."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_password(cls, mechanism: str, password: str, salt: bytes | None = None,
                      iterations: int = SCRAM_ITERATIONS) -> "ScramCredential":
        h = SCRAM_HASHES[mechanism]
        salt = secrets.token_bytes(32) if salt is None else salt
        salted = hashlib.pbkdf2_hmac(h, password.encode(), salt, iterations)  # Hi()
        client_key = hmac.digest(salted, b"Client Key", h)
        return cls(salt, hashlib.new(h, client_key).digest(), hmac.digest(salted, b"Server Key", h), iterations)


class CredentialStore:
    """The configured users: passwords for PLAIN, derived credentials per SCRAM mechanism."""

    def __init__(self, users: Mapping[str, str], mechanisms: Iterable[str],
                 iterations: int = SCRAM_ITERATIONS) -> None:
        self.mechanisms = list(dict.fromkeys(mechanisms))
        self._passwords = {u: p.encode() for u, p in users.items()} if PLAIN in self.mechanisms else {}
        self._scram: dict[str, dict[str, ScramCredential]] = {
            m: {u: ScramCredential.from_password(m, p, iterations=iterations) for u, p in users.items()}
            for m in self.mechanisms if m in SCRAM_HASHES
        }

    def check_plain(self, user: str, password: bytes) -> bool:
        expected = self._passwords.get(user)
        return expected is not None and hmac.compare_digest(expected, password)

    def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None:
        return self._scram.get(mechanism, {}).get(user)

    def set_scram_credential(self, mechanism: str, user: str, credential: ScramCredential) -> None:
        self._scram.setdefault(mechanism, {})[user] = credential


# -- mechanisms ---------------------------------------------------------------------------


class PlainServer:
    """RFC 4616: ``[authzid] NUL authcid NUL passwd`` in one token; the answer is empty."""

    mechanism = PLAIN

    def __init__(self, store: CredentialStore) -> None:
        self.store = store
        self.complete = False
        self.authorization_id: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        # Kafka splits into exactly three parts: missing ones are empty, a fourth is ignored
        text = token.decode("utf-8", "replace")
        authzid, user, password = (text.split("\0", 3) + ["", ""])[:3]
        if not user:
            raise SaslFailed("Authentication failed: username not specified")
        if not password:
            raise SaslFailed("Authentication failed: password not specified")
        if not self.store.check_plain(user, password.encode()):
            raise SaslAuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise SaslAuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username")
        self.authorization_id = user
        self.complete = True
        return b""


# RFC 5802 section 7 grammar, restricted as Kafka restricts it: gs2-cbind-flag "n" only
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_B64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)?"
_EXTS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"(?P<gs2>n,(?:a=(?P<authzid>{_SASLNAME}))?,)(?P<bare>(?:m={_VALUE},)?n=(?P<name>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE}){_EXTS})"
)
_CLIENT_FINAL = re.compile(rf"(?P<without_proof>c=(?P<cbind>{_B64}),r=(?P<nonce>{_PRINTABLE}){_EXTS}),p=(?P<proof>{_B64})")


def _saslname(s: str) -> str:
    return s.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """RFC 5802 server: client-first -> server-first, client-final -> server-final."""

    def __init__(self, mechanism: str, store: CredentialStore, server_nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self.hash = SCRAM_HASHES[mechanism]
        self.store = store
        self._server_nonce = server_nonce
        self.complete = False
        self.authorization_id: str | None = None
        self._step = 0
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._client_first_bare = ""
        self._server_first = ""

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailed("Invalid SCRAM message: not UTF-8") from None
        if self._step == 0:
            return self._client_first(text)
        if self._step == 1:
            return self._client_final(text)
        raise IllegalSaslState(f"Unexpected challenge in Sasl server state {'COMPLETE' if self.complete else 'FAILED'}")

    def _client_first(self, text: str) -> bytes:
        self._step = -1  # failed unless it completes below
        m = _CLIENT_FIRST.fullmatch(text)
        if m is None:
            raise SaslFailed(f"Invalid SCRAM client first message format: {text}")
        user = _saslname(m["name"])
        cred = self.store.scram_credential(self.mechanism, user)
        if cred is None:
            raise SaslFailed("Authentication failed: Invalid user credentials")
        authzid = _saslname(m["authzid"]) if m["authzid"] else ""
        if authzid and authzid != user:
            raise SaslAuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username")
        if cred.iterations < SCRAM_MIN_ITERATIONS:
            raise SaslFailed(f"Iterations {cred.iterations} is less than the minimum {SCRAM_MIN_ITERATIONS}")
        server_nonce = self._server_nonce or secrets.token_urlsafe(24)
        self._credential = cred
        self.authorization_id = user
        self._nonce = m["nonce"] + server_nonce
        self._client_first_bare = m["bare"]
        self._server_first = f"r={self._nonce},s={base64.b64encode(cred.salt).decode()},i={cred.iterations}"
        self._step = 1
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        self._step = -1
        m = _CLIENT_FINAL.fullmatch(text)
        if m is None:
            raise SaslFailed(f"Invalid SCRAM client final message format: {text}")
        if m["nonce"] != self._nonce:
            raise SaslFailed("Invalid client nonce in the final client message.")
        cred = self._credential
        assert cred is not None
        auth_message = f"{self._client_first_bare},{self._server_first},{m['without_proof']}".encode()
        proof = base64.b64decode(m["proof"])
        client_signature = hmac.digest(cred.stored_key, auth_message, self.hash)
        if len(proof) != len(client_signature):
            raise SaslFailed("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature))
        if not hmac.compare_digest(hashlib.new(self.hash, client_key).digest(), cred.stored_key):
            raise SaslFailed("Invalid client credentials")
        server_signature = hmac.digest(cred.server_key, auth_message, self.hash)
        self._credential = None
        self.complete = True
        self._step = 2
        return b"v=" + base64.b64encode(server_signature)


def create_server(mechanism: str, store: CredentialStore) -> PlainServer | ScramServer:
    if mechanism == PLAIN:
        return PlainServer(store)
    return ScramServer(mechanism, store)


# -- the per-connection authenticator -----------------------------------------------------------


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
    """One connection's authentication (``SaslServerAuthenticator``); ``conn.sasl`` until it completes."""

    def __init__(self, conn: "KafkaConnection", store: CredentialStore, mechanisms: list[str],
                 max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE,
                 failed_delay_ms: int = DEFAULT_FAILED_AUTHENTICATION_DELAY_MS) -> None:
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

    # -- the gate (KafkaApis._handle, before anything is decoded) --------------------------------
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
    def handshake(self, version: int, mechanism: str) -> dict:
        if mechanism not in self.mechanisms:
            self._fail(f"Unsupported SASL mechanism {mechanism}")
            return {"error_code": ErrorCode.unsupported_sasl_mechanism, "mechanisms": list(self.mechanisms)}
        self.mechanism = mechanism
        self.server = create_server(mechanism, self.store)
        self.raw_tokens = version == 0
        self.state = SaslState.AUTHENTICATE
        return {"error_code": ErrorCode.none, "mechanisms": list(self.mechanisms)}

    # -- tokens --------------------------------------------------------------------------------------
    def authenticate(self, token: bytes) -> dict:
        """One SaslAuthenticate request (after SaslHandshake v1)."""
        try:
            out = self._evaluate(token)
        except (SaslFailed, SaslAuthenticationFailed) as e:
            return {"error_code": ErrorCode.sasl_authentication_failed, "error_message": self._client_message(e),
                    "auth_bytes": b""}
        return {"error_code": ErrorCode.none, "error_message": "", "auth_bytes": out, "session_lifetime": 0}

    def raw_token(self, token: bytes) -> None:
        """One raw token (after SaslHandshake v0): the answer is size-framed bytes; a failure closes."""
        from .connection import CloseReason

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

    def close_after_failure(self, response: bytes | memoryview | None, reason: str | None = None) -> None:
        """Kafka's failed-authentication close: nothing more is read, and after
        ``connection.failed.authentication.delay.ms`` the failure response (if any) is sent and
        the connection closed."""
        from .connection import CloseReason, MuteReason

        if reason is not None:
            self._fail(reason)
        conn = self.conn
        conn.mute |= MuteReason.RESPONSE_PENDING  # no further frame is taken off the buffer

        def complete() -> None:
            if conn.closed:
                return
            if response is not None:
                conn.send_response(response)
            conn.close(CloseReason.AUTHENTICATION_FAILED, self.failure or "")

        if self.failed_delay_ms > 0:
            conn.server.clock.call_later(self.failed_delay_ms, complete)
        else:
            complete()

    def _evaluate(self, token: bytes) -> bytes:
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
        conn.principal = self.server.authorization_id
        conn.sasl = None  # every later request takes the ordinary path
        log.debug("connection %s from %s authenticated as %s with %s", conn.conn_id, conn.peer,
                  conn.principal, self.mechanism)
