"""DescribeClientQuotas and AlterClientQuotas at their edges, asserting what Kafka 4.4.0 answered to the
same requests (the differential tester and probes of a single-node Kafka 4.4.0): ClientQuotaControlManager's
entity map, duplicate keys and entities and value checks, and ClientQuotasImage.describe's filter checks."""

from __future__ import annotations

import pytest

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode

E = ErrorCode
DUPLICATE = "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=%s})"


@pytest.fixture(scope="module")
def b():
    with MockBroker() as b:
        yield b


def ent(name, etype="client-id"):
    return {"entity_type": etype, "entity_name": name}


def op(key="producer_byte_rate", value=1024.0, remove=False):
    return {"key": key, "value": value, "remove": remove}


def alter(c, *entries, validate=False):
    """[(error, message, entity)] of an AlterClientQuotas v1; each entry (entity components, ops)."""
    r = c.request(49, 1, {"entries": [{"entity": e, "ops": o} for e, o in entries], "validate_only": validate})
    return [(x.error_code, x.error_message, [(y.entity_type, y.entity_name) for y in x.entity]) for x in r.entries]


def quotas(c, name):
    r = c.request(48, 1, {"components": [{"entity_type": "client-id", "match_type": 0, "match": name}],
                          "strict": False})
    assert (r.error_code, r.error_message) == (E.none, "")
    return [{v.key: v.value for v in x.values} for x in r.entries]


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_a_value_that_is_not_finite_is_refused(c, value):
    name = f"not-finite-{value}"
    assert alter(c, ([ent(name)], [op(value=value)])) == [
        (E.invalid_request, "Quota producer_byte_rate must be a finite number", [("client-id", name)])]
    assert quotas(c, name) == []
    assert alter(c, ([ent(name)], [op()])) == [(E.none, None, [("client-id", name)])]  # the connection goes on


