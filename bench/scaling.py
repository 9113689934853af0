"""Scaling curves: throughput, p99 latency and memory of the broker against partitions, connections,
consumer group members and simulated brokers, mockbroker beside a real Kafka 4.4.0 in one run.

Every request is sent over raw Kafka connections from this process (asyncio; the codecs of
``protocol/``), so both brokers get exactly the same bytes and no client library's batching or
retries sit between the figure and the broker.  Each dimension starts one broker of each kind
(``mockbroker serve`` as a subprocess; with ``--kafka`` a KRaft Kafka 4.4.0 from bench/brokers.py),
and walks its points, the two brokers one after the other at each point:

* partitions P (1 ... 10,000): a topic of P partitions created with CreateTopics; broker RSS before and
  after (settled: two readings ``--settle`` s apart within 1 %), so memory per partition; one Metadata of the
  topic timed (it lists every partition); then ``ACTIVE`` connections send Produce v9 (acks=1, one
  batch of ``BATCH_RECORDS`` records of ``RECORD_BYTES`` bytes) one at a time each, for
  ``--seconds``, connection i to partitions i, i+ACTIVE, ... in turn: records/s and the p99 of the
  request latency.
* connections C (1 ... 10,000): C connections opened (each sends ApiVersions and waits for the
  answer), RSS per connection; then rounds in which every connection sends one such Produce to
  partition i % 8 of an 8-partition topic and all answers are awaited, for ``--seconds`` (at least one
  round): requests/s and p99; the connections are closed before the next point.
* consumer group members M (1 ... 1,000): M members of a new group join with ConsumerGroupHeartbeat
  (KIP-848, v1, client-generated member ids) subscribed to a topic of max(M, 8) partitions, each
  heartbeating every ``HB_PAUSE_S`` (at once when its assignment changed, to report it reconciled;
  owned := assigned at once, as a member with nothing to commit does); the time until the group is
  stable (every member at the group's epoch, owning what it was assigned, every partition owned once,
  and ConsumerGroupDescribe answering Stable with the assignment epoch at the group epoch),
  then rounds of heartbeats from all members for ``--seconds`` (p99, broker CPU per heartbeat), RSS
  per member; the members leave
  (epoch -1) before the next point.  Both brokers run with ``group.consumer.assignment.interval.ms=0``
  (Kafka 4.3+'s default 1000 ms would make every point at least a second: the figure is then the
  coordinator's own cost).
* simulated brokers B (1, 3): ``mock.num.brokers`` = B (Kafka: a B-node KRaft cluster), a topic of 6
  partitions, 6 connections each to its partition's leader, the Produce loop above: records/s and p99.
  mockbroker simulates its brokers in one process, so this is the cost of the simulation, not a speed-up.

Printed: a table per dimension, both brokers and the ratio mock/Kafka; ``--plot DIR`` writes
``scaling-<dimension>.png`` (matplotlib, log x) there.  The client side is this one Python process
(one core at most) sharing the machine with the broker: at the high points a figure can be the
client's limit; the broker's CPU per request is printed beside it to tell.  Bounded: each point stops
at ``--seconds``, group stabilisation at ``STABLE_LIMIT_S``.  Not part of the tests (a smoke run is:
tests/unit/project/test_bench_scaling.py).

    .venv/bin/python bench/scaling.py [--kafka] [--seconds 3] [--plot docs/img] [--dims partitions,connections,members,brokers]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import resource
import statistics
import struct
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from brokers import RealKafka, Unavailable, kafka_classpath, serve_mockbroker  # noqa: E402  bench/brokers.py
from protocol.codec import build_request, decode_response, encode_request  # noqa: E402
from protocol.records import build_batch  # noqa: E402
from protocol.registry import ApiKey, any_spec  # noqa: E402

PARTITIONS = [1, 10, 100, 1000, 10_000]
CONNECTIONS = [1, 10, 100, 1000, 10_000]
MEMBERS = [1, 10, 100, 1000]
BROKERS = [1, 3]
ACTIVE = 8
BATCH_RECORDS = 10
RECORD_BYTES = 100
HB_PAUSE_S = 0.2
STABLE_LIMIT_S = 60.0
CONNECT_BATCH = 200
_I32 = struct.Struct(">i")
VERSIONS = {ApiKey.PRODUCE: 9, ApiKey.METADATA: 12, ApiKey.CREATE_TOPICS: 7, ApiKey.API_VERSIONS: 3,
            ApiKey.CONSUMER_GROUP_HEARTBEAT: 1, ApiKey.FIND_COORDINATOR: 4, ApiKey.CONSUMER_GROUP_DESCRIBE: 0}
READY_LIMIT_S = 60.0
SETTLE_S = 0.5  # between two RSS readings that must agree within 1 %
RETRIABLE_COORDINATOR = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


# -- one Kafka connection ----------------------------------------------------------------------------
class Conn:
    """One connection, one request in flight at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self.reader, self.writer, self.client_id = reader, writer, client_id
        self.corr = 0

    @classmethod
    async def open(cls, host: str, port: int, client_id: str) -> Conn:
        reader, writer = await asyncio.open_connection(host, port, limit=1 << 24)
        return cls(reader, writer, client_id)

    async def send_frame(self, api_key: int, frame: bytes) -> tuple[Any, float]:
        """Send an encoded request (``frame`` from ``self.frame``), await its answer: (response, seconds)."""
        t0 = time.perf_counter()
        self.writer.write(frame)
        size = _I32.unpack(await self.reader.readexactly(4))[0]
        payload = await self.reader.readexactly(size)
        took = time.perf_counter() - t0
        v = VERSIONS[api_key]
        corr, resp = decode_response(api_key, v, any_spec(api_key).response_header_version(v), payload)
        assert corr == self.corr, (corr, self.corr)
        return resp, took

    def frame(self, api_key: int, body: Any) -> bytes:
        self.corr += 1
        v = VERSIONS[api_key]
        return encode_request(api_key, v, self.corr, self.client_id, body, any_spec(api_key))

    async def call(self, api_key: int, data: dict[str, Any]) -> tuple[Any, float]:
        return await self.send_frame(api_key, self.frame(api_key, build_request(api_key, VERSIONS[api_key], data)))

    def close(self) -> None:
        self.writer.close()


