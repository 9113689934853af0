"""SASL: the PLAIN and SCRAM server mechanisms (RFC 4616, RFC 5802/7677 test vectors), the
configuration, and authentication over a real socket (SaslHandshake v0 raw tokens and v1 with
SaslAuthenticate, failures closing the connection, the gate before authentication, the
principal as the quota user)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import struct

import pytest

from mockbroker import ManualClock, MockBroker
from mockbroker.config.broker_config import SASL_MECHANISMS, BrokerConfig, ConfigError, parse_listeners, parse_users
from mockbroker.security.sasl_mechanisms import (
    MECHANISMS, CredentialStore, PlainServer, SaslAuthenticationFailed, SaslFailed, ScramCredential, ScramServer,
)
from protocol.client import RawKafkaClient
from protocol.codec import build_request, encode_request, timedelta_ms
from protocol.errors import ErrorCode
from protocol.records import build_batch
from protocol.registry import ApiKey, any_spec

from ..purgatory.test_delayed_ops import answered

E = ErrorCode
USERS = ["alice:alice-secret", "bob:bob:with:colons"]
META = {"topics": None, "allow_auto_topic_creation": False}
PLAIN_FAILED = "Authentication failed: Invalid username or password"


def scram_failed(mechanism):
    return ("Authentication failed during authentication due to invalid credentials with SASL mechanism "
            + mechanism)


# -- a SCRAM client written from RFC 5802 section 3, to drive the server ---------------------------


class ScramClient:
    def __init__(self, mechanism, user, password, nonce="fyko+d2lbbFgONRv9qkxdawL", authzid=""):
        self.h = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
        self.user, self.password, self.nonce = user, password, nonce
        self.gs2 = f"n,{'a=' + authzid if authzid else ''},"
        self.first_bare = f"n={user},r={nonce}"

    def first(self) -> bytes:
        return (self.gs2 + self.first_bare).encode()

    def final(self, server_first: bytes, proof_password=None) -> bytes:
        attrs = dict(kv.split("=", 1) for kv in server_first.decode().split(","))
        assert attrs["r"].startswith(self.nonce)
        salted = hashlib.pbkdf2_hmac(self.h, (proof_password or self.password).encode(),
                                     base64.b64decode(attrs["s"]), int(attrs["i"]))
        without_proof = f"c={base64.b64encode(self.gs2.encode()).decode()},r={attrs['r']}"
        auth = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        client_key = hmac.digest(salted, b"Client Key", self.h)
        sig = hmac.digest(hashlib.new(self.h, client_key).digest(), auth, self.h)
        self.server_signature = hmac.digest(hmac.digest(salted, b"Server Key", self.h), auth, self.h)
        proof = bytes(a ^ b for a, b in zip(client_key, sig))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        return server_final == b"v=" + base64.b64encode(self.server_signature)


def store(users=USERS, mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")):
    return CredentialStore(parse_users(users), mechanisms)


# -- SCRAM ------------------------------------------------------------------------------------------


def test_scram_sha256_rfc7677_example():
    """RFC 7677 section 3: user "user", password "pencil", the exchanged messages byte for byte."""
    s = CredentialStore({}, ["SCRAM-SHA-256"])
    s.set_scram_credential("SCRAM-SHA-256", "user", ScramCredential.from_password(
        "SCRAM-SHA-256", "pencil", base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096))
    server = ScramServer("SCRAM-SHA-256", s, server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert not server.complete
    final = server.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.authorization_id == "user"


def test_scram_sha256_rfc7677_wrong_proof_fails():
    s = CredentialStore({}, ["SCRAM-SHA-256"])
    s.set_scram_credential("SCRAM-SHA-256", "user", ScramCredential.from_password(
        "SCRAM-SHA-256", "pencil", base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096))
    server = ScramServer("SCRAM-SHA-256", s, server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    with pytest.raises(SaslFailed):
        server.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVM=")
    assert not server.complete


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_round_trip_and_server_signature(mechanism):
    server = ScramServer(mechanism, store())
    client = ScramClient(mechanism, "bob", "bob:with:colons")
    server_first = server.evaluate(client.first())
    assert b",i=4096" in server_first and b",s=" in server_first
    assert client.verify(server.evaluate(client.final(server_first)))
    assert server.complete and server.authorization_id == "bob"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_failures(mechanism):
    # wrong password: the proof does not verify
    server = ScramServer(mechanism, store())
    client = ScramClient(mechanism, "alice", "alice-secret")
    first = server.evaluate(client.first())
    with pytest.raises(SaslFailed, match="Invalid client credentials"):
        server.evaluate(client.final(first, proof_password="nope"))
    # unknown user: refused at the first message
    with pytest.raises(SaslFailed, match="Invalid user credentials"):
        ScramServer(mechanism, store()).evaluate(ScramClient(mechanism, "mallory", "x").first())
    # an authorization id other than the user: a message the client may see
    with pytest.raises(SaslAuthenticationFailed, match="authorization id that is different"):
        ScramServer(mechanism, store()).evaluate(ScramClient(mechanism, "alice", "x", authzid="bob").first())
    # the same authorization id is fine
    ScramServer(mechanism, store()).evaluate(ScramClient(mechanism, "alice", "x", authzid="alice").first())
    # the final message must repeat the combined nonce
    server = ScramServer(mechanism, store())
    first = server.evaluate(client.first())
    final = client.final(first).replace(b",r=fyko", b",r=XXXX")
    with pytest.raises(SaslFailed, match="nonce"):
        server.evaluate(final)
    # channel binding requested ("y"/"p=") or garbage: Kafka accepts only gs2 flag "n"
    for bad in (b"y,,n=alice,r=abc", b"p=tls-unique,,n=alice,r=abc", b"n=alice,r=abc", b"\xff\xfe"):
        with pytest.raises(SaslFailed):
            ScramServer(mechanism, store()).evaluate(bad)


def test_scram_saslname_escapes():
    s = CredentialStore({"a,b=c": "pw"}, ["SCRAM-SHA-256"])
    server = ScramServer("SCRAM-SHA-256", s)
    client = ScramClient("SCRAM-SHA-256", "a=2Cb=3Dc", "pw")
    assert client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    assert server.authorization_id == "a,b=c"


def test_scram_credentials_are_salted_per_start():
    a, b = store(), store()
    ca, cb = (x.scram_credential("SCRAM-SHA-256", "alice") for x in (a, b))
    assert ca.salt != cb.salt and ca.stored_key != cb.stored_key and ca.iterations == 4096


# -- PLAIN ------------------------------------------------------------------------------------------


def test_plain_rfc4616():
    server = PlainServer(store())
    assert server.evaluate(b"\0alice\0alice-secret") == b"" and server.complete
    assert server.authorization_id == "alice"
    server = PlainServer(store())
    server.evaluate(b"bob\0bob\0bob:with:colons")  # authzid equal to the user
    assert server.authorization_id == "bob"


@pytest.mark.parametrize("token,error,message", [
    (b"\0alice\0wrong", SaslAuthenticationFailed, PLAIN_FAILED),
    (b"\0mallory\0alice-secret", SaslAuthenticationFailed, PLAIN_FAILED),
    (b"bob\0alice\0alice-secret", SaslAuthenticationFailed, "authorization id that is different"),
    (b"\0\0alice-secret", SaslFailed, "username not specified"),
    (b"\0alice\0", SaslFailed, "password not specified"),
    (b"alice", SaslFailed, "username not specified"),
])
def test_plain_failures(token, error, message):
    server = PlainServer(store())
    with pytest.raises(error, match=message):
        server.evaluate(token)
    assert not server.complete


def test_plain_ignores_a_fourth_token_as_kafka():
    assert PlainServer(store()).evaluate(b"\0alice\0alice-secret\0extra") == b""


# -- configuration ------------------------------------------------------------------------------------


def test_listener_protocols():
    def first(value: str) -> tuple[str, str, int]:
        lst = parse_listeners(value)[0]
        return lst.protocol, lst.host, lst.port

    assert first("SASL_PLAINTEXT://127.0.0.1:9093") == ("SASL_PLAINTEXT", "127.0.0.1", 9093)
    assert first("PLAINTEXT://[::1]:9092") == ("PLAINTEXT", "::1", 9092)
    assert first("h:1") == ("PLAINTEXT", "h", 1)
    with pytest.raises(ConfigError, match="listener SASL_SSL is TLS: set ssl.keystore.location"):
        BrokerConfig({"listeners": "SASL_SSL://h:1"})


def test_sasl_configuration():
    c = BrokerConfig({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "mock.sasl.users": "a:b,c:d:e"})
    assert c["sasl.enabled.mechanisms"] == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert c["sasl.server.max.receive.size"] == 524288
    assert parse_users(c["mock.sasl.users"]) == {"a": "b", "c": "d:e"}
    with pytest.raises(ConfigError, match="mock.sasl.users"):
        BrokerConfig({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"})
    with pytest.raises(ConfigError, match="GSSAPI"):
        BrokerConfig({"listeners": "SASL_PLAINTEXT://h:0", "mock.sasl.users": "a:b",
                      "sasl.enabled.mechanisms": "PLAIN,GSSAPI"})
    with pytest.raises(ConfigError, match="no SASL mechanisms"):
        BrokerConfig({"listeners": "SASL_PLAINTEXT://h:0", "mock.sasl.users": "a:b", "sasl.enabled.mechanisms": ""})
    with pytest.raises(ConfigError, match="user:password"):
        BrokerConfig({"mock.sasl.users": "nocolon"})
    with pytest.raises(ConfigError, match="twice"):
        BrokerConfig({"mock.sasl.users": "a:b,a:c"})
    with pytest.raises(ConfigError, match="subset of the ones defined in listeners"):
        BrokerConfig({"listeners": "SASL_PLAINTEXT://h:0", "mock.sasl.users": "a:b",
                      "advertised.listeners": "PLAINTEXT://x:1"})
    # a PLAINTEXT listener ignores the SASL keys, as Kafka does
    BrokerConfig({"sasl.enabled.mechanisms": "GSSAPI"})


# -- over a real socket -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sasl_broker():
    with MockBroker(config={"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "mock.sasl.users": USERS}) as b:
        b.create_topic("s", 1)
        yield b


@pytest.fixture
def sraw(sasl_broker):
    clients: list[RawKafkaClient] = []

    def connect(**kw):
        c = RawKafkaClient.connect(sasl_broker.bootstrap_servers, **kw)
        clients.append(c)
        return c

    yield connect
    for c in clients:
        c.close()


def principal_of(b, client):
    host, port = client.sock.getsockname()
    peer = f"{host}:{port}"
    return b.call(lambda br: [c.principal for s in br.brokers.values() for c in s.connections if c.peer == peer][0])


def handshake(c, mechanism, version=1):
    return c.request(17, version, {"mechanism": mechanism})


def authenticate(c, token, version=2):
    return c.request(36, version, {"auth_bytes": token})


def login_plain(c, user="alice", password="alice-secret", version=2):
    assert handshake(c, "PLAIN").error_code == 0
    r = authenticate(c, b"\0" + user.encode() + b"\0" + password.encode(), version)
    assert r.error_code == 0, r
    return r


def test_api_versions_then_plain_then_requests(sasl_broker, sraw):
    c = sraw()
    resp = c.request(18, 4, {"client_software_name": "t", "client_software_version": "1"})
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert ranges[ApiKey.SASL_HANDSHAKE] == (0, 1) and ranges[ApiKey.SASL_AUTHENTICATE] == (0, 2)
    assert principal_of(sasl_broker, c) == "ANONYMOUS"
    hs = handshake(c, "PLAIN")
    assert hs.error_code == 0 and list(hs.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    r = authenticate(c, b"\0alice\0alice-secret")
    assert (r.error_code, r.error_message, r.auth_bytes, timedelta_ms(r.session_lifetime)) == (0, "", b"", 0)
    assert principal_of(sasl_broker, c) == "alice"
    assert c.request(3, 12, META).brokers
    # after authentication the SASL APIs answer ILLEGAL_SASL_STATE (KafkaApis), the connection stays
    hs = handshake(c, "PLAIN")
    assert hs.error_code == E.illegal_sasl_state and list(hs.mechanisms) == []
    r = authenticate(c, b"\0alice\0alice-secret")
    assert r.error_code == E.illegal_sasl_state
    assert r.error_message == "SaslAuthenticate request received after successful authentication"
    assert c.request(3, 12, META).brokers


@pytest.mark.parametrize("version", [0, 1, 2])
def test_every_sasl_authenticate_version(sraw, version):
    login_plain(sraw(), version=version)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_over_the_wire(sasl_broker, sraw, mechanism):
    c = sraw()
    assert handshake(c, mechanism).error_code == 0
    client = ScramClient(mechanism, "bob", "bob:with:colons")
    first = authenticate(c, client.first())
    assert first.error_code == 0 and first.auth_bytes.startswith(b"r=" + client.nonce.encode())
    final = authenticate(c, client.final(first.auth_bytes))
    assert final.error_code == 0 and client.verify(final.auth_bytes)
    assert principal_of(sasl_broker, c) == "bob"
    assert c.request(3, 12, META).brokers


def closed_after(caplog, c, needle):
    assert c.is_closed_by_peer(), "broker did not close the connection"
    msgs = [r.getMessage() for r in caplog.records if "closing connection" in r.getMessage()]
    assert any(needle in m for m in msgs), msgs


def test_plain_wrong_password_answers_then_closes(sraw, caplog):
    caplog.set_level(logging.INFO)
    c = sraw()
    assert handshake(c, "PLAIN").error_code == 0
    r = authenticate(c, b"\0alice\0wrong")
    assert (r.error_code, r.error_message) == (E.sasl_authentication_failed, PLAIN_FAILED)
    closed_after(caplog, c, "failed authentication: " + PLAIN_FAILED)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_wrong_password_answers_then_closes(sraw, caplog, mechanism):
    caplog.set_level(logging.INFO)
    c = sraw()
    handshake(c, mechanism)
    client = ScramClient(mechanism, "alice", "alice-secret")
    first = authenticate(c, client.first())
    r = authenticate(c, client.final(first.auth_bytes, proof_password="wrong"))
    assert (r.error_code, r.error_message) == (E.sasl_authentication_failed, scram_failed(mechanism))
    closed_after(caplog, c, "failed authentication")
    # an unknown user is refused at the first token, with the same message
    c = sraw()
    handshake(c, mechanism)
    r = authenticate(c, ScramClient(mechanism, "mallory", "x").first())
    assert (r.error_code, r.error_message) == (E.sasl_authentication_failed, scram_failed(mechanism))
    assert c.is_closed_by_peer()


def test_unsupported_mechanism_answers_then_closes(sraw, caplog):
    caplog.set_level(logging.INFO)
    c = sraw()
    r = handshake(c, "GSSAPI")
    assert r.error_code == E.unsupported_sasl_mechanism
    assert list(r.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    closed_after(caplog, c, "Unsupported SASL mechanism GSSAPI")


@pytest.mark.parametrize("steps,needle", [
    ([], "Unexpected Kafka request of type METADATA during SASL handshake"),
    (["versions"], "Unexpected Kafka request of type METADATA during SASL handshake"),
    (["handshake"], "Unexpected Kafka request of type METADATA during SASL authentication"),
])
def test_request_before_authentication_closes(sraw, caplog, steps, needle):
    caplog.set_level(logging.INFO)
    c = sraw()
    if "versions" in steps:
        c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
    if "handshake" in steps:
        handshake(c, "PLAIN")
    c.send(3, 12, META)
    closed_after(caplog, c, needle)


def test_unsupported_api_versions_before_authentication_allows_a_retry(sraw):
    """KIP-511 before authentication: the v0 UNSUPPORTED_VERSION answer leaves the state as it was,
    so the client retries ApiVersions (Kafka's authenticator does the same)."""
    c = sraw()
    body = build_request(18, 3, {"client_software_name": "x", "client_software_version": "1"})
    frame = bytearray(encode_request(18, 3, 41, "c", body, any_spec(18)))
    struct.pack_into(">h", frame, 6, 9)  # claim ApiVersions v9
    c.send_raw(bytes(frame))
    corr, err = struct.unpack_from(">ih", c.recv_frame(), 0)
    assert (corr, err) == (41, E.unsupported_version)
    assert c.request(18, 3, {"client_software_name": "x", "client_software_version": "1"}).error_code == 0
    login_plain(c)
    assert c.request(3, 12, META).brokers


def test_out_of_order_sasl_requests_close(sraw, caplog):
    caplog.set_level(logging.INFO)
    c = sraw()  # SaslAuthenticate before the handshake
    c.send(36, 2, {"auth_bytes": b"\0alice\0alice-secret"})
    closed_after(caplog, c, "SASL_AUTHENTICATE during SASL handshake")
    c = sraw()  # a second ApiVersions: Kafka's authenticator allows one
    c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
    c.send(18, 3, {"client_software_name": "t", "client_software_version": "1"})
    closed_after(caplog, c, "Unexpected ApiVersions request received during SASL authentication state")
    c = sraw()  # a second handshake during authentication
    handshake(c, "PLAIN")
    c.send(17, 1, {"mechanism": "PLAIN"})
    closed_after(caplog, c, "SASL_HANDSHAKE during SASL authentication")


def produce_frame(corr, value_len, version=9):
    body = build_request(0, version, {"acks": 1, "timeout": 1000, "topic_data": [{"name": "s", "partition_data": [
        {"index": 0, "records": build_batch([(b"k", b"x" * value_len, [])], base_timestamp=1)}]}]})
    return encode_request(0, version, corr, "big", body, any_spec(0))


def test_frames_before_authentication_are_limited(sraw, caplog):
    caplog.set_level(logging.INFO)
    c = sraw()
    c.send_raw(struct.pack(">i", 524289) + b"\0" * 16)
    closed_after(caplog, c, "Failing SASL authentication due to invalid receive size: "
                            "Invalid receive (size = 524289 larger than 524288)")
    # once authenticated, socket.request.max.bytes applies again
    c = sraw()
    login_plain(c)
    c.send_raw(produce_frame(100, 600_000))
    r = c.response(0, 9, 100)
    assert r.responses[0].partition_responses[0].error_code == 0


def raw_token(c, token: bytes) -> bytes:
    c.send_raw(struct.pack(">i", len(token)) + token)
    return c.recv_frame()


def test_handshake_v0_plain_raw_tokens(sasl_broker, sraw):
    c = sraw()
    hs = handshake(c, "PLAIN", version=0)
    assert hs.error_code == 0
    assert raw_token(c, b"\0alice\0alice-secret") == b""  # an empty token, size-framed
    assert principal_of(sasl_broker, c) == "alice"
    assert c.request(3, 12, META).brokers


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_handshake_v0_scram_raw_tokens(sasl_broker, sraw, mechanism):
    c = sraw()
    c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
    assert handshake(c, mechanism, version=0).error_code == 0
    client = ScramClient(mechanism, "alice", "alice-secret")
    first = raw_token(c, client.first())
    assert client.verify(raw_token(c, client.final(first)))
    assert principal_of(sasl_broker, c) == "alice"
    assert c.request(3, 12, META).brokers


def test_handshake_v0_wrong_password_closes_without_answer(sraw, caplog):
    caplog.set_level(logging.INFO)
    c = sraw()
    handshake(c, "PLAIN", version=0)
    c.send_raw(struct.pack(">i", 12) + b"\0alice\0wrong")
    closed_after(caplog, c, PLAIN_FAILED)


def test_sasl_apis_on_a_plaintext_listener(raw):
    c = raw()
    hs = c.request(17, 1, {"mechanism": "PLAIN"})
    assert hs.error_code == E.illegal_sasl_state and list(hs.mechanisms) == []
    assert c.request(36, 2, {"auth_bytes": b""}).error_code == E.illegal_sasl_state
    assert c.request(3, 12, META).brokers


def test_user_quota_applies_to_the_authenticated_principal():
    clock = ManualClock()
    cfg = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "mock.sasl.users": USERS,
           "mock.quotas": "users/alice:producer_byte_rate=10000"}
    with MockBroker(config=cfg, clock=clock) as b:
        b.create_topic("s", 1)
        throttles = {}
        for user, password in (("alice", "alice-secret"), ("bob", "bob:with:colons")):
            with RawKafkaClient.connect(b.bootstrap_servers, client_id="same-client") as c:
                login_plain(c, user, password)
                c.send_raw(produce_frame(50, 200_000))
                throttles[user] = timedelta_ms(c.response(0, 9, 50).throttle_time)
                assert not answered(c, 0.05)
        assert throttles["alice"] > 0 and throttles["bob"] == 0
        events = b.throttle_events()
        assert [e["user"] for e in events] == ["alice"]
        # the authentication requests themselves are not charged
        assert {e["api_key"] for e in events} == {0}


