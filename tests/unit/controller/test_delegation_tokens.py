"""Delegation tokens over the wire (CreateDelegationToken 38, RenewDelegationToken 39,
ExpireDelegationToken 40, DescribeDelegationToken 41) on the manual clock: Kafka's
KafkaApis.allowTokenRequests, DelegationTokenControlManager's timestamps and error codes, the
periodic sweep of expired tokens, and a token logging in over SCRAM with ``tokenauth=true`` as
its owner (ScramSaslServer), unable to ask for tokens itself."""

from __future__ import annotations

import base64
import hashlib
import hmac
import struct

import pytest

from mockbroker import MockBroker
from mockbroker.common.clock import ManualClock
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode

from ..security.test_sasl import META, ScramClient, authenticate, handshake, login_plain, principal_of

E = ErrorCode
SECRET = "mock-secret"
EXPIRY, MAX_LIFE, SWEEP = 10_000, 50_000, 20_000
T0 = 1_700_000_000_000  # the broker clock at start: expired tokens are swept at T0 + k * SWEEP
CONFIG = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAIN://127.0.0.1:0",
          "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,PLAIN:PLAINTEXT",
          "inter.broker.listener.name": "SASL_PLAINTEXT",
          "mock.sasl.users": ["alice:alice-secret", "bob:bob-secret", "carol:carol-secret"],
          "connection.failed.authentication.delay.ms": 0,
          "delegation.token.secret.key": SECRET,
          "delegation.token.expiry.time.ms": EXPIRY, "delegation.token.max.lifetime.ms": MAX_LIFE,
          "delegation.token.expiry.check.interval.ms": SWEEP}


class TokenScramClient(ScramClient):
    """A SCRAM client sending the ``tokenauth=true`` extension (ScramExtensions), as Java's
    ScramLoginModule with tokenauth="true"."""

    def __init__(self, mechanism, token_id, hmac_b64):
        super().__init__(mechanism, token_id, hmac_b64)
        self.first_bare += ",tokenauth=true"


@pytest.fixture(scope="module")
def b():
    with MockBroker(config=CONFIG, clock=ManualClock(start_wall_ms=T0)) as b:
        yield b


@pytest.fixture
def connect(b):
    clients = []

    def open_(user="alice", plaintext=False):
        if plaintext:
            port = b.call(lambda cl: next(iter(cl.brokers.values())).ports["PLAIN"])
            c = RawKafkaClient.connect(f"127.0.0.1:{port}")
        else:
            c = RawKafkaClient.connect(b.bootstrap_servers)
            login_plain(c, user, f"{user}-secret")
        clients.append(c)
        return c

    yield open_
    for c in clients:
        c.close()


def now(b):
    return b.call(lambda cl: cl.clock.time_ms())


def error_only(c, api_key, version, body):
    """The error code of a response whose timestamps are Kafka's -1 ("none"), which kio's reader
    refuses ("Cannot parse negative timestamp"): every delegation-token response starts with it,
    after the correlation id and (flexible versions) the header's empty tagged fields."""
    c.send(api_key, version, body)
    frame = c.recv_frame()
    flexible = version >= 2
    return struct.unpack_from(">h", frame, 4 + flexible)[0]


def create(c, renewers=(), max_lifetime=-1, owner=None, version=3):
    body = {"renewers": [{"principal_type": t, "principal_name": n} for t, n in renewers],
            "max_lifetime": max_lifetime}
    if version >= 3:
        body |= {"owner_principal_type": owner and "User", "owner_principal_name": owner}
    return c.request(38, version, body)


def renew(c, mac, period=-1, version=2):
    return c.request(39, version, {"hmac": mac, "renew_period": period})


def expire(c, mac, period=-1, version=2):
    return c.request(40, version, {"hmac": mac, "expiry_time_period": period})


def describe(c, owners=None, version=3):
    r = c.request(41, version, {"owners": None if owners is None else
                                [{"principal_type": "User", "principal_name": o} for o in owners]})
    return r.error_code, [t.token_id for t in r.tokens]


def ms(value):
    """A kio timestamp field as epoch milliseconds."""
    return int(value.timestamp() * 1000)