def produce_body(topic: str, partition: int) -> Any:
    records = [(None, b"x" * RECORD_BYTES, []) for _ in range(BATCH_RECORDS)]
    return build_request(ApiKey.PRODUCE, VERSIONS[ApiKey.PRODUCE], {
        "transactional_id": None, "acks": 1, "timeout": 30_000,
        "topic_data": [{"name": topic, "partition_data": [
            {"index": partition, "records": build_batch(records, base_timestamp=int(time.time() * 1000))}]}]})


async def produce(conn: Conn, topic: str, partition: int) -> float:
    resp, took = await conn.send_frame(ApiKey.PRODUCE, conn.frame(ApiKey.PRODUCE, produce_body(topic, partition)))
    err = resp.responses[0].partition_responses[0].error_code
    assert err == 0, f"Produce to {topic}-{partition}: {err!r}"
    return took


async def until_led(open_conns: Any, admin: Conn, topic: str) -> list[tuple[Conn, list[tuple[str, int]]]]:
    """``open_conns(metadata)`` opens the producing connections and their targets; they are opened
    again until one Produce to each target is answered without error: a new partition's leader may
    not know it leads yet when the metadata already names it (Kafka, after CreateTopics)."""
    deadline = time.monotonic() + READY_LIMIT_S
    while True:
        conns = await open_conns(await metadata(admin, topic))
        try:
            for c, targets in conns:
                for t, p in targets:
                    await produce(c, t, p)
            return conns
        except AssertionError:
            for c, _ in conns:
                c.close()
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def coordinator(admin: Conn, group: str) -> tuple[str, int]:
    """FindCoordinator until the group's coordinator is known (Kafka creates __consumer_offsets on the
    first ask: COORDINATOR_NOT_AVAILABLE until it is up)."""
    deadline = time.monotonic() + READY_LIMIT_S
    while True:
        resp, _ = await admin.call(ApiKey.FIND_COORDINATOR, {"key_type": 0, "coordinator_keys": [group]})
        c = resp.coordinators[0]
        if c.error_code == 0:
            return c.host, c.port
        if time.monotonic() > deadline:
            raise RuntimeError(f"no coordinator for {group}: {c.error_code!r}")
        await asyncio.sleep(0.5)


