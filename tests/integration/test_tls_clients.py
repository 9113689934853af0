"""Real clients over TLS listeners (mockbroker/network/tls.py): kafka-python, confluent-kafka (librdkafka),
aiokafka, kafkajs, franz-go and Kafka's Java clients 4.4 over SSL with client certificates (mTLS), and
over SASL_SSL with PLAIN and SCRAM (kafka-python, confluent-kafka) or SCRAM (Java, aiokafka, kafkajs,
franz-go); kafka-python also without a certificate.  Checked: the principal each connection gets
(ssl.principal.mapping.rules, the full subject, ANONYMOUS, the SASL user); handshake failures (a
plaintext client on a TLS port and the reverse, TLS garbage, an expired or untrusted certificate, none
where one is required) closing only that connection with one log line; the memory pool, muting and a
user quota's throttle working over TLS as over PLAINTEXT.

One broker for the module, with five listeners: PLAINTEXT, SSL (ssl.client.auth=required, a rule
mapping ``CN=client,OU=...`` to ``client``), OPTIONAL (SSL, ssl.client.auth=requested, DEFAULT rules),
SASL_SSL, and STRICT (SSL with a rule no test certificate matches); certificates from ``mockbroker.security.certs`` (the ``mockbroker certs`` command).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import socket
import ssl
import struct
import subprocess
import time

import pytest

from mockbroker import MockBroker
from mockbroker.security.certs import make_certs

from .gotools import franz_go_binary
from .javatools import JAVA_TIMEOUT_S, java_classpath
from .jstools import JS_DIR, node_with_kafkajs

kafka = pytest.importorskip("kafka")
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402

DN = "CN=client,OU=mockbroker,O=mockbroker test"
USERS = {"alice": "alice-pw"}
N = 5
SOCKET_MAX = 1_000_000
POOL = 1_500_000  # room for one request of SOCKET_MAX, not two


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    made = make_certs(str(d / "ca"), clients=("client",), expired=("expired",))
    other = make_certs(str(d / "other-ca"), clients=("stranger",))  # a CA the broker does not trust
    return made, other


@pytest.fixture(scope="module")
def broker(certs):
    made, _ = certs
    cfg = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,OPTIONAL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,"
                     "STRICT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,OPTIONAL:SSL,SASL_SSL:SASL_SSL,STRICT:SSL",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": made.broker.keystore_pem,
        "ssl.truststore.type": "PEM", "ssl.truststore.location": made.ca,
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=.*$/$1/L,DEFAULT",
        "listener.name.optional.ssl.client.auth": "requested",
        "listener.name.strict.ssl.client.auth": "required",
        "listener.name.strict.ssl.principal.mapping.rules": "RULE:^CN=admin,.*$/admin/",  # no DEFAULT
        "mock.sasl.users": [f"{u}:{p}" for u, p in USERS.items()],
        "quota.window.num": 2, "num.partitions": 1,
        "socket.request.max.bytes": SOCKET_MAX, "queued.max.request.bytes": POOL,
    }
    with MockBroker(config=cfg) as b:
        yield b


def wait_for(predicate, what, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = predicate()
        if got:
            return got
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def kp_tls(b, certs, listener="SSL", cert="client", **extra):
    made, _ = certs
    kw = dict(bootstrap_servers=b.bootstrap_servers_for(listener), security_protocol="SSL", ssl_cafile=made.ca, **extra)
    if cert:
        kw.update(ssl_certfile=made.clients[cert].cert, ssl_keyfile=made.clients[cert].key)
    return kw


def kp_round_trip(b, topic, kw, client_id):
    """Produce N values, see the producer's connection principal, consume them back."""
    b.create_topic(topic, 1)
    p = KafkaProducer(acks="all", client_id=client_id, **kw)
    values = [b"%s-%d" % (topic.encode(), i) for i in range(N)]
    assert [p.send(topic, v).get(timeout=30).offset for v in values] == list(range(N))
    principals = {c["principal"] for c in b.connections(client_id=client_id)}
    p.close()
    c = KafkaConsumer(auto_offset_reset="earliest", enable_auto_commit=False, **kw)
    c.assign([TopicPartition(topic, 0)])
    got: list[bytes] = []
    end = time.monotonic() + 30
    while len(got) < N and time.monotonic() < end:
        for msgs in c.poll(timeout_ms=500).values():
            got += [m.value for m in msgs]
    c.close()
    assert got == values
    return principals


