"""Fuzzing the request path over a real socket: every API key and version kio has a schema for.

For each API the broker serves, hypothesis draws a version and a request body that is one of

* a structurally valid request with arbitrary field values (kio's types give hypothesis the
  strategies: any int, any string, nulls, empty and long arrays),
* such a request mutated (bit flips, truncation, insertions, deletions, int32s overwritten with
  0 / -1 / 2^31-1 / -2^31),
* random bytes,

frames it after a valid request header and sends it, with an ApiVersions request pipelined
behind it, on a fresh connection to a broker with a request memory pool.  Each exchange must
end in an answer (the ApiVersions response arrives) or a clean close, or wait in a purgatory
(a long-poll Fetch on the test's ManualClock).  Nothing may log an error or a traceback: no
"unexpected error handling a request" from the dispatcher's catch-all, nothing from asyncio's
exception handler.  Every version the broker does not serve, and every unknown API key, must
close the connection (ApiVersions answers v0 UNSUPPORTED_VERSION instead).  At the end the pool
has every byte back and the broker still answers.

The run size (examples, and how each exchange ended) is printed at the end of the module.
``HYPOTHESIS_PROFILE=exhaustive`` runs 100x more examples.  With atheris installed, a
coverage-guided run of the same exchange runs in a subprocess (``fuzz_atheris.py``).

Some APIs change state that later examples would trip over (CreateTopics and CreatePartitions could
create thousands of partitions per example, AlterClientQuotas could throttle every later client for
ever on the ManualClock, AlterConfigs and IncrementalAlterConfigs could set broker configs such as
max.connections): every body of theirs that parses (valid, mutated or random) is sent with
``validate_only`` set (``harmless``); one that does not parse is sent as it is (the broker refuses it
with the same decoder).

The APIs and versions fuzzed are the registry's (every API with a handler module, at every version the
default release serves with the telemetry APIs on: a superset of every other release's);
``test_the_fuzz_corpus_covers_every_served_key_and_version`` fails when one of them is missing from the hypothesis runs, the sweep or the atheris
seed corpus, and the sweep sends each served version a few fixed bad bodies, so that no version is left
to hypothesis' sampling.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import logging
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import kio.static.primitive as kio_primitive
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockbroker import ManualClock, MockBroker
from mockbroker.apis import build_handlers
from protocol.codec import (
    InvalidRequest,
    _writer,
    build_request,
    decode_request,
    encode_request,
    request_class,
)
from protocol.records import build_batch
from protocol.registry import (
    DEFAULT_KAFKA_RELEASE,
    KAFKA_RELEASES,
    ApiRegistry,
    any_spec,
    api_key_map,
    schema_versions,
)
from tests.kio_strategies import register_kio_strategies

SERVED = {s.key: s for s in ApiRegistry(DEFAULT_KAFKA_RELEASE, set(build_handlers()), client_telemetry=True)}
#: what an input's first two bytes pick from (the atheris harness and its seed corpus): (key, min, max)
FUZZ_TARGETS = sorted((s.key, s.min_version, s.max_version) for s in SERVED.values())
VALIDATE_ONLY = {19, 33, 37, 44, 49}  # CreateTopics, AlterConfigs, CreatePartitions, IncrementalAlterConfigs,
#                                       AlterClientQuotas: see the module docstring
PROBE_CORR = 0x7FFF0000      # correlation id of the pipelined ApiVersions request
WAIT_S = 0.3                 # an exchange neither answered nor closed by then is parked in a purgatory
# KIP-714's APIs served too (as a broker with a telemetry reporter), so that they are fuzzed like the others
CFG = {"queued.max.request.bytes": 4 << 20, "socket.request.max.bytes": 1 << 20, "num.partitions": 1,
       "mock.client.telemetry.enabled": True}


register_kio_strategies()

# Produce's records field: nothing, random bytes, or a real batch (after the hooks: Records' is a no-op)
st.register_type_strategy(kio_primitive.Records, st.one_of(
    st.binary(max_size=64),
    st.builds(lambda v, n: kio_primitive.Records(build_batch([(b"k", v, [])] * n, base_timestamp=1)),
              st.binary(max_size=32), st.integers(1, 3)),
))

RUNS: collections.Counter[str] = collections.Counter()
PER_API: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)


def header(key: int, version: int, corr: int = 1, client_id: str | None = "fuzz") -> bytes:
    """A valid request header (v1, or v2 with empty tagged fields for flexible versions)."""
    spec = any_spec(key)
    hv = spec.request_header_version(version) if spec is not None else 1
    cid = b"\xff\xff" if client_id is None else struct.pack(">h", len(client_id)) + client_id.encode()
    return struct.pack(">hhi", key, version, corr) + cid + (b"\x00" if hv == 2 else b"")


PROBE = encode_request(18, 3, PROBE_CORR, "fuzz-probe",
                       build_request(18, 3, {"client_software_name": "fuzz", "client_software_version": "1"}),
                       any_spec(18))


def encode_body(key: int, version: int, entity) -> bytes:  # noqa: ANN001 - a kio entity
    import io

    buf = io.BytesIO()
    _writer(request_class(key, version))(buf, entity)
    return buf.getvalue()


_INT32S = [0, -1, 1, 0x7FFFFFFF, -0x80000000, 0xFFFF]


@st.composite
def mutated(draw, base: bytes) -> bytes:  # noqa: ANN001
    b = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "int32", "delete"]))
        pos = draw(st.integers(0, len(b))) if b else 0
        if op == "flip" and pos < len(b):
            b[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del b[pos:]
        elif op == "insert":
            b[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "int32" and pos + 4 <= len(b):
            b[pos : pos + 4] = struct.pack(">i", draw(st.sampled_from(_INT32S)))
        elif op == "delete":
            del b[pos : pos + draw(st.integers(1, 8))]
    return bytes(b)


def harmless(key: int, version: int, body: bytes) -> bytes:
    """``body`` as sent: for the VALIDATE_ONLY APIs, a body that parses is re-encoded with validate_only
    set; one that does not parse goes as it is (the broker's decoder is this one: it refuses it too)."""
    if key not in VALIDATE_ONLY or "validate_only" not in request_class(key, version).__dataclass_fields__:
        return body
    try:
        entity = decode_request(key, version, body, 0)
    except InvalidRequest:
        return body
    return encode_body(key, version, dataclasses.replace(entity, validate_only=True))


def target_of(data: bytes) -> tuple[int, int, bytes] | None:
    """An atheris input as (key, version, body): its first byte picks the API, its second the version."""
    if len(data) < 2:
        return None
    key, lo, hi = FUZZ_TARGETS[data[0] % len(FUZZ_TARGETS)]
    return key, lo + data[1] % (hi - lo + 1), data[2:]


def bodies(key: int, version: int) -> st.SearchStrategy[tuple[str, bytes]]:
    valid = st.from_type(request_class(key, version)).map(lambda e: encode_body(key, version, e))
    kinds = [valid.map(lambda b: ("valid", b)), st.binary(max_size=200).map(lambda b: ("random", b)),
             valid.flatmap(mutated).map(lambda b: ("mutated", b))]
    return st.one_of(kinds).map(lambda kb: (kb[0], harmless(key, version, kb[1])))


def exchange(addr: tuple[str, int], frame: bytes, wait_s: float = WAIT_S) -> str:
    """Send ``frame`` then the probe on a fresh connection: 'answered', 'closed' or 'held' (neither
    within ``wait_s``)."""
    s = socket.create_connection(addr, timeout=wait_s)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        try:
            s.sendall(frame + PROBE)
        except OSError:
            return "closed"
        buf = b""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                s.settimeout(max(deadline - time.monotonic(), 0.001))
                chunk = s.recv(1 << 16)
            except TimeoutError:
                return "held"
            except (ConnectionResetError, BrokenPipeError):
                return "closed"
            if not chunk:
                return "closed"
            buf += chunk
            while len(buf) >= 8:
                (size,) = struct.unpack_from(">i", buf)
                if len(buf) < 4 + size:
                    break
                (corr,) = struct.unpack_from(">i", buf, 4)
                if corr == PROBE_CORR:
                    return "answered"
                buf = buf[4 + size:]
    finally:
        s.close()


def broker_errors(caplog: pytest.LogCaptureFixture, start: int = 0) -> list[str]:
    """Error lines or tracebacks from the broker or asyncio (from record ``start`` on): an
    exception escaped a handler or a protocol callback."""
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records[start:]
            if r.name.startswith(("mockbroker", "asyncio")) and (r.levelno >= logging.ERROR or r.exc_info)]


