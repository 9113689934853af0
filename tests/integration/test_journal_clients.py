"""The on-disk request journal (docs/journal.md) against real clients and a real process.

``mockbroker serve`` runs as a subprocess with ``mock.journal.dir`` set; the clients run here (the
confluent-kafka ones in a child process of their own, see ``CONFLUENT_CHILD``).

* Three clients at once — kafka-python, confluent-kafka, aiokafka, each with a producer and a
  consumer in a group — and the journal has exactly one record per request each of them sent,
  per client id and API, counted on the client side.
* SIGTERM while a producer sends: every Produce the client got an answer to has its record.
* SIGKILL while a producer sends: the journal reads up to the cut, and holds every Produce
  answered more than a bound before the kill.

Counting on the client side: each client's own record of every request it put on the wire, its
protocol debug log — kafka-python's ``kafka.net.connection`` ("Request <corr>: <request>"),
aiokafka's ``aiokafka.conn`` ("Request to host:port <corr>: <request>"), librdkafka's
``debug=protocol`` on stderr ("Sent <Name>Request (v<n>, ... CorrId <corr>)"); the Python ones
through a ``logging.Handler``.  The clients' metrics cannot do it: kafka-python 3.0.12 only has windowed
rates, and its ``request-rate`` counts socket writes (several requests can go in one), aiokafka
has no metrics, and librdkafka's statistics (``req`` per API) forget a bootstrap broker's counts
once it is decommissioned after the first Metadata.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("kafka")
pytest.importorskip("confluent_kafka")
pytest.importorskip("aiokafka")

from mockbroker.journal_reader import JournalWarning, journal_files, read_journal  # noqa: E402
from protocol.registry import ApiKey  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "journal"
PARTITIONS = 3
PER_PRODUCER = 1500
PRODUCERS = 3
READY_TIMEOUT_S = 30
PRODUCE = int(ApiKey.PRODUCE)


# -- the broker process --------------------------------------------------------------------------
@dataclass
class Served:
    proc: subprocess.Popen[str]
    bootstrap: str
    journal: Path
    stderr_path: Path

    def stderr(self) -> str:
        return self.stderr_path.read_text()


def serve(tmp_path: Path, *config: str) -> Served:
    journal = tmp_path / "journal"
    err = tmp_path / "broker.stderr"
    args = [sys.executable, "-m", "mockbroker", "serve", "--host", "127.0.0.1", "--port", "0", "--log-level", "INFO",
            "-c", f"mock.journal.dir={journal}", "-c", f"mock.topics={TOPIC}:{PARTITIONS}"]
    for item in config:
        args += ["-c", item]
    with open(err, "w") as errf:
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=errf, text=True)
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(READY_TIMEOUT_S)
    line = box[0] if box else ""
    if not line.startswith("mockbroker ready bootstrap="):
        proc.kill()
        proc.wait(10)
        pytest.fail(f"no ready line within {READY_TIMEOUT_S}s: {line!r}\n{err.read_text()[-2000:]}")
    return Served(proc, line.split("=", 1)[1].split()[0], journal, err)


@pytest.fixture
def served(tmp_path):
    started: list[Served] = []

    def start(*config: str) -> Served:
        s = serve(tmp_path, *config)
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait(10)


def stop(s: Served, sig: signal.Signals = signal.SIGTERM) -> None:
    s.proc.send_signal(sig)
    rc = s.proc.wait(30)
    if sig is signal.SIGKILL:
        assert rc == -signal.SIGKILL
    else:
        assert rc == 0, s.stderr()[-2000:]


def journal_summary(stderr: str) -> tuple[int, int]:
    """(written, dropped) from the broker's last log line about its journal."""
    m = re.findall(r"request journal closed: (\d+) records written, (\d+) dropped", stderr)
    assert m, f"no journal summary in the broker's log:\n{stderr[-2000:]}"
    return int(m[-1][0]), int(m[-1][1])


# -- counting requests on the client side --------------------------------------------------------
_RDKAFKA_NAMES = {"ApiVersion": "API_VERSIONS", "Offset": "LIST_OFFSETS"}  # librdkafka's names that are not Kafka's


