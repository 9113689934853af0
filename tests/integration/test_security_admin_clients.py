"""Security admin APIs with real clients: confluent-kafka's AdminClient (librdkafka) upserts and
deletes a SCRAM credential (AlterUserScramCredentials) and describes it, and a confluent-kafka
producer logging in with SCRAM-SHA-256 as that user is let in, then refused once the credential is
deleted; Kafka 4.4.0's kafka-configs tool does the same with --add-config/--delete-config
'SCRAM-SHA-256=[...]'; Kafka 4.4.0's kafka-delegation-tokens creates, describes, renews and expires a
token, which a Java client logs in with (SCRAM, tokenauth=true) until it is expired; createAcls on a broker without an authorizer surfaces SECURITY_DISABLED as
Kafka's does, and Kafka 4.4.0's kafka-acls reports SecurityDisabledException."""

from __future__ import annotations

import time

import pytest

from mockbroker import MockBroker

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

ADMIN = ("alice", "alice-pw")


@pytest.fixture(scope="module")
def broker():
    with MockBroker(config={"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                            "mock.sasl.users": [":".join(ADMIN)],
                            "delegation.token.secret.key": "it-secret"}) as b:
        b.create_topic("scram-t", 1)
        yield b


def sasl(b, user, password, **extra):
    return {"bootstrap.servers": b.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user, "sasl.password": password, **extra}


def admin_properties(tmp_path):
    """A Java tool's --command-config: SCRAM-SHA-256 as the configured admin user."""
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                     f'username="{ADMIN[0]}" password="{ADMIN[1]}";\n')
    return props


def produce_as(b, user, password):
    """Produce one record as ``user``: None when delivered, else the first error librdkafka reports."""
    errors: list = []
    delivered: list = []
    p = ck.Producer(sasl(b, user, password, acks=1, error_cb=errors.append, **{"message.timeout.ms": 10000}))
    p.produce("scram-t", b"x", on_delivery=lambda err, msg: (errors if err else delivered).append(err or msg))
    end = time.monotonic() + 15
    while not delivered and not errors and time.monotonic() < end:
        p.poll(0.2)
    p.purge()
    p.flush(1)
    if delivered:
        return None
    assert errors, "neither delivered nor an error within 15 s"
    return errors[0]


def test_scram_credential_upserted_by_admin_logs_in_and_deleted_is_refused(broker):
    admin = AdminClient(sasl(broker, *ADMIN))
    upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                                          b"carol-pw")
    for fut in admin.alter_user_scram_credentials([upsert]).values():
        fut.result(timeout=30)
    described = admin.describe_user_scram_credentials(["carol"])["carol"].result(timeout=30)
    infos = described.scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_256, 8192)]
    assert produce_as(broker, "carol", "carol-pw") is None
    err = produce_as(broker, "carol", "not-carol-pw")
    assert err.code() == ck.KafkaError._AUTHENTICATION, err.str()

    deletion = UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)
    for fut in admin.alter_user_scram_credentials([deletion]).values():
        fut.result(timeout=30)
    err = produce_as(broker, "carol", "carol-pw")
    assert err.code() == ck.KafkaError._AUTHENTICATION, err.str()
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in err.str()
    with pytest.raises(ck.KafkaException) as exc:
        admin.describe_user_scram_credentials(["carol"])["carol"].result(timeout=30)
    assert exc.value.args[0].code() == ck.KafkaError.RESOURCE_NOT_FOUND


def test_create_acls_without_an_authorizer_is_security_disabled(broker):
    admin = AdminClient(sasl(broker, *ADMIN))
    acl = AclBinding(ResourceType.TOPIC, "scram-t", ResourcePatternType.LITERAL, "User:carol", "*",
                     AclOperation.READ, AclPermissionType.ALLOW)
    for fut in admin.create_acls([acl]).values():
        with pytest.raises(ck.KafkaException) as exc:
            fut.result(timeout=30)
        assert exc.value.args[0].code() == ck.KafkaError.SECURITY_DISABLED
        assert "No Authorizer is configured." in exc.value.args[0].str()


