"""Kafka's configuration definitions, as a real Kafka 4.4.0 describes them.

``mockbroker/data/kafka-4.4.0-configs.json`` is recorded by scripts/record_kafka_configs.py from a
running Kafka and its own classes (scripts/java/KafkaConfigDefs.java): every topic, broker, group and
client-metrics config with its type, default, validator and documentation, the dynamic broker configs
and their update mode, the broker synonyms of each config, the order DescribeConfigs lists them in,
and what that Kafka answered to DescribeConfigs and to a list of alterations (the side-by-side tests'
reference).  This module reads it (once, on first use) and checks a value the way Kafka's
``ConfigDef.parseType`` and its validators do, with their messages (``ConfigException``: "Invalid
value V for configuration N: ...").  ``config_catalog.py`` builds DescribeConfigs and the
alterations on it; ``metadata.py`` checks new topics' configs with it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data" / "kafka-4.4.0-configs.json"

# DescribeConfigsResponse.ConfigType ids by ConfigDef.Type name
CONFIG_TYPE_IDS = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7,
                   "CLASS": 8, "PASSWORD": 9}
KINDS = ("topic", "broker", "group", "client_metrics")

_RANGE = re.compile(r"^\[(?:(?P<min>-?[0-9][0-9.E+-]*),\.\.\.(?:,(?P<max>-?[0-9][0-9.E+-]*))?"
                    r"|\.\.\.,(?P<only_max>-?[0-9][0-9.E+-]*))\]$")
_CHOICES = re.compile(r"^(?P<ci>\(case insensitive\) )?\[(?P<items>[^\]]*)\]$")
_INT_BOUNDS = {"INT": (-(1 << 31), (1 << 31) - 1), "SHORT": (-(1 << 15), (1 << 15) - 1),
               "LONG": (-(1 << 63), (1 << 63) - 1)}


# DynamicBrokerConfig.LISTENER_CONFIG_REGEX and LISTENER_MECHANISM_CONFIGS
_LISTENER_CONFIG = re.compile(r"listener\.name\.[^.]*\.(.*)")
_LISTENER_MECHANISM_CONFIGS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                               "sasl.server.callback.handler.class", "connections.max.reauth.ms")


class ConfigValueError(ValueError):
    """A value ``ConfigDef`` refuses; the message is Kafka's ``ConfigException``'s."""


@dataclass(frozen=True, slots=True)
class ConfigKeyDef:
    """One key of a ``ConfigDef``: its type (``ConfigDef.Type`` name), default as DescribeConfigs
    prints it, validator (its ``toString``), documentation, and whether it is internal."""

    name: str
    type: str
    default: str | None
    validator: str | None
    documentation: str | None
    internal: bool

    @property
    def type_id(self) -> int:
        return CONFIG_TYPE_IDS.get(self.type, 0)

    @property
    def sensitive(self) -> bool:
        """``KafkaConfig.maybeSensitive``: a password."""
        return self.type == "PASSWORD"

    def parse(self, value: str) -> Any:
        """``ConfigDef.parseType`` then the validator's ``ensureValid``: the parsed value, or
        ``ConfigValueError`` with Kafka's message."""
        parsed = parse_type(self.name, value, self.type)
        self.ensure_valid(value, parsed)
        return parsed

    def ensure_valid(self, raw: str, parsed: Any) -> None:
        v = self.validator
        if not v:
            return
        m = _RANGE.match(v)
        if m is not None and self.type in ("INT", "SHORT", "LONG", "DOUBLE"):
            lo, hi = m.group("min"), m.group("max") or m.group("only_max")
            if lo is not None and parsed < float(lo):
                raise ConfigValueError(_invalid(raw, self.name, f"Value must be at least {lo}"))
            if hi is not None and parsed > float(hi):
                raise ConfigValueError(_invalid(raw, self.name, f"Value must be no more than {hi}"))
            return
        m = _CHOICES.match(v)
        if m is None or self.type not in ("STRING", "LIST"):
            return  # a validator Kafka prints no choices for (class names, throttled replica lists, ...)
        choices = [c for c in m.group("items").split(", ") if c]
        if self.type == "LIST":  # ValidList: no duplicates, no empty item, each one of the choices
            if len(set(parsed)) != len(parsed):
                raise ConfigValueError(f"Configuration '{self.name}' values must not be duplicated.")
            for item in parsed:
                if item == "":
                    raise ConfigValueError(f"Configuration '{self.name}' values must not be empty.")
                if choices and item not in choices:
                    raise ConfigValueError(_invalid(item, self.name, f"String must be one of: {', '.join(choices)}"))
        elif m.group("ci"):
            if parsed.upper() not in choices:
                raise ConfigValueError(_invalid(
                    raw, self.name, f"String must be one of (case insensitive): {', '.join(choices)}"))
        elif parsed not in choices:
            raise ConfigValueError(_invalid(raw, self.name, f"String must be one of: {', '.join(choices)}"))