def rdkafka_api_key(name: str) -> int:
    """librdkafka's request name (``FindCoordinator``) -> the API key."""
    snake = _RDKAFKA_NAMES.get(name) or re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()
    return int(ApiKey[snake])


@dataclass
class Sent:
    client_id: str
    api_key: int
    correlation_id: int
    connection: object  # the client's connection it went on (identity only)


class RequestLog(logging.Handler):
    """Every request the clients log as sent, and every response they log as received."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.sent: list[Sent] = []
        self.answered: dict[tuple[int, int], float] = {}  # (id(connection), correlation id) -> when (time.time)
        self.unparsed: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._take(record)
        except Exception as e:  # noqa: BLE001 - a logging handler must not raise into the client
            self.unparsed.append(f"{record.name}: {record.msg!r}: {e!r}")

    def _take(self, r: logging.LogRecord) -> None:
        if r.name == "kafka.net.connection":
            if r.msg == "%s Request %d: %s":
                conn, corr, request = r.args
                self.sent.append(Sent(conn.config["client_id"], int(request.API_KEY), corr, conn))
            elif r.msg == "%s: Response %d (%s ms): %s":
                self.answered[(id(r.args[0]), r.args[1])] = r.created
        elif r.name == "aiokafka.conn":
            if r.msg == "Request to %s:%d %d: %s":  # the client id is the thread's name (one loop per client)
                host, port, corr, request = r.args
                self.sent.append(Sent(threading.current_thread().name, int(request.API_KEY), corr, (host, port)))

    def counts(self) -> dict[str, Counter[int]]:
        out: dict[str, Counter[int]] = defaultdict(Counter)
        for s in self.sent:
            out[s.client_id][s.api_key] += 1
        return out


@pytest.fixture
def request_log():
    log = RequestLog()
    saved = []
    for name in ("kafka.net.connection", "aiokafka.conn"):
        lg = logging.getLogger(name)
        saved.append((lg, lg.level, lg.propagate))
        lg.setLevel(logging.DEBUG)
        lg.propagate = False  # the debug lines go to the counter only
        lg.addHandler(log)
    yield log
    for lg, level, propagate in saved:
        lg.removeHandler(log)
        lg.setLevel(level)
        lg.propagate = propagate
    assert log.unparsed == []


def journal_counts(records: list[dict]) -> dict[str, Counter[int]]:
    out: dict[str, Counter[int]] = defaultdict(Counter)
    for r in records:
        out[r["client_id"]][r["api_key"]] += 1
    return out


def named(counts: dict[str, Counter[int]]) -> dict[str, dict[str, int]]:
    """For assertion messages: API names instead of keys."""
    return {c: {ApiKey(k).name: n for k, n in sorted(v.items())} for c, v in sorted(counts.items())}


# -- the clients ---------------------------------------------------------------------------------
def wait_until(cond, timeout_s: float, what: str) -> None:
    end = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.05)


def kafka_python_producer(bootstrap: str, client_id: str, n: int) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, acks=1, linger_ms=5)
    try:
        futures = [p.send(TOPIC, b"kp-%d" % i, partition=i % PARTITIONS) for i in range(n)]
        p.flush(timeout=60)
        for f in futures:
            f.get(timeout=30)
    finally:
        p.close(timeout=10)


def kafka_python_consumer(bootstrap: str, client_id: str, want: int, deadline_s: float) -> int:
    from kafka import KafkaConsumer

    c = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, client_id=client_id, group_id=f"{client_id}-group",
                      auto_offset_reset="earliest", enable_auto_commit=False)
    got = 0
    try:
        end = time.monotonic() + deadline_s
        while got < want and time.monotonic() < end:
            got += sum(len(v) for v in c.poll(timeout_ms=200).values())
        c.commit()
    finally:
        c.close()
    return got


# librdkafka forwards its log to a Python logger only until the client is being destroyed, and a
# consumer may send a Metadata request then (about 0.5 s after it left its group): the confluent
# clients run in a child process of their own and log to its stderr, which librdkafka writes
# synchronously to the end.
CONFLUENT_CHILD = r"""
import sys, threading, time
from confluent_kafka import Consumer, Producer

