"""kio codec cost on the two big-payload paths of the broker.

Measured (one thread, in process, no sockets):

* Produce request decode, v9 (topics by name) and v13 (topics by id), with 1
  and 10 partitions each carrying one record batch of ~16 KiB or ~1 MiB: what
  ``KafkaApis._handle`` does with a frame payload, i.e.
  ``parse_request_header`` + ``decode_request``.
* Fetch response encode, v12 (by name) and v18 (by id), with 1 and 10
  partitions of one ~1 MiB batch: what ``KafkaApis._finish`` does with the
  handler's dict tree, i.e. ``build_response`` + ``encode_response``.  The
  build-only share is shown too.

Baseline, measured in the same run for every case: a plain ``bytes`` copy of
a buffer of the same size as the frame (malloc + memcpy, the floor for any
codec that returns a new buffer).  ``ratio`` is candidate / baseline time.

Every figure is the median over REPEATS repeats of a loop calibrated to last
about TARGET_S seconds (time.perf_counter).  Runs in about a minute.
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.codec import (  # noqa: E402
    build_request,
    build_response,
    decode_request,
    encode_request,
    encode_response,
    parse_request_header,
)
from protocol.errors import ErrorCode  # noqa: E402
from protocol.records import build_batch  # noqa: E402
from protocol.registry import ApiKey, any_spec  # noqa: E402

TARGET_S = 0.2
REPEATS = 7
KIB = 1024
MIB = 1024 * KIB
TOPIC = "bench"
TOPIC_ID = uuid.UUID(int=0x1234)


def per_op_seconds(fn: Callable[[], Any]) -> float:
    """Median seconds per call of ``fn`` over REPEATS loops of ~TARGET_S each."""
    n = 1
    while True:  # calibrate the loop count
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed >= TARGET_S / 10:
            break
        n *= 4
    n = max(1, round(n * TARGET_S / elapsed))
    samples = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples)


def memcpy_seconds(size: int) -> float:
    """Baseline: a fresh ``bytes`` copy of a ``size``-byte buffer."""
    src = bytearray(size)
    return per_op_seconds(lambda: bytes(src))


def record_batch(size: int) -> bytes:
    """An uncompressed v2 batch of 1 KiB-value records, about ``size`` bytes long."""
    value = b"v" * 1000
    return build_batch([(b"key-%06d" % i, value, []) for i in range(size // KIB)])


def produce_frame(version: int, partitions: int, batch: bytes) -> bytes:
    """A Produce request payload as the broker receives it (frame minus size prefix)."""
    by_id = version >= 13
    topic = {"topic_id": TOPIC_ID} if by_id else {"name": TOPIC}
    topic["partition_data"] = [{"index": i, "records": batch} for i in range(partitions)]
    body = build_request(ApiKey.PRODUCE, version, {
        "transactional_id": None, "acks": 1, "timeout": 30_000, "topic_data": [topic],
    })
    spec = any_spec(ApiKey.PRODUCE)
    return encode_request(ApiKey.PRODUCE, version, 1, "bench", body, spec)[4:]


def fetch_tree(partitions: int, batch: bytes) -> dict:
    """The dict tree p01_fetch.handle returns for a read_uncommitted full fetch."""
    parts = [
        {
            "partition_index": i,
            "error_code": ErrorCode.none,
            "high_watermark": 1000,
            "last_stable_offset": 1000,
            "log_start_offset": 0,
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": batch,
        }
        for i in range(partitions)
    ]
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "session_id": 0,
        "responses": [{"topic": TOPIC, "topic_id": TOPIC_ID, "partitions": parts}],
        "node_endpoints": [],
    }


def produce_case(version: int, partitions: int, batch: bytes) -> tuple[int, Callable[[], Any]]:
    payload = produce_frame(version, partitions, batch)
    header_version = any_spec(ApiKey.PRODUCE).request_header_version(version)

    def decode() -> Any:  # KafkaApis._handle: header, then body
        header = parse_request_header(payload, header_version)
        return decode_request(ApiKey.PRODUCE, version, payload, header.size_bytes)

    return len(payload), decode


def fetch_cases(version: int, partitions: int, batch: bytes) -> tuple[int, Callable[[], Any], Callable[[], Any]]:
    spec = any_spec(ApiKey.FETCH)
    tree = fetch_tree(partitions, batch)
    frame_size = len(encode_response(spec, version, 1, build_response(ApiKey.FETCH, version, tree))) - 4

    def build_and_encode() -> bytes:  # KafkaApis._finish
        return encode_response(spec, version, 1, build_response(ApiKey.FETCH, version, tree))

    def build_only() -> Any:
        return build_response(ApiKey.FETCH, version, tree)

    return frame_size, build_and_encode, build_only


def row(name: str, size: int, fn: Callable[[], Any]) -> tuple[str, int, float, float]:
    return name, size, per_op_seconds(fn), memcpy_seconds(size)


def main() -> None:
    batches = {"16KiB": record_batch(16 * KIB), "1MiB": record_batch(MIB)}
    rows = []
    for version in (9, 13):
        for partitions in (1, 10):
            for label, batch in batches.items():
                size, fn = produce_case(version, partitions, batch)
                rows.append(row(f"Produce v{version} decode {partitions}p x {label}", size, fn))
    for version in (12, 18):
        for partitions in (1, 10):
            size, full, build = fetch_cases(version, partitions, batches["1MiB"])
            rows.append(row(f"Fetch v{version} build+encode {partitions}p x 1MiB", size, full))
            rows.append(row(f"Fetch v{version}   build only {partitions}p x 1MiB", size, build))

    print(f"kio {dist_version('kio')}, Python {sys.version.split()[0]}; median of {REPEATS} x ~{TARGET_S}s loops")
    print("baseline = bytes copy of a buffer of the frame's size; ratio = candidate / baseline")
    head = f"{'case':<36} {'bytes':>10} {'us/op':>10} {'MB/s':>9} {'memcpy us':>10} {'memcpy MB/s':>12} {'ratio':>7}"
    print(head)
    print("-" * len(head))
    for name, size, t, base in rows:
        print(
            f"{name:<36} {size:>10,} {t * 1e6:>10.1f} {size / t / 1e6:>9.0f} "
            f"{base * 1e6:>10.1f} {size / base / 1e6:>12.0f} {t / base:>7.2f}"
        )


if __name__ == "__main__":
    main()
