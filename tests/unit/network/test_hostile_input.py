"""Hostile and broken input against a broker with a request memory pool, while another client
("the witness") keeps producing: every case must leave the witness served throughout, lose
nothing it had acknowledged, give every pool byte back, and log no error or traceback.

The cases test_bad_input.py covers on a broker without a pool (each bad size prefix, a
truncated frame, unknown keys and versions, one corrupt batch) are repeated here only where the
pool or the witness adds something; unknown keys and versions are swept in test_fuzz_decode.py.
Time is a ManualClock (throttles and long polls end when the test says); waits for broker state
are bounded polls; every loop is bounded in count and time.
"""

from __future__ import annotations

import logging
import random
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest
from kafka.record import MemoryRecords

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.codec import build_request, encode_request, timedelta_ms
from protocol.errors import ErrorCode
from protocol.records import build_batch
from protocol.registry import any_spec
from tests.polling import until

from ..purgatory.test_delayed_ops import fetch_body, parked

MAX = 1 << 20          # socket.request.max.bytes
POOL = 4 << 20         # queued.max.request.bytes
CFG = {"queued.max.request.bytes": POOL, "socket.request.max.bytes": MAX, "num.partitions": 2,
       "mock.quotas": "clients/slow:producer_byte_rate=1000", "mock.client.telemetry.enabled": True}


@pytest.fixture(scope="module")
def broker():
    with MockBroker(config=CFG, clock=ManualClock()) as b:
        b.create_topic("witness", 1)
        b.create_topic("target", 2)
        yield b


def connections(b: MockBroker) -> int:
    return b.call(lambda br: sum(len(s.connections) for s in br.brokers.values()))