@pytest.fixture(scope="module")
def broker(request):
    with MockBroker(config=CFG, clock=ManualClock()) as b:
        b.create_topic("fuzz", 1)
        yield b
        # nothing held once every fuzz connection is gone and every request parked on the ManualClock
        # (a JoinGroup in its rebalance, a long-poll Fetch) has timed out: mockbroker holds a request's
        # pool buffer until it is answered (docs/differences.md, "Memory pool")
        deadline = time.monotonic() + 5
        while b.memory_pool_metrics()["MemoryPoolUsed"] and time.monotonic() < deadline:
            b.advance(0x7FFFFFFF)  # the longest timeout an int32 field can ask for
            time.sleep(0.05)
        m = b.memory_pool_metrics()
        assert (m["MemoryPoolUsed"], m["memory_muted"]) == (0, 0), m
    report_run_size(request.config)


def report_run_size(config: pytest.Config) -> None:
    """Print the run size past pytest's capture (it is part of the result, even with -q)."""
    if not RUNS:
        return
    lines = [f"fuzz run size: {sum(RUNS.values())} exchanges over a real socket "
             f"({', '.join(f'{k} {v}' for k, v in sorted(RUNS.items()))})"]
    lines += [f"  {name}: {sum(c.values())} ({', '.join(f'{k} {v}' for k, v in sorted(c.items()))})"
              for name, c in sorted(PER_API.items())]
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is None:
        print("\n" + "\n".join(lines))
        return
    with capture.global_and_fixture_disabled():
        print("\n" + "\n".join(lines), flush=True)


