"""The throttle-conformance report over a journal recorded from real clients: kafka-python (backs
off itself, KIP-219), aiokafka and confluent-kafka (librdkafka), producing at once, each under the
same producer_byte_rate quota (mock.throttle.mode=observe, one request in flight).  The report's
throttle counts per client equal the broker's own throttle_events() for that run exactly, and its
early requests tell the clients apart (docs/report.md)."""

from __future__ import annotations

import asyncio
import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from mockbroker import MockBroker
from tests.toolchains import unavailable

QUOTA_BPS = 20_000
PAYLOAD = b"x" * 1000
N = 100  # 100 KB: ~5x the quota's burst allowance
CLIENTS = ("kp-r", "aio-r", "ck-r")


@pytest.fixture(scope="module")
def spark():
    try:
        import pyspark  # noqa: F401
    except ImportError:
        unavailable("the report tests cannot run: pyspark is not installed (pip install -e '.[report]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        unavailable("the report tests cannot run: java not found on PATH (Spark needs a JDK 17+)")
    from mockbroker.report import job
    s = job.spark_session("local[2]", "test-report-clients")
    yield s
    s.stop()


def _kafka_python(bootstrap: str) -> None:
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, client_id="kp-r", acks=1, linger_ms=5, batch_size=4096,
                      max_in_flight_requests_per_connection=1)
    for _ in range(N):
        p.send("rep", PAYLOAD)
    p.flush(60)
    p.close()


def _aiokafka(bootstrap: str) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="aio-r", acks=1, linger_ms=5,
                             max_batch_size=4096)
        await p.start()
        try:
            for _ in range(N):
                await p.send("rep", PAYLOAD)
            await p.flush()
        finally:
            await p.stop()
    asyncio.run(run())


def _confluent(bootstrap: str) -> None:
    import confluent_kafka
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "client.id": "ck-r", "acks": 1, "linger.ms": 5,
                                  "batch.size": 4096, "max.in.flight.requests.per.connection": 1})
    for _ in range(N):
        p.produce("rep", PAYLOAD)
        p.poll(0)
    assert p.flush(60) == 0


def test_report_matches_the_brokers_throttle_events(spark, tmp_path):
    pytest.importorskip("aiokafka")
    pytest.importorskip("confluent_kafka")
    from mockbroker.report import job
    quotas = ";".join(f"clients/{c}:producer_byte_rate={QUOTA_BPS}" for c in CLIENTS)
    cfg = {"quota.window.num": 2, "mock.throttle.mode": "observe", "num.partitions": 1, "mock.quotas": quotas,
           "mock.journal.dir": str(tmp_path)}
    with MockBroker(config=cfg) as b:
        b.create_topic("rep", 1)
        # at once: each client under its own client-id's quota, so they pace each other no more than
        # the machine does (a client delayed by the others is late, never early)
        with ThreadPoolExecutor(3) as pool:
            for f in [pool.submit(produce, b.bootstrap_servers) for produce in (_kafka_python, _aiokafka, _confluent)]:
                f.result(timeout=120)
        events = {c: b.throttle_events(c) for c in CLIENTS}
    report = job.build(spark, [str(tmp_path)], warn=lambda w: pytest.fail(str(w)))
    th = report.tables["throttles"].groupBy("client_id").agg(
        {"throttles": "sum", "with_next": "sum", "early": "sum", "worst_early_ms": "max"}).collect()
    got = {r["client_id"]: r for r in th}
    for c in CLIENTS:
        assert events[c], c
        assert got[c]["sum(throttles)"] == len(events[c]), c
        assert got[c]["sum(with_next)"] == sum(e["next_request_ms"] is not None for e in events[c]), c
        # KIP-219 violations by the broker's own rule (quota/verdict.py), from the journal's after_throttle
        assert got[c]["sum(early)"] == sum(e["violation"] for e in events[c]), c
    verdicts = {r.client_id: r for r in report.tables["verdicts"].collect()}
    for c in CLIENTS:
        print(c, {k: verdicts[c][k] for k in ("throttles", "judged", "violations_obliged", "worst_early_ms", "verdict")})
    # kafka-python backs off itself: never more than a few ms early (clock rounding on both sides)
    assert (verdicts["kp-r"].worst_early_ms or 0) <= 5, verdicts["kp-r"]
    assert verdicts["kp-r"].verdict == "honours" and verdicts["kp-r"].judged > 0, verdicts["kp-r"]
    # librdkafka and aiokafka send the next request as soon as the throttled response arrives
    for c in ("aio-r", "ck-r"):
        assert verdicts[c].violations_obliged > 0 and verdicts[c].verdict == "ignores", verdicts[c]
        assert verdicts[c].worst_early_ms > 5, verdicts[c]
