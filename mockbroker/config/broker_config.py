"""Broker configuration under Kafka's own names.

Sources, later ones winning: defaults, a TOML file, environment variables
(``MOCKBROKER_`` + the key upper-cased with dots as underscores, e.g.
``MOCKBROKER_LOG_RETENTION_MS``), ``-c key=value`` / the ``config`` dict.
A key of Kafka 4.4's broker configuration that mockbroker has no counterpart for
(``num.io.threads``, ``replica.selector.class``, ``sasl.jaas.config``, a listener-prefixed
``listener.name.NAME.KEY``: what ``data/kafka-4.4.0-configs.json`` records of Kafka's broker
``ConfigDef``) is accepted as Kafka accepts it (its value checked by Kafka's type and validator),
described by DescribeConfigs as a static broker config, and logged once at start as having no effect
(``BrokerConfig.without_effect``), so a configuration written for Kafka starts mockbroker.  Other
unknown keys are refused with the list of close matches.  Keys starting with ``mock.`` are
simulation knobs with no Kafka counterpart.

TOML may use quoted dotted keys (``"log.retention.ms" = 1000``) or tables
(``[log.retention]`` / ``ms = 1000``); both flatten to the same key.

Over 500 lines on purpose: most of it is ``CONFIG_DEF``, the one table of every
key (type, default, validator, documentation) that ``scripts/config_docs.py``
turns into docs/configuration.md; the loading code is short.
"""

from __future__ import annotations

import difflib
import importlib.util
import ipaddress
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from protocol.registry import KAFKA_RELEASES, TRANSACTION_VERSION_FEATURE

from ..security.authorizer import STANDARD_AUTHORIZER, acl_from_spec
from ..common.faults import parse_rule
from ..quota.entities import QuotaStore, parse_quota_spec

ENV_PREFIX = "MOCKBROKER_"


class ConfigError(ValueError):
    """A configuration the broker refuses to start with."""


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "1", "yes", "on"):
        return True
    if s in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {v!r}")


def _int(v: Any) -> int:
    if isinstance(v, bool):
        raise ValueError(f"not an integer: {v!r}")
    if isinstance(v, int):
        return v
    return int(str(v).strip())


def _str(v: Any) -> str:
    return str(v)


