"""Client byte-rate quota convergence: a real Apache Kafka 4.4.0 broker and mockbroker, side by side.

The workloads are those of tests/integration/test_quota_convergence.py, run unchanged against both
brokers in one run:

* producer: kafka-python KafkaProducer, client_id ``conv-p``, producer_byte_rate=100000, acks=1,
  linger_ms=5, batch_size=16384, one request in flight, 1000-byte records, about 2 s of records
  queued; the rate is the client's acknowledged record bytes per second;
* consumer: 38 s of the quota pre-filled by confluent-kafka (no quota on its client id), then
  kafka-python KafkaConsumer, client_id ``conv-c``, consumer_byte_rate=200000, assign() on one
  partition from the earliest offset, max_partition_fetch_bytes = fetch_max_bytes = 64 KiB,
  poll(timeout_ms=100); the rate is the client's consumed record value bytes per second.
  librdkafka's default batch.size (1,000,000 B) makes the pre-filled batches ~1 MB each, and a
  fetch returns at least one whole batch (KIP-74), so each Fetch carries ~1 MB;
* consumer16k (not in the test): the same consumer on a topic pre-filled with batch.size=16384,
  so that a 64 KiB fetch returns several small batches instead of one ~1 MB batch.

Each run lasts 24 s and the rate is measured from 12 s to 24 s (after the 11 x 1 s quota window,
Kafka's default and mockbroker's, has slid past the start-up burst). Every response's
throttle_time_ms, as kafka-python received it, is recorded too (by wrapping
``KafkaConnection._maybe_throttle``), with the record bytes each Fetch response carried.

Real Kafka (bench/brokers.py's ``RealKafka``): a single-node KRaft broker+controller from the jars
that bench/realkafka/pom.xml resolves (``mvn -q dependency:build-classpath -Dkafka.version=4.4.0
-Dmdep.outputFile=cp-4.4.0.txt``, run when that file is missing or older than the pom), storage formatted with
kafka.tools.StorageTool in a temp dir, quotas set with kafka-configs' main class (org.apache.kafka.tools.
ConfigCommand; kafka.admin.ConfigCommand before 4.4) with --entity-type clients (kafka-python 3.0.12
has no AlterClientQuotas call). mockbroker: ``MockBroker(config={"mock.quotas": ...})`` in this
process, as the test does.

Usage: .venv/bin/python bench/quota_vs_kafka.py [--only kafka|mock] [--workloads producer,consumer,consumer16k]
Without java or mvn, or when Maven cannot resolve Kafka, it says why and exits 0.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from brokers import KAFKA_VERSION, RealKafka, Unavailable, kafka_classpath  # bench/brokers.py

RUN_S = 24.0
MEASURE_FROM_S = 12.0
PRODUCER_QUOTA = 100_000
CONSUMER_QUOTA = 200_000


# --- what the client saw: every response's throttle_time_ms -------------------------------------

THROTTLES: list[tuple[float, str, int, int]] = []  # (monotonic, response class, throttle ms, record bytes)
_THROTTLES_LOCK = threading.Lock()


def _record_bytes(response) -> int:
    """Record bytes a Fetch response carried (0 for other responses)."""
    total = 0
    for topic in getattr(response, "responses", None) or []:
        for part in getattr(topic, "partitions", None) or []:
            records = getattr(part, "records", None)
            if records is None:
                continue
            try:
                total += len(records)
            except TypeError:
                buf = getattr(records, "_buffer", None)
                total += len(buf) if buf is not None else 0
    return total


def install_throttle_recorder() -> None:
    from kafka.net.connection import KafkaConnection

    original = KafkaConnection._maybe_throttle
    if getattr(original, "_quota_bench", False):
        return

    def recording(self, response):
        name = type(response).__name__
        nbytes = _record_bytes(response) if "Fetch" in name else 0
        with _THROTTLES_LOCK:
            THROTTLES.append((time.monotonic(), name, int(getattr(response, "throttle_time_ms", 0) or 0), nbytes))
        return original(self, response)

    recording._quota_bench = True
    KafkaConnection._maybe_throttle = recording


def throttle_summary(kind: str, start: float) -> dict:
    """Throttle times of the ``kind`` (Produce/Fetch) responses received in the measured window."""
    with _THROTTLES_LOCK:
        rows = [(t - start, ms, nb) for t, name, ms, nb in THROTTLES if kind in name]
    inside = [(ms, nb) for t, ms, nb in rows if MEASURE_FROM_S <= t <= RUN_S]
    throttled = [ms for ms, _ in inside if ms > 0]
    return {
        "responses": len(inside),
        "throttled": len(throttled),
        "avg_ms": sum(throttled) / len(throttled) if throttled else 0.0,
        "max_ms": max(throttled, default=0),
        # share of the measured window the client was told to wait (throttles may overlap a little)
        "throttled_share": sum(throttled) / 1000 / (RUN_S - MEASURE_FROM_S),
        "data_responses": sum(1 for _, nb in inside if nb > 0),
        "throttled_with_data": sum(1 for ms, nb in inside if ms > 0 and nb > 0),
        "bytes_per_data_response": (sum(nb for _, nb in inside) / max(1, sum(1 for _, nb in inside if nb > 0))),
        "all_rows": len(rows),
        # every response that carried records or a throttle, over the whole run: (s, throttle ms, bytes)
        "timeline": [(t, ms, nb) for t, ms, nb in rows if ms > 0 or nb > 0],
        # record bytes the Fetch responses carried in each second of the run
        "per_second": [sum(nb for t, _, nb in rows if i <= t < i + 1) for i in range(int(RUN_S))],
    }


def rate_between(points, t0, t1):
    """Rate of a cumulative counter sampled as (t, total) between t0 and t1."""
    inside = [(t, v) for t, v in points if t0 <= t <= t1]
    (ta, va), (tb, vb) = inside[0], inside[-1]
    return (vb - va) / (tb - ta)


# --- the workloads (as in tests/integration/test_quota_convergence.py) --------------------------

def producer_workload(bootstrap: str, topic: str, probe=None) -> dict:
    from kafka import KafkaProducer

    quota = PRODUCER_QUOTA
    p = KafkaProducer(bootstrap_servers=bootstrap, client_id="conv-p", acks=1, linger_ms=5,
                      batch_size=16_384, max_in_flight_requests_per_connection=1)
    acked = [0]
    points: list[tuple[float, int]] = []
    lock = threading.Lock()

    def on_ack(_md, n=1000):
        with lock:
            acked[0] += n

    with _THROTTLES_LOCK:
        THROTTLES.clear()
    start = time.monotonic()
    payload = b"x" * 1000
    sent = 0
    while (now := time.monotonic() - start) < RUN_S:
        with lock:
            points.append((now, acked[0]))
            backlog = sent - acked[0]
        if backlog > 2 * quota:  # keep about 2 s of records queued: busy but bounded
            time.sleep(0.02)
            continue
        for _ in range(50):
            p.send(topic, payload).add_callback(on_ack)
        sent += 50 * len(payload)
    broker_rate = probe() if probe else None  # the broker's byte-rate metric while the client still sends
    p.close(timeout=5)
    return {"rate": rate_between(points, MEASURE_FROM_S, RUN_S), "broker_byte_rate": broker_rate,
            "rate_0_12": rate_between(points, 0.0, MEASURE_FROM_S),
            "throttle": throttle_summary("Produce", start)}


def consumer_workload(bootstrap: str, topic: str, probe=None, fill_batch_size: int | None = None) -> dict:
    import confluent_kafka
    from kafka import KafkaConsumer, TopicPartition

    quota = CONSUMER_QUOTA
    fill = {"bootstrap.servers": bootstrap, "linger.ms": 20}
    if fill_batch_size is not None:
        fill["batch.size"] = fill_batch_size
    p = confluent_kafka.Producer(fill)
    fill_deadline = time.monotonic() + 120
    for _ in range(int(quota * (RUN_S + 14) / 1000)):
        while True:
            try:
                p.produce(topic, b"y" * 1000)
                break
            except BufferError:
                if time.monotonic() > fill_deadline:
                    raise RuntimeError("pre-filling the consumer topic took over 120 s")
                p.poll(0.05)
    left = p.flush(60)
    if left:
        raise RuntimeError(f"{left} records not delivered while pre-filling {topic}")
    c = KafkaConsumer(bootstrap_servers=bootstrap, client_id="conv-c", auto_offset_reset="earliest",
                      enable_auto_commit=False, max_partition_fetch_bytes=64 * 1024, fetch_max_bytes=64 * 1024)
    c.assign([TopicPartition(topic, 0)])
    got = 0
    points = []
    with _THROTTLES_LOCK:
        THROTTLES.clear()
    start = time.monotonic()
    while (now := time.monotonic() - start) < RUN_S:
        for msgs in c.poll(timeout_ms=100).values():
            got += sum(len(m.value) for m in msgs)
        points.append((now, got))
    broker_rate = probe() if probe else None
    c.close()
    return {"rate": rate_between(points, MEASURE_FROM_S, RUN_S), "broker_byte_rate": broker_rate,
            "rate_0_12": rate_between(points, 0.0, MEASURE_FROM_S),
            "throttle": throttle_summary("Fetch", start)}


WORKLOADS = {
    "producer": ("conv-p", "producer_byte_rate", PRODUCER_QUOTA, producer_workload),
    "consumer": ("conv-c", "consumer_byte_rate", CONSUMER_QUOTA, consumer_workload),
    # not in the test: the same consumer, but the topic pre-filled in 16 KiB batches instead of
    # librdkafka's default batch.size (1,000,000 B), so a 64 KiB fetch no longer returns one ~1 MB batch
    "consumer16k": ("conv-c", "consumer_byte_rate", CONSUMER_QUOTA,
                    lambda bootstrap, topic, probe=None: consumer_workload(bootstrap, topic, probe, 16_384)),
}
DEFAULT_WORKLOADS = "producer,consumer,consumer16k"


# --- mockbroker ---------------------------------------------------------------------------------

def run_mock(workloads: list[str]) -> dict:
    from mockbroker import MockBroker

    results = {}
    for name in workloads:
        client_id, key, quota, fn = WORKLOADS[name]
        with MockBroker(config={"mock.quotas": f"clients/{client_id}:{key}={quota}"}) as b:
            b.create_topic(name, 1)
            api = "Produce" if name == "producer" else "Fetch"

            def probe(b=b, api=api, client_id=client_id):
                return b.quota_metrics().get(api, {}).get(("", client_id), {}).get("byte-rate")

            results[name] = fn(b.bootstrap_servers, name, probe)
        print(f"  mockbroker {name}: {results[name]['rate']:.0f} B/s", flush=True)
    return results


# --- real Kafka (bench/brokers.py) ----------------------------------------------------------------

def run_kafka(cp: str, workloads: list[str]) -> dict:
    kafka = RealKafka(cp)
    results = {}
    quotas_set: set[str] = set()
    try:
        t0 = time.monotonic()
        kafka.start()
        print(f"  Kafka {kafka.version} ready at {kafka.bootstrap} in {time.monotonic() - t0:.1f}s", flush=True)
        for name in workloads:
            client_id, key, quota, fn = WORKLOADS[name]
            kafka.create_topic(name)
            if client_id not in quotas_set:
                print(f"  {kafka.set_quota(client_id, key, quota)}", flush=True)
                quotas_set.add(client_id)
                time.sleep(1.0)  # the quota travels through the metadata log to the broker: give it a moment
            else:
                # the previous run's byte-rate samples for this client id must leave the 11 s window
                time.sleep(12.0)
            results[name] = fn(kafka.bootstrap, name)  # Kafka's byte-rate is a JMX metric: not read here
            print(f"  Kafka {name}: {results[name]['rate']:.0f} B/s", flush=True)
    except Exception as e:
        print(f"  Kafka run failed: {e!r}\n{kafka.log_tail()}", flush=True)
        raise
    finally:
        kafka.stop()
    return results


# --- report -------------------------------------------------------------------------------------

def deviation(rate: float | None, quota: int) -> str:
    return "-" if rate is None else f"{(rate / quota - 1) * 100:+.1f}%"


def report(workloads: list[str], kafka: dict, mock: dict) -> None:
    print()
    print(f"Byte rate at the client, {MEASURE_FROM_S:.0f}-{RUN_S:.0f} s of a {RUN_S:.0f} s run "
          "(quota windows 11 x 1 s)")
    head = (f"{'workload':<10} {'quota key':<20} {'quota B/s':>9} | {'Kafka B/s':>10} {'vs quota':>8} | "
            f"{'mock B/s':>10} {'vs quota':>8} | {'mock/Kafka':>10}")
    print(head)
    print("-" * len(head))
    for name in workloads:
        _, key, quota, _ = WORKLOADS[name]
        k = kafka.get(name, {}).get("rate")
        m = mock.get(name, {}).get("rate")
        ratio = f"{m / k:.3f}" if k and m else "-"
        ks = f"{k:.0f}" if k is not None else "-"
        ms = f"{m:.0f}" if m is not None else "-"
        print(f"{name:<10} {key:<20} {quota:>9} | {ks:>10} {deviation(k, quota):>8} | "
              f"{ms:>10} {deviation(m, quota):>8} | {ratio:>10}")
    print()
    print(f"Responses kafka-python received in {MEASURE_FROM_S:.0f}-{RUN_S:.0f} s (Produce for the producer, "
          "Fetch for the consumer)")
    head = (f"{'workload':<10} {'broker':<6} {'0-12s B/s':>9} {'responses':>9} {'throttled':>9} "
            f"{'avg ms':>7} {'max ms':>6} {'thr.share':>9} {'w/ data':>7} {'thr+data':>8} {'B/data resp':>11}")
    print(head)
    print("-" * len(head))
    for name in workloads:
        for label, res in (("Kafka", kafka), ("mock", mock)):
            r = res.get(name)
            if not r:
                continue
            t = r["throttle"]
            print(f"{name:<10} {label:<6} {r['rate_0_12']:>9.0f} {t['responses']:>9} {t['throttled']:>9} "
                  f"{t['avg_ms']:>7.1f} {t['max_ms']:>6} {t['throttled_share']:>9.2f} {t['data_responses']:>7} "
                  f"{t['throttled_with_data']:>8} {t['bytes_per_data_response']:>11.0f}")
    if "consumer" in workloads:
        print()
        print("consumer: every Fetch response with records or a throttle, whole run (s: throttle ms / record bytes)")
        for label, res in (("Kafka", kafka), ("mock", mock)):
            r = res.get("consumer")
            if r:
                events = "  ".join(f"{t:.2f}:{ms}/{nb}" for t, ms, nb in r["throttle"]["timeline"])
                print(f"  {label:<5} {events}")
    shown = [n for n in workloads if n != "producer"]
    if shown:
        print()
        print("record kB the Fetch responses carried in each second 0..23 of the run (| marks 12 s)")
        for name in shown:
            for label, res in (("Kafka", kafka), ("mock", mock)):
                r = res.get(name)
                if r:
                    kb = [f"{b / 1000:.0f}" for b in r["throttle"]["per_second"]]
                    half = int(MEASURE_FROM_S)
                    print(f"  {name:<11} {label:<5} {' '.join(kb[:half])} | {' '.join(kb[half:])}")
    for name in workloads:
        b = mock.get(name, {}).get("broker_byte_rate")
        if b is not None:
            print(f"{name}: mockbroker's own byte-rate metric for {WORKLOADS[name][0]} at 24 s: {b:.0f} B/s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=("kafka", "mock"), help="run against one broker only")
    ap.add_argument("--workloads", default=DEFAULT_WORKLOADS, help=f"comma-separated, of {DEFAULT_WORKLOADS}")
    args = ap.parse_args()
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workloads {unknown}; known: {list(WORKLOADS)}")

    logging.basicConfig(level=logging.ERROR)  # kafka-python warns on every throttled response
    logging.getLogger("kafka").setLevel(logging.ERROR)
    install_throttle_recorder()

    kafka: dict = {}
    mock: dict = {}
    if args.only != "mock":
        try:
            cp = kafka_classpath()
        except Unavailable as e:
            print(f"real Kafka unavailable, nothing compared: {e}")
            return 0
        print(f"real Kafka {KAFKA_VERSION}:", flush=True)
        kafka = run_kafka(cp, workloads)
    if args.only != "kafka":
        print("mockbroker:", flush=True)
        mock = run_mock(workloads)
    report(workloads, kafka, mock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
