"""Client failover on a 3-broker cluster: leader loss, restart, reads with a broker down.

One ``MockBroker`` simulating three brokers (node ids 0, 1, 2) with replication
(followers catch up after ``mock.replication.lag.ms``, so acks=all really waits
for the ISR).  For each of kafka-python, aiokafka and confluent-kafka an
idempotent acks=all producer sends uniquely keyed records to its own topic
(3 partitions, replication factor 3, min.insync.replicas 2) in four phases:

1. all brokers up;
2. the leader of partition 0 (the "victim") is stopped half-way through the
   phase, with produce requests to it in flight; the follower taking over has
   them, so the client's retries must be answered as duplicates, and the
   second half must go to the new leader (dropped connections, metadata
   refresh);
3. after ``start_broker`` of the victim and its return to the ISR of every
   partition; half-way, partition 0's leadership moves back to the victim
   while the old leader stays up (NOT_LEADER_OR_FOLLOWER, truncation of the
   batches the victim had not replicated, resends);
4. the leader of another partition is stopped half-way through the phase
   (its followers lag: truncation and resends).

Each phase is bounded (``PER_PHASE`` records, ``PHASE_TIMEOUT_S`` seconds).
The test records which records the client acknowledged and at which offset.
A consumer of the same library then reads every partition from the beginning
*while the second broker is still down* and the test checks: every
acknowledged record is there exactly once (idempotent producer), at the offset
the acknowledgement gave, in send order per partition, and nothing unknown is
there.  ``partition_state`` must show each leader change (new leader epoch, no
partition led by a stopped broker, which also left every ISR), and at the end,
with every broker started again, the restarted brokers must be back in the ISR
of every partition.

A last test runs two failovers within one replication lag (a regression test
for stale follower catch-ups that made the idempotent producer's retry land
twice).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from mockbroker import MockBroker
from tests.polling import until

NODES = (0, 1, 2)
N_PARTITIONS = 3
PER_PHASE = 300
PHASE_TIMEOUT_S = 60.0
CONSUME_TIMEOUT_S = 30.0
ISR_TIMEOUT_S = 15.0
REPLICATION_LAG_MS = 50
TOPIC_CONFIGS = {"min.insync.replicas": "2"}


@pytest.fixture(scope="module")
def cluster():
    """Three simulated brokers; followers lag a little so acks=all waits for the ISR."""
    config = {"mock.num.brokers": 3, "num.partitions": N_PARTITIONS, "default.replication.factor": 3,
              "mock.replication.lag.ms": REPLICATION_LAG_MS}
    with MockBroker(config=config, host="127.0.0.1") as b:
        yield b


# -- bookkeeping -------------------------------------------------------------------------------
@dataclass
class Ledger:
    """What was sent (per partition, in send order) and what the client said about it."""

    sent: dict[int, list[bytes]] = field(default_factory=lambda: {p: [] for p in range(N_PARTITIONS)})
    acked: dict[bytes, tuple[int, int]] = field(default_factory=dict)  # key -> (partition, offset)
    failed: dict[bytes, str] = field(default_factory=dict)
    next_index: int = 0

    def phase_records(self, phase: int) -> list[tuple[bytes, bytes, int]]:
        out = []
        for _ in range(PER_PHASE):
            i = self.next_index
            self.next_index += 1
            key = b"p%d-k%05d" % (phase, i)
            value = b"phase %d record %d " % (phase, i) * (1 + i % 7)
            part = i % N_PARTITIONS
            self.sent[part].append(key)
            out.append((key, value, part))
        return out

    def ack(self, key: bytes, partition: int, offset: int) -> None:
        assert key not in self.acked, f"{key!r} acknowledged twice"
        self.acked[key] = (partition, offset)

    def fail(self, key: bytes, err: object) -> None:
        self.failed[key] = repr(err)

    def outcome_count(self, keys: list[bytes]) -> int:
        return sum(1 for k in keys if k in self.acked or k in self.failed)


def wait_until(cond: Callable[[], bool], timeout_s: float, what: Callable[[], str]) -> None:
    until(cond, what, timeout_s, step=0.02)


def states(broker: MockBroker, topic: str, partitions: int = N_PARTITIONS) -> list[dict]:
    return [broker.partition_state(topic, p) for p in range(partitions)]


def wait_in_isr(broker: MockBroker, topic: str, nodes: set[int], partitions: int = N_PARTITIONS) -> None:
    wait_until(lambda: all(nodes <= set(s["isr"]) for s in states(broker, topic, partitions)), ISR_TIMEOUT_S,
               lambda: f"{sorted(nodes)} in the ISR of {topic}: {states(broker, topic, partitions)}")


def assert_failed_over(broker: MockBroker, topic: str, stopped: int, before: list[dict]) -> list[dict]:
    """After ``stop_broker(stopped)``: nothing is led by it, it left every ISR, led partitions got a new epoch."""
    after = states(broker, topic)
    for p, (b, a) in enumerate(zip(before, after)):
        assert a["leader"] != stopped and a["leader"] in NODES, f"partition {p}: {a}"
        assert stopped not in a["isr"], f"partition {p}: {a}"
        assert len(a["isr"]) >= 2, f"partition {p}: {a}"
        if b["leader"] == stopped:
            assert a["leader_epoch"] > b["leader_epoch"], f"partition {p}: {b} -> {a}"
        assert a["high_watermark"] >= b["high_watermark"], f"partition {p}: {b} -> {a}"  # nothing acked lost
    return after


def assert_delivered(ledger: Ledger, got: dict[int, list[tuple[int, bytes, bytes]]], idempotent: bool) -> None:
    assert not ledger.failed, f"{len(ledger.failed)} records failed, e.g. {list(ledger.failed.items())[:3]}"
    assert len(ledger.acked) == ledger.next_index
    for p in range(N_PARTITIONS):
        offsets = [o for o, _, _ in got[p]]
        assert offsets == sorted(set(offsets)), f"partition {p}: offsets not strictly increasing"
        keys = [k for _, k, _ in got[p]]
        unknown = set(keys) - set(ledger.sent[p])
        assert not unknown, f"partition {p}: records never sent to it: {sorted(unknown)[:5]}"
        if idempotent:
            dups = sorted({k for k in keys if keys.count(k) > 1})
            assert not dups, f"partition {p}: {len(dups)} duplicated records, e.g. {dups[:5]}"
        first: dict[bytes, int] = {}
        offset_of: dict[bytes, list[int]] = {}
        for n, (o, k, _) in enumerate(got[p]):
            first.setdefault(k, n)
            offset_of.setdefault(k, []).append(o)
        acked = [k for k in ledger.sent[p] if k in ledger.acked]
        missing = [k for k in acked if k not in first]
        assert not missing, f"partition {p}: {len(missing)} acknowledged records missing, e.g. {missing[:5]}"
        order = [first[k] for k in acked]
        assert order == sorted(order), f"partition {p}: acknowledged records out of send order"
        for k in acked:
            part, off = ledger.acked[k]
            assert part == p, f"{k!r} acknowledged for partition {part}, sent to {p}"
            assert off in offset_of[k], f"partition {p}: {k!r} acknowledged at {off}, stored at {offset_of[k]}"
        values = {k: v for _, k, v in got[p]}
        for k in acked:
            assert values[k].startswith(b"phase "), f"partition {p}: {k!r} has value {values[k][:20]!r}"


# -- the scenario, for any client -------------------------------------------------------------------
class ClientDriver:
    """One library's producer and consumer behind the calls the scenario needs."""

    idempotent = True

    def start_producer(self, bootstrap: str) -> None: ...
    def produce_phase(self, records: list[tuple[bytes, bytes, int]], ledger: Ledger, deadline: float,
                      midway: Callable[[], None] | None = None) -> None:
        """Send ``records`` (calling ``midway`` after half of them), wait until each has an outcome."""
    def close_producer(self) -> None: ...
    def consume(self, bootstrap: str, topic: str, ends: dict[int, int],
                deadline: float) -> dict[int, list[tuple[int, bytes, bytes]]]: ...


