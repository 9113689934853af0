"""The ACL APIs without an authorizer (authorizer.class.name unset, Kafka's default): every version
of DescribeAcls, CreateAcls and DeleteAcls answers SECURITY_DISABLED where Kafka's AclApis puts it,
with its messages; UNKNOWN elements (code 0) close the connection as a request Kafka cannot parse,
while a code Kafka's enums lack is answered SECURITY_DISABLED like any other; the ApiVersions ranges
are Kafka 4.4's."""

from __future__ import annotations

import logging

import pytest

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.kafka_releases import RECORDED

E = ErrorCode
# TOPIC (2) "t" LITERAL (3), User:u from any host, READ (3) ALLOW (3)
CREATION = {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3, "principal": "User:u",
            "host": "*", "operation": 3, "permission_type": 3}
# ANY resource (1) of any name, pattern ANY (1), any principal and host, operation ANY (1), permission ANY (1)
FILTER = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
          "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}


@pytest.fixture(scope="module")
def b():
    with MockBroker() as b:
        yield b


def test_api_versions_advertise_kafka_44s_ranges(c):
    ranges = {k.api_key: (k.min_version, k.max_version) for k in c.request(18, 3, {
        "client_software_name": "t", "client_software_version": "1"}).api_keys}
    kafka = dict(RECORDED["4.4"]["api_keys"])
    for key in (29, 30, 31):
        assert ranges[key] == tuple(kafka[key])


@pytest.mark.parametrize("version", [1, 2, 3])
def test_describe_acls_is_security_disabled_at_the_top(c, version):
    r = c.request(29, version, FILTER)
    assert (r.error_code, r.error_message, list(r.resources)) == (
        E.security_disabled, "No Authorizer is configured on the broker", [])


@pytest.mark.parametrize("version", [1, 2, 3])
def test_create_acls_gives_each_creation_security_disabled(c, version):
    r = c.request(30, version, {"creations": [CREATION, {**CREATION, "resource_type": 4, "resource_name": "x"}]})
    assert [(x.error_code, x.error_message) for x in r.results] == [
        (E.security_disabled, "No Authorizer is configured.")] * 2
    assert list(c.request(30, version, {"creations": []}).results) == []


@pytest.mark.parametrize("version", [1, 2, 3])
def test_delete_acls_gives_each_filter_security_disabled(c, version):
    r = c.request(31, version, {"filters": [FILTER, {**FILTER, "resource_name_filter": "t"}]})
    assert [(x.error_code, x.error_message, list(x.matching_acls)) for x in r.filter_results] == [
        (E.security_disabled, "No Authorizer is configured.", [])] * 2


@pytest.mark.parametrize("key,body", [
    (29, {**FILTER, "operation": 0}),
    (29, {**FILTER, "pattern_type_filter": 0}),
    (30, {"creations": [CREATION, {**CREATION, "permission_type": 0}]}),
    (30, {"creations": [{**CREATION, "resource_type": 0}]}),
    (31, {"filters": [{**FILTER, "resource_type_filter": 0}]}),
])
def test_unknown_elements_close_the_connection(b, caplog, key, body):
    caplog.set_level(logging.INFO)
    c = RawKafkaClient.connect(b.bootstrap_servers)
    try:
        c.send(key, 2, body)
        assert c.is_closed_by_peer()
    finally:
        c.close()
    assert any("UNKNOWN elements" in r.getMessage() for r in caplog.records)


# Kafka 4.4.0 (the differential tester, no authorizer): a code Kafka's enums do not have is read as
# UNKNOWN by fromCode after the request's validation (which refuses only code 0), and AclApis answers
# SECURITY_DISABLED before it looks at the values
@pytest.mark.parametrize("change", [{"permission_type": 4}, {"operation": 127}, {"operation": -1},
                                    {"resource_type": -1}, {"pattern_type": 5}])
def test_codes_kafka_does_not_know_are_security_disabled(c, change):
    f = {("resource_type_filter" if k == "resource_type" else "pattern_type_filter" if k == "pattern_type" else k): v
         for k, v in change.items()}
    r = c.request(29, 3, {**FILTER, **f})
    assert (r.error_code, r.error_message, list(r.resources)) == (
        E.security_disabled, "No Authorizer is configured on the broker", [])
    creation = {("resource_pattern_type" if k == "pattern_type" else k): v for k, v in change.items()}
    r = c.request(30, 3, {"creations": [CREATION, {**CREATION, **creation}]})
    assert [(x.error_code, x.error_message) for x in r.results] == [
        (E.security_disabled, "No Authorizer is configured.")] * 2
    r = c.request(31, 3, {"filters": [{**FILTER, **f}]})
    assert [(x.error_code, x.error_message) for x in r.filter_results] == [
        (E.security_disabled, "No Authorizer is configured.")]


def test_injected_errors_answer_as_get_error_response(b, c):
    b.inject(api=30, errors=["NOT_CONTROLLER"])
    r = c.request(30, 3, {"creations": [CREATION, CREATION]})
    assert [(x.error_code, x.error_message) for x in r.results] == [(E.not_controller, None)] * 2
    b.inject(api=31, errors=["NOT_CONTROLLER"])
    r = c.request(31, 3, {"filters": [FILTER]})
    assert [(x.error_code, x.error_message) for x in r.filter_results] == [(E.not_controller, None)]
