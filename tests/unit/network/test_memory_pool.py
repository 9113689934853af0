"""KIP-72 request memory pool: Kafka's SimpleMemoryPool rules, and the broker over a real
socket taking a request's buffer when its size prefix is read, muting (not closing) readers
when the pool is exhausted, giving the memory back exactly once whatever happens to the
request, and serving waiting connections in shuffled order when memory is low.

Time comes from a ManualClock; waits for broker-side state are bounded polls of that state.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockbroker import ConfigError, ManualClock, MockBroker
from mockbroker.common.channel import MuteReason
from mockbroker.network.memory_pool import MemoryMutedChannels
from mockbroker.network.memory_pool import LONG_MAX, MemoryPool, SimpleMemoryPool, memory_pool_for
from protocol.client import RawKafkaClient
from protocol.codec import build_request, encode_request, timedelta_ms
from protocol.errors import ErrorCode
from protocol.records import build_batch
from protocol.registry import any_spec
from tests.polling import until

from ..purgatory.test_delayed_ops import answered, fetch_body, parked

MAX = 64 * 1024        # socket.request.max.bytes: the largest single allocation
POOL = 100_000         # queued.max.request.bytes (low-memory threshold: 10,000)
VALUE = 60_000         # a Produce of one 60 KB record is a ~60 KB request
CFG = {"queued.max.request.bytes": POOL, "socket.request.max.bytes": MAX}


# -- SimpleMemoryPool ----------------------------------------------------------------------

def test_non_strict_pool_over_allocates_while_any_memory_is_free():
    pool = SimpleMemoryPool(10, 6)
    a = pool.try_allocate(6)
    assert len(a) == 6 and pool.available_memory() == 4
    b = pool.try_allocate(6)  # only 4 free: allocated anyway
    assert b is not None and pool.available_memory() == -2 and pool.is_out_of_memory()
    assert pool.try_allocate(1) is None
    pool.release(a)
    assert pool.available_memory() == 4 and not pool.is_out_of_memory()
    assert pool.peak_used == 12 <= 10 + 6 - 1
    assert pool.refused == 1


def test_strict_pool_needs_the_whole_size():
    pool = SimpleMemoryPool(10, 6, strict=True)
    a = pool.try_allocate(6)
    assert pool.try_allocate(6) is None
    assert pool.try_allocate(4) is not None and pool.available_memory() == 0
    pool.release(a)
    assert pool.try_allocate(6) is not None


def test_pool_argument_checks():
    pool = SimpleMemoryPool(10, 6)
    for bad in (0, -1, 7):
        with pytest.raises(ValueError):
            pool.try_allocate(bad)
    with pytest.raises(ValueError):
        pool.release(None)  # type: ignore[arg-type]
    for size, single in ((0, 1), (10, 0), (10, 11)):
        with pytest.raises(ValueError):
            SimpleMemoryPool(size, single)


def test_no_pool_is_memory_pool_none():
    assert memory_pool_for(-1, MAX) is MemoryPool.NONE and memory_pool_for(0, MAX) is MemoryPool.NONE
    assert len(MemoryPool.NONE.try_allocate(5)) == 5 and not MemoryPool.NONE.is_out_of_memory()
    m = MemoryPool.NONE.metrics()
    assert m["MemoryPoolAvailable"] == LONG_MAX and m["MemoryPoolUsed"] == 0  # Kafka's gauges without a pool
    assert isinstance(memory_pool_for(POOL, MAX), SimpleMemoryPool)


@given(st.lists(st.tuples(st.booleans(), st.integers(1, 50)), max_size=200))
def test_pool_bound_and_accounting_hold_for_any_sequence(ops):
    size, single = 100, 50
    pool = SimpleMemoryPool(size, single)
    held: list[bytearray] = []
    for alloc, n in ops:
        if alloc or not held:
            before = pool.available_memory()
            buf = pool.try_allocate(n)
            assert (buf is not None) == (before >= 1)  # non-strict: any free memory will do
            if buf is not None:
                assert len(buf) == n
                held.append(buf)
        else:
            pool.release(held.pop(n % len(held)))
        used = sum(len(b) for b in held)
        assert pool.available_memory() == size - used
        assert used <= size + single - 1 and pool.peak_used <= size + single - 1


def test_depleted_time_is_the_dry_spell_measured_on_the_clock():
    clock = ManualClock()
    pool = SimpleMemoryPool(10, 10, clock=clock)
    a = pool.try_allocate(10)
    assert pool.try_allocate(1) is None  # the dry spell starts at the first refusal
    clock.advance(100)
    assert pool.try_allocate(1) is None  # still the same spell
    clock.advance(150)
    pool.release(a)                      # ends it: 250 ms
    m = pool.metrics()
    assert m["MemoryPoolDepletedTimeTotal"] == 250.0
    # Meter(MILLISECONDS) over 2 samples of 30 s: depleted ms per ms of the (padded) window
    assert m["MemoryPoolAvgDepletedPercent"] == pytest.approx(250 / 30_000)
    assert m["MemoryPoolUsed"] == 0 and m["MemoryPoolAvailable"] == 10


# -- MemoryMutedChannels: the memory part of Kafka's Selector -------------------------------

class Waiter:
    """A connection that waits for ``size`` bytes (the part of KafkaConnection the Selector drives)."""

    def __init__(self, name: int, pool: SimpleMemoryPool, size: int) -> None:
        self.name, self.pool, self.size = name, pool, size
        self.buf: bytearray | None = None

    def retry_allocation(self) -> bool:
        self.buf = self.pool.try_allocate(self.size)
        return self.buf is not None


def serve_waiters(available_after_release: int, n: int = 8, seed: int = 7) -> tuple[list[int], MemoryMutedChannels]:
    """n waiters for 500 bytes each on an exhausted pool of 1000 (threshold 100).  Each release
    leaves ``available_after_release`` free, so it serves exactly one waiter (whose over-allocation
    exhausts the pool again), which then frees its buffer.  Returns the order they were served in."""
    pool = SimpleMemoryPool(1000, 1000)
    order: list[int] = []

    async def run() -> MemoryMutedChannels:
        mutes = MemoryMutedChannels(pool, asyncio.get_running_loop(), random.Random(seed))
        assert pool.try_allocate(1000 - available_after_release) is not None
        to_free = pool.try_allocate(available_after_release)  # the pool is now exactly exhausted
        waiters = [Waiter(i, pool, 500) for i in range(n)]
        for w in waiters:
            assert mutes.allocate(w, 500) is None
        assert len(mutes) == n
        for _ in range(n):
            mutes.release(to_free)
            await asyncio.sleep(0)  # the pass runs on the loop, after the release
            served = [w for w in waiters if w.buf is not None and w.name not in order]
            assert len(served) == 1
            order.append(served[0].name)
            to_free = served[0].buf
        assert len(mutes) == 0
        return mutes

    mutes = asyncio.run(run())
    return order, mutes


def test_waiters_are_served_in_shuffled_order_below_ten_percent_free():
    order, mutes = serve_waiters(available_after_release=50)
    assert sorted(order) == list(range(8))   # nobody starves
    assert order != list(range(8))           # not first come, first served
    assert mutes.shuffled_passes == mutes.passes == 8


def test_waiters_are_served_in_arrival_order_above_ten_percent_free():
    order, mutes = serve_waiters(available_after_release=400)
    assert order == list(range(8))
    assert mutes.shuffled_passes == 0 and mutes.passes == 8


def test_no_pass_while_the_pool_is_still_out_of_memory():
    pool = SimpleMemoryPool(100, 100)

    async def run() -> None:
        mutes = MemoryMutedChannels(pool, asyncio.get_running_loop())
        small, a, _ = pool.try_allocate(10), pool.try_allocate(60), pool.try_allocate(50)
        assert pool.available_memory() == -20
        w = Waiter(0, pool, 10)
        assert mutes.allocate(w, 10) is None
        mutes.release(small)     # available -10: still out of memory
        await asyncio.sleep(0)
        assert w.buf is None and len(mutes) == 1 and mutes.passes == 0
        mutes.release(a)
        await asyncio.sleep(0)
        assert w.buf is not None and len(mutes) == 0

    asyncio.run(run())


# -- configuration ------------------------------------------------------------------------------

def test_pool_not_larger_than_socket_request_max_bytes_refuses_to_start():
    with pytest.raises(ConfigError, match=r"queued.max.request.bytes \(1000\) must be larger than "
                                          r"socket.request.max.bytes \(1000\) or <= 0"):
        MockBroker(config={"queued.max.request.bytes": 1000, "socket.request.max.bytes": 1000})
    p = subprocess.run([sys.executable, "-m", "mockbroker", "serve", "--port", "0",
                        "-c", "queued.max.request.bytes=1000", "-c", "socket.request.max.bytes=4096"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and p.stdout == ""
    assert "queued.max.request.bytes (1000) must be larger than socket.request.max.bytes (4096)" in p.stderr
    assert "Traceback" not in p.stderr


def test_pool_coexists_with_queued_max_requests():
    with MockBroker(config={**CFG, "queued.max.requests": 1}) as b, RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert c.request(3, 12, {"topics": None}).brokers
        m = b.memory_pool_metrics()
        assert m["MemoryPoolUsed"] == 0 and m["MemoryPoolAvailable"] == POOL and m["peak_used"] > 0


def test_without_a_pool_the_metrics_are_kafkas_disabled_values():
    with MockBroker() as b, RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert c.request(3, 12, {"topics": None}).brokers
        m = b.memory_pool_metrics()
        assert (m["MemoryPoolAvailable"], m["MemoryPoolUsed"], m["memory_muted"]) == (LONG_MAX, 0, 0)


# -- the broker over a real socket ---------------------------------------------------------------

def produce_frame(corr: int, topic: str = "pool", value_len: int = VALUE, acks: int = 1,
                  client_id: str = "pool-test") -> bytes:
    body = build_request(0, 9, {"acks": acks, "timeout": 30_000, "topic_data": [{"name": topic, "partition_data": [
        {"index": 0, "records": build_batch([(b"k", b"v" * value_len, [])], base_timestamp=1)}]}]})
    return encode_request(0, 9, corr, client_id, body, any_spec(0))


def used(b: MockBroker) -> int:
    return b.memory_pool_metrics()["MemoryPoolUsed"]


def used_becomes(b: MockBroker, n: int) -> None:
    until(lambda: used(b) == n, f"MemoryPoolUsed == {n} (now {used(b)})")


def conn_state(b: MockBroker, c: RawKafkaClient) -> tuple[int, MuteReason, bool]:
    """(pool bytes held, mute reasons, socket being read) of the broker's side of ``c``."""
    port = c.sock.getsockname()[1]

    def get(broker):
        s = next(iter(broker.brokers.values()))
        conn = next(x for x in s.connections if x.peer.endswith(f":{port}"))
        return conn.memory_held, conn.mute, conn.transport.is_reading()
    return b.call(get)


