"""Throwaway certificates for TLS tests (``mockbroker certs DIR``, the ``mockbroker_tls`` fixture).

One run makes a CA, a broker certificate (SANs ``localhost``, ``127.0.0.1``, ``::1``) and client
certificates, each signed by the CA, with EC P-256 keys (quick to make; every client the project tests
accepts them).  Each key and certificate is written in the forms Kafka's clients and brokers read:

* ``ca.pem``: the CA certificate (a PEM truststore: ``ssl.truststore.type=PEM`` with
  ``ssl.truststore.location``, librdkafka's ``ssl.ca.location``, Python's ``cafile``).
* ``NAME.pem`` / ``NAME-key.pem``: certificate chain (the certificate, then the CA) and unencrypted
  PKCS#8 key; ``NAME-keystore.pem``: key and chain in one file (Kafka's ``ssl.keystore.type=PEM`` with
  ``ssl.keystore.location``).
* ``NAME.p12``: a PKCS#12 keystore (``ssl.keystore.type=PKCS12``) with the key and chain, encrypted
  with the password (``changeit`` unless told).

``NAME`` is ``broker`` and each client's name; a client's subject is ``CN=NAME,OU=mockbroker,O=mockbroker
test`` as Kafka formats it (RFC 2253, the principal ``ssl.principal.mapping.rules`` rules see).  An
``expired`` client's certificate ended yesterday (its handshake fails verification).

Needs the ``cryptography`` package (a mockbroker dependency); imported only here.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

DEFAULT_PASSWORD = "changeit"
SAN_HOSTS = ("localhost", "127.0.0.1", "::1")
ORGANIZATION = "mockbroker test"
UNIT = "mockbroker"


@dataclass(frozen=True)
class KeyPair:
    """One certificate's files: ``cert`` (chain: the certificate, then the CA), ``key`` (PKCS#8 PEM),
    ``keystore_pem`` (key and chain in one file), ``p12`` (PKCS#12 with ``password``)."""

    name: str
    subject: str  # as Kafka formats it (X500Principal.getName(): RFC 2253)
    cert: str
    key: str
    keystore_pem: str
    p12: str
    password: str


@dataclass(frozen=True)
class CertSet:
    """A throwaway CA with its broker and client certificates (``make_certs``)."""

    directory: str
    ca: str  # the CA certificate, PEM
    broker: KeyPair
    clients: dict[str, KeyPair] = field(default_factory=dict)

    @property
    def password(self) -> str:
        return self.broker.password

    def broker_config(self, client_auth: str = "required", listener: str = "SSL") -> dict[str, str]:
        """Broker config for a TLS listener named ``listener`` on a free port with these files: PEM keystore
        and truststore, ``ssl.client.auth``."""
        protocol = "SASL_SSL" if listener.upper().startswith("SASL") else "SSL"
        return {"listeners": f"{listener}://127.0.0.1:0",
                "listener.security.protocol.map": f"{listener}:{protocol}",
                "ssl.keystore.type": "PEM", "ssl.keystore.location": self.broker.keystore_pem,
                "ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca,
                "ssl.client.auth": client_auth}


def make_certs(directory: str, clients: Iterable[str] = ("client",), password: str = DEFAULT_PASSWORD,
               days: int = 30, expired: Iterable[str] = ()) -> CertSet:
    """A CA, a broker certificate and one certificate per name in ``clients`` (and in ``expired``, whose
    certificates are no longer valid), written to ``directory`` (created if missing)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    os.makedirs(directory, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
                          x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, UNIT),
                          x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def write(filename: str, data: bytes) -> str:
        path = os.path.join(directory, filename)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return path

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
                         x509.NameAttribute(NameOID.COMMON_NAME, "mockbroker test CA")])
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1))
               .not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                            content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False,
                                            encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
               .sign(ca_key, hashes.SHA256()))
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    ca_path = write("ca.pem", ca_pem)
    write("ca-key.pem", ca_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()))

    def issue(cn: str, server: bool, valid: bool = True) -> KeyPair:
        key = ec.generate_private_key(ec.SECP256R1())
        start, end = ((now - datetime.timedelta(hours=1), now + datetime.timedelta(days=days)) if valid
                      else (now - datetime.timedelta(days=2), now - datetime.timedelta(days=1)))
        builder = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(ca_name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(end)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                                  critical=False)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                                         else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if server:
            sans: list[x509.GeneralName] = []
            for host in SAN_HOSTS:
                try:
                    sans.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    sans.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        chain = cert.public_bytes(serialization.Encoding.PEM) + ca_pem
        p12 = pkcs12.serialize_key_and_certificates(
            cn.encode(), key, cert, [ca_cert], serialization.BestAvailableEncryption(password.encode()))
        return KeyPair(cn, cert.subject.rfc4514_string(), write(f"{cn}.pem", chain), write(f"{cn}-key.pem", key_pem),
                       write(f"{cn}-keystore.pem", key_pem + chain), write(f"{cn}.p12", p12), password)

    broker = issue("broker", server=True)
    made = {cn: issue(cn, server=False) for cn in clients}
    made.update({cn: issue(cn, server=False, valid=False) for cn in expired})
    return CertSet(directory, ca_path, broker, made)
