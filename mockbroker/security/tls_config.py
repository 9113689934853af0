"""TLS configuration of SSL and SASL_SSL listeners: the server context from Kafka's ``ssl.*`` configs
(Kafka's ``DefaultSslEngineFactory``) and ``ssl.principal.mapping.rules`` (``SslPrincipalMapper``); made
once when the configuration is checked (``BrokerConfig``), used by ``tls.py``.

Configs are read per listener as Kafka reads them: ``listener.name.<name>.ssl.X`` wins over ``ssl.X``
(``ListenerName.configPrefix``).  Keystores: ``PEM`` (``ssl.keystore.certificate.chain`` and
``ssl.keystore.key`` inline, or ``ssl.keystore.location`` naming a file with the key and the chain,
``ssl.key.password`` when the key is encrypted) and ``PKCS12`` (``ssl.keystore.location``,
``ssl.keystore.password``); ``JKS``, Kafka's default type, is read as PKCS#12 as Java's own JKS keystore
reads a PKCS#12 file (a real JKS file is refused at start).  Truststores: ``PEM`` (``ssl.truststore.certificates``
inline or ``ssl.truststore.location``) and ``PKCS12``.  Imports nothing of the broker: a ``TlsConfigError``
becomes the ``ConfigError`` of the config that made it.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Mapping
from typing import Any


class TlsConfigError(ValueError):
    """A TLS configuration Kafka would refuse at start."""


_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
# SSL_X_WITH_Y and TLS_X_WITH_Y (Java's standard names) -> OpenSSL's names, for ssl.cipher.suites
_KX = {"ECDHE_RSA": "ECDHE-RSA-", "ECDHE_ECDSA": "ECDHE-ECDSA-", "DHE_RSA": "DHE-RSA-", "RSA": ""}
_TLS13_SUITES = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
                 "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"}


class _AlertingSSLObject(ssl.SSLObject):
    """A server-side TLS session that sends the alert of a failed handshake (``ServerContext``)."""

    _outgoing: ssl.MemoryBIO | None = None
    _alert_to: Any = None  # the accepted connection's transport

    def do_handshake(self) -> None:
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise
        except ssl.SSLError:
            if self._outgoing is not None and self._outgoing.pending and self._alert_to is not None:
                self._alert_to.write(self._outgoing.read())
            raise


class ServerContext(ssl.SSLContext):
    """A listener's TLS context.  Kafka's ``SslTransportLayer.handshakeFailure`` flushes the alert
    OpenSSL/the JSSE engine wrote (unknown_ca, certificate_expired, certificate_required ...) before
    closing, so the client reports an SSL authentication failure; asyncio closes a failed handshake's
    connection with the alert still unsent, so ``wrap_bio`` hands each session the transport set in
    ``alert_to`` just before (``tls.TlsHandshake``, in the same step of the event loop) to send it on."""

    sslobject_class = _AlertingSSLObject
    alert_to: Any = None

    def wrap_bio(self, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO, server_side: bool = False,
                 server_hostname: str | bytes | None = None, session: ssl.SSLSession | None = None) -> ssl.SSLObject:
        obj = super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)
        if isinstance(obj, _AlertingSSLObject):
            obj._outgoing, obj._alert_to, self.alert_to = outgoing, self.alert_to, None
        return obj


def listener_ssl_configs(config: Mapping[str, Any], listener: str) -> dict[str, Any]:
    """The ``ssl.*`` configs of one listener: ``listener.name.<listener>.ssl.X`` over ``ssl.X``."""
    prefix = f"listener.name.{listener.lower()}."
    out = {k: config[k] for k in config if k.startswith("ssl.")}
    for k in config:
        if k.startswith(prefix):
            out[k[len(prefix):]] = config[k]
    return out


def _openssl_cipher(name: str) -> str:
    """A Java/IANA cipher suite name (``TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256``) as OpenSSL's
    (``ECDHE-RSA-AES128-GCM-SHA256``); an OpenSSL name is kept."""
    m = re.fullmatch(r"(?:TLS|SSL)_(\w+?)_WITH_(AES_(128|256)_(GCM|CBC)_(SHA\d*)|CHACHA20_POLY1305_SHA256)", name)
    if m is None or m.group(1) not in _KX:
        return name
    kx = _KX[m.group(1)]
    if m.group(2).startswith("CHACHA20"):
        return f"{kx}CHACHA20-POLY1305"
    bits, mode, mac = m.group(3), m.group(4), m.group(5)
    if mode == "GCM":
        return f"{kx}AES{bits}-GCM-{mac}"
    return f"{kx}AES{bits}-{'SHA' if mac == 'SHA' else mac}"


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise TlsConfigError(f"{what} {path}: {e.strerror}") from None


def _pkcs12(data: bytes, password: str | None, what: str) -> tuple[Any, list[Any]]:
    """(key or None, [certificates]) of a PKCS#12 file."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError as e:
        raise TlsConfigError(f"{what}: not a PKCS12 store or a wrong password ({e})") from None
    return key, ([cert] if cert is not None else []) + list(extra)


