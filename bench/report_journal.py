"""A request journal recorded from real clients under quotas, as a user of `mockbroker report` would
make one (docs/report.md): the input of bench/report_speed.py and of the report's screenshot.

One run is one MockBroker (``--brokers``, throttle mode ``--mode``) with ``mock.journal.dir`` set,
serving seven clients at once for ``--seconds``, each in its own thread:

* ``raw-ignores``: a raw client (protocol/client.py) sending Produce v9 in a loop, the next request
  as soon as the response is in, whatever its throttle_time_ms says;
* ``raw-honours``: the same loop, sleeping the response's throttle_time_ms before the next request;
* ``kp-producer`` / ``kp-consumer``: kafka-python's KafkaProducer and KafkaConsumer;
* ``ck-producer``: confluent-kafka (librdkafka);
* ``aio-producer``: aiokafka;
* ``feeder``: a kafka-python producer without a quota, feeding the consumer's topic.

Every client but the feeder has its own quota (``producer_byte_rate`` or ``consumer_byte_rate``,
``--quota`` bytes/s).  Several runs into one directory are several runs of the report.

Usage: .venv/bin/python bench/report_journal.py DIR [--seconds 60] [--mode mute] [--brokers 1]
       [--runs 1] [--quota 40000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

PAYLOAD = 2_000  # bytes per record value
CLIENTS = ("raw-ignores", "raw-honours", "kp-producer", "kp-consumer", "ck-producer", "aio-producer", "feeder")


def _raw(bootstrap: str, client_id: str, honours: bool, until: float) -> None:
    from protocol.client import RawKafkaClient
    from protocol.codec import build_request
    from protocol.records import build_batch
    with RawKafkaClient.connect(bootstrap, client_id=client_id) as c:
        c.request(18, 3, {"client_software_name": client_id, "client_software_version": "1.0"})
        records = build_batch([(b"k", b"x" * PAYLOAD, [])] * 4, base_timestamp=1)
        body = build_request(0, 9, {"acks": 1, "timeout": 30_000, "topic_data": [
            {"name": "raw", "partition_data": [{"index": 0, "records": records}]}]})
        while time.monotonic() < until:
            r = c.request(0, 9, body)
            if honours and r.throttle_time:
                time.sleep(r.throttle_time.total_seconds() if hasattr(r.throttle_time, "total_seconds")
                           else r.throttle_time / 1000)


def _kafka_python_producer(bootstrap: str, client_id: str, topic: str, until: float, pace_s: float = 0.0) -> None:
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, acks=1, linger_ms=5, batch_size=16384)
    n = 0
    while time.monotonic() < until:
        sent = p.send(topic, b"x" * PAYLOAD)
        n += 1
        if n % 32 == 0:  # a bounded backlog: wait for every 32nd record's delivery
            sent.get(timeout=60)
        time.sleep(pace_s or 0.001)
    p.flush(60)
    p.close(timeout=10)


def _kafka_python_consumer(bootstrap: str, until: float) -> None:
    from kafka import KafkaConsumer
    c = KafkaConsumer("feed", bootstrap_servers=bootstrap, client_id="kp-consumer", group_id=None,
                      auto_offset_reset="earliest", fetch_max_bytes=64 * 1024, max_partition_fetch_bytes=64 * 1024)
    while time.monotonic() < until:
        c.poll(timeout_ms=200)
    c.close()


def _confluent(bootstrap: str, until: float) -> None:
    import confluent_kafka
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "client.id": "ck-producer", "acks": 1,
                                  "linger.ms": 5, "batch.size": 16384,
                                  "queue.buffering.max.kbytes": 128})  # a bounded backlog, as above
    while time.monotonic() < until:
        try:
            p.produce("ck", b"x" * PAYLOAD)
        except BufferError:
            p.poll(0.05)
        p.poll(0)
        time.sleep(0.001)
    p.flush(60)


def _aiokafka(bootstrap: str, until: float) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="aio-producer", acks=1, linger_ms=5,
                             max_batch_size=16384)
        await p.start()
        try:
            n = 0
            while time.monotonic() < until:
                sent = await p.send("aio", b"x" * PAYLOAD)
                n += 1
                if n % 64 == 0:  # a bounded backlog: wait for the 64th record's delivery
                    await sent
                await asyncio.sleep(0.001)
            await p.flush()
        finally:
            await p.stop()
    asyncio.run(run())


def record_run(directory: str, seconds: float, mode: str = "mute", brokers: int = 1, quota: int = 40_000) -> None:
    """One run of the seven clients into ``directory`` (a journal of its own start time)."""
    from mockbroker import MockBroker
    quotas = ";".join([f"clients/{c}:producer_byte_rate={quota}" for c in CLIENTS if "producer" in c or "raw" in c]
                      + [f"clients/kp-consumer:consumer_byte_rate={quota}"])
    cfg = {"mock.throttle.mode": mode, "mock.quotas": quotas, "mock.journal.dir": directory, "num.partitions": 1,
           "mock.num.brokers": brokers}
    with MockBroker(config=cfg) as b:
        for t in ("raw", "feed", "kp", "ck", "aio"):
            b.create_topic(t, 1)
        bs = b.bootstrap_servers
        until = time.monotonic() + seconds
        jobs = [lambda: _raw(bs, "raw-ignores", False, until), lambda: _raw(bs, "raw-honours", True, until),
                lambda: _kafka_python_producer(bs, "kp-producer", "kp", until),
                lambda: _kafka_python_consumer(bs, until), lambda: _confluent(bs, until), lambda: _aiokafka(bs, until),
                lambda: _kafka_python_producer(bs, "feeder", "feed", until, pace_s=0.05)]
        errors: list[BaseException] = []

        def guard(fn):  # a client that fails must not hang the run: its error is raised at the end
            def run() -> None:
                try:
                    fn()
                except BaseException as e:  # noqa: BLE001 - re-raised below
                    errors.append(e)
            return run
        threads = [threading.Thread(target=guard(j), daemon=True) for j in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(seconds + 60)
        if errors:
            raise errors[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--mode", default="mute", choices=("mute", "delay", "observe"))
    ap.add_argument("--brokers", type=int, default=1)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--quota", type=int, default=40_000)
    a = ap.parse_args()
    for _ in range(a.runs):
        record_run(a.dir, a.seconds, a.mode, a.brokers, a.quota)
    size = sum(os.path.getsize(os.path.join(a.dir, f)) for f in os.listdir(a.dir))
    print(f"{a.dir}: {len(os.listdir(a.dir))} file(s), {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
