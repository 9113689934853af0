"""The example client of docker-compose.yml: produces RECORDS records to TOPIC through BOOTSTRAP,
consumes them back from the beginning, checks every key, value and per-partition order, and exits 0,
or 1 on any mismatch (2 when the broker cannot be reached in time).  kafka-python only.

Environment: BOOTSTRAP (default kafka:9092), TOPIC (default example), RECORDS (default 1000),
CLIENT_ID (default example-client), TIMEOUT_S (default 60: the bound of every wait).
"""

from __future__ import annotations

import os
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

BOOTSTRAP = os.environ.get("BOOTSTRAP", "kafka:9092")
TOPIC = os.environ.get("TOPIC", "example")
RECORDS = int(os.environ.get("RECORDS", "1000"))
CLIENT_ID = os.environ.get("CLIENT_ID", "example-client")
TIMEOUT_S = float(os.environ.get("TIMEOUT_S", "60"))


def log(msg: str) -> None:
    print(f"example client: {msg}", flush=True)


def connect(deadline: float) -> KafkaProducer:
    """A producer that has the topic's metadata (the topic is created then), retried until the broker
    answers or the deadline passes (compose may start us before the broker is healthy)."""
    while True:
        producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, client_id=CLIENT_ID, acks="all",
                                 request_timeout_ms=10_000, max_block_ms=10_000)
        try:
            if producer.partitions_for(TOPIC):
                return producer
        except KafkaError as e:
            if time.monotonic() > deadline:
                raise
            log(f"broker not there yet ({e!r}); retrying")
        producer.close(timeout=1)
        time.sleep(1)


def main() -> int:
    deadline = time.monotonic() + TIMEOUT_S
    try:
        producer = connect(deadline)
    except KafkaError as e:
        log(f"no broker at {BOOTSTRAP} within {TIMEOUT_S:g} s: {e!r}")
        return 2
    sent: dict[int, list[tuple[bytes, bytes]]] = {}
    try:
        futures = []
        for i in range(RECORDS):
            key, value = f"key-{i}".encode(), f"value-{i}-{'x' * (i % 50)}".encode()
            futures.append((key, value, producer.send(TOPIC, key=key, value=value)))
        producer.flush(timeout=max(deadline - time.monotonic(), 1))
        for key, value, future in futures:
            md = future.get(timeout=max(deadline - time.monotonic(), 1))
            sent.setdefault(md.partition, []).append((key, value))
        brokers = sorted(f"{b.host}:{b.port}" for b in producer._metadata.brokers())
    except KafkaError as e:
        log(f"produce failed: {e!r}")
        return 1
    finally:
        producer.close(timeout=5)
    log(f"produced {RECORDS} records to {TOPIC} ({len(sent)} partitions) via {BOOTSTRAP}; "
        f"brokers advertised: {', '.join(brokers)}")

    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, client_id=CLIENT_ID, enable_auto_commit=False,
                             consumer_timeout_ms=1_000, request_timeout_ms=10_000)
    got: dict[int, list[tuple[bytes, bytes]]] = {}
    try:
        parts = [TopicPartition(TOPIC, p) for p in sorted(sent)]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        while sum(map(len, got.values())) < RECORDS and time.monotonic() < deadline:
            for rec in consumer:
                got.setdefault(rec.partition, []).append((rec.key, rec.value))
                if sum(map(len, got.values())) >= RECORDS:
                    break
    finally:
        consumer.close()
    total = sum(map(len, got.values()))
    if got != sent:
        bad = [p for p in sorted(set(sent) | set(got)) if got.get(p) != sent.get(p)]
        log(f"MISMATCH: consumed {total} of {RECORDS} records; partitions differing: {bad}")
        return 1
    log(f"consumed {total} records back, every key, value and per-partition order matches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