@pytest.fixture
def pooled():
    clock = ManualClock()
    with MockBroker(config={**CFG, "num.partitions": 1}, clock=clock) as b:
        b.create_topic("pool", 1)
        yield b, clock


def test_memory_is_taken_at_the_size_prefix_and_returned_after_the_response(pooled):
    b, _ = pooled
    frame = produce_frame(1)
    n = len(frame) - 4
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        c.send_raw(frame[:4])            # only the size prefix: the whole buffer is taken now
        used_becomes(b, n)
        assert conn_state(b, c)[0] == n
        c.send_raw(frame[4:])
        assert c.response(0, 9, 1).responses[0].partition_responses[0].error_code == 0
        assert used(b) == 0              # released when the response was written
    m = b.memory_pool_metrics()
    assert m["peak_used"] == n and m["refused"] == 0


def test_exhausted_pool_mutes_readers_and_serves_them_when_memory_comes_back(pooled):
    b, _ = pooled
    f1, f2, f3 = produce_frame(1), produce_frame(1), produce_frame(1)
    n = len(f1) - 4
    with RawKafkaClient.connect(b.bootstrap_servers) as a1, RawKafkaClient.connect(b.bootstrap_servers) as a2, \
            RawKafkaClient.connect(b.bootstrap_servers) as w:
        a1.send_raw(f1[: 4 + 1000])     # reading its body: holds n
        used_becomes(b, n)
        a2.send_raw(f2[: 4 + 1000])     # 40 KB free < n: allocated anyway (non-strict), pool now negative
        used_becomes(b, 2 * n)
        assert b.memory_pool_metrics()["MemoryPoolAvailable"] == POOL - 2 * n < 0
        w.send_raw(f3)                  # the whole request: only its prefix is read
        until(lambda: b.memory_pool_metrics()["memory_muted"] == 1, "a memory-muted connection")
        held, mute, reading = conn_state(b, w)
        assert (held, mute, reading) == (0, MuteReason.MEMORY, False)  # muted, not closed, body not read
        assert not answered(w)
        a1.send_raw(f1[4 + 1000:])      # a1 done: its memory comes back and w gets it
        a1.response(0, 9, 1)
        assert w.response(0, 9, 1).responses[0].partition_responses[0].error_code == 0
        assert b.memory_pool_metrics()["memory_muted"] == 0
        a2.send_raw(f2[4 + 1000:])
        a2.response(0, 9, 1)
        used_becomes(b, 0)
    m = b.memory_pool_metrics()
    assert m["peak_used"] == 2 * n <= POOL + MAX - 1
    assert m["refused"] >= 1
    assert b.log_end_offset("pool", 0) == 3