def test_failed_authentication_is_answered_after_the_delay():
    """connection.failed.authentication.delay.ms (100): the failure response and the close wait,
    and nothing else is read meanwhile."""
    clock = ManualClock()
    cfg = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "mock.sasl.users": USERS}
    with MockBroker(config=cfg, clock=clock) as b:
        with RawKafkaClient.connect(b.bootstrap_servers) as c:
            handshake(c, "PLAIN")
            corr = c.send(36, 2, {"auth_bytes": b"\0alice\0wrong"})
            assert not answered(c)
            b.advance(99)
            assert not answered(c)
            b.advance(1)
            r = c.response(36, 2, corr)
            assert (r.error_code, r.error_message) == (E.sasl_authentication_failed, PLAIN_FAILED)
            assert c.is_closed_by_peer()
        with RawKafkaClient.connect(b.bootstrap_servers) as c:  # an unsupported mechanism: the same
            corr = c.send(17, 1, {"mechanism": "OAUTHBEARER"})
            assert not answered(c)
            b.advance(100)
            assert c.response(17, 1, corr).error_code == E.unsupported_sasl_mechanism
            assert c.is_closed_by_peer()
        with RawKafkaClient.connect(b.bootstrap_servers) as c:  # an oversized frame: closed after the delay
            c.send_raw(struct.pack(">i", 524289))
            assert not c.is_closed_by_peer(0.2)
            b.advance(100)
            assert c.is_closed_by_peer()
    cfg["connection.failed.authentication.delay.ms"] = 0
    with MockBroker(config=cfg, clock=ManualClock()) as b, RawKafkaClient.connect(b.bootstrap_servers) as c:
        handshake(c, "PLAIN")
        assert authenticate(c, b"\0alice\0wrong").error_code == E.sasl_authentication_failed
        assert c.is_closed_by_peer()


def test_failed_authentication_delay_must_be_below_idle():
    with pytest.raises(ConfigError, match="connections.max.idle.ms"):
        BrokerConfig({"connection.failed.authentication.delay.ms": 1000, "connections.max.idle.ms": 1000})


def test_config_offers_exactly_the_served_mechanisms():
    """config.py validates sasl.enabled.mechanisms without importing the SASL code: its list must
    be the one sasl_mechanisms serves."""
    assert tuple(SASL_MECHANISMS) == tuple(MECHANISMS)
