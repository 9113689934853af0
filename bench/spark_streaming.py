"""Spark Structured Streaming throughput: examples/spark's job against mockbroker and a real Apache
Kafka 4.4.0 broker, in one run.

The job is examples/spark/pipeline.py's ``build_query`` (Kafka source -> JSON parse -> per-user
counts and sums over 1-minute event-time windows with a 1 h watermark -> Kafka sink, append mode),
started with ``trigger(availableNow=True)``: it reads everything the input topic holds when it
starts, then stops.  ``--job copy`` runs a plain copy instead (Kafka source -> the same records to
the output topic), which writes every record rather than the window totals.

Each run: fresh input and output topics (2 partitions each, created with kafka-python's admin
client on both brokers), N records of ~100 B (``--records``, default 200,000: JSON events of 100
users over an hour of event time, padded), produced with confluent-kafka before the query starts and
ending with one event far ahead in event time so that every window closes (the job writes them in
its last micro-batch); then the query runs to its end.  Per run it prints:

* ``wall``: from ``writeStream.start()`` to the query's end, and the records/s it gives;
* ``batches``: the sum of the micro-batches' ``triggerExecution`` (Spark's progress), and the
  records/s over that (``numInputRows`` / time in batches: without the query's start and stop);
* the micro-batches, the rows read and the records in the output topic.

Runs alternate between the brokers (``--runs``, default 3, each broker once per run; the order
flips every run), after one untimed warm-up run per broker (``--warmup`` records) so that the
first timed run does not pay for the JVM's JIT.  The end shows the medians and the ratio
mockbroker/Kafka, plus Spark's and Kafka's start-up times.  No quota anywhere.

mockbroker runs in this process (``MockBroker``, as the tests use it); Kafka is a single-node KRaft
broker+controller started by bench/brokers.py (its ``RealKafka`` and
``kafka_classpath``: the jars bench/realkafka/pom.xml resolves).  Spark: local[2] with the Kafka
connector's jars from tests/integration/sparktools.py (offline, resolved by scripts/toolchains.sh).

Usage: .venv/bin/python bench/spark_streaming.py [--runs 3] [--records 200000] [--job totals|copy]
       [--only kafka|mock] [--warmup 20000]
Without java, mvn or pyspark, or when Maven cannot resolve Kafka, it says why and exits 0.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT / "examples" / "spark"))

import brokers  # bench/brokers.py: RealKafka, kafka_classpath, Unavailable

PARTITIONS = 2
USERS = 100
SPAN = timedelta(hours=1)
START = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
QUERY_TIMEOUT_S = 900


def make_values(n: int, value_bytes: int) -> list[tuple[bytes, bytes]]:
    """``n`` (key, value) input events of pipeline.py's format, padded to about ``value_bytes``
    (a ``note`` field the job ignores), in event-time order over an hour; then the flush event."""
    from pipeline import flush_event

    out = []
    step_ms = max(1, int(SPAN.total_seconds() * 1000) // max(n, 1))
    for i in range(n):
        user = f"user-{i * 7919 % USERS:03d}"
        ts = START + timedelta(milliseconds=i * step_ms)
        body = {"user": user, "amount": i % 1000, "ts": ts.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                "note": ""}
        body["note"] = "x" * max(0, value_bytes - len(json.dumps(body, separators=(",", ":"))))
        out.append((user.encode(), json.dumps(body, separators=(",", ":")).encode()))
    out.append((b"__flush__", flush_event(START + timedelta(milliseconds=(n - 1) * step_ms))))
    return out


def create_topics(bootstrap: str, names: list[str]) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000, client_id="spark-bench-admin")
    try:
        admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names], timeout_ms=10000)
        admin.wait_for_topics(names, timeout_ms=30000)
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, values: list[tuple[bytes, bytes]]) -> float:
    """Write every record (acks=all) with confluent-kafka; returns the seconds it took."""
    import confluent_kafka

    t0 = time.monotonic()
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    failed = []
    for k, v in values:
        while True:
            try:
                p.produce(topic, v, k, on_delivery=lambda err, _m: err and failed.append(err))
                break
            except BufferError:
                p.poll(0.05)
    left = p.flush(120)
    if left or failed:
        raise RuntimeError(f"{left} records not delivered, {len(failed)} failed ({failed[:3]}) to {topic}")
    return time.monotonic() - t0


def count_records(bootstrap: str, topic: str) -> int:
    """Records in ``topic`` (sum of the partitions' end offsets; nothing is ever deleted here)."""
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, client_id="spark-bench-count")
    try:
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return sum(c.end_offsets(parts).values())
    finally:
        c.close()


def start_copy(spark, bootstrap: str, in_topic: str, out_topic: str, checkpoint: str):
    """The plain copy: every input record to ``out_topic``, key and value as they are."""
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap).option("kafka.client.id", "copy-source")
            .option("subscribe", in_topic).option("startingOffsets", "earliest").load()
            .selectExpr("key", "value")
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap).option("kafka.client.id", "copy-sink")
            .option("topic", out_topic).option("checkpointLocation", checkpoint)
            .trigger(availableNow=True).start())


