"""franz-go (kgo) steered only over the admin HTTP API: no Python in its process.

``mockbroker serve --port 0 -c mock.admin.listener=127.0.0.1:0`` runs as a subprocess (one for the
module); its ready line gives the bootstrap and admin addresses, which go to the Go test program's
``control`` command (tests/integration/go/control.go, in the same binary as the group test's
program: ``groupconsumers control SCENARIO BOOTSTRAP ADMIN``).  The program creates its topic, adds
fault rules, releases held requests and sets quotas with net/http against the admin API, runs kgo
against the broker and prints one JSON line of what it saw -- from kgo (produce results, its
HookBrokerConnect / HookBrokerDisconnect / HookBrokerThrottle calls) and from the broker over HTTP
(GET /faults/{id}, /faults/held, /journal, /connections, /throttles).  This test asserts on that
line, and reads GET /faults and /journal over HTTP itself as a cross-check.

* produce-retry: Produce answered NOT_LEADER_OR_FOLLOWER twice -> kgo retries after its retry
  backoff (250 ms, jittered 0.8-1.2) and succeeds; the rule fired twice; the records are appended
  once, at offsets 0-9.
* hold-fetch: the consumer's first Fetch held -> nothing is consumed while it is held (it is in
  flight on the connection), every record once it is released.
* disconnect: the connection closed on a Produce before it took effect -> kgo sees the connection
  drop (HookBrokerDisconnect), refreshes its metadata, retries on a new connection
  (HookBrokerConnect) and the records are appended once.
* quota: producer_byte_rate set with PUT /quotas -> the next Produce responses carry
  throttle_time_ms; kgo reports each to HookBrokerThrottle as applied after the response (KIP-219)
  and sends nothing to that broker before the deadline (the broker runs in mock.throttle.mode=observe,
  so the wait is the client's own, and GET /throttles records whether it sent early).

Toolchain: go (gotools.py builds the program); skips without it, fails under CI.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import urllib.request
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from .gotools import franz_go_binary

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 30
RUN_TIMEOUT_S = 90
SLACK_MS = 5


@dataclass
class Served:
    proc: subprocess.Popen[str]
    bootstrap: str
    admin: str

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://{self.admin}{path}", timeout=10) as r:
            return json.loads(r.read())


def serve(stderr_path: Path, *config: str) -> Served:
    """``mockbroker serve`` on 127.0.0.1, port 0, with the admin listener; waits for its ready line."""
    args = [sys.executable, "-m", "mockbroker", "serve", "--host", "127.0.0.1", "--port", "0",
            "-c", "mock.admin.listener=127.0.0.1:0"]
    for item in config:
        args += ["-c", item]
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(READY_TIMEOUT_S)
    fields = dict(f.split("=", 1) for f in (box[0] if box else "").split()[2:] if "=" in f)
    if "bootstrap" not in fields or "admin" not in fields:
        proc.kill()
        proc.wait()
        pytest.fail(f"no ready line with bootstrap= and admin= within {READY_TIMEOUT_S}s: {box!r}\n"
                    f"stderr:\n{stderr_path.read_text()[-3000:]}")
    return Served(proc, fields["bootstrap"], fields["admin"])


def stop(s: Served) -> None:
    s.proc.send_signal(signal.SIGTERM)
    try:
        s.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        s.proc.wait()


@pytest.fixture(scope="module")
def franz_go() -> str:
    return franz_go_binary()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    # two 1 s quota samples: a throttle stays short; observe mode: a throttled response does not mute
    # the connection, so whether the client waits is the client's doing
    s = serve(tmp_path_factory.mktemp("control-franz-go") / "broker.stderr",
              "quota.window.num=2", "mock.throttle.mode=observe")
    yield s
    stop(s)


def run_control(binary: str, broker: Served, scenario: str) -> dict[str, Any]:
    cmd = [binary, "control", scenario, broker.bootstrap, broker.admin]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        pytest.fail(f"control {scenario} timed out after {RUN_TIMEOUT_S}s; stderr tail:\n{err[-3000:]}")
    lines = r.stdout.strip().splitlines()
    try:
        out = json.loads(lines[-1]) if lines else {}
    except ValueError:
        out = {"unparsed stdout": r.stdout[-2000:]}
    assert r.returncode == 0 and out.get("ok") and out.get("scenario") == scenario, \
        f"control {scenario} exited {r.returncode}\nresult: {out}\nstderr tail:\n{r.stderr[-3000:]}"
    return out


def rule_over_http(broker: Served, rule_id: int) -> dict[str, Any]:
    rules = [r for r in broker.get("/faults") if r["id"] == rule_id]
    assert rules, f"GET /faults has no rule {rule_id}"
    return rules[0]


def test_produce_retried_after_not_leader_twice(franz_go, broker):
    r = run_control(franz_go, broker, "produce-retry")
    rid = r["rule"]
    assert r["fired"] == 2 and rule_over_http(broker, rid)["fired"] == 2
    assert rule_over_http(broker, rid)["count"] == 0  # the stack is used up
    attempts = r["attempts"]
    assert [(a["fault_rule"], a["errors"]) for a in attempts] == [(rid, [6]), (rid, [6]), (None, [0])], attempts
    assert len({a["connection"] for a in attempts}) == 1, "kgo retried on the same connection"
    # kgo's default RetryBackoffFn: 250 ms and up, times a jitter of 0.8..1.2
    gaps = [b["arrived_ms"] - a["arrived_ms"] for a, b in pairwise(attempts)]
    assert all(g >= 200 - SLACK_MS for g in gaps), gaps
    assert r["offsets"] == list(range(10))
    assert r["log_end_offset"] == 10  # appended once
    produce = broker.get("/journal?api=Produce&client_id=franz-produce")
    assert [p["fault_rule"] for p in produce] == [rid, rid, None]


def test_fetch_held_until_released(franz_go, broker):
    r = run_control(franz_go, broker, "hold-fetch")
    rid = r["rule"]
    assert [(h["rule"], h["api"]) for h in r["held"]] == [(rid, "FETCH")]
    assert r["still_held_after_300ms"] == 1
    assert "FETCH" in r["in_flight_while_held"]  # GET /connections while held
    assert r["seen_while_held"] == 0
    assert r["released"] == 1
    assert r["seen"] == [str(i) for i in range(10)]  # every record, once, in order
    assert r["fired"] == 1 and rule_over_http(broker, rid)["fired"] == 1
    held = [f for f in r["fetches"] if f["fault_rule"] == rid]
    assert len(held) == 1 and held[0]["outcome"] == "response", r["fetches"]
    # the held Fetch reached its handler only on release, at least 300 ms after it was read
    assert held[0]["handled_ms"] - held[0]["received_ms"] >= 300, held
    assert broker.get("/faults/held") == []


def test_disconnect_then_reconnect(franz_go, broker):
    r = run_control(franz_go, broker, "disconnect")
    rid = r["rule"]
    assert r["fired"] == 1 and rule_over_http(broker, rid)["fired"] == 1
    closed, retried = r["attempts"]
    assert (closed["outcome"], closed["fault_rule"]) == ("closed", rid), closed
    assert (retried["outcome"], retried["fault_rule"], retried["errors"]) == ("response", None, [0]), retried
    assert retried["connection"] != closed["connection"], "kgo retried on a new connection"
    assert closed["connection"] not in r["connections_after"] and retried["connection"] in r["connections_after"]
    # kgo's own view: the closed connection went down, the retry's came up (peers are the client's ends)
    assert closed["peer"] in r["client_disconnects"], (closed["peer"], r["client_disconnects"])
    assert retried["peer"] in r["client_connects"] and retried["peer"] != closed["peer"], r["client_connects"]
    # kgo refreshed its metadata between losing the request and retrying it
    assert any(closed["arrived_ms"] < m["arrived_ms"] < retried["arrived_ms"] for m in r["metadata"]), r["metadata"]
    assert r["offsets"] == list(range(5))
    assert r["log_end_offset"] == 5  # the closed request was not appended; the retry was, once


def test_quota_throttles_next_responses(franz_go, broker):
    r = run_control(franz_go, broker, "quota")
    assert r["quota"]["values"] == {"producer_byte_rate": 10000}
    assert broker.get("/quotas?client_id=franz-quota")[0]["values"] == {"producer_byte_rate": 10000}
    journal = r["journal"]
    throttles = [j["throttle_time_ms"] for j in journal]
    assert len(throttles) == 3 and any(throttles), throttles
    # HookBrokerThrottle got exactly the broker's throttle_time_ms, as applied after the response
    hooked = r["client_throttles"]
    assert [t["ms"] for t in hooked] == [t for t in throttles if t], (hooked, throttles)
    assert all(t["after_response"] for t in hooked), hooked
    events = r["throttle_events"]
    assert [e["throttle_ms"] for e in events] == [t for t in throttles if t], events
    assert all(e["client_should_throttle"] and e["mode"] == "observe" for e in events), events
    # kgo sent nothing before the deadline: the next Produce arrived after it, never early
    for i, t in enumerate(throttles[:-1]):
        if t:
            assert journal[i + 1]["arrived_ms"] >= journal[i]["sent_ms"] + t - SLACK_MS, journal
            assert r["sends"][i + 1]["took_ms"] >= t - 20, r["sends"]
    assert all(e["early_ms"] in (0, None) for e in events), events
    assert r["log_end_offset"] == 24
