"""Fault and latency injection: rules that match requests and change how they are answered.

Modelled on librdkafka's mock cluster (error stacks per API key, broker and
partition, each entry with an optional round-trip delay) and franz-go kfake's
control functions (hold a request until released, drop it without a reply).
A rule matches a request by API key, version range, broker, client id and
topic/partition; the first rule that matches and has firings left acts:

* ``error``: the request is answered with an error code from the rule's
  stack (E1, E2, ... one per matching request; a one-entry stack with no
  count repeats it).  The answer is built through the API's own response
  path (``apis/``): Produce and Fetch give the error to the matching
  partitions and serve the others, so an injected NOT_LEADER_OR_FOLLOWER on
  Produce v10+ carries current_leader like a real one; other APIs answer
  every element with it (Kafka's ``getErrorResponse``) and nothing takes
  effect.  Throttle fields and quotas apply as to any response.
* ``delay``: the request is handled, and its response sent ``delay_ms``
  later (on the injectable clock).  An error entry may carry its own delay.
* ``hold``: the request waits, unread by its handler, until ``release``.
* ``drop``: no response; the connection stays open with the request pending
  (the client times out).  ``close``: the connection is closed.  Both happen
  before the request takes effect, or after it (``after``: the handler ran,
  so a Produce is appended — what idempotent producers must survive).

``count`` bounds the firings: 1 (one-shot), N, or None (persistent); an
error stack fires once per entry unless a count says otherwise.  Every rule
counts how often it fired.  Rules come from ``MockBroker.inject``, the admin
API's ``POST /faults`` and ``mock.faults`` at start-up, all parsed by
``parse_rule``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

ACTIONS = ("error", "delay", "hold", "drop", "close")


class FaultRuleError(ValueError):
    """A rule that cannot be made: ``field`` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def api_key_of(value: Any, field: str = "api") -> int:
    """An API key from its number or name ("Produce", "PRODUCE", "produce", "FindCoordinator")."""
    if isinstance(value, bool):
        raise FaultRuleError(field, f"not an API: {value!r}")
    if isinstance(value, int):
        if value in ApiKey._value2member_map_:
            return value
        raise FaultRuleError(field, f"unknown API key {value}")
    name = str(value).strip()
    if name.isdigit():
        return api_key_of(int(name), field)
    canon = "".join(ch for ch in name.upper() if ch.isalnum())
    for key in ApiKey:
        if key.name.replace("_", "") == canon:
            return int(key)
    raise FaultRuleError(field, f"unknown API {value!r}")


def error_code_of(value: Any, field: str = "errors") -> ErrorCode:
    """An error code from its number or name ("NOT_LEADER_OR_FOLLOWER", "not_leader_or_follower", 6)."""
    if isinstance(value, bool):
        raise FaultRuleError(field, f"not an error code: {value!r}")
    if isinstance(value, int) or (isinstance(value, str) and value.strip().lstrip("-").isdigit()):
        try:
            return ErrorCode(int(value))
        except ValueError:
            raise FaultRuleError(field, f"unknown error code {value}") from None
    if isinstance(value, str):
        try:
            return ErrorCode[value.strip().lower()]
        except KeyError:
            raise FaultRuleError(field, f"unknown error code {value!r}") from None
    raise FaultRuleError(field, f"not an error code: {value!r}")


@dataclass(slots=True)
class FaultMatch:
    """Which requests a rule applies to; None matches anything."""

    api_key: int | None = None
    min_version: int | None = None
    max_version: int | None = None
    broker: int | None = None
    client_id: str | None = None
    topic: str | None = None
    partition: int | None = None

    def matches_partition(self, topic: str, partition: int | None) -> bool:
        """Whether a (topic, partition) of a request is one the rule names (partition None: the
        request names the topic as a whole, as Metadata does)."""
        if self.topic is not None and topic != self.topic:
            return False
        return self.partition is None or partition is None or partition == self.partition

    @property
    def names_partitions(self) -> bool:
        return self.topic is not None or self.partition is not None


@dataclass(slots=True)
class ErrorEntry:
    error: ErrorCode
    delay_ms: int = 0


@dataclass(slots=True)
class HeldRequest:
    """A request a ``hold`` rule parked; ``resume`` hands it to its handler (if still connected)."""

    rule_id: int
    conn_id: int
    api_key: int
    correlation_id: int
    resume: Callable[[], None]


