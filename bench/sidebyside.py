"""mockbroker, Apache Kafka 4.4.0 and librdkafka's in-process mock, side by side in one run (issue 28).

Each round starts the three brokers one after another (the order rotates per round so that machine
noise and warm caches fall on each alike), measures one, stops it, and moves to the next:

* ``mockbroker``: ``mockbroker serve --port 0`` from this checkout (bench/brokers.py
  ``serve_mockbroker``'s command line, spawned here so the spawn is timed);
* ``kafka``: a single-node KRaft broker+controller of Kafka ``KAFKA_VERSION`` (bench/brokers.py
  ``RealKafka``, its JVM options: -Xms1g -Xmx1g G1); the storage format (a JVM of its own) runs
  before the clock starts;
* ``librdkafka-mock``: a child interpreter holding a ``confluent_kafka.Producer`` with
  ``test.mock.num.brokers=1`` (librdkafka's mock cluster runs in that process's threads); its
  bootstrap address is read from the mock's ``debug=mock`` log line
  (``Mock cluster ... bootstrap.servers=HOST:PORT``) and printed on the child's stdout.

Measured for each, with confluent-kafka clients in this process:

* start-up: spawn of the broker process -> first Metadata (v12, all topics) answered on a raw
  socket polled every 10 ms.  For the librdkafka mock the spawn includes the child interpreter and
  ``import confluent_kafka``; the child's own ``Producer()`` -> bootstrap-logged time is printed
  beside it (``in-process``);
  The interpreter's floor (spawn -> exit of ``python -c pass``, once per round) is printed under
  the table;
* idle RSS of the broker process (psutil) ``--idle`` seconds after that Metadata answer; for the
  librdkafka mock that is the whole child: a Python interpreter, confluent_kafka and the mock;
* produce: a topic of 3 partitions created with CreateTopics (confluent_kafka AdminClient; on
  librdkafka's mock, whose CreateTopics waits for a controller it does not name, auto-created by a
  producer's Metadata request with the mock's default of 4 partitions, 3 of them used), then
  ``--records`` values of 1 KiB (no key), acks=1, linger.ms=5, batch.size 1 MB, no compression
  (bench/throughput.py's producer); wall time from the first ``produce()`` to the end of
  ``flush()``; MB/s counts value bytes (1 MB = 10^6 bytes);
* consume: a Consumer assigned the 3 partitions from offset 0 (group.id set, auto commit off);
  wall time from ``assign()`` to the last record produced.  A consumer that receives nothing for
  ``IDLE_STOP_S`` stops; one that got fewer records than were produced is reported as a finding
  (``FINDING``, with the partitions' low and high watermarks), and its MB/s is left out of the
  medians and ratios, not counted as a zero.  librdkafka's mock keeps at most 5 MiB or 100,000
  batches per partition (rdkafka_mock.c: ``mpart->max_size``, ``max_cnt``) and drops the oldest
  batches beyond that, so with more than ~15 MB produced over 3 partitions offset 0 is gone: the
  fetch from 0 gets OFFSET_OUT_OF_RANGE, the consumer resets to the end (auto.offset.reset latest)
  and reads nothing;
* broker CPU per GB: the broker process's user+system CPU seconds (psutil, i.e.
  /proc/PID/stat) over the phase, per 10^9 value bytes.  For the librdkafka mock the child process
  holds the mock and an idle producer only, so its CPU is the mock's (plus that producer's idle
  threads); it is printed with that caveat.

Every phase is bounded: ``--time-limit`` seconds per produce and consume, ``KAFKA_READY_TIMEOUT_S``
for a start.  Medians and ranges (min..max) over the rounds are printed, then the ratios
mockbroker/kafka and mockbroker/librdkafka-mock of the medians (for the time and memory rows a ratio
below 1 means mockbroker is smaller; for MB/s above 1 means mockbroker is faster).

``--quick``: one round of 5,000 records, a 0.1 s idle wait, in a few seconds; ``--only NAME``
(repeatable) measures only those brokers (the smoke test, tests/unit/project/test_bench_sidebyside.py, runs
``--quick --only mockbroker``: a Kafka start does not fit its second or two, and the librdkafka
mock's consume phase waits ``IDLE_STOP_S`` for records it dropped).
Without java/mvn, or when Maven cannot resolve Kafka, Kafka's column says why and the rest runs.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
from brokers import RealKafka, Unavailable, kafka_classpath  # bench/brokers.py
from throughput import cpu_seconds  # bench/throughput.py: its producer, and the broker's CPU time
from throughput import produce as throughput_produce

from protocol.client import metadata_all_topics_request

BROKERS = ("mockbroker", "kafka", "librdkafka-mock")
TOPIC = "sidebyside"
PARTITIONS = 3
RECORDS = 300_000
RECORD_BYTES = 1024
ROUNDS = 3
TIME_LIMIT_S = 30.0
IDLE_S = 1.0
IDLE_STOP_S = 5.0
START_TIMEOUT_S = 90.0
MB = 1e6
GB = 1e9
METADATA_V12 = metadata_all_topics_request(12, "sidebyside")
# (broker process, bootstrap, seconds from spawn to the first Metadata answered, a note)
Started = tuple[subprocess.Popen, str, float, str]
Starter = Callable[[], AbstractContextManager[Started]]

# The child holding librdkafka's mock: prints "bootstrap=HOST:PORT in-process=SECONDS", then keeps
# the producer (and so the mock cluster) alive until its stdin closes.
MOCK_CHILD = r"""
import logging, sys, time
t0 = time.perf_counter()
from confluent_kafka import Producer
found = []
class Grab(logging.Handler):
    def emit(self, record):
        msg = record.getMessage()
        if "bootstrap.servers=" in msg and not found:
            found.append(msg.split("bootstrap.servers=", 1)[1].split()[0])
