"""Peak RSS growth of a broker process under 50 producers of 1 MiB requests, with the KIP-72
request memory pool (queued.max.request.bytes = 10 MiB) against the same run without it.

Set-up: each run starts a fresh broker process (a MockBroker in a child Python, so the RSS is
the broker's alone; socket.request.max.bytes = 2 MiB, message.max.bytes = 2 MiB, a 5-partition
topic whose partitions are all led by broker 0).  This process runs 50 confluent-kafka producers
(linger.ms=100, batch.size ~1 MiB, no compression).  Each producer first sends one small record
and waits for it (connections and metadata ready), then the burst: every producer queues
REQUESTS x 8 records of 128 KiB at once, so each sends REQUESTS Produce requests of ~1 MiB, and
all 50 flush.

Measured: the broker process's RSS (psutil) sampled every 2 ms from a thread; growth = the peak
during the burst minus the RSS just before it.  Time = from the first burst ``produce()`` to the
last ``flush()`` returning; every record must be acknowledged.

Two runs, each with queued.max.request.bytes = 10 MiB and without a pool:

* "acks=1, log kept": the run of tests/integration/test_memory_pool_producers.py.  Each request
  is answered as soon as it is read, and the in-memory log keeps every record (REQUESTS x 50 MiB
  in both runs' growth).
* "acks=all, 200 ms": three brokers, acks=all, followers 200 ms behind, so every request is held
  200 ms in the purgatory with its buffer; 1 MiB segments and log.retention.bytes = 1 MiB per
  partition checked every 50 ms, so little of the log stays.  This is where the pool matters:
  without it the broker reads every request into memory and holds it; with it, requests beyond
  the pool wait in the senders' sockets.

Each configuration runs RUNS times, alternating pool / no pool; the medians are printed with the
ratio pool / no pool.  Not part of the tests.

    .venv/bin/python bench/memory_pool.py [--runs 3] [--requests 2]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import threading
import time
from pathlib import Path

import psutil
from confluent_kafka import Producer

VENV_BIN = Path(__file__).resolve().parent.parent / ".venv" / "bin"
MiB = 1 << 20
POOL = 10 * MiB
PRODUCERS = 50
RECORDS_PER_REQUEST = 8
VALUE = MiB // RECORDS_PER_REQUEST
PARTITIONS = 5
TOPIC = "bench-pool"
TIME_LIMIT_S = 120.0

BASE = {"socket.request.max.bytes": 2 * MiB, "message.max.bytes": 2 * MiB}
# the run of tests/integration/test_memory_pool_producers.py: answered at once, the log kept
ACKS1 = ("acks=1, log kept", 1, {})
# requests held: acks=all waits 200 ms for two followers; little of the log kept
HELD = ("acks=all, 200 ms", -1, {"mock.num.brokers": 3, "mock.replication.lag.ms": 200,
                                   "log.segment.bytes": MiB, "log.retention.bytes": MiB,
                                   "log.retention.check.interval.ms": 50})


class RssSampler(threading.Thread):
    def __init__(self, proc: psutil.Process, interval_s: float = 0.002) -> None:
        super().__init__(daemon=True)
        self.proc, self.interval_s = proc, interval_s
        self.stop = threading.Event()
        self.peak = 0

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(self.interval_s)


BROKER_CHILD = """
import sys, json
from mockbroker import MockBroker
cfg, topic, partitions = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
with MockBroker(config=cfg) as b:
    n = cfg.get("mock.num.brokers", 1)
    # every partition led by broker 0 (the one whose pool is measured), replicated to all
    b.call(lambda br: br.create_topic(topic, partitions, n, None, {p: list(range(n)) for p in range(partitions)}))
    print("ready", b.bootstrap_servers, flush=True)
    sys.stdin.read()