def one_run(spark, label: str, bootstrap: str, values, job: str, tag: str) -> dict:
    from pipeline import build_query

    in_topic, out_topic = f"in-{tag}", f"out-{tag}"
    create_topics(bootstrap, [in_topic, out_topic])
    produce_s = produce(bootstrap, in_topic, values)
    checkpoint = tempfile.mkdtemp(prefix="spark-bench-ckpt-")
    try:
        t0 = time.monotonic()
        if job == "copy":
            query = start_copy(spark, bootstrap, in_topic, out_topic, checkpoint)
        else:
            query = build_query(spark, bootstrap, in_topic, out_topic, checkpoint, trigger={"availableNow": True},
                                source_client_id=f"totals-source-{tag}", sink_client_id=f"totals-sink-{tag}")
        if not query.awaitTermination(QUERY_TIMEOUT_S):
            query.stop()
            raise RuntimeError(f"{label}: the query had not ended after {QUERY_TIMEOUT_S}s: {query.lastProgress}")
        wall = time.monotonic() - t0
        progress = query.recentProgress
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)
    rows = sum(p["numInputRows"] for p in progress)
    busy = [p for p in progress if p["numInputRows"]]
    batch_s = sum(p["durationMs"].get("triggerExecution", 0) for p in busy) / 1000
    return {"broker": label, "wall": wall, "rows": rows, "batches": len(progress), "batch_s": batch_s,
            "add_batch_s": sum(p["durationMs"].get("addBatch", 0) for p in busy) / 1000,
            "rate_wall": rows / wall, "rate_batch": rows / batch_s if batch_s else 0.0,
            "out": count_records(bootstrap, out_topic), "produce_s": produce_s}


def show(r: dict, run: str) -> None:
    print(f"  {run:<7} {r['broker']:<10} rows {r['rows']:>7}  wall {r['wall']:6.2f}s {r['rate_wall']:>8.0f} rec/s  "
          f"batches {r['batch_s']:6.2f}s {r['rate_batch']:>8.0f} rec/s  (addBatch {r['add_batch_s']:.2f}s, "
          f"{r['batches']} micro-batches, {r['out']} records out; produced in {r['produce_s']:.1f}s)", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=20_000, help="records of the untimed first run per broker (0: none)")
    ap.add_argument("--job", choices=("totals", "copy"), default="totals")
    ap.add_argument("--only", choices=("kafka", "mock"), help="run against one broker only")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("kafka").setLevel(logging.ERROR)

    import pytest

    from mockbroker import MockBroker

    try:
        from tests.integration import sparktools

        cp = None if args.only == "mock" else brokers.kafka_classpath()
        sparktools.connector_jars()
    except brokers.Unavailable as e:
        print(f"real Kafka unavailable, nothing compared: {e}")
        return 0
    except (pytest.skip.Exception, pytest.fail.Exception) as e:  # sparktools: no java, mvn or pyspark
        print(f"Spark unavailable: {e.msg}")
        return 0

    values = make_values(args.records, args.value_bytes)
    warm = make_values(args.warmup, args.value_bytes) if args.warmup else None
    size = sum(len(k) + len(v) for k, v in values) / len(values)
    print(f"job {args.job}: {args.records} records (+1 flush), {size:.0f} B key+value on average, "
          f"{PARTITIONS} partitions, {args.runs} runs per broker", flush=True)

    t0 = time.monotonic()
    spark = sparktools.spark_session("spark-streaming-bench", {"spark.ui.showConsoleProgress": "false"})
    spark_up = time.monotonic() - t0
    print(f"Spark up in {spark_up:.1f}s", flush=True)

    kafka = None
    kafka_up = None
    results: dict[str, list[dict]] = {"mock": [], "kafka": []}
    try:
        with MockBroker() as mock:
            bootstraps = {"mock": mock.bootstrap_servers}
            if args.only != "mock":
                kafka = brokers.RealKafka(cp)
                t0 = time.monotonic()
                kafka.start()
                kafka_up = time.monotonic() - t0
                print(f"Kafka {kafka.version} ready at {kafka.bootstrap} in {kafka_up:.1f}s", flush=True)
                bootstraps["kafka"] = kafka.bootstrap
            labels = {"mock": "mockbroker", "kafka": "Kafka"}
            order = [b for b in ("mock", "kafka") if args.only in (None, b)]
            if warm:
                for b in order:
                    show(one_run(spark, labels[b], bootstraps[b], warm, args.job, f"warm-{b}"), "warm-up")
            for i in range(args.runs):
                for b in (order if i % 2 == 0 else order[::-1]):
                    r = one_run(spark, labels[b], bootstraps[b], values, args.job, f"{b}-{i}")
                    results[b].append(r)
                    show(r, f"run {i + 1}")
    finally:
        if kafka is not None:
            kafka.stop()
        spark.stop()

    print()
    print(f"medians over {args.runs} runs, {args.records} records, job {args.job}")
    print(f"{'broker':<10} {'wall s':>7} {'rec/s (wall)':>12} {'batch s':>8} {'rec/s (batches)':>15}")
    med = {}
    for b, rs in results.items():
        if rs:
            med[b] = {k: statistics.median(r[k] for r in rs) for k in ("wall", "rate_wall", "batch_s", "rate_batch")}
            m = med[b]
            print(f"{('mockbroker' if b == 'mock' else 'Kafka'):<10} {m['wall']:>7.2f} {m['rate_wall']:>12.0f} "
                  f"{m['batch_s']:>8.2f} {m['rate_batch']:>15.0f}")
    if "mock" in med and "kafka" in med:
        print(f"mockbroker/Kafka: {med['mock']['rate_wall'] / med['kafka']['rate_wall']:.3f} (rec/s, wall), "
              f"{med['mock']['rate_batch'] / med['kafka']['rate_batch']:.3f} (rec/s, in batches)")
    print(f"Spark start-up {spark_up:.1f}s" + (f", Kafka start-up {kafka_up:.1f}s" if kafka_up is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
