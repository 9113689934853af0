"""The admin HTTP API (mockbroker/admin/http.py) against its OpenAPI document and over real HTTP:
every endpoint and documented error checked by schemathesis (no 500 for any input), and the
routes that steer the broker checked against real Kafka requests over real sockets."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode

from ..purgatory.test_delayed_ops import answered, fetch_body, produce_body

pytest.importorskip("schemathesis")

E = ErrorCode
ADMIN = {"mock.admin.listener": "127.0.0.1:0"}


def http(url: str, method: str = "GET", body: Any = None, raw: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        text = e.read()
        status = e.code
    ctype_json = text[:1] in (b"{", b"[")
    return status, (json.loads(text) if ctype_json else text.decode())


@pytest.fixture(scope="module")
def api_broker():
    """A broker for the property-based run: manual clock, a topic, a group, a quota, a rule."""
    with MockBroker(config={**ADMIN, "mock.num.brokers": 2, "mock.clock": "manual",
                            "mock.topics": "seed:2:2", "mock.quotas": "clients/seed:producer_byte_rate=1000000"}) as b:
        with RawKafkaClient.connect(b.bootstrap_servers.split(",")[0]) as c:
            c.request(0, 9, produce_body("seed", acks=1))
            c.request(8, 8, {"group_id": "seed-group", "generation_id_or_member_epoch": -1, "member_id": "",
                             "topics": [{"name": "seed", "partitions": [{"partition_index": 0,
                                                                         "committed_offset": 1}]}]})
        b.inject(api="Fetch", action="delay", delay_ms=1, count=None)
        yield b


def test_every_endpoint_conforms_and_never_fails(api_broker):
    """schemathesis (its own CLI, every phase: examples, coverage, fuzzing, stateful) against the
    running server: every operation with generated input, valid and invalid; the status is one
    the document lists, the body matches its schema, invalid input is refused, nothing is a 500.
    A value the schema allows may still be one Kafka refuses (a topic name with '/', a broker that
    is not a replica): those are documented 400s, so positive_data_acceptance is left out.
    Hostile bodies (nested 33-300 levels deep) come from tests/unit/admin/schemathesis_hooks.py; every
    request says Content-Type: application/json (a bodiless POST or DELETE without it is a 415,
    tested below), so the operations themselves are reached."""
    cmd = [sys.executable, "-m", "schemathesis.cli", "run", api_broker.admin_url + "/openapi.json",
           "--checks", "all", "--exclude-checks", "positive_data_acceptance", "--max-examples", "25",
           "--generation-deterministic", "--max-time", "30", "--request-timeout", "10",
           "--workers", "1", "--no-color", "--suppress-health-check", "all",
           "--header", "Content-Type: application/json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.unit.admin.schemathesis_hooks"})
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert re.search(r"\b(\d+) passed", out.stdout) and " failed" not in out.stdout.split("SUMMARY")[-1]


def _operations() -> list[tuple[str, str]]:
    with open("mockbroker/admin/openapi.json") as f:
        doc = json.load(f)
    return [(m.upper(), path) for path, ops in doc["paths"].items() for m in ops if m in ("post", "put", "delete")]


@pytest.mark.parametrize("method,path", _operations())
def test_a_body_nested_beyond_the_parser_is_400_on_every_operation(api_broker, method, path):
    """100,000 levels: Python's JSON parser raises RecursionError, which was a 500.  Routes that
    read no body refuse it too (nothing is done: the broker is not stopped)."""
    url = api_broker.admin_url + path.replace("{broker}", "0").replace("{topic}", "seed") \
        .replace("{partition}", "0").replace("{group}", "seed-group").replace("{rule}", "1")
    for raw in (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, b"[" * 100_000 + b"]" * 100_000):
        status, body = http(url, method, raw=raw)
        assert (status, body["field"]) == (400, "body") and "nests" in body["error"], (method, path, body)
    status, body = http(api_broker.admin_url + "/faults", "POST", {"api": _nest_list("Produce", 40)})
    assert (status, body["field"]) == (400, "body") and "deeper than 32 levels" in body["error"]


def _nest_list(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


# -- start-up -----------------------------------------------------------------------------------

CMD = [sys.executable, "-m", "mockbroker", "serve", "--port", "0"]


def test_ready_line_names_the_admin_address_and_port_0_picks_one():
    p = subprocess.Popen(CMD + ["-c", "mock.admin.listener=127.0.0.1:0"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    try:
        line = p.stdout.readline()
        m = re.fullmatch(r"mockbroker ready bootstrap=127\.0\.0\.1:(\d+) admin=127\.0\.0\.1:(\d+)\n", line)
        assert m, line
        status, body = http(f"http://127.0.0.1:{m.group(2)}/brokers")
        assert status == 200 and body[0]["port"] == int(m.group(1))
    finally:
        p.terminate()
        assert p.wait(timeout=10) == 0


@pytest.mark.parametrize("listener", ["0.0.0.0:0", "192.0.2.1:8080", "[::]:0"])
def test_a_remote_address_is_refused_at_start_up(listener):
    p = subprocess.run(CMD + ["-c", f"mock.admin.listener={listener}"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and p.stdout == ""
    assert "not a loopback address" in p.stderr and "mock.admin.allow.remote=true" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_remote_address_is_served_when_allowed_with_a_token():
    with MockBroker(config={"mock.admin.listener": "0.0.0.0:0", "mock.admin.allow.remote": True,
                            "mock.admin.token": "s3cret"}) as b:
        port = b.admin_url.rsplit(":", 1)[1]
        assert http(f"http://127.0.0.1:{port}/clock", headers={"Authorization": "Bearer s3cret"})[0] == 200
        assert http(f"http://127.0.0.1:{port}/clock")[0] == 401


def test_a_remote_address_without_a_token_is_refused_at_start_up():
    p = subprocess.run(CMD + ["-c", "mock.admin.listener=0.0.0.0:0", "-c", "mock.admin.allow.remote=true"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and p.stdout == ""
    assert "mock.admin.allow.remote=true needs mock.admin.token" in p.stderr and "Traceback" not in p.stderr


# -- who may call: Host, Origin, token, content type (issue 21) -----------------------------------------

def test_a_simple_cross_site_post_installs_no_fault(admin):
    """What any web page can send without a CORS preflight (a form's text/plain POST), here with
    the Host and Origin a DNS-rebinding page would give it: refused, nothing installed."""
    status, body = http(admin.admin_url + "/faults", "POST", raw=b'{"api": "Produce", "action": "close"}',
                        headers={"Host": "attacker.example", "Origin": "http://attacker.example",
                                 "Content-Type": "text/plain"})
    assert (status, body["field"]) == (403, "Host")
    assert admin.faults() == []


@pytest.mark.parametrize("headers,status,field", [
    ({"Host": "attacker.example"}, 403, "Host"),
    ({"Host": "attacker.example:{port}"}, 403, "Host"),
    ({"Host": "127.0.0.1.attacker.example"}, 403, "Host"),
    ({"Origin": "http://attacker.example"}, 403, "Origin"),
    ({"Origin": "http://localhost:1"}, 403, "Origin"),  # another local origin: a dev server's page
    ({"Origin": "null"}, 403, "Origin"),
    ({"Origin": "https://127.0.0.1:{port}"}, 403, "Origin"),
    ({"Content-Type": "text/plain"}, 415, "Content-Type"),
    ({"Content-Type": "application/x-www-form-urlencoded"}, 415, "Content-Type"),
    ({"Host": "localhost:{port}"}, 201, None),
    ({"Host": "127.0.0.1"}, 201, None),
    ({"Host": "[::1]:{port}"}, 201, None),
    ({"Origin": "http://127.0.0.1:{port}"}, 201, None),
    ({"Origin": "http://localhost:{port}"}, 201, None),
    ({"Content-Type": "application/json; charset=utf-8"}, 201, None),
])
def test_host_origin_and_content_type_are_checked(admin, headers, status, field):
    port = admin.admin_url.rsplit(":", 1)[1]
    headers = {k: v.replace("{port}", port) for k, v in headers.items()}
    got, body = http(admin.admin_url + "/faults", "POST", {"api": "Metadata", "action": "delay", "delay_ms": 1},
                     headers=headers)
    assert got == status, body
    if field:
        assert body["field"] == field and body["error"]
        assert admin.faults() == []
    else:
        assert [r["id"] for r in admin.faults()] == [body["id"]]


def test_every_mutating_method_needs_json_and_reads_need_nothing(admin):
    url = admin.admin_url
    for method, path in (("DELETE", "/faults"), ("POST", "/brokers/0/stop"), ("DELETE", "/topics/t"),
                         ("PUT", "/replication/lag")):
        req = urllib.request.Request(url + path, method=method)  # no Content-Type at all (curl -X)
        try:
            urllib.request.urlopen(req, timeout=10)
            raise AssertionError(f"{method} {path} was served")
        except urllib.error.HTTPError as e:
            assert (e.code, json.loads(e.read())["field"]) == (415, "Content-Type"), (method, path)
    assert admin.topics()[0]["name"] == "t" and admin.brokers()[0]["alive"]
    with urllib.request.urlopen(url + "/topics", timeout=10) as r:  # a GET needs no content type
        assert r.status == 200


def test_the_token_is_required_on_every_route_when_set():
    with MockBroker(config={**ADMIN, "mock.admin.token": "s3cret"}) as b:
        url = b.admin_url
        for path in ("/status", "/openapi.json", "/metrics"):
            status, body = http(url + path)
            assert (status, body["field"]) == (401, "Authorization"), path
        assert http(url + "/faults", "POST", {"api": "Metadata", "action": "close"},
                    headers={"Authorization": "Bearer wrong"})[0] == 401
        assert http(url + "/faults", "POST", {"api": "Metadata", "action": "close"},
                    headers={"Authorization": "Basic czNjcmV0"})[0] == 401
        assert b.faults() == []
        req = urllib.request.Request(url + "/clock")
        try:
            urllib.request.urlopen(req, timeout=10)
        except urllib.error.HTTPError as e:
            assert e.headers["WWW-Authenticate"].startswith("Bearer")
        status, _ = http(url + "/faults", "POST", {"api": "Metadata", "action": "close"},
                         headers={"Authorization": "Bearer s3cret"})
        assert status == 201 and len(b.faults()) == 1


def test_mock_admin_hosts_adds_a_host_name():
    """A compose service reaching the API as http://mockbroker:PORT names it in mock.admin.hosts."""
    with MockBroker(config={**ADMIN, "mock.admin.hosts": "mockbroker,admin.test"}) as b:
        assert http(b.admin_url + "/clock", headers={"Host": "mockbroker:9644"})[0] == 200
        assert http(b.admin_url + "/clock", headers={"Host": "ADMIN.test"})[0] == 200
        assert http(b.admin_url + "/clock", headers={"Host": "other"})[0] == 403


def test_without_the_listener_nothing_of_the_http_stack_is_imported():
    code = ("import sys; from mockbroker import MockBroker\n"
            "with MockBroker() as b:\n"
            "    assert b.admin_url is None\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aiohttp', 'prometheus_client', "
            "'mockbroker.admin') or m.startswith('mockbroker.admin')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    with_admin = code.replace("MockBroker()", "MockBroker(config={'mock.admin.listener': '127.0.0.1:0'})") \
                     .replace("assert b.admin_url is None", "assert b.admin_url")
    out = subprocess.run([sys.executable, "-c", with_admin], capture_output=True, text=True, timeout=60)
    assert "aiohttp" in out.stdout  # the check above can tell


# -- errors ----------------------------------------------------------------------------------------

@pytest.fixture
def admin():
    with MockBroker(config={**ADMIN, "mock.topics": "t:2"}) as b:
        yield b


@pytest.mark.parametrize("method,path,body,status,field", [
    ("GET", "/topics/nope", None, 404, "topic"),
    ("GET", "/topics/t/partitions/7", None, 404, "partition"),
    ("GET", "/topics/t/partitions/x", None, 400, "partition"),
    ("GET", "/groups/nope", None, 404, "group_id"),
    ("DELETE", "/groups/nope/members/m-1", None, 404, "group_id"),
    ("POST", "/groups/nope/coordinator", {"broker": 0}, 404, "group_id"),
    ("POST", "/brokers/9/stop", None, 404, "broker"),
    ("DELETE", "/faults/99", None, 404, "rule"),
    ("POST", "/faults/release", {"rule": 99}, 404, "rule"),
    ("POST", "/topics", {"name": "t"}, 400, "name"),
    ("POST", "/topics", {"name": "bad name"}, 400, "name"),
    ("POST", "/topics", {"name": "n", "partitions": 0}, 400, "partitions"),
    ("POST", "/topics", {"name": "n", "replication_factor": 5}, 400, "replication_factor"),
    ("POST", "/topics", {"name": "n", "configs": {"retention.ms": "soon"}}, 400, "configs"),
    ("POST", "/topics", {"nam": "n"}, 400, "nam"),
    ("PUT", "/quotas", {"client_id": "c", "values": {"producer_byte_rate": -1}}, 400, "values.producer_byte_rate"),
    ("PUT", "/quotas", {"client_id": "c", "values": {"bogus": 1}}, 400, "values.bogus"),
    ("PUT", "/quotas", {"values": {"producer_byte_rate": 1}}, 400, "user"),
    ("DELETE", "/quotas?client_id=nobody", None, 404, "user"),
    ("GET", "/quotas?colour=red", None, 400, "colour"),
    ("POST", "/faults", {"api": "Produce", "errors": ["NOT_A_CODE"]}, 400, "errors"),
    ("POST", "/faults", {"action": "delay", "delay_ms": 5, "broker": 4}, 404, "broker"),
    ("POST", "/clock/advance", {"ms": 5}, 400, "ms"),
    ("PUT", "/replication/lag", {"lag_ms": -1}, 400, "lag_ms"),
    ("GET", "/journal?api=Nope", None, 400, "api"),
    ("GET", "/journal?limit=-1", None, 400, "limit"),
])
def test_wrong_input_is_a_4xx_naming_the_field(admin, method, path, body, status, field):
    got, payload = http(admin.admin_url + path, method, body)
    assert (got, payload["field"]) == (status, field), payload


def test_malformed_json_and_unknown_routes(admin):
    assert http(admin.admin_url + "/faults", "POST", raw=b"{not json")[1]["field"] == "body"
    assert http(admin.admin_url + "/faults", "POST", raw=b"[1, 2]")[0] == 400
    assert http(admin.admin_url + "/nowhere")[0] == 404
    assert http(admin.admin_url + "/brokers", "DELETE")[0] == 405


# -- steering over HTTP, observed over Kafka ------------------------------------------------------------------

def test_quota_set_over_http_throttles_the_next_response():
    with MockBroker(config={**ADMIN, "mock.topics": "q:1"}, clock=ManualClock()) as b:
        status, q = http(b.admin_url + "/quotas", "PUT", {"client_id": "h", "values": {"producer_byte_rate": 100}})
        assert status == 200 and q["values"] == {"producer_byte_rate": 100.0}
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="h") as c:
            r = c.request(0, 9, produce_body("q", acks=1, n=50))
            assert r.throttle_time.total_seconds() > 0
        assert http(b.admin_url + "/throttles?client_id=h")[1][0]["throttle_ms"] > 0
        assert http(b.admin_url + "/quotas?client_id=h", "DELETE")[0] == 204
        assert http(b.admin_url + "/quotas")[1] == []


def test_manual_clock_advanced_over_http_answers_a_long_poll():
    with MockBroker(config={**ADMIN, "mock.clock": "manual", "mock.topics": "lp:1"}) as b:
        assert http(b.admin_url + "/clock")[1]["mode"] == "manual"
        with RawKafkaClient.connect(b.bootstrap_servers) as c:
            corr = c.send(1, 12, fetch_body("lp", 0, max_wait_ms=500))
            assert not answered(c)
            status, clock = http(b.admin_url + "/clock/advance", "POST", {"ms": 500})
            assert status == 200
            assert c.response(1, 12, corr).error_code == E.none
        journal = http(b.admin_url + "/journal?api=Fetch")[1]
        assert journal[0]["parked_ms"] == 500.0 and journal[0]["completed_by"] == "timeout"


def test_hold_and_release_over_http(admin):
    status, rule = http(admin.admin_url + "/faults", "POST", {"api": "Metadata", "action": "hold"})
    assert status == 201
    with RawKafkaClient.connect(admin.bootstrap_servers) as c:
        corr = c.send(3, 12, {"topics": None})
        assert not answered(c)
        held = http(admin.admin_url + "/faults/held")[1]
        assert [h["correlation_id"] for h in held] == [corr]
        conns = http(admin.admin_url + "/connections")[1]
        assert conns[0]["in_flight"]["api"] == "METADATA" and "RESPONSE_PENDING" in conns[0]["muted"]
        assert http(admin.admin_url + "/faults/release", "POST", {"rule": rule["id"]})[1] == {"released": 1}
        assert c.response(3, 12, corr).brokers


def test_topics_brokers_and_partitions_over_http():
    with MockBroker(config={**ADMIN, "mock.num.brokers": 3}) as b:
        status, t = http(b.admin_url + "/topics", "POST", {"name": "h3", "partitions": 2, "replication_factor": 3})
        assert status == 201 and len(t["partitions"]) == 2
        p0 = http(b.admin_url + "/topics/h3/partitions/0")[1]
        other = next(r for r in p0["isr"] if r != p0["leader"])
        assert http(b.admin_url + "/topics/h3/partitions/0/elect", "POST", {"broker": other})[1]["leader"] == other
        assert http(b.admin_url + f"/brokers/{other}/stop", "POST")[1]["alive"] is False
        assert http(b.admin_url + "/topics/h3/partitions/0")[1]["leader"] != other
        assert http(b.admin_url + f"/brokers/{other}/start", "POST")[1]["alive"] is True
        assert http(b.admin_url + "/topics/h3", "DELETE")[0] == 204
        assert http(b.admin_url + "/topics/h3")[0] == 404


def test_the_document_is_what_scripts_openapi_writes():
    out = subprocess.run([sys.executable, "scripts/openapi.py", "--check"], capture_output=True, timeout=60)
    assert out.returncode == 0, "run python scripts/openapi.py and commit mockbroker/admin/openapi.json"


def test_expel_over_http_fences_a_consumer_groups_member():
    from ..group.test_consumer_group_protocol import Member
    with MockBroker(config={**ADMIN, "mock.topics": "t:4"}, clock=ManualClock()) as b:
        a, m2 = Member(b, "x"), Member(b, "x")
        a.hb(), m2.hb()
        status, g = http(f"{b.admin_url}/groups/x/members/{m2.member_id}", "DELETE")
        assert status == 200 and [m["member_id"] for m in g["members"]] == [a.member_id]
        assert m2.hb().error_code == E.unknown_member_id
        status, err = http(f"{b.admin_url}/groups/x/members/{m2.member_id}", "DELETE")
        assert (status, err["field"]) == (404, "member_id")


def test_coordinator_moved_over_http():
    with MockBroker(config={**ADMIN, "mock.num.brokers": 2, "mock.topics": "t:1"}, clock=ManualClock()) as b:
        node = b.call(lambda c: c.groups.find_coordinator("mv").node_id)
        with RawKafkaClient.connect(b.bootstrap_servers.split(",")[node]) as c:
            c.request(8, 8, {"group_id": "mv", "generation_id_or_member_epoch": -1, "member_id": "",
                             "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}]})
        status, err = http(f"{b.admin_url}/groups/mv/coordinator", "POST", {"broker": 5})
        assert (status, err["field"]) == (400, "broker")
        status, g = http(f"{b.admin_url}/groups/mv/coordinator", "POST", {"broker": 1 - node})
        assert (status, g["coordinator"]) == (200, 1 - node)
        with RawKafkaClient.connect(b.bootstrap_servers.split(",")[node]) as c:
            r = c.request(9, 7, {"group_id": "mv", "topics": [{"name": "t", "partition_indexes": [0]}],
                                 "require_stable": False})
            assert r.error_code == E.not_coordinator


def test_expel_over_http_fences_a_share_groups_member():
    import uuid

    from ..share.test_share_cluster import heartbeat
    cfg = {**ADMIN, "mock.topics": "t:2", "group.share.assignment.interval.ms": 0}
    with MockBroker(config=cfg, clock=ManualClock()) as b, RawKafkaClient.connect(b.bootstrap_servers) as c:
        a, m2 = str(uuid.uuid4()), str(uuid.uuid4())
        ea = heartbeat(c, "sg", a, 0, ["t"]).member_epoch
        e2 = heartbeat(c, "sg", m2, 0, ["t"]).member_epoch
        ea = heartbeat(c, "sg", a, ea).member_epoch
        heartbeat(c, "sg", m2, e2)
        status, g = http(f"{b.admin_url}/groups/sg/members/{m2}", "DELETE")
        assert status == 200 and [m["member_id"] for m in g["members"]] == [a]
        assert heartbeat(c, "sg", m2, e2).error_code == E.unknown_member_id
        r = heartbeat(c, "sg", a, ea)
        assert sorted(p for t in r.assignment.topic_partitions for p in t.partitions) == [0, 1]