# -- kafka-python --------------------------------------------------------------------------------------


def test_kafka_python_mtls_principal_from_the_mapping_rule(broker, certs):
    assert kp_round_trip(broker, "kp-mtls", kp_tls(broker, certs), "kp-mtls") == {"client"}


def test_kafka_python_requested_client_auth_principals(broker, certs):
    # DEFAULT rules: the certificate's subject as Kafka formats it; no certificate: ANONYMOUS
    assert kp_round_trip(broker, "kp-opt", kp_tls(broker, certs, "OPTIONAL"), "kp-opt-cert") == {DN}
    assert kp_round_trip(broker, "kp-anon", kp_tls(broker, certs, "OPTIONAL", cert=None), "kp-anon") == {"ANONYMOUS"}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kafka_python_sasl_ssl(broker, certs, mechanism):
    kw = kp_tls(broker, certs, "SASL_SSL", cert=None, sasl_mechanism=mechanism, sasl_plain_username="alice",
                sasl_plain_password=USERS["alice"])
    kw["security_protocol"] = "SASL_SSL"
    assert kp_round_trip(broker, f"kp-sasl-{mechanism.lower()}", kw, f"kp-sasl-{mechanism}") == {"alice"}


# -- confluent-kafka (librdkafka) --------------------------------------------------------------------


