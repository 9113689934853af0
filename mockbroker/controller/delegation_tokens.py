"""Delegation tokens (KIP-48): Kafka's ``DelegationTokenControlManager`` (create, renew,
expire, the periodic sweep of expired tokens) with the broker's ``DelegationTokenManager`` and
``DelegationTokenCache`` (the tokens, their HMACs, and the SCRAM credentials a token logs in
with), one for the cluster.

Tokens are on only when ``delegation.token.secret.key`` is set (``isEnabled``); every API then
answers DELEGATION_TOKEN_AUTH_DISABLED otherwise.  A token's HMAC is HmacSHA512 of its id under
the secret key; its SCRAM credentials (both mechanisms, 4096 iterations, as
``DelegationTokenManager.prepareScramCredentials``) are derived from the HMAC in base64, the
password a client sends with ``tokenauth=true``.

Time is the broker's clock.  Kafka removes expired tokens in a periodic controller task every
``delegation.token.expiry.check.interval.ms`` (``sweepExpiredDelegationTokens``): until that
sweep an expired token is still described and still logs in (the SCRAM callback does not check
the expiry), and renewing it answers DELEGATION_TOKEN_EXPIRED; after it, DELEGATION_TOKEN_NOT_FOUND.
The sweep here runs when the tokens are next looked at, removing what the last sweep instant
(start + k x interval) would have removed: the same answers, with no timer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid
from dataclasses import dataclass, field

from protocol.errors import ErrorCode

from ..common.clock import Clock
from .quorum import kafka_uuid
from ..security.sasl_mechanisms import SCRAM_HASHES, SCRAM_MIN_ITERATIONS, ScramCredential

LONG_MAX = (1 << 63) - 1
USER_TYPE = "User"
Principal = tuple[str, str]  # KafkaPrincipal: (type, name)


def _random_token_id() -> str:
    """``Uuid.randomUuid().toString()``: never one that starts with '-'."""
    while True:
        token_id = kafka_uuid(uuid.uuid4())
        if not token_id.startswith("-"):
            return token_id


def _sum(now: int, duration: int) -> int:
    """DelegationTokenControlManager.sum: saturating at Long.MAX_VALUE."""
    return LONG_MAX if now > LONG_MAX - duration else now + duration


@dataclass(slots=True)
class TokenInformation:
    """Kafka's ``TokenInformation`` with the token's HMAC and SCRAM credentials."""

    token_id: str
    owner: Principal
    requester: Principal
    renewers: list[Principal]
    issue_ms: int
    max_ms: int
    expiry_ms: int
    hmac: bytes
    credentials: dict[str, ScramCredential] = field(default_factory=dict, repr=False)

    def owner_or_renewer(self, principal: Principal) -> bool:
        return principal == self.owner or principal in self.renewers

    def expired(self, now: int) -> bool:
        return self.max_ms < now or self.expiry_ms < now


class DelegationTokenManager:
    """The cluster's delegation tokens (see the module docstring)."""

    def __init__(self, clock: Clock, secret_key: str | None, max_lifetime_ms: int, expiry_time_ms: int,
                 check_interval_ms: int) -> None:
        self.clock = clock
        self.secret_key = secret_key or None  # an empty key disables tokens, as in Kafka
        self.max_lifetime_ms = max_lifetime_ms
        self.expiry_time_ms = expiry_time_ms
        self.check_interval_ms = check_interval_ms
        self._epoch_ms = clock.time_ms()
        self._tokens: dict[str, TokenInformation] = {}
        self._by_hmac: dict[bytes, str] = {}

    @property
    def enabled(self) -> bool:
        return self.secret_key is not None

    def _hmac(self, token_id: str) -> bytes:
        assert self.secret_key is not None
        return hmac.digest(self.secret_key.encode(), token_id.encode(), hashlib.sha512)

    def _sweep(self) -> int:
        """Remove the tokens the last periodic sweep would have removed; the time now."""
        now = self.clock.time_ms()
        interval = self.check_interval_ms
        last_sweep = self._epoch_ms + (now - self._epoch_ms) // interval * interval if interval > 0 else now
        for token in [t for t in self._tokens.values() if t.expired(last_sweep)]:
            self._remove(token)
        return now

    def _remove(self, token: TokenInformation) -> None:
        del self._tokens[token.token_id]
        self._by_hmac.pop(token.hmac, None)

    # -- the controller's operations ---------------------------------------------------------
    def create(self, owner: Principal, requester: Principal, renewers: list[Principal],
               max_lifetime_ms: int) -> tuple[ErrorCode, TokenInformation | None]:
        """createDelegationToken: the new token, or the error (owner and requester are answered
        either way by the caller)."""
        if not self.enabled:
            return ErrorCode.delegation_token_auth_disabled, None
        now = self._sweep()
        max_life = self.max_lifetime_ms if max_lifetime_ms <= 0 else min(self.max_lifetime_ms, max_lifetime_ms)
        max_ms = _sum(now, max_life)
        expiry_ms = min(max_ms, _sum(now, self.expiry_time_ms))
        if any(ptype != USER_TYPE for ptype, _ in renewers):
            return ErrorCode.invalid_principal_type, None
        token_id = _random_token_id()
        mac = self._hmac(token_id)
        password = base64.b64encode(mac).decode()  # hmacAsBase64String, the SCRAM password
        token = TokenInformation(token_id, owner, requester, list(renewers), now, max_ms, expiry_ms, mac,
                                 {m: ScramCredential.from_password(m, password, iterations=SCRAM_MIN_ITERATIONS)
                                  for m in SCRAM_HASHES})
        self._tokens[token_id] = token
        self._by_hmac[mac] = token_id
        return ErrorCode.none, token

    def _token(self, mac: bytes) -> tuple[ErrorCode, TokenInformation | None, int]:
        """What renew and expire check first: tokens enabled, then the token of the HMAC (after the
        sweep), and the time now."""
        if not self.enabled:
            return ErrorCode.delegation_token_auth_disabled, None, 0
        now = self._sweep()
        token_id = self._by_hmac.get(bytes(mac))
        token = None if token_id is None else self._tokens.get(token_id)
        return (ErrorCode.delegation_token_not_found if token is None else ErrorCode.none), token, now

    def renew(self, mac: bytes, principal: Principal, renew_period_ms: int) -> tuple[ErrorCode, int]:
        """renewDelegationToken: (error, the new expiry timestamp or -1)."""
        error, token, now = self._token(mac)
        if token is None:
            return error, -1
        if token.expired(now):
            return ErrorCode.delegation_token_expired, -1
        if not token.owner_or_renewer(principal):
            return ErrorCode.delegation_token_owner_mismatch, -1
        period = self.expiry_time_ms if renew_period_ms <= 0 else min(self.expiry_time_ms, renew_period_ms)
        token.expiry_ms = min(token.max_ms, now + period)
        return ErrorCode.none, token.expiry_ms

    def expire(self, mac: bytes, principal: Principal, expiry_period_ms: int) -> tuple[ErrorCode, int]:
        """expireDelegationToken: a negative period removes the token now; otherwise its expiry
        moves to now + period (at most its max timestamp)."""
        error, token, now = self._token(mac)
        if token is None:
            return error, -1
        if not token.owner_or_renewer(principal):
            return ErrorCode.delegation_token_owner_mismatch, -1
        if expiry_period_ms < 0:
            self._remove(token)
            return ErrorCode.none, now
        if token.expired(now):
            return ErrorCode.delegation_token_expired, -1
        token.expiry_ms = min(token.max_ms, _sum(now, expiry_period_ms))
        return ErrorCode.none, token.expiry_ms

    # -- what the broker reads ---------------------------------------------------------------
    def tokens(self) -> list[TokenInformation]:
        """Every token the cache holds, in creation order."""
        self._sweep()
        return list(self._tokens.values())

    def scram_login(self, mechanism: str, token_id: str) -> tuple[ScramCredential, str] | None:
        """ScramServerCallbackHandler's token callback: the token's credential for ``mechanism``
        and its owner's name (the authorization id), or None for an unknown token id."""
        self._sweep()
        token = self._tokens.get(token_id)
        if token is None or mechanism not in token.credentials:
            return None
        return token.credentials[mechanism], token.owner[1]