async def create_topic(conn: Conn, name: str, partitions: int, timeout_s: float = 120.0) -> None:
    resp, _ = await conn.call(ApiKey.CREATE_TOPICS, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1}],
        "timeout": int(timeout_s * 1000), "validate_only": False})
    err = resp.topics[0].error_code
    assert err == 0, f"CreateTopics {name}: {err!r} {resp.topics[0].error_message}"
    deadline = time.monotonic() + timeout_s  # Kafka answers before every leader is up: wait for them
    while time.monotonic() < deadline:
        md = await metadata(conn, name)
        t = md.topics[0]
        if t.error_code == 0 and len(t.partitions) == partitions and all(
                p.error_code == 0 and p.leader_id >= 0 for p in t.partitions):
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"topic {name}: not every leader up after {timeout_s} s")


async def metadata(conn: Conn, topic: str) -> Any:
    resp, _ = await conn.call(ApiKey.METADATA, {
        "topics": [{"name": topic}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    return resp


# -- the brokers --------------------------------------------------------------------------------------
@dataclass
class Broker:
    name: str
    bootstrap: str
    pid: int
    proc: psutil.Process = field(init=False)

    def __post_init__(self) -> None:
        self.proc = psutil.Process(self.pid)

    @property
    def host_port(self) -> tuple[str, int]:
        host, port = self.bootstrap.split(",")[0].rsplit(":", 1)
        return host, int(port)

    def cpu_s(self) -> float:
        t = self.proc.cpu_times()
        return t.user + t.system

    def rss(self, time_limit_s: float = 8.0) -> int:
        deadline = time.monotonic() + time_limit_s
        last = self.proc.memory_info().rss
        while time.monotonic() < deadline:
            time.sleep(SETTLE_S)
            now = self.proc.memory_info().rss
            if abs(now - last) <= last / 100:
                return now
            last = now
        return last


@contextlib.contextmanager
def start(kind: str, brokers: int = 1) -> Iterator[Broker]:
    if kind == "mockbroker":
        with serve_mockbroker([f"mock.num.brokers={brokers}", "group.consumer.heartbeat.interval.ms=1000",
                               "auto.create.topics.enable=false", "group.consumer.assignment.interval.ms=0"]) \
                as (proc, bootstrap):
            yield Broker(kind, bootstrap, proc.pid)
        return
    kafka = RealKafka(kafka_classpath(), nodes=brokers, extra_props={
        "group.consumer.heartbeat.interval.ms": "1000", "group.consumer.min.heartbeat.interval.ms": "1000",
        "auto.create.topics.enable": "false", "num.partitions": "1", "group.consumer.assignment.interval.ms": "0"})
    kafka.start()
    try:
        assert kafka.proc is not None
        yield Broker(kind, kafka.bootstrap, kafka.proc.pid)
    finally:
        kafka.stop(kill=True)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


# -- the dimensions -----------------------------------------------------------------------------------
async def produce_loop(conns: list[tuple[Conn, list[tuple[str, int]]]], seconds: float) -> tuple[int, list[float]]:
    """Each connection sends its Produce requests one after the other, its targets in turn, until
    ``seconds`` passed: (records written, latencies)."""
    lat: list[float] = []
    end = time.perf_counter() + seconds

    async def one(conn: Conn, targets: list[tuple[str, int]]) -> int:
        n = 0
        while time.perf_counter() < end:
            topic, p = targets[n % len(targets)]
            lat.append(await produce(conn, topic, p))
            n += 1
        return n

    counts = await asyncio.gather(*(one(c, t) for c, t in conns))
    return sum(counts) * BATCH_RECORDS, lat


async def point_partitions(b: Broker, p: int, seconds: float) -> dict[str, Any]:
    host, port = b.host_port
    admin = await Conn.open(host, port, "scale-admin")
    rss0 = b.rss()
    topic = f"scale-p{p}"
    t0 = time.perf_counter()
    await create_topic(admin, topic, p)
    create_s = time.perf_counter() - t0
    rss1 = b.rss()
    _, md_s = await admin.call(ApiKey.METADATA, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                                                  "include_topic_authorized_operations": False})
    targets = [[(topic, q) for q in range(i % p, p, ACTIVE)] or [(topic, i % p)] for i in range(ACTIVE)]

    async def open_conns(_md: Any) -> list[tuple[Conn, list[tuple[str, int]]]]:
        return [(await Conn.open(host, port, f"scale-producer-{i}"), targets[i]) for i in range(ACTIVE)]

    conns = await until_led(open_conns, admin, topic)
    cpu0 = b.cpu_s()
    t0 = time.perf_counter()
    records, lat = await produce_loop(conns, seconds)
    wall = time.perf_counter() - t0
    cpu = b.cpu_s() - cpu0
    for c in [admin, *(c for c, _ in conns)]:
        c.close()
    return {"x": p, "create_s": create_s, "metadata_ms": md_s * 1000, "rate": records / wall,
            "p99_ms": pct(lat, 0.99) * 1000, "cpu_us_per_req": cpu / max(1, len(lat)) * 1e6,
            "mem_per": (rss1 - rss0) / p}


async def open_many(host: str, port: int, n: int, prefix: str) -> list[Conn]:
    conns: list[Conn] = []
    for start_i in range(0, n, CONNECT_BATCH):  # in batches: the listen backlog
        batch = await asyncio.gather(*(Conn.open(host, port, f"{prefix}-{i}")
                                       for i in range(start_i, min(n, start_i + CONNECT_BATCH))))
        await asyncio.gather(*(c.call(ApiKey.API_VERSIONS, {"client_software_name": "scaling",
                                                             "client_software_version": "1"}) for c in batch))
        conns.extend(batch)
    return conns


async def point_connections(b: Broker, c: int, seconds: float) -> dict[str, Any]:
    host, port = b.host_port
    rss0 = b.rss()
    t0 = time.perf_counter()
    conns = await open_many(host, port, c, "scale-conn")
    connect_s = time.perf_counter() - t0
    rss1 = b.rss()
    lat: list[float] = []
    rounds = 0
    cpu0 = b.cpu_s()
    t0 = time.perf_counter()
    while rounds == 0 or time.perf_counter() - t0 < seconds:
        lat += await asyncio.gather(*(produce(conn, "scale-c", i % 8) for i, conn in enumerate(conns)))
        rounds += 1
    wall = time.perf_counter() - t0
    cpu = b.cpu_s() - cpu0
    for conn in conns:
        conn.close()
    await asyncio.sleep(0.5)
    return {"x": c, "connect_s": connect_s, "rate": len(lat) / wall, "p99_ms": pct(lat, 0.99) * 1000,
            "cpu_us_per_req": cpu / len(lat) * 1e6, "mem_per": (rss1 - rss0) / c, "rounds": rounds}


@dataclass
class Member:
    conn: Conn
    group: str
    topic: str
    member_id: str = field(default_factory=lambda: base64.urlsafe_b64encode(uuid.uuid4().bytes).decode()[:22])
    epoch: int = 0
    owned: list[tuple[Any, int]] = field(default_factory=list)
    changed: bool = True

    async def heartbeat(self, leave: bool = False) -> float:
        topic_partitions = {}
        for tid, p in self.owned:
            topic_partitions.setdefault(tid, []).append(p)
        data: dict[str, Any] = {"group_id": self.group, "member_id": self.member_id,
                                "member_epoch": -1 if leave else self.epoch}
        if self.epoch == 0 and not leave:  # the first heartbeat carries the whole state
            data.update({"rebalance_timeout": 30_000, "subscribed_topic_names": [self.topic],
                         "topic_partitions": []})
        elif not leave:
            data["topic_partitions"] = [{"topic_id": tid, "partitions": ps} for tid, ps in topic_partitions.items()]
        resp, took = await self.conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, data)
        if resp.error_code in RETRIABLE_COORDINATOR and self.epoch == 0 and not leave:
            self.changed = False  # the coordinator is still loading its partition: ask again later
            return took
        assert resp.error_code == 0, f"heartbeat of {self.member_id}: {resp.error_code!r} {resp.error_message}"
        if leave:
            return took
        self.epoch = resp.member_epoch
        self.changed = False
        if resp.assignment is not None:
            new = sorted((tp.topic_id, p) for tp in resp.assignment.topic_partitions for p in tp.partitions)
            if new != self.owned:
                self.owned = new  # reconciled at once: nothing to commit, nothing to revoke slowly
                self.changed = True
        return took


async def point_members(b: Broker, m: int, seconds: float) -> dict[str, Any]:
    host, port = b.host_port
    admin = await Conn.open(host, port, "scale-admin")
    parts = max(m, 8)
    topic = f"scale-g{m}"
    await create_topic(admin, topic, parts)
    group = f"scale-group-{m}"
    chost, cport = await coordinator(admin, group)
    admin.close()
    admin = await Conn.open(chost, cport, "scale-admin")
    rss0 = b.rss()
    conns = await open_many(chost, cport, m, f"scale-member-{m}")
    members = [Member(c, group, topic) for c in conns]
    stop = asyncio.Event()

    async def run(member: Member) -> None:
        while not stop.is_set():
            await member.heartbeat()
            if not member.changed:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), HB_PAUSE_S)

    async def stable() -> bool:
        top = max(x.epoch for x in members)
        owned = [tp for x in members for tp in x.owned]
        if not (all(x.epoch == top and not x.changed for x in members) and len(owned) == parts == len(set(owned))):
            return False
        resp, _ = await admin.call(ApiKey.CONSUMER_GROUP_DESCRIBE, {"group_ids": [group],
                                                                    "include_authorized_operations": False})
        g = resp.groups[0]  # the coordinator's word: its target is computed and every member reached it
        return (g.group_state == "Stable" and g.group_epoch == g.assignment_epoch == top
                and len(g.members) == m)

    t0 = time.perf_counter()
    tasks = [asyncio.create_task(run(x)) for x in members]
    stable_s = float("nan")
    while time.perf_counter() - t0 < STABLE_LIMIT_S:
        await asyncio.sleep(0.02)
        if await stable():
            stable_s = time.perf_counter() - t0
            break
        for t in tasks:
            if t.done() and t.exception() is not None:
                raise t.exception()  # type: ignore[misc]  # done() with an exception: raise it here
    stop.set()
    await asyncio.gather(*tasks)
    rss1 = b.rss()
    lat: list[float] = []
    cpu0 = b.cpu_s()
    t0 = time.perf_counter()
    while not lat or time.perf_counter() - t0 < seconds:  # rounds of heartbeats from every member
        lat += await asyncio.gather(*(x.heartbeat() for x in members))
    cpu = b.cpu_s() - cpu0
    await asyncio.gather(*(x.heartbeat(leave=True) for x in members))
    for x in members:
        x.conn.close()
    admin.close()
    return {"x": m, "stable_s": stable_s, "p99_ms": pct(lat, 0.99) * 1000,
            "cpu_us_per_req": cpu / len(lat) * 1e6, "mem_per": (rss1 - rss0) / m, "epoch": members[0].epoch}