def elect_preferred(broker: MockBroker, topic: str, partition: int, node: int) -> None:
    """Move a partition's leadership to ``node`` (an ISR member), as a preferred-replica election does.

    The old leader stays up, so a client with the old metadata gets NOT_LEADER_OR_FOLLOWER from it.
    """
    broker.elect_leader(topic, partition, node)


def run_scenario(broker: MockBroker, topic: str, driver: ClientDriver) -> None:
    bootstrap = broker.bootstrap_servers
    broker.create_topic(topic, N_PARTITIONS, 3, dict(TOPIC_CONFIGS))
    wait_in_isr(broker, topic, set(NODES))
    ledger = Ledger()
    stopped: list[int] = []
    timings: dict[str, float] = {}
    snap: dict[str, list[dict]] = {}

    def phase(n: int, midway: Callable[[], None] | None = None) -> None:
        recs = ledger.phase_records(n)
        keys = [k for k, _, _ in recs]
        t0 = time.monotonic()
        driver.produce_phase(recs, ledger, t0 + PHASE_TIMEOUT_S, midway)
        timings[f"phase {n}"] = round(time.monotonic() - t0, 3)
        done = ledger.outcome_count(keys)
        assert done == len(keys), f"phase {n}: only {done} of {len(keys)} records got an outcome in time"
        failed = [k for k in keys if k in ledger.failed]
        assert not failed, f"phase {n}: {len(failed)} records failed, e.g. {ledger.failed[failed[0]]}"

    def stop(node: int, label: str) -> None:
        before = states(broker, topic)
        broker.stop_broker(node)
        stopped.append(node)
        snap[label] = assert_failed_over(broker, topic, node, before)
        snap[label + " before"] = before

    try:
        driver.start_producer(bootstrap)
        try:
            # (1) all three brokers up
            phase(1)
            s1 = states(broker, topic)
            victim = s1[0]["leader"]

            # (2) the leader of partition 0 stops half-way through the phase while produce requests to
            # it are in flight (acks=all waits out the replication lag of the slower follower).  The
            # follower that takes over replicates at once, so it has those batches: the client's
            # retries must be recognised as duplicates and acknowledged with their original offsets.
            heir = next(r for r in s1[0]["replicas"] if r != victim and r in s1[0]["isr"])
            broker.set_replication_lag(0, broker_id=heir)
            try:
                phase(2, midway=lambda: stop(victim, "victim down"))
            finally:
                broker.set_replication_lag(REPLICATION_LAG_MS)
            s2 = states(broker, topic)
            assert s2[0]["leader"] == heir, s2
            assert all(s["leader"] != victim and victim not in s["isr"] for s in s2), s2
            assert s2[0]["leader_epoch"] == snap["victim down"][0]["leader_epoch"] > s1[0]["leader_epoch"]

            # (3) the victim is back and catches up; half-way, partition 0's leadership moves back to
            # it while the old leader stays up: NOT_LEADER_OR_FOLLOWER for the requests waiting there,
            # and the batches the victim had not replicated yet are truncated and must be resent
            broker.start_broker(victim)
            stopped.remove(victim)
            wait_in_isr(broker, topic, set(NODES))
            s3a = states(broker, topic)
            assert s3a[0]["leader_epoch"] == s2[0]["leader_epoch"]  # a returning follower changes no leader
            phase(3, midway=lambda: elect_preferred(broker, topic, 0, victim))
            s3 = states(broker, topic)
            assert s3[0]["leader"] == victim and s3[0]["leader_epoch"] > s3a[0]["leader_epoch"], s3

            # (4) another partition's leader stops half-way through the phase; its followers lag, so
            # the new leader truncates the unreplicated batches and the client resends them
            second = next(s["leader"] for s in s3 if s["leader"] != victim)
            phase(4, midway=lambda: stop(second, "second down"))
            s4 = states(broker, topic)
            assert all(s["leader"] != second and second not in s["isr"] for s in s4), s4
        finally:
            driver.close_producer()

        # Read everything back from the beginning with `second` still down.
        assert stopped == [second]
        end_states = states(broker, topic)
        ends = {p: s["high_watermark"] for p, s in enumerate(end_states)}
        for p, s in enumerate(end_states):
            assert s["log_end_offset"] == s["high_watermark"], f"partition {p}: {s}"
        assert sum(ends.values()) >= ledger.next_index
        t0 = time.monotonic()
        got = driver.consume(bootstrap, topic, ends, t0 + CONSUME_TIMEOUT_S)
        timings["consume"] = round(time.monotonic() - t0, 3)
        for p in range(N_PARTITIONS):
            last = got[p][-1][0] + 1 if got[p] else 0
            assert last >= ends[p], f"partition {p}: read up to {last} of {ends[p]} in {CONSUME_TIMEOUT_S}s"
        assert_delivered(ledger, got, driver.idempotent)
        # Idempotent: the log holds exactly the acknowledged records, nothing else.
        assert sum(len(v) for v in got.values()) == ledger.next_index
    finally:
        for node in stopped:
            broker.start_broker(node)
    # Both restarted brokers are followers that catch up and rejoin every ISR.
    wait_in_isr(broker, topic, set(NODES))
    final = states(broker, topic)
    assert all(s["leader"] in NODES and s["high_watermark"] == s["log_end_offset"] for s in final), final
    print(f"{topic}: {timings}")


