"""SCRAM credential admin over the wire (DescribeUserScramCredentials, AlterUserScramCredentials):
ScramControlManager's validation and error codes, ScramImage.describe, and a credential set or
deleted through the API taking effect on the next SCRAM login."""

from __future__ import annotations

import hashlib

import pytest

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode

from .test_sasl import META, ScramClient, authenticate, handshake, scram_failed

E = ErrorCode
SHA256, SHA512 = 1, 2
HASH = {SHA256: "sha256", SHA512: "sha512"}


def upsertion(name, password="pw", mechanism=SHA256, iterations=4096, salt=b"salt-1"):
    """What an admin client sends: Hi(password, salt, i), never the password."""
    h = HASH.get(mechanism, "sha256")
    salted = hashlib.pbkdf2_hmac(h, password.encode(), salt, iterations) if 4096 <= iterations <= 16384 else b"x"
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt, "salted_password": salted}


def alter(c, deletions=(), upsertions=()):
    r = c.request(51, 0, {"deletions": list(deletions), "upsertions": list(upsertions)})
    return {x.user: (x.error_code, x.error_message) for x in r.results}


def describe(c, users=None):
    r = c.request(50, 0, {"users": None if users is None else [{"name": u} for u in users]})
    assert (r.error_code, r.error_message) == (0, "")  # Kafka 4.4.0: the message's default, not null
    return {x.user: (x.error_code, x.error_message, [(i.mechanism, i.iterations) for i in x.credential_infos])
            for x in r.results}


@pytest.fixture(scope="module")
def b():
    """A SASL_PLAINTEXT listener for logins, a PLAINTEXT one for the admin requests."""
    with MockBroker(config={"listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAIN://127.0.0.1:0",
                            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,PLAIN:PLAINTEXT",
                            "inter.broker.listener.name": "SASL_PLAINTEXT",
                            "mock.sasl.users": ["alice:alice-secret"]}) as b:
        yield b


@pytest.fixture
def admin(b):
    port = b.call(lambda cl: next(iter(cl.brokers.values())).ports["PLAIN"])
    c = RawKafkaClient.connect(f"127.0.0.1:{port}")
    yield c
    c.close()


def scram_login(b, user, password, mechanism="SCRAM-SHA-256"):
    """A fresh SASL connection: the error code of the last SaslAuthenticate (0: logged in)."""
    c = RawKafkaClient.connect(b.bootstrap_servers)
    try:
        assert handshake(c, mechanism).error_code == 0
        client = ScramClient(mechanism, user, password)
        first = authenticate(c, client.first())
        if first.error_code:
            assert first.error_message == scram_failed(mechanism)
            return first.error_code
        final = authenticate(c, client.final(first.auth_bytes))
        if final.error_code == 0:
            assert client.verify(final.auth_bytes) and c.request(3, 12, META).brokers
        return final.error_code
    finally:
        c.close()


def test_configured_users_are_described(admin):
    assert describe(admin, ["alice"]) == {"alice": (0, "", [(SHA256, 4096), (SHA512, 4096)])}


def test_upserted_credential_logs_in_at_once_and_a_deleted_one_stops(b, admin):
    assert scram_login(b, "carol", "carol-pw") == E.sasl_authentication_failed
    assert alter(admin, upsertions=[upsertion("carol", "carol-pw", iterations=8192, salt=b"NaCl")]) == {"carol": (0, None)}
    assert describe(admin, ["carol"]) == {"carol": (0, "", [(SHA256, 8192)])}
    assert scram_login(b, "carol", "carol-pw") == 0
    assert scram_login(b, "carol", "wrong") == E.sasl_authentication_failed
    assert scram_login(b, "carol", "carol-pw", "SCRAM-SHA-512") == E.sasl_authentication_failed
    # a new password replaces the old one
    assert alter(admin, upsertions=[upsertion("carol", "new-pw")]) == {"carol": (0, None)}
    assert scram_login(b, "carol", "carol-pw") == E.sasl_authentication_failed
    assert scram_login(b, "carol", "new-pw") == 0
    assert alter(admin, deletions=[{"name": "carol", "mechanism": SHA256}]) == {"carol": (0, None)}
    assert scram_login(b, "carol", "new-pw") == E.sasl_authentication_failed
    assert describe(admin, ["carol"]) == {
        "carol": (E.resource_not_found, "Attempt to describe a user credential that does not exist: carol", [])}


