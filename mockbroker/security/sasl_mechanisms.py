"""SASL server mechanisms and the credentials they check (Kafka's ``PlainSaslServer``,
``ScramSaslServer`` and ``CredentialCache``), for a ``SASL_PLAINTEXT`` listener.

This module knows nothing of connections; ``sasl_authenticator.py`` runs these
mechanisms for one connection.

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
import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from protocol.errors import ProtocolError

PLAIN = "PLAIN"
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = (PLAIN, *SCRAM_HASHES)
SCRAM_ITERATIONS = 4096  # kafka-configs' default
SCRAM_MIN_ITERATIONS = 4096  # ScramMechanism.minIterations for both hashes
SCRAM_MAX_ITERATIONS = 16384  # ScramControlManager.validateUpsertion: "Too many iterations" above
# org.apache.kafka.clients.admin.ScramMechanism's wire types (0: UNKNOWN)
SCRAM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


class SaslFailed(Exception):
    """Kafka's ``SaslException``: the client is told only that its credentials were invalid."""


class SaslAuthenticationFailed(Exception):
    """Kafka's ``SaslAuthenticationException``: the message is sent to the client."""


class IllegalSaslState(ProtocolError):
    """A request the authentication state does not allow: the connection is closed."""


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
        return cls.from_salted_password(mechanism, salt, salted, iterations)

    @classmethod
    def from_salted_password(cls, mechanism: str, salt: bytes, salted: bytes, iterations: int) -> "ScramCredential":
        """What ``AlterUserScramCredentials`` stores: the client sends the salted password
        (ScramControlManager.finishUpsertion, ScramFormatter's storedKey and serverKey)."""
        h = SCRAM_HASHES[mechanism]
        client_key = hmac.digest(salted, b"Client Key", h)
        return cls(salt, hashlib.new(h, client_key).digest(), hmac.digest(salted, b"Server Key", h), iterations)


class TokenLogins(Protocol):
    """What SCRAM asks of the delegation tokens (``DelegationTokenCache``) for ``tokenauth=true``."""

    def scram_login(self, mechanism: str, token_id: str) -> tuple[ScramCredential, str] | None: ...


class CredentialStore:
    """The configured users: passwords for PLAIN, derived credentials per SCRAM mechanism; and the
    delegation tokens SCRAM logs in with (``tokens``, set by the cluster)."""

    tokens: TokenLogins | None = None

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

    def delete_scram_credential(self, mechanism: str, user: str) -> bool:
        """Remove one credential (RemoveUserScramCredentialRecord); False when there was none.
        Connections already authenticated stay so, as in Kafka; new logins fail at once."""
        return self._scram.get(mechanism, {}).pop(user, None) is not None

    def scram_users(self) -> dict[str, list[tuple[str, int]]]:
        """Every user with a SCRAM credential -> [(mechanism, iterations)], mechanisms in
        SCRAM_HASHES order (ScramImage.describe)."""
        out: dict[str, list[tuple[str, int]]] = {}
        for mechanism in SCRAM_HASHES:
            for user, cred in self._scram.get(mechanism, {}).items():
                out.setdefault(user, []).append((mechanism, cred.iterations))
        return out


# -- mechanisms ---------------------------------------------------------------------------


class PlainServer:
    """RFC 4616: ``[authzid] NUL authcid NUL passwd`` in one token; the answer is empty."""

    mechanism = PLAIN
    token_authenticated = False

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
    rf"r=(?P<nonce>{_PRINTABLE})(?P<exts>{_EXTS}))"
)
_CLIENT_FINAL = re.compile(rf"(?P<without_proof>c=(?P<cbind>{_B64}),r=(?P<nonce>{_PRINTABLE}){_EXTS}),p=(?P<proof>{_B64})")


def _saslname(s: str) -> str:
    return s.replace("=2C", ",").replace("=3D", "=")


def _token_auth(extensions: str) -> bool:
    """ScramExtensions.tokenAuthenticated: ``tokenauth`` parsed as Java's Boolean.parseBoolean."""
    pairs = dict(item.split("=", 1) for item in extensions.split(",") if item)
    return pairs.get("tokenauth", "").lower() == "true"


class ScramServer:
    """RFC 5802 server: client-first -> server-first, client-final -> server-final."""

    def __init__(self, mechanism: str, store: CredentialStore, server_nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self.hash = SCRAM_HASHES[mechanism]
        self.store = store
        self._server_nonce = server_nonce
        self.complete = False
        self.authorization_id: str | None = None
        self.token_authenticated = False
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
        if _token_auth(m["exts"]):  # a delegation token: the user name is its id, the owner logs in
            tokens = self.store.tokens
            login = None if tokens is None else tokens.scram_login(self.mechanism, user)
            if login is None:
                raise SaslFailed(f"Token Authentication failed: Invalid tokenId : {user}")
            cred, authorization_id = login
            self.token_authenticated = True
        else:
            found = self.store.scram_credential(self.mechanism, user)
            if found is None:
                raise SaslFailed("Authentication failed: Invalid user credentials")
            cred, authorization_id = found, user
        authzid = _saslname(m["authzid"]) if m["authzid"] else ""
        if authzid and authzid != user:
            raise SaslAuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username")
        if cred.iterations < SCRAM_MIN_ITERATIONS:
            raise SaslFailed(f"Iterations {cred.iterations} is less than the minimum {SCRAM_MIN_ITERATIONS}")
        server_nonce = self._server_nonce or secrets.token_urlsafe(24)
        self._credential = cred
        self.authorization_id = authorization_id
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
