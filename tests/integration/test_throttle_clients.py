"""Real clients under a client quota, in each ``mock.throttle.mode`` (mute, delay, observe): their
own throttle signals fire, and the broker's verdict on each (``/throttles/violations`` by entity,
mockbroker/quota/verdict.py) is what that client's own code does -- docs/report.md, "Verdicts by
client", has the table and the client code behind each row:

* honours (KIP-219 implemented: the client holds its next request on that connection back for
  throttle_time_ms after the response): kafka-python, Kafka's Java producer (one request in flight)
  and consumer, kafkajs, franz-go;
* ignores (no KIP-219 back-off: the next request goes out as soon as the response is in):
  aiokafka, confluent-kafka (librdkafka).

Spark's source (the Java consumer inside Spark, which crosses ListOffsets with a throttled Fetch) is
in test_spark_quotas_faults.py.

Short windows (quota.window.num=2, 1 s samples) keep the burst allowance small, so 100 KB at
20 KB/s throttle each client for a few seconds.  Each client sends with one request in flight, so
nothing is pipelined and every throttle followed by a request is judged.  The seven clients run at
once against each mode's broker, each under its own client-id's quota (quotas are per entity; a
client slowed by the others is late, never early), and each test checks its client's outcome.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from mockbroker import MockBroker

from .gotools import franz_go_binary
from .javatools import java_classpath
from .jstools import JS_DIR, node_with_kafkajs

QUOTA_BPS = 20_000
PAYLOAD = b"x" * 1000
N = 100  # 100 KB: ~5x the quota's burst allowance
MIN_JUDGED = 3  # a verdict rests on at least this many judged throttles
RUN_TIMEOUT_S = 90


@pytest.fixture(scope="module", params=["mute", "delay", "observe"])
def throttling(request):
    cfg = {"quota.window.num": 2, "mock.throttle.mode": request.param, "num.partitions": 1}
    with MockBroker(config=cfg) as b:
        yield b


def produce_events(b, client_id):
    return [e for e in b.throttle_events(client_id) if e["api_key"] == 0]


def verdict_of(b: MockBroker, client_id: str, want: str) -> dict:
    """The broker's verdict on ``client_id``, checked to be ``want`` on enough judged throttles."""
    [row] = [v for v in b.violations(by="entity") if v["client_id"] == client_id]
    events = b.throttle_events(client_id)
    print(f"\n{client_id} {events[0]['mode'] if events else '-'}: {row['verdict']} {row['violations_obliged']}/"
          f"{row['judged']} judged early (of {row['throttles']} throttles), worst {row['worst_early_ms']} ms")
    assert row["judged"] >= MIN_JUDGED and row["verdict"] == want, (row, events)
    if want == "honours":
        assert row["violations_obliged"] == 0 and row["worst_early_ms"] == 0, row
    else:  # it sent nearly at once: early by nearly the whole throttle
        assert row["worst_early_ms"] > 50, row
    return row


def quota(b: MockBroker, client_id: str, topic: str, consumer: bool = False) -> None:
    b.create_topic(topic, 1)
    b.set_quota(client_id=client_id, **{"consumer_byte_rate" if consumer else "producer_byte_rate": QUOTA_BPS})


def run(cmd: list[str], what: str, cwd: str | None = None) -> str:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{what} timed out after {RUN_TIMEOUT_S}s; stderr: {str(e.stderr)[-2000:]}")
    assert r.returncode == 0, f"{what} exited {r.returncode}\nstdout: {r.stdout[-2000:]}\nstderr: {r.stderr[-3000:]}"
    return r.stdout


def kafka_python(b: MockBroker) -> dict[str, Any]:
    from kafka import KafkaProducer

    quota(b, "kp-q", "thr-kp")
    p = KafkaProducer(bootstrap_servers=b.bootstrap_servers, client_id="kp-q", acks=1, linger_ms=5,
                      batch_size=4096, max_in_flight_requests_per_connection=1)  # no pipelining
    t0 = time.monotonic()
    for _ in range(N):
        p.send("thr-kp", PAYLOAD)
    p.flush(60)
    elapsed = time.monotonic() - t0
    metrics = p.metrics()
    p.close()
    return {"elapsed": elapsed, "metrics": metrics}