# -- kafka-python ----------------------------------------------------------------------------------
class KafkaPythonDriver(ClientDriver):
    def __init__(self, topic):
        self.topic = topic

    def start_producer(self, bootstrap):
        from kafka import KafkaProducer

        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5,
            retry_backoff_ms=100, metadata_max_age_ms=1000, request_timeout_ms=5000, delivery_timeout_ms=30000,
            reconnect_backoff_ms=50, reconnect_backoff_max_ms=500)

    def produce_phase(self, records, ledger, deadline, midway=None):
        for n, (k, v, part) in enumerate(records):
            if n == len(records) // 2 and midway is not None:
                midway()
            f = self.producer.send(self.topic, key=k, value=v, partition=part)
            f.add_callback(lambda md, k=k: ledger.ack(k, md.partition, md.offset))
            f.add_errback(lambda e, k=k: ledger.fail(k, e))
            if n % 50 == 49:
                time.sleep(0.02)  # several produce requests per phase
        self.producer.flush(timeout=max(0.0, deadline - time.monotonic()))

    def close_producer(self):
        self.producer.close(timeout=10)

    def consume(self, bootstrap, topic, ends, deadline):
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                          retry_backoff_ms=100, metadata_max_age_ms=1000, request_timeout_ms=5000,
                          reconnect_backoff_ms=50, reconnect_backoff_max_ms=500, fetch_max_wait_ms=200)
        got: dict[int, list] = {p: [] for p in range(N_PARTITIONS)}
        try:
            tps = [TopicPartition(topic, p) for p in range(N_PARTITIONS)]
            c.assign(tps)
            c.seek_to_beginning(*tps)
            while time.monotonic() < deadline and any(
                    (got[p][-1][0] + 1 if got[p] else 0) < ends[p] for p in range(N_PARTITIONS)):
                for tp, msgs in c.poll(timeout_ms=200).items():
                    got[tp.partition].extend((m.offset, m.key, m.value) for m in msgs)
        finally:
            c.close()
        return got