def test_kafka_configs_tool_sets_and_deletes_a_scram_credential(broker, tmp_path):
    """Kafka 4.4.0's own kafka-configs (ConfigCommand, logged in with SCRAM as the admin): --add-config
    'SCRAM-SHA-256=[iterations=...,password=...]' and --delete-config, as against Kafka."""
    from .realkafka import kafka_tool

    props = admin_properties(tmp_path)
    users = ("--bootstrap-server", broker.bootstrap_servers, "--command-config", str(props),
             "--entity-type", "users", "--entity-name", "erin")

    def configs(*args):
        r = kafka_tool("kafka-configs", *users, *args)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    assert configs("--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=erin-pw]") == \
        "Completed updating config for user erin.\n"
    assert configs("--describe") == "SCRAM credential configs for user-principal 'erin' are SCRAM-SHA-256=iterations=8192\n"
    assert produce_as(broker, "erin", "erin-pw") is None
    assert configs("--alter", "--delete-config", "SCRAM-SHA-256") == "Completed updating config for user erin.\n"
    assert configs("--describe") == ""
    err = produce_as(broker, "erin", "erin-pw")
    assert err.code() == ck.KafkaError._AUTHENTICATION, err.str()


def test_kafka_acls_tool_reports_security_disabled(broker, tmp_path):
    """Kafka 4.4.0's kafka-acls (AclCommand, Java Admin) against a broker without an authorizer:
    --add (which describes first), --list and --remove fail with SecurityDisabledException and
    Kafka's messages (DescribeAcls' "... on the broker", DeleteAcls' per-filter one)."""
    from .realkafka import kafka_tool

    props = admin_properties(tmp_path)
    common = ("--bootstrap-server", broker.bootstrap_servers, "--command-config", str(props))
    acl = ("--allow-principal", "User:carol", "--operation", "Read", "--topic", "scram-t")
    for args, message in [(("--add", *acl), "No Authorizer is configured on the broker"),
                          (("--list",), "No Authorizer is configured on the broker"),
                          (("--remove", "--force", *acl), "No Authorizer is configured.")]:
        r = kafka_tool("kafka-acls", *common, *args)
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"org.apache.kafka.common.errors.SecurityDisabledException: {message}" in r.stdout, r.stdout


def token_properties(tmp_path, token_id, hmac_b64):
    """A Java client logging in with a delegation token (ScramLoginModule with tokenauth)."""
    props = tmp_path / "token.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                     f'username="{token_id}" password="{hmac_b64}" tokenauth="true";\n')
    return props


def test_kafka_delegation_tokens_tool_and_a_token_login(broker, tmp_path):
    """Kafka 4.4.0's kafka-delegation-tokens (DelegationTokenCommand, logged in with SCRAM as alice):
    --create prints the token, --describe lists it, --renew answers its new expiry; Kafka's
    kafka-topics logs in with the token (its owner's principal) and lists topics, but may not
    create tokens itself (UnsupportedByAuthenticationException); after --expire with a negative
    period the token logs in no more."""
    from .realkafka import kafka_tool

    common = ("--bootstrap-server", broker.bootstrap_servers, "--command-config", str(admin_properties(tmp_path)))

    def tokens(*args, props=None, ok=True):
        cfg = common if props is None else (*common[:2], "--command-config", str(props))
        r = kafka_tool("kafka-delegation-tokens", *cfg, *args)
        assert (r.returncode == 0) == ok, r.stdout + r.stderr
        return r.stdout if ok else r.stdout + r.stderr

    out = tokens("--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
    assert "Created delegation token with tokenId : " in out, out
    token_id = out.split("Created delegation token with tokenId : ", 1)[1].split()[0]
    row = next(line.split() for line in out.splitlines() if line.startswith(token_id))
    hmac_b64, owner, requester, renewers = row[1:5]
    assert (owner, requester, renewers) == ("User:alice", "User:alice", "[User:bob]"), out
    # (without --owner-principal the tool sends an empty owners list, which Kafka answers with no tokens)
    assert token_id in tokens("--describe", "--owner-principal", "User:bob")
    assert "Completed renew operation. New expiry date : " in tokens("--renew", "--hmac", hmac_b64,
                                                                     "--renew-time-period", "-1")
    props = token_properties(tmp_path, token_id, hmac_b64)
    listed = kafka_tool("kafka-topics", "--bootstrap-server", broker.bootstrap_servers, "--command-config",
                        str(props), "--list")
    assert listed.returncode == 0 and "scram-t" in listed.stdout.split(), listed.stdout + listed.stderr
    refused = tokens("--create", "--max-life-time-period", "-1", props=props, ok=False)
    assert "UnsupportedByAuthenticationException" in refused, refused
    assert "Completed expire operation." in tokens("--expire", "--hmac", hmac_b64, "--expiry-time-period", "-1")
    gone = kafka_tool("kafka-topics", "--bootstrap-server", broker.bootstrap_servers, "--command-config",
                      str(props), "--list", timeout=120)
    assert gone.returncode != 0 and "SaslAuthenticationException" in gone.stdout + gone.stderr, gone.stdout
