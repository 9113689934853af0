"""TLS listeners' configuration (tls.py, config.py): Kafka's ssl.* configs per listener, the keystore
and truststore forms, ssl.principal.mapping.rules as Kafka's SslPrincipalMapper applies them (its own
test's cases), the subject of a client certificate as Kafka names it, and what is refused at start."""

from __future__ import annotations

import ssl

import pytest

from mockbroker.security.certs import make_certs
from mockbroker.config.broker_config import BrokerConfig, ConfigError
from mockbroker.security.tls_config import NoMatchingRule, SslPrincipalMapper, _openssl_cipher, listener_ssl_configs


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(str(tmp_path_factory.mktemp("certs")), clients=("client",))


def test_kafka_principal_mapper_cases():
    # SslPrincipalMapperTest.testSslPrincipalMapper's rules and subjects
    mapper = SslPrincipalMapper(", ".join([
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
        "DEFAULT"]))
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert mapper.name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert mapper.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"
    # testCommaWithWhitespace: an escaped comma inside a rule and a subject
    comma = SslPrincipalMapper("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert comma.name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


@pytest.mark.parametrize("rules", [
    "DEFAULT", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
    "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/", ",,RULE://,,,DEFAULT,,", "  RULE:  /     /U   ,DEFAULT  "])
def test_valid_rules(rules):
    SslPrincipalMapper(rules)


@pytest.mark.parametrize("rules", [
    "default", "DEFAUL", "DEFAULT/L", "DEFAULT/U", "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
    "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/L", "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU"])
def test_invalid_rules_are_refused(rules):
    with pytest.raises(ValueError, match="invalid rule"):
        SslPrincipalMapper(rules)


def test_no_matching_rule_and_group_references():
    with pytest.raises(NoMatchingRule, match="No rules apply to CN=x"):
        SslPrincipalMapper("RULE:^CN=(.*),OU=a$/$1/").name("CN=x,OU=b")
    # $12 with one group is $1 then '2' (Matcher.appendReplacement); $2 past the last group is literal
    assert SslPrincipalMapper("RULE:^CN=(.*?),.*$/$12/").name("CN=a,OU=b") == "a2"
    assert SslPrincipalMapper("RULE:^CN=(.*?),.*$/$2\\$/").name("CN=a,OU=b") == "$2$"


def test_java_cipher_names_become_openssl_names():
    assert _openssl_cipher("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256") == "ECDHE-RSA-AES128-GCM-SHA256"
    assert _openssl_cipher("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384") == "ECDHE-ECDSA-AES256-GCM-SHA384"
    assert _openssl_cipher("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256") == "ECDHE-ECDSA-CHACHA20-POLY1305"
    assert _openssl_cipher("TLS_RSA_WITH_AES_128_CBC_SHA") == "AES128-SHA"
    assert _openssl_cipher("ECDHE-RSA-AES128-GCM-SHA256") == "ECDHE-RSA-AES128-GCM-SHA256"


def test_certs_subjects_as_kafka_names_them(certs):
    assert certs.clients["client"].subject == "CN=client,OU=mockbroker,O=mockbroker test"
    assert certs.broker.subject == "CN=broker,OU=mockbroker,O=mockbroker test"


def _tls(certs, **extra):
    return {"listeners": "SSL://127.0.0.1:0", **extra}


def test_every_keystore_form_loads(certs):
    with open(certs.broker.cert) as f:
        chain = f.read()
    with open(certs.broker.key) as f:
        key = f.read()
    with open(certs.ca) as f:
        ca = f.read()
    forms = [
        {"ssl.keystore.type": "PEM", "ssl.keystore.location": certs.broker.keystore_pem},
        {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": chain, "ssl.keystore.key": key},
        {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": certs.broker.p12, "ssl.keystore.password": "changeit"},
        {"ssl.keystore.location": certs.broker.p12, "ssl.keystore.password": "changeit"},  # JKS: read as PKCS12
    ]
    for form in forms:
        cfg = BrokerConfig(_tls(certs, **form, **{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": ca,
                                                 "ssl.client.auth": "required"}))
        ctx = cfg.tls_contexts["SSL"]
        assert ctx.verify_mode == ssl.CERT_REQUIRED
        assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2 and ctx.maximum_version == ssl.TLSVersion.TLSv1_3


def test_listener_prefixed_configs_win(certs):
    cfg = BrokerConfig({
        "listeners": "SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
        "listener.security.protocol.map": "SSL:SSL,MTLS:SSL",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": certs.broker.keystore_pem,
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.truststore.type": "PEM", "listener.name.mtls.ssl.truststore.location": certs.ca,
        "listener.name.mtls.ssl.enabled.protocols": "TLSv1.3",
        "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/U"})
    assert cfg.tls_contexts["SSL"].verify_mode == ssl.CERT_NONE
    assert cfg.tls_contexts["MTLS"].verify_mode == ssl.CERT_REQUIRED
    assert cfg.tls_contexts["MTLS"].minimum_version == ssl.TLSVersion.TLSv1_3
    assert listener_ssl_configs(cfg, "MTLS")["ssl.client.auth"] == "required"
    assert cfg.principal_mappers["MTLS"].name("CN=alice,OU=x") == "ALICE"
    assert cfg.principal_mappers["SSL"].name("CN=alice,OU=x") == "CN=alice,OU=x"


@pytest.mark.parametrize("extra, message", [
    ({}, "listener SSL is TLS: set ssl.keystore.location"),
    ({"ssl.keystore.type": "PEM"}, "ssl.keystore.certificate.chain and ssl.keystore.key"),
    ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "KEYSTORE_P12", "ssl.keystore.password": "wrong"},
     "not a PKCS12 store or a wrong password"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/nonexistent/k.pem"}, "No such file"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "KEYSTORE_PEM", "ssl.client.auth": "required"},
     "ssl.client.auth=required needs a truststore"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "KEYSTORE_PEM", "ssl.enabled.protocols": "TLSv1.1"},
     "the mock serves TLSv1.2, TLSv1.3"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "KEYSTORE_PEM", "ssl.cipher.suites": "NO_SUCH_SUITE"},
     "none is known to OpenSSL"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "KEYSTORE_PEM", "ssl.principal.mapping.rules": "DEFAULT/L"},
     "invalid rule"),
    ({"ssl.client.auth": "sometimes"}, "one of none, requested, required"),
])
def test_what_kafka_refuses_at_start(certs, extra, message):
    values = {k: {"KEYSTORE_P12": certs.broker.p12, "KEYSTORE_PEM": certs.broker.keystore_pem}.get(v, v)
              for k, v in extra.items()}
    with pytest.raises(ConfigError, match=message):
        BrokerConfig(_tls(certs, **values))


def test_encrypted_pem_key_and_pkcs12_truststore(certs, tmp_path):
    from cryptography.hazmat.primitives import serialization

    with open(certs.broker.key, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), None)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(b"kpw"))
    with open(certs.broker.cert, "rb") as f:
        chain = f.read()
    path = tmp_path / "enc-keystore.pem"
    path.write_bytes(encrypted + chain)
    trust = {"ssl.truststore.type": "PKCS12", "ssl.truststore.location": certs.clients["client"].p12,
             "ssl.truststore.password": "changeit", "ssl.client.auth": "requested"}
    cfg = BrokerConfig(_tls(certs, **{"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path),
                                      "ssl.key.password": "kpw"}, **trust))
    assert cfg.tls_contexts["SSL"].verify_mode == ssl.CERT_OPTIONAL
    assert cfg.tls_contexts["SSL"].cert_store_stats()["x509"] == 2  # the PKCS12 store's certificate and CA
    with pytest.raises(ConfigError, match="cannot be used"):
        BrokerConfig(_tls(certs, **{"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path),
                                    "ssl.key.password": "wrong"}))
