"""Real clients on a SASL_PLAINTEXT listener: kafka-python 3.0.x and confluent-kafka (librdkafka)
authenticate with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, produce and consume; a wrong password
is refused; a user quota throttles only the authenticated user it names.

Also SaslHandshake v0 (raw tokens framed by their size only): a broker that advertises
SaslHandshake 0-0 and no SaslAuthenticate, as brokers before 1.0 did, makes both clients use it.
"""

from __future__ import annotations

import logging
import time

import pytest

from mockbroker import MockBroker
from protocol.registry import build_spec

kafka = pytest.importorskip("kafka")
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.errors import KafkaTimeoutError  # noqa: E402

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
USERS = {"alice": "alice-pw", "bob": "b:o:b"}
N = 5


def sasl_config(**extra):
    return {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "mock.sasl.users": [f"{u}:{p}" for u, p in USERS.items()],
            **extra}


@pytest.fixture(scope="module")
def sasl_broker():
    with MockBroker(config=sasl_config()) as b:
        yield b


def kp_config(b, mechanism, user, password=None, **extra):
    return dict(bootstrap_servers=b.bootstrap_servers, security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                sasl_plain_username=user, sasl_plain_password=USERS[user] if password is None else password, **extra)


def ck_config(b, mechanism, user, password=None, **extra):
    return {"bootstrap.servers": b.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": USERS[user] if password is None else password, **extra}


def kp_produce(b, topic, mechanism, user, values, **extra):
    p = KafkaProducer(**kp_config(b, mechanism, user, acks=1, **extra))
    offsets = [f.get(timeout=30).offset for f in [p.send(topic, v) for v in values]]
    p.close()
    return offsets


def kp_consume(b, topic, mechanism, user, n):
    c = KafkaConsumer(**kp_config(b, mechanism, user, auto_offset_reset="earliest", enable_auto_commit=False))
    c.assign([TopicPartition(topic, 0)])
    got: list[bytes] = []
    end = time.monotonic() + 30
    while len(got) < n and time.monotonic() < end:
        for msgs in c.poll(timeout_ms=500).values():
            got += [m.value for m in msgs]
    c.close()
    return got


def ck_produce(b, topic, mechanism, user, values, **extra):
    from confluent_kafka import Producer

    errors: list = []
    p = Producer(ck_config(b, mechanism, user, acks=1, **extra))
    for v in values:
        p.produce(topic, v, on_delivery=lambda err, msg: errors.append(err) if err else None)
        p.poll(0)
    assert p.flush(60) == 0
    assert errors == []


def ck_consume(b, topic, mechanism, user, n):
    from confluent_kafka import Consumer, TopicPartition as CkTopicPartition

    c = Consumer(ck_config(b, mechanism, user, **{"group.id": f"g-{topic}", "enable.auto.commit": False}))
    c.assign([CkTopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    end = time.monotonic() + 30
    while len(got) < n and time.monotonic() < end:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    return got


# -- kafka-python ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_produce_and_consume(sasl_broker, mechanism):
    topic = f"kp-{mechanism.lower()}"
    sasl_broker.create_topic(topic, 1)
    values = [b"kp-%d" % i for i in range(N)]
    assert kp_produce(sasl_broker, topic, mechanism, "alice", values) == list(range(N))
    assert kp_consume(sasl_broker, topic, mechanism, "bob", N) == values


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kafka_python_wrong_password_is_refused(sasl_broker, caplog, mechanism):
    """The broker answers SASL_AUTHENTICATION_FAILED after connection.failed.authentication.delay.ms
    and closes, as Kafka does.  kafka-python 3.0.12 never surfaces that error: its transport drops
    the bytes read together with the close ("socket disconnected"), and bootstrap retries any
    connection failure until ``bootstrap_timeout_ms``; the user gets KafkaTimeoutError."""
    caplog.set_level(logging.INFO, logger="mockbroker")
    t0 = time.monotonic()
    client_id = f"wrong-password-{mechanism}"
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(**kp_config(sasl_broker, mechanism, "alice", "wrong", bootstrap_timeout_ms=2000,
                                  client_id=client_id))
    assert time.monotonic() - t0 < 10
    want = ("Authentication failed: Invalid username or password" if mechanism == "PLAIN" else
            f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}")
    # this test's connections only: the previous test's last delayed close may be logged meanwhile
    failed = [r.getMessage() for r in caplog.records
              if "failed authentication" in r.getMessage() and f"client_id={client_id!r}" in r.getMessage()]
    assert failed and all(want in m for m in failed), failed


# -- confluent-kafka (librdkafka) -----------------------------------------------------------------


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_produce_and_consume(sasl_broker, mechanism):
    pytest.importorskip("confluent_kafka")
    topic = f"ck-{mechanism.lower()}"
    sasl_broker.create_topic(topic, 1)
    values = [b"ck-%d" % i for i in range(N)]
    ck_produce(sasl_broker, topic, mechanism, "bob", values)
    assert ck_consume(sasl_broker, topic, mechanism, "alice", N) == values


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_wrong_password_reports_authentication_error(sasl_broker, mechanism):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    errors: list = []
    p = confluent_kafka.Producer(ck_config(sasl_broker, mechanism, "alice", "wrong",
                                           error_cb=lambda e: errors.append(e)))
    p.produce("ck-refused", b"x")
    end = time.monotonic() + 10
    while not errors and time.monotonic() < end:
        p.poll(0.2)
    p.purge()
    auth = [e for e in errors if e.code() == confluent_kafka.KafkaError._AUTHENTICATION]
    assert auth, [e.str() for e in errors]
    want = ("Authentication failed: Invalid username or password" if mechanism == "PLAIN" else
            f"invalid credentials with SASL mechanism {mechanism}")
    assert want in auth[0].str()


def test_unknown_mechanism_is_refused():
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with MockBroker(config=sasl_config(**{"sasl.enabled.mechanisms": "SCRAM-SHA-512"})) as b:
        errors: list = []
        p = confluent_kafka.Producer(ck_config(b, "PLAIN", "alice", error_cb=lambda e: errors.append(e)))
        p.produce("t", b"x")
        end = time.monotonic() + 10
        while not errors and time.monotonic() < end:
            p.poll(0.2)
        p.purge()
        assert any(e.code() == confluent_kafka.KafkaError._AUTHENTICATION and "SCRAM-SHA-512" in e.str()
                   for e in errors), [e.str() for e in errors]


# -- SaslHandshake v0: raw tokens ---------------------------------------------------------------------


@pytest.fixture
def v0_broker():
    """A broker advertising SaslHandshake 0-0 and no SaslAuthenticate (Kafka < 1.0's ranges)."""
    with MockBroker(config=sasl_config()) as b:
        def only_v0(br):
            br.registry.specs[17] = build_spec(17, 0, 0)
            del br.registry.specs[36]
        b.call(only_v0)
        yield b


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_handshake_v0_raw_tokens_with_both_clients(v0_broker, mechanism):
    topic = f"v0-{mechanism.lower()}"
    v0_broker.create_topic(topic, 1)
    values = [b"v0-%d" % i for i in range(N)]
    pytest.importorskip("confluent_kafka")
    kp_produce(v0_broker, topic, mechanism, "alice", values)
    assert ck_consume(v0_broker, topic, mechanism, "bob", N) == values
    ck_produce(v0_broker, topic, mechanism, "bob", values)
    assert kp_consume(v0_broker, topic, mechanism, "alice", 2 * N) == values + values
    sasl = [(e["api_key"], e["api_version"]) for e in v0_broker.journal() if e["api_key"] in (17, 36)]
    assert sasl and set(sasl) == {(17, 0)}  # the tokens themselves are no Kafka requests


# -- quotas per authenticated user --------------------------------------------------------------------


QUOTA_BPS = 20_000
PAYLOAD = b"q" * 1000
N_QUOTA = 60  # 60 KB: ~3x the burst allowance of two 1 s windows


def test_user_quota_throttles_only_that_user():
    pytest.importorskip("confluent_kafka")
    cfg = sasl_config(**{"quota.window.num": 2, "mock.quotas": f"users/alice:producer_byte_rate={QUOTA_BPS}"})
    with MockBroker(config=cfg) as b:
        b.create_topic("uq", 1)
        values = [PAYLOAD] * N_QUOTA
        # same client id for both users: only the principal tells them apart
        kp_produce(b, "uq", "SCRAM-SHA-256", "alice", values, client_id="shared", linger_ms=5, batch_size=4096,
                   max_in_flight_requests_per_connection=1)
        kp_produce(b, "uq", "SCRAM-SHA-512", "bob", values, client_id="shared", linger_ms=5, batch_size=4096,
                   max_in_flight_requests_per_connection=1)
        ck = {"client.id": "shared", "linger.ms": 5, "batch.size": 4096}
        ck_produce(b, "uq", "PLAIN", "bob", values, **ck)
        ck_produce(b, "uq", "PLAIN", "alice", values, **ck)
        events = [e for e in b.throttle_events("shared") if e["api_key"] == 0]
        assert events, "alice was never throttled"
        assert {e["user"] for e in events} == {"alice"}
        assert all(e["throttle_ms"] > 0 for e in events)
        assert b.log_end_offset("uq", 0) == 4 * N_QUOTA