def _invalid(value: Any, name: str, message: str) -> str:
    """``ConfigException(name, value, message)``'s text."""
    return f"Invalid value {value} for configuration {name}: {message}"


def parse_type(name: str, value: str, type_name: str) -> Any:
    """``ConfigDef.parseType`` for a string value."""
    trimmed = value.strip()
    if type_name == "BOOLEAN":
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise ConfigValueError(_invalid(value, name, "Expected value to be either true or false"))
    if type_name in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[type_name]
        if re.fullmatch(r"[+-]?[0-9]+", trimmed) and lo <= int(trimmed) <= hi:
            return int(trimmed)
        raise ConfigValueError(_invalid(value, name, f"Not a number of type {type_name}"))
    if type_name == "DOUBLE":
        try:
            return float(trimmed)
        except ValueError:
            raise ConfigValueError(_invalid(value, name, "Not a number of type DOUBLE")) from None
    if type_name == "LIST":
        return [] if not trimmed else re.split(r"\s*,\s*", trimmed)
    return trimmed  # STRING, CLASS (not loaded here), PASSWORD


def to_string(parsed: Any, type_name: str | None) -> str | None:
    """``ConfigDef.convertToString``."""
    if parsed is None:
        return None
    if isinstance(parsed, bool):
        return "true" if parsed else "false"
    if isinstance(parsed, list):
        return ",".join(str(x) for x in parsed)
    if type_name == "DOUBLE" or isinstance(parsed, float):
        return _java_double(float(parsed))
    return str(parsed)


def _java_double(d: float) -> str:
    """``Double.toString`` for the values configs hold (0.5, 1.0, 0.9, 1.0E-4)."""
    if d == int(d) and abs(d) < 1e7:
        return f"{int(d)}.0"
    if 1e-3 <= abs(d) < 1e7:
        return repr(d)
    mantissa, exp = f"{d:E}".split("E")
    mantissa = mantissa.rstrip("0").rstrip(".")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}E{int(exp)}"