def addr_of(b: MockBroker) -> tuple[str, int]:
    host, _, port = b.bootstrap_servers.split(",")[0].rpartition(":")
    return host, int(port)


@pytest.mark.parametrize("key", sorted(SERVED), ids=lambda k: f"{k}-{SERVED[k].name}")
def test_fuzzed_requests_are_answered_or_closed_cleanly(broker, caplog, key):
    caplog.set_level(logging.INFO)
    spec = SERVED[key]
    addr = addr_of(broker)
    versions = list(range(spec.min_version, spec.max_version + 1))
    counts = PER_API[f"{key:>2} {spec.name}"]

    @settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large],
              max_examples=settings().max_examples * (2 if key in (0, 1, 3) else 1))
    @given(data=st.data())
    def run(data):  # noqa: ANN001
        version = data.draw(st.sampled_from(versions), label="version")
        kind, body = data.draw(bodies(key, version), label="body")
        start = len(caplog.records)
        frame = header(key, version) + body
        outcome = exchange(addr, struct.pack(">i", len(frame)) + frame)
        RUNS[outcome] += 1
        counts[f"{kind}/{outcome}"] += 1
        errors = broker_errors(caplog, start)
        assert not errors, errors

    run()
    with socket.create_connection(addr, timeout=5) as s:  # still serving
        s.sendall(PROBE)
        assert s.recv(4)


def test_every_unserved_key_and_version_closes(broker, caplog):
    """Unknown keys, versions outside the served range, and every API kio knows that the broker
    does not serve: a closed connection (ApiVersions: a v0 UNSUPPORTED_VERSION answer)."""
    caplog.set_level(logging.INFO)
    addr = addr_of(broker)
    cases = []
    for key in sorted(set(api_key_map) | {-1, 99, 999, 32767, -32768}):
        spec = SERVED.get(key)
        versions = set(schema_versions(key)) | {-1, 0, 127, 32767}
        for v in sorted(versions):
            if spec is not None and spec.min_version <= v <= spec.max_version:
                continue
            cases.append((key, v))
    outcomes = collections.Counter()
    for key, v in cases:
        frame = header(key, v) + b"\x00" * 16
        # nothing here may be parked, so wait long enough for a loaded 2-core CI machine: a
        # close normally comes within a millisecond, and 'held' after 10 s is a real hang
        outcome = exchange(addr, struct.pack(">i", len(frame)) + frame, wait_s=10.0)
        want = "answered" if key == 18 else "closed"
        assert outcome == want, (key, v, outcome)
        outcomes[outcome] += 1
    RUNS["unserved/closed"] += outcomes["closed"]
    RUNS["unserved/answered"] += outcomes["answered"]
    assert not broker_errors(caplog)


def served_pairs() -> set[tuple[int, int]]:
    """Every (key, version) mockbroker serves under any release it can advertise (mock.kafka.version),
    with the telemetry APIs on or off (mock.client.telemetry.enabled)."""
    handlers = set(build_handlers())
    return {(s.key, v) for release in KAFKA_RELEASES for telemetry in (False, True)
            for s in ApiRegistry(release, handlers, client_telemetry=telemetry)
            for v in range(s.min_version, s.max_version + 1)}


