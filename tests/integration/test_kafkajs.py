"""kafkajs 2.2.4 (Node) against the broker: produce 10,000 records per acks x codec, read back.

tests/integration/js/produce.js creates the topic with the kafkajs admin client and produces the
records (explicit partition i % 3, key "k-<i>", a binary value of 10..300 bytes, header h="<i>");
kafka-python then reads them back with assign() and the test compares them byte for byte (kafkajs
can only consume through a group: test_kafkajs_group.py runs its consumers).

Node dependencies live in tests/integration/js (package.json + package-lock.json); scripts/test.sh
runs ``npm ci`` there before pytest. When node_modules is missing the test runs
``npm ci --prefer-offline`` itself, and skips when node/npm are absent or that fails (jstools.py);
under CI those skips are failures (tests/toolchains.py), as is a codec whose plugin is missing.

Codecs covered: none, gzip (built into kafkajs), snappy (kafkajs-snappy, pure JS via snappyjs) and
lz4 (kafkajs-lz4). kafkajs-lz4 needs the native ``lz4`` npm package, built by node-gyp at install
time against the local Node headers (no download): it is an optionalDependency, so where that
build fails ``npm ci`` still succeeds without it and the lz4 cases skip with the reason.
zstd is not covered: the only kafkajs zstd plugin, @kafkajs/zstd 0.1.1, depends on cppzst 2.0.6,
whose binding.gyp compiles with -std=c++11 while Node 20's V8 headers need C++17, so its native
build fails (std::enable_if_t / std::string_view / std::optional errors) and ``npm ci`` would fail
with it; cppzst ships no prebuilt binary that installs from the npm registry alone.
"""

from __future__ import annotations

import json
import subprocess

import pytest

kafka = pytest.importorskip("kafka")

from protocol.records import parse_header  # noqa: E402
from tests.toolchains import unavailable  # noqa: E402

from .jstools import JS_DIR, node_with_kafkajs  # noqa: E402
from .records import assert_stored_codec, consume_with_kafka_python  # noqa: E402

PRODUCE_JS = JS_DIR / "produce.js"
N_RECORDS = 10_000
N_PARTITIONS = 3
PRODUCE_TIMEOUT_S = 120
CODECS = ["none", "gzip", "snappy", "lz4"]  # zstd: see the module docstring


# ---- the records produce.js sends (keep in step with recordValue/message in produce.js) --------

def record_value(i: int) -> bytes:
    n = 10 + (i * 7919) % 291
    return bytes((i * 31 + j * 7 + (j >> 3)) & 0xFF for j in range(n))


