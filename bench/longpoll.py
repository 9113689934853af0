"""Long-poll Fetch at scale: N parked consumers, their memory, their CPU, and how fast one Produce wakes them.

Set-up: the broker runs as a subprocess (``mockbroker serve --port 0 -c
num.partitions=1``, stderr captured to a file and scanned at the end); the
client side is this process, with raw non-blocking sockets on one
``selectors`` loop.  The benchmark raises its RLIMIT_NOFILE soft limit to the
hard limit before spawning the broker, which inherits it; when the hard limit
(or the ephemeral port range) is below N + 100, N is reduced and the reason
is printed.

Per case (a fresh broker for each; the baseline N=100 runs first, then N):

1. CreateTopics v7 of one single-partition topic; ListOffsets v7 for its log
   end offset (0).
2. broker RSS (psutil) "before": after the topic exists, the broker quiet.
3. N TCP connections, opened in batches of ``CONNECT_BATCH`` (the broker's
   listen backlog is asyncio's default, 100); waits until the broker holds
   N more file descriptors and its CPU is quiet: RSS "idle".
4. on each connection one Fetch v12 (sessionless: session_id 0, epoch -1)
   at the log end offset, max_wait 30,000 ms, min_bytes 1.  Waits until the
   broker's CPU is quiet (two consecutive 0.5 s windows under 2 % of a core)
   and checks that no response came back (none may: each must be parked):
   RSS "parked".  Then broker CPU % over a 3 s window while the N fetches are
   parked, and its context switches in that window.
5. wake-up round (3 rounds): a separate raw connection sends one Produce v9
   (acks=1, one record); ``t0`` = ``time.monotonic_ns()`` just before the
   send.  For every parked connection, the time its Fetch response is read
   (the ``recv`` that completes the frame) minus ``t0`` is its wake-up
   latency; reported p50 / p99 / max, the time until all N were answered,
   and the Produce's own acknowledgement latency.  Broker CPU seconds from
   the send to the last answer.  Every response is decoded afterwards and
   must carry error none and non-empty records; latencies at ~30 s would mean
   a fetch was answered by its timeout rather than by the append.  Then every
   connection sends a new Fetch at the new log end offset, the broker is let
   go quiet, and the next round starts (RSS "parked" is sampled again).

RSS/conn and RSS/fetch are (idle - before) / N and (parked - idle) / N.
They include allocator granularity (pymalloc arenas, malloc trims), so the
N=100 row is noisy; the N=10,000 row is the figure to read.

The client shares the machine's cores with the broker: latencies include
this process's time to drain N sockets (one ``recv`` per ready socket).

``--kafka``: then the same N against the real Kafka 4.4.0 (``bench/brokers.py``'s ``RealKafka``,
the launcher ``bench/sidebyside.py`` uses: one KRaft broker+controller, -Xmx1g G1; its jars via
Maven, ``scripts/toolchains.sh``'s ``toolchain_realkafka``), the same client, Fetch and Produce
requests, and rounds; its JVM is "quiet" under KAFKA_QUIET_PCT % of a core (its controller ticks
when idle).  Printed at the end: both brokers' medians over the rounds at N and their ratios
(all answered, p50, broker CPU from the Produce to the last answer, and that per woken fetch).
Broker CPU is psutil's (the process, all threads; clock-tick resolution, 10 ms): read it at
N=10,000, not at N=100.

``-c KEY=VALUE`` (repeatable) goes to every mockbroker started.  ``--compare-config KEY=VALUE``
(repeatable): instead of the N=100 baseline and one case at N, ``--runs`` cases at N without and
with those keys, alternating (a fresh broker each), so both see the machine at the same time;
printed: each variant's medians over all its rounds and the ratios with/without (e.g.
``--compare-config mock.event.loop=uvloop``).

Run: ``.venv/bin/python bench/longpoll.py [--conns N] [--kafka] [-c K=V] [--compare-config K=V --runs R]`` (default 10,000;
well under 3 minutes, about 2 more with ``--kafka``).
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import resource
import selectors
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protocol.codec import build_request, decode_response, encode_request  # noqa: E402
from protocol.records import build_batch  # noqa: E402
from protocol.registry import ApiKey, any_spec  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from brokers import KAFKA_VERSION, RealKafka, Unavailable, kafka_classpath  # noqa: E402  bench/brokers.py

MOCKBROKER = str(ROOT / ".venv" / "bin" / "mockbroker")
TOPIC = "longpoll"
BASELINE_N = 100
ROUNDS = 3
MAX_WAIT_MS = 30_000
CONNECT_BATCH = 100
FETCH_V = 12
PRODUCE_V = 9
TIME_BUDGET_S = 170.0  # the whole run; later rounds are skipped past it
KAFKA_BUDGET_S = 150.0  # --kafka: the Kafka case's own budget, from its start
QUIET_PCT = 2.0
KAFKA_QUIET_PCT = 8.0
_I32 = struct.Struct(">i")

FETCH_SPEC = any_spec(ApiKey.FETCH)
PRODUCE_SPEC = any_spec(ApiKey.PRODUCE)
START = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - START:6.1f}s] {msg}", flush=True)


# -- requests -----------------------------------------------------------------------------
def fetch_frame(corr: int, offset: int) -> bytes:
    body = build_request(ApiKey.FETCH, FETCH_V, {
        "replica_id": -1, "max_wait": MAX_WAIT_MS, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": TOPIC, "partitions": [{
            "partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
            "log_start_offset": -1, "current_leader_epoch": -1}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    return encode_request(ApiKey.FETCH, FETCH_V, corr, "longpoll", body, FETCH_SPEC)


def produce_frame(corr: int) -> bytes:
    body = build_request(ApiKey.PRODUCE, PRODUCE_V, {
        "transactional_id": None, "acks": 1, "timeout": 30_000,
        "topic_data": [{"name": TOPIC, "partition_data": [
            {"index": 0, "records": build_batch([(b"k", b"v", [])], base_timestamp=int(time.time() * 1000))}]}]})
    return encode_request(ApiKey.PRODUCE, PRODUCE_V, corr, "longpoll-producer", body, PRODUCE_SPEC)


def blocking_request(sock: socket.socket, api_key: int, version: int, corr: int, body: dict) -> object:
    spec = any_spec(api_key)
    sock.sendall(encode_request(api_key, version, corr, "longpoll-admin", build_request(api_key, version, body), spec))
    size = _I32.unpack(recv_exact(sock, 4))[0]
    got, resp = decode_response(api_key, version, spec.response_header_version(version), recv_exact(sock, size))
    assert got == corr, (got, corr)
    return resp


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by broker")
        buf += chunk
    return bytes(buf)


# -- broker process -------------------------------------------------------------------------
class BrokerProc:
    def __init__(self, tag: str) -> None:
        fd, self.stderr_path = tempfile.mkstemp(prefix=f"longpoll-broker-{tag}-", suffix=".log")
        self._stderr = os.fdopen(fd, "w")
        self.popen = subprocess.Popen(
            [MOCKBROKER, "serve", "--port", "0", "-c", "num.partitions=1",
             *(arg for kv in self.config for arg in ("-c", kv))],
            stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        line = self.popen.stdout.readline()  # type: ignore[union-attr]
        if "bootstrap=" not in line:
            self.stop()
            raise RuntimeError(f"broker did not start: {line!r} (stderr in {self.stderr_path})")
        host, _, port = line.split("bootstrap=")[1].strip().split(",")[0].rpartition(":")
        self.addr = (host.strip("[]"), int(port))
        self.proc = psutil.Process(self.popen.pid)

    def rss(self) -> int:
        return self.proc.memory_info().rss

    def cpu_s(self) -> float:
        t = self.proc.cpu_times()
        return t.user + t.system

    quiet_pct = QUIET_PCT
    name = "mockbroker"
    config: list[str] = []  # -c KEY=VALUE items (main sets them)

    def wait_quiet(self, timeout: float = 30.0) -> float:
        """Wait for two consecutive 0.5 s windows under ``quiet_pct`` % CPU; returns seconds waited."""
        t0 = time.monotonic()
        quiet = 0
        while time.monotonic() - t0 < timeout:
            c0, w0 = self.cpu_s(), time.monotonic()
            time.sleep(0.5)
            pct = 100 * (self.cpu_s() - c0) / (time.monotonic() - w0)
            quiet = quiet + 1 if pct < self.quiet_pct else 0
            if quiet >= 2:
                return time.monotonic() - t0
        log(f"warning: broker CPU not quiet after {timeout:.0f} s")
        return time.monotonic() - t0

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._stderr.close()

    def stderr_problems(self) -> tuple[int, list[str]]:
        """(number of stderr lines, the lines at WARNING or above or from a traceback)."""
        lines = Path(self.stderr_path).read_text(errors="replace").splitlines()
        bad = [ln for ln in lines if any(w in ln for w in (" WARNING ", " ERROR ", " CRITICAL ", "Traceback", "Error"))]
        return len(lines), bad


class KafkaProc(BrokerProc):
    """The real Kafka (``bench/brokers.py``'s ``RealKafka``: one KRaft broker+controller, Kafka
    4.4.0's jars, -Xmx1g G1) in place of mockbroker, for the same N parked fetches.  Its JVM does
    some work when idle (the controller's heartbeats, timers), so "quiet" is under KAFKA_QUIET_PCT."""

    quiet_pct = KAFKA_QUIET_PCT
    name = "Kafka " + KAFKA_VERSION

    def __init__(self, tag: str) -> None:  # noqa: ARG002 - one broker per case, as mockbroker
        self.kafka = RealKafka(kafka_classpath())
        self.kafka.start()
        assert self.kafka.proc is not None
        self.popen = self.kafka.proc
        self.addr = ("127.0.0.1", self.kafka.port)
        self.proc = psutil.Process(self.popen.pid)
        self.stderr_path = str(self.kafka.nodes[0].log)

    def stop(self) -> None:
        try:  # its log is read before its directory goes
            self.log_lines = Path(self.stderr_path).read_text(errors="replace").splitlines()
        except OSError:
            self.log_lines = []
        self.kafka.stop()
        self.stderr_path += " (removed)"

    def stderr_problems(self) -> tuple[int, list[str]]:
        lines = self.log_lines
        return len(lines), [ln for ln in lines if " ERROR " in ln or "Exception" in ln]


# -- client connections -------------------------------------------------------------------------
class Conn:
    __slots__ = ("sock", "buf", "frames", "t_ns")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.frames: list[bytes] = []
        self.t_ns = 0  # when the last complete frame was read


def open_conns(broker: BrokerProc, n: int) -> list[Conn]:
    sel = selectors.DefaultSelector()
    conns: list[Conn] = []
    base_fds = broker.proc.num_fds()
    for start in range(0, n, CONNECT_BATCH):
        pending = 0
        for _ in range(min(CONNECT_BATCH, n - start)):
            s = socket.socket(socket.AF_INET6 if ":" in broker.addr[0] else socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            rc = s.connect_ex(broker.addr)
            if rc not in (0, errno.EINPROGRESS):
                raise OSError(rc, f"connect: {os.strerror(rc)}")
            sel.register(s, selectors.EVENT_WRITE)
            pending += 1
            conns.append(Conn(s))
        deadline = time.monotonic() + 10
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError("connect timed out")
            for key, _ in sel.select(1.0):
                s = key.fileobj
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)  # type: ignore[union-attr]
                if err:
                    raise OSError(err, f"connect: {os.strerror(err)}")
                sel.unregister(s)
                pending -= 1
        # let the broker accept this batch before the next (listen backlog 100)
        want = base_fds + len(conns)
        deadline = time.monotonic() + 10
        while broker.proc.num_fds() < want:
            if time.monotonic() > deadline:
                raise TimeoutError(f"broker accepted {broker.proc.num_fds() - base_fds} of {len(conns)} connections")
            time.sleep(0.002)
    sel.close()
    return conns


def send_all(conns: list[Conn], frame: bytes) -> None:
    for c in conns:
        c.frames.clear()
        c.t_ns = 0
        sent = c.sock.send(frame)
        if sent != len(frame):  # a ~150-byte request into an empty socket buffer
            c.sock.setblocking(True)
            c.sock.sendall(frame[sent:])
            c.sock.setblocking(False)


def drain(sel: selectors.BaseSelector, want: int, timeout: float) -> int:
    """Read complete frames from the registered Conns until ``want`` have arrived; returns how many did."""
    got = 0
    deadline = time.monotonic() + timeout
    while got < want:
        left = deadline - time.monotonic()
        events = sel.select(max(left, 0))
        if not events and left <= 0:
            break
        for key, _ in events:
            c: Conn = key.data
            try:
                data = c.sock.recv(65536)
            except BlockingIOError:
                continue
            t = time.monotonic_ns()
            if not data:
                sel.unregister(c.sock)
                raise ConnectionError("broker closed a client connection")
            c.buf += data
            while len(c.buf) >= 4:
                size = _I32.unpack_from(c.buf, 0)[0]
                if len(c.buf) < 4 + size:
                    break
                c.frames.append(bytes(c.buf[4:4 + size]))
                del c.buf[:4 + size]
                c.t_ns = t
                got += 1
    return got


def pct(sorted_vals: list[float], q: float) -> float:
    if not sorted_vals:
        return float("nan")
    i = max(0, math.ceil(q / 100 * len(sorted_vals)) - 1)  # nearest rank
    return sorted_vals[i]


# -- one case -------------------------------------------------------------------------------------
def run_case(n: int, rounds: int, broker_class: type[BrokerProc] = BrokerProc) -> dict:
    log(f"case N={n}: starting {broker_class.name}")
    broker = broker_class(str(n))
    res: dict = {"n": n, "rounds": [], "problems": [], "stderr_path": broker.stderr_path, "broker": broker.name}
    conns: list[Conn] = []
    admin = producer = None
    try:
        admin = socket.create_connection(broker.addr, timeout=30)
        r = blocking_request(admin, ApiKey.CREATE_TOPICS, 7, 1, {
            "topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout": 30_000, "validate_only": False})
        assert r.topics[0].error_code == 0, r.topics[0]
        leo = list_end_offset(admin)  # Kafka: once the new partition has its leader
        producer = socket.create_connection(broker.addr, timeout=30)
        producer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        broker.wait_quiet()
        res["rss_before"] = broker.rss()

        t = time.monotonic()
        conns = open_conns(broker, n)
        res["connect_s"] = time.monotonic() - t
        log(f"  {n} connections open in {res['connect_s']:.1f} s; waiting for the broker to go quiet")
        broker.wait_quiet()
        res["rss_idle"] = broker.rss()

        sel = selectors.DefaultSelector()
        for c in conns:
            sel.register(c.sock, selectors.EVENT_READ, c)
        prod = Conn(producer)
        producer.setblocking(False)
        sel.register(producer, selectors.EVENT_READ, prod)

        corr = 1
        t = time.monotonic()
        send_all(conns, fetch_frame(corr, leo))
        res["send_fetch_s"] = time.monotonic() - t
        quiet_s = broker.wait_quiet()
        early = drain(sel, 1, 0.0) if n else 0
        if early:
            res["problems"].append(f"round 1: {early}+ fetch responses before any produce (not parked)")
        res["rss_parked"] = broker.rss()
        log(f"  {n} fetches sent in {res['send_fetch_s']:.2f} s; broker quiet {quiet_s:.1f} s later")

        # idle cost of the parked fetches
        c0, w0 = broker.cpu_s(), time.monotonic()
        cs0 = broker.proc.num_ctx_switches()
        time.sleep(3.0)
        cs1 = broker.proc.num_ctx_switches()
        res["parked_cpu_pct"] = 100 * (broker.cpu_s() - c0) / (time.monotonic() - w0)
        res["parked_ctx_switches"] = (cs1.voluntary - cs0.voluntary) + (cs1.involuntary - cs0.involuntary)

        for rnd in range(1, rounds + 1):
            if time.monotonic() - START > TIME_BUDGET_S:
                res["problems"].append(f"time budget reached: rounds {rnd}..{rounds} skipped")
                break
            if rnd > 1:
                corr += 1
                send_all(conns, fetch_frame(corr, leo))
                broker.wait_quiet()
                early = drain(sel, 1, 0.0)
                if early:
                    res["problems"].append(f"round {rnd}: {early}+ fetch responses before the produce (not parked)")
                rss_parked = broker.rss()
            else:
                rss_parked = res["rss_parked"]
            prod.frames.clear()
            frame = produce_frame(100 + rnd)
            cpu0 = broker.cpu_s()
            t0 = time.monotonic_ns()
            producer.send(frame)
            got = drain(sel, n + 1, MAX_WAIT_MS / 1000 + 10)
            cpu1 = broker.cpu_s()
            if got < n + 1:
                res["problems"].append(
                    f"round {rnd}: only {got} of {n + 1} responses within {MAX_WAIT_MS / 1000 + 10:.0f} s")
            # produce ack
            ack_ms = (prod.t_ns - t0) / 1e6 if prod.frames else float("nan")
            if prod.frames:
                _, pr = decode_response(ApiKey.PRODUCE, PRODUCE_V, PRODUCE_SPEC.response_header_version(PRODUCE_V),
                                        prod.frames[0])
                part = pr.responses[0].partition_responses[0]
                if part.error_code != 0:
                    res["problems"].append(f"round {rnd}: produce error {part.error_code}")
                leo = part.base_offset + 1
            # fetch answers
            lat = []
            bad = 0
            for c in conns:
                if not c.frames:
                    continue
                lat.append((c.t_ns - t0) / 1e6)
                got_corr, fr = decode_response(ApiKey.FETCH, FETCH_V, FETCH_SPEC.response_header_version(FETCH_V),
                                               c.frames[0])
                p = fr.responses[0].partitions[0] if fr.responses else None
                if got_corr != corr or fr.error_code != 0 or p is None or p.error_code != 0 or not p.records:
                    bad += 1
            if bad:
                res["problems"].append(f"round {rnd}: {bad} fetch responses with an error or without records")
            lat.sort()
            res["rounds"].append({
                "round": rnd, "answered": len(lat), "p50": pct(lat, 50), "p99": pct(lat, 99),
                "max": lat[-1] if lat else float("nan"), "first": lat[0] if lat else float("nan"),
                "ack": ack_ms, "cpu_s": cpu1 - cpu0, "rss_parked": rss_parked,
            })
            log(f"  round {rnd}: {len(lat)}/{n} answered, p50 {pct(lat, 50):.1f} ms, "
                f"max {lat[-1] if lat else 0:.1f} ms")
        sel.close()
    finally:
        for c in conns:
            c.sock.close()
        for s in (admin, producer):
            if s is not None:
                s.close()
        time.sleep(0.2)
        broker.stop()
        res["broker_rc"] = broker.popen.returncode
        res["stderr_lines"], res["stderr_bad"] = broker.stderr_problems()
    return res


def list_end_offset(sock: socket.socket, timeout: float = 30.0) -> int:
    """The topic's log end offset, asked again while the partition has no leader yet (Kafka)."""
    deadline = time.monotonic() + timeout
    corr = 2
    while True:
        r = blocking_request(sock, ApiKey.LIST_OFFSETS, 7, corr, {
            "replica_id": -1, "isolation_level": 0,
            "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
        p = r.topics[0].partitions[0]
        if p.error_code == 0:
            return p.offset
        assert time.monotonic() < deadline, p
        corr += 1
        time.sleep(0.2)


# -- main -------------------------------------------------------------------------------------------
def raise_nofile(n: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, n + 1000)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    soft2, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    print(f"RLIMIT_NOFILE: soft {soft} -> {soft2}, hard {hard} (the broker inherits the soft limit)")
    limit = soft2 if soft2 != resource.RLIM_INFINITY else n + 1000
    try:
        lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        ports = hi - lo + 1
    except OSError:
        ports = n + 100
    cap = min(limit, ports) - 100
    if n > cap:
        print(f"NOTE: N reduced from {n} to {cap}: file-descriptor limit {limit}, ephemeral ports {ports} "
              f"(need N + 100)")
        n = cap
    return n


def fmt_bytes(b: float) -> str:
    return f"{b / 1e6:.1f} MB"


def compare(cases: list[dict], n: int, a: str = BrokerProc.name, b: str = "") -> None:
    """Broker ``a`` against ``b`` (Kafka by default) at the same N: medians over all their rounds, and
    the ratios a / b."""
    b = b or KafkaProc.name
    ra = [r for c in cases if c["broker"] == a and c["n"] == n for r in c["rounds"]]
    rb = [r for c in cases if c["broker"] == b and c["n"] == n for r in c["rounds"]]
    print()
    if not ra or not rb:
        print(f"side by side at N={n}: not both measured")
        return
    print(f"Side by side, N={n} parked fetches, one Produce (median over {len(ra)} and {len(rb)} rounds; "
          f"ratio {a} / {b}, under 1 = {a} better)")
    for label, key, unit, scale in (("all answered (max)", "max", "ms", 1.0), ("p50", "p50", "ms", 1.0),
                                    ("broker CPU, Produce to last answer", "cpu_s", "s", 1.0),
                                    ("broker CPU per woken fetch", "cpu_s", "µs", 1e6 / n)):
        m = statistics.median(r[key] for r in ra) * scale
        k = statistics.median(r[key] for r in rb) * scale
        print(f"  {label:<36} {a} {m:>10.3f} {unit:<2} | {b} {k:>10.3f} {unit:<2} | "
              f"ratio {m / k if k else float('nan'):.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--conns", type=int, default=10_000, help="parked fetches in the main case (default 10000)")
    ap.add_argument("--kafka", action="store_true",
                    help=f"also the real Kafka {KAFKA_VERSION} (bench/brokers.py's RealKafka) with the same N")
    ap.add_argument("-c", dest="config", action="append", default=[], metavar="KEY=VALUE",
                    help="configuration of every mockbroker started (repeatable)")
    ap.add_argument("--compare-config", action="append", default=[], metavar="KEY=VALUE",
                    help="cases at N without and with these keys, alternating (repeatable)")
    ap.add_argument("--runs", type=int, default=2, help="--compare-config: cases per variant (default 2)")
    args = ap.parse_args()
    global TIME_BUDGET_S
    BrokerProc.config = list(args.config)
    n = raise_nofile(args.conns)
    cpus = psutil.cpu_count()
    print(f"machine: {cpus} CPUs; Python {sys.version.split()[0]}; max_wait {MAX_WAIT_MS} ms, min_bytes 1, "
          f"Fetch v{FETCH_V}, Produce v{PRODUCE_V} acks=1; {ROUNDS} wake-up rounds per case")

    variant = type("ConfiguredBroker", (BrokerProc,),
                   {"name": "with", "config": [*args.config, *args.compare_config]})
    cases = []
    for _ in range(args.runs if args.compare_config else 0):
        for broker_class in (BrokerProc, variant):
            TIME_BUDGET_S = time.monotonic() - START + KAFKA_BUDGET_S  # each case its own budget
            cases.append(run_case(n, ROUNDS, broker_class))
    if not args.compare_config:
        cases.append(run_case(BASELINE_N, ROUNDS))
    if n != BASELINE_N and not args.compare_config:
        cases.append(run_case(n, ROUNDS))
    if args.kafka:
        TIME_BUDGET_S = time.monotonic() - START + KAFKA_BUDGET_S
        try:
            cases.append(run_case(n, ROUNDS, KafkaProc))
        except Unavailable as e:
            print(f"Kafka not measured: {e}")

    print()
    print("Memory and idle CPU of the broker (RSS via psutil; per-item = delta / N)")
    print(f"{'broker':>11} | {'N':>7} | {'RSS before':>10} | {'RSS idle':>10} | {'RSS parked':>10} | {'B/idle conn':>11} | "
          f"{'B/parked fetch':>14} | {'connect s':>9} | {'CPU% parked (3 s)':>17} | {'ctx sw (3 s)':>12}")
    print("-" * 140)
    for c in cases:
        if "rss_parked" not in c:
            print(f"{c['broker']:>11} | {c['n']:>7} | (incomplete)")
            continue
        per_conn = (c["rss_idle"] - c["rss_before"]) / c["n"]
        per_fetch = (c["rss_parked"] - c["rss_idle"]) / c["n"]
        print(f"{c['broker']:>11} | {c['n']:>7} | {fmt_bytes(c['rss_before']):>10} | {fmt_bytes(c['rss_idle']):>10} | "
              f"{fmt_bytes(c['rss_parked']):>10} | {per_conn:>11,.0f} | {per_fetch:>14,.0f} | "
              f"{c['connect_s']:>9.1f} | {c['parked_cpu_pct']:>17.2f} | {c['parked_ctx_switches']:>12}")

    print()
    print("Wake-up: one Produce (acks=1, 1 record) -> every parked Fetch answered (ms from the Produce send)")
    print(f"{'broker':>11} | {'N':>7} | {'round':>5} | {'answered':>8} | {'first':>7} | {'p50':>7} | {'p99':>7} | {'max (all)':>9} | "
          f"{'produce ack':>11} | {'per fetch µs':>12} | {'broker CPU s':>12} | {'RSS parked':>10}")
    print("-" * 140)
    for c in cases:
        for r in c["rounds"]:
            per = 1000 * r["max"] / max(r["answered"], 1)
            print(f"{c['broker']:>11} | {c['n']:>7} | {r['round']:>5} | {r['answered']:>8} | {r['first']:>7.2f} | {r['p50']:>7.2f} | "
                  f"{r['p99']:>7.2f} | {r['max']:>9.2f} | {r['ack']:>11.2f} | {per:>12.1f} | "
                  f"{r['cpu_s']:>12.3f} | {fmt_bytes(r['rss_parked']):>10}")
    print("(max (all) = time until all N were answered; per fetch µs = max / N; "
          "broker CPU s = broker CPU time from the send to the last answer)")

    print()
    ok = True
    for c in cases:
        print(f"N={c['n']}: broker exit code {c['broker_rc']}, stderr {c['stderr_lines']} lines "
              f"({c['stderr_path']}), {len(c['stderr_bad'])} warning/error lines")
        for ln in c["stderr_bad"][:10]:
            print(f"    {ln}")
        for p in c["problems"]:
            ok = False
            print(f"  PROBLEM: {p}")
    if args.kafka:
        compare(cases, n)
    if args.compare_config:
        print(f"with = {' '.join(args.compare_config)}")
        compare(cases, n, "with", BrokerProc.name)
    print(f"total {time.monotonic() - START:.1f} s; {'OK' if ok else 'problems above'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
