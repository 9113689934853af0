"""The on-disk request journal: JournalWriter (rotation, compression, order, a full queue, close),
read_journal (cut and corrupt lines, schema versions, files/directories/globs), the schema in
docs/journal.md, and the wiring in Cluster (mock.journal.dir)."""

from __future__ import annotations

import gzip
import json
import re
import threading
import time
from dataclasses import fields
from pathlib import Path

import pytest

from mockbroker import MockBroker
from mockbroker.observe.journal import SCHEMA_VERSION, PartitionRecord, RequestRecord
from mockbroker.journal_reader import (
    JournalSchemaError, JournalWarning, journal_files, main as reader_main, read_journal, segment_key,
)
from mockbroker.observe.journal_writer import (
    JournalWriter, compress_segment, encode_line, encode_line_generic, record_json, segment_name,
)
from protocol.client import RawKafkaClient

ROOT = Path(__file__).resolve().parents[3]
COMPAT = {"node_id", "conn_id", "received_ns", "responded_ns", "held_ms"}  # as_dict() only, not on disk


def rec(i: int, client_id: str = "c", **kw) -> RequestRecord:
    base = dict(broker=1, connection=7, peer="127.0.0.1:5000", client_id=client_id, principal="ANONYMOUS",
                client_software_name="t", client_software_version="1", api_key=0, api="PRODUCE", api_version=11,
                correlation_id=i, request_bytes=100 + i, arrived_clock_ns=1000 + i, received_clock_ns=1000 + i,
                received_wall_ns=10**18 + i, handled_clock_ns=2000 + i, handled_wall_ns=10**18 + 1000 + i,
                sent_clock_ns=3000 + i, sent_wall_ns=10**18 + 2000 + i, response_bytes=50,
                partitions=[PartitionRecord("t", i % 3, 0, 10 * i)], details={"acks": 1, "timeout_ms": 30000})
    base.update(kw)
    return RequestRecord(**base)


def wait_for(cond, timeout_s: float = 10.0) -> None:
    end = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


