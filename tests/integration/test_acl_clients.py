"""ACLs enforced, side by side: a Kafka 4.4.0 with StandardAuthorizer and mockbroker with
``authorizer.class.name`` set to it, both with SASL/PLAIN users admin (a super user), bob, carol
and dave, SCRAM-SHA-256 on the same listener for delegation-token logins, a
``delegation.token.secret.key``, and an SSL listener requiring client certificates whose subjects
``ssl.principal.mapping.rules`` maps to their CN.  The admin creates the same topics and ACLs
through confluent-kafka's AdminClient on both; then bob, through librdkafka, lists topics,
produces, consumes in groups, creates and deletes topics and starts a transaction; then clients
with certificates (one allowed, one not, one from an unknown CA) produce over mTLS; then Kafka's
Java Admin creates, describes, renews and expires delegation tokens and logs in with one; then
Kafka's kafka-acls tool adds, lists and removes ACLs; kafka-python, aiokafka, kafkajs, franz-go and
Kafka's Java clients meet a denied topic, group and transactional id (and the Java Admin reads its
authorized operations).  Every outcome (values, error codes,
the tool's lines) must be the same on both."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mockbroker import MockBroker
from mockbroker.security.certs import CertSet, make_certs

from .realkafka import brokers, start

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
USERS = {"admin": "admin-pw", "bob": "bob-pw", "carol": "carol-pw", "dave": "dave-pw"}
SCRAM_USERS = {"erin": "erin-pw"}  # SCRAM-SHA-256 credentials only (Kafka: kafka-storage format --add-scram)
TOKEN_KEY = "acl-clients-token-key"  # delegation.token.secret.key
WAIT_S = 15  # a client outcome neither broker gives within this is reported as "none"
MAPPING = "RULE:^CN=([^,]*),.*$/$1/,DEFAULT"  # ssl.principal.mapping.rules: the CN is the user


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> tuple[CertSet, CertSet]:
    """Clients "client" and "other" of the brokers' CA, and "stranger" of a CA they do not trust."""
    return (make_certs(str(tmp_path_factory.mktemp("acl-certs")), clients=("client", "other")),
            make_certs(str(tmp_path_factory.mktemp("stranger-certs")), clients=("stranger",)))


def tls_props(cs: CertSet) -> dict[str, str]:
    """The same SSL settings for both brokers: PEM keystore and truststore, client certificates
    required, the CN as the principal."""
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": cs.broker.keystore_pem,
            "ssl.truststore.type": "PEM", "ssl.truststore.location": cs.ca, "ssl.client.auth": "required",
            "ssl.principal.mapping.rules": MAPPING}


@pytest.fixture(scope="module")
def kafka(certs) -> Iterator[tuple[str, str]]:
    """Kafka 4.4.0 with SASL_PLAINTEXT (PLAIN) and SSL listeners beside its PLAINTEXT one, and
    StandardAuthorizer (the nodes' own PLAINTEXT connections are ANONYMOUS super users): the SASL
    and the SSL listener's bootstrap addresses."""
    port, ssl_port = brokers.free_port(), brokers.free_port()
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")

    def configure(real) -> None:
        node = real.nodes[0]
        real.extra_props.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},SASL_PLAINTEXT://127.0.0.1:{port},"
                         f"SSL://127.0.0.1:{ssl_port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},SASL_PLAINTEXT://127.0.0.1:{port},"
                                    f"SSL://127.0.0.1:{ssl_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,"
                                              "CONTROLLER:PLAINTEXT",
            **tls_props(certs[0]),
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
            # SCRAM for delegation tokens (tokenauth=true) and SCRAM_USERS
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "delegation.token.secret.key": TOKEN_KEY,
            "authorizer.class.name": AUTHORIZER, "super.users": "User:admin;User:ANONYMOUS"})
        real.format_args += [a for u, p in SCRAM_USERS.items()
                             for a in ("--add-scram", f"SCRAM-SHA-256=[name={u},password={p}]")]

    running = start(1, configure=configure)
    next(running)
    try:
        yield f"127.0.0.1:{port}", f"127.0.0.1:{ssl_port}"
    finally:
        running.close()  # stops the nodes


def sasl(bootstrap: str, user: str, **extra) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": USERS[user], **extra}


def code(e) -> str:
    """A librdkafka error as its name (None: no error)."""
    if e is None:
        return "NONE"
    err = e.args[0] if isinstance(e, ck.KafkaException) else e
    return ck.KafkaError(err.code()).name() if hasattr(err, "code") else repr(err)