def token_login(b, token_id, mac, mechanism="SCRAM-SHA-256"):
    """A fresh connection logging in with the token: (error code, message, principal)."""
    c = RawKafkaClient.connect(b.bootstrap_servers)
    try:
        assert handshake(c, mechanism).error_code == 0
        client = TokenScramClient(mechanism, token_id, base64.b64encode(mac).decode())
        first = authenticate(c, client.first())
        if first.error_code:
            return first.error_code, first.error_message, None
        final = authenticate(c, client.final(first.auth_bytes))
        if final.error_code:
            return final.error_code, final.error_message, None
        assert client.verify(final.auth_bytes) and c.request(3, 12, META).brokers is not None
        return 0, None, principal_of(b, c)
    finally:
        c.close()


def test_token_timestamps_hmac_and_owner(b, connect):
    c = connect("alice")
    t0 = now(b)
    r = create(c, renewers=[("User", "bob")])
    assert r.error_code == E.none
    assert (r.principal_type, r.principal_name) == ("User", "alice")
    assert (r.token_requester_principal_type, r.token_requester_principal_name) == ("User", "alice")
    assert (ms(r.issue_timestamp), ms(r.expiry_timestamp), ms(r.max_timestamp)) == (t0, t0 + EXPIRY, t0 + MAX_LIFE)
    assert r.hmac == hmac.digest(SECRET.encode(), r.token_id.encode(), hashlib.sha512)
    assert not r.token_id.startswith("-") and len(r.token_id) == 22
    # a shorter max lifetime from the request bounds both
    short = create(c, max_lifetime=4000)
    assert (ms(short.expiry_timestamp), ms(short.max_timestamp)) == (t0 + 4000, t0 + 4000)


def test_a_token_for_another_owner_and_principal_types(b, connect):
    c = connect("alice")
    r = create(c, owner="carol")
    assert (r.error_code, r.principal_name, r.token_requester_principal_name) == (E.none, "carol", "alice")
    group = {"renewers": [{"principal_type": "Group", "principal_name": "g"}], "max_lifetime": -1,
             "owner_principal_type": None, "owner_principal_name": None}
    assert error_only(c, 38, 3, group) == E.invalid_principal_type


@pytest.mark.parametrize("plaintext", [False, True])
def test_an_owner_name_without_a_principal_type_is_an_unknown_server_error(connect, plaintext):
    """Kafka 4.4.0 as the differential tester saw it over PLAINTEXT; KafkaApis makes the owner's
    KafkaPrincipal before any check (so over SASL too), and its constructor throws on the null type: the answer is
    CreateDelegationTokenRequest.getErrorResponse's: UNKNOWN_SERVER_ERROR, the ANONYMOUS owner and
    requester, no timestamps, and no token."""
    from tests.differential import schema

    c = connect(plaintext=plaintext)
    before = None if plaintext else describe(c)
    c.send(38, 3, {"renewers": [], "max_lifetime": -1, "owner_principal_type": None, "owner_principal_name": "dave"})
    _, r = schema.decode_response(38, 3, c.recv_frame())
    assert r == {"ErrorCode": E.unknown_server_error, "PrincipalType": "User", "PrincipalName": "ANONYMOUS",
                 "TokenRequesterPrincipalType": "User", "TokenRequesterPrincipalName": "ANONYMOUS",
                 "IssueTimestampMs": -1, "ExpiryTimestampMs": -1, "MaxTimestampMs": -1, "TokenId": "", "Hmac": b"",
                 "ThrottleTimeMs": 0}
    if not plaintext:
        assert describe(c) == before


def test_requests_not_allowed_over_plaintext(connect):
    c = connect(plaintext=True)
    body = {"renewers": [], "max_lifetime": -1, "owner_principal_type": None, "owner_principal_name": None}
    assert error_only(c, 38, 3, body) == E.delegation_token_request_not_allowed
    assert error_only(c, 39, 2, {"hmac": b"x", "renew_period": -1}) == E.delegation_token_request_not_allowed
    assert error_only(c, 40, 1, {"hmac": b"x", "expiry_time_period": -1}) == E.delegation_token_request_not_allowed
    assert describe(c) == (E.delegation_token_request_not_allowed, [])


