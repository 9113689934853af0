"""Scrape cost of the admin listener's ``GET /metrics`` with 1,000 client connections and 1,000 quota
entities, against the same scrape with 10 and 10.

Set-up: one broker process (``python -m mockbroker serve --port 0 -c mock.admin.listener=127.0.0.1:0``,
its ready line read for the bootstrap and admin addresses); a topic ``bench`` of one partition
(``POST /topics``).  This process raises its RLIMIT_NOFILE soft limit to the hard limit before
spawning the broker, which inherits it; when that is below the connections asked for plus a
margin, the run stops and says so.

Each phase grows the same broker to E quota entities and C open connections:

1. entities: ``PUT /quotas`` ``{"client_id": "c-<i>", "values": {"producer_byte_rate": 1000000}}`` (one
   keep-alive HTTP connection), then one short-lived Kafka connection per entity with client id
   ``c-<i>`` sends one Produce v9 (acks=1, one 100-byte record; answered with error none, throttle
   0) and closes: every entity has its byte-rate and throttle-time sensors;
2. connections: C raw Kafka connections (opened in batches of 100, asyncio's listen backlog), each
   with a distinct client id ``conn-<i>``, each sending one ApiVersions v3 and staying open, idle
   (ApiVersions creates no quota sensor, so the connections add no series of their own);
3. one scrape checked: ``connection_count`` = C and E ``byte_rate`` series;
4. ``WARMUP`` scrapes, then ``--scrapes`` timed ones on one keep-alive HTTP connection: the time from
   sending ``GET /metrics`` to having read the whole body (``time.perf_counter``), and its size.
   ``GET /clock`` is timed the same way, as the floor of an admin request.

Phases, in this order: the baseline (10 entities, 10 connections); 10 entities with ``--conns``
connections (what connections alone cost); ``--entities`` entities with ``--conns`` connections
(default 1,000 and 1,000: the figure).  Printed: median, p95 and max scrape time, bytes and samples
per scrape, for each, and the ratios of the medians to the baseline's.  The whole run is bounded by
``TIME_LIMIT_S``.  Not part of the tests.

    .venv/bin/python bench/metrics_scrape.py [--conns 1000] [--entities 1000] [--scrapes 50]
"""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protocol.client import RawKafkaClient  # noqa: E402
from protocol.codec import timedelta_ms  # noqa: E402
from protocol.records import build_batch  # noqa: E402

TOPIC = "bench"
BASELINE = 10
WARMUP = 3
CONNECT_BATCH = 100
TIME_LIMIT_S = 240.0
START = time.monotonic()


class OutOfTime(Exception):
    pass


def check_time(what: str) -> None:
    if time.monotonic() - START > TIME_LIMIT_S:
        raise OutOfTime(f"over the {TIME_LIMIT_S:.0f} s limit during {what}")


def log(msg: str) -> None:
    print(f"[{time.monotonic() - START:6.1f}s] {msg}", flush=True)


class Broker:
    """A ``mockbroker serve`` process with its admin listener."""

    def __init__(self) -> None:
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "mockbroker", "serve", "--port", "0", "-c", "mock.admin.listener=127.0.0.1:0",
             "--log-level", "WARNING"],
            cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self.popen.stdout is not None
        ready, _, _ = select.select([self.popen.stdout], [], [], 30)
        line = self.popen.stdout.readline() if ready else ""
        if not line.startswith("mockbroker ready ") or " admin=" not in line:
            self.stop()
            raise RuntimeError(f"broker did not start: {line!r}")
        fields = dict(f.split("=", 1) for f in line.split()[2:])
        self.bootstrap = fields["bootstrap"]
        host, _, port = fields["admin"].rpartition(":")
        self.http = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=30)

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        headers = {} if body is None else {"Content-Type": "application/json"}
        self.http.request(method, path, body=data, headers=headers)
        r = self.http.getresponse()
        return r.status, r.read()

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


API_VERSIONS = {"client_software_name": "metrics-scrape-bench", "client_software_version": "1"}


def produce_body() -> dict:
    return {"acks": 1, "timeout": 30_000, "topic_data": [{"name": TOPIC, "partition_data": [
        {"index": 0, "records": build_batch([(b"k", b"v" * 100, [])], base_timestamp=1)}]}]}


def kafka_address(broker: Broker) -> tuple[str, int]:
    host, _, port = broker.bootstrap.split(",")[0].rpartition(":")
    return host.strip("[]"), int(port)


def add_entities(broker: Broker, have: int, entities: int) -> None:
    """Quotas for c-<have>..c-<entities - 1>, and a sensor each: one Produce on a short-lived connection."""
    for i in range(have, entities):
        if i % 100 == 0:
            check_time("setting quotas")
        status, answer = broker.call("PUT", "/quotas", {"client_id": f"c-{i}", "values": {"producer_byte_rate": 1e6}})
        assert status == 200, (status, answer)
    body = produce_body()
    for start in range(have, entities, CONNECT_BATCH):
        check_time("producing")
        batch = []
        for i in range(start, min(start + CONNECT_BATCH, entities)):
            c = RawKafkaClient(*kafka_address(broker), client_id=f"c-{i}", timeout=30)
            batch.append((c, c.send(0, 9, body)))
        for c, corr in batch:
            resp = c.response(0, 9, corr)
            assert resp.responses[0].partition_responses[0].error_code == 0
            assert timedelta_ms(resp.throttle_time) == 0
            c.close()