def _pem(certs: list[Any]) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


def _load_keystore(ctx: ssl.SSLContext, c: Mapping[str, Any], listener: str) -> None:
    from cryptography.hazmat.primitives import serialization

    kind = (c.get("ssl.keystore.type") or "JKS").upper()
    location = c.get("ssl.keystore.location") or ""
    key_password = c.get("ssl.key.password") or None
    where = f"listener {listener}: ssl.keystore.location"
    if kind == "PEM":
        chain, key = c.get("ssl.keystore.certificate.chain") or "", c.get("ssl.keystore.key") or ""
        if location and (chain or key):  # DefaultSslEngineFactory's check
            raise TlsConfigError(f"listener {listener}: ssl.keystore.location and ssl.keystore.certificate.chain/"
                              "ssl.keystore.key cannot both be set")
        if location:
            data = _read(location, where)
            chain_pem, key_pem = data, data
        elif chain and key:
            chain_pem, key_pem = chain.encode(), key.encode()
        else:
            raise TlsConfigError(f"listener {listener} is TLS: set ssl.keystore.location, or "
                              "ssl.keystore.certificate.chain and ssl.keystore.key (ssl.keystore.type=PEM)")
        password = key_password
    elif kind in ("PKCS12", "JKS"):
        if not location:
            raise TlsConfigError(f"listener {listener} is TLS: set ssl.keystore.location (ssl.keystore.type={kind})")
        data = _read(location, where)
        store_password = c.get("ssl.keystore.password") or None
        if kind == "JKS" and data[:4] == b"\xfe\xed\xfe\xed":
            raise TlsConfigError(f"{where} {location} is a JKS keystore: the mock reads PKCS12 and PEM keystores "
                              "(keytool -importkeystore -deststoretype PKCS12 converts it)")
        key, certs = _pkcs12(data, store_password, f"{where} {location}")
        if key is None or not certs:
            raise TlsConfigError(f"{where} {location} has no private key with its certificate")
        chain_pem = _pem(certs)
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        password = None
    else:
        raise TlsConfigError(f"listener {listener}: ssl.keystore.type {kind} is not served (PEM, PKCS12)")
    # load_cert_chain reads files only: a private directory that is gone once they are read
    with tempfile.TemporaryDirectory(prefix="mockbroker-tls-") as tmp:
        certfile, keyfile = os.path.join(tmp, "chain.pem"), os.path.join(tmp, "key.pem")
        for path, data in ((certfile, chain_pem), (keyfile, key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        try:
            ctx.load_cert_chain(certfile, keyfile, password)
        except (ssl.SSLError, ValueError) as e:
            raise TlsConfigError(f"listener {listener}: the keystore's key and certificate chain cannot be "
                              f"used: {e}") from None


def _load_truststore(ctx: ssl.SSLContext, c: Mapping[str, Any], listener: str) -> bool:
    """Trusted CAs for client certificates; False when none are configured."""
    kind = (c.get("ssl.truststore.type") or "JKS").upper()
    location = c.get("ssl.truststore.location") or ""
    inline = c.get("ssl.truststore.certificates") or ""
    if not location and not inline:
        return False
    where = f"listener {listener}: ssl.truststore.location {location}"
    if kind == "PEM":
        if location and inline:
            raise TlsConfigError(f"listener {listener}: ssl.truststore.location and ssl.truststore.certificates "
                              "cannot both be set")
        pem = inline.encode() if inline else _read(location, where)
    elif kind in ("PKCS12", "JKS"):
        if inline:
            raise TlsConfigError(f"listener {listener}: ssl.truststore.certificates needs ssl.truststore.type=PEM")
        _, certs = _pkcs12(_read(location, where), c.get("ssl.truststore.password") or None, where)
        pem = _pem(certs)
    else:
        raise TlsConfigError(f"listener {listener}: ssl.truststore.type {kind} is not served (PEM, PKCS12)")
    try:
        ctx.load_verify_locations(cadata=pem.decode("ascii", "replace"))
    except ssl.SSLError as e:
        raise TlsConfigError(f"listener {listener}: the truststore has no usable certificate: {e}") from None
    return True


def server_context(config: Mapping[str, Any], listener: str) -> ServerContext:
    """The TLS server context of one SSL/SASL_SSL listener (``DefaultSslEngineFactory.createSslContext``
    and ``createSslEngine`` in server mode); a ``TlsConfigError`` for anything Kafka would refuse at start."""
    c = listener_ssl_configs(config, listener)
    ctx = ServerContext(ssl.PROTOCOL_TLS_SERVER)
    protocols = [p.strip() for p in c.get("ssl.enabled.protocols") or [] if p.strip()]
    unknown = [p for p in protocols if p not in _PROTOCOLS]
    if unknown or not protocols:
        raise TlsConfigError(f"listener {listener}: ssl.enabled.protocols {','.join(protocols) or '(empty)'}: "
                          f"the mock serves {', '.join(_PROTOCOLS)}")
    versions = sorted(_PROTOCOLS[p] for p in protocols)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    suites = [s.strip() for s in c.get("ssl.cipher.suites") or [] if s.strip()]
    if suites:
        tls12 = [_openssl_cipher(s) for s in suites if s not in _TLS13_SUITES]
        if tls12:
            try:
                ctx.set_ciphers(":".join(tls12))
            except ssl.SSLError:
                raise TlsConfigError(f"listener {listener}: ssl.cipher.suites {','.join(suites)}: none is "
                                  "known to OpenSSL") from None
        elif ctx.maximum_version == ssl.TLSVersion.TLSv1_3:
            ctx.minimum_version = ssl.TLSVersion.TLSv1_3  # only TLS 1.3 suites named: no TLS 1.2 suite left
    client_auth = (c.get("ssl.client.auth") or "none").lower()
    _load_keystore(ctx, c, listener)
    trusted = _load_truststore(ctx, c, listener)
    if client_auth != "none" and not trusted:
        raise TlsConfigError(f"listener {listener}: ssl.client.auth={client_auth} needs a truststore "
                          "(ssl.truststore.location or ssl.truststore.certificates)")
    ctx.verify_mode = _CLIENT_AUTH[client_auth]
    return ctx


# -- principals ---------------------------------------------------------------------------------------
class NoMatchingRule(Exception):
    """No ``ssl.principal.mapping.rules`` rule applies to a certificate's subject."""


_RULE_SPLITTER = re.compile(r"\s*((DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?))\s*(,\s*|$)")
_RULE_PARSER = re.compile(r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)")


class SslPrincipalMapper:
    """``ssl.principal.mapping.rules`` (Kafka's ``SslPrincipalMapper``): rules tried in order, the first
    that applies names the principal; ``DEFAULT`` is the subject itself; ``RULE:pattern/replacement/[LU]``
    applies when the pattern matches the whole subject and replaces every match (Java's ``replaceAll``,
    ``$n`` group references), then lower- or upper-cases."""

    def __init__(self, rules: str | None) -> None:
        text = "DEFAULT" if rules is None else rules
        self.rules: list[tuple[re.Pattern[str], str, str] | None] = []  # None: DEFAULT
        for m in _RULE_SPLITTER.finditer(text.strip()):
            rule = m.group(1)
            if not rule:
                continue
            p = _RULE_PARSER.match(rule)
            if p is None or p.end() != len(rule):
                raise TlsConfigError(f"ssl.principal.mapping.rules: invalid rule: {rule}")
            if p.group(1) is not None:
                self.rules.append(None)
            elif p.group(2) is not None:
                try:
                    pattern = re.compile(p.group(2))
                except re.error as e:
                    raise TlsConfigError(f"ssl.principal.mapping.rules: invalid rule {rule}: {e}") from None
                self.rules.append((pattern, p.group(4), p.group(6)))
            else:
                raise TlsConfigError(f"ssl.principal.mapping.rules: invalid rule: {rule}")

    def name(self, dn: str) -> str:
        for rule in self.rules:
            if rule is None:
                return dn
            pattern, replacement, case = rule
            if pattern.fullmatch(dn) is None:
                continue
            result = pattern.sub(lambda m: _java_replacement(m, replacement), dn)
            return result.lower() if case == "L" else result.upper() if case == "U" else result
        raise NoMatchingRule(f"No rules apply to {dn}")


def _java_replacement(m: re.Match[str], replacement: str) -> str:
    """Java's ``Matcher.appendReplacement``: ``\\x`` is x, ``$n`` group n (digits taken while the number
    stays a group; a reference past the last group is literal, as ``escapeLiteralBackReferences`` makes it)."""
    out: list[str] = []
    groups = m.re.groups
    i = 0
    while i < len(replacement):
        ch = replacement[i]
        if ch == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
        elif ch == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            j = i + 2
            n = int(replacement[i + 1])
            while j < len(replacement) and replacement[j].isdigit() and n * 10 + int(replacement[j]) <= groups:
                n = n * 10 + int(replacement[j])
                j += 1
            if n > groups or replacement[i + 1] == "0" and groups == 0:
                out.append(replacement[i:j])
            else:
                out.append(m.group(n) or "")
            i = j
        else:
            out.append(ch)
            i += 1
    return "".join(out)