def scenario(bootstrap: str) -> list[str]:
    """The same steps on any broker: one line per client-visible outcome."""
    admin = AdminClient(sasl(bootstrap, "admin"))
    out = []
    for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("allowed", "denied")]).values():
        f.result(timeout=30)
    acls = [AclBinding(ResourceType.TOPIC, "allowed", ResourcePatternType.LITERAL, "User:bob", "*", op,
                       AclPermissionType.ALLOW) for op in (AclOperation.WRITE, AclOperation.READ)]
    acls += [AclBinding(ResourceType.GROUP, "g-", ResourcePatternType.PREFIXED, "User:bob", "*", AclOperation.READ,
                        AclPermissionType.ALLOW),
             AclBinding(ResourceType.GROUP, "g-no", ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.READ,
                        AclPermissionType.DENY)]
    for f in admin.create_acls(acls).values():
        f.result(timeout=30)
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                  AclPermissionType.ANY)
    # Kafka's brokers see new ACLs once they replay the controller's records: wait for them there
    deadline = time.monotonic() + WAIT_S
    described = admin.describe_acls(everything).result(timeout=30)
    while len(described) < len(acls) and time.monotonic() < deadline:
        time.sleep(0.2)
        described = admin.describe_acls(everything).result(timeout=30)
    out.append(f"acls {sorted(str(a) for a in described)}")
    bob = AdminClient(sasl(bootstrap, "bob"))
    out.append(f"bob lists {sorted(t for t in bob.list_topics(timeout=30).topics if not t.startswith('_'))}")
    for topic in ("allowed", "denied"):
        delivered: list = []
        p = ck.Producer(sasl(bootstrap, "bob", **{"message.timeout.ms": WAIT_S * 1000}))
        p.produce(topic, b"v", on_delivery=lambda err, msg: delivered.append(err))
        p.flush(WAIT_S + 5)
        out.append(f"produce {topic}: {code(delivered[0]) if delivered else 'none'}")
    for group, topic in (("g-ok", "allowed"), ("g-no", "allowed"), ("h", "allowed"), ("g-ok", "denied")):
        c = ck.Consumer(sasl(bootstrap, "bob", **{"group.id": group, "auto.offset.reset": "earliest"}))
        c.subscribe([topic])
        got = "none"
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and got == "none":
            m = c.poll(0.5)
            if m is not None:
                got = code(m.error()) if m.error() else f"record {m.value()!r}"
        c.close()
        out.append(f"consume {group}/{topic}: {got}")
    for what, fut in [("create", bob.create_topics([NewTopic("bobs", 1, 1)])["bobs"]),
                      ("delete", bob.delete_topics(["denied"])["denied"])]:
        try:
            fut.result(timeout=30)
            out.append(f"{what} topic: NONE")
        except ck.KafkaException as e:
            out.append(f"{what} topic: {code(e)}")
    tp = ck.Producer(sasl(bootstrap, "bob", **{"transactional.id": "tx-bob"}))
    try:
        tp.init_transactions(WAIT_S)
        out.append("init_transactions: NONE")
    except ck.KafkaException as e:
        out.append(f"init_transactions: {code(e)}")
    return out


def mtls_scenario(sasl_bootstrap: str, ssl_bootstrap: str, certs: tuple[CertSet, CertSet]) -> list[str]:
    """Client certificates on the SSL listener: "client" may WRITE "allowed" (an ACL on User:client,
    the CN the mapping rule gives), "other" may not, "stranger"'s CA is not trusted."""
    admin = AdminClient(sasl(sasl_bootstrap, "admin"))
    for f in admin.create_acls([AclBinding(ResourceType.TOPIC, "allowed", ResourcePatternType.LITERAL,
                                           "User:client", "*", AclOperation.WRITE,
                                           AclPermissionType.ALLOW)]).values():
        f.result(timeout=30)
    time.sleep(1)  # Kafka's brokers apply the ACL once they replay it
    out = []
    ours, theirs = certs
    for name, pair, ca in [("client", ours.clients["client"], ours.ca), ("other", ours.clients["other"], ours.ca),
                           ("stranger", theirs.clients["stranger"], ours.ca)]:
        errors: list = []
        delivered: list = []
        p = ck.Producer({"bootstrap.servers": ssl_bootstrap, "security.protocol": "SSL", "ssl.ca.location": ca,
                         "ssl.certificate.location": pair.cert, "ssl.key.location": pair.key,
                         "message.timeout.ms": 3000, "error_cb": errors.append})
        p.produce("allowed", b"v", on_delivery=lambda err, msg: delivered.append(err))
        p.flush(12)
        first = code(delivered[0]) if delivered else "none"
        out.append(f"mtls {name}: {first}, connection errors {sorted({code(e) for e in errors})}")
    return out