def _float(v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError(f"not a number: {v!r}")
    return float(v)


LONG_MAX = (1 << 63) - 1


def _cleanup_policy(v: Any) -> str:
    """``log.cleanup.policy`` / ``cleanup.policy``: a list of delete and compact (Kafka's ValidList), kept as
    the comma-separated string Kafka reports."""
    items = _list(v)
    bad = [x for x in items if x not in ("delete", "compact")]
    if bad:
        raise ValueError(f"invalid cleanup.policy {bad}: delete and/or compact")
    return ",".join(items)


def _list(v: Any) -> list[str]:
    if isinstance(v, (list, tuple)):
        return [str(x).strip() for x in v if str(x).strip()]
    return [x.strip() for x in str(v).split(",") if x.strip()]


def _super_users(v: Any) -> list[str]:
    """``super.users``: principals separated by ';' (Kafka's), each TYPE:name."""
    items = [str(x).strip() for x in v] if isinstance(v, (list, tuple)) else str(v).split(";")
    users = [x.strip() for x in items if x.strip()]
    for u in users:
        if ":" not in u:
            raise ValueError(f"super.users: {u!r} is not a principal TYPE:name (e.g. User:alice)")
    return users


def _tables(v: Any, key: str, items_name: str, item_name: str,
            check: Callable[[dict[str, Any], int], object]) -> list[dict[str, Any]]:
    """A ``[[key]]`` list of tables (a TOML file), or a JSON array of them (``-c``, the environment),
    each checked by ``check(table, its 1-based number)`` (a ValueError naming ``item_name`` and the number)."""
    if isinstance(v, str):
        try:
            v = json.loads(v) if v.strip() else []
        except json.JSONDecodeError as e:
            raise ValueError(f"not a JSON array of {items_name}: {e}") from None
    if not (isinstance(v, (list, tuple)) and all(isinstance(x, Mapping) for x in v)):
        raise ValueError(f"a list of tables (TOML [[{key}]])")
    items = [dict(x) for x in v]
    for i, item in enumerate(items):
        try:
            check(item, i + 1)
        except ValueError as e:
            raise ValueError(f"{item_name} {i + 1}: {e}") from None
    return items


def _acls(v: Any) -> list[dict[str, Any]]:
    """``mock.acls``: ACL tables as POST /acls takes them (or a JSON array of them)."""
    return _tables(v, "mock.acls", "ACLs", "ACL", lambda item, _n: acl_from_spec(item))


def _authorizer(v: Any) -> str:
    """``authorizer.class.name``: empty (no authorizer) or Kafka's StandardAuthorizer, the one served."""
    name = str(v).strip()
    if name not in ("", STANDARD_AUTHORIZER):
        raise ValueError(f"the mock serves {STANDARD_AUTHORIZER} (or empty: none)")
    return name


# The KIP-848 server-side assignors mockbroker serves (group.consumer.assignors).
ASSIGNORS = ("uniform", "range")


def _assignors(v: Any) -> list[str]:
    items = _list(v)
    bad = [a for a in items if a not in ASSIGNORS]
    if bad or not items:
        raise ValueError(f"unknown assignor(s) {bad}: the mock serves uniform and range")
    return items


def parse_users(items: Iterable[str]) -> dict[str, str]:
    """``mock.sasl.users``: ``user:password`` items (the password may contain ':') -> {user: password}."""
    users: dict[str, str] = {}
    for item in items:
        user, sep, password = item.partition(":")
        if not sep or not user or not password:
            raise ValueError(f"mock.sasl.users item {item!r} is not user:password")
        if user in users:
            raise ValueError(f"mock.sasl.users names {user!r} twice")
        users[user] = password
    return users


def _users(v: Any) -> list[str]:
    items = _list(v)
    parse_users(items)  # validates user:password items
    return items


def _quotas(v: Any) -> list[dict[str, Any]]:
    items = parse_quota_spec(v) if isinstance(v, str) else [dict(x) for x in v]
    QuotaStore().load(items)  # validates keys, values and entities
    return items


def _admin_listener(v: Any) -> str:
    s = str(v).strip()
    if s:
        parse_host_port(s)
    return s


def _faults(v: Any) -> list[dict[str, Any]]:
    """``mock.faults``: fault rules as POST /faults takes them (a FaultRuleError is a ValueError)."""
    return _tables(v, "mock.faults", "rules", "rule", parse_rule)


# The SASL mechanisms mockbroker serves (sasl_mechanisms.MECHANISMS; a unit test keeps them equal).
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    parse: Callable[[Any], Any]
    default: Any
    doc: str
    at_least: float | None = None
    choices: tuple[str, ...] | None = None
    at_most: float | None = None  # Kafka's Range.between upper bound


# listener.security.protocol.map's default, Kafka's
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

# Defaults are Kafka 4.x broker defaults unless the doc says otherwise.
CONFIG_DEF: dict[str, ConfigKey] = {
    k.name: k
    for k in [
        ConfigKey("node.id", _int, 0, "Node id of the first broker; more brokers count up from it.", 0),
        ConfigKey("listeners", _str, "PLAINTEXT://127.0.0.1:9092",
                  "Listeners of the first broker, NAME://host:port items (more brokers add 1 to each port); "
                  "--host/--port override the first one."),
        ConfigKey("advertised.listeners", _str, "",
                  "NAME://host:port items clients are told to connect to, per listener (default: the listeners); "
                  "Metadata answers with the listener the request came on (docker-compose INTERNAL/EXTERNAL)."),
        ConfigKey("listener.security.protocol.map", _str, DEFAULT_PROTOCOL_MAP,
                  "Security protocol of each listener name, NAME:PROTOCOL items; PLAINTEXT, SSL, "
                  "SASL_PLAINTEXT and SASL_SSL are served."),
        ConfigKey("inter.broker.listener.name", _str, "",
                  "Checked as Kafka does (an advertised listener's name) when set; the simulated brokers "
                  "replicate in memory, not over it."),
        ConfigKey("socket.request.max.bytes", _int, 104857600, "Largest request frame accepted; larger closes the connection.", 1),
        ConfigKey("queued.max.request.bytes", _int, -1, "KIP-72 request memory pool size (-1: no pool).", None),
        ConfigKey("queued.max.requests", _int, 500,
                  "Accepted with Kafka's validation; bounds nothing here (requests are handled as they are "
                  "read: there is no request queue).", 1),
        ConfigKey("connections.max.idle.ms", _int, 600000, "Idle connections are closed after this long.", 1),
        # TLS of SSL and SASL_SSL listeners (tls.py); listener.name.<name>.ssl.X overrides ssl.X for one listener
        ConfigKey("ssl.keystore.type", _str, "JKS",
                  "PEM or PKCS12 (JKS, Kafka's default, is read as PKCS12, as Java's JKS keystore reads a "
                  "PKCS12 file; a real JKS file is refused).", None, ("JKS", "PKCS12", "PEM")),
        ConfigKey("ssl.keystore.location", _str, None,
                  "The broker's keystore file: PKCS12, or PEM with the private key and the certificate chain."),
        ConfigKey("ssl.keystore.password", _str, None, "Password of a PKCS12 keystore."),
        ConfigKey("ssl.key.password", _str, None, "Password of an encrypted PEM private key."),
        ConfigKey("ssl.keystore.certificate.chain", _str, None,
                  "The broker's certificate chain inline, PEM (ssl.keystore.type=PEM, with ssl.keystore.key)."),
        ConfigKey("ssl.keystore.key", _str, None,
                  "The broker's private key inline, PEM PKCS#8 (ssl.keystore.type=PEM)."),
        ConfigKey("ssl.truststore.type", _str, "JKS",
                  "PEM or PKCS12 (JKS read as PKCS12): the CAs client certificates are verified against.",
                  None, ("JKS", "PKCS12", "PEM")),
        ConfigKey("ssl.truststore.location", _str, None, "The truststore file (PEM certificates or PKCS12)."),
        ConfigKey("ssl.truststore.password", _str, None, "Password of a PKCS12 truststore."),
        ConfigKey("ssl.truststore.certificates", _str, None,
                  "Trusted certificates inline, PEM (ssl.truststore.type=PEM)."),
        ConfigKey("ssl.client.auth", _str, "none",
                  "Client certificates: none, requested (verified when given) or required.",
                  None, ("none", "requested", "required")),
        ConfigKey("ssl.enabled.protocols", _list, ["TLSv1.2", "TLSv1.3"],
                  "TLS versions offered: TLSv1.2 and/or TLSv1.3 (the lowest to the highest named)."),
        ConfigKey("ssl.protocol", _str, "TLSv1.3",
                  "Accepted with Kafka's default; ssl.enabled.protocols decides the versions offered."),
        ConfigKey("ssl.cipher.suites", _list, [],
                  "TLS 1.2 cipher suites, Java's names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) or OpenSSL's "
                  "(empty: OpenSSL's defaults); TLS 1.3 suites are named but all stay enabled (Python's ssl "
                  "cannot restrict them)."),
        ConfigKey("ssl.principal.mapping.rules", _str, "DEFAULT",
                  "RULE:pattern/replacement/[LU] and DEFAULT items mapping a client certificate's subject "
                  "(CN=...,OU=...) to its principal name, as Kafka's SslPrincipalMapper."),
        ConfigKey("sasl.enabled.mechanisms", _list, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
                  "SASL mechanisms of a SASL_PLAINTEXT listener: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 "
                  "(Kafka's default is GSSAPI, which the mock does not serve)."),
        ConfigKey("sasl.server.max.receive.size", _int, 524288,
                  "Largest frame accepted before SASL authentication completes; larger closes the connection."),
        ConfigKey("connection.failed.authentication.delay.ms", _int, 100,
                  "A failed authentication is answered and its connection closed after this delay.", 0),
        ConfigKey("authorizer.class.name", _authorizer, "",
                  "org.apache.kafka.metadata.authorizer.StandardAuthorizer: ACLs are kept and enforced as "
                  "Kafka's StandardAuthorizer does; empty (Kafka's default): none, the ACL APIs answer "
                  "SECURITY_DISABLED."),
        ConfigKey("super.users", _super_users, [],
                  "Principals the authorizer allows everything, ';'-separated (User:alice;User:bob)."),
        ConfigKey("mock.acls", _acls, [],
                  "ACLs at start (needs authorizer.class.name): [[mock.acls]] tables as POST /acls takes them: "
                  "resource_type, name, principal, operation, and pattern_type, host, permission."),
        ConfigKey("allow.everyone.if.no.acl.found", _bool, False,
                  "With the authorizer, a resource with no ACL at all is open to everyone (default: closed)."),
        ConfigKey("delegation.token.secret.key", _str, "",
                  "Secret key of delegation tokens (HmacSHA512); empty: delegation tokens are disabled "
                  "(DELEGATION_TOKEN_AUTH_DISABLED), as Kafka."),
        ConfigKey("delegation.token.max.lifetime.ms", _int, 604800000,
                  "A token can be renewed up to this long after it was issued.", 1),
        ConfigKey("delegation.token.expiry.time.ms", _int, 86400000,
                  "A token expires this long after it was issued or last renewed.", 1),
        ConfigKey("delegation.token.expiry.check.interval.ms", _int, 3600000,
                  "Expired tokens are removed at these intervals of the broker clock (the controller's sweep).",
                  1),
        ConfigKey("auto.create.topics.enable", _bool, True, "Create unknown topics on Metadata requests that allow it."),
        ConfigKey("broker.rack", _str, "",
                  "Rack of every simulated broker (one configuration serves them all): Metadata and "
                  "DescribeCluster answer it as each broker's rack; empty (Kafka's null): none."),
        ConfigKey("delete.topic.enable", _bool, True,
                  "false: DeleteTopics is refused (TOPIC_DELETION_DISABLED; INVALID_REQUEST below v3) and "
                  "deletes nothing, as Kafka's controller refuses it."),
        ConfigKey("num.partitions", _int, 1, "Partitions of an auto-created topic.", 1),
        ConfigKey("default.replication.factor", _int, 1, "Replication factor of an auto-created topic.", 1),
        ConfigKey("min.insync.replicas", _int, 1, "Default min.insync.replicas of topics.", 1),
        ConfigKey("replica.lag.time.max.ms", _int, 30000,
                  "A follower not caught up for this long leaves the ISR (checked every half of it).", 1),
        ConfigKey("message.max.bytes", _int, 1048588, "Default max.message.bytes of topics (largest batch).", 0),
        ConfigKey("log.retention.ms", _int, None, "Retention by time (overrides minutes and hours); -1 keeps forever.", -1),
        ConfigKey("log.retention.minutes", _int, None, "Retention by time in minutes (overrides hours).", -1),
        ConfigKey("log.retention.hours", _int, 168, "Retention by time in hours.", -1),
        ConfigKey("log.retention.bytes", _int, -1, "Retention by size per partition; -1 is unlimited.", -1),
        ConfigKey("log.segment.bytes", _int, 1073741824, "Segment size: retention drops whole segments, as Kafka.", 14),
        ConfigKey("log.roll.ms", _int, 604800000, "A segment older than this is rolled on the next append.", 1),
        ConfigKey("log.retention.check.interval.ms", _int, 300000, "How often retention runs.", 1),
        ConfigKey("log.message.timestamp.type", _str, "CreateTime", "CreateTime or LogAppendTime.", None, ("CreateTime", "LogAppendTime")),
        ConfigKey("log.message.timestamp.before.max.ms", _int, LONG_MAX,
                  "Default message.timestamp.before.max.ms of topics: on a CreateTime topic a record whose timestamp "
                  "is older than the broker's time by more than this is refused (INVALID_TIMESTAMP).", 0),
        ConfigKey("log.message.timestamp.after.max.ms", _int, 3600000,
                  "Default message.timestamp.after.max.ms of topics: on a CreateTime topic a record whose timestamp "
                  "is ahead of the broker's time by more than this is refused (INVALID_TIMESTAMP).", 0),
        ConfigKey("log.cleanup.policy", _cleanup_policy, "delete",
                  "Default cleanup.policy of topics: delete, compact, both (comma-separated) or empty "
                  "(keep all).", None),
        ConfigKey("log.cleaner.backoff.ms", _int, 15000,
                  "How long the log cleaner sleeps when no compacted log is dirty enough to clean.", 0),
        ConfigKey("log.cleaner.min.cleanable.ratio", _float, 0.5,
                  "Default min.cleanable.dirty.ratio of topics: a compacted log is cleaned once its dirty part "
                  "is this share of it (or max.compaction.lag.ms passed).", 0),
        ConfigKey("log.cleaner.delete.retention.ms", _int, 86400000,
                  "Default delete.retention.ms of topics: how long a tombstone (and an empty transaction's "
                  "marker) stays after the cleaning that first saw it.", 0),
        ConfigKey("log.cleaner.min.compaction.lag.ms", _int, 0,
                  "Default min.compaction.lag.ms of topics: a record stays uncompacted at least this long.", 0),
        ConfigKey("log.cleaner.max.compaction.lag.ms", _int, LONG_MAX,
                  "Default max.compaction.lag.ms of topics: a dirty record is compacted within this long "
                  "whatever the dirty ratio (and a compacted topic's active segment rolls after it).", 1),
        ConfigKey("log.cleaner.dedupe.buffer.size", _int, 134217728,
                  "Memory of the cleaner's offset map (24 bytes a key, 90 % usable): a pass maps at most that many "
                  "distinct keys of the dirty section and cleans up to the last one it mapped.", 0),
        ConfigKey("log.cleaner.io.buffer.load.factor", _float, 0.9,
                  "Share of the cleaner's offset map slots a pass fills before it stops mapping.", 0),
        ConfigKey("fetch.max.bytes", _int, 57671680, "Upper bound of one fetch response.", 0),
        ConfigKey("max.request.partition.size.limit", _int, 2000,
                  "Most partitions one DescribeTopicPartitions response lists (with the request's own limit, the "
                  "smaller); the rest are paged with its cursor.", 1),
        ConfigKey("max.incremental.fetch.session.cache.slots", _int, 1000, "Fetch sessions (KIP-227) kept at once.", 0),
        ConfigKey("producer.id.expiration.ms", _int, 86400000, "Idempotent producer state expires after this idle time.", 1),
        ConfigKey("producer.purgatory.purge.interval.requests", _int, 1000, "Purge interval of the produce purgatory.", 1),
        ConfigKey("fetch.purgatory.purge.interval.requests", _int, 1000, "Purge interval of the fetch purgatory.", 1),
        ConfigKey("group.min.session.timeout.ms", _int, 6000, "Smallest session.timeout.ms a JoinGroup may ask for.", 0),
        ConfigKey("group.max.session.timeout.ms", _int, 1800000, "Largest session.timeout.ms a JoinGroup may ask for.", 0),
        ConfigKey("group.initial.rebalance.delay.ms", _int, 3000,
                  "An Empty group's first rebalance waits this long for more members (extended while they come).", 0),
        ConfigKey("group.max.size", _int, 2147483647, "Members a classic group may have (GROUP_MAX_SIZE_REACHED).", 1),
        ConfigKey("group.consumer.heartbeat.interval.ms", _int, 5000,
                  "Heartbeat interval given to KIP-848 consumer group members (group config "
                  "consumer.heartbeat.interval.ms overrides it).", 1),
        ConfigKey("group.consumer.session.timeout.ms", _int, 45000,
                  "A KIP-848 member without a heartbeat this long is fenced (group config "
                  "consumer.session.timeout.ms).", 1),
        ConfigKey("group.consumer.assignment.interval.ms", _int, 1000,
                  "Least time between two target assignments of a KIP-848 consumer group, from Kafka 4.3 "
                  "(group config consumer.assignment.interval.ms; 0 computes one on every epoch bump, as "
                  "earlier releases did).", 0),
        ConfigKey("group.consumer.max.size", _int, 2147483647, "Members a KIP-848 consumer group may have.", 1),
        ConfigKey("group.consumer.assignors", _assignors, ["uniform", "range"],
                  "Server-side assignors of KIP-848 groups, the first the default: uniform, range."),
        ConfigKey("group.streams.heartbeat.interval.ms", _int, 5000,
                  "Heartbeat interval given to KIP-1071 streams group members (group config "
                  "streams.heartbeat.interval.ms overrides it).", 1),
        ConfigKey("group.streams.session.timeout.ms", _int, 45000,
                  "A streams group member without a heartbeat this long is fenced (group config "
                  "streams.session.timeout.ms).", 1),
        ConfigKey("group.streams.min.session.timeout.ms", _int, 45000,
                  "Smallest streams.session.timeout.ms a group may set (the broker's own "
                  "group.streams.session.timeout.ms is not held to it here).", 1),
        ConfigKey("group.streams.max.session.timeout.ms", _int, 60000,
                  "Largest streams.session.timeout.ms a group may set.", 1),
        ConfigKey("group.streams.min.heartbeat.interval.ms", _int, 5000,
                  "Smallest streams.heartbeat.interval.ms a group may set (the broker's own "
                  "group.streams.heartbeat.interval.ms is not held to it here).", 1),
        ConfigKey("group.streams.max.heartbeat.interval.ms", _int, 15000,
                  "Largest streams.heartbeat.interval.ms a group may set.", 1),
        ConfigKey("group.streams.num.standby.replicas", _int, 0,
                  "Standby replicas of each stateful task of a streams group (group config "
                  "streams.num.standby.replicas).", 0),
        ConfigKey("group.streams.initial.rebalance.delay.ms", _int, 3000,
                  "A streams group that was empty computes its first assignment this long after its first "
                  "member joined (ASSIGNMENT_DELAYED meanwhile; group config streams.initial.rebalance.delay.ms).", 0),
        ConfigKey("group.streams.assignment.interval.ms", _int, 1000,
                  "Least time between two target assignments of a streams group (group config "
                  "streams.assignment.interval.ms).", 0),
        ConfigKey("group.streams.task.offset.interval.ms", _int, 60000,
                  "How often streams group members report their task offsets (group config "
                  "streams.task.offset.interval.ms).", 1),
        ConfigKey("group.streams.acceptable.recovery.lag", _int, 10000,
                  "Lag under which a streams task counts as caught up (group config "
                  "streams.acceptable.recovery.lag).", 0),
        ConfigKey("group.streams.max.size", _int, 2147483647, "Members a KIP-1071 streams group may have.", 1),
        ConfigKey("group.streams.topology.description.plugin.class", _str, "",
                  "Set (to any class name): streams groups keep the topology descriptions their members push "
                  "(StreamsGroupTopologyDescriptionUpdate, KIP-1331) and StreamsGroupDescribe returns them; "
                  "mockbroker keeps them in memory and never loads the class.  Empty: the API answers "
                  "UNSUPPORTED_VERSION, as Kafka without a plugin."),
        # ShareGroupConfig (Kafka 4.4): the share groups' broker defaults and the bounds of their group configs
        ConfigKey("group.share.record.lock.duration.ms", _int, 30000,
                  "Acquisition lock duration of share-group records (group config share.record.lock.duration.ms).",
                  1000, at_most=3600000),
        ConfigKey("group.share.min.record.lock.duration.ms", _int, 15000,
                  "Smallest share.record.lock.duration.ms a group may set.", 1000, at_most=30000),
        ConfigKey("group.share.max.record.lock.duration.ms", _int, 60000,
                  "Largest share.record.lock.duration.ms a group may set.", 30000, at_most=3600000),
        ConfigKey("group.share.delivery.count.limit", _int, 5,
                  "Deliveries of a share-group record before it is archived (group config "
                  "share.delivery.count.limit).", 2, at_most=10),
        ConfigKey("group.share.min.delivery.count.limit", _int, 2,
                  "Smallest share.delivery.count.limit a group may set.", 2, at_most=5),
        ConfigKey("group.share.max.delivery.count.limit", _int, 10,
                  "Largest share.delivery.count.limit a group may set.", 5, at_most=25),
        ConfigKey("group.share.partition.max.record.locks", _int, 2000,
                  "Records in flight per share-partition (group config share.partition.max.record.locks).",
                  100, at_most=10000),
        ConfigKey("group.share.min.partition.max.record.locks", _int, 100,
                  "Smallest share.partition.max.record.locks a group may set.", 100, at_most=2000),
        ConfigKey("group.share.max.partition.max.record.locks", _int, 4000,
                  "Largest share.partition.max.record.locks a group may set.", 2000, at_most=10000),
        ConfigKey("group.share.heartbeat.interval.ms", _int, 5000,
                  "Heartbeat interval given to share group members (group config share.heartbeat.interval.ms).", 1),
        ConfigKey("group.share.min.heartbeat.interval.ms", _int, 5000,
                  "Smallest share.heartbeat.interval.ms a group may set.", 1),
        ConfigKey("group.share.max.heartbeat.interval.ms", _int, 15000,
                  "Largest share.heartbeat.interval.ms a group may set.", 1),
        ConfigKey("group.share.assignment.interval.ms", _int, 1000,
                  "Least time between two target assignments of a share group, from Kafka 4.3 (group config "
                  "share.assignment.interval.ms; 0 computes one on every epoch bump).", 0),
        ConfigKey("group.share.session.timeout.ms", _int, 45000,
                  "A share group member without a heartbeat this long is fenced (group config "
                  "share.session.timeout.ms).", 1),
        ConfigKey("group.share.min.session.timeout.ms", _int, 45000,
                  "Smallest share.session.timeout.ms a group may set.", 1),
        ConfigKey("group.share.max.session.timeout.ms", _int, 60000,
                  "Largest share.session.timeout.ms a group may set.", 1),
        ConfigKey("group.share.max.size", _int, 200, "Members a share group may have (GROUP_MAX_SIZE_REACHED).",
                  1, at_most=1000),
        ConfigKey("group.share.max.share.sessions", _int, 2000,
                  "Share sessions a broker keeps (SHARE_SESSION_LIMIT_REACHED past them).", 1),
        ConfigKey("telemetry.max.bytes", _int, 1048576,
                  "Largest PushTelemetry metrics payload (as sent, compressed or not: TELEMETRY_TOO_LARGE above it), "
                  "and of its decompressed metrics; told to clients in GetTelemetrySubscriptions (KIP-714).", 1),
        ConfigKey("mock.client.telemetry.enabled", _bool, False,
                  "Serve and advertise KIP-714 client telemetry (GetTelemetrySubscriptions, PushTelemetry) as a "
                  "Kafka broker with a ClientTelemetry metrics reporter does; pushed metrics are kept per client "
                  "instance (MockBroker.client_metrics(), GET /client-metrics).  Default off: ApiVersions then "
                  "equals a default Kafka broker's, which has no such reporter and does not list them."),
        ConfigKey("offset.metadata.max.bytes", _int, 4096, "Largest metadata string of a committed offset.", 0),
        ConfigKey("offsets.retention.minutes", _int, 10080,
                  "Committed offsets of a group expire this long after it became Empty (KIP-211).", 1),
        ConfigKey("offsets.retention.check.interval.ms", _int, 600000, "How often expired offsets are removed.", 1),
        ConfigKey("offsets.topic.num.partitions", _int, 50, "Partitions of __consumer_offsets (spread coordinators).", 1),
        ConfigKey("offsets.topic.replication.factor", _int, 3,
                  "Replicas of each __consumer_offsets partition (capped at the broker count); a coordinator "
                  "moves to the next replica when its broker stops.", 1),
        ConfigKey("transaction.max.timeout.ms", _int, 900000,
                  "Largest transaction.timeout.ms an InitProducerId may ask for (INVALID_TRANSACTION_TIMEOUT).", 1),
        ConfigKey("transactional.id.expiration.ms", _int, 604800000,
                  "A transactional id with no transaction this long after its last update is forgotten.", 1),
        ConfigKey("transaction.state.log.num.partitions", _int, 50,
                  "Partitions of __transaction_state (spread transaction coordinators).", 1),
        ConfigKey("transaction.state.log.replication.factor", _int, 3,
                  "Replicas of each __transaction_state partition (capped at the broker count); a transaction "
                  "coordinator moves to the next replica when its broker stops.", 1),
        ConfigKey("transaction.state.log.min.isr", _int, 2,
                  "min.insync.replicas of __transaction_state; accepted as Kafka's, but that log's replication "
                  "is not simulated (a transition is written at once), so it changes nothing.", 1),
        ConfigKey("transaction.abort.timed.out.transaction.cleanup.interval.ms", _int, 10000,
                  "How often transactions older than their transaction.timeout.ms are aborted.", 1),
        ConfigKey("transaction.remove.expired.transaction.cleanup.interval.ms", _int, 3600000,
                  "How often transactional ids past transactional.id.expiration.ms are removed.", 1),
        ConfigKey("transaction.partition.verification.enable", _bool, True,
                  "KIP-890: a transactional batch whose producer has no transaction open in the partition is "
                  "verified with the coordinator before it is appended (Produce v0-11; at v12+ the partition "
                  "is added to the transaction that way whatever this says)."),
        ConfigKey("add.partitions.to.txn.retry.backoff.ms", _int, 20,
                  "KIP-890 part 2: a Produce v12+ whose partitions the coordinator cannot add yet "
                  "(CONCURRENT_TRANSACTIONS: the last transaction's markers are being written) asks again "
                  "after this long, inside the broker.", 1),
        ConfigKey("add.partitions.to.txn.retry.backoff.max.ms", _int, 100,
                  "How long (at most request.timeout.ms, 30 s) those asks go on before the Produce is "
                  "answered CONCURRENT_TRANSACTIONS.", 0),
        ConfigKey("quota.window.num", _int, 11, "Samples of the quota rate (10 whole windows + the current one).", 1),
        ConfigKey("quota.window.size.seconds", _int, 1, "Length of one quota sample.", 1),
        ConfigKey("controller.quota.window.num", _int, 11, "Samples of the controller mutation quota.", 1),
        ConfigKey("controller.quota.window.size.seconds", _int, 1, "Length of one controller mutation sample.", 1),
        ConfigKey("mock.throttle.mode", _str, "", "mute (KIP-219), delay (Kafka < 2.0) or observe; default by mock.kafka.version.",
                  None, ("", "mute", "delay", "observe")),
        ConfigKey("mock.quotas", _quotas, [], "Client quotas at start: [[mock.quotas]] tables (user, client-id, keys) "
                  "or 'users/U/clients/C:producer_byte_rate=N,...;...'."),
        ConfigKey("mock.num.brokers", _int, 1, "Brokers simulated in this process (one listener each).", 1),
        ConfigKey("mock.replication.lag.ms", _int, 0,
                  "How long followers take to catch up after an append: acks=all produces, transaction markers "
                  "(so the transaction's completion) and the high watermark and last stable offset wait for "
                  "it.", 0),
        ConfigKey("log.dirs", _list, ["/tmp/kafka-logs"],
                  "The log directories of every broker (names only: logs stay in memory); DescribeLogDirs lists "
                  "them and AlterReplicaLogDirs moves replicas between them (Kafka: unset, log.dir's "
                  "/tmp/kafka-logs)."),
        ConfigKey("mock.log.dir.total.bytes", _int, 1 << 40,
                  "The size of the volume each log directory is on (DescribeLogDirs' total bytes; usable bytes "
                  "are this less the logs in it).", 1),
        ConfigKey("mock.txn.marker.latency.ms", _int, 0,
                  "How long the transaction coordinator's WriteTxnMarkers takes to reach the partition leaders "
                  "(Kafka sends it over the network from its marker sender thread): a producer that begins its "
                  "next transaction at once meets the last one's markers pending (its Produce v12+ waits in the "
                  "broker's add.partitions.to.txn retries, its AddPartitionsToTxn gets CONCURRENT_TRANSACTIONS); "
                  "0: at once.", 0),
        ConfigKey("mock.kafka.version", _str, "4.4",
                  "Kafka release whose ApiVersions answer is given: 3.7, 3.8, 3.9, 4.0, 4.1, 4.2, 4.3 or 4.4, as "
                  "real brokers of 3.7.2, 3.8.1, 3.9.2, 4.0.2, 4.1.2, 4.2.2, 4.3.1 and 4.4.0 answer it (API keys, "
                  "version ranges, features), cut to the APIs and versions mockbroker serves; 1.1, 2.0 or 2.8: "
                  "franz-go's version tables, no features.",
                  None, tuple(KAFKA_RELEASES)),
        ConfigKey("mock.transaction.version", _str, "",
                  "The transaction.version feature level finalized in ApiVersions: 0, 1 or 2 (2: KIP-890 part 2, "
                  "epoch bump per transaction, partitions added by Produce v12+); default the release's "
                  "(2 for 4.x, 0 before, where only 0 is accepted).", None, ("", "0", "1", "2")),
        ConfigKey("mock.produce.check.records", _bool, True,
                  "Walk each produced batch's records to check its record count, as Kafka's LogValidator "
                  "iterates them (a compressed batch is decompressed), reading their timestamps and, on a "
                  "compacted topic, key lengths on the way; false trusts the batch header (faster; a lying count "
                  "then moves the log end offset, the base and max timestamps stand for the records' and keyless "
                  "records reach a compacted topic)."),
        ConfigKey("mock.cluster.id", _str, "mockbroker-cluster-0001", "Cluster id reported in Metadata and DescribeCluster."),
        ConfigKey("mock.journal.max.entries", _int, 100000,
                  "Request journal records kept in memory (oldest dropped); 0 keeps all.", 0),
        ConfigKey("mock.journal.dir", _str, "",
                  "Write every request's journal record to JSON Lines files in this directory (docs/journal.md).", None),
        ConfigKey("mock.journal.segment.bytes", _int, 64 * 1024 * 1024,
                  "A journal file is closed (and compressed) once it holds this many bytes.", 1024),
        ConfigKey("mock.journal.queue.records", _int, 100000,
                  "Journal records waiting to be written; when full, records are dropped and counted.", 1),
        ConfigKey("mock.admin.listener", _admin_listener, "",
                  "HOST:PORT of the admin HTTP API (off when empty; port 0 picks a free one).", None),
        ConfigKey("mock.admin.allow.remote", _bool, False,
                  "Allow the admin API on an address that is not loopback (needs mock.admin.token)."),
        ConfigKey("mock.admin.token", _str, "",
                  "Bearer token every admin API request must carry (Authorization: Bearer TOKEN); empty: none. "
                  "Required when mock.admin.allow.remote=true."),
        ConfigKey("mock.admin.hosts", _list, [],
                  "Host names the admin API answers besides loopback names and its listener's address "
                  "(e.g. a compose service name); any other Host header is refused (DNS rebinding)."),
        ConfigKey("mock.clock", _str, "system",
                  "system, or manual: time moves only when advanced (MockBroker.advance, POST /clock/advance).",
                  None, ("system", "manual")),
        ConfigKey("mock.event.loop", _str, "asyncio",
                  "The event loop the brokers run on: asyncio (the standard library's), or uvloop (libuv; "
                  "the optional extra mockbroker[uvloop], refused at start when it is not installed; no TLS "
                  "listeners).",
                  None, ("asyncio", "uvloop")),
        ConfigKey("mock.faults", _faults, [],
                  "Fault rules at start: [[mock.faults]] tables as POST /faults takes them (docs/admin.md)."),
        ConfigKey("mock.topics", _list, [], "Topics created at start: name[:partitions[:replication]] items."),
        ConfigKey("mock.sasl.users", _users, [], "Users of a SASL_PLAINTEXT listener: user:password items "
                  "(the same users for PLAIN and SCRAM; SCRAM credentials are derived at start)."),
    ]
}


def _env_name(key: str) -> str:
    return ENV_PREFIX + key.replace(".", "_").upper()


_ENV_TO_KEY = {_env_name(k): k for k in CONFIG_DEF}


def _kafka_broker_keys() -> Mapping[str, Any]:
    """Kafka 4.4's broker ``ConfigDef`` keys as recorded (``config_defs``: read on first use, not at import:
    most configurations never name a key mockbroker lacks)."""
    from .config_defs import load  # noqa: PLC0415 - the recorded definitions, only when needed

    return load().keys["broker"]


def _env_key(name: str) -> str | None:
    """The configuration key of a ``MOCKBROKER_`` environment variable: mockbroker's, else Kafka's."""
    key = _ENV_TO_KEY.get(name)
    if key is None:
        key = next((k for k in _kafka_broker_keys() if _env_name(k) == name), None)
    return key


# listener.name.<name>.<key>, and for SASL listener.name.<name>.<mechanism>.<sasl key> (Kafka's
# ListenerName.configPrefix and saslMechanismPrefix)
_LISTENER_ANY = re.compile(r"listener\.name\.[A-Za-z0-9_-]+\.(?:[A-Za-z0-9_-]+\.(?=sasl\.))?(.+)")


# Kafka-only keys mockbroker does read (through the config catalogue's broker values): None for their whole
# effect, else what they are read for (logged at start as their only effect)
_GROUP_BOUND = "the bounds IncrementalAlterConfigs holds group configs to (the group coordinators do not read it)"
KAFKA_ONLY_READ: dict[str, str | None] = {
    "share.coordinator.state.topic.num.partitions": None,  # the share coordinator's state partitions
    "share.coordinator.state.topic.replication.factor": None,
    **{f"group.{kind}.{bound}.{name}": _GROUP_BOUND
       for kind, names in (("consumer", ("session.timeout.ms", "heartbeat.interval.ms", "assignment.interval.ms")),
                           ("share", ("assignment.interval.ms",)), ("streams", ("assignment.interval.ms",)))
       for name in names for bound in ("min", "max")},
    "group.streams.max.standby.replicas": _GROUP_BOUND,
    "group.streams.max.warmup.replicas": _GROUP_BOUND,
    "group.streams.min.task.offset.interval.ms": _GROUP_BOUND,
    "group.streams.assignors": "the assignors a streams group config may name (the coordinator uses its own)",
}


def kafka_only_key(key: str) -> bool:
    """Whether ``key`` is a Kafka 4.4 broker config mockbroker has no key of its own for (possibly with a
    listener prefix): accepted, without effect."""
    if key in CONFIG_DEF or key.startswith("mock.") or _LISTENER_PREFIXED.fullmatch(key):
        return False
    keys = _kafka_broker_keys()
    if key in keys:
        return True
    m = _LISTENER_ANY.fullmatch(key)
    return m is not None and m.group(1) in keys


def _sensitive(key: str) -> bool:
    """Whether Kafka's definition of ``key`` (or of the key a listener prefix names) is a PASSWORD."""
    keys = _kafka_broker_keys()
    m = _LISTENER_ANY.fullmatch(key)
    d = keys.get(key) or (keys.get(m.group(1)) if m is not None else None)
    return d is not None and d.type == "PASSWORD"


def _kafka_string_value(raw: Any) -> str:
    """A TOML, environment or ``-c`` value as the string Kafka's properties file would hold."""
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, (list, tuple)):
        return ",".join(_kafka_string_value(x) for x in raw)
    return str(raw)