def expected_record(i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    return b"k-%d" % i, record_value(i), [("h", b"%d" % i)]


# ---- node / npm ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def node() -> str:
    return node_with_kafkajs()


@pytest.fixture(scope="module")
def codecs(node) -> dict:
    """{"codecs": [names produce.js can use], "unavailable": {name: why}}."""
    r = subprocess.run([node, str(PRODUCE_JS), "--codecs"], cwd=JS_DIR, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_produce(node: str, bootstrap: str, topic: str, spec: dict) -> dict:
    cmd = [node, str(PRODUCE_JS), bootstrap, topic, json.dumps(spec)]
    try:
        r = subprocess.run(cmd, cwd=JS_DIR, capture_output=True, text=True, timeout=PRODUCE_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        pytest.fail(f"produce.js {topic} {spec} timed out after {PRODUCE_TIMEOUT_S}s; stderr tail:\n{err[-3000:]}")
    lines = r.stdout.strip().splitlines()
    try:
        summary = json.loads(lines[-1]) if lines else {}
    except ValueError:
        summary = {"unparsed stdout": r.stdout[-2000:]}
    assert r.returncode == 0 and summary.get("ok"), (
        f"produce.js {topic} {spec} exited {r.returncode}\nsummary: {summary}\nstderr tail:\n{r.stderr[-3000:]}"
    )
    return summary


# ---- reading back -------------------------------------------------------------------------------

def index_of(key: bytes | None) -> int:
    assert key is not None and key.startswith(b"k-"), f"unexpected key {key!r}"
    return int(key[2:])


def assert_records(got: dict[int, list]) -> None:
    total = sum(len(v) for v in got.values())
    assert total == N_RECORDS, f"read {total} records, want {N_RECORDS} " + str({p: len(v) for p, v in got.items()})
    for p in range(N_PARTITIONS):
        idx = [index_of(k) for k, _, _ in got[p]]
        want_idx = list(range(p, N_RECORDS, N_PARTITIONS))
        if idx != want_idx:
            bad = next(n for n, (a, b) in enumerate(zip(idx + [None] * len(want_idx), want_idx)) if a != b)
            pytest.fail(f"partition {p}: record #{bad} is i={idx[bad] if bad < len(idx) else None}, want i={want_idx[bad]}"
                        f" (records must be exactly the i with i % 3 == {p}, in increasing order)")
        for n, (i, have) in enumerate(zip(idx, got[p])):
            want = expected_record(i)
            assert have[0] == want[0], f"partition {p} record #{n} (i={i}): key {have[0]!r} != {want[0]!r}"
            if have[1] != want[1]:
                v = have[1] or b""
                at = next((j for j, (a, b) in enumerate(zip(v, want[1])) if a != b), min(len(v), len(want[1])))
                pytest.fail(f"partition {p} record #{n} (i={i}): value differs at byte {at} "
                            f"({len(v)} bytes, want {len(want[1])}): {v[at:at + 8]!r} != {want[1][at:at + 8]!r}")
            assert have[2] == want[2], f"partition {p} record #{n} (i={i}): headers {have[2]!r} != {want[2]!r}"


def assert_log_end_offsets(broker, topic: str) -> None:
    want = [len(range(p, N_RECORDS, N_PARTITIONS)) for p in range(N_PARTITIONS)]
    have = [broker.log_end_offset(topic, p) for p in range(N_PARTITIONS)]
    assert have == want, f"log end offsets {have}, want {want}"


def stored_headers(broker, topic: str, p: int):
    return [parse_header(b) for b in broker.partition_records(topic, p)]


# ---- tests --------------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("acks", [0, 1, -1], ids=lambda a: f"acks{a}")
def test_kafkajs_produce_roundtrip(broker, node, codecs, acks, codec):
    if codec not in codecs["codecs"]:
        unavailable(f"kafkajs {codec} codec not installed (an optional npm dependency whose native build may "
                    f"have failed): {codecs['unavailable'].get(codec, '?')}")
    topic = f"kjs-{codec}-acks{acks}"
    summary = run_produce(node, broker.bootstrap_servers, topic, {"acks": acks, "compression": codec})
    assert summary["created"] is True and summary["startOffsets"] == [0] * N_PARTITIONS, summary
    assert_records(consume_with_kafka_python(broker.bootstrap_servers, topic))
    assert_log_end_offsets(broker, topic)
    assert_stored_codec(broker, topic, codec)
    for p in range(N_PARTITIONS):
        assert {h.producer_id for h in stored_headers(broker, topic, p)} == {-1}


def test_kafkajs_idempotent_producer(broker, node, codecs):
    topic = "kjs-idempotent"
    summary = run_produce(node, broker.bootstrap_servers, topic,
                          {"acks": -1, "idempotent": True, "compression": "none"})
    assert summary["idempotent"] is True
    assert_records(consume_with_kafka_python(broker.bootstrap_servers, topic))
    assert_log_end_offsets(broker, topic)
    # One producer id for the run; per partition the batches' sequences run on from 0 without gaps.
    pids = set()
    for p in range(N_PARTITIONS):
        seq = 0
        for h in stored_headers(broker, topic, p):
            pids.add((h.producer_id, h.producer_epoch))
            assert h.base_sequence == seq, f"partition {p}: batch at {h.base_offset} has sequence {h.base_sequence}, want {seq}"
            seq += h.records_count
    assert len(pids) == 1 and next(iter(pids))[0] >= 0, pids