def test_kafka_python_failover(cluster):
    pytest.importorskip("kafka")
    driver = KafkaPythonDriver("cluster-kafka-python")
    run_scenario(cluster, driver.topic, driver)


# -- aiokafka ----------------------------------------------------------------------------------------
class AiokafkaDriver(ClientDriver):
    def __init__(self, topic):
        self.topic = topic
        self.loop = asyncio.new_event_loop()

    def start_producer(self, bootstrap):
        from aiokafka import AIOKafkaProducer

        async def start():
            # aiokafka expires a batch after request_timeout_ms: that is its delivery timeout
            p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5,
                                 retry_backoff_ms=100, metadata_max_age_ms=1000, request_timeout_ms=30000)
            await p.start()
            return p

        self.producer = self.loop.run_until_complete(start())

    def produce_phase(self, records, ledger, deadline, midway=None):
        async def run():
            futs = []
            for n, (k, v, part) in enumerate(records):
                if n == len(records) // 2 and midway is not None:
                    midway()
                fut = await self.producer.send(self.topic, key=k, value=v, partition=part)

                def done(f, k=k):
                    if f.cancelled():
                        ledger.fail(k, "cancelled")
                    elif f.exception() is not None:
                        ledger.fail(k, f.exception())
                    else:
                        ledger.ack(k, f.result().partition, f.result().offset)

                fut.add_done_callback(done)
                futs.append(fut)
                if n % 50 == 49:
                    await asyncio.sleep(0.02)
            await asyncio.wait(futs, timeout=max(0.0, deadline - time.monotonic()))
            await asyncio.sleep(0)  # let the done callbacks run

        self.loop.run_until_complete(run())

    def close_producer(self):
        self.loop.run_until_complete(asyncio.wait_for(self.producer.stop(), 10))

    def consume(self, bootstrap, topic, ends, deadline):
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def run():
            c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                 auto_offset_reset="earliest", retry_backoff_ms=100, metadata_max_age_ms=1000,
                                 request_timeout_ms=5000, fetch_max_wait_ms=200)
            await c.start()
            got: dict[int, list] = {p: [] for p in range(N_PARTITIONS)}
            try:
                tps = [TopicPartition(topic, p) for p in range(N_PARTITIONS)]
                c.assign(tps)
                await c.seek_to_beginning(*tps)
                while time.monotonic() < deadline and any(
                        (got[p][-1][0] + 1 if got[p] else 0) < ends[p] for p in range(N_PARTITIONS)):
                    for tp, msgs in (await c.getmany(timeout_ms=200)).items():
                        got[tp.partition].extend((m.offset, m.key, m.value) for m in msgs)
            finally:
                await c.stop()
            return got

        return self.loop.run_until_complete(run())

    def close(self):
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()