async def point_brokers(b: Broker, n: int, seconds: float) -> dict[str, Any]:
    host, port = b.host_port
    admin = await Conn.open(host, port, "scale-admin")
    await create_topic(admin, "scale-b", 6)
    md = await metadata(admin, "scale-b")

    async def open_conns(md: Any) -> list[tuple[Conn, list[tuple[str, int]]]]:
        nodes = {x.node_id: (x.host, x.port) for x in md.brokers}
        return [(await Conn.open(*nodes[p.leader_id], f"scale-b-{p.partition_index}"), [("scale-b", p.partition_index)])
                for p in sorted(md.topics[0].partitions, key=lambda p: p.partition_index)]

    conns = await until_led(open_conns, admin, "scale-b")
    admin.close()
    cpu0 = b.cpu_s()
    t0 = time.perf_counter()
    records, lat = await produce_loop(conns, seconds)
    wall = time.perf_counter() - t0
    cpu = b.cpu_s() - cpu0
    for c, _ in conns:
        c.close()
    return {"x": n, "rate": records / wall, "p99_ms": pct(lat, 0.99) * 1000,
            "cpu_us_per_req": cpu / max(1, len(lat)) * 1e6, "leaders": len({p.leader_id for p in md.topics[0].partitions})}


# -- the run ------------------------------------------------------------------------------------------
def raise_nofile(n: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, n + 1000)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def run_dimension(dim: str, points: list[int], kinds: list[str], seconds: float) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    if dim == "brokers":
        for n in points:
            for kind in kinds:
                with start(kind, brokers=n) as b:
                    out[kind].append(asyncio.run(point_brokers(b, n, seconds)))
                    print(f"  {dim}={n} {kind}: {out[kind][-1]}", flush=True)
        return out
    fn = {"partitions": point_partitions, "connections": point_connections, "members": point_members}[dim]
    for kind in kinds:
        with start(kind) as b:
            if dim == "connections":
                async def prep() -> None:
                    h, p = b.host_port
                    c = await Conn.open(h, p, "scale-admin")
                    await create_topic(c, "scale-c", 8)

                    async def one(_md: Any) -> list[tuple[Conn, list[tuple[str, int]]]]:
                        return [(await Conn.open(h, p, "scale-warm"), [("scale-c", q) for q in range(8)])]

                    for w, _ in await until_led(one, c, "scale-c"):
                        w.close()
                    c.close()
                asyncio.run(prep())
            for x in points:
                if kind == "kafka" and dim == "partitions" and x > KAFKA_MAX_PARTITIONS:
                    print(f"  {dim}={x} {kind}: skipped (over --kafka-max-partitions)", flush=True)
                    continue
                try:
                    out[kind].append(asyncio.run(fn(b, x, seconds)))
                except (OSError, AssertionError, RuntimeError, asyncio.IncompleteReadError) as e:
                    print(f"  {dim}={x} {kind}: FAILED {e!r}", flush=True)
                    out[kind].append({"x": x, "failed": repr(e)})
                    break
                print(f"  {dim}={x} {kind}: {out[kind][-1]}", flush=True)
    return out