@pytest.fixture(scope="module")
def mock(certs) -> Iterator[MockBroker]:
    with MockBroker(config={"listeners": "SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL",
                            **tls_props(certs[0]),
                            "mock.sasl.users": [f"{u}:{p}" for u, p in (USERS | SCRAM_USERS).items()],
                            "authorizer.class.name": AUTHORIZER, "super.users": "User:admin",
                            "delegation.token.secret.key": TOKEN_KEY}) as b:
        yield b


def test_acl_outcomes_side_by_side(kafka, mock, certs):
    sasl_port, ssl_port = (mock.call(lambda cl: cl.brokers[0].ports[name]) for name in ("SASL_PLAINTEXT", "SSL"))
    on_kafka = scenario(kafka[0]) + mtls_scenario(*kafka, certs)
    on_mock = scenario(f"127.0.0.1:{sasl_port}") + mtls_scenario(f"127.0.0.1:{sasl_port}", f"127.0.0.1:{ssl_port}",
                                                                 certs)
    assert on_mock == on_kafka, "\n".join(f"{k!r:70} {m!r}" for k, m in zip(on_kafka, on_mock))
    assert "produce denied: TOPIC_AUTHORIZATION_FAILED" in on_mock  # the scenario bites


def test_delegation_token_outcomes_side_by_side(kafka, mock):
    """Kafka's Java Admin with delegation tokens (tests/integration/java/src/DelegationTokens.java),
    one JVM per broker: creating (for oneself, for another owner as a super user and without
    CREATE_TOKENS, a group renewer, a life above the maximum), describing as owner, renewer, other
    and super user with owner filters, renewing and expiring as owner, renewer and others, logging
    in with the token over SCRAM (tokenauth) and creating a token from that connection, then again
    once it is expired; a SCRAM user (erin) creating a token, and logging in with a wrong password.
    The owners, renewers, lifetimes and errors must be the same on both."""
    from .javatools import JAVA_TIMEOUT_S, java_classpath

    cp = java_classpath("DelegationTokens")
    sasl_port = mock.call(lambda cl: cl.brokers[0].ports["SASL_PLAINTEXT"])

    def run(bootstrap: str) -> list[str]:
        cmd = ["java", "-Xmx256m", "-cp", cp, "DelegationTokens", bootstrap,
               *(f"{u}:{p}" for u, p in (USERS | SCRAM_USERS).items())]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
        lines = r.stdout.splitlines()
        assert r.returncode == 0 and lines[-1:] == ["DONE"], r.stdout + r.stderr[-3000:]
        return lines

    on_kafka, on_mock = run(kafka[0]), run(f"127.0.0.1:{sasl_port}")
    assert on_mock == on_kafka, "\n".join(f"{k!r:70} {m!r}" for k, m in zip(on_kafka, on_mock))
    assert "renew other: DelegationTokenOwnerMismatchException" in on_mock  # the scenario bites