def test_depleted_time_through_the_broker(pooled):
    b, clock = pooled
    f1, f2, f3 = produce_frame(1), produce_frame(1), produce_frame(1)
    with RawKafkaClient.connect(b.bootstrap_servers) as a1, RawKafkaClient.connect(b.bootstrap_servers) as a2, \
            RawKafkaClient.connect(b.bootstrap_servers) as w:
        a1.send_raw(f1[:100])
        a2.send_raw(f2[:100])
        used_becomes(b, 2 * (len(f1) - 4))
        w.send_raw(f3)
        until(lambda: b.memory_pool_metrics()["memory_muted"] == 1, "a memory-muted connection")
        b.advance(400)                  # 400 ms without memory
        a1.send_raw(f1[100:])
        a1.response(0, 9, 1)            # the release ends the dry spell
        w.response(0, 9, 1)
        a2.send_raw(f2[100:])
        a2.response(0, 9, 1)
    m = b.memory_pool_metrics()
    assert m["MemoryPoolDepletedTimeTotal"] == 400.0
    # the rate's first sample started when the metric was first read (before the advance), as
    # Kafka's SampledStat creates it lazily on measure: 400 ms over a 30 s + 400 ms window
    assert m["MemoryPoolAvgDepletedPercent"] == pytest.approx(400 / 30_400)