bootstrap, topic, partitions, n, want, deadline = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6]), float(sys.argv[6])
got = [0]

def produce():
    p = Producer({"bootstrap.servers": bootstrap, "client.id": "cf-producer", "acks": 1, "linger.ms": 5,
                  "debug": "protocol"})
    for i in range(n):
        while True:
            try:
                p.produce(topic, b"cf-%d" % i, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0

def consume():
    c = Consumer({"bootstrap.servers": bootstrap, "client.id": "cf-consumer", "group.id": "cf-consumer-group",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "debug": "protocol"})
    try:
        c.subscribe([topic])
        end = time.monotonic() + deadline
        while got[0] < want and time.monotonic() < end:
            for m in c.consume(num_messages=1000, timeout=0.2):
                assert m.error() is None, m.error()
                got[0] += 1
        c.commit(asynchronous=False)
    finally:
        c.close()

threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(got[0])
"""
_RDKAFKA_SENT = re.compile(r"^%\d\|[\d.]+\|SEND\|([^|#]+)#[^|]*\|.*: Sent (\w+)Request \(v\d+.*CorrId (\d+)\)")


def confluent_clients(bootstrap: str, n: int, want: int, deadline_s: float, log_path: Path,
                      log: RequestLog) -> int:
    """cf-producer and cf-consumer in a child process; their requests from its stderr into ``log``."""
    with open(log_path, "w") as err:
        r = subprocess.run([sys.executable, "-c", CONFLUENT_CHILD, bootstrap, TOPIC, str(PARTITIONS), str(n),
                            str(want), str(deadline_s)], stdout=subprocess.PIPE, stderr=err, text=True,
                           timeout=deadline_s + 60, cwd=ROOT)
    text = log_path.read_text()
    assert r.returncode == 0, text[-3000:]
    for line in text.splitlines():
        m = _RDKAFKA_SENT.match(line)
        if m:
            log.sent.append(Sent(m.group(1), rdkafka_api_key(m.group(2)), int(m.group(3)), None))
        elif ": Sent " in line:
            log.unparsed.append(line)
    return int(r.stdout.strip())


def in_own_loop(name: str, coro_fn, *args):
    """Run an aiokafka client in a thread of its own named ``name`` (its requests are told apart by it)."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["result"] = asyncio.run(coro_fn(*args))
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = e

    t = threading.Thread(target=run, name=name)
    return t, box


async def aiokafka_producer(bootstrap: str, client_id: str, n: int) -> None:
    from aiokafka import AIOKafkaProducer

    p = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, acks=1, linger_ms=5)
    await p.start()
    try:
        futs = [await p.send(TOPIC, b"aio-%d" % i, partition=i % PARTITIONS) for i in range(n)]
        await asyncio.gather(*futs)
    finally:
        await p.stop()


async def aiokafka_consumer(bootstrap: str, client_id: str, want: int, deadline_s: float) -> int:
    from aiokafka import AIOKafkaConsumer

    c = AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, client_id=client_id, group_id=f"{client_id}-group",
                         auto_offset_reset="earliest", enable_auto_commit=False)
    await c.start()
    got = 0
    try:
        end = time.monotonic() + deadline_s
        while got < want and time.monotonic() < end:
            batch = await c.getmany(timeout_ms=200)
            got += sum(len(v) for v in batch.values())
        await c.commit()
    finally:
        await c.stop()
    return got