def test_aiokafka_failover(cluster):
    pytest.importorskip("aiokafka")
    driver = AiokafkaDriver("cluster-aiokafka")
    try:
        run_scenario(cluster, driver.topic, driver)
    finally:
        driver.close()


# -- confluent-kafka (librdkafka) -------------------------------------------------------------------
class ConfluentDriver(ClientDriver):
    def __init__(self, topic):
        self.topic = topic

    def start_producer(self, bootstrap):
        from confluent_kafka import Producer

        self.producer = Producer({
            "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
            "retry.backoff.ms": 100, "retry.backoff.max.ms": 500, "topic.metadata.refresh.interval.ms": 1000,
            "request.timeout.ms": 5000, "message.timeout.ms": 30000,
            "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
            "log_level": 3,  # connection-refused chatter while a broker is down
        })

    def produce_phase(self, records, ledger, deadline, midway=None):
        def on_delivery(err, msg):
            k = msg.key()
            if err is not None:
                ledger.fail(k, err)
            else:
                ledger.ack(k, msg.partition(), msg.offset())

        for n, (k, v, part) in enumerate(records):
            if n == len(records) // 2 and midway is not None:
                midway()
            while True:
                try:
                    self.producer.produce(self.topic, key=k, value=v, partition=part, on_delivery=on_delivery)
                    break
                except BufferError:
                    self.producer.poll(0.05)
            if n % 50 == 49:
                self.producer.poll(0.02)
        keys = [k for k, _, _ in records]
        while ledger.outcome_count(keys) < len(keys) and time.monotonic() < deadline:
            self.producer.poll(0.1)

    def close_producer(self):
        self.producer.flush(10)

    def consume(self, bootstrap, topic, ends, deadline):
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "retry.backoff.ms": 100,
                      "topic.metadata.refresh.interval.ms": 1000, "fetch.wait.max.ms": 200,
                      "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500, "log_level": 3})
        got: dict[int, list] = {p: [] for p in range(N_PARTITIONS)}
        try:
            c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(N_PARTITIONS)])
            while time.monotonic() < deadline and any(
                    (got[p][-1][0] + 1 if got[p] else 0) < ends[p] for p in range(N_PARTITIONS)):
                for m in c.consume(num_messages=500, timeout=0.2):
                    if m.error() is not None:
                        if m.error().retriable() or not m.error().fatal():
                            continue
                        raise AssertionError(f"consumer error: {m.error()}")
                    got[m.partition()].append((m.offset(), m.key(), m.value()))
        finally:
            c.close()
        return got