@dataclass(slots=True)
class FaultRule:
    id: int
    match: FaultMatch
    action: str
    errors: list[ErrorEntry] = field(default_factory=list)
    delay_ms: int = 0
    after: bool = False
    count: int | None = 1   # firings left; None: persistent
    fired: int = 0
    _next_error: int = 0

    def take_error(self) -> ErrorEntry:
        """The next error of the stack (the last one repeats once the stack is used up)."""
        entry = self.errors[min(self._next_error, len(self.errors) - 1)]
        self._next_error += 1
        return entry

    def describe(self) -> dict[str, Any]:
        m = self.match
        return {
            "id": self.id, "action": self.action,
            "match": {"api": ApiKey(m.api_key).name if m.api_key is not None else None,
                      "api_key": m.api_key, "min_version": m.min_version, "max_version": m.max_version,
                      "broker": m.broker, "client_id": m.client_id, "topic": m.topic, "partition": m.partition},
            "errors": [{"error": e.error.name.upper(), "code": int(e.error), "delay_ms": e.delay_ms}
                       for e in self.errors],
            "delay_ms": self.delay_ms, "after": self.after, "count": self.count, "fired": self.fired,
        }


_KEYS = {"api", "api_key", "min_version", "max_version", "versions", "broker", "client_id", "topic", "partition",
         "action", "errors", "error", "delay_ms", "after", "count"}


def _opt_int(spec: Mapping[str, Any], key: str, minimum: int | None = None) -> int | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise FaultRuleError(key, f"not an integer: {value!r}")
    try:
        n = int(value)
    except ValueError:
        raise FaultRuleError(key, f"not an integer: {value!r}") from None
    if minimum is not None and n < minimum:
        raise FaultRuleError(key, f"must be at least {minimum}")
    if n > 2**31 - 1:
        raise FaultRuleError(key, "too large")
    return n


def _opt_str(spec: Mapping[str, Any], key: str) -> str | None:
    value = spec.get(key)
    if value is not None and not isinstance(value, str):
        raise FaultRuleError(key, f"not a string: {value!r}")
    return value


def parse_rule(spec: Mapping[str, Any], rule_id: int) -> FaultRule:
    """A rule from its JSON/TOML form, e.g.
    ``{"api": "Produce", "errors": ["NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_OR_FOLLOWER"]}``,
    ``{"api": "Fetch", "action": "hold"}``, ``{"action": "delay", "delay_ms": 200, "broker": 1,
    "count": null}``, ``{"api": 0, "action": "close", "after": true}``."""
    if not isinstance(spec, Mapping):
        raise FaultRuleError("rule", "must be an object")
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise FaultRuleError(unknown[0], f"unknown field (fields: {', '.join(sorted(_KEYS))})")
    api = spec.get("api", spec.get("api_key"))
    match = FaultMatch(
        api_key=None if api is None else api_key_of(api, "api"),
        min_version=_opt_int(spec, "min_version", 0),
        max_version=_opt_int(spec, "max_version", 0),
        broker=_opt_int(spec, "broker", 0),
        client_id=_opt_str(spec, "client_id"),
        topic=_opt_str(spec, "topic"),
        partition=_opt_int(spec, "partition", 0),
    )
    versions = spec.get("versions")
    if versions is not None:  # "3-9", "7", 7, [3, 9]
        if isinstance(versions, (list, tuple)):
            parts = list(versions)
        elif isinstance(versions, (int, str)) and not isinstance(versions, bool):
            parts = str(versions).split("-")
        else:
            parts = []
        if len(parts) == 1:
            parts = parts * 2
        try:
            if len(parts) != 2 or any(isinstance(x, bool) for x in parts):
                raise ValueError
            match.min_version, match.max_version = (int(str(x).strip()) for x in parts)
            if match.min_version < 0:
                raise ValueError
        except (TypeError, ValueError):
            raise FaultRuleError("versions", f"not a version range (A-B, A, or [A, B]): {versions!r}") from None
    if (match.min_version is not None and match.max_version is not None
            and match.min_version > match.max_version):
        raise FaultRuleError("max_version", "below min_version")
    if match.partition is not None and match.topic is None:
        raise FaultRuleError("partition", "needs a topic")
    raw_errors = spec.get("errors", spec.get("error"))
    action = spec.get("action", "error" if raw_errors is not None else None)
    if action not in ACTIONS:
        raise FaultRuleError("action", f"one of {', '.join(ACTIONS)} (or give errors)")
    delay_ms = _opt_int(spec, "delay_ms", 0) or 0
    errors: list[ErrorEntry] = []
    if action == "error":
        if raw_errors is None:
            raise FaultRuleError("errors", "an error rule needs errors")
        items = raw_errors if isinstance(raw_errors, (list, tuple)) else [raw_errors]
        if not items:
            raise FaultRuleError("errors", "empty")
        for item in items:
            if isinstance(item, Mapping):
                code = error_code_of(item.get("error", item.get("code")), "errors")
                entry_delay = _opt_int(item, "delay_ms", 0)
                errors.append(ErrorEntry(code, delay_ms if entry_delay is None else entry_delay))
            else:
                errors.append(ErrorEntry(error_code_of(item), delay_ms))
        if any(e.error is ErrorCode.none for e in errors):
            raise FaultRuleError("errors", "NONE is not an error")
    elif raw_errors is not None:
        raise FaultRuleError("errors", f"only an error rule has errors (action is {action})")
    if action == "error" and match.api_key is None:
        raise FaultRuleError("api", "an error rule must name its api (the error goes into that API's response)")
    if action == "delay" and delay_ms <= 0:
        raise FaultRuleError("delay_ms", "a delay rule needs delay_ms > 0")
    after = spec.get("after", False)
    if not isinstance(after, bool):
        raise FaultRuleError("after", "true or false")
    if after and action not in ("drop", "close"):
        raise FaultRuleError("after", "only drop and close happen after the request took effect")
    if "count" in spec:
        count = _opt_int(spec, "count", 1)
    else:
        count = len(errors) if len(errors) > 1 else 1
    return FaultRule(rule_id, match, action, errors, delay_ms, after, count)