def test_close_mid_request_returns_the_memory(pooled):
    b, _ = pooled
    c = RawKafkaClient.connect(b.bootstrap_servers)
    c.send_raw(produce_frame(1)[:5000])
    used_becomes(b, len(produce_frame(1)) - 4)
    c.close()
    used_becomes(b, 0)


def test_close_while_muted_for_memory_returns_everything(pooled):
    b, _ = pooled
    f1, f2 = produce_frame(1), produce_frame(1)
    n = len(f1) - 4
    with RawKafkaClient.connect(b.bootstrap_servers) as a1, RawKafkaClient.connect(b.bootstrap_servers) as a2:
        a1.send_raw(f1[:100])
        a2.send_raw(f2[:100])
        used_becomes(b, 2 * n)
        w = RawKafkaClient.connect(b.bootstrap_servers)
        w.send_raw(produce_frame(1)[:4000])   # prefix read, refused; the rest stays in the socket
        until(lambda: b.memory_pool_metrics()["memory_muted"] == 1, "a memory-muted connection")
        w.close()                             # the broker does not read a muted socket: it finds out later
        a1.send_raw(f1[100:])
        a1.response(0, 9, 1)                  # memory back: w gets its buffer, reads on, finds the close
        until(lambda: b.memory_pool_metrics()["memory_muted"] == 0 and used(b) == n, "w's buffer released")
        a2.send_raw(f2[100:])
        a2.response(0, 9, 1)
        used_becomes(b, 0)
        assert b.memory_pool_metrics()["MemoryPoolAvailable"] == POOL
    assert b.log_end_offset("pool", 0) == 2  # w's partial request was never appended