def acl_tool_runs(bootstrap: str, props: str, base: int, tmp: Path) -> list[tuple[str, int, list[str]]]:
    """Kafka's kafka-acls on one broker, every run in one JVM (java/src/CliTools.java): adds (a
    literal topic, a PREFIXED one with an allow and a deny, --producer with a transactional id,
    --consumer with a group, one again: "already exists"), lists (all, MATCH on a topic, by
    principal), removes with --force (one ACL, then every ACL of the prefixed resource) and lists
    again; between them WaitAcls waits for Kafka's broker to apply the ACLs.  ``base``: the ACLs the
    broker holds before.  Each run: its arguments, exit code and output lines, normalised (the tool
    prints HashMap and HashSet contents: blocks and the ACLs in a block sorted)."""
    from .javatools import OUT_DIR, java_classpath
    from .realkafka import kafka_classpath

    java_classpath("CliTools", "WaitAcls")  # compiled against kafka-clients
    cp = kafka_classpath() + os.pathsep + str(OUT_DIR)
    common = ["--bootstrap-server", bootstrap, "--command-config", props]
    bob_reads = ["--allow-principal", "User:bob", "--operation", "Read", "--operation", "Describe",
                 "--topic", "tool-t"]
    runs = [
        ["--add", *bob_reads],
        ["--add", "--allow-principal", "User:bob", "--deny-principal", "User:dave", "--operation", "Write",
         "--topic", "tool-", "--resource-pattern-type", "prefixed"],
        ["--add", "--producer", "--topic", "tool-p", "--transactional-id", "tool-tx",
         "--allow-principal", "User:carol"],
        ["--add", "--consumer", "--topic", "tool-c", "--group", "tool-g", "--allow-principal", "User:carol"],
        ["@wait", str(base + 12)],
        ["--add", *bob_reads],
        ["--list"],
        ["--list", "--topic", "tool-t", "--resource-pattern-type", "match"],
        ["--list", "--principal", "User:carol"],
        ["--remove", "--force", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "tool-t"],
        ["--remove", "--force", "--topic", "tool-", "--resource-pattern-type", "prefixed"],
        ["@wait", str(base + 9)],
        ["--list", "--topic", "tool-t", "--resource-pattern-type", "match"],
    ]
    acls_main = brokers.tool_main(cp, "kafka-acls")
    script = tmp / "acl-runs.txt"
    script.write_text("".join(f"@@ WaitAcls\n{run[1]}\n{bootstrap}\n{props}\n" if run[0] == "@wait" else
                              f"@@ {acls_main}\n" + "".join(f"{a}\n" for a in [*common, *run]) for run in runs))
    r = subprocess.run(["java", *brokers.TOOL_JVM_OPTS, "-cp", cp, "CliTools", str(script)], capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    found = re.findall(r"^#### RUN (\d+) EXIT (-?\d+)\n#### OUT\n(.*?)^#### ERR\n(.*?)^#### END\n", r.stdout,
                       re.S | re.M)
    assert len(found) == len(runs), r.stdout
    result = []
    for run, (_n, code, text, _err) in zip(runs, found):
        blocks: list[list[str]] = []
        for line in filter(None, (line.strip() for line in text.splitlines())):
            if line.startswith("(") and blocks:  # an ACL of the resource above
                blocks[-1].append(line)
            else:  # "Current ACLs for resource ...", "Adding ACLs ...", "ACLs for principal ...", ...
                blocks.append([line])
        result.append((" ".join(run), int(code), sorted("\n".join([b[0], *sorted(b[1:])]) for b in blocks)))
    return result


def test_kafka_acls_tool_side_by_side(kafka, mock, tmp_path):
    """Kafka 4.4.0's kafka-acls (AclCommand) logged in as the admin: the same exit codes and output
    lines from mockbroker as from the Kafka 4.4.0 (whose authorizer has the same ACLs)."""
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                     f'username="admin" password="{USERS["admin"]}";\n')
    sasl_port = mock.call(lambda cl: cl.brokers[0].ports["SASL_PLAINTEXT"])
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                  AclPermissionType.ANY)
    results = []
    for bootstrap in (kafka[0], f"127.0.0.1:{sasl_port}"):
        admin = AdminClient(sasl(bootstrap, "admin"))  # (kept: a collected client fails its futures)
        base = len(admin.describe_acls(everything).result(timeout=30))
        results.append(acl_tool_runs(bootstrap, str(props), base, tmp_path))
    on_kafka, on_mock = results
    assert on_mock == on_kafka, "\n".join(f"{k!r}\n{m!r}\n" for k, m in zip(on_kafka, on_mock) if k != m)
    listed = next(blocks for run, _code, blocks in on_mock if run == "--list --principal User:carol")
    assert "ACLs for principal `User:carol`" in listed and \
        any("name=tool-tx" in b and "operation=WRITE" in b for b in listed), listed  # the tool's lines