def segment_bytes_of(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()


# -- the writer ----------------------------------------------------------------------------------
def test_rotation_compresses_closed_segments_and_keeps_order(tmp_path):
    w = JournalWriter(tmp_path / "j", segment_bytes=4096, queue_records=10_000, start_wall_ms=1234)
    w.start()
    for i in range(200):
        w.sink(rec(i))
    w.close()
    names = sorted(p.name for p in (tmp_path / "j").iterdir())
    assert len(names) == w.segments > 5
    assert names == [f"journal-1234-{n:06d}.jsonl.gz" for n in range(w.segments - 1)] + \
        [f"journal-1234-{w.segments - 1:06d}.jsonl"]  # the last stays plain; no .tmp, no plain leftovers
    for name in names:
        data = segment_bytes_of(tmp_path / "j" / name)  # valid gzip
        assert data.endswith(b"\n") and len(data) <= 4096
        assert all(json.loads(line)["schema_version"] == SCHEMA_VERSION for line in data.splitlines())
    records = list(read_journal(tmp_path / "j"))
    assert [r["correlation_id"] for r in records] == list(range(200))
    assert (w.written, w.dropped) == (200, 0)


def test_a_record_larger_than_a_segment_gets_one_of_its_own(tmp_path):
    w = JournalWriter(tmp_path, segment_bytes=1024, queue_records=100, start_wall_ms=1)
    w.start()
    w.sink(rec(0))
    w.sink(rec(1, client_id="x" * 3000))
    w.sink(rec(2))
    w.close()
    assert w.segments == 3
    assert [r["correlation_id"] for r in read_journal(tmp_path)] == [0, 1, 2]


def test_full_queue_drops_and_counts_without_blocking(tmp_path):
    """A writer thread that cannot keep up (held here) never holds the caller back."""
    release = threading.Event()

    class Slow(JournalWriter):
        def _write_batch(self, batch):
            release.wait(10)
            super()._write_batch(batch)

    w = Slow(tmp_path, segment_bytes=1 << 20, queue_records=50, start_wall_ms=1)
    w.start()
    w.sink(rec(0))
    wait_for(lambda: len(w._queue) == 0)  # the writer took it and is stuck writing it
    t0 = time.perf_counter()
    for i in range(1, 1001):
        w.sink(rec(i))
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.5, f"1000 sink calls took {elapsed:.3f}s"
    assert w.dropped == 1000 - 50
    release.set()
    w.close()
    assert w.written == 51 and w.written + w.dropped == 1001
    assert [r["correlation_id"] for r in read_journal(tmp_path)] == list(range(51))


def test_close_writes_everything_queued(tmp_path):
    w = JournalWriter(tmp_path, segment_bytes=64 << 20, queue_records=100_000, start_wall_ms=1)
    w.start()
    for i in range(20_000):
        w.sink(rec(i))
    w.close()
    assert (w.written, w.dropped, w.segments) == (20_000, 0, 1)
    assert sum(1 for _ in read_journal(tmp_path)) == 20_000
    w.sink(rec(0))  # after close: dropped, counted
    assert w.dropped == 1


def test_records_are_readable_while_the_writer_runs(tmp_path):
    """A reader of the open segment sees a record within ~100 ms of sink()."""
    w = JournalWriter(tmp_path, segment_bytes=64 << 20, queue_records=1000, start_wall_ms=1)
    w.start()
    try:
        path = w.current_segment
        assert path is not None and path.exists()  # there from the start, for tail -F
        delays = []
        for i in range(10):
            t0 = time.monotonic()
            w.sink(rec(i))
            wait_for(lambda n=i + 1: path.read_bytes().count(b"\n") == n, 5)
            delays.append(time.monotonic() - t0)
        delays.sort()
        assert delays[len(delays) // 2] < 0.1, delays
    finally:
        w.close()


def test_start_takes_a_fresh_name_and_creates_the_directory(tmp_path):
    d = tmp_path / "a" / "b"
    first = JournalWriter(d, 1 << 20, 10, start_wall_ms=5)
    first.start()
    second = JournalWriter(d, 1 << 20, 10, start_wall_ms=5)  # same millisecond, same directory
    second.start()
    first.sink(rec(1))
    second.sink(rec(2))
    first.close()
    second.close()
    assert sorted(p.name for p in d.iterdir()) == ["journal-5-000000.jsonl", "journal-6-000000.jsonl"]
    assert [r["correlation_id"] for r in read_journal(d)] == [1, 2]


def test_line_format():
    line = encode_line(rec(3, quota_entity=("alice", ""), quotas={"producer_byte_rate": 1024.0}))
    assert line.endswith("\n") and line.count("\n") == 1 and line.isascii()
    assert ", " not in line and ": " not in line  # compact
    obj = json.loads(line)
    assert list(obj)[0] == "schema_version"
    assert obj["quota_entity"] == {"user": "alice", "client_id": ""}
    assert obj["partitions"] == [{"topic": "t", "partition": 0, "error_code": 0, "bytes": 30}]
    assert json.loads(encode_line(rec(1, client_id="é\n\"")))["client_id"] == "é\n\""
    # strict JSON: a non-finite float is null, not Infinity
    assert json.loads(encode_line(rec(1, quotas={"request_percentage": float("inf")})))["quotas"] == \
        {"request_percentage": None}


def test_disk_form_is_as_dict_without_the_compat_names():
    r = rec(9, quota_entity=(None, "c"), mute_start_clock_ns=5, mute_end_clock_ns=6, parked_ms=1.5)
    want = {k: v for k, v in r.as_dict().items() if k not in COMPAT}
    assert record_json(r) == want
    assert json.loads(encode_line(r)) == want


@pytest.mark.parametrize("kw", [
    {},
    {"sent_clock_ns": None, "sent_wall_ns": None, "response_bytes": None, "outcome": "closed", "partitions": [],
     "details": {}, "client_software_name": None, "client_software_version": None},
    {"throttle_time_ms": 120, "throttle_mode": "mute", "quota_type": "Produce", "mute_start_clock_ns": 5,
     "mute_end_clock_ns": 120_000_005, "quota_entity": ("alice", ""), "quotas": {"producer_byte_rate": 1024.0},
     "parked_ms": 12.25, "purgatory": "Produce", "completed_by": "timeout", "error_code": 0, "fault_rule": 3},
    {"client_id": "é\n\"\\\u2028", "peer": "[::1]:5", "parked_ms": 0.1 + 0.2, "quota_entity": (None, "c")},
    {"partitions": [PartitionRecord("t\u00fc", -1, 3, 0)] * 3, "details": {"max_wait_ms": 500, "isolation_level": 1}},
    # what the compiled encoder does not expect goes through json: still the same line
    {"parked_ms": float("nan")}, {"error_code": True}, {"api_version": None}, {"details": [1, 2]},
    {"quota_entity": ("u", "c", "extra")}, {"parked_ms": 3}, {"client_throttles": 1},
])
def test_the_compiled_encoder_writes_what_json_writes(kw):
    r = rec(4, **kw)
    line = encode_line(r)
    assert line == encode_line_generic(r)
    assert line.isascii() and line.endswith("\n") and line.count("\n") == 1
    json.loads(line)  # strict: no NaN


def test_compress_segment_is_atomic_and_removes_the_plain_file(tmp_path):
    plain = tmp_path / segment_name(7, 0)
    plain.write_bytes(b'{"schema_version":1}\n' * 1000)
    gz = compress_segment(plain)
    assert gz.name == "journal-7-000000.jsonl.gz" and not plain.exists()
    assert [p.name for p in tmp_path.iterdir()] == [gz.name]
    assert gzip.decompress(gz.read_bytes()) == b'{"schema_version":1}\n' * 1000


# -- the reader ----------------------------------------------------------------------------------
def write_lines(path: Path, n: int, start: int = 0) -> bytes:
    data = b"".join(encode_line(rec(i)).encode() for i in range(start, start + n))
    path.write_bytes(data)
    return data


def test_a_cut_last_line_reads_up_to_the_cut(tmp_path):
    path = tmp_path / segment_name(1, 0)
    data = write_lines(path, 10)
    path.write_bytes(data[: len(data) - 40])  # killed in the middle of the 10th line
    seen: list[JournalWarning] = []
    got = list(read_journal(path, warn=seen.append))
    assert [r["correlation_id"] for r in got] == list(range(9))
    assert len(seen) == 1
    w = seen[0]
    assert (w.path, w.line, w.kind) == (str(path), 10, "cut")
    assert str(path) in str(w) and ":10:" in str(w)


def test_cut_at_every_byte_of_the_last_line(tmp_path):
    path = tmp_path / segment_name(1, 0)
    data = write_lines(path, 3)
    start = data.rindex(b"\n", 0, len(data) - 1) + 1
    for cut in range(start + 1, len(data)):  # the last line without its newline, or less
        path.write_bytes(data[:cut])
        seen: list[JournalWarning] = []
        got = list(read_journal(path, warn=seen.append))
        assert [r["correlation_id"] for r in got] == [0, 1]
        assert [(w.line, w.kind) for w in seen] == [(3, "cut")]


def test_a_corrupt_line_in_the_middle_is_reported_and_skipped(tmp_path):
    path = tmp_path / segment_name(1, 0)
    lines = write_lines(path, 5).splitlines(keepends=True)
    lines[2] = lines[2][:30] + b"\n"  # half a record
    lines.insert(4, b"[1, 2]\n")        # JSON, not an object
    path.write_bytes(b"".join(lines))
    seen: list[JournalWarning] = []
    got = list(read_journal(path, warn=seen.append))
    assert [r["correlation_id"] for r in got] == [0, 1, 3, 4]
    assert [(w.path, w.line, w.kind) for w in seen] == [(str(path), 3, "corrupt"), (str(path), 5, "corrupt")]


def test_warnings_go_to_warnings_warn_by_default(tmp_path):
    path = tmp_path / segment_name(1, 0)
    path.write_bytes(write_lines(path, 2)[:-5])
    with pytest.warns(JournalWarning, match=re.escape(f"{path}:2: cut")):
        assert len(list(read_journal(path))) == 1


def test_an_unknown_schema_version_is_a_clear_error(tmp_path):
    path = tmp_path / segment_name(1, 0)
    data = write_lines(path, 2)
    path.write_bytes(data + b'{"schema_version":2,"broker":0}\n')
    it = read_journal(path)
    assert next(it)["correlation_id"] == 0
    assert next(it)["correlation_id"] == 1
    with pytest.raises(JournalSchemaError, match=rf"{re.escape(str(path))}:3: schema_version 2; "
                                                 r"this reader knows schema_version 1"):
        next(it)
    path.write_bytes(b'{"broker":0}\n')
    with pytest.raises(JournalSchemaError, match="no schema_version"):
        list(read_journal(path))


def test_files_directories_globs_and_order(tmp_path):
    d = tmp_path / "j"
    d.mkdir()
    # two runs in one directory; seq 10 after seq 9; a compressed one; a .tmp and a foreign file ignored
    write_lines(d / segment_name(200, 0), 1, start=30)
    write_lines(d / segment_name(100, 10), 1, start=20)
    write_lines(d / segment_name(100, 9), 1, start=10)
    compress_segment(d / segment_name(100, 9))
    write_lines(d / segment_name(100, 0), 1, start=0)
    (d / "journal-100-000011.jsonl.gz.tmp").write_bytes(b"garbage")
    (d / "notes.txt").write_text("x")
    order = [0, 10, 20, 30]
    assert [r["correlation_id"] for r in read_journal(d)] == order
    assert [r["correlation_id"] for r in read_journal(str(d / "journal-*"))] == order
    assert [r["correlation_id"] for r in read_journal([d / segment_name(200, 0), d / segment_name(100, 0)])] == [0, 30]
    # a segment present plain and compressed (between the compressor's rename and delete): read once
    write_lines(d / segment_name(100, 9), 1, start=10)
    assert [r["correlation_id"] for r in read_journal(d)] == order
    assert [Path(p).name for p in journal_files(d)][1] == "journal-100-000009.jsonl.gz"
    assert segment_key("journal-100-000010.jsonl") > segment_key("journal-100-000009.jsonl.gz")
    with pytest.raises(FileNotFoundError):
        list(read_journal(tmp_path / "missing"))


def test_a_damaged_compressed_segment_is_a_warning(tmp_path):
    plain = tmp_path / segment_name(1, 0)
    write_lines(plain, 200)
    gz = compress_segment(plain)
    gz.write_bytes(gz.read_bytes()[: gz.stat().st_size // 2])
    write_lines(tmp_path / segment_name(1, 1), 1, start=500)
    seen: list[JournalWarning] = []
    got = [r["correlation_id"] for r in read_journal(tmp_path, warn=seen.append)]
    assert got[-1] == 500 and got[:-1] == list(range(len(got) - 1))
    assert [w.kind for w in seen] == ["unreadable"] and seen[0].path == str(gz)


def test_reader_command_line(tmp_path, capsys):
    path = tmp_path / segment_name(1, 0)
    path.write_bytes(write_lines(path, 3)[:-10])
    assert reader_main([str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line)["correlation_id"] for line in out.splitlines()] == [0, 1]
    assert f"{path}:3: cut" in err
    path.write_bytes(b'{"schema_version":99}\n')
    assert reader_main([str(path)]) == 2
    assert "schema_version 99" in capsys.readouterr().err


# -- the schema is documented --------------------------------------------------------------------
def documented_names() -> set[str]:
    text = (ROOT / "docs" / "journal.md").read_text()
    return set(re.findall(r"^\| `([a-z_\[\].]+)` \|", text, flags=re.MULTILINE))


def test_every_field_is_documented():
    r = rec(1, quota_entity=("u", "c"))
    d = r.as_dict()
    names = set(d)
    names |= {f"partitions[].{k}" for k in d["partitions"][0]}
    names |= {f"quota_entity.{k}" for k in d["quota_entity"]}
    names |= {"acks", "timeout_ms", "max_wait_ms", "min_bytes", "max_bytes", "isolation_level", "session_id",
              "session_epoch"}  # details (journal_recorder._DETAILS)
    missing = names - documented_names()
    assert not missing, f"not in docs/journal.md: {sorted(missing)}"
    assert {f.name for f in fields(RequestRecord)} <= documented_names()


def test_the_details_keys_are_the_recorders():
    from mockbroker.network.journal_recorder import _DETAILS

    assert {name for _attr, name in _DETAILS} <= documented_names()


# -- the cluster writes it -----------------------------------------------------------------------
def test_cluster_writes_every_request_and_flushes_on_stop(tmp_path):
    d = tmp_path / "journal"
    with MockBroker(config={"mock.journal.dir": str(d), "mock.journal.segment.bytes": 2048}) as b:
        writer = b.call(lambda c: c.journal_writer)
        assert writer is not None and writer.sink in b.call(lambda c: c.journal.sinks)
        client = RawKafkaClient.connect(b.bootstrap_servers, client_id="raw-journal")
        try:
            for _ in range(30):
                client.request(3, 12, {"topics": None})  # Metadata
        finally:
            client.close()
        in_memory = b.call(lambda c: [e.correlation_id for e in c.journal.entries if e.client_id == "raw-journal"])
    records = [r for r in read_journal(d) if r["client_id"] == "raw-journal"]
    assert [r["correlation_id"] for r in records] == in_memory and len(records) >= 30
    assert (writer.written, writer.dropped) == (len(list(read_journal(d))), 0)
    assert writer.segments > 1 and any(p.name.endswith(".jsonl.gz") for p in d.iterdir())


def test_no_journal_dir_no_writer():
    with MockBroker() as b:
        assert b.call(lambda c: c.journal_writer) is None
        assert b.call(lambda c: c.journal.sinks) == []