def add_connections(broker: Broker, clients: list[RawKafkaClient], conns: int) -> None:
    """Open connections up to ``conns``, each with its own client id and one ApiVersions answered."""
    while len(clients) < conns:
        check_time("opening connections")
        batch = []
        for i in range(len(clients), min(len(clients) + CONNECT_BATCH, conns)):
            c = RawKafkaClient(*kafka_address(broker), client_id=f"conn-{i}", timeout=30)
            batch.append((c, c.send(18, 3, API_VERSIONS)))
        for c, corr in batch:
            assert c.response(18, 3, corr).error_code == 0
            clients.append(c)


def series(text: str, name: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith(name + "{")]


def time_get(broker: Broker, path: str, n: int) -> tuple[list[float], int, str]:
    """``n`` timed GETs after ``WARMUP`` untimed ones: the times (ms), the last body's size and text."""
    text = ""
    for _ in range(WARMUP):
        status, body = broker.call("GET", path)
        assert status == 200
    times = []
    size = 0
    for _ in range(n):
        check_time(f"GET {path}")
        t0 = time.perf_counter()
        broker.http.request("GET", path)
        r = broker.http.getresponse()
        body = r.read()
        times.append((time.perf_counter() - t0) * 1000)
        assert r.status == 200
        size = len(body)
        text = body.decode()
    return times, size, text


def p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def phase(broker: Broker, have_entities: int, entities: int, clients: list[RawKafkaClient], conns: int,
          scrapes: int) -> dict[str, float]:
    t0 = time.monotonic()
    add_entities(broker, have_entities, entities)
    add_connections(broker, clients, conns)
    log(f"{entities} entities and {conns} connections ready in {time.monotonic() - t0:.1f} s")
    status, body = broker.call("GET", "/metrics")
    text = body.decode()
    counts = series(text, "kafka_server_socket_server_metrics_connection_count")
    assert status == 200 and len(counts) == 1 and float(counts[0].rsplit(" ", 1)[1]) == conns, counts
    assert len(series(text, "kafka_server_quota_byte_rate")) == entities
    times, size, text = time_get(broker, "/metrics", scrapes)
    floor, _, _ = time_get(broker, "/clock", scrapes)
    samples = sum(1 for ln in text.splitlines() if ln and not ln.startswith("#"))
    return {"entities": entities, "conns": conns, "median": statistics.median(times), "p95": p95(times),
            "max": max(times), "bytes": size, "samples": samples, "floor": statistics.median(floor)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conns", type=int, default=1000)
    ap.add_argument("--entities", type=int, default=1000)
    ap.add_argument("--scrapes", type=int, default=50)
    args = ap.parse_args()
    if not (BASELINE <= args.conns <= 10_000 and BASELINE <= args.entities <= 10_000 and 1 <= args.scrapes <= 1000):
        ap.error(f"--conns and --entities in [{BASELINE}, 10000], --scrapes in [1, 1000]")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = args.conns + 200
    if soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(hard, max(need, soft))
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    if soft < need:
        print(f"RLIMIT_NOFILE hard limit {hard} is below the {need} file descriptors needed")
        return 2

    broker = Broker()
    clients: list[RawKafkaClient] = []
    rows = []
    try:
        status, body = broker.call("POST", "/topics", {"name": TOPIC, "partitions": 1})
        assert status == 201, (status, body)
        rows.append(phase(broker, 0, BASELINE, clients, BASELINE, args.scrapes))
        rows.append(phase(broker, BASELINE, BASELINE, clients, args.conns, args.scrapes))
        rows.append(phase(broker, BASELINE, args.entities, clients, args.conns, args.scrapes))
    except OutOfTime as e:
        print(f"stopped: {e}")
        return 1
    finally:
        for c in clients:
            c.close()
        broker.stop()

    print()
    print(f"GET /metrics, {args.scrapes} scrapes each after {WARMUP} warm-up, one keep-alive connection")
    print(f"{'entities':>8} {'conns':>6} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'bytes':>8} {'samples':>8}"
          f" {'GET /clock ms':>14}")
    for r in rows:
        print(f"{r['entities']:>8} {r['conns']:>6} {r['median']:>10.2f} {r['p95']:>8.2f} {r['max']:>8.2f}"
              f" {r['bytes']:>8} {r['samples']:>8} {r['floor']:>14.2f}")
    base = rows[0]
    for r in rows[1:]:
        print(f"{r['entities']} entities / {r['conns']} connections vs {base['entities']} / {base['conns']}: "
              f"median {r['median'] / base['median']:.1f}x, bytes {r['bytes'] / base['bytes']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