@pytest.fixture(scope="module")
def denied(kafka, mock) -> tuple[str, str]:
    """Topics py-allowed (bob may READ and WRITE it, so he may be an idempotent producer) and
    py-denied on both brokers, for the clients' denied cases: Kafka's and mockbroker's SASL
    bootstrap addresses."""
    sasl_port = mock.call(lambda cl: cl.brokers[0].ports["SASL_PLAINTEXT"])
    both = (kafka[0], f"127.0.0.1:{sasl_port}")
    for bootstrap in both:
        admin = AdminClient(sasl(bootstrap, "admin"))
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("py-allowed", "py-denied")]).values():
            f.result(timeout=30)
        acls = [AclBinding(ResourceType.TOPIC, "py-allowed", ResourcePatternType.LITERAL, "User:bob", "*", op,
                           AclPermissionType.ALLOW) for op in (AclOperation.READ, AclOperation.WRITE)]
        acls.append(AclBinding(ResourceType.GROUP, "java-ops-g", ResourcePatternType.PREFIXED, "User:bob", "*",
                               AclOperation.READ, AclPermissionType.ALLOW))  # the Java Admin's groups
        for f in admin.create_acls(acls).values():
            f.result(timeout=30)
        deadline = time.monotonic() + WAIT_S  # Kafka's broker applies the ACL once it has replayed it
        as_filter = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:bob", None,
                                     AclOperation.ANY, AclPermissionType.ANY)

        def applied() -> int:
            return sum(1 for a in admin.describe_acls(as_filter).result(timeout=30)
                       if a.name in ("py-allowed", "java-ops-g"))

        while applied() < len(acls) and time.monotonic() < deadline:
            time.sleep(0.1)
    return both


def python_clients_denied(bootstrap: str) -> list[str]:
    """kafka-python and aiokafka as bob against what he may not use: producing to a topic, a
    consumer group (on a topic he may read) and a transactional id.  One line per client and case:
    the exception class it raises (the clients name Kafka's error codes alike)."""
    import asyncio

    import aiokafka
    from kafka import KafkaConsumer, KafkaProducer

    kw = dict(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
              sasl_plain_username="bob", sasl_plain_password=USERS["bob"])
    out = []

    def outcome(what: str, call) -> None:
        try:
            call()
            out.append(f"{what}: NONE")
        except Exception as e:  # noqa: BLE001 - the class is the outcome
            out.append(f"{what}: {type(e).__name__}")

    def kp_produce() -> None:
        p = KafkaProducer(max_block_ms=WAIT_S * 1000, **kw)
        try:
            p.send("py-denied", b"v").get(WAIT_S)
        finally:
            p.close(timeout=1)

    def kp_consume() -> None:
        c = KafkaConsumer("py-allowed", group_id="py-g", auto_offset_reset="earliest", **kw)
        try:
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline:
                c.poll(timeout_ms=500)
        finally:
            c.close(autocommit=False)

    def kp_transaction() -> None:
        p = KafkaProducer(transactional_id="py-tx", max_block_ms=WAIT_S * 1000, **kw)
        try:
            p.init_transactions()
        finally:
            p.close(timeout=1)

    outcome("kafka-python produce", kp_produce)
    outcome("kafka-python consume in a group", kp_consume)
    outcome("kafka-python init_transactions", kp_transaction)

    async def aio_produce() -> None:
        p = aiokafka.AIOKafkaProducer(request_timeout_ms=WAIT_S * 1000, **kw)
        await p.start()
        try:
            await asyncio.wait_for(p.send_and_wait("py-denied", b"v"), WAIT_S)
        finally:
            await p.stop()

    async def aio_consume() -> None:
        c = aiokafka.AIOKafkaConsumer("py-allowed", group_id="py-g", auto_offset_reset="earliest", **kw)
        await c.start()
        try:
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline:
                await c.getmany(timeout_ms=500)
        finally:
            await c.stop()

    async def aio_transaction() -> None:
        p = aiokafka.AIOKafkaProducer(transactional_id="py-tx", **kw)
        try:
            await asyncio.wait_for(p.start(), WAIT_S)
        finally:
            await p.stop()

    outcome("aiokafka produce", lambda: asyncio.run(aio_produce()))
    outcome("aiokafka consume in a group", lambda: asyncio.run(aio_consume()))
    outcome("aiokafka transactional start", lambda: asyncio.run(aio_transaction()))
    return out


def test_python_clients_denied_side_by_side(denied):
    """kafka-python and aiokafka meet TOPIC_, GROUP_ and TRANSACTIONAL_ID_AUTHORIZATION_FAILED as
    the same exceptions from mockbroker as from the Kafka 4.4.0."""
    pytest.importorskip("kafka")
    pytest.importorskip("aiokafka")
    on_kafka, on_mock = (python_clients_denied(bootstrap) for bootstrap in denied)
    assert on_mock == on_kafka, "\n".join(f"{k!r:70} {m!r}" for k, m in zip(on_kafka, on_mock))
    assert all("AuthorizationFailed" in line for line in on_mock), on_mock  # each case is denied


