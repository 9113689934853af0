"""The configuration catalogue: DescribeConfigs, IncrementalAlterConfigs and AlterConfigs at the model
level, as Kafka 4.4 answers them, for topics, brokers (per broker and the cluster default), broker
loggers, groups and client-metrics resources.

Mirrors ``kafka.server.ConfigHelper`` (describe), ``ConfigAdminManager.preprocess`` (what the broker
checks of an alteration before forwarding it), the controller's ``ConfigurationControlManager`` (the
operations, legacy replace-all, the ELR min.insync.replicas rules) and ``ControllerConfigurationValidator``
(``LogConfig.validate``, ``GroupConfig.validate``, ``ClientMetricsConfigs.validate``), and
``DynamicBrokerConfig`` (which broker configs are dynamic, per broker or cluster-wide).

What Kafka knows of each config -- its type, default, validator, documentation, synonyms and the order
DescribeConfigs lists them in -- is recorded from a real Kafka 4.4.0 (``config_defs.py``,
scripts/record_kafka_configs.py).  mockbroker's own values take the place of Kafka's where it has them:
a topic's overrides (``Topic.overrides``), its broker configuration (a key set in mockbroker's
configuration, or whose mockbroker default is not Kafka's, is a static broker config, source 4), the
broker's node id and listeners; the rest are Kafka's defaults.

Dynamic broker configs live here (per broker and cluster default, as the strings a client set) and are
handed, parsed, to ``BrokerConfig.set_dynamic`` for the keys mockbroker reads, so they take effect:
``log.retention.*``, ``log.segment.bytes``, ``log.roll.ms``,
``log.cleanup.policy``, ``log.message.timestamp.*``, ``log.cleaner.*``, ``message.max.bytes``,
``min.insync.replicas`` (the defaults of topics without an override), ``producer.id.expiration.ms``;
``on_change`` tells the cluster of the others it must act on (the cleaner's back-off).  Per-broker
dynamic values are described (source 2) and read through ``BrokerConfig.for_broker``; topic defaults
follow the cluster default (one log per partition here).

Handlers call, per resource: ``describe(node_id, type, name, keys, include_synonyms,
include_documentation)``, ``incremental_alter(node_id, type, name, ops, validate_only)`` and
``alter(node_id, type, name, configs, validate_only)``, after ``duplicate_resources`` for the request.
Each returns the error code and message of that resource (and DescribeConfigs' entries as wire dicts).

Over 500 lines on purpose: describe and alter of the five resource types share one model, its
operations and Kafka's validators; split by resource type they would each repeat them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode

from ..config.broker_config import CONFIG_DEF, BrokerConfig, ConfigError, parse_value
from ..config.config_defs import (
    ConfigKeyDef, ConfigValueError, KafkaConfigs, load, parse_configs, parse_type, to_string,
)
from ..state.metadata import ClusterMetadata, validate_topic_name

log = logging.getLogger("mockbroker.config_catalog")

# ConfigResource.Type
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
_TYPE_NAMES = {TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER", CLIENT_METRICS: "CLIENT_METRICS",
               GROUP: "GROUP"}
# DescribeConfigsResponse.ConfigSource
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 2, 3, 4, 5
DYNAMIC_BROKER_LOGGER_CONFIG, CLIENT_METRICS_CONFIG, GROUP_CONFIG = 6, 7, 8
# AlterConfigOp.OpType
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

# Keys whose mockbroker default is not Kafka's only because mockbroker lacks what Kafka's names
# (sasl.enabled.mechanisms: GSSAPI): unless set, described with Kafka's default, as a client of Kafka sees it
_KAFKA_DEFAULT_DESCRIBED = frozenset({"sasl.enabled.mechanisms"})
MAX_VALUE_SIZE = 32767  # ConfigurationControlManager: a config value's longest
_SECURITY_CONFIG_PREFIX = "ssl."  # DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS: SslConfigs.RECONFIGURABLE_CONFIGS
_LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")
# ClientMetricsConfigs.ALLOWED_MATCH_PARAMS
_CLIENT_MATCH_PARAMS = frozenset({"client_instance_id", "client_id", "client_software_name",
                                  "client_software_version", "client_source_address", "client_source_port"})
# GroupConfig.validateValues: a group config and the broker configs that bound it
_GROUP_RANGES = {
    "consumer.heartbeat.interval.ms": ("group.consumer.min.heartbeat.interval.ms",
                                       "group.consumer.max.heartbeat.interval.ms"),
    "consumer.session.timeout.ms": ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    "consumer.assignment.interval.ms": ("group.consumer.min.assignment.interval.ms",
                                        "group.consumer.max.assignment.interval.ms"),
    "share.heartbeat.interval.ms": ("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    "share.session.timeout.ms": ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    "share.record.lock.duration.ms": ("group.share.min.record.lock.duration.ms",
                                      "group.share.max.record.lock.duration.ms"),
    "share.delivery.count.limit": ("group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
    "share.partition.max.record.locks": ("group.share.min.partition.max.record.locks",
                                         "group.share.max.partition.max.record.locks"),
    "share.assignment.interval.ms": ("group.share.min.assignment.interval.ms",
                                     "group.share.max.assignment.interval.ms"),
    "streams.heartbeat.interval.ms": ("group.streams.min.heartbeat.interval.ms",
                                      "group.streams.max.heartbeat.interval.ms"),
    "streams.session.timeout.ms": ("group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    "streams.assignment.interval.ms": ("group.streams.min.assignment.interval.ms",
                                       "group.streams.max.assignment.interval.ms"),
}
_GROUP_MAX = {"streams.num.standby.replicas": "group.streams.max.standby.replicas",
              "streams.num.warmup.replicas": "group.streams.max.warmup.replicas"}
_GROUP_MIN = {"streams.task.offset.interval.ms": "group.streams.min.task.offset.interval.ms"}
_GROUP_SESSIONS = [("consumer.session.timeout.ms", "group.consumer.session.timeout.ms",
                    "consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms"),
                   ("share.session.timeout.ms", "group.share.session.timeout.ms",
                    "share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms"),
                   ("streams.session.timeout.ms", "group.streams.session.timeout.ms",
                    "streams.heartbeat.interval.ms", "group.streams.heartbeat.interval.ms")]


@dataclass(slots=True)
class DescribeResult:
    """One resource of a DescribeConfigs answer: its error and its entries (wire dicts, the shape of
    ``DescribeConfigsResourceResult``)."""

    error: ErrorCode = ErrorCode.none
    message: str | None = None
    configs: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class AlterResult:
    """One resource of an (Incremental)AlterConfigs answer."""

    error: ErrorCode = ErrorCode.none
    message: str | None = None


class _Refused(Exception):
    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.result = AlterResult(error, message)


def _request(message: str) -> _Refused:
    return _Refused(ErrorCode.invalid_request, message)


def _config(message: str) -> _Refused:
    return _Refused(ErrorCode.invalid_config, message)


def duplicate_resources(resources: Iterable[tuple[int, str]]) -> set[int]:
    """``ConfigAdminManager.preprocess``: the indexes of the resources (type, name) a request names more
    than once; each gets INVALID_REQUEST ``DUPLICATE_RESOURCE`` and is not altered."""
    seen: dict[tuple[int, str], int] = {}
    out: set[int] = set()
    for i, key in enumerate(resources):
        if key in seen:
            out.update((seen[key], i))
        seen[key] = i
    return out


DUPLICATE_RESOURCE = "Each resource must appear at most once."


class ConfigCatalog:
    """Every config resource of the cluster: what DescribeConfigs lists and what alterations change."""

    def __init__(self, config: BrokerConfig, metadata: ClusterMetadata, defs: KafkaConfigs | None = None) -> None:
        self.config = config
        self.metadata = metadata
        self._defs = defs
        self.per_broker: dict[int, dict[str, str]] = {}
        # Kafka 4.4 formats a cluster with ELR on and the cluster-level min.insync.replicas set
        self.cluster_default: dict[str, str] = {"min.insync.replicas": str(config.static("min.insync.replicas"))}
        self.groups: dict[str, dict[str, str]] = {}
        self.client_metrics: dict[str, dict[str, str]] = {}
        self.loggers: dict[str, str] = {}
        # told the broker config keys whose dynamic values changed
        self.on_change: list[Callable[[set[str]], None]] = []
        self._static: dict[int, dict[str, str]] = {}

    @property
    def defs(self) -> KafkaConfigs:
        if self._defs is None:
            self._defs = load()
        return self._defs

    # -- values --------------------------------------------------------------------------------------
    def static_configs(self, node_id: int) -> dict[str, str]:
        """The broker's static configs as Kafka would list them (source 4): mockbroker's keys set in its
        configuration or whose mockbroker default is not Kafka's, the node id and the listeners."""
        cached = self._static.get(node_id)
        if cached is not None:
            return cached
        keys = self.defs.keys["broker"]
        out: dict[str, str] = {}
        for name, d in CONFIG_DEF.items():
            if name.startswith("mock.") or name not in keys:
                continue
            key = keys[name]
            value = _kafka_string(self.config.static(name), key)
            explicit = self.config.is_explicit(name)
            if value is None or (not explicit and key.default is None):
                continue  # unset in Kafka (log.roll.ms, log.retention.ms: a synonym's default stands)
            if not explicit and name in _KAFKA_DEFAULT_DESCRIBED:
                continue
            if explicit or not _same_value(value, key.default, key):
                out[name] = value
        for name, raw in self.config.kafka_only.items():  # Kafka's keys mockbroker has none of its own for
            out[name] = (_normalized(raw, keys[name]) or raw) if name in keys else raw
        for name in self.config:  # listener.name.NAME.ssl.*: kept by mockbroker under the prefixed name
            if name not in CONFIG_DEF and self.config.is_explicit(name):
                base = self.defs.broker_key(name)
                value = self.config.static(name)
                out[name] = (_kafka_string(value, base) if base is not None else str(value)) or ""
        out["node.id"] = out["broker.id"] = str(node_id)
        out["process.roles"] = "broker,controller"
        node = self.metadata.brokers.get(node_id)
        if node is None or not node.endpoints:
            return out  # not registered yet: not kept
        out["listeners"] = out["advertised.listeners"] = ",".join(
            f"{name}://{host}:{port}" for name, (host, port) in node.endpoints.items())
        self._static[node_id] = out
        return out

    def broker_value(self, node_id: int, name: str) -> str | None:
        """A broker config's value in force on ``node_id`` (``KafkaConfig``: per-broker dynamic, cluster
        default dynamic, static, default), as a string."""
        for layer in (self.per_broker.get(node_id, {}), self.cluster_default, self.static_configs(node_id)):
            if name in layer:
                return layer[name]
        key = self.defs.keys["broker"].get(name)
        return key.default if key is not None else None

    def _explicit_broker_value(self, node_id: int, name: str) -> str | None:
        for layer in (self.per_broker.get(node_id, {}), self.cluster_default, self.static_configs(node_id)):
            if name in layer:
                return layer[name]
        return None

    def _topic_default(self, node_id: int, name: str) -> str | None:
        """A topic config's value without an override (``KafkaConfig.extractLogConfigMap``): its broker
        synonyms in order (log.retention.ms, .minutes, .hours), the first one set, converted to the topic
        config's unit; else the first one's default; else the topic config's own default."""
        synonyms = self.defs.topic_synonyms.get(name, [])
        for broker_name, unit in synonyms:
            v = self._explicit_broker_value(node_id, broker_name)
            if v is not None:
                return _convert(v, unit)
        for broker_name, unit in synonyms:
            key = self.defs.keys["broker"].get(broker_name)
            if key is not None and key.default is not None:
                return _convert(key.default, unit)
        return self.defs.keys["topic"][name].default

    def _synonyms(self, node_id: int, name: str, names: list[str],
                  sensitive: bool) -> list[tuple[str, str | None, int]]:
        """``ConfigHelper.configSynonyms``: each name's per-broker dynamic, then cluster-default dynamic,
        then static, then default value, from ``name`` on."""
        out: list[tuple[str, str | None, int]] = []
        layers = ((self.per_broker.get(node_id, {}), DYNAMIC_BROKER_CONFIG),
                  (self.cluster_default, DYNAMIC_DEFAULT_BROKER_CONFIG),
                  (self.static_configs(node_id), STATIC_BROKER_CONFIG))
        for layer, source in layers:
            for n in names:
                if n in layer:
                    out.append((n, None if sensitive else layer[n], source))
        keys = self.defs.keys["broker"]
        for n in names:
            key = keys.get(n)
            if key is not None and key.default is not None:
                out.append((n, None if sensitive else key.default, DEFAULT_CONFIG))
        while out and out[0][0] != name:
            out.pop(0)
        return out

    def new_topic_configs(self, node_id: int, creation: dict[str, str]) -> list[dict[str, Any]]:
        """A created topic's configs as CreateTopics v5+ answers them (``KafkaConfigSchema.
        resolveEffectiveTopicConfigs`` on the controller ``node_id``): every topic config (an internal one
        only when the request sets it), by name, each from the request (TOPIC_CONFIG, the value as sent),
        else its broker synonyms' per-broker dynamic, cluster-default dynamic and static values (in that
        order of sources, converted to the topic config's unit), else the topic config's own default; a
        sensitive one's value null."""
        out = []
        keys = self.defs.keys["topic"]
        layers = ((self.per_broker.get(node_id, {}), DYNAMIC_BROKER_CONFIG),
                  (self.cluster_default, DYNAMIC_DEFAULT_BROKER_CONFIG),
                  (self.static_configs(node_id), STATIC_BROKER_CONFIG))
        for name in sorted(keys):
            key = keys[name]
            if key.internal and name not in creation:
                continue
            value, source = key.default, DEFAULT_CONFIG
            if name in creation:
                value, source = creation[name], TOPIC_CONFIG
            else:
                synonyms = self.defs.topic_synonyms.get(name, [])
                found = next(((layer[n], unit, src) for layer, src in layers for n, unit in synonyms if n in layer),
                             None)
                if found is not None:
                    value, source = _convert(found[0], found[1]), found[2]
            out.append({"name": name, "value": None if key.sensitive else value, "read_only": False,
                        "config_source": source, "is_sensitive": key.sensitive})
        return out

    # -- DescribeConfigs -----------------------------------------------------------------------------
    def describe(self, node_id: int, resource_type: int, resource_name: str, keys: list[str] | None = None,
                 include_synonyms: bool = False, include_documentation: bool = False) -> DescribeResult:
        """``ConfigHelper.describeConfigs`` for one resource; ``keys`` None or empty: every entry."""
        try:
            entries = self._describe(node_id, resource_type, resource_name)
        except _Refused as e:
            # an unknown topic's result sets no message: the response data's default, "" (as a success's)
            return DescribeResult(e.result.error, "" if e.result.message is None else e.result.message)
        out = []
        for name, value, source, read_only, sensitive, synonyms, key in entries:
            if keys and name not in keys:
                continue
            out.append({"name": name, "value": value, "read_only": read_only, "config_source": source,
                        "is_sensitive": sensitive, "config_type": key.type_id if key is not None else 0,
                        "documentation": key.documentation if include_documentation and key is not None else None,
                        "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in synonyms]
                        if include_synonyms else []})
        return DescribeResult(message="", configs=out)  # ConfigHelperUtils sets no message: the default, ""

    def _describe(self, node_id: int, resource_type: int, name: str) -> list[tuple[Any, ...]]:
        if resource_type == TOPIC:
            msg = validate_topic_name(name)
            if msg:
                raise _Refused(ErrorCode.invalid_topic_exception, msg)
            topic = self.metadata.topics.get(name)
            if topic is None:
                raise _Refused(ErrorCode.unknown_topic_or_partition, None)
            return [self._topic_entry(node_id, topic.overrides, n) for n in self.defs.order["topic"]]
        if resource_type == BROKER:
            if name:
                self._check_broker_id(node_id, name, "Broker id must be an integer, but it is: ",
                                      f"Unexpected broker id, expected {node_id} or empty string, but received ")
                keys = self.defs.keys["broker"]
                # ConfigHelperUtils.createResponseConfig: the keys set that are not the ConfigDef's
                # non-internal ones (a listener-prefixed or internal static config), then every one of those
                unknown = sorted({n for n in (*self.per_broker.get(node_id, {}), *self.cluster_default,
                                              *self.static_configs(node_id))
                                  if n not in keys or keys[n].internal})
                return [self._broker_entry(node_id, n, True) for n in unknown + self.defs.order["broker"]]
            return [self._broker_entry(node_id, n, False) for n in self.cluster_default]
        if resource_type == BROKER_LOGGER:
            if not name:
                raise _request("Broker id must not be empty")
            self._check_broker_id(node_id, name, "Broker id must be an integer, but it is: ",
                                  f"Unexpected broker id, expected {node_id} but received ")
            levels = {"root": logging.getLevelName(logging.getLogger().getEffectiveLevel()), **self.loggers}
            return [(n, _log4j_level(v), DYNAMIC_BROKER_LOGGER_CONFIG, False, False, [], None)
                    for n, v in sorted(levels.items())]
        if resource_type == CLIENT_METRICS:
            if not name:
                raise _request("Client metrics subscription name must not be empty")
            return [self._client_metrics_entry(self.client_metrics.get(name, {}), n)
                    for n in self.defs.order["client_metrics"]]
        if resource_type == GROUP:
            if not name:
                raise _request("Group name must not be empty")
            return [self._group_entry(node_id, self.groups.get(name, {}), n) for n in self.defs.order["group"]]
        raise _request(f"Unsupported resource type: {_TYPE_NAMES.get(resource_type, 'UNKNOWN')}")

    @staticmethod
    def _check_broker_id(node_id: int, name: str, not_int: str, other: str) -> None:
        try:
            n = int(name)
        except ValueError:
            raise _request(not_int + name) from None
        if n != node_id:
            raise _request(other + name)

    def _topic_entry(self, node_id: int, overrides: dict[str, str], name: str) -> tuple[Any, ...]:
        key = self.defs.keys["topic"][name]
        sensitive = key.sensitive
        raw = overrides[name] if name in overrides else self._topic_default(node_id, name)
        value = None if sensitive else _normalized(raw, key)
        broker_name = self.defs.topic_broker_synonym(name)
        synonyms = (self._synonyms(node_id, broker_name, self.defs.broker_synonyms(broker_name), sensitive)
                    if broker_name else [])
        if name in overrides:
            synonyms.insert(0, (name, value, TOPIC_CONFIG))
        source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
        return name, value, source, False, sensitive, synonyms, key

    def _broker_entry(self, node_id: int, name: str, per_broker: bool) -> tuple[Any, ...]:
        key = self.defs.broker_key(name)
        sensitive = key is None or key.sensitive  # KafkaConfig.maybeSensitive: unknown types too
        value = None if sensitive else (self.broker_value(node_id, name) if per_broker
                                        else self.cluster_default.get(name))
        synonyms = self._synonyms(node_id, name, self.defs.broker_synonyms(name), sensitive)
        if not per_broker:
            synonyms = [s for s in synonyms if s[2] == DYNAMIC_DEFAULT_BROKER_CONFIG]
        source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
        return name, value, source, not self.defs.is_dynamic(name), sensitive, synonyms, key

    def _group_entry(self, node_id: int, props: dict[str, str], name: str) -> tuple[Any, ...]:
        key = self.defs.keys["group"][name]
        sensitive = key.sensitive
        broker_name = self.defs.group_synonyms.get(name)
        if broker_name:
            synonyms = self._synonyms(node_id, broker_name, self.defs.broker_synonyms(broker_name), sensitive)
            raw = props.get(name, self.broker_value(node_id, broker_name))
        else:
            synonyms = [(name, key.default, DEFAULT_CONFIG)] if key.default is not None else []
            raw = props.get(name, key.default)
        value = None if sensitive else _normalized(raw, key)
        if name in props:
            synonyms.insert(0, (name, value, GROUP_CONFIG))
        source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
        return name, value, source, False, sensitive, synonyms, key

    def _client_metrics_entry(self, props: dict[str, str], name: str) -> tuple[Any, ...]:
        key = self.defs.keys["client_metrics"][name]
        value = _normalized(props[name], key) if name in props else key.default
        synonyms = [(name, value, CLIENT_METRICS_CONFIG)] if name in props else []
        return name, value, synonyms[0][2] if synonyms else DEFAULT_CONFIG, False, False, synonyms, key

    # -- IncrementalAlterConfigs / AlterConfigs --------------------------------------------------------
    def incremental_alter(self, node_id: int, resource_type: int, resource_name: str,
                          ops: list[tuple[int, str, str | None]], validate_only: bool) -> AlterResult:
        """IncrementalAlterConfigs for one resource: SET, DELETE, APPEND and SUBTRACT (list configs of
        topics and brokers), checked as the broker (``ConfigAdminManager.preprocess``) then the controller
        (``ConfigurationControlManager.incrementalAlterConfigResource``) check them; applied unless
        ``validate_only``."""
        try:
            names = [n for _op, n, _v in ops]
            if len(set(names)) != len(names):
                raise _request("Error due to duplicate config keys")
            nulls = [n for op, n, v in ops if op != DELETE and v is None]
            if nulls:
                raise _request("Null value not supported for : " + ", ".join(nulls))
            if resource_type == BROKER_LOGGER:
                return self._alter_loggers(node_id, resource_name, ops, validate_only)
            if resource_type == BROKER:
                self._preprocess_broker(node_id, resource_name, ops)
            elif resource_type not in (TOPIC, CLIENT_METRICS, GROUP):
                raise _request(f"Unknown resource type {resource_type}")
            current = self._current(resource_type, resource_name, node_id)
            new = dict(current)
            for op, name, value in ops:
                if op == SET:
                    new[name] = value if value is not None else ""
                elif op == DELETE:
                    new.pop(name, None)
                elif op in (APPEND, SUBTRACT):
                    key = self._list_key(resource_type, name)
                    if key is None:
                        raise _config(f"Can't {_OP_NAMES[op]} to key {name} because its type is not LIST.")
                    base = current.get(name, key.default)
                    parts = [p for p in (base or "").split(",") if p]
                    for item in (value or "").split(","):
                        if op == APPEND and item not in parts:
                            parts.append(item)
                        elif op == SUBTRACT and item in parts:
                            parts.remove(item)
                    new[name] = ",".join(parts)
                else:
                    raise _Refused(ErrorCode.unknown_server_error, None)
            self._validate(node_id, resource_type, resource_name, current, new, {n for n in names})
        except _Refused as e:
            return e.result
        if not validate_only:
            self._store(node_id, resource_type, resource_name, new)
        return AlterResult()

    def alter(self, node_id: int, resource_type: int, resource_name: str, configs: list[tuple[str, str | None]],
              validate_only: bool) -> AlterResult:
        """AlterConfigs (legacy): the resource's configs become exactly ``configs`` (those not named are
        removed), checked as ``ConfigAdminManager.preprocess`` and ``legacyAlterConfigResource``."""
        try:
            names = [n for n, _v in configs]
            if len(set(names)) != len(names):
                raise _request("Error due to duplicate config keys")
            nulls = [n for n, v in configs if v is None]
            if nulls:
                raise _request("Null value not supported for : " + ", ".join(nulls))
            if resource_type == BROKER:
                if resource_name:
                    self._check_node(node_id, resource_name)
                self._validate_dynamic({n: v for n, v in configs if v is not None}, bool(resource_name))
            elif resource_type not in (TOPIC, CLIENT_METRICS, GROUP):
                raise _request(f"Unknown resource type {resource_type}")
            current = self._current(resource_type, resource_name, node_id)
            new: dict[str, str] = {n: v for n, v in configs if v is not None}
            removed = set(current) - set(new)
            self._validate(node_id, resource_type, resource_name, current, new, set(names) | removed)
        except _Refused as e:
            return e.result
        if not validate_only:
            self._store(node_id, resource_type, resource_name, new)
        return AlterResult()

    def _current(self, resource_type: int, name: str, node_id: int) -> dict[str, str]:
        if resource_type == TOPIC:
            topic = self.metadata.topics.get(name)
            return dict(topic.overrides) if topic is not None else {}
        if resource_type == BROKER:
            return dict(self.per_broker.get(int(name), {}) if name else self.cluster_default)
        if resource_type == GROUP:
            return dict(self.groups.get(name, {}))
        return dict(self.client_metrics.get(name, {}))

    def _list_key(self, resource_type: int, name: str) -> ConfigKeyDef | None:
        """``KafkaConfigSchema.isSplittable``: a LIST config of topics or brokers (the controller knows no
        other resource's definitions)."""
        kind = {TOPIC: "topic", BROKER: "broker"}.get(resource_type)
        key = self.defs.keys[kind].get(name) if kind else None
        return key if key is not None and key.type == "LIST" else None

    def _check_node(self, node_id: int, name: str) -> None:
        """``ConfigAdminManager.validateResourceNameIsCurrentNodeId``."""
        self._check_broker_id(node_id, name, "Node id must be an integer, but it is: ",
                              f"Unexpected broker id, expected {node_id}, but received ")

    def _preprocess_broker(self, node_id: int, name: str, ops: list[tuple[int, str, str | None]]) -> None:
        """``ConfigAdminManager.validateBrokerConfigChange``: the broker's persistent dynamic configs with
        the operations applied (``prepareIncrementalConfigs``) must pass ``DynamicBrokerConfig.validate``."""
        if name:
            self._check_node(node_id, name)
        props = dict(self.per_broker.get(node_id, {}) if name else self.cluster_default)
        keys = self.defs.keys["broker"]
        for op, key_name, value in ops:
            if op not in _OP_NAMES:
                raise _request(f"Unknown operations type {op}")
            if op == SET:
                props[key_name] = value or ""
            elif op == DELETE:
                props.pop(key_name, None)
            else:
                key = keys.get(key_name)
                if key is None:
                    raise _config(f"Unknown config name: {key_name}")
                if key.type != "LIST":
                    verb = "append" if op == APPEND else "subtract"
                    raise _config(f"Config value {verb} is not allowed for config key: {key_name}")
                old = props.get(key_name, key.default) or ""
                if op == APPEND:
                    items = [x for x in old.split(",") if x]
                    items += [x for x in (value or "").split(",") if x not in items]
                else:
                    items = [x for x in old.split(",") if x not in (value or "").split(",")]
                props[key_name] = ",".join(items)
        self._validate_dynamic(props, bool(name))

    def _validate_dynamic(self, props: dict[str, str], per_broker: bool) -> None:
        """``DynamicBrokerConfig.validate``: no static config, security configs only with a listener
        prefix, each value of its type and range, per-broker-only configs not at the cluster default."""
        keys = self.defs.keys["broker"]
        static = sorted(n for n in props if n in keys and not keys[n].internal and not self.defs.is_dynamic(n))
        if static:
            raise _request(f"Cannot update these configs dynamically: [{', '.join(static)}]")
        security = sorted(n for n in props if n.startswith(_SECURITY_CONFIG_PREFIX) and self.defs.is_dynamic(n))
        if security:
            raise _request("These security configs can be dynamically updated only per-listener using the listener "
                           f"prefix: [{', '.join(security)}]")
        for n, v in props.items():
            base = re.sub(r"^listener\.name\.[^.]*\.", "", n)
            key = keys.get(base)
            if key is None:
                continue
            try:
                key.parse(v)
            except ConfigValueError as e:
                raise _request(str(e)) from None
        if not per_broker:
            only = sorted(n for n in props if self.defs.is_per_broker_only(n))
            if only:
                raise _request("Cannot update these configs at default cluster level, broker id must be specified: "
                               f"[{', '.join(only)}]")
        if "log.cleaner.threads" in props and int(props["log.cleaner.threads"].strip()) == 0:
            raise _request("/ by zero")  # CleanerConfig divides the dedupe buffer by the thread count

    def _validate(self, node_id: int, resource_type: int, name: str, current: dict[str, str], new: dict[str, str],
                  altered: set[str]) -> None:
        """``ConfigurationControlManager.validateAlterConfig``: the ELR rules, the value size, then
        ``ControllerConfigurationValidator.validate`` and the topic's existence."""
        if resource_type == BROKER and "min.insync.replicas" in altered:
            if name:  # any record of it for a broker, changed or not
                raise _config("Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
            if not name and "min.insync.replicas" not in new:
                raise _config("Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
        for n in altered:
            if n in new and len(new[n]) > MAX_VALUE_SIZE:
                raise _config("The configuration value cannot be added because it exceeds the maximum value size "
                              f"of {MAX_VALUE_SIZE} bytes.")
        if resource_type == TOPIC:
            if not name:
                raise _request("Default topic resources are not allowed.")
            msg = validate_topic_name(name)
            if msg:
                raise _Refused(ErrorCode.invalid_topic_exception, msg)
            self._validate_topic(node_id, new)
            if name not in self.metadata.topics:
                raise _Refused(ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist.")
        elif resource_type == BROKER:
            if name and int(name) < 0:
                raise _request("Invalid negative broker ID.")
        elif resource_type == CLIENT_METRICS:
            self._validate_client_metrics(name, new)
        elif resource_type == GROUP:
            if not name:
                raise _request("Default group resources are not allowed.")
            self._validate_group(node_id, new)

    def _validate_topic(self, node_id: int, configs: dict[str, str]) -> None:
        """``LogConfig.validate``: known names, each value, the compaction lags, remote storage."""
        keys = self.defs.keys["topic"]
        for n in configs:
            if n not in keys:  # LogConfig.configNames: internal ones too (internal.segment.bytes)
                raise _config(f"Unknown topic config name: {n}")
        parsed = _parse(keys, configs)
        lag_min = parsed.get("min.compaction.lag.ms",
                             int(self._topic_default(node_id, "min.compaction.lag.ms") or 0))
        lag_max = parsed.get("max.compaction.lag.ms",
                             int(self._topic_default(node_id, "max.compaction.lag.ms") or 0))
        if lag_min > lag_max:
            raise _config(f"conflict topic config setting min.compaction.lag.ms ({lag_min}) > max.compaction.lag.ms "
                          f"({lag_max})")
        if parsed.get("remote.storage.enable"):
            raise _config("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with "
                          "remote log storage.")

    def _validate_group(self, node_id: int, configs: dict[str, str]) -> None:
        """``GroupConfig.validate``: known names, types, the ranges the broker's group configs set."""
        keys = self.defs.keys["group"]
        for n in configs:
            if n not in keys:
                raise _config(f"Unknown group config name: {n}")
        tags = configs.get("streams.rack.aware.assignment.tags")
        if tags is not None and tags.strip():
            items = re.split(r"\s*,\s*", tags.strip())
            if len(set(items)) != len(items):
                raise _config("streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
        parsed = _parse(keys, configs)

        def broker_int(name: str) -> int:
            return int(self.broker_value(node_id, name) or 0)

        for n, (lo_key, hi_key) in _GROUP_RANGES.items():
            if n in parsed and not broker_int(lo_key) <= parsed[n] <= broker_int(hi_key):
                raise _config(f"{n} must be in the range {broker_int(lo_key)} to {broker_int(hi_key)} inclusive.")
        for n, max_key in _GROUP_MAX.items():
            if n in parsed and parsed[n] > broker_int(max_key):
                raise _config(f"{n} must be less than or equal to {broker_int(max_key)}")
        for n, min_key in _GROUP_MIN.items():
            if n in parsed and parsed[n] < broker_int(min_key):
                raise _config(f"{n} must be greater than or equal to {broker_int(min_key)}")
        if "streams.assignor.name" in parsed:
            registered = [a for a in (self.broker_value(node_id, "group.streams.assignors") or "").split(",") if a]
            if parsed["streams.assignor.name"] not in registered:
                raise _config(f"streams.assignor.name '{parsed['streams.assignor.name']}' is not a registered task "
                              f"assignor. Registered assignors are: [{', '.join(registered)}].")
        for session, session_default, heartbeat, heartbeat_default in _GROUP_SESSIONS:
            if session in parsed or heartbeat in parsed:
                s = parsed.get(session, broker_int(session_default))
                h = parsed.get(heartbeat, broker_int(heartbeat_default))
                if s <= h:
                    raise _config(f"{session} must be greater than {heartbeat}")
        dlq = parsed.get("errors.deadletterqueue.topic.name")
        if dlq and dlq.startswith("__"):
            raise _config("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")

    def _validate_client_metrics(self, name: str, configs: dict[str, str]) -> None:
        """``ClientMetricsConfigs.validate``."""
        if not name:
            raise _request("Subscription name can't be empty")
        keys = self.defs.keys["client_metrics"]
        for n in configs:
            if n not in keys:
                raise _request(f"Unknown client metrics configuration: {n}")
        parsed = _parse(keys, configs)
        if "interval.ms" in parsed and not 100 <= parsed["interval.ms"] <= 3600000:
            raise _request(f"Invalid value {parsed['interval.ms']} for interval.ms, interval must be between 100 and "
                           "3600000 (1 hour)")
        for pattern in parsed.get("match", []):
            pair = pattern.split("=")
            ok = len(pair) == 2 and pair[0].strip() in _CLIENT_MATCH_PARAMS
            if ok:
                try:
                    re.compile(pair[1].strip())
                except re.error:
                    ok = False
            if not ok:
                raise _config(f"Illegal client matching pattern: {pattern}")

    def _alter_loggers(self, node_id: int, name: str, ops: list[tuple[int, str, str | None]],
                       validate_only: bool) -> AlterResult:
        """``RuntimeLoggerManager``: SET a logger's level (log4j's names) or DELETE it (back to the root's)."""
        self._check_node(node_id, name)
        new = dict(self.loggers)
        for op, logger_name, value in ops:
            if op in (APPEND, SUBTRACT):
                raise _request(f"{_OP_NAMES[op]} operation is not allowed for the BROKER_LOGGER resource")
            if op == SET:
                level = (value or "").upper()
                if level not in _LOG_LEVELS:
                    raise _request(f"Cannot set the log level of {logger_name} to {value} as it is not a supported "
                                   f"log level. Valid log4j levels are {', '.join(_LOG_LEVELS)}")
                new[logger_name] = level
            elif op == DELETE:
                if logger_name == "root":
                    raise _request("Removing the log level of the root logger is not allowed")
                new.pop(logger_name, None)
            else:
                raise _request(f"Unknown operations type {op}")
        if not validate_only:
            for n in set(self.loggers) - set(new):
                logging.getLogger(n).setLevel(logging.NOTSET)  # back to its parent's level
            self.loggers = new
            for n, level in new.items():
                logging.getLogger(n if n != "root" else None).setLevel(_python_level(level))
        return AlterResult()

    def _store(self, node_id: int, resource_type: int, name: str, new: dict[str, str]) -> None:
        if resource_type == TOPIC:
            self.metadata.topics[name].overrides = new
        elif resource_type == GROUP:
            self._put(self.groups, name, new)
        elif resource_type == CLIENT_METRICS:
            self._put(self.client_metrics, name, new)
        elif resource_type == BROKER:
            target = int(name) if name else None
            before = dict(self.per_broker.get(target, {}) if target is not None else self.cluster_default)
            if target is None:
                self.cluster_default = new
            else:
                self._put(self.per_broker, target, new)
            self._apply_dynamic()
            changed = {k for k in set(before) | set(new) if before.get(k) != new.get(k)}
            for listener in self.on_change:
                listener(changed)

    @staticmethod
    def _put(store: dict[Any, dict[str, str]], key: Any, new: dict[str, str]) -> None:
        if new:
            store[key] = new
        else:
            store.pop(key, None)

    def _apply_dynamic(self) -> None:
        """Hand the dynamic values mockbroker reads to ``BrokerConfig``, parsed (as Kafka's
        ``DynamicBrokerConfig.updateCurrentConfig``)."""
        self.config.set_dynamic(None, self._parsed(self.cluster_default, None))
        for node, props in self.per_broker.items():
            self.config.set_dynamic(node, self._parsed({**self.cluster_default, **props}, node))

    def _parsed(self, props: dict[str, str], node_id: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, raw in props.items():
            if name in CONFIG_DEF and not name.startswith("mock.") and self.defs.is_dynamic(name):
                try:
                    out[name] = parse_value(name, raw, "a dynamic broker config")
                except ConfigError as e:
                    log.warning("dynamic broker config %s=%s not applied%s: %s", name, raw,
                                "" if node_id is None else f" on broker {node_id}", e)
        return out


def _parse(keys: dict[str, ConfigKeyDef], configs: dict[str, str]) -> dict[str, Any]:
    """``ConfigDef.parse`` as the controller's validation runs it: a refused value is INVALID_CONFIG."""
    try:
        return parse_configs(keys, dict(configs))
    except ConfigValueError as e:
        raise _config(str(e)) from None


def _convert(value: str, unit: str) -> str:
    """``ConfigSynonym``'s converters (hours and minutes to milliseconds)."""
    if unit == "hours":
        return str(int(value.strip() or 0) * 3_600_000)
    if unit == "minutes":
        return str(int(value.strip() or 0) * 60_000)
    return value


def _normalized(raw: str | None, key: ConfigKeyDef) -> str | None:
    """A stored string as DescribeConfigs prints the parsed value (``convertToString``)."""
    if raw is None:
        return None
    try:
        return to_string(parse_type(key.name, raw, key.type), key.type)
    except ConfigValueError:
        return raw


def _kafka_string(value: Any, key: ConfigKeyDef) -> str | None:
    """A mockbroker config value as Kafka would print the same config."""
    if value is None:
        return None
    return to_string(value, key.type)


def _same_value(value: str, default: str | None, key: ConfigKeyDef) -> bool:
    """Whether mockbroker's value is Kafka's default (comma-separated items compared as sets: the order
    of a protocol map's items does not matter)."""
    if default is None:
        return False
    if key.type in ("LIST", "STRING"):
        return sorted(x.strip() for x in value.split(",")) == sorted(x.strip() for x in default.split(","))
    return value == default


def _log4j_level(python_level: str) -> str:
    return {"WARNING": "WARN", "CRITICAL": "FATAL", "NOTSET": "INFO"}.get(python_level, python_level)


def _python_level(log4j_level: str) -> int:
    return {"OFF": logging.CRITICAL + 10, "FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING,
            "INFO": logging.INFO, "DEBUG": logging.DEBUG, "TRACE": logging.DEBUG, "ALL": logging.NOTSET}[log4j_level]