def write_seed_corpus(directory: Path) -> int:
    """One input per served API and version: its index byte, version byte, default body."""
    directory.mkdir(parents=True, exist_ok=True)
    n = 0
    for i, (key, lo, hi) in enumerate(FUZZ_TARGETS):
        for v in range(lo, hi + 1):
            body = encode_body(key, v, build_request(key, v, {}))
            (directory / f"{key}-{v}").write_bytes(bytes([i, v - lo]) + body)
            n += 1
    return n


def test_the_fuzz_corpus_covers_every_served_key_and_version(tmp_path):
    """Fails when an API or version mockbroker serves (under any release) is left out: of the hypothesis
    runs (one per SERVED key, drawing from its whole range), of the sweep, or of the atheris seeds."""
    served = served_pairs()
    assert {k for k, _ in served} == set(SERVED) == {k for k, _, _ in FUZZ_TARGETS}
    drawn = {(k, v) for k, s in SERVED.items() for v in range(s.min_version, s.max_version + 1)}
    assert served <= drawn, sorted(served - drawn)
    swept = set(sweep_cases())
    assert served <= swept, sorted(served - swept)
    write_seed_corpus(tmp_path)
    seeded = set()
    for f in tmp_path.iterdir():
        picked = target_of(f.read_bytes())
        assert picked is not None and f.name == f"{picked[0]}-{picked[1]}"
        seeded.add(picked[:2])
    assert served <= seeded, sorted(served - seeded)


@functools.cache
def sweep_cases() -> dict[tuple[int, int], list[tuple[str, bytes]]]:
    """Fixed bad bodies for each served (key, version): the default body cut in half, every byte of it
    0xff (null strings, -1 lengths and counts), every byte 0x7f (huge lengths), and nothing at all."""
    cases = {}
    for key, lo, hi in FUZZ_TARGETS:
        for v in range(lo, hi + 1):
            body = encode_body(key, v, build_request(key, v, {}))
            cases[(key, v)] = [(kind, harmless(key, v, b)) for kind, b in (
                ("half", body[:len(body) // 2]), ("ff", b"\xff" * len(body)), ("7f", b"\x7f" * max(len(body), 8)),
                ("empty", b""))]
    return cases


def test_every_served_version_answers_or_closes_on_fixed_bad_bodies(broker, caplog):
    caplog.set_level(logging.INFO)
    addr = addr_of(broker)
    outcomes: collections.Counter[str] = collections.Counter()
    for (key, v), cases in sweep_cases().items():
        for kind, body in cases:
            start = len(caplog.records)
            frame = header(key, v) + body
            outcome = exchange(addr, struct.pack(">i", len(frame)) + frame)
            outcomes[outcome] += 1
            errors = broker_errors(caplog, start)
            assert not errors, (key, v, kind, errors)
    RUNS.update({f"sweep/{k}": n for k, n in outcomes.items()})
    with socket.create_connection(addr, timeout=5) as s:  # still serving
        s.sendall(PROBE)
        assert s.recv(4)


@pytest.mark.skipif(not __import__("importlib").util.find_spec("atheris"), reason="atheris not installed")
def test_atheris_coverage_guided_run(tmp_path):
    """libFuzzer (atheris) drives the same exchange, guided by coverage of the broker's Python,
    from a seed corpus of one default request per served API and version."""
    runs = int(os.environ.get("MOCKBROKER_ATHERIS_RUNS", "1500"))
    seeds = write_seed_corpus(tmp_path / "corpus")
    script = Path(__file__).with_name("fuzz_atheris.py")
    p = subprocess.run([sys.executable, str(script), f"-runs={runs}", "-seed=1", "-max_len=512",
                        "-len_control=0", "-rss_limit_mb=0", f"-artifact_prefix={tmp_path}/", str(tmp_path / "corpus")],
                       capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[3])
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    done = [x for x in out.splitlines() if x.startswith("Done ") and " runs in " in x]
    assert done, out[-3000:]
    n = int(done[-1].split()[1])
    assert n >= runs
    RUNS["atheris"] += n
    PER_API["atheris (libFuzzer)"]["runs"] += n
    PER_API["atheris (libFuzzer)"]["seeds"] += seeds