def ck_round_trip(b, topic, conf, client_id):
    confluent = pytest.importorskip("confluent_kafka")
    b.create_topic(topic, 1)
    errors: list = []
    p = confluent.Producer({**conf, "client.id": client_id, "acks": "all"})
    for i in range(N):
        p.produce(topic, b"%d" % i, partition=0, on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert p.flush(30) == 0 and errors == []
    principals = {c["principal"] for c in b.connections(client_id=client_id)}
    c = confluent.Consumer({**conf, "group.id": f"g-{topic}", "enable.auto.commit": False})
    c.assign([confluent.TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    end = time.monotonic() + 30
    while len(got) < N and time.monotonic() < end:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    assert got == [b"%d" % i for i in range(N)]
    return principals


def test_confluent_mtls(broker, certs):
    made, _ = certs
    conf = {"bootstrap.servers": broker.bootstrap_servers_for("SSL"), "security.protocol": "SSL",
            "ssl.ca.location": made.ca, "ssl.certificate.location": made.clients["client"].cert,
            "ssl.key.location": made.clients["client"].key}
    assert ck_round_trip(broker, "ck-mtls", conf, "ck-mtls") == {"client"}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_confluent_sasl_ssl(broker, certs, mechanism):
    made, _ = certs
    conf = {"bootstrap.servers": broker.bootstrap_servers_for("SASL_SSL"), "security.protocol": "SASL_SSL",
            "ssl.ca.location": made.ca, "sasl.mechanism": mechanism, "sasl.username": "alice",
            "sasl.password": USERS["alice"]}
    assert ck_round_trip(broker, f"ck-sasl-{mechanism.lower()}", conf, f"ck-sasl-{mechanism}") == {"alice"}


# -- aiokafka ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["mtls", "sasl-ssl-scram"])
def test_aiokafka(broker, certs, case):
    aiokafka = pytest.importorskip("aiokafka")
    from aiokafka.helpers import create_ssl_context

    made, _ = certs
    client = made.clients["client"]
    if case == "mtls":
        kw = dict(bootstrap_servers=broker.bootstrap_servers_for("SSL"), security_protocol="SSL",
                  ssl_context=create_ssl_context(cafile=made.ca, certfile=client.cert, keyfile=client.key))
        want = "client"
    else:
        kw = dict(bootstrap_servers=broker.bootstrap_servers_for("SASL_SSL"), security_protocol="SASL_SSL",
                  ssl_context=create_ssl_context(cafile=made.ca), sasl_mechanism="SCRAM-SHA-256",
                  sasl_plain_username="alice", sasl_plain_password=USERS["alice"])
        want = "alice"
    topic = f"aio-{case}"
    broker.create_topic(topic, 1)

    async def run():
        p = aiokafka.AIOKafkaProducer(client_id=topic, acks="all", **kw)
        await p.start()
        try:
            for i in range(N):
                await p.send_and_wait(topic, b"%d" % i, partition=0)
            principals = {c["principal"] for c in broker.connections(client_id=topic)}
        finally:
            await p.stop()
        c = aiokafka.AIOKafkaConsumer(auto_offset_reset="earliest", enable_auto_commit=False, **kw)
        await c.start()
        try:
            c.assign([aiokafka.TopicPartition(topic, 0)])
            got: list[bytes] = []
            end = time.monotonic() + 30
            while len(got) < N and time.monotonic() < end:
                for msgs in (await c.getmany(timeout_ms=500)).values():
                    got += [m.value for m in msgs]
        finally:
            await c.stop()
        return principals, got

    principals, got = asyncio.run(run())
    assert principals == {want} and got == [b"%d" % i for i in range(N)]


# -- kafkajs --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["mtls", "sasl-ssl-scram"])
def test_kafkajs(broker, certs, case):
    node = node_with_kafkajs()
    made, _ = certs
    client = made.clients["client"]
    if case == "mtls":
        listener, spec, want = "SSL", {"ca": made.ca, "cert": client.cert, "key": client.key}, "client"
    else:
        listener, want = "SASL_SSL", "alice"
        spec = {"ca": made.ca, "sasl": {"mechanism": "scram-sha-512", "username": "alice",
                                        "password": USERS["alice"]}}
    topic = f"kjs-{case}"
    broker.create_topic(topic, 1)
    r = subprocess.run([node, str(JS_DIR / "tls.js"), broker.bootstrap_servers_for(listener), topic, topic, str(N),
                        json.dumps(spec)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr[-2000:])
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"offsets": list(range(N))}
    assert {e["principal"] for e in broker.journal(api_key="Produce", client_id=topic)} == {want}


# -- franz-go -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["mtls", "sasl-ssl-scram"])
def test_franz_go(broker, certs, case):
    binary = franz_go_binary()
    made, _ = certs
    client = made.clients["client"]
    if case == "mtls":
        listener, extra, want = "SSL", [client.cert, client.key], "client"
    else:
        listener, extra, want = "SASL_SSL", ["scram", "alice", USERS["alice"]], "alice"
    topic = f"kgo-{case}"
    broker.create_topic(topic, 1)
    r = subprocess.run([binary, "tls", broker.bootstrap_servers_for(listener), topic, topic, str(N), made.ca, *extra],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip().endswith("OFFSETS " + " ".join(map(str, range(N)))), \
        (r.stdout, r.stderr[-2000:])
    assert {e["principal"] for e in broker.journal(api_key="Produce", client_id=topic)} == {want}


# -- Kafka's Java clients 4.4 (one JVM for every case) ---------------------------------------------


def test_java_clients_over_tls(broker, certs, tmp_path):
    made, other = certs
    cp = java_classpath("TlsClients")
    client = made.clients["client"]
    # a PEM truststore (ssl.truststore.type=PEM) and keystore, as Kafka's clients read them since 2.7;
    # PLAIN and the PKCS12 keystores are covered by the Python clients and tests/unit/security/test_tls.py
    pem_trust = {"ssl.truststore.type": "PEM", "ssl.truststore.location": made.ca}
    cases = {
        "mtls-pem": {"security.protocol": "SSL", "ssl.keystore.type": "PEM",
                     "ssl.keystore.location": client.keystore_pem, **pem_trust, "_listener": "SSL"},
        "sasl-ssl-scram": {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", **pem_trust,
                           "x.consume": "false",  # produce only: the consumer over TLS is mtls-pem's
                           "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                               'username="alice" password="alice-pw";', "_listener": "SASL_SSL"},
        "untrusted": {"security.protocol": "SSL", "ssl.keystore.type": "PEM",
                      "ssl.keystore.location": other.clients["stranger"].keystore_pem, **pem_trust,
                      "_listener": "SSL"},
    }
    files = []
    for name, props in cases.items():
        listener = props.pop("_listener")
        props["bootstrap.servers"] = broker.bootstrap_servers_for(listener)
        props["client.id"] = f"java-{name}"
        path = tmp_path / f"{name}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()).replace("\\", "\\\\"))
        files.append(str(path))
    r = subprocess.run([shutil.which("java") or "java", "-Xmx256m", "-cp", cp, "TlsClients", "java", str(N), *files],
                       capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = {line.split()[1]: line for line in r.stdout.splitlines() if line.startswith(("OK ", "FAIL "))}
    for name in ("mtls-pem", "sasl-ssl-scram"):
        assert lines.get(name, "").startswith(f"OK {name} {N}"), (lines, r.stderr[-2000:])
    for name, principal in (("mtls-pem", "client"), ("sasl-ssl-scram", "alice")):
        assert {e["principal"] for e in broker.journal(api_key="Produce", client_id=f"java-{name}")} == {principal}
    # an untrusted certificate: the handshake fails and Java says so (not a timeout)
    assert lines["untrusted"].startswith("FAIL untrusted SslAuthenticationException"), lines


# -- handshake failures -------------------------------------------------------------------------------


def tls_log(caplog, port):
    return [r.getMessage() for r in caplog.records
            if r.name == "mockbroker.tls" and f"127.0.0.1:{port} " in r.getMessage()]


def api_versions_frame(correlation_id: int = 1) -> bytes:
    body = struct.pack(">hhih", 18, 0, correlation_id, 4) + b"test"
    return struct.pack(">i", len(body)) + body


def closed_by_broker(sock) -> bool:
    """The broker closes: EOF (after any TLS alert it sent), a reset or a TLS error; the socket's
    timeout (10 s) bounds the wait."""
    try:
        for _ in range(100):
            if sock.recv(4096) == b"":
                return True
        return False
    except (ConnectionResetError, ssl.SSLError):
        return True


def client_tls(certs, cert) -> ssl.SSLContext:
    made, other = certs
    ctx = ssl.create_default_context(cafile=made.ca)
    pair = {"stranger": other.clients.get("stranger")}.get(cert) or made.clients.get(cert)
    if pair is not None:
        ctx.load_cert_chain(pair.cert, pair.key)
    return ctx


def port_of(b, listener):
    return int(b.bootstrap_servers_for(listener).rpartition(":")[2])


@pytest.mark.parametrize("cert, reason", [
    ("expired", "client certificate refused: certificate has expired"),
    ("stranger", "client certificate refused: self-signed certificate in certificate chain"),
    (None, "no client certificate (ssl.client.auth=required)"),
])
def test_refused_client_certificates_close_only_that_connection(broker, certs, caplog, cert, reason):
    caplog.set_level(logging.INFO, logger="mockbroker")
    topic = f"healthy-{cert}"
    healthy = KafkaProducer(acks=1, client_id="healthy", **kp_tls(broker, certs))
    broker.create_topic(topic, 1)
    healthy.send(topic, b"before").get(timeout=30)
    raw = socket.create_connection(("127.0.0.1", port_of(broker, "SSL")), timeout=10)
    port = raw.getsockname()[1]
    try:
        tls = client_tls(certs, cert).wrap_socket(raw, server_hostname="localhost")
        tls.sendall(api_versions_frame())  # TLS 1.3: the client's handshake ends before the broker's verdict
        assert closed_by_broker(tls)
    except ssl.SSLError:
        pass  # refused within the client's handshake
    finally:
        raw.close()
    lines = wait_for(lambda: tls_log(caplog, port), "the handshake failure's log line")
    assert len(lines) == 1 and reason in lines[0] and "on listener SSL failed" in lines[0], lines
    assert healthy.send(topic, b"after").get(timeout=30).offset == 1  # nothing else affected
    healthy.close()


def test_a_certificate_no_mapping_rule_applies_to_is_refused(broker, certs, caplog):
    """SslPrincipalMapper finds no rule: Kafka's principal builder fails the authentication; the
    connection is closed after its handshake with one log line."""
    caplog.set_level(logging.INFO, logger="mockbroker")
    raw = socket.create_connection(("127.0.0.1", port_of(broker, "STRICT")), timeout=10)
    port = raw.getsockname()[1]
    tls = client_tls(certs, "client").wrap_socket(raw, server_hostname="localhost")
    tls.sendall(api_versions_frame())
    assert closed_by_broker(tls)
    raw.close()
    [line] = wait_for(lambda: tls_log(caplog, port), "the refusal's log line")
    assert f"No rules apply to {DN}" in line and "ssl.principal.mapping.rules" in line, line


def test_plaintext_client_on_a_tls_port_and_the_reverse(broker, caplog):
    caplog.set_level(logging.INFO, logger="mockbroker")
    s = socket.create_connection(("127.0.0.1", port_of(broker, "SSL")), timeout=10)
    port = s.getsockname()[1]
    s.sendall(api_versions_frame())
    assert closed_by_broker(s)
    s.close()
    [line] = wait_for(lambda: tls_log(caplog, port), "the plaintext client's log line")
    assert "a plaintext client on a TLS listener?" in line, line
    # garbage that starts like a TLS record: refused by the TLS layer, one line too
    s = socket.create_connection(("127.0.0.1", port_of(broker, "SSL")), timeout=10)
    port = s.getsockname()[1]
    s.sendall(b"\x16\x03\x01\x00\x40" + os.urandom(64))
    assert closed_by_broker(s)
    s.close()
    [line] = wait_for(lambda: tls_log(caplog, port), "the garbage's log line")
    assert "on listener SSL failed" in line, line
    # a TLS client hello on the PLAINTEXT listener: a frame size no request has; closed, with the hint
    raw = socket.create_connection(("127.0.0.1", port_of(broker, "PLAINTEXT")), timeout=10)
    port = raw.getsockname()[1]
    with pytest.raises((ssl.SSLError, ConnectionResetError, OSError)):
        ssl.create_default_context().wrap_socket(raw, server_hostname="localhost")
    raw.close()
    lines = wait_for(lambda: [r.getMessage() for r in caplog.records if f"127.0.0.1:{port} " in r.getMessage()
                              and "closing connection" in r.getMessage()], "the TLS client's log line")
    assert len(lines) == 1 and "a TLS client hello on a PLAINTEXT listener?" in lines[0], lines


def test_requests_sent_with_the_clients_finished_are_answered(broker, certs):
    """TLS 1.3: a client may send its first requests in the same segment as its Finished, so the TLS
    layer decrypts them before the connection exists (KafkaConnection.start reads them first).  Two
    pipelined ApiVersions requests sent with the Finished are both answered, in order."""
    ctx = client_tls(certs, "client")
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    sock = socket.create_connection(("127.0.0.1", port_of(broker, "SSL")), timeout=10)
    try:
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                sock.sendall(outgoing.read())
                incoming.write(sock.recv(65536) or b"")
        assert tls.version() == "TLSv1.3"
        tls.write(api_versions_frame(correlation_id=1) + api_versions_frame(correlation_id=2))
        sock.sendall(outgoing.read())  # the Finished and both requests in one send
        answered = b""
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                answered += tls.read(65536)
            except ssl.SSLWantReadError:
                incoming.write(sock.recv(65536) or b"")
                continue
            ids = []
            rest = answered
            while len(rest) >= 8 and len(rest) >= 4 + struct.unpack(">i", rest[:4])[0]:
                size, cid = struct.unpack(">ii", rest[:8])
                ids.append(cid)
                rest = rest[4 + size:]
            if len(ids) == 2:
                assert ids == [1, 2]
                return
        pytest.fail(f"not both answered: {answered[:64]!r}")
    finally:
        sock.close()


# -- the memory pool, muting and throttling over TLS -----------------------------------------------


def test_memory_pool_mutes_and_unmutes_tls_connections(broker, certs):
    """KIP-72 over TLS: a half-sent request holds its pool buffer at its size; once the pool is spent
    (SimpleMemoryPool lends while any memory is left, so two fit here) the next one waits muted for
    MEMORY until a connection goes and gives its memory back."""
    def conn_of(sock):
        port = sock.getsockname()[1]
        [c] = [c for c in broker.connections() if c["peer"] == f"127.0.0.1:{port}"]
        return c

    ctx = client_tls(certs, "client")
    socks = [ctx.wrap_socket(socket.create_connection(("127.0.0.1", port_of(broker, "SSL")), timeout=10),
                             server_hostname="localhost") for _ in range(3)]
    size = SOCKET_MAX - 4
    try:
        for s in socks[:2]:
            s.sendall(struct.pack(">i", size) + b"x" * 100)
            wait_for(lambda s=s: conn_of(s)["memory_held_bytes"] == size, "a pool buffer at the request's size")
        socks[2].sendall(struct.pack(">i", size) + b"y" * 100)
        wait_for(lambda: conn_of(socks[2])["muted"] == ["MEMORY"], "the third connection muted for memory")
        assert conn_of(socks[2])["memory_held_bytes"] == 0
        socks[0].close()
        wait_for(lambda: conn_of(socks[2])["memory_held_bytes"] == size and conn_of(socks[2])["muted"] == [],
                 "the third connection given the memory")
    finally:
        for s in socks:
            s.close()


QUOTA_BPS = 20_000
PAYLOAD = b"q" * 1000
N_QUOTA = 60  # 60 KB: ~3x the burst allowance of two 1 s windows


def test_user_quota_throttles_an_mtls_client_which_honours_the_mute(broker, certs):
    """The mapped principal (``client``) is the user quota's entity; the Produce responses carry
    throttle_time_ms, the channel is muted for it, and kafka-python waits it out (verdict: honours)."""
    broker.create_topic("tls-quota", 1)
    broker.set_quota(user="client", producer_byte_rate=QUOTA_BPS)
    try:
        p = KafkaProducer(acks=1, client_id="tls-q", linger_ms=5, batch_size=4096,
                          max_in_flight_requests_per_connection=1, **kp_tls(broker, certs))
        for _ in range(N_QUOTA):
            p.send("tls-quota", PAYLOAD)
        p.flush(60)
        metrics = p.metrics()
        p.close()
    finally:
        broker.delete_quota(user="client")
    assert metrics["producer-metrics"]["throttle-time-max"] > 0
    events = [e for e in broker.throttle_events("tls-q") if e["api_key"] == 0]
    assert events and {e["user"] for e in events} == {"client"} and all(e["throttle_ms"] > 0 for e in events)
    assert {e["mode"] for e in events} == {"mute"}
    [row] = [v for v in broker.violations(by="entity") if v["client_id"] == "tls-q"]
    assert row["judged"] >= 3 and row["verdict"] == "honours" and row["worst_early_ms"] == 0, row
    assert broker.log_end_offset("tls-quota", 0) == N_QUOTA