def confluent(b: MockBroker) -> dict[str, Any]:
    import confluent_kafka

    quota(b, "ck-q", "thr-ck")
    seen: list[float] = []
    stats: list[dict] = []
    p = confluent_kafka.Producer({"bootstrap.servers": b.bootstrap_servers, "client.id": "ck-q",
                                  "statistics.interval.ms": 500, "stats_cb": lambda s: stats.append(json.loads(s)),
                                  "acks": 1, "linger.ms": 5, "batch.size": 4096,
                                  "max.in.flight.requests.per.connection": 1,
                                  "throttle_cb": lambda ev: seen.append(ev.throttle_time)})
    for _ in range(N):
        p.produce("thr-ck", PAYLOAD)
        p.poll(0)
    unflushed = p.flush(60)
    p.poll(0.5)
    p.poll(0.6)  # one more statistics interval, after the last throttle
    return {"unflushed": unflushed, "seen": seen, "stats": stats}


def aiokafka(b: MockBroker) -> None:
    from aiokafka import AIOKafkaProducer

    quota(b, "aio-q", "thr-aio")

    async def produce() -> None:
        p = AIOKafkaProducer(bootstrap_servers=b.bootstrap_servers, client_id="aio-q", acks=1,
                             linger_ms=5, max_batch_size=4096)
        await p.start()
        try:
            for _ in range(N):
                await p.send("thr-aio", PAYLOAD, partition=0)
            await p.flush()
        finally:
            await p.stop()
    asyncio.run(produce())


def java_producer(b: MockBroker) -> str:
    cp = java_classpath("Throttled")
    quota(b, "java-p-q", "thr-javap")
    return run([shutil.which("java") or "java", "-cp", cp, "Throttled", "producer", b.bootstrap_servers,
                "thr-javap", "java-p-q", str(N), str(len(PAYLOAD))], "the Java producer")


def java_consumer(b: MockBroker) -> str:
    from kafka import KafkaProducer

    cp = java_classpath("Throttled")
    quota(b, "java-c-q", "thr-javac", consumer=True)
    p = KafkaProducer(bootstrap_servers=b.bootstrap_servers, client_id="java-c-fill", acks=1)
    for _ in range(N):
        p.send("thr-javac", PAYLOAD, partition=0)
    p.flush(30)
    p.close()
    return run([shutil.which("java") or "java", "-cp", cp, "Throttled", "consumer", b.bootstrap_servers,
                "thr-javac", "java-c-q", str(N)], "the Java consumer")


def kafkajs(b: MockBroker) -> str:
    node = node_with_kafkajs()
    quota(b, "kjs-q", "thr-kjs")
    return run([node, str(JS_DIR / "throttled.js"), b.bootstrap_servers, "thr-kjs", "kjs-q", str(N),
                str(len(PAYLOAD))], "kafkajs", cwd=str(JS_DIR))


def franz_go(b: MockBroker) -> str:
    binary = franz_go_binary()
    quota(b, "kgo-q", "thr-kgo")
    return run([binary, "throttled", b.bootstrap_servers, "thr-kgo", "kgo-q", str(N), str(len(PAYLOAD))],
               "franz-go")


CLIENTS: dict[str, Callable[[MockBroker], Any]] = {
    "kafka-python": kafka_python, "confluent-kafka": confluent, "aiokafka": aiokafka,
    "java producer": java_producer, "java consumer": java_consumer, "kafkajs": kafkajs, "franz-go": franz_go}