def parse_kafka_only(key: str, raw: Any, where: str) -> str:
    """A Kafka-only key's value as a string, checked as ``KafkaConfig`` checks it at start (``ConfigDef``'s
    type and validator; a listener-prefixed one is taken as it is, as Kafka reads it only where it is
    used)."""
    from .config_defs import ConfigValueError  # noqa: PLC0415 - with _kafka_broker_keys

    value = _kafka_string_value(raw)
    d = _kafka_broker_keys().get(key)
    if d is not None:
        try:
            d.parse(value)
        except ConfigValueError as e:
            raise ConfigError(f"invalid value {value!r} for {key} ({where}): {e}") from None
    return value


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


# listener.name.<name>.ssl.X: one listener's ssl.X (Kafka's ListenerName.configPrefix)
_LISTENER_PREFIXED = re.compile(r"listener\.name\.[A-Za-z0-9_-]+\.(ssl\..+)")


def parse_value(key: str, raw: Any, where: str) -> Any:
    """``raw`` as ``key``'s value, checked as at start-up (``ConfigError`` naming ``where``)."""
    prefixed = _LISTENER_PREFIXED.fullmatch(key)
    d = CONFIG_DEF.get(prefixed.group(1) if prefixed else key)
    if d is None:
        raise _unknown(key, where)
    try:
        value = d.parse(raw)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"invalid value {raw!r} for {key} ({where}): {e}") from None
    if d.at_least is not None and value is not None and value < d.at_least:
        raise ConfigError(f"invalid value {value!r} for {key} ({where}): must be at least {d.at_least:g}")
    if d.at_most is not None and value is not None and value > d.at_most:
        raise ConfigError(f"invalid value {value!r} for {key} ({where}): must be no more than {d.at_most:g}")
    if d.choices and value not in d.choices:
        raise ConfigError(f"invalid value {value!r} for {key} ({where}): one of {', '.join(d.choices)}")
    return value