def test_close_while_waiting_in_the_purgatory_returns_the_memory_once(pooled):
    b, _ = pooled
    c = RawKafkaClient.connect(b.bootstrap_servers)
    corr = c.send(1, 12, fetch_body("pool", 0, max_wait_ms=10_000))  # nothing to read: long poll
    parked(b, "Fetch")
    assert used(b) > 0
    c.close()
    used_becomes(b, 0)
    b.advance(10_000)   # the fetch expires now, for a closed connection
    until(lambda: b.purgatory_gauges()["Fetch"]["NumDelayedOperations"] == 0, "the fetch expired")
    m = b.memory_pool_metrics()
    assert (m["MemoryPoolUsed"], m["MemoryPoolAvailable"]) == (0, POOL)  # not released twice
    assert corr == 1


def test_close_while_an_acks_all_produce_waits_for_followers_returns_the_memory_once():
    cfg = {**CFG, "mock.num.brokers": 3, "default.replication.factor": 3, "mock.replication.lag.ms": 1000}
    with MockBroker(config=cfg, clock=ManualClock()) as b:
        b.create_topic("rep", 1, 3)
        leader = b.partition_state("rep", 0)["leader"]
        c = RawKafkaClient.connect(b.bootstrap_servers.split(",")[leader])
        c.send_raw(produce_frame(1, topic="rep", acks=-1))
        parked(b, "Produce", node_id=leader)
        assert b.memory_pool_metrics(leader)["MemoryPoolUsed"] > 0
        c.close()
        until(lambda: b.memory_pool_metrics(leader)["MemoryPoolUsed"] == 0, "memory back after the close")
        b.advance(1000)  # the followers catch up: the produce completes for a closed connection
        until(lambda: b.purgatory_gauges(leader)["Produce"]["NumDelayedOperations"] == 0, "produce completed")
        m = b.memory_pool_metrics(leader)
        assert (m["MemoryPoolUsed"], m["MemoryPoolAvailable"]) == (0, POOL)
        assert b.log_end_offset("rep", 0) == 1  # the append happened (its answer was lost with the client)


def throttled_broker(mode: str) -> tuple[MockBroker, ManualClock]:
    clock = ManualClock()
    b = MockBroker(config={**CFG, "mock.throttle.mode": mode,
                           "mock.quotas": "clients/slow:producer_byte_rate=1000"}, clock=clock)
    b.start()
    b.create_topic("pool", 1)
    return b, clock


def test_close_while_a_throttled_response_is_delayed_returns_the_memory():
    b, clock = throttled_broker("delay")  # Kafka < 2.0: the throttled response itself is held
    try:
        c = RawKafkaClient.connect(b.bootstrap_servers, client_id="slow")
        c.send_raw(produce_frame(1, client_id="slow"))
        until(lambda: b.throttle_events("slow"), "the throttle")
        assert not answered(c)
        assert used(b) == len(produce_frame(1, client_id="slow")) - 4  # the request is not done yet
        c.close()
        used_becomes(b, 0)
        b.advance(b.throttle_events("slow")[0]["throttle_ms"])  # the delayed send finds the connection closed
        m = b.memory_pool_metrics()
        assert (m["MemoryPoolUsed"], m["MemoryPoolAvailable"]) == (0, POOL)
    finally:
        b.stop()