"""


def start_broker(cfg: dict) -> tuple[subprocess.Popen, str]:
    """A broker process of its own (MockBroker in a child Python), so its RSS is its own."""
    p = subprocess.Popen([str(VENV_BIN / "python"), "-c", BROKER_CHILD, json.dumps(cfg), TOPIC, str(PARTITIONS)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline().split()
    if not line or line[0] != "ready":
        p.kill()
        raise RuntimeError(f"broker did not start: {line!r}")
    return p, line[1]


def one_run(cfg: dict, acks: int, requests: int) -> tuple[int, float]:
    """(peak RSS growth in bytes, seconds to acknowledge the burst)."""
    proc, bootstrap = start_broker(cfg)
    try:
        errors: list[str] = []
        acked = [0]

        def on_delivery(err, _msg):  # noqa: ANN001
            if err is not None:
                errors.append(str(err))
            else:
                acked[0] += 1

        producers = [Producer({"bootstrap.servers": bootstrap, "client.id": f"bench-{i}", "acks": acks,
                               "linger.ms": 100, "batch.size": 1_100_000, "message.max.bytes": 1_200_000,
                               "compression.type": "none", "request.timeout.ms": 60_000})
                     for i in range(PRODUCERS)]
        for i, p in enumerate(producers):
            p.produce(TOPIC, b"warm-up", partition=i % PARTITIONS, on_delivery=on_delivery)
        for p in producers:
            p.flush(30)
        values = [bytes([65 + i % 26]) * VALUE for i in range(PRODUCERS)]
        time.sleep(0.5)  # let the broker settle before the baseline
        ps = psutil.Process(proc.pid)
        baseline = ps.memory_info().rss
        sampler = RssSampler(ps)
        sampler.start()
        t0 = time.perf_counter()
        for i, p in enumerate(producers):
            for _ in range(requests * RECORDS_PER_REQUEST):
                p.produce(TOPIC, values[i], partition=i % PARTITIONS, on_delivery=on_delivery)
        deadline = t0 + TIME_LIMIT_S
        for p in producers:
            left = p.flush(max(deadline - time.perf_counter(), 1.0))
            if left:
                raise RuntimeError(f"{left} records not acknowledged")
        elapsed = time.perf_counter() - t0
        time.sleep(0.05)
        sampler.stop.set()
        sampler.join()
        if errors:
            raise RuntimeError(f"{len(errors)} delivery errors, first: {errors[0]}")
        want = PRODUCERS * (1 + requests * RECORDS_PER_REQUEST)
        if acked[0] != want:
            raise RuntimeError(f"{acked[0]} of {want} records acknowledged")
        del producers, p  # librdkafka instances go before their broker does
        gc.collect()
        return sampler.peak - baseline, elapsed
    finally:
        proc.stdin.close()
        proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--requests", type=int, default=2, help="~1 MiB requests per producer")
    a = ap.parse_args()
    total = PRODUCERS * a.requests
    print(f"{PRODUCERS} producers x {a.requests} requests of {RECORDS_PER_REQUEST} x {VALUE} B "
          f"({total} MiB per run); pool {POOL // MiB} MiB, socket.request.max.bytes 2 MiB; "
          f"{a.runs} runs each, medians\n")
    print(f"{'run':<18} {'pool':>7} {'peak RSS growth':>16} {'time':>8}   runs (MiB)")
    for name, acks, extra in (ACKS1, HELD):
        results: dict[str, list[tuple[int, float]]] = {"10 MiB": [], "none": []}
        for _ in range(a.runs):  # alternate, so drift hits both alike
            for pool_name, pool_cfg in (("10 MiB", {"queued.max.request.bytes": POOL}), ("none", {})):
                results[pool_name].append(one_run({**BASE, **extra, **pool_cfg}, acks, a.requests))
        med = {}
        for pool_name, rs in results.items():
            growth = statistics.median(r[0] for r in rs)
            secs = statistics.median(r[1] for r in rs)
            med[pool_name] = (growth, secs)
            runs = ", ".join(f"{r[0] / MiB:.0f}" for r in rs)
            print(f"{name:<18} {pool_name:>7} {growth / MiB:>12.1f} MiB {secs:>7.2f}s   {runs}")
        g_pool, t_pool = med["10 MiB"]
        g_none, t_none = med["none"]
        print(f"{name:<18} {'ratio':>7} {g_pool / g_none:>16.2f} {t_pool / t_none:>8.2f}   (pool / no pool)\n")


if __name__ == "__main__":
    main()
