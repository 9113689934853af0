"""kafkajs (Node) steered only over the admin HTTP API: no Python in its process.

``mockbroker serve --port 0 -c mock.admin.listener=127.0.0.1:0`` runs as a subprocess (one for the
module); its ready line gives the bootstrap and admin addresses, which go to
tests/integration/js/control.js.  That program creates its topic, adds fault rules, releases held
requests and sets quotas with Node's fetch() against the admin API, runs kafkajs against the broker
and prints one JSON line of what it saw -- from kafkajs (results, instrumentation events, its
throttle log line) and from the broker over HTTP (GET /faults/{id}, /faults/held, /journal,
/connections, /throttles).  This test asserts on that line, and reads GET /faults and /journal over
HTTP itself as a cross-check.

* produce-retry: Produce answered NOT_LEADER_OR_FOLLOWER twice -> kafkajs refreshes metadata,
  retries with its exponential backoff and succeeds; the rule fired twice; the records are appended
  once.
* hold-fetch: the group consumer's first Fetch held -> nothing is consumed while it is held (it is in
  flight on the connection), every record once it is released.
* disconnect: the connection closed on a Produce before it took effect -> kafkajs reconnects (a new
  connection) and the records are appended once.
* quota: producer_byte_rate set with PUT /quotas -> the next Produce responses carry
  throttle_time_ms; kafkajs (Produce v7, KIP-219) turns it into clientSideThrottleTime, logs it and
  holds its next request back at least that long (the broker runs in mock.throttle.mode=observe, so
  the wait is the client's own, and GET /throttles records whether it sent early).

Toolchain: node, npm and node_modules (jstools.py); skips without them, fails under CI.
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

from .jstools import JS_DIR, node_with_kafkajs

ROOT = Path(__file__).resolve().parents[2]
CONTROL_JS = JS_DIR / "control.js"
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
def node() -> str:
    return node_with_kafkajs()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    # two 1 s quota samples: a throttle stays short; observe mode: a throttled response does not mute the
    # connection, so whether the client waits is the client's doing (and the broker records it, early_ms);
    # no initial rebalance delay for the consumer group
    s = serve(tmp_path_factory.mktemp("control-kafkajs") / "broker.stderr",
              "quota.window.num=2", "mock.throttle.mode=observe", "group.initial.rebalance.delay.ms=0")
    yield s
    stop(s)


def run_control(node: str, broker: Served, scenario: str) -> dict[str, Any]:
    cmd = [node, str(CONTROL_JS), scenario, broker.bootstrap, broker.admin]
    try:
        r = subprocess.run(cmd, cwd=JS_DIR, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        pytest.fail(f"control.js {scenario} timed out after {RUN_TIMEOUT_S}s; stderr tail:\n{err[-3000:]}")
    lines = r.stdout.strip().splitlines()
    try:
        out = json.loads(lines[-1]) if lines else {}
    except ValueError:
        out = {"unparsed stdout": r.stdout[-2000:]}
    assert r.returncode == 0 and out.get("ok") and out.get("scenario") == scenario, \
        f"control.js {scenario} exited {r.returncode}\nresult: {out}\nstderr tail:\n{r.stderr[-3000:]}"
    return out


def rule_over_http(broker: Served, rule_id: int) -> dict[str, Any]:
    rules = [r for r in broker.get("/faults") if r["id"] == rule_id]
    assert rules, f"GET /faults has no rule {rule_id}"
    return rules[0]


def test_produce_retried_after_not_leader_twice(node, broker):
    r = run_control(node, broker, "produce-retry")
    rid = r["rule"]
    assert r["fired"] == 2 and rule_over_http(broker, rid)["fired"] == 2
    assert rule_over_http(broker, rid)["count"] == 0  # the stack is used up
    attempts = r["attempts"]
    assert [(a["fault_rule"], a["errors"]) for a in attempts] == [(rid, [6]), (rid, [6]), (None, [0])], attempts
    assert len({a["connection"] for a in attempts}) == 1, "kafkajs retried on the same connection"
    # kafkajs' retrier (src/retry/index.js): the first wait is initialRetryTime (100 ms) +-20%, each
    # next one the previous +-20%, times the multiplier (2): at least 80 ms, then at least
    # 2 * 0.8 * 80 = 128 ms (a bound of 160 fails when the first wait is drawn near 80 ms)
    gaps = [b["arrived_ms"] - a["arrived_ms"] for a, b in pairwise(attempts)]
    assert gaps[0] >= 80 - SLACK_MS and gaps[1] >= 2 * 0.8 * 80 - SLACK_MS, gaps
    # NOT_LEADER_OR_FOLLOWER makes kafkajs refresh its metadata before the retry
    first, last = attempts[0]["arrived_ms"] * 1e6, attempts[-1]["arrived_ms"] * 1e6
    refreshes = [m for m in broker.get("/journal?api=Metadata&client_id=kjs-produce")
                 if first < m["arrived_clock_ns"] < last]
    assert refreshes, "no Metadata request between the first attempt and the success"
    assert r["acked"] == [{"partition": 0, "baseOffset": 0, "errorCode": 0}]
    assert r["log_end_offset"] == 10  # appended once
    produce = broker.get("/journal?api=Produce&client_id=kjs-produce")
    assert [p["fault_rule"] for p in produce] == [rid, rid, None]


def test_fetch_held_until_released(node, broker):
    r = run_control(node, broker, "hold-fetch")
    rid = r["rule"]
    assert [(h["rule"], h["api"]) for h in r["held"]] == [(rid, "FETCH")]
    assert r["still_held_after_300ms"] == 1
    assert "FETCH" in [f["api"] for f in r["in_flight_while_held"]]  # GET /connections while held
    assert r["seen_while_held"] == 0
    assert r["released"] == 1
    assert r["seen"] == [str(i) for i in range(10)]  # every record, once, in order
    assert r["fired"] == 1 and rule_over_http(broker, rid)["fired"] == 1
    held = [f for f in r["fetches"] if f["fault_rule"] == rid]
    assert len(held) == 1 and held[0]["outcome"] == "response", r["fetches"]
    # the held Fetch reached its handler only on release, at least 300 ms after it was read
    assert held[0]["handled_ms"] - held[0]["received_ms"] >= 300, held
    assert broker.get("/faults/held") == []


def test_disconnect_then_reconnect(node, broker):
    r = run_control(node, broker, "disconnect")
    rid = r["rule"]
    assert r["fired"] == 1 and rule_over_http(broker, rid)["fired"] == 1
    closed, retried = r["attempts"]
    assert (closed["outcome"], closed["fault_rule"]) == ("closed", rid), closed
    assert (retried["outcome"], retried["fault_rule"], retried["errors"]) == ("response", None, [0]), retried
    assert retried["connection"] != closed["connection"], "kafkajs retried on a new connection"
    assert closed["connection"] not in r["connections_after"] and retried["connection"] in r["connections_after"]
    assert r["acked"] == [{"partition": 0, "baseOffset": 0, "errorCode": 0}]
    assert r["log_end_offset"] == 5  # the closed request was not appended; the retry was, once


def test_quota_throttles_next_responses(node, broker):
    r = run_control(node, broker, "quota")
    assert r["quota"]["values"] == {"producer_byte_rate": 10000}
    assert broker.get("/quotas?client_id=kjs-quota")[0]["values"] == {"producer_byte_rate": 10000}
    journal = r["journal"]
    throttles = [j["throttle_time_ms"] for j in journal]
    assert len(throttles) == 3 and any(throttles), throttles
    # kafkajs saw exactly the throttle_time_ms the broker sent (its clientSideThrottleTime)
    assert r["client_throttles_ms"] == [t for t in throttles if t], (r["client_throttles_ms"], throttles)
    events = r["throttle_events"]
    assert [e["throttle_ms"] for e in events] == [t for t in throttles if t], events
    assert all(e["client_should_throttle"] and e["mode"] == "observe" for e in events), events  # Produce v7 >= v6
    # and held its next request back at least that long (KIP-219): in its own queue (pendingDuration), and
    # as the broker saw it -- the next request arrived after the throttle's deadline, never early
    pending = [q["pendingDuration"] for q in r["produce_requests"]]
    for i, t in enumerate(throttles[:-1]):
        if t:
            assert pending[i + 1] >= t - 20, (throttles, pending)
            assert journal[i + 1]["arrived_ms"] >= journal[i]["sent_ms"] + t - SLACK_MS, journal
    assert all(e["early_ms"] in (0, None) for e in events), events
    assert r["log_end_offset"] == 24