def produce_frame(topic: str, partition: int, records: bytes, corr: int = 1, acks: int = 1,
                  client_id: str = "hostile") -> bytes:
    body = build_request(0, 9, {"acks": acks, "timeout": 30_000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": records}]}]})
    return encode_request(0, 9, corr, client_id, body, any_spec(0))


class Witness(threading.Thread):
    """Produces one record per request (acks=1) until stopped; bounded in count and time."""

    def __init__(self, broker: MockBroker, max_requests: int = 20_000, time_limit_s: float = 60.0) -> None:
        super().__init__(daemon=True, name="witness")
        self.broker = broker
        self.max_requests = max_requests
        self.time_limit_s = time_limit_s
        self.halt = threading.Event()
        self.acked: list[tuple[int, bytes]] = []  # (offset, value)
        self.errors: list[str] = []

    def run(self) -> None:
        deadline = time.monotonic() + self.time_limit_s
        try:
            with RawKafkaClient.connect(self.broker.bootstrap_servers, client_id="witness") as c:
                for i in range(self.max_requests):
                    if self.halt.is_set() or time.monotonic() > deadline:
                        break
                    value = b"w-%d-%d" % (id(self), i)
                    r = c.request(0, 9, {"acks": 1, "timeout": 30_000, "topic_data": [{"name": "witness",
                                  "partition_data": [{"index": 0, "records": build_batch([(None, value, [])])}]}]})
                    p = r.responses[0].partition_responses[0]
                    if p.error_code:
                        self.errors.append(f"produce {i}: error {p.error_code}")
                    else:
                        self.acked.append((p.base_offset, value))
        except Exception as e:  # noqa: BLE001 - reported by finish()
            self.errors.append(repr(e))

    def served_more(self, n: int, what: str) -> None:
        """At least ``n`` more acknowledgements from now on (bounded wait)."""
        target = len(self.acked) + n
        until(lambda: len(self.acked) >= target or self.errors, f"{n} witness acks {what}")
        assert not self.errors, self.errors[:3]

    def finish(self) -> None:
        self.halt.set()
        self.join(15)
        assert not self.is_alive(), "the witness is stuck"
        assert not self.errors, self.errors[:3]
        assert self.acked, "the witness was never served"
        want = dict(self.acked)
        with RawKafkaClient.connect(self.broker.bootstrap_servers) as c:
            offset, last, deadline = min(want), max(want), time.monotonic() + 10
            while offset <= last and time.monotonic() < deadline:
                r = c.request(1, 12, fetch_body("witness", offset, max_wait_ms=0))
                records = MemoryRecords(bytes(r.responses[0].partitions[0].records or b""))
                while (batch := records.next_batch()) is not None:
                    for rec in batch:
                        if rec.offset in want:
                            assert want.pop(rec.offset) == rec.value, f"offset {rec.offset} changed"
                        offset = rec.offset + 1
        assert not want, f"{len(want)} acknowledged witness records missing"


@pytest.fixture
def witness(broker, caplog):
    caplog.set_level(logging.INFO)
    w = Witness(broker)
    w.start()
    w.served_more(5, "before the test")
    yield w
    w.finish()
    until(lambda: broker.memory_pool_metrics()["MemoryPoolUsed"] == 0, "every pool byte back")
    assert broker.memory_pool_metrics()["memory_muted"] == 0
    bad = [f"{r.name}: {r.getMessage()}" for r in caplog.records
           if r.name.startswith(("mockbroker", "asyncio")) and (r.levelno >= logging.ERROR or r.exc_info)]
    assert not bad, bad


def closed_by_broker(sock: socket.socket, timeout: float = 5.0) -> bool:
    sock.settimeout(timeout)
    try:
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def one_close_line(caplog, sock: socket.socket, needle: str) -> str:
    host, port = sock.getsockname()
    lines = [r.getMessage() for r in caplog.records
             if r.name == "mockbroker.connection" and "closing connection" in r.getMessage()
             and f"{host}:{port}" in r.getMessage()]
    assert len(lines) == 1 and needle in lines[0], lines
    return lines[0]


# -- size prefixes and frames ----------------------------------------------------------------

@pytest.mark.parametrize("size,needle", [(-1, "size = -1"), (0, "header truncated"),
                                         (2**31 - 1, "larger than 1048576"), (MAX + 1, "larger than 1048576")])
def test_bad_size_prefix_takes_no_memory_and_closes(broker, witness, caplog, size, needle):
    refused = broker.memory_pool_metrics()["refused"]
    with socket.create_connection(("127.0.0.1", int(broker.bootstrap_servers.rpartition(":")[2]))) as s:
        s.sendall(struct.pack(">i", size) + b"\x00" * 8)
        assert closed_by_broker(s)
        one_close_line(caplog, s, needle)
    witness.served_more(5, "after the close")
    assert broker.memory_pool_metrics()["refused"] == refused


def test_truncated_frame_then_close_gives_the_memory_back(broker, witness):
    frame = produce_frame("target", 0, build_batch([(b"k", b"x" * 200_000, [])]))
    c = RawKafkaClient.connect(broker.bootstrap_servers)
    c.send_raw(frame[:50_000])
    until(lambda: broker.memory_pool_metrics()["MemoryPoolUsed"] >= len(frame) - 4, "the frame's buffer taken")
    c.close()
    until(lambda: broker.memory_pool_metrics()["MemoryPoolUsed"] < len(frame) - 4, "the buffer given back")
    witness.served_more(5, "after the close")
    assert broker.log_end_offset("target", 0) == 0


def test_frame_trickled_a_byte_at_a_time_while_others_produce(broker, witness):
    frame = produce_frame("target", 1, build_batch([(b"k", b"trickle" * 20, [])]), corr=7)
    before = len(witness.acked)
    with RawKafkaClient.connect(broker.bootstrap_servers) as c:
        c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i, byte in enumerate(frame):
            c.send_raw(bytes([byte]))
            if i == 3:  # the size prefix is in: its buffer is taken before the body arrives
                until(lambda: broker.memory_pool_metrics()["MemoryPoolUsed"] >= len(frame) - 4, "the buffer")
            time.sleep(0.002)  # pacing: one byte per segment
        r = c.response(0, 9, 7)
        assert r.responses[0].partition_responses[0].error_code == ErrorCode.none
    assert len(witness.acked) - before >= 20, "the witness was starved during the trickle"
    assert broker.log_end_offset("target", 1) >= 1


def test_random_garbage_on_many_connections(broker, witness):
    rng = random.Random(20240611)
    port = int(broker.bootstrap_servers.rpartition(":")[2])
    outcomes = {"closed": 0, "answered": 0}
    deadline = time.monotonic() + 30
    for i in range(300):
        assert time.monotonic() < deadline, "garbage loop took too long"
        n = rng.randrange(1, 3000)
        data = rng.randbytes(n)
        if i % 3 == 0:  # a plausible size prefix and a garbage body
            data = struct.pack(">i", rng.randrange(0, 5000)) + data
        with socket.create_connection(("127.0.0.1", port)) as s:
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)  # then EOF: the broker closes, whatever it waited for
            except OSError:
                pass
            s.settimeout(5)
            got = b""
            try:
                while chunk := s.recv(1 << 16):
                    got += chunk
            except ConnectionResetError:
                pass
            outcomes["answered" if got else "closed"] += 1
    witness.served_more(5, "after the garbage")
    assert sum(outcomes.values()) == 300
    until(lambda: connections(broker) <= 2, "the garbage connections gone")


# -- requests that decode but are wrong -------------------------------------------------------

def test_corrupt_batch_next_to_a_good_one(broker, witness):
    good, bad = build_batch([(b"k", b"good", [])]), bytearray(build_batch([(b"k", b"bad", [])]))
    bad[-3] ^= 0x55  # the CRC no longer matches
    end0, end1 = broker.log_end_offset("target", 0), broker.log_end_offset("target", 1)
    body = build_request(0, 9, {"acks": 1, "timeout": 30_000, "topic_data": [{"name": "target", "partition_data": [
        {"index": 0, "records": good}, {"index": 1, "records": bytes(bad)}]}]})
    with RawKafkaClient.connect(broker.bootstrap_servers) as c:
        c.send_raw(encode_request(0, 9, 3, "crc", body, any_spec(0)))
        parts = {p.index: p for p in c.response(0, 9, 3).responses[0].partition_responses}
    assert parts[0].error_code == ErrorCode.none and parts[0].base_offset == end0
    assert parts[1].error_code == ErrorCode.corrupt_message
    assert broker.log_end_offset("target", 0) == end0 + 1
    assert broker.log_end_offset("target", 1) == end1  # nothing of the corrupt batch appended


def test_compact_array_length_bomb_closes_instead_of_crashing(broker, witness):
    """A 26-byte Metadata v9 claiming 2^32-2 topics: kio's native reader would try to allocate
    ~34 GB and abort the process; the bounds check refuses it as Kafka's readers do.  Sent to a
    ``mockbroker serve`` process of its own, so that a regression fails this test instead of
    aborting the test run."""
    payload = struct.pack(">hhih", 3, 9, 1, 4) + b"bomb" + b"\x00" + b"\xff\xff\xff\xff\x0f"
    p = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(p.stdout.readline().strip().rpartition(":")[2])
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(struct.pack(">i", len(payload)) + payload)
            assert closed_by_broker(s)
            peer = "%s:%d" % s.getsockname()
        with RawKafkaClient("127.0.0.1", port) as c:  # still alive, still serving
            assert c.request(3, 12, {"topics": None}).brokers
        assert p.poll() is None
    finally:
        p.terminate()
        _, err = p.communicate(timeout=10)
    lines = [x for x in err.splitlines() if "closing connection" in x and peer in x]
    assert len(lines) == 1 and "Tried to allocate a collection of size 4294967294" in lines[0], err[-2000:]
    assert "Traceback" not in err
    witness.served_more(5, "meanwhile")


def test_null_array_in_a_non_nullable_field_closes(broker, witness, caplog):
    """DescribeGroups v0 with groups = null: Kafka's reader refuses it; kio would hand None on."""
    payload = struct.pack(">hhih", 15, 0, 1, 4) + b"null" + struct.pack(">i", -1)
    with socket.create_connection(("127.0.0.1", int(broker.bootstrap_servers.rpartition(":")[2]))) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        assert closed_by_broker(s)
        one_close_line(caplog, s, "non-nullable field groups was serialized as null")
    witness.served_more(5, "after the close")


# -- clients that go away at the wrong moment ------------------------------------------------------

def test_disconnect_while_waiting_in_the_purgatory(broker, witness):
    c = RawKafkaClient.connect(broker.bootstrap_servers)
    c.send(1, 12, fetch_body("target", broker.log_end_offset("target", 0), max_wait_ms=60_000, partition=0))
    parked(broker, "Fetch")
    c.close()
    until(lambda: broker.purgatory_gauges()["Fetch"]["NumDelayedOperations"] == 1, "still parked")
    witness.served_more(5, "while the dead fetch waits")
    broker.advance(60_000)  # it expires for a connection that is gone
    until(lambda: broker.purgatory_gauges()["Fetch"]["NumDelayedOperations"] == 0, "the fetch expired")


def test_disconnect_while_muted_for_a_throttle(broker, witness):
    base = connections(broker)
    c = RawKafkaClient.connect(broker.bootstrap_servers, client_id="slow")
    c.send_raw(produce_frame("target", 0, build_batch([(b"k", b"x" * 50_000, [])]), client_id="slow"))
    throttle = timedelta_ms(c.response(0, 9, 1).throttle_time)
    assert throttle > 0
    c.send_raw(produce_frame("target", 0, build_batch([(b"k", b"early", [])]), corr=2, client_id="slow"))
    c.close()  # muted: the broker reads neither the early request nor the close yet
    witness.served_more(5, "while the dead connection is muted")
    broker.advance(throttle)  # unmuted: it reads what is left, finds the close and lets go
    until(lambda: connections(broker) == base, "the throttled connection gone")


def test_thousand_connections_opened_and_dropped(broker, witness):
    port = int(broker.bootstrap_servers.rpartition(":")[2])
    base = connections(broker)
    frame = produce_frame("target", 1, build_batch([(b"k", b"y" * 10_000, [])]))
    probe = encode_request(18, 3, 1, "drop", build_request(18, 3, {"client_software_name": "d",
                                                                   "client_software_version": "1"}), any_spec(18))
    deadline = time.monotonic() + 30
    for i in range(1000):
        assert time.monotonic() < deadline, "the connection loop took too long"
        s = socket.create_connection(("127.0.0.1", port))
        kind = i % 5
        if kind == 1:
            s.sendall(frame[:4])          # a size prefix: its buffer taken, then gone
        elif kind == 2:
            s.sendall(frame[:5000])       # half a body
        elif kind == 3:
            s.sendall(probe)              # a request whose answer nobody reads
        elif kind == 4:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
            s.sendall(frame[:100])
        s.close()
    witness.served_more(5, "after the loop")
    until(lambda: connections(broker) == base, f"connections back to {base} (now {connections(broker)})")


# -- handler bugs this fuzzing found (fixed) -------------------------------------------------------

def test_metadata_v10_null_topic_name_is_refused_without_a_traceback(broker, caplog):
    caplog.set_level(logging.INFO)
    # topics=[{topic_id 0, name null}], allow auto-creation, no authorized operations
    body = b"\x02" + b"\x00" * 16 + b"\x00" + b"\x00" + b"\x01\x00\x00\x00"
    payload = struct.pack(">hhih", 3, 10, 1, 4) + b"null" + b"\x00" + body
    with socket.create_connection(("127.0.0.1", int(broker.bootstrap_servers.rpartition(":")[2]))) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        closed_by_broker(s)
    # the broker's records only: a kafka-python client left by another test of this process may
    # still log its reconnects to a stopped broker
    assert not [r for r in caplog.records if r.name.startswith("mockbroker") and (r.levelno >= logging.ERROR or r.exc_info)]


def test_create_topics_over_ten_thousand_partitions_is_a_policy_violation(broker):
    with RawKafkaClient.connect(broker.bootstrap_servers) as c:
        r = c.request(19, 7, {"topics": [{"name": "too-many", "num_partitions": 10_001, "replication_factor": 1,
                                          "assignments": [], "configs": []}],
                              "timeout": 30_000, "validate_only": False})
    assert r.topics[0].error_code == ErrorCode.policy_violation
    assert r.topics[0].error_message == "Excessively large number of partitions per request."


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_push_telemetry_decompression_bomb_and_garbage_are_invalid_record(broker, witness, codec):
    """KIP-714: 16 MiB of zeros compressed into a push under telemetry.max.bytes is cut off at that
    limit (ClientTelemetryUtils.decompress), and random bytes in every codec do not decode: both
    INVALID_RECORD, with the witness served meanwhile."""
    from protocol.compression import compress

    with RawKafkaClient.connect(broker.bootstrap_servers, client_id="telemetry-bomb") as c:
        bomb = compress(codec, bytes(16 << 20))
        rng = random.Random(codec)
        for payload in (bomb, rng.randbytes(2000), compress(codec, rng.randbytes(2000))):
            # a new client instance each time: its first push is on time without moving the clock
            r = c.request(71, 0, {"client_instance_id": None})
            assert r.error_code == ErrorCode.none and len(bomb) <= r.telemetry_max_bytes
            push = c.request(72, 0, {"client_instance_id": r.client_instance_id, "subscription_id": r.subscription_id,
                                     "terminating": False, "compression_type": codec, "metrics": payload})
            assert push.error_code == ErrorCode.invalid_record
    witness.served_more(5, "after the pushes")