def test_renew_and_expire_as_owner_renewer_or_other(b, connect):
    alice, bob, carol = connect("alice"), connect("bob"), connect("carol")
    r = create(alice, renewers=[("User", "bob")])
    mac = r.hmac
    assert renew(carol, mac).error_code == E.delegation_token_owner_mismatch
    assert renew(bob, b"not-a-token").error_code == E.delegation_token_not_found
    b.advance(3000)
    renewed = renew(bob, mac, period=5000)
    assert (renewed.error_code, ms(renewed.expiry_timestamp)) == (E.none, now(b) + 5000)
    # a period over delegation.token.expiry.time.ms is cut to it; never past the max timestamp
    assert ms(renew(alice, mac, period=10 * EXPIRY).expiry_timestamp) == now(b) + EXPIRY
    assert expire(carol, mac, 1000).error_code == E.delegation_token_owner_mismatch
    later = expire(bob, mac, 1000)
    assert (later.error_code, ms(later.expiry_timestamp)) == (E.none, now(b) + 1000)
    gone = expire(alice, mac, -1)
    assert (gone.error_code, ms(gone.expiry_timestamp)) == (E.none, now(b))
    assert renew(alice, mac).error_code == E.delegation_token_not_found
    assert r.token_id not in describe(alice)[1]


def test_expired_tokens_live_until_the_sweep(b, connect):
    """Sweeps run every SWEEP ms of the broker clock from its start (T0): a token expiring between
    two of them is expired (renew/expire refused) yet described and able to log in until the next."""
    alice = connect("alice")
    b.advance(SWEEP - (now(b) - T0) % SWEEP + 1)  # 1 ms after a sweep
    r = create(alice)
    next_sweep = now(b) - 1 + SWEEP
    b.advance(EXPIRY + 1)  # expired, EXPIRY < SWEEP: before the next sweep
    assert now(b) < next_sweep
    assert renew(alice, r.hmac).error_code == E.delegation_token_expired
    assert expire(alice, r.hmac, 1000).error_code == E.delegation_token_expired
    assert r.token_id in describe(alice)[1]
    code, _, principal = token_login(b, r.token_id, r.hmac)
    assert (code, principal) == (0, "alice")  # the SCRAM callback does not look at the expiry
    b.advance(next_sweep - now(b) - 1)
    assert r.token_id in describe(alice)[1]
    b.advance(1)
    assert r.token_id not in describe(alice)[1]
    assert renew(alice, r.hmac).error_code == E.delegation_token_not_found
    code, message, _ = token_login(b, r.token_id, r.hmac)
    assert code == E.sasl_authentication_failed and "SCRAM-SHA-256" in message


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_logs_in_as_its_owner_and_cannot_ask_for_tokens(b, connect, mechanism):
    alice = connect("alice")
    r = create(alice)
    c = RawKafkaClient.connect(b.bootstrap_servers)
    try:
        assert handshake(c, mechanism).error_code == 0
        client = TokenScramClient(mechanism, r.token_id, base64.b64encode(r.hmac).decode())
        first = authenticate(c, client.first())
        final = authenticate(c, client.final(first.auth_bytes))
        assert (first.error_code, final.error_code) == (0, 0) and client.verify(final.auth_bytes)
        assert principal_of(b, c) == "alice"
        body = {"renewers": [], "max_lifetime": -1, "owner_principal_type": None, "owner_principal_name": None}
        assert error_only(c, 38, 3, body) == E.delegation_token_request_not_allowed
        assert describe(c) == (E.delegation_token_request_not_allowed, [])
    finally:
        c.close()
    # a wrong HMAC, or the token id as an ordinary SCRAM user, does not log in
    assert token_login(b, r.token_id, b"wrong")[0] == E.sasl_authentication_failed
    c = RawKafkaClient.connect(b.bootstrap_servers)
    try:
        assert handshake(c, mechanism).error_code == 0
        plain_scram = ScramClient(mechanism, r.token_id, base64.b64encode(r.hmac).decode())
        assert authenticate(c, plain_scram.first()).error_code == E.sasl_authentication_failed
    finally:
        c.close()


def test_describe_filters_by_owner_or_renewer(connect):
    alice, bob = connect("alice"), connect("bob")
    r = create(alice, renewers=[("User", "bob")])
    assert describe(bob, []) == (E.none, [])
    assert r.token_id in describe(bob, ["bob"])[1]       # bob renews it
    assert r.token_id in describe(bob, ["alice"])[1]     # alice owns it
    assert r.token_id not in describe(bob, ["zed"])[1]
    assert r.token_id in describe(bob)[1]                # no authorizer: every token is described
    for version in (1, 2):
        code, ids = describe(alice, version=version)
        assert code == E.none and r.token_id in ids


@pytest.mark.parametrize("version", [1, 2])
def test_older_versions(connect, version):
    c = connect("alice")
    r = create(c, version=version)
    assert r.error_code == E.none and r.principal_name == "alice"
    assert renew(c, r.hmac, version=version).error_code == E.none
    assert expire(c, r.hmac, -1, version=version).error_code == E.none