def test_java_clients_denied_side_by_side(denied):
    """Kafka's Java producer, consumer and transactional producer (AclDenied.java, one JVM per
    broker) as bob against what he may not use: the same exceptions from mockbroker as from Kafka
    4.4.0; then the Java Admin's authorized operations (includeAuthorizedOperations) of a topic, the
    cluster and a group, the same on both."""
    from .javatools import JAVA_TIMEOUT_S, java_classpath

    cp = java_classpath("AclDenied")

    def run(bootstrap: str) -> list[str]:
        cmd = ["java", "-Xmx256m", "-cp", cp, "AclDenied", bootstrap, "bob", USERS["bob"], "py-denied",
               "py-allowed", "java-g", "java-tx", "java-ops-g"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
        lines = r.stdout.splitlines()
        assert r.returncode == 0 and lines[-1:] == ["DONE"], r.stdout + r.stderr[-3000:]
        return lines

    on_kafka, on_mock = (run(bootstrap) for bootstrap in denied)
    assert on_mock == on_kafka, "\n".join(f"{k!r:50} {m!r}" for k, m in zip(on_kafka, on_mock))
    assert on_mock == ["produce: TopicAuthorizationException", "consume in a group: GroupAuthorizationException",
                       "initTransactions: TransactionalIdAuthorizationException",
                       "topic operations: [DESCRIBE, READ, WRITE]",
                       "describe the denied topic: TopicAuthorizationException",
                       "cluster operations: []", "group operations: [DESCRIBE, READ]",
                       "list config resources: ClusterAuthorizationException",
                       "alter share group offsets: TopicAuthorizationException", "DONE"], on_mock


def test_kafkajs_denied_side_by_side(denied):
    """kafkajs (js/acl_denied.js) as bob against a denied topic, group and transactional id: the
    same errors from mockbroker as from Kafka 4.4.0 (kafkajs's own names for two of them)."""
    from .jstools import JS_DIR, node_with_kafkajs

    node = node_with_kafkajs()

    def run(bootstrap: str) -> list[str]:
        try:
            r = subprocess.run([node, str(JS_DIR / "acl_denied.js"), bootstrap, "bob", USERS["bob"], "py-denied",
                                "py-allowed", "kjs-g", "kjs-tx"], capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            return [*out.splitlines(), "timed out"]
        lines = r.stdout.splitlines()
        assert r.returncode == 0 and lines[-1:] == ["DONE"], r.stdout + r.stderr[-3000:]
        return lines

    on_kafka, on_mock = (run(bootstrap) for bootstrap in denied)
    assert on_mock == on_kafka, "\n".join(f"{k!r:50} {m!r}" for k, m in zip(on_kafka, on_mock))
    # kafkajs turns FindCoordinator's GROUP_ and TRANSACTIONAL_ID_AUTHORIZATION_FAILED into "coordinator
    # not found"
    assert on_mock == ["produce: TOPIC_AUTHORIZATION_FAILED", "consume in a group: KafkaJSGroupCoordinatorNotFound",
                       "transaction: KafkaJSGroupCoordinatorNotFound", "DONE"], on_mock


def test_franz_go_denied_side_by_side(denied):
    """franz-go (go/acl.go) as bob against a denied topic, group and transactional id: the same
    errors from mockbroker as from Kafka 4.4.0."""
    from .gotools import franz_go_binary

    binary = franz_go_binary()

    def run(bootstrap: str) -> list[str]:
        r = subprocess.run([binary, "acl", bootstrap, "bob", USERS["bob"], "py-denied", "py-allowed", "franz-g",
                            "franz-tx"], capture_output=True, text=True, timeout=90)
        lines = r.stdout.splitlines()
        assert r.returncode == 0 and lines[-1:] == ["DONE"], r.stdout + r.stderr[-3000:]
        return lines

    on_kafka, on_mock = (run(bootstrap) for bootstrap in denied)
    assert on_mock == on_kafka, "\n".join(f"{k!r:50} {m!r}" for k, m in zip(on_kafka, on_mock))
    assert on_mock == ["produce: TOPIC_AUTHORIZATION_FAILED", "consume in a group: GROUP_AUTHORIZATION_FAILED",
                       "transaction: TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "DONE"], on_mock
