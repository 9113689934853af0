"""ACLs enforced, side by side: a Kafka 4.4.0 with StandardAuthorizer and mockbroker with
``authorizer.class.name`` set to it, both with SASL/PLAIN users admin (a super user) and bob.  The
admin creates the same topics and ACLs through confluent-kafka's AdminClient on both; then bob,
through librdkafka, lists topics, produces, consumes in groups, creates and deletes topics and
starts a transaction, and every outcome (values and error codes) must be the same on both.  Kafka
4.4.0's own kafka-acls lists the ACLs on mockbroker as on Kafka."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mockbroker import MockBroker

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
USERS = {"admin": "admin-pw", "bob": "bob-pw"}
WAIT_S = 15  # a client outcome neither broker gives within this is reported as "none"


@pytest.fixture(scope="module")
def kafka() -> Iterator[str]:
    """Kafka 4.4.0 with a SASL_PLAINTEXT listener (PLAIN) beside its PLAINTEXT one, and
    StandardAuthorizer (the nodes' own PLAINTEXT connections are ANONYMOUS super users): the SASL
    listener's bootstrap address."""
    port = brokers.free_port()
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")

    def configure(real) -> None:
        node = real.nodes[0]
        real.extra_props.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},SASL_PLAINTEXT://127.0.0.1:{port},"
                         f"CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},SASL_PLAINTEXT://127.0.0.1:{port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
            "authorizer.class.name": AUTHORIZER, "super.users": "User:admin;User:ANONYMOUS"})

    running = start(1, configure=configure)
    next(running)
    try:
        yield f"127.0.0.1:{port}"
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


@pytest.fixture(scope="module")
def mock() -> Iterator[MockBroker]:
    with MockBroker(config={"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                            "mock.sasl.users": [f"{u}:{p}" for u, p in USERS.items()],
                            "authorizer.class.name": AUTHORIZER, "super.users": "User:admin"}) as b:
        yield b


def test_acl_outcomes_side_by_side(kafka, mock):
    on_kafka = scenario(kafka)
    on_mock = scenario(mock.bootstrap_servers)
    assert on_mock == on_kafka, "\n".join(f"{k!r:70} {m!r}" for k, m in zip(on_kafka, on_mock))
    assert "produce denied: TOPIC_AUTHORIZATION_FAILED" in on_mock  # the scenario bites
