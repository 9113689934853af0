"""The records every client integration test sends and expects back.

10,000 records with keys and headers over 3 partitions (record i goes to
partition i % 3), values of varying length so batches differ in size.
"""

from __future__ import annotations

import time

N_RECORDS = 10_000
N_PARTITIONS = 3


def record(i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    key = b"key-%05d" % i
    value = (b"value-%d|" % i) * (1 + i % 37)
    headers = [("idx", str(i).encode()), ("empty", b"")]
    return key, value, headers


def expected() -> dict[int, list[tuple[bytes, bytes, list[tuple[str, bytes]]]]]:
    out: dict[int, list] = {p: [] for p in range(N_PARTITIONS)}
    for i in range(N_RECORDS):
        out[i % N_PARTITIONS].append(record(i))
    return out


def assert_consumed(got: dict[int, list[tuple[bytes | None, bytes | None, list]]]) -> None:
    """Byte-identical keys, values and headers, in order per partition, nothing missing or extra."""
    want = expected()
    for p in range(N_PARTITIONS):
        have = [(k, v, [(hk, bytes(hv) if hv is not None else None) for hk, hv in (h or [])])
                for k, v, h in got.get(p, [])]
        assert len(have) == len(want[p]), f"partition {p}: {len(have)} records, want {len(want[p])}"
        for n, (a, b) in enumerate(zip(have, want[p])):
            assert a == b, f"partition {p} record {n}: {a[:2]!r} != {b[:2]!r}"


CODEC_IDS = {None: 0, "none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def assert_stored_codec(broker, topic: str, codec: str | None) -> None:
    """The batches the broker stored carry the codec the client was asked for (passed through untouched).

    Some clients (kafka-python, franz-go) send a batch uncompressed when compressing it would not
    make it smaller (a batch of one small record): such batches may be plain, but every partition
    must hold compressed batches of the asked codec and no other codec.
    """
    from protocol.records import parse_header

    want = CODEC_IDS[codec]
    for p in range(N_PARTITIONS):
        batches = broker.partition_records(topic, p)
        assert batches, f"partition {p} is empty"
        got = [parse_header(b).compression for b in batches]
        assert set(got) <= {want, 0}, f"partition {p}: stored codecs {set(got)}, want {want}"
        assert got.count(want) >= len(got) // 2, f"partition {p}: only {got.count(want)} of {len(got)} batches use {want}"


def consume_with_kafka_python(bootstrap: str, topic: str, deadline_s: float = 60.0) -> dict[int, list]:
    """Read every partition from the start with kafka-python (assign, no group): (key, value, headers)
    per partition, in order.  One more poll after the 10,000th record catches anything extra."""
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        c.assign([TopicPartition(topic, p) for p in range(N_PARTITIONS)])
        got: dict[int, list] = {p: [] for p in range(N_PARTITIONS)}
        n = 0
        end = time.monotonic() + deadline_s
        while n < N_RECORDS and time.monotonic() < end:
            for tp, msgs in c.poll(timeout_ms=500).items():
                for m in msgs:
                    got[tp.partition].append((m.key, m.value, [(k, bytes(v)) for k, v in m.headers]))
                    n += 1
        for tp, msgs in c.poll(timeout_ms=300).items():
            for m in msgs:
                got[tp.partition].append((m.key, m.value, [(k, bytes(v)) for k, v in m.headers]))
        return got
    finally:
        c.close()


def produce_numbered(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    """Values "0".."n-1" with kafka-python, record i to partition i % partitions, every one acknowledged
    (the group tests then check that each value was consumed)."""
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap)
    futures = [p.send(topic, str(i).encode(), partition=i % partitions) for i in range(n)]
    p.flush(30)
    p.close()
    assert all(f.succeeded() for f in futures), [f.exception for f in futures if not f.succeeded()][:3]