def test_alter_validation_as_scram_control_manager(admin):
    twice = (E.duplicate_resource, "A user credential cannot be altered twice in the same request")
    got = alter(admin, deletions=[
        {"name": "nobody", "mechanism": SHA256},
        {"name": "alice", "mechanism": SHA512}, {"name": "alice", "mechanism": SHA256},
        {"name": "", "mechanism": SHA256},
        {"name": "m0", "mechanism": 0},
    ], upsertions=[
        upsertion("low", iterations=4095), upsertion("high", iterations=16385),
        upsertion("edge-lo", iterations=4096), upsertion("edge-hi", iterations=16384, mechanism=SHA512),
        upsertion("mech", mechanism=3), upsertion(""),
        upsertion("dup"), upsertion("dup", mechanism=SHA512),
        {**upsertion("empty"), "salted_password": b""},
    ])
    assert got == {
        "nobody": (E.resource_not_found, "Attempt to delete a user credential that does not exist"),
        "alice": twice, "dup": twice,
        "": (E.unacceptable_credential, "Username must not be empty"),
        "m0": (E.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
        "mech": (E.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
        "low": (E.unacceptable_credential, "Too few iterations"),
        "high": (E.unacceptable_credential, "Too many iterations"),
        "edge-lo": (0, None), "edge-hi": (0, None),
        "empty": (E.unknown_server_error, None),
    }
    # the duplicated user kept both credentials; the failed ones changed nothing
    assert describe(admin, ["alice", "dup", "low", "edge-hi"]) == {
        "alice": (0, "", [(SHA256, 4096), (SHA512, 4096)]),
        "dup": (E.resource_not_found, "Attempt to describe a user credential that does not exist: dup", []),
        "low": (E.resource_not_found, "Attempt to describe a user credential that does not exist: low", []),
        "edge-hi": (0, "", [(SHA512, 16384)]),
    }
    # a deletion and an upsertion of one user, whatever the mechanisms: DUPLICATE_RESOURCE
    assert alter(admin, deletions=[{"name": "edge-hi", "mechanism": SHA512}],
                 upsertions=[upsertion("edge-hi")]) == {"edge-hi": twice}
    assert alter(admin, deletions=[{"name": "edge-lo", "mechanism": SHA256}, {"name": "edge-hi", "mechanism": SHA512}]) \
        == {"edge-lo": (0, None), "edge-hi": (0, None)}


def test_describe_all_and_duplicates(admin):
    assert alter(admin, upsertions=[upsertion("dora", mechanism=SHA512)]) == {"dora": (0, None)}
    everyone = describe(admin)
    assert everyone == describe(admin, [])  # null and empty: every user
    assert everyone["alice"] == (0, "", [(SHA256, 4096), (SHA512, 4096)])
    assert everyone["dora"] == (0, "", [(SHA512, 4096)])
    r = admin.request(50, 0, {"users": [{"name": "dora"}, {"name": "dora"}, {"name": "alice"}]})
    assert [(x.user, x.error_code, x.error_message) for x in r.results] == [
        ("dora", E.duplicate_resource, "Cannot describe SCRAM credentials for the same user twice in a single request: dora"),
        ("alice", 0, "")]
    assert alter(admin, deletions=[{"name": "dora", "mechanism": SHA512}]) == {"dora": (0, None)}


def test_injected_errors_answer_as_get_error_response(b, admin):
    b.inject(api=51, errors=["NOT_CONTROLLER"])
    r = admin.request(51, 0, {"deletions": [{"name": "z", "mechanism": 1}], "upsertions": [upsertion("a")]})
    assert [(x.user, x.error_code) for x in r.results] == [("a", E.not_controller), ("z", E.not_controller)]
    assert describe(admin, ["a"])["a"][0] == E.resource_not_found  # nothing took effect