def test_close_while_an_early_request_is_held_returns_the_memory():
    b, clock = throttled_broker("observe")
    try:
        c = RawKafkaClient.connect(b.bootstrap_servers, client_id="slow")
        c.send_raw(produce_frame(1, client_id="slow"))
        c.response(0, 9, 1)
        assert used(b) == 0
        c.send_raw(produce_frame(2, client_id="slow", value_len=10))  # early: read and held
        until(lambda: used(b) > 0, "the held request's memory")
        c.close()
        used_becomes(b, 0)
        b.advance(60_000)
        assert used(b) == 0
    finally:
        b.stop()


def test_throttle_mute_and_memory_mute_are_separate_reasons():
    b, clock = throttled_broker("mute")
    try:
        t = RawKafkaClient.connect(b.bootstrap_servers, client_id="slow")
        t.send_raw(produce_frame(1, client_id="slow"))
        throttle = timedelta_ms(t.response(0, 9, 1).throttle_time)
        # muted, the socket is watched for the first byte of the next request (quota/throttle.py)
        assert throttle > 0 and conn_state(b, t)[1:] == (MuteReason.THROTTLED, True)
        t.send_raw(produce_frame(2, client_id="slow", value_len=10))  # early: one byte read, the rest in the socket
        f1, f2 = produce_frame(1), produce_frame(1)
        a1 = RawKafkaClient.connect(b.bootstrap_servers)
        a2 = RawKafkaClient.connect(b.bootstrap_servers)
        a1.send_raw(f1[:100])
        a2.send_raw(f2[:100])
        used_becomes(b, 2 * (len(f1) - 4))      # t's early request took nothing: its size was not read
        assert conn_state(b, t) == (0, MuteReason.THROTTLED, False)
        b.advance(throttle)                      # throttle over: t reads its prefix, the pool refuses
        until(lambda: conn_state(b, t)[1] == MuteReason.MEMORY, "t muted for memory")
        assert not answered(t)
        a1.send_raw(f1[100:])
        a1.response(0, 9, 1)                     # memory back: t is read and answered
        resp = t.response(0, 9, 2)
        assert resp.responses[0].partition_responses[0].error_code == ErrorCode.none
        a2.send_raw(f2[100:])
        a2.response(0, 9, 1)
        used_becomes(b, 0)
        for c in (t, a1, a2):
            c.close()
    finally:
        b.stop()


def test_reading_resumes_only_when_no_reason_holds(pooled):
    b, _ = pooled
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert c.request(3, 12, {"topics": None}).brokers
        port = c.sock.getsockname()[1]

        def steps(broker):
            s = next(iter(broker.brokers.values()))
            conn = next(x for x in s.connections if x.peer.endswith(f":{port}"))
            seen = []
            for action, reason in [("mute", MuteReason.THROTTLED), ("mute", MuteReason.MEMORY),
                                   ("unmute", MuteReason.THROTTLED), ("mute", MuteReason.THROTTLED),
                                   ("unmute", MuteReason.MEMORY), ("unmute", MuteReason.THROTTLED)]:
                (conn.mute_for if action == "mute" else conn.unmute_for)(reason)
                seen.append(conn.transport.is_reading())
            return seen
        assert b.call(steps) == [False, False, False, False, False, True]
        assert c.request(3, 12, {"topics": None}).brokers  # and the connection still works


def test_frames_before_sasl_authentication_are_not_taken_from_the_pool():
    cfg = {**CFG, "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "mock.sasl.users": "u:p"}
    with MockBroker(config=cfg) as b, RawKafkaClient.connect(b.bootstrap_servers) as c:
        r = c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert r.error_code == 0
        assert b.memory_pool_metrics()["peak_used"] == 0  # Kafka's authenticator reads with its own receive