@pytest.mark.parametrize("entity, ops, message", [
    ([ent("v1")], [op(value=1.5)], "producer_byte_rate cannot be a fractional value."),
    ([ent("v2")], [op(value=2.0 ** 64)], "Proposed value for producer_byte_rate is too large for a LONG."),
    ([ent("v3")], [op(value=0.0)], "Quota producer_byte_rate must be greater than 0"),
    ([ent("v4")], [op("nope")], "Invalid configuration key nope"),
    ([ent("1.2.3.4", "ip")], [op("connection_creation_rate", 2.5)], "connection_creation_rate cannot be a fractional value."),
    ([ent("1.2.3.5", "ip")], [op("connection_creation_rate", 3e9)],
     "Proposed value for connection_creation_rate is too large for an INT."),
    ([ent("1.2.3.6", "ip")], [op()], "Invalid configuration key producer_byte_rate"),
    ([ent("no-such-host.invalid", "ip")], [op("connection_creation_rate", 3.0)],
     "no-such-host.invalid is not a valid IP or resolvable host."),
    ([ent("u1", "user"), ent("1.2.3.6", "ip")], [op()],
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    ([], [], "Invalid empty client quota entity"),
    ([ent("", "user")], [], "Empty user not supported"),
    ([ent("x", "bogus")], [op()], "Unhandled client quota entity type: bogus"),
])
def test_refusals_with_kafkas_messages(c, entity, ops, message):
    [(error, got, _)] = alter(c, (entity, ops), validate=True)
    assert (error, got) == (E.invalid_request, message)


@pytest.mark.parametrize("entity, ops", [
    ([ent("ok1")], [op(value=1.0000001)]),  # within getErrorForIntegralQuotaValue's 1e-6
    ([ent("ok2")], [op(value=2.0 ** 63)]),  # not above 9.223372E18F
    ([ent("ok3")], [op("nope", 0.0, remove=True)]),  # a removal is never checked
    ([ent("10.0.0.1", "ip")], [op("connection_creation_rate", 5.0)]),
])
def test_accepted_as_kafka_accepts(c, entity, ops):
    [(error, message, _)] = alter(c, (entity, ops), validate=True)
    assert (error, message) == (E.none, None)


def test_a_quota_key_twice_refuses_the_entity(c):
    assert alter(c, ([ent("twice")], [op(value=1000.0), op(value=2000.0)])) == [
        (E.invalid_request, DUPLICATE % "twice", [("client-id", "twice")])]
    assert quotas(c, "twice") == []


def test_an_entity_type_twice_keeps_its_last_name(c):
    """AlterClientQuotasRequest.entries puts the components in a HashMap: the last name wins, and the
    answer names the entity as the map has it."""
    assert alter(c, ([ent("first"), ent("last")], [op(value=1000.0)])) == [(E.none, None, [("client-id", "last")])]
    assert quotas(c, "last") == [{"producer_byte_rate": 1000.0}] and quotas(c, "first") == []


def test_an_entity_twice_is_answered_once_and_its_first_change_stays(c):
    """ClientQuotaControlManager answers per entity: the second entry replaces the first one's answer
    with "Ignoring duplicate entity", but the first entry's records were already written."""
    assert alter(c, ([ent("dup")], [op(value=1000.0)]), ([ent("dup")], [op("consumer_byte_rate", 2000.0)])) == [
        (E.invalid_request, DUPLICATE % "dup", [("client-id", "dup")])]
    assert quotas(c, "dup") == [{"producer_byte_rate": 1000.0}]
    assert alter(c, ([ent("dupv")], [op()]), ([ent("dupv")], [op()]), validate=True) == [
        (E.invalid_request, DUPLICATE % "dupv", [("client-id", "dupv")])]
    assert quotas(c, "dupv") == []


def describe(c, *components, strict=False):
    r = c.request(48, 1, {"components": [{"entity_type": t, "match_type": m, "match": s} for t, m, s in components],
                          "strict": strict})
    return r.error_code, r.error_message, None if r.entries is None else len(r.entries)


@pytest.mark.parametrize("components, error, message", [
    ([("bogus", 0, "x")], E.unsupported_version, "Unsupported entity type bogus"),
    ([("", 0, "x")], E.invalid_request, "Invalid empty entity type."),
    ([("client-id", 0, "x"), ("client-id", 0, "y")], E.invalid_request,
     "Entity type client-id cannot appear more than once in the filter."),
    ([("client-id", 0, None)], E.invalid_request, "Request specified MATCH_TYPE_EXACT, but set match string to null."),
    ([("client-id", 1, "x")], E.invalid_request, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ([("client-id", 1, "")], E.invalid_request, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ([("client-id", 2, "x")], E.invalid_request,
     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
    ([("client-id", 5, None)], E.invalid_request, "Unknown match type 5"),
    ([("client-id", -1, "x")], E.invalid_request, "Unknown match type -1"),
    ([("ip", 2, None), ("user", 2, None)], E.invalid_request,
     "Invalid entity filter component combination. IP filter component should not be used with user or "
     "clientId filter component."),
])
def test_describe_refuses_a_filter_as_kafka(c, components, error, message):
    assert describe(c, *components) == (error, message, None)


def test_describe_answers_with_an_empty_message(c):
    assert alter(c, ([ent("seen")], [op()])) == [(E.none, None, [("client-id", "seen")])]
    assert describe(c, ("client-id", 0, "seen")) == (E.none, "", 1)
    assert describe(c, ("client-id", 2, None))[:2] == (E.none, "")
    assert describe(c, strict=True) == (E.none, "", 0)


def test_an_error_for_the_whole_request_has_null_entries(b, c):
    """DescribeClientQuotasRequest.getErrorResponse (an injected error, a refused DESCRIBE_CONFIGS):
    the error, no message, and null entries where a described answer has a list."""
    b.inject(api=48, errors=["NOT_CONTROLLER"])
    assert describe(c, ("client-id", 2, None)) == (E.not_controller, None, None)