@pytest.fixture(scope="module")
def ran(throttling) -> dict[str, Any]:
    """Each client's outcome (or what it raised: a failure, or a skip for a missing toolchain), all
    seven run at once against the mode's broker."""
    got: dict[str, Any] = {}
    with ThreadPoolExecutor(len(CLIENTS)) as pool:
        futures = {name: pool.submit(client, throttling) for name, client in CLIENTS.items()}
        for name, f in futures.items():
            try:
                got[name] = f.result(timeout=2 * RUN_TIMEOUT_S)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:  # noqa: BLE001 - pytest's skip and fail too: raised by that client's test
                got[name] = e
    return got


def outcome(ran: dict[str, Any], name: str) -> Any:
    got = ran[name]
    if isinstance(got, BaseException):
        raise got
    return got


def test_kafka_python_reports_and_honours_throttle(throttling, ran):
    got = outcome(ran, "kafka-python")
    assert got["metrics"]["producer-metrics"]["throttle-time-max"] > 0  # kafka-python 3.0 names it so
    events = produce_events(throttling, "kp-q")
    assert events and all(e["client_should_throttle"] for e in events)  # Produce v9 >= v6
    # kafka-python backs off itself (KafkaConnection._maybe_throttle): never before the deadline
    verdict_of(throttling, "kp-q", "honours")
    # and the throttling paces it near the quota (tolerance: one window of slack)
    assert got["elapsed"] >= (N * len(PAYLOAD) - 2 * QUOTA_BPS) / QUOTA_BPS - 1.0


def test_confluent_throttle_callback_fires_and_it_ignores_the_throttle(throttling, ran):
    pytest.importorskip("confluent_kafka")
    got = outcome(ran, "confluent-kafka")
    assert got["unflushed"] == 0
    assert got["seen"] and max(got["seen"]) > 0  # ThrottleEvent.throttle_time is in seconds
    # librdkafka's statistics: the broker's throttle window counts the non-zero throttles
    assert any(b["throttle"]["cnt"] > 0 and b["throttle"]["max"] > 0
               for st in got["stats"] for b in st["brokers"].values() if b["nodeid"] >= 0)
    # librdkafka has no KIP-219 back-off (INTRODUCTION.md: KIP-219 not supported): even with one
    # request in flight it sends the next as soon as the throttled response is in
    verdict_of(throttling, "ck-q", "ignores")


def test_aiokafka_ignores_the_throttle(throttling, ran):
    pytest.importorskip("aiokafka")
    outcome(ran, "aiokafka")
    # aiokafka parses throttle_time_ms and does nothing with it
    verdict_of(throttling, "aio-q", "ignores")


def test_java_producer_honours_the_throttle(throttling, ran):
    out = outcome(ran, "java producer")
    assert out.strip().endswith(f"DONE {N}"), out
    assert produce_events(throttling, "java-p-q")
    # NetworkClient.maybeThrottle: the node is not ready (canSendRequest) until the throttle has passed
    verdict_of(throttling, "java-p-q", "honours")


def test_java_consumer_honours_the_throttle(throttling, ran):
    out = outcome(ran, "java consumer")
    assert out.strip().endswith(f"DONE {N}"), out
    events = throttling.throttle_events("java-c-q")
    assert events and {e["api_key"] for e in events} == {1}, events  # Fetch, the consumer byte quota
    verdict_of(throttling, "java-c-q", "honours")


def test_kafkajs_honours_the_throttle(throttling, ran):
    got = json.loads(outcome(ran, "kafkajs").strip().splitlines()[-1])
    assert got["ok"] and got["records"] == N, got
    # requestQueue.maybeThrottle held requests back: visible as their pendingDuration
    assert got["throttled_ms"], got
    verdict_of(throttling, "kjs-q", "honours")


def test_franz_go_honours_the_throttle(throttling, ran):
    out = outcome(ran, "franz-go")
    words = out.split()
    assert words[:2] == ["DONE", str(N)] and int(words[3]) > 0, out  # HookBrokerThrottle saw throttles
    verdict_of(throttling, "kgo-q", "honours")