@dataclass(slots=True)
class InjectedError:
    """An error a rule gave this request: the partitions it applies to (``applies``) and its code."""

    error: ErrorCode
    match: FaultMatch

    def applies(self, topic: str, partition: int | None) -> bool:
        return self.match.matches_partition(topic, partition)


class FaultInjector:
    """The rules of one cluster, in the order they were added."""

    def __init__(self) -> None:
        self.rules: list[FaultRule] = []
        self.held: list[HeldRequest] = []
        self._next_id = 1  # ids count the rules accepted: a refused rule uses none up

    def add(self, spec: Mapping[str, Any], check: Callable[[FaultRule], None] | None = None) -> FaultRule:
        """Parse and add a rule; ``check`` may refuse it (by raising) before it takes an id."""
        rule = parse_rule(spec, self._next_id)
        if check is not None:
            check(rule)
        self._next_id += 1
        self.rules.append(rule)
        return rule

    def add_all(self, specs: Iterable[Mapping[str, Any]]) -> list[FaultRule]:
        return [self.add(s) for s in specs]

    def remove(self, rule_id: int) -> FaultRule | None:
        for i, r in enumerate(self.rules):
            if r.id == rule_id:
                del self.rules[i]
                return r
        return None

    def clear(self) -> None:
        self.rules.clear()

    def get(self, rule_id: int) -> FaultRule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    def take(self, api_key: int, version: int, broker: int, client_id: str,
             partitions: Callable[[], list[tuple[str, int | None]]], after: bool) -> FaultRule | None:
        """The first rule with firings left that matches this request (``after``: the rules that act
        once the request took effect, else the others); its firing is counted.  ``partitions`` lists
        the request's (topic, partition)s, asked only when a rule names a topic."""
        for r in self.rules:
            if r.after != after or r.count == 0:
                continue
            m = r.match
            if ((m.api_key is not None and m.api_key != api_key)
                    or (m.min_version is not None and version < m.min_version)
                    or (m.max_version is not None and version > m.max_version)
                    or (m.broker is not None and m.broker != broker)
                    or (m.client_id is not None and m.client_id != client_id)):
                continue
            if m.names_partitions and not any(m.matches_partition(t, p) for t, p in partitions()):
                continue
            if r.count is not None:
                r.count -= 1
            r.fired += 1
            return r
        return None

    def release(self, rule_id: int | None = None) -> int:
        """Let held requests go on to their handlers (those of one rule, or all); how many."""
        keep: list[HeldRequest] = []
        go: list[HeldRequest] = []
        for h in self.held:
            (go if rule_id is None or h.rule_id == rule_id else keep).append(h)
        self.held = keep
        for h in go:
            h.resume()
        return len(go)


def request_partitions(request: Any) -> list[tuple[str | Any, int | None]]:
    """The (topic, partition)s a decoded request names, whatever the API: topic containers
    (``topic_data``, ``topics``, ``groups[].topics``) with a name (``name``, ``topic``) or an id
    (``topic_id``, resolved by the caller), and their partitions (``partition_data``,
    ``partitions``, ``partition_indexes``) by index (``index``, ``partition``,
    ``partition_index``).  A topic named without partitions gives (topic, None)."""
    out: list[tuple[Any, int | None]] = []

    def topics_of(container: Any) -> None:
        for attr in ("topic_data", "topics"):
            items = getattr(container, attr, None)
            if not items or isinstance(items, (str, bytes)):
                continue
            for t in items:
                if isinstance(t, str):  # e.g. a list of topic names
                    out.append((t, None))
                    continue
                name = getattr(t, "name", None) or getattr(t, "topic", None)
                key = name if name else getattr(t, "topic_id", None)
                if key is None:
                    continue
                parts = None
                for pattr in ("partition_data", "partitions", "partition_indexes"):
                    parts = getattr(t, pattr, None)
                    if parts is not None:
                        break
                if not parts:
                    out.append((key, None))
                    continue
                for p in parts:
                    if isinstance(p, int):
                        out.append((key, p))
                    else:
                        idx = next((getattr(p, a) for a in ("index", "partition", "partition_index")
                                    if isinstance(getattr(p, a, None), int)), None)
                        out.append((key, idx))

    topics_of(request)
    for g in getattr(request, "groups", None) or ():
        if not isinstance(g, str):
            topics_of(g)
    return out