def test_tokens_disabled_without_a_secret_key():
    cfg = {k: v for k, v in CONFIG.items() if k != "delegation.token.secret.key"}
    with MockBroker(config=cfg) as b:
        c = RawKafkaClient.connect(b.bootstrap_servers)
        try:
            login_plain(c, "alice", "alice-secret")
            r = create(c)
            assert (r.error_code, r.principal_name) == (E.delegation_token_auth_disabled, "alice")
            assert renew(c, b"x").error_code == E.delegation_token_auth_disabled
            assert expire(c, b"x").error_code == E.delegation_token_auth_disabled
            assert describe(c) == (E.delegation_token_auth_disabled, [])
        finally:
            c.close()


def test_a_max_lifetime_beyond_a_timedelta_is_the_configured_maximum(b, connect):
    """Java's Admin sends any long as max_lifetime_ms (Long.MAX_VALUE / 2 here), more than a
    Python timedelta holds: Kafka takes the smaller configured maximum, and so do we (kio's
    reader refused it and the connection was closed)."""
    from protocol.codec import build_request, encode_request
    from protocol.registry import any_spec

    c = connect("alice")
    t0 = now(b)
    body = {"renewers": [], "max_lifetime": 4000, "owner_principal_type": None, "owner_principal_name": None}
    c._corr += 1
    frame = encode_request(38, 3, c._corr, c.client_id, build_request(38, 3, body), any_spec(38))
    marker = struct.pack(">q", 4000)
    assert frame.count(marker) == 1
    c.send_raw(frame.replace(marker, struct.pack(">q", (1 << 62) - 1)))
    r = c.response(38, 3, c._corr)
    assert (r.error_code, ms(r.max_timestamp), ms(r.expiry_timestamp)) == (E.none, t0 + MAX_LIFE, t0 + EXPIRY)
    # a renewal for Long.MAX_VALUE ms: the configured expiry time
    huge = struct.pack(">q", (1 << 63) - 1)
    c._corr += 1
    renew_frame = encode_request(39, 2, c._corr, c.client_id, build_request(39, 2, {"hmac": r.hmac,
                                                                                     "renew_period": 7}),
                                 any_spec(39))
    c.send_raw(renew_frame.replace(struct.pack(">q", 7), huge))
    renewed = c.response(39, 2, c._corr)
    assert (renewed.error_code, ms(renewed.expiry_timestamp)) == (E.none, t0 + EXPIRY)


AUTHORIZED = CONFIG | {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                       "super.users": "User:alice"}


def test_with_an_authorizer_create_for_another_owner_needs_create_tokens_and_describe_is_filtered():
    """KafkaApis.handleCreateTokenRequest: CREATE_TOKENS on the owner (User resource), else
    DELEGATION_TOKEN_AUTHORIZATION_FAILED; handleDescribeTokensRequest: a token neither owned nor
    renewed is described only with DESCRIBE on it or DESCRIBE_TOKENS on its owner."""
    with MockBroker(config=AUTHORIZED) as b:
        clients = []

        def as_(user):
            c = RawKafkaClient.connect(b.bootstrap_servers)
            login_plain(c, user, f"{user}-secret")
            clients.append(c)
            return c

        try:
            alice, bob, carol = as_("alice"), as_("bob"), as_("carol")
            other = {"renewers": [], "max_lifetime": -1, "owner_principal_type": "User",
                     "owner_principal_name": "carol"}
            assert error_only(bob, 38, 3, other) == E.delegation_token_authorization_failed
            assert create(bob, owner="bob").error_code == E.none  # oneself: no ACL needed
            token = create(alice, owner="carol", renewers=[("User", "bob")])  # a super user
            assert (token.error_code, token.principal_name) == (E.none, "carol")
            alices = create(alice)
            assert describe(carol) == (E.none, [token.token_id])  # the owner
            assert set(describe(bob)[1]) >= {token.token_id} and alices.token_id not in describe(bob)[1]
            b.add_acl("USER", "User:alice", "User:carol", "DESCRIBE_TOKENS")
            assert alices.token_id in describe(carol)[1]
            b.add_acl("USER", "User:carol", "User:bob", "CREATE_TOKENS")
            assert create(bob, owner="carol").error_code == E.none
        finally:
            for c in clients:
                c.close()