COLUMNS = {
    "partitions": [("rate", "records/s", "{:,.0f}"), ("p99_ms", "p99 ms", "{:.1f}"), ("metadata_ms", "Metadata ms", "{:.1f}"),
                   ("create_s", "create s", "{:.2f}"), ("mem_per", "B/partition", "{:,.0f}"), ("cpu_us_per_req", "CPU us/req", "{:.0f}")],
    "connections": [("rate", "requests/s", "{:,.0f}"), ("p99_ms", "p99 ms", "{:.1f}"), ("connect_s", "connect s", "{:.2f}"),
                    ("mem_per", "B/conn", "{:,.0f}"), ("cpu_us_per_req", "CPU us/req", "{:.0f}")],
    "members": [("stable_s", "stable s", "{:.2f}"), ("p99_ms", "HB p99 ms", "{:.1f}"), ("mem_per", "B/member", "{:,.0f}"),
                ("cpu_us_per_req", "CPU us/HB", "{:.0f}"), ("epoch", "epoch", "{}")],
    "brokers": [("rate", "records/s", "{:,.0f}"), ("p99_ms", "p99 ms", "{:.1f}"), ("cpu_us_per_req", "CPU us/req", "{:.0f}"),
                ("leaders", "leaders", "{}")],
}


def print_table(dim: str, res: dict[str, list[dict[str, Any]]]) -> None:
    cols = COLUMNS[dim]
    print(f"\n{dim}")
    head = f"{dim:>11} | {'broker':<10} | " + " | ".join(f"{c[1]:>12}" for c in cols)
    print(head)
    print("-" * len(head))
    xs = sorted({r["x"] for rows in res.values() for r in rows})
    for x in xs:
        for kind, rows in res.items():
            r = next((r for r in rows if r["x"] == x), None)
            if r is None:
                continue
            if "failed" in r:
                print(f"{x:>11,} | {kind:<10} | failed: {r['failed'][:80]}")
                continue
            print(f"{x:>11,} | {kind:<10} | " + " | ".join(f"{c[2].format(r[c[0]]):>12}" for c in cols))
        if len(res) == 2:
            a = next((r for r in res["mockbroker"] if r["x"] == x and "failed" not in r), None)
            k = next((r for r in res.get("kafka", []) if r["x"] == x and "failed" not in r), None)
            if a and k:
                ratios = [a[c[0]] / k[c[0]] if isinstance(k[c[0]], float | int) and k[c[0]] else float("nan")
                          for c in cols]
                print(f"{'':>11} | {'mock/kafka':<10} | " + " | ".join(f"{v:>11.2f}x" for v in ratios))