log = logging.getLogger("librdkafka-mock")
log.addHandler(Grab())
log.setLevel(logging.DEBUG)
t1 = time.perf_counter()
p = Producer({"test.mock.num.brokers": 1, "debug": "mock", "logger": log})
deadline = time.monotonic() + 10
while not found and time.monotonic() < deadline:
    p.poll(0.001)
if not found:
    sys.exit("no 'bootstrap.servers=' in the mock's debug log")
print(f"bootstrap={found[0]} in-process={time.perf_counter() - t1:.4f}", flush=True)
sys.stdin.read()
p.flush(1)
"""


@dataclass
class Round:
    startup_s: float
    idle_rss: int
    produced: int
    produce_s: float
    produce_cpu: float
    consumed: int
    consume_s: float
    consume_cpu: float
    extra: str = ""
    watermarks: str = ""

    @property
    def produce_mbs(self) -> float:
        return self.produced * RECORD_BYTES / self.produce_s / MB

    @property
    def consume_mbs(self) -> float:
        return self.consumed * RECORD_BYTES / self.consume_s / MB

    def cpu_per_gb(self, phase: str) -> float:
        cpu, n = (self.produce_cpu, self.produced) if phase == "produce" else (self.consume_cpu, self.consumed)
        return cpu / (n * RECORD_BYTES / GB) if n else float("nan")


@dataclass
class Results:
    rounds: dict[str, list[Round]] = field(default_factory=lambda: {b: [] for b in BROKERS})
    unavailable: dict[str, str] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)  # `python -c pass`, once per round


def metadata_answered(host: str, port: int) -> bool:
    """One Metadata v12 request on a fresh connection: True once a complete response came back."""
    try:
        with socket.create_connection((host, port), timeout=2) as s:
            s.sendall(METADATA_V12)
            need, buf = 4, b""
            while len(buf) < need:
                chunk = s.recv(65536)
                if not chunk:
                    return False
                buf += chunk
                if need == 4 and len(buf) >= 4:
                    need = 4 + struct.unpack(">i", buf[:4])[0]
            return True
    except OSError:
        return False


def wait_metadata(bootstrap: str, proc: subprocess.Popen, t0: float) -> float:
    """Seconds from ``t0`` to the first Metadata answered at ``bootstrap`` (polled every 10 ms)."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    deadline = t0 + START_TIMEOUT_S
    while time.perf_counter() < deadline:
        if metadata_answered(host, int(port)):
            return time.perf_counter() - t0
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited {proc.returncode} before answering Metadata")
        time.sleep(0.01)
    raise RuntimeError(f"no Metadata answered at {bootstrap} within {START_TIMEOUT_S:.0f}s")