def _unknown(key: str, where: str) -> ConfigError:
    close = difflib.get_close_matches(key, CONFIG_DEF.keys(), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return ConfigError(f"unknown configuration key {key!r} ({where}){hint}")


class BrokerConfig(Mapping[str, Any]):
    """Validated broker configuration; read with ``cfg["log.retention.ms"]``."""

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {k: d.default for k, d in CONFIG_DEF.items()}
        self._explicit: set[str] = set()
        self._dynamic: dict[str, Any] = {}  # cluster-default dynamic configs (DynamicBrokerConfig), parsed
        self._per_broker: dict[int, dict[str, Any]] = {}  # per-broker dynamic configs, parsed
        self._kafka_only: dict[str, tuple[str, str]] = {}  # Kafka's keys mockbroker lacks: (value, where)
        if values:
            self._apply(values, "config")
        self._check()

    @classmethod
    def load(
        cls,
        file: str | None = None,
        overrides: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> "BrokerConfig":
        merged: dict[str, Any] = {}
        sources: dict[str, str] = {}
        if file:
            import tomllib  # only for a configuration file: its regexes cost ~5-10 ms of every start

            try:
                with open(file, "rb") as f:
                    data = _flatten(tomllib.load(f))
            except OSError as e:
                raise ConfigError(f"cannot read config file {file}: {e.strerror}") from None
            except tomllib.TOMLDecodeError as e:
                raise ConfigError(f"config file {file} is not valid TOML: {e}") from None
            for k, v in data.items():
                merged[k] = v
                sources[k] = f"file {file}"
        env = os.environ if environ is None else environ
        for name, value in env.items():
            if not name.startswith(ENV_PREFIX):
                continue
            key = _env_key(name)
            if key is None:
                raise ConfigError(f"unknown configuration environment variable {name}")
            merged[key] = value
            sources[key] = f"environment {name}"
        for item in overrides:
            if "=" not in item:
                raise ConfigError(f"-c expects key=value, got {item!r}")
            k, v = item.split("=", 1)
            merged[k.strip()] = v.strip()
            sources[k.strip()] = "-c"
        for k, v in (extra or {}).items():
            merged[k] = v
            sources[k] = "config"
        self = cls.__new__(cls)
        self._values = {k: d.default for k, d in CONFIG_DEF.items()}
        self._explicit = set()
        self._dynamic = {}
        self._per_broker = {}
        self._kafka_only = {}
        for k, v in merged.items():
            self._apply({k: v}, sources[k])
        self._check()
        return self

    def _apply(self, values: Mapping[str, Any], where: str) -> None:
        for key, raw in values.items():
            if kafka_only_key(key):
                self._kafka_only[key] = (parse_kafka_only(key, raw, where), where)
                continue
            self._values[key] = parse_value(key, raw, where)
            self._explicit.add(key)

    @property
    def kafka_only(self) -> dict[str, str]:
        """The Kafka broker configs set that mockbroker has no key of its own for: name -> value as set."""
        return {k: v for k, (v, _where) in self._kafka_only.items()}

    def without_effect(self) -> list[str]:
        """One line for each Kafka-only key set that mockbroker does not simulate (whole or in part), logged
        at start; a sensitive value (a PASSWORD config, such as sasl.jaas.config) is not printed."""
        lines = []
        for key, (value, where) in self._kafka_only.items():
            read = KAFKA_ONLY_READ.get(key, "")
            if read is None:
                continue
            shown = "[hidden]" if _sensitive(key) else value
            effect = f"read only for {read}" if read else "no effect in mockbroker"
            lines.append(f"{key}={shown} ({where}): a Kafka 4.4 broker config, accepted and described; {effect}")
        return lines

    def _check(self) -> None:
        q = self["queued.max.request.bytes"]
        if q > 0 and q <= self["socket.request.max.bytes"]:
            # KafkaConfig: queued.max.request.bytes must be larger than socket.request.max.bytes
            raise ConfigError(
                f"queued.max.request.bytes ({q}) must be larger than socket.request.max.bytes "
                f"({self['socket.request.max.bytes']}) or <= 0"
            )
        # ShareGroupConfig.validate
        for hi, lo in (("group.share.max.delivery.count.limit", "group.share.delivery.count.limit"),
                       ("group.share.delivery.count.limit", "group.share.min.delivery.count.limit"),
                       ("group.share.max.partition.max.record.locks", "group.share.partition.max.record.locks"),
                       ("group.share.partition.max.record.locks", "group.share.min.partition.max.record.locks"),
                       ("group.share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms"),
                       ("group.share.max.record.lock.duration.ms", "group.share.record.lock.duration.ms"),
                       ("group.share.max.share.sessions", "group.share.max.size")):
            if self[hi] < self[lo]:
                raise ConfigError(f"{hi} must be greater than or equal to {lo}")
        tv, release = self["mock.transaction.version"], self["mock.kafka.version"]
        if tv and int(tv) > TRANSACTION_VERSION_FEATURE.get(release, (0, 0))[0]:
            raise ConfigError(f"mock.transaction.version={tv}: Kafka {release} has no transaction.version "
                              f"level {tv} (4.0 and later support 0-2)")
        if self["mock.event.loop"] == "uvloop" and importlib.util.find_spec("uvloop") is None:
            raise ConfigError("mock.event.loop=uvloop: uvloop is not installed "
                              "(pip install 'mockbroker[uvloop]', or mock.event.loop=asyncio)")
        for item in self["mock.topics"]:
            parse_topic_spec(item)
        self._check_listeners()
        admin = self["mock.admin.listener"]
        if admin and not self["mock.admin.allow.remote"] and not is_loopback(parse_host_port(admin)[0]):
            raise ConfigError(f"mock.admin.listener {admin!r} is not a loopback address: the admin API is "
                              "served only on 127.0.0.1/::1/localhost unless mock.admin.allow.remote=true "
                              "(with mock.admin.token set)")
        if self["mock.admin.allow.remote"] and not self["mock.admin.token"]:
            raise ConfigError("mock.admin.allow.remote=true needs mock.admin.token: anyone who can reach a "
                              "remote admin listener could otherwise stop brokers and inject faults")

    def _check_listeners(self) -> None:
        listeners = self.listeners()  # parses and checks listeners, advertised.listeners, the protocol map
        inter = self["inter.broker.listener.name"]
        if inter and inter.upper() not in {lst.name for lst in listeners if lst.advertised is not None}:
            raise ConfigError(  # KafkaConfig's check
                "inter.broker.listener.name must be a listener name defined in advertised.listeners. "
                f"The valid options based on currently configured listeners are "
                f"{','.join(lst.name for lst in listeners if lst.advertised is not None)}")
        delay, idle = self["connection.failed.authentication.delay.ms"], self["connections.max.idle.ms"]
        if delay >= idle:  # KafkaConfig's check
            raise ConfigError(f"connection.failed.authentication.delay.ms={delay} should always be less than "
                              f"connections.max.idle.ms={idle} to prevent failed authentication responses "
                              "from timing out")
        tls = [lst.name for lst in listeners if lst.protocol in ("SSL", "SASL_SSL")]
        if tls and self["mock.event.loop"] == "uvloop":
            # measured: with uvloop, clients' handshakes on tls.py's listeners end in an unexpected EOF
            # (tests/integration/test_tls_clients.py: 8 of 15 failed); the cause is not found yet
            raise ConfigError(f"mock.event.loop=uvloop serves no TLS listener ({', '.join(tls)}): "
                              "TLS is served on mock.event.loop=asyncio only")
        self._check_tls(listeners)
        if self["mock.acls"] and not self["authorizer.class.name"]:
            raise ConfigError("mock.acls needs an authorizer: set authorizer.class.name to "
                              f"{STANDARD_AUTHORIZER}")
        if not any(lst.protocol in SASL_PROTOCOLS for lst in listeners):
            return
        mechanisms = self["sasl.enabled.mechanisms"]
        if not mechanisms:
            raise ConfigError("a SASL listener needs sasl.enabled.mechanisms (no SASL mechanisms are enabled)")
        unknown = [m for m in mechanisms if m not in SASL_MECHANISMS]
        if unknown:
            raise ConfigError(f"sasl.enabled.mechanisms: {', '.join(unknown)} not served; "
                              f"the mock serves {', '.join(SASL_MECHANISMS)}")
        if not self["mock.sasl.users"]:
            raise ConfigError("a SASL listener needs users: set mock.sasl.users to user:password items")

    def _check_tls(self, listeners: list[Listener]) -> None:
        """Each SSL/SASL_SSL listener's TLS context and principal mapper, made once here (a ``ConfigError``
        for what Kafka refuses at start) and shared by every broker (``tls_contexts``, ``principal_mappers``)."""
        self.tls_contexts: dict[str, Any] = {}
        self.principal_mappers: dict[str, Any] = {}
        tls = [lst for lst in listeners if lst.protocol in TLS_PROTOCOLS]
        if not tls:
            return
        from ..security.tls_config import SslPrincipalMapper, TlsConfigError, listener_ssl_configs, server_context

        try:
            for lst in tls:
                self.tls_contexts[lst.name] = server_context(self, lst.name)
                rules = listener_ssl_configs(self, lst.name).get("ssl.principal.mapping.rules")
                self.principal_mappers[lst.name] = SslPrincipalMapper(rules)
        except TlsConfigError as e:
            raise ConfigError(str(e)) from None

    def listeners(self) -> list[Listener]:
        """The first broker's listeners, in ``listeners`` order, each with its advertised address."""
        return parse_listeners(self["listeners"], self["advertised.listeners"],
                               self["listener.security.protocol.map"])

    # Mapping protocol: a cluster-default dynamic value, else the static one
    def __getitem__(self, key: str) -> Any:
        dynamic = self._dynamic
        if dynamic and key in dynamic:
            return dynamic[key]
        return self._values[key]

    def static(self, key: str) -> Any:
        """The value from the defaults, file, environment and ``-c`` (what a dynamic one overrides)."""
        return self._values[key]

    def for_broker(self, key: str, node_id: int) -> Any:
        """``node_id``'s value: its own dynamic one (per-broker), else the cluster default's, else the static one."""
        own = self._per_broker.get(node_id)
        if own and key in own:
            return own[key]
        return self[key]

    def set_dynamic(self, node_id: int | None, values: Mapping[str, Any]) -> None:
        """The dynamic configs (``DynamicBrokerConfig``) of one broker (``node_id``) or of the cluster
        default (None), parsed, replacing the previous ones; ``config_catalog.py`` sets them."""
        if node_id is None:
            self._dynamic = dict(values)
        else:
            self._per_broker[node_id] = dict(values)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def is_explicit(self, key: str) -> bool:
        return key in self._explicit

    @property
    def throttle_mode(self) -> str:
        """mock.throttle.mode, or by release: Kafka < 2.0 delayed responses, >= 2.0 mutes (KIP-219)."""
        mode = self["mock.throttle.mode"]
        if mode:
            return str(mode)
        major, minor = (int(x) for x in self["mock.kafka.version"].split(".")[:2])
        return "delay" if (major, minor) < (2, 0) else "mute"

    @property
    def transaction_version(self) -> int:
        """mock.transaction.version, or the level a fresh cluster of mock.kafka.version finalizes."""
        level = self["mock.transaction.version"]
        if level:
            return int(level)
        release: str = self["mock.kafka.version"]
        return TRANSACTION_VERSION_FEATURE.get(release, (0, 0))[1]

    @property
    def retention_ms(self) -> int:
        """Kafka's precedence: log.retention.ms > .minutes > .hours (-1: forever)."""
        if self["log.retention.ms"] is not None:
            return int(self["log.retention.ms"])
        if self["log.retention.minutes"] is not None:
            m = self["log.retention.minutes"]
            return -1 if m < 0 else m * 60_000
        h = self["log.retention.hours"]
        return -1 if h < 0 else h * 3_600_000


def parse_topic_spec(item: str) -> tuple[str, int, int]:
    parts = item.split(":")
    try:
        name = parts[0]
        partitions = int(parts[1]) if len(parts) > 1 else 1
        rf = int(parts[2]) if len(parts) > 2 else 1
        if not name or partitions < 1 or rf < 1 or len(parts) > 3:
            raise ValueError
    except ValueError:
        raise ConfigError(f"mock.topics item {item!r} is not name[:partitions[:replication]]") from None
    return name, partitions, rf


SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")


@dataclass(frozen=True, slots=True)
class Listener:
    """One listener of a broker (Kafka's ``EndPoint`` with its advertised twin): the name clients'
    requests are answered for, the security protocol, the bound host and port, and the host and port
    advertised in Metadata (None: bound but not advertised, as Kafka allows)."""

    name: str
    protocol: str
    host: str
    port: int
    advertised: tuple[str, int] | None

    def for_broker(self, index: int) -> "Listener":
        """The same listener on the index-th simulated broker: every non-zero port plus index."""
        adv = self.advertised
        if adv is not None and adv[1]:
            adv = (adv[0], adv[1] + index)
        return Listener(self.name, self.protocol, self.host, self.port + index if self.port else 0, adv)


def parse_protocol_map(value: str) -> dict[str, str]:
    """``listener.security.protocol.map``: ``NAME:PROTOCOL`` items -> {NAME: PROTOCOL} (upper case)."""
    out: dict[str, str] = {}
    for item in (x.strip() for x in value.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip() or not protocol.strip():
            raise ConfigError(f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL")
        protocol = protocol.strip().upper()
        if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise ConfigError(f"listener.security.protocol.map: unknown security protocol {protocol!r} in {item!r}")
        out[name.strip().upper()] = protocol
    return out


def _endpoints(key: str, value: str, protocols: dict[str, str]) -> list[tuple[str, str, str, int]]:
    """``NAME://host:port`` items (a bare ``host:port`` is PLAINTEXT) -> (name, protocol, host, port),
    as Kafka's ``listenerListToEndPoints``: an empty host binds every address."""
    out = []
    for item in (x.strip() for x in value.split(",")):
        if not item:
            continue
        name, sep, rest = item.partition("://")
        if not sep:
            name, rest = "PLAINTEXT", item
        name = name.upper()
        protocol = protocols.get(name)
        if protocol is None:
            raise ConfigError(f"{key}: no security protocol defined for listener {name} "
                              "(add it to listener.security.protocol.map)")
        host, colon, port = rest.rpartition(":")
        try:
            n = int(port)
        except ValueError:
            n = -1
        if not colon or not 0 <= n <= 65535:
            raise ConfigError(f"{key}: listener {item!r} has no valid port")
        out.append((name, protocol, host.strip("[]"), n))
    return out


def parse_listeners(listeners: str, advertised: str = "", protocol_map: str = DEFAULT_PROTOCOL_MAP) -> list[Listener]:
    """``listeners`` with ``advertised.listeners`` and ``listener.security.protocol.map``, checked as
    KafkaConfig checks them (unique names and ports, advertised names a subset of the listeners', no
    advertised 0.0.0.0).  With ``advertised.listeners`` empty every listener advertises its bound
    address (an unspecified host: 127.0.0.1 or ::1, the mock's stand-in for the canonical host name)."""
    protocols = parse_protocol_map(protocol_map)
    bound = _endpoints("listeners", listeners, protocols)
    if not bound:
        raise ConfigError("listeners is empty: at least one NAME://host:port is needed")
    names = [b[0] for b in bound]
    if len(set(names)) != len(names):
        raise ConfigError(f"listeners {listeners!r}: each listener must have a different name")
    ports = [b[3] for b in bound if b[3]]
    if len(set(ports)) != len(ports):
        raise ConfigError(f"listeners {listeners!r}: each listener must have a different port")
    adv: dict[str, tuple[str, int]] = {}
    if advertised.strip():
        for name, protocol, host, port in _endpoints("advertised.listeners", advertised, protocols):
            if name in adv:
                raise ConfigError(f"advertised.listeners {advertised!r}: each listener must have a different name")
            if name not in names:
                raise ConfigError(
                    f"advertised.listeners listener names must be equal to or a subset of the ones defined in "
                    f"listeners. Found {name}. The valid options based on currently configured listeners are "
                    f"{','.join(names)}")
            if host == "0.0.0.0":
                raise ConfigError("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                                  "Use a routable IP address.")
            adv[name] = (host, port)
    else:
        adv = {name: (host, port) for name, _, host, port in bound}
    return [Listener(name, protocol, host, port, routable_address(adv[name]) if name in adv else None)
            for name, protocol, host, port in bound]


def routable_address(address: tuple[str, int]) -> tuple[str, int]:
    """An unspecified bind address (empty, 0.0.0.0, ::) as the loopback address clients can reach."""
    host, port = address
    if host in ("", "0.0.0.0"):
        return "127.0.0.1", port
    if host == "::":
        return "::1", port
    return host, port


def parse_host_port(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port)."""
    host, sep, port = value.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host:
        raise ValueError(f"{value!r} is not HOST:PORT")
    try:
        n = int(port)
    except ValueError:
        raise ValueError(f"{value!r} is not HOST:PORT") from None
    if not 0 <= n <= 65535:
        raise ValueError(f"port {n} out of range")
    return host, n


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