def plot(dim: str, res: dict[str, list[dict[str, Any]]], outdir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = [c for c in COLUMNS[dim] if c[0] not in ("epoch", "leaders", "create_s", "connect_s")][:4]
    fig, axes = plt.subplots(1, len(cols), figsize=(4 * len(cols), 3.4))
    for ax, (key, label, _fmt) in zip(axes, cols):
        for kind, rows in res.items():
            ok = [r for r in rows if "failed" not in r]
            ax.plot([r["x"] for r in ok], [r[key] for r in ok], marker="o", label=kind)
        ax.set_xscale("log" if dim != "brokers" else "linear")
        if dim != "brokers":
            ax.set_yscale("log")
        ax.set_xlabel(dim)
        ax.set_title(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"mockbroker scaling: {dim} ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs)")
    fig.tight_layout()
    path = outdir / f"scaling-{dim}.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


KAFKA_MAX_PARTITIONS = 1000


def main(argv: list[str] | None = None) -> int:
    global KAFKA_MAX_PARTITIONS, SETTLE_S
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kafka", action="store_true", help="also a real Kafka 4.4.0 (Java and Maven)")
    ap.add_argument("--seconds", type=float, default=3.0, help="each point's measuring time")
    ap.add_argument("--dims", default="partitions,connections,members,brokers")
    ap.add_argument("--partitions", default=",".join(map(str, PARTITIONS)))
    ap.add_argument("--connections", default=",".join(map(str, CONNECTIONS)))
    ap.add_argument("--members", default=",".join(map(str, MEMBERS)))
    ap.add_argument("--brokers", default=",".join(map(str, BROKERS)))
    ap.add_argument("--kafka-max-partitions", type=int, default=KAFKA_MAX_PARTITIONS,
                    help="Kafka creates a log directory per partition; above this it is skipped")
    ap.add_argument("--settle", type=float, default=SETTLE_S, help="seconds between two RSS readings")
    ap.add_argument("--plot", type=Path, help="write scaling-<dimension>.png into this directory")
    args = ap.parse_args(argv)
    KAFKA_MAX_PARTITIONS = args.kafka_max_partitions
    SETTLE_S = args.settle
    kinds = ["mockbroker"]
    if args.kafka:
        try:
            kafka_classpath()
            kinds.append("kafka")
        except Unavailable as e:
            print(f"Kafka skipped: {e}")
    dims = [d for d in args.dims.split(",") if d]
    most = max(int(x) for x in (args.connections + "," + args.members).split(",") if x)
    limit = raise_nofile(most + 1000)
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; Python {sys.version.split()[0]}; "
          f"RLIMIT_NOFILE {limit}; {args.seconds} s per point; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    results = {}
    for dim in dims:
        points = [int(x) for x in getattr(args, dim).split(",") if x]
        if dim in ("connections", "members"):
            points = [x for x in points if x + 200 <= limit] or points[:1]
        results[dim] = run_dimension(dim, points, kinds, args.seconds)
    for dim, res in results.items():
        print_table(dim, res)
        if args.plot:
            args.plot.mkdir(parents=True, exist_ok=True)
            print(f"plot: {plot(dim, res, args.plot)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