class KafkaConfigs:
    """The recorded definitions (``load()``): per kind ("topic", "broker", "group", "client_metrics")
    its keys, the order DescribeConfigs lists them in, and the synonym and dynamic-update tables."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.version: str = data["kafka_version"]
        defs = data["defs"]
        docs: dict[str, dict[str, str | None]] = {k: {} for k in KINDS}
        order: dict[str, list[str]] = {k: [] for k in KINDS}
        kind_of = {2: "topic", 4: "broker", 32: "group", 16: "client_metrics"}
        for described in data["describe"]:
            kind = kind_of[described["resource_type"]]
            if kind == "broker" and described["resource_name"] == "":
                continue
            for e in described["entries"]:
                docs[kind].setdefault(e["name"], e["documentation"])
                if e["name"] not in order[kind]:
                    order[kind].append(e["name"])
        self.keys: dict[str, dict[str, ConfigKeyDef]] = {
            kind: {name: ConfigKeyDef(name, k["type"], k["default"], k["validator"],
                                      docs[kind].get(name), k["internal"])
                   for name, k in defs[kind].items()}
            for kind in KINDS}
        # the order DescribeConfigs lists each kind's keys in (Kafka's map order, recorded)
        self.order = order
        self.dynamic_update_modes: dict[str, str] = defs["dynamic_update_modes"]
        self._broker_synonyms: dict[str, list[str]] = defs["broker_synonyms"]
        self.topic_synonyms: dict[str, list[tuple[str, str]]] = {
            t: [(n, conv) for n, conv in syn] for t, syn in defs["topic_synonyms"].items()}
        self.group_synonyms: dict[str, str | None] = defs["group_synonyms"]

    def broker_synonyms(self, name: str) -> list[str]:
        """``DynamicBrokerConfig.brokerConfigSynonyms(name, true)``: the recorded synonyms, and for a
        listener-prefixed name the name and its base (a SASL mechanism's config: the config it ends with)."""
        recorded = self._broker_synonyms.get(name)
        if recorded is not None:
            return recorded
        m = _LISTENER_CONFIG.fullmatch(name)
        if m is None:
            return [name]
        base = m.group(1)
        return [name, next((c for c in _LISTENER_MECHANISM_CONFIGS if base.endswith(c)), base)]

    def broker_key(self, name: str) -> ConfigKeyDef | None:
        """``AbstractKafkaConfig.configType``'s definition: the name's own, else its first synonym's (a
        listener-prefixed config's base)."""
        keys = self.keys["broker"]
        return keys.get(name) or next((keys[n] for n in self.broker_synonyms(name) if n in keys), None)

    def topic_broker_synonym(self, name: str) -> str | None:
        """``ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS``: the broker config a topic config defaults to."""
        syn = self.topic_synonyms.get(name)
        return syn[0][0] if syn else None

    def is_dynamic(self, name: str) -> bool:
        return name in self.dynamic_update_modes

    def is_per_broker_only(self, name: str) -> bool:
        """``DynamicBrokerConfig.perBrokerConfigs``: listener and security configs (and those with a
        listener prefix, but for the cluster-level listener ones)."""
        if self.dynamic_update_modes.get(name) == "per-broker":
            return True
        m = re.fullmatch(r"listener\.name\.[^.]*\.(.*)", name)
        return m is not None and m.group(1) not in ("max.connections", "max.connection.creation.rate",
                                                    "num.network.threads")

    def recorded_describe(self, resource_type: int, resource_name: str) -> dict[str, Any]:
        return next(d for d in self.data["describe"]
                    if d["resource_type"] == resource_type and d["resource_name"] == resource_name)


def parse_configs(keys: dict[str, ConfigKeyDef], configs: dict[str, str | None]) -> dict[str, Any]:
    """``ConfigDef.parse`` of the ``configs`` set (None: not set): each value parsed and checked, in the
    definition's order; ``ConfigValueError`` for the first that is refused."""
    parsed: dict[str, Any] = {}
    for name, key in keys.items():
        value = configs.get(name)
        if value is not None:
            parsed[name] = key.parse(value)
    return parsed


@cache
def load() -> KafkaConfigs:
    """The recorded Kafka 4.4.0 configuration data (read once)."""
    return KafkaConfigs(json.loads(DATA.read_text()))


def validate_topic_configs(configs: dict[str, str | None]) -> str | None:
    """``LogConfig.validate`` for a topic's configs (CreateTopics, AlterConfigs): Kafka's message for the
    first problem (an unknown name, then each value in definition order, then min.compaction.lag.ms above
    max.compaction.lag.ms), or None."""
    keys = load().keys["topic"]
    for name in configs:
        if name not in keys:  # LogConfig.configNames: internal ones too (internal.segment.bytes)
            return f"Unknown topic config name: {name}"
    try:
        parsed = parse_configs(keys, configs)
    except ConfigValueError as e:
        return str(e)
    lo = parsed.get("min.compaction.lag.ms", int(keys["min.compaction.lag.ms"].default or 0))
    hi = parsed.get("max.compaction.lag.ms", int(keys["max.compaction.lag.ms"].default or 0))
    if lo > hi:
        return f"conflict topic config setting min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi})"
    return None