@contextmanager
def start_mockbroker() -> Iterator[Started]:
    args = [sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--log-level", "WARNING"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("mockbroker ready bootstrap="):
            raise RuntimeError(f"unexpected first line: {line!r}")
        bootstrap = line.split("=", 1)[1].strip()
        yield proc, bootstrap, wait_metadata(bootstrap, proc, t0), ""
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def start_kafka(cp: str) -> Iterator[Started]:
    kafka = RealKafka(cp)
    try:
        kafka.format()  # a JVM of its own, before the clock
        t0 = time.perf_counter()
        kafka.spawn()
        assert kafka.proc is not None
        yield kafka.proc, kafka.bootstrap, wait_metadata(kafka.bootstrap, kafka.proc, t0), ""
    finally:
        kafka.stop()


@contextmanager
def start_librdkafka_mock() -> Iterator[Started]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", MOCK_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("bootstrap="):
            raise RuntimeError(f"librdkafka mock child: unexpected first line {line!r}")
        fields = dict(item.split("=", 1) for item in line.split())
        bootstrap = fields["bootstrap"]
        yield proc, bootstrap, wait_metadata(bootstrap, proc, t0), f"in-process {float(fields['in-process']) * 1000:.0f} ms"
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def interpreter_floor() -> float:
    """Seconds to spawn ``python -c pass`` and wait for it: the floor under any Python broker's start-up."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, timeout=30)
    return time.perf_counter() - t0


def create_topic(bootstrap: str, auto_create: bool) -> None:
    """CreateTopics of 3 partitions, or (``auto_create``: librdkafka's mock, whose AdminClient waits for
    a controller the mock does not name) a producer's Metadata request creating it with the mock's
    default partition count (4: the bench writes and reads 3 of them); then until every partition has
    a leader."""
    if auto_create:
        client: Producer | AdminClient = Producer({"bootstrap.servers": bootstrap})
    else:
        client = AdminClient({"bootstrap.servers": bootstrap})
        futures = client.create_topics([NewTopic(TOPIC, PARTITIONS, 1)], operation_timeout=10, request_timeout=15)
        futures[TOPIC].result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = client.list_topics(TOPIC, timeout=5).topics.get(TOPIC)
        if md is not None and md.error is None and len(md.partitions) >= PARTITIONS \
                and all(p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.05)
    raise RuntimeError(f"topic {TOPIC} has no leaders after 30s")


def produce(bootstrap: str, records: int, time_limit: float) -> tuple[int, float]:
    """(records acknowledged, seconds): bench/throughput.py's producer on this bench's topic."""
    return throughput_produce(bootstrap, TOPIC, records, time_limit)


def consume(bootstrap: str, expected: int, time_limit: float) -> tuple[int, float, str]:
    """(records read, seconds from assign() to the last one, the partitions' watermarks when fewer
    than ``expected`` came); stops after IDLE_STOP_S without any record."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "sidebyside", "enable.auto.commit": False})
    got = 0
    t0 = time.perf_counter()
    last = t0
    deadline = t0 + time_limit
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    try:
        while got < expected and time.perf_counter() < deadline and time.perf_counter() - last < IDLE_STOP_S:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                if msg.error():
                    raise RuntimeError(f"consume error: {msg.error()}")
                got += 1
                last = time.perf_counter()
        elapsed = (last if got else time.perf_counter()) - t0
        marks = "" if got >= expected else "watermarks (low, high) " + ", ".join(
            f"p{p} {consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=5)}" for p in range(PARTITIONS))
    finally:
        consumer.close()
    return got, elapsed, marks


def measure(starter: Starter, args: argparse.Namespace) -> Round:
    with starter() as (proc, bootstrap, startup_s, extra):
        broker = psutil.Process(proc.pid)
        time.sleep(args.idle)
        idle_rss = broker.memory_info().rss
        create_topic(bootstrap, auto_create=starter is start_librdkafka_mock)
        cpu0 = cpu_seconds(broker)
        produced, produce_s = produce(bootstrap, args.records, args.time_limit)
        cpu1 = cpu_seconds(broker)
        consumed, consume_s, marks = consume(bootstrap, produced, args.time_limit)
        cpu2 = cpu_seconds(broker)
    return Round(startup_s, idle_rss, produced, produce_s, cpu1 - cpu0, consumed, consume_s, cpu2 - cpu1, extra, marks)


def record(res: Results, name: str, rnd: int, r: Round) -> None:
    """Add round ``rnd`` (0-based) of broker ``name``; a consumer that got fewer records than were
    acknowledged is a finding (and report() leaves its consume figures out)."""
    res.rounds[name].append(r)
    if r.consumed < r.produced:
        res.findings.append(f"round {rnd + 1}: a confluent-kafka consumer got {r.consumed:,} of the {r.produced:,} "
                            f"records acknowledged by {name} (stopped after {IDLE_STOP_S:.0f} s without a "
                            f"record or the time limit; {r.watermarks}); its consume figures are left out")


def fmt_range(values: list[float], spec: str) -> str:
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return format(med, spec)
    return f"{format(med, spec)} ({format(min(values), spec)}..{format(max(values), spec)})"


ROWS: list[tuple[str, str, Callable[[Round], float | None]]] = [
    ("start-up to first Metadata (s)", ".3f", lambda r: r.startup_s),
    ("idle RSS (MiB)", ".1f", lambda r: r.idle_rss / 2**20),
    ("produce (MB/s)", ".0f", lambda r: r.produce_mbs if r.produced else None),
    ("consume (MB/s)", ".0f", lambda r: r.consume_mbs if r.consumed and r.consumed >= r.produced else None),
    ("broker CPU s per GB produced", ".2f", lambda r: r.cpu_per_gb("produce") if r.produced else None),
    ("broker CPU s per GB consumed", ".2f",
     lambda r: r.cpu_per_gb("consume") if r.consumed and r.consumed >= r.produced else None),
]


def report(res: Results, measured: list[str]) -> None:
    print()
    cols = [b for b in measured if res.rounds[b]]
    width = 34
    head = f"{'median (min..max)':<{width}}" + "".join(f"{b:>26}" for b in cols)
    ratio_cols = [b for b in ("kafka", "librdkafka-mock") if b in cols and "mockbroker" in cols]
    head += "".join(f"{'mockbroker/' + ('kafka' if b == 'kafka' else 'rdk-mock'):>20}" for b in ratio_cols)
    print(head)
    print("-" * len(head))
    for label, spec, get in ROWS:
        values = {b: [v for v in (get(r) for r in res.rounds[b]) if v is not None] for b in cols}
        line = f"{label:<{width}}" + "".join(f"{fmt_range(values[b], spec):>26}" for b in cols)
        for b in ratio_cols:
            if values["mockbroker"] and values[b] and statistics.median(values[b]) > 0:  # CPU below a clock tick: 0
                line += f"{statistics.median(values['mockbroker']) / statistics.median(values[b]):>20.2f}"
            else:
                line += f"{'n/a':>20}"
        print(line)
    if res.floor:
        print(f"interpreter floor, spawn -> exit of `python -c pass` (s): {fmt_range(res.floor, '.3f')}")
    for b in cols:
        extras = [r.extra for r in res.rounds[b] if r.extra]
        if extras:
            print(f"{b}: child's Producer() -> mock bootstrap logged: {', '.join(extras)}")
    if "librdkafka-mock" in cols:
        print("librdkafka-mock's RSS is a whole child interpreter with confluent_kafka; its CPU is that child's "
              "(the mock's threads and one idle producer)")
    for b, why in res.unavailable.items():
        print(f"{b}: not measured: {why}")
    for f in res.findings:
        print(f"FINDING: {f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="mockbroker, Kafka 4.4.0 and librdkafka's mock side by side")
    ap.add_argument("--rounds", type=int, default=ROUNDS, help=f"interleaved rounds (default {ROUNDS})")
    ap.add_argument("--records", type=int, default=RECORDS, help=f"1 KiB records per round (default {RECORDS:,})")
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT_S,
                    help=f"seconds per produce or consume phase (default {TIME_LIMIT_S:.0f})")
    ap.add_argument("--idle", type=float, default=IDLE_S, help=f"seconds before the idle RSS reading (default {IDLE_S})")
    ap.add_argument("--only", action="append", choices=BROKERS, help="measure only these brokers (repeatable)")
    ap.add_argument("--quick", action="store_true", help="1 round, 5,000 records, 0.1 s idle: a smoke run")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.records, args.idle, args.time_limit = 1, min(args.records, 5_000), 0.1, min(args.time_limit, 10.0)
    measured = [b for b in BROKERS if not args.only or b in args.only]
    res = Results()
    starters: dict[str, Starter] = {"mockbroker": start_mockbroker, "librdkafka-mock": start_librdkafka_mock}
    if "kafka" in measured:
        try:
            cp = kafka_classpath()
            starters["kafka"] = lambda: start_kafka(cp)
        except Unavailable as e:
            res.unavailable["kafka"] = str(e)
    order = [b for b in measured if b in starters]
    print(f"{args.rounds} round(s); {args.records:,} records x {RECORD_BYTES} B, {PARTITIONS} partitions, acks=1, "
          f"linger.ms=5, batch.size=1000000, no compression; {args.time_limit:.0f} s per phase; "
          f"idle RSS after {args.idle} s; load average {' '.join(f'{x:.2f}' for x in psutil.getloadavg())}, "
          f"{psutil.cpu_count()} CPUs")
    for rnd in range(args.rounds):
        if "mockbroker" in order:
            res.floor.append(interpreter_floor())
        shift = rnd % len(order) if order else 0
        for name in order[shift:] + order[:shift]:
            r = measure(starters[name], args)
            record(res, name, rnd, r)
            print(f"  round {rnd + 1} {name:<16} start-up {r.startup_s:.3f} s, idle RSS {r.idle_rss / 2**20:.1f} MiB, "
                  f"produce {r.produced:,} in {r.produce_s:.2f} s ({r.produce_mbs:.0f} MB/s, CPU {r.produce_cpu:.2f} s), "
                  f"consume {r.consumed:,} in {r.consume_s:.2f} s ({r.consume_mbs:.0f} MB/s, CPU {r.consume_cpu:.2f} s)"
                  + (f"; {r.extra}" if r.extra else ""), flush=True)
    report(res, measured)
    return 0


if __name__ == "__main__":
    sys.exit(main())
