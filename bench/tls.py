"""Produce and consume throughput of ``mockbroker serve`` over PLAINTEXT, SSL and SSL with client
certificates (mTLS), side by side in one run, with confluent-kafka (librdkafka).

Set-up: per run and protocol, a fresh broker subprocess (``bench/brokers.py``'s ``serve_mockbroker``)
with one listener: PLAINTEXT, SSL (``ssl.client.auth=none``) or mTLS (``required``), certificates from
``mockbroker.certs`` (EC P-256, TLS 1.3 negotiated); the client runs in this process.  The protocols
alternate within each run (``--runs``), so all see the same machine at the same time; medians and the
ratios SSL/PLAINTEXT and mTLS/PLAINTEXT are printed.

Measured per protocol: produce of ``--records`` values of ``--record-bytes`` to one partition (acks=1,
linger.ms=5, batch.size 1 MB), wall time from the first produce() to the end of flush(); then a
consumer assigned to the partition from offset 0 until it has them all.  MB/s counts value bytes (1 MB =
10^6 bytes).  Each phase is bounded by ``--time-limit`` seconds.  Not run in CI (three broker starts
per run would cost the suite seconds).

    python bench/tls.py [--records 100000] [--record-bytes 1024] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "bench"))
sys.path.insert(0, str(HERE))
from brokers import serve_mockbroker  # bench/brokers.py  # noqa: E402

from mockbroker.certs import make_certs  # noqa: E402

TOPIC = "bench-tls"
MB = 1e6
PROTOCOLS = ("PLAINTEXT", "SSL", "mTLS")


def broker_config(protocol: str, certs) -> list[str]:
    base = [f"mock.topics={TOPIC}:1"]
    if protocol == "PLAINTEXT":
        return base
    cfg = certs.broker_config("required" if protocol == "mTLS" else "none")
    cfg["listeners"] = "SSL://127.0.0.1:0"
    return base + [f"{k}={v}" for k, v in cfg.items()]


def client_config(protocol: str, bootstrap: str, certs) -> dict:
    conf = {"bootstrap.servers": bootstrap}
    if protocol != "PLAINTEXT":
        conf.update({"security.protocol": "SSL", "ssl.ca.location": certs.ca})
    if protocol == "mTLS":
        client = certs.clients["client"]
        conf.update({"ssl.certificate.location": client.cert, "ssl.key.location": client.key})
    return conf


def produce(conf: dict, records: int, size: int, limit: float) -> tuple[int, float]:
    errors: list = []
    p = Producer({**conf, "acks": 1, "linger.ms": 5, "batch.size": 1_000_000, "delivery.report.only.error": True,
                  "on_delivery": lambda err, _msg: errors.append(err)})
    value = bytes(range(256)) * (size // 256 + 1)
    sent = 0
    t0 = time.perf_counter()
    deadline = t0 + limit
    while sent < records and time.perf_counter() < deadline:
        try:
            p.produce(TOPIC, value[:size], partition=0)
            sent += 1
        except BufferError:  # local queue full: let librdkafka send
            p.poll(0.001)
    p.flush(max(deadline - time.perf_counter(), 1.0))
    elapsed = time.perf_counter() - t0
    return sent - len(errors) - len(p), elapsed


def consume(conf: dict, expected: int, limit: float) -> tuple[int, float]:
    c = Consumer({**conf, "group.id": "bench-tls", "enable.auto.commit": False, "fetch.max.bytes": 52428800})
    got = 0
    t0 = time.perf_counter()
    c.assign([TopicPartition(TOPIC, 0, 0)])
    deadline = t0 + limit
    while got < expected and time.perf_counter() < deadline:
        for m in c.consume(10000, 0.2):
            if m.error() is None:
                got += 1
    elapsed = time.perf_counter() - t0
    c.close()
    return got, elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--record-bytes", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per phase at most")
    args = ap.parse_args(argv)
    results: dict[str, dict[str, list[float]]] = {p: {"produce": [], "consume": []} for p in PROTOCOLS}
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as tmp:
        certs = make_certs(tmp, clients=("client",))
        for run in range(args.runs):
            for protocol in PROTOCOLS:
                with serve_mockbroker(broker_config(protocol, certs)) as (_proc, bootstrap):
                    conf = client_config(protocol, bootstrap, certs)
                    acked, t_p = produce(conf, args.records, args.record_bytes, args.time_limit)
                    got, t_c = consume(conf, acked, args.time_limit)
                if acked != args.records or got != acked:
                    print(f"run {run + 1} {protocol}: {acked}/{args.records} acknowledged, {got} consumed")
                    return 1
                mb = acked * args.record_bytes / MB
                results[protocol]["produce"].append(mb / t_p)
                results[protocol]["consume"].append(mb / t_c)
                print(f"run {run + 1} {protocol:9} produce {mb / t_p:8.1f} MB/s  consume {mb / t_c:8.1f} MB/s")
    print(f"\nmedians of {args.runs} run(s), {args.records} records of {args.record_bytes} B:")
    base = {phase: statistics.median(results["PLAINTEXT"][phase]) for phase in ("produce", "consume")}
    for protocol in PROTOCOLS:
        cells = []
        for phase in ("produce", "consume"):
            m = statistics.median(results[protocol][phase])
            cells.append(f"{phase} {m:8.1f} MB/s ({m / base[phase]:.2f}x PLAINTEXT)")
        print(f"  {protocol:9} " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
