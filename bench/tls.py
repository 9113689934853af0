"""Produce and consume throughput of ``mockbroker serve`` over PLAINTEXT, SSL and SSL with client
certificates (mTLS), side by side in one run, with confluent-kafka (librdkafka); with ``--kafka``,
of a Kafka 4.4.0 over the same three too.

Set-up: per run and protocol, a fresh broker subprocess (``bench/brokers.py``'s ``serve_mockbroker``)
with one listener: PLAINTEXT, SSL (``ssl.client.auth=none``) or mTLS (``required``), certificates from
``mockbroker.security.certs`` (EC P-256, TLS 1.3 negotiated); the client runs in this process.  The protocols
alternate within each run (``--runs``), so all see the same machine at the same time; medians and the
ratios SSL/PLAINTEXT and mTLS/PLAINTEXT are printed.  ``--kafka``: one single-node Kafka 4.4.0
(``brokers.RealKafka``, -Xmx512m) for the whole bench with three listeners -- PLAINTEXT, SSL and MTLS
(SSL with ``ssl.client.auth=required``), the same PEM certificates -- and a fresh topic per run and
protocol; its rows come after mockbroker's in each run, with the ratio mockbroker/Kafka per protocol.

Measured per protocol: produce of ``--records`` values of ``--record-bytes`` to one partition (acks=1,
linger.ms=5, batch.size 1 MB), wall time from the first produce() to the end of flush(); then a
consumer assigned to the partition from offset 0 until it has them all.  MB/s counts value bytes (1 MB =
10^6 bytes).  Each phase is bounded by ``--time-limit`` seconds.  Not run in CI (three broker starts
per run would cost the suite seconds).

    python bench/tls.py [--records 100000] [--record-bytes 1024] [--runs 3] [--kafka]
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
import brokers  # bench/brokers.py: serve_mockbroker, RealKafka  # noqa: E402

from mockbroker.security.certs import make_certs  # noqa: E402

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


def produce(conf: dict, records: int, size: int, limit: float, topic: str = TOPIC) -> tuple[int, float]:
    errors: list = []
    p = Producer({**conf, "acks": 1, "linger.ms": 5, "batch.size": 1_000_000, "delivery.report.only.error": True,
                  "on_delivery": lambda err, _msg: errors.append(err)})
    value = bytes(range(256)) * (size // 256 + 1)
    sent = 0
    t0 = time.perf_counter()
    deadline = t0 + limit
    while sent < records and time.perf_counter() < deadline:
        try:
            p.produce(topic, value[:size], partition=0)
            sent += 1
        except BufferError:  # local queue full: let librdkafka send
            p.poll(0.001)
    p.flush(max(deadline - time.perf_counter(), 1.0))
    elapsed = time.perf_counter() - t0
    return sent - len(errors) - len(p), elapsed


def consume(conf: dict, expected: int, limit: float, topic: str = TOPIC) -> tuple[int, float]:
    c = Consumer({**conf, "group.id": "bench-tls", "enable.auto.commit": False, "fetch.max.bytes": 52428800})
    got = 0
    t0 = time.perf_counter()
    c.assign([TopicPartition(topic, 0, 0)])
    deadline = t0 + limit
    while got < expected and time.perf_counter() < deadline:
        for m in c.consume(10000, 0.2):
            if m.error() is None:
                got += 1
    elapsed = time.perf_counter() - t0
    c.close()
    return got, elapsed


def start_kafka(certs) -> tuple[brokers.RealKafka, dict[str, str]]:
    """One Kafka 4.4.0 with PLAINTEXT, SSL and MTLS listeners: it and each protocol's bootstrap."""
    kafka = brokers.RealKafka(brokers.kafka_classpath())
    node = kafka.nodes[0]
    ssl_port, mtls_port = brokers.free_port(), brokers.free_port()
    tls = certs.broker_config("none")
    kafka.extra_props.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port},SSL://127.0.0.1:{ssl_port},MTLS://127.0.0.1:{mtls_port},"
                     f"CONTROLLER://127.0.0.1:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},SSL://127.0.0.1:{ssl_port},"
                                f"MTLS://127.0.0.1:{mtls_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,CONTROLLER:PLAINTEXT",
        **{k: v for k, v in tls.items() if k.startswith("ssl.")},
        "listener.name.mtls.ssl.client.auth": "required"})
    try:
        kafka.start()
    except BaseException:
        kafka.stop()
        raise
    return kafka, {"PLAINTEXT": f"127.0.0.1:{node.port}", "SSL": f"127.0.0.1:{ssl_port}",
                   "mTLS": f"127.0.0.1:{mtls_port}"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--record-bytes", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per phase at most")
    ap.add_argument("--kafka", action="store_true", help=f"a Kafka {brokers.KAFKA_VERSION} over the same protocols too")
    args = ap.parse_args(argv)
    brokers_run = ["mockbroker", "Kafka"] if args.kafka else ["mockbroker"]
    results: dict[tuple[str, str], dict[str, list[float]]] = {
        (b, p): {"produce": [], "consume": []} for b in brokers_run for p in PROTOCOLS}
    kafka = None
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as tmp:
        certs = make_certs(tmp, clients=("client",))
        try:
            if args.kafka:
                try:
                    kafka, kafka_bootstrap = start_kafka(certs)
                except brokers.Unavailable as e:
                    print(f"Kafka {brokers.KAFKA_VERSION} unavailable: {e}")
                    return 1
            for run in range(args.runs):
                for broker, protocol in results:
                    if broker == "Kafka":
                        assert kafka is not None
                        topic = f"{TOPIC}-{run}-{protocol}"
                        kafka.create_topic(topic)
                        conf = client_config(protocol, kafka_bootstrap[protocol], certs)
                        acked, t_p = produce(conf, args.records, args.record_bytes, args.time_limit, topic)
                        got, t_c = consume(conf, acked, args.time_limit, topic)
                    else:
                        with brokers.serve_mockbroker(broker_config(protocol, certs)) as (_proc, bootstrap):
                            conf = client_config(protocol, bootstrap, certs)
                            acked, t_p = produce(conf, args.records, args.record_bytes, args.time_limit)
                            got, t_c = consume(conf, acked, args.time_limit)
                    if acked != args.records or got != acked:
                        print(f"run {run + 1} {broker} {protocol}: {acked}/{args.records} acknowledged, {got} consumed")
                        return 1
                    mb = acked * args.record_bytes / MB
                    results[broker, protocol]["produce"].append(mb / t_p)
                    results[broker, protocol]["consume"].append(mb / t_c)
                    print(f"run {run + 1} {broker:10} {protocol:9} produce {mb / t_p:8.1f} MB/s  "
                          f"consume {mb / t_c:8.1f} MB/s", flush=True)
        finally:
            if kafka is not None:
                kafka.stop()
    print(f"\nmedians of {args.runs} run(s), {args.records} records of {args.record_bytes} B:")
    medians = {key: {phase: statistics.median(v[phase]) for phase in v} for key, v in results.items()}
    for broker, protocol in results:
        cells = []
        for phase in ("produce", "consume"):
            m = medians[broker, protocol][phase]
            cell = f"{phase} {m:8.1f} MB/s ({m / medians[broker, 'PLAINTEXT'][phase]:.2f}x PLAINTEXT"
            if broker == "mockbroker" and args.kafka:
                cell += f", {m / medians['Kafka', protocol][phase]:.2f}x Kafka"
            cells.append(cell + ")")
        print(f"  {broker:10} {protocol:9} " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