# -- the tests -----------------------------------------------------------------------------------
@pytest.mark.timeout(180)
def test_three_clients_one_record_per_request(served, request_log, tmp_path):
    s = served("mock.journal.segment.bytes=16384")
    total = PRODUCERS * PER_PRODUCER
    deadline = 90.0
    threads: list[tuple[threading.Thread, dict]] = []

    def plain(name, fn, *args):
        box: dict[str, object] = {}

        def run() -> None:
            try:
                box["result"] = fn(*args)
            except BaseException as e:  # noqa: BLE001 - re-raised below
                box["error"] = e

        threads.append((threading.Thread(target=run, name=name), box))

    plain("kp-producer", kafka_python_producer, s.bootstrap, "kp-producer", PER_PRODUCER)
    plain("kp-consumer", kafka_python_consumer, s.bootstrap, "kp-consumer", total, deadline)
    plain("cf-consumer", confluent_clients, s.bootstrap, PER_PRODUCER, total, deadline, tmp_path / "rdkafka.log",
          request_log)
    threads.append(in_own_loop("aio-producer", aiokafka_producer, s.bootstrap, "aio-producer", PER_PRODUCER))
    threads.append(in_own_loop("aio-consumer", aiokafka_consumer, s.bootstrap, "aio-consumer", total, deadline))
    for t, _ in threads:
        t.start()
    for t, box in threads:
        t.join(150)
        assert not t.is_alive(), f"{t.name} did not finish"
        if "error" in box:
            raise AssertionError(f"{t.name} failed") from box["error"]  # type: ignore[misc]
        if t.name.endswith("consumer"):
            assert box["result"] == total, f"{t.name} read {box['result']} of {total} records"

    # Every client stopped cleanly.  A Fetch still parked when its consumer left is recorded (closed)
    # when its max wait runs out: the journal, read while the broker runs, has everything the
    # clients sent within a few seconds.
    want = request_log.counts()
    assert set(want) == {"kp-producer", "kp-consumer", "cf-producer", "cf-consumer", "aio-producer", "aio-consumer"}

    def caught_up() -> bool:
        got = journal_counts([r for r in read_journal(s.journal, warn=lambda w: None)])
        return all(got.get(c) == v for c, v in want.items())

    try:
        wait_until(caught_up, 10, "the live journal to hold every request the clients sent")
    except AssertionError:
        pass  # compared exactly below, after the stop
    stop(s, signal.SIGTERM)

    warnings_seen: list[JournalWarning] = []
    records = list(read_journal(s.journal, warn=warnings_seen.append))
    assert warnings_seen == []
    got = journal_counts(records)
    assert named({c: got.get(c, Counter()) for c in want}) == named(want)
    # ... and nobody else (the clients above are the only ones)
    assert set(got) == set(want)
    # one record per request: no (broker, connection, correlation id) twice
    keys = Counter((r["broker"], r["connection"], r["correlation_id"]) for r in records)
    assert [k for k, n in keys.items() if n > 1] == []
    # the journal rotated and compressed on the way
    files = sorted(p.name for p in s.journal.iterdir())
    assert any(f.endswith(".jsonl.gz") for f in files) and files[-1].endswith(".jsonl"), files
    written, dropped = journal_summary(s.stderr())
    assert (written, dropped) == (len(records), 0)
    # the clients that announce themselves in ApiVersions (KIP-511; aiokafka sends v0) are named
    software = {r["client_id"]: r["client_software_name"] for r in records if r["api"] == "PRODUCE"}
    assert (software["kp-producer"], software["cf-producer"]) == ("kafka-python", "confluent-kafka-python")


def produce_until_signalled(bootstrap: str, client_id: str, stop_flag: threading.Event) -> None:
    """kafka-python, acks=1, sending until the flag is set (the broker is gone by then)."""
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, acks=1, linger_ms=2,
                      batch_size=16384, max_in_flight_requests_per_connection=5, retries=0,
                      reconnect_backoff_ms=200, request_timeout_ms=2000, delivery_timeout_ms=3000,
                      max_block_ms=2000)
    i = 0
    try:
        while not stop_flag.is_set():
            try:
                p.send(TOPIC, b"v" * 200, partition=i % PARTITIONS)
            except Exception:  # noqa: BLE001 - the broker went away: stop sending
                break
            i += 1
            if i % 200 == 0:
                time.sleep(0.005)
    finally:
        p.close(timeout=15)  # the broker is gone: what is unsent expires after delivery_timeout_ms