def test_confluent_failover(cluster):
    pytest.importorskip("confluent_kafka")
    driver = ConfluentDriver("cluster-confluent")
    run_scenario(cluster, driver.topic, driver)


# -- two failovers within one replication lag ------------------------------------------------------
def test_second_failover_within_replication_lag_keeps_exactly_once(cluster):
    """Two failovers within one replication lag: the idempotent producer's batch must be stored once.

    A (10 records, acks=1) goes to leader L; L stops before its followers have A, so the new leader F
    truncates A.  B (20 records, one batch, idempotent acks=all) goes to F.  Kafka moves the high
    watermark only when the other follower has fetched B from F, a replication lag after B's append
    (the follower's catch-up of A, issued under the old leader epoch, is fenced and credits nothing).
    The moment it moves, F stops too: the client resends B to the last broker, which must either
    have B whole (and answer the retry as a duplicate) or not at all.

    Regression: catch-ups carried no leader epoch, so the stale catch-up of A credited the follower
    with offset 10 of F's log (inside batch B) a lag after A; the second election truncated the log
    at a batch boundary (B kept) but the producer state at 10 (B forgotten), and the retry of B was
    appended a second time (B at offsets 0..19 and again at 20..39, acknowledged at 20..39).
    """
    kafka = pytest.importorskip("kafka")
    topic = "cluster-stale-catchup"
    lag_ms = 1000
    cluster.create_topic(topic, 1, 3)
    cluster.set_replication_lag(lag_ms, topic=topic)
    stopped: list[int] = []
    bootstrap = cluster.bootstrap_servers
    x = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks=1, enable_idempotence=False, linger_ms=0)
    y = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=50,
                            retry_backoff_ms=50, metadata_max_age_ms=500, request_timeout_ms=10000,
                            delivery_timeout_ms=30000, reconnect_backoff_ms=50, reconnect_backoff_max_ms=500)
    try:
        y.partitions_for(topic)
        for i in range(10):
            x.send(topic, b"A%d" % i, partition=0)
        x.flush(10)
        leader = cluster.partition_state(topic, 0)["leader"]
        cluster.stop_broker(leader)
        stopped.append(leader)
        s = cluster.partition_state(topic, 0)
        assert s["log_end_offset"] == 0 and s["leader"] != leader, s  # A was never replicated
        time.sleep(0.4)  # a stale catch-up of A would land well before B's real one

        futures = [y.send(topic, b"B%d" % i, partition=0) for i in range(20)]
        wait_until(lambda: cluster.log_end_offset(topic, 0) == 20, 10, lambda: "B appended")
        t_b = time.monotonic()
        wait_until(lambda: cluster.partition_state(topic, 0)["high_watermark"] > 0, 5, lambda: "a HW move")
        moved = cluster.partition_state(topic, 0)
        moved_after_ms = (time.monotonic() - t_b) * 1000
        cluster.stop_broker(moved["leader"])
        stopped.append(moved["leader"])
        offsets = [f.get(timeout=30).offset for f in futures]
    finally:
        x.close(5)
        y.close(5)
        cluster.set_replication_lag(0, topic=topic)
        for node in stopped:
            cluster.start_broker(node)
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                            consumer_timeout_ms=2000)
    c.assign([kafka.TopicPartition(topic, 0)])
    stored = [(m.offset, m.value) for m in c]
    c.close()
    values = [v for _, v in stored]
    detail = (f"HW moved to {moved['high_watermark']} {moved_after_ms:.0f} ms after B's append "
              f"(replication lag {lag_ms} ms); B acknowledged at offsets {offsets[0]}..{offsets[-1]}; "
              f"log: {len(stored)} records, first {stored[:2]}, last {stored[-2:]}")
    assert sorted(values) == sorted(b"B%d" % i for i in range(20)), detail
    assert offsets == [o for o, _ in stored], detail
    assert moved_after_ms >= lag_ms - 150, detail  # the HW waited for B's replication
    wait_in_isr(cluster, topic, set(NODES), partitions=1)