def produce_ids(log: RequestLog, client_id: str) -> tuple[set[int], dict[int, float]]:
    """(correlation ids of the Produce requests ``client_id`` sent, of those answered -> when)."""
    produce = [r for r in list(log.sent) if r.client_id == client_id and r.api_key == PRODUCE]
    conns = {id(r.connection) for r in produce}
    assert len(conns) <= 1, "every Produce on one connection (correlation ids are per connection)"
    sent = {r.correlation_id for r in produce}
    answered = {corr: t for (conn, corr), t in dict(log.answered).items() if conn in conns and corr in sent}
    return sent, answered


def journal_produce_ids(records: list[dict], client_id: str) -> set[int]:
    produce = [r for r in records if r["client_id"] == client_id and r["api_key"] == PRODUCE]
    assert len({r["connection"] for r in produce}) <= 1
    return {r["correlation_id"] for r in produce}


def traffic_then(s: Served, request_log: RequestLog, client_id: str, sig: signal.Signals) -> float:
    """Produce until at least 300 Produce requests were answered, then signal the broker; the time
    of the signal (time.time)."""
    flag = threading.Event()
    t = threading.Thread(target=produce_until_signalled, args=(s.bootstrap, client_id, flag), name=client_id)
    t.start()
    try:
        wait_until(lambda: len(produce_ids(request_log, client_id)[1]) >= 300, 60, "300 Produce answers")
        when = time.time()
        s.proc.send_signal(sig)
        s.proc.wait(30)
    finally:
        flag.set()
        t.join(30)
    assert not t.is_alive()
    return when


@pytest.mark.timeout(120)
def test_sigterm_loses_nothing(served, request_log):
    s = served()
    traffic_then(s, request_log, "term-producer", signal.SIGTERM)
    assert s.proc.returncode == 0, s.stderr()[-2000:]
    records = list(read_journal(s.journal, warn=lambda w: pytest.fail(str(w))))
    sent, answered = produce_ids(request_log, "term-producer")
    journaled = journal_produce_ids(records, "term-producer")
    assert len(answered) >= 300
    assert set(answered) <= journaled, f"answered but not journaled: {sorted(set(answered) - journaled)[:10]}"
    assert journaled <= sent
    # what is missing was still on its way when the broker stopped: at most the in-flight window
    assert len(sent - journaled) <= 5, sorted(sent - journaled)
    written, dropped = journal_summary(s.stderr())
    assert (written, dropped) == (len(records), 0)


KILL_BOUND_S = 0.5  # a record is on disk this long after its answer at the latest (the writer: ~20 ms)


@pytest.mark.timeout(120)
def test_sigkill_reads_up_to_the_cut(served, request_log):
    s = served("mock.journal.segment.bytes=65536")
    killed_at = traffic_then(s, request_log, "kill-producer", signal.SIGKILL)
    assert s.proc.returncode == -signal.SIGKILL
    seen: list[JournalWarning] = []
    records = list(read_journal(s.journal, warn=seen.append))
    # at most the last line is cut, in the segment being written
    segments = [Path(p) for p in journal_files(s.journal)]
    assert all(w.kind == "cut" for w in seen), [str(w) for w in seen]
    assert len(seen) <= 1
    if seen:
        last = segments[-1]
        assert seen[0].path == str(last) and seen[0].line == len(last.read_bytes().split(b"\n"))
    # every complete line is a record, up to the cut
    complete_lines = sum((gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()).count(b"\n")
                         for p in segments)
    assert len(records) == complete_lines
    sent, answered = produce_ids(request_log, "kill-producer")
    journaled = journal_produce_ids(records, "kill-producer")
    settled = {corr for corr, t in answered.items() if t < killed_at - KILL_BOUND_S}
    assert len(settled) >= 100
    assert settled <= journaled, f"answered {KILL_BOUND_S}s before the kill, not journaled: {sorted(settled - journaled)[:10]}"
    assert journaled <= sent
    assert any(p.name.endswith(".jsonl.gz") for p in segments)
