"""Fetch over a real socket: offsets, sizes (KIP-74), errors and sessions (KIP-227)."""

from __future__ import annotations

import uuid

import pytest

from protocol.errors import ErrorCode
from protocol.records import build_batch, parse_header

E = ErrorCode


def produce(c, topic, partition, n=3, value=b"v"):
    body = {"acks": 1, "timeout": 1000, "topic_data": [{"name": topic, "partition_data": [
        {"index": partition, "records": build_batch([(b"k", value, [])] * n, base_timestamp=1)}]}]}
    assert c.request(0, 9, body).responses[0].partition_responses[0].error_code == 0


def fetch(c, topic, parts, version=12, session_id=0, epoch=-1, max_bytes=50 << 20, forgotten=(),
          isolation=0):
    body = {
        "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": max_bytes, "isolation_level": isolation,
        "session_id": session_id, "session_epoch": epoch,
        "topics": [{"topic": topic, "partitions": [
            {"partition": p, "fetch_offset": off, "partition_max_bytes": pmb, "log_start_offset": -1,
             "current_leader_epoch": -1} for p, off, pmb in parts]}] if parts else [],
        "forgotten_topics_data": [{"topic": topic, "partitions": list(forgotten)}] if forgotten else [],
    }
    return c.request(1, version, body)


def offsets_of(records):
    out, pos = [], 0
    while pos + 61 <= len(records):
        h = parse_header(records, pos)
        if pos + h.size_bytes > len(records):
            break
        out.append(h.base_offset)
        pos += h.size_bytes
    return out


def test_fetch_returns_stored_batches_byte_identical(raw, broker):
    broker.create_topic("f1", 1)
    c = raw()
    produce(c, "f1", 0)
    produce(c, "f1", 0)
    r = fetch(c, "f1", [(0, 0, 1 << 20)])
    p = r.responses[0].partitions[0]
    assert (p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset) == (0, 6, 6, 0)
    assert p.records == b"".join(broker.partition_records("f1", 0))
    assert offsets_of(fetch(c, "f1", [(0, 4, 1 << 20)]).responses[0].partitions[0].records) == [3]


@pytest.mark.parametrize("version", range(4, 13))
def test_every_version_by_name(raw, broker, version):
    broker.create_topic(f"fv-{version}", 1)
    c = raw()
    produce(c, f"fv-{version}", 0)
    r = fetch(c, f"fv-{version}", [(0, 0, 1 << 20)], version=version)
    assert offsets_of(r.responses[0].partitions[0].records) == [0]


@pytest.mark.parametrize("version", range(13, 19))
def test_every_version_by_topic_id(raw, broker, version):
    broker.create_topic(f"fid-{version}", 1)
    c = raw()
    produce(c, f"fid-{version}", 0)
    tid = c.request(3, 12, {"topics": [{"name": f"fid-{version}"}]}).topics[0].topic_id
    body = {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "topics": [{"topic_id": tid, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20, "current_leader_epoch": -1,
                 "log_start_offset": -1}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    r = c.request(1, version, body)
    assert r.responses[0].topic_id == tid
    assert offsets_of(r.responses[0].partitions[0].records) == [0]
    body["topics"][0]["topic_id"] = uuid.uuid4()
    r = c.request(1, version, body)
    assert r.responses[0].partitions[0].error_code == E.unknown_topic_id


def test_offset_out_of_range_and_unknown(raw, broker):
    broker.create_topic("f2", 1)
    c = raw()
    produce(c, "f2", 0)
    assert fetch(c, "f2", [(0, 4, 1 << 20)]).responses[0].partitions[0].error_code == E.offset_out_of_range
    p = fetch(c, "f2", [(0, 3, 1 << 20)]).responses[0].partitions[0]
    assert p.error_code == 0 and p.records == b""  # at the log end: empty, no error
    assert fetch(c, "nope", [(0, 0, 1 << 20)]).responses[0].partitions[0].error_code == E.unknown_topic_or_partition


def test_kip74_first_batch_whole_then_limits(raw, broker):
    broker.create_topic("f3", 3)
    c = raw()
    produce(c, "f3", 0, n=5, value=b"x" * 200)
    produce(c, "f3", 1, n=5, value=b"x" * 200)
    produce(c, "f3", 2, n=1)
    produce(c, "f3", 2, n=1)
    size = len(broker.partition_records("f3", 0)[0])
    small = len(broker.partition_records("f3", 2)[0])
    # partition_max_bytes smaller than a batch: the first partition still returns it whole; a later
    # one whose first batch does not fit answers no records rather than a cut of it
    # (ReplicaManager.readFromLog: firstEntryIncomplete -> MemoryRecords.EMPTY; a Java consumer
    # given a cut alone fails with "no complete records were found"), and takes nothing from the
    # response's limit: the next partition is read
    r = fetch(c, "f3", [(0, 0, 10), (1, 0, 10), (2, 0, 1 << 20)])
    p0, p1, p2 = r.responses[0].partitions
    assert (len(p0.records), p1.error_code, len(p1.records or b""), p1.high_watermark) == (size, 0, 0, 5)
    assert len(p2.records) == 2 * small
    # max_bytes bounds the whole response
    r = fetch(c, "f3", [(0, 0, 1 << 20), (1, 0, 1 << 20)], max_bytes=size + 5)
    p0, p1 = r.responses[0].partitions
    assert len(p0.records) == size and not p1.records
    # after a whole batch a partition may end with a cut of the next, as a slab read does
    r = fetch(c, "f3", [(2, 0, small + 5)])
    p2 = r.responses[0].partitions[0]
    assert len(p2.records) == small + 5 and offsets_of(p2.records) == [0]


class TestSessions:
    def test_create_incremental_and_close(self, raw, broker):
        broker.create_topic("s1", 2)
        c = raw()
        produce(c, "s1", 0)
        r = fetch(c, "s1", [(0, 0, 1 << 20), (1, 0, 1 << 20)], session_id=0, epoch=0)
        sid = r.session_id
        assert r.error_code == 0 and sid != 0
        assert len(r.responses[0].partitions) == 2  # full response: every partition
        # incremental: the session keeps fetch offsets, so unchanged partition 0 is served again
        r = fetch(c, "s1", [], session_id=sid, epoch=1)
        assert [p.partition_index for p in r.responses[0].partitions] == [0]
        # the client moves partition 0 past its records: nothing new, no partitions
        r = fetch(c, "s1", [(0, 3, 1 << 20)], session_id=sid, epoch=2)
        assert (r.error_code, r.session_id, list(r.responses)) == (0, sid, [])
        # new data on partition 1 only: only it comes back
        produce(c, "s1", 1)
        r = fetch(c, "s1", [], session_id=sid, epoch=3)
        assert [p.partition_index for p in r.responses[0].partitions] == [1]
        assert offsets_of(r.responses[0].partitions[0].records) == [0]
        # move partition 1's offset forward: nothing new
        r = fetch(c, "s1", [(1, 3, 1 << 20)], session_id=sid, epoch=4)
        assert list(r.responses) == []
        # wrong epoch, unknown id
        assert fetch(c, "s1", [], session_id=sid, epoch=9).error_code == E.invalid_fetch_session_epoch
        assert fetch(c, "s1", [], session_id=sid + 1, epoch=1).error_code == E.fetch_session_id_not_found
        # forget partition 0: a later record there is not reported
        r = fetch(c, "s1", [], session_id=sid, epoch=5, forgotten=[0])
        assert r.error_code == 0
        produce(c, "s1", 0)
        assert list(fetch(c, "s1", [], session_id=sid, epoch=6).responses) == []
        # close the session with epoch -1: served sessionless, the id is gone
        r = fetch(c, "s1", [(0, 0, 1 << 20)], session_id=sid, epoch=-1)
        assert r.session_id == 0 and r.responses[0].partitions[0].error_code == 0
        assert fetch(c, "s1", [], session_id=sid, epoch=7).error_code == E.fetch_session_id_not_found

    def test_sessionless_below_v7_and_with_epoch_minus_one(self, raw, broker):
        broker.create_topic("s2", 1)
        c = raw()
        assert fetch(c, "s2", [(0, 0, 1 << 20)], epoch=-1).session_id == 0
        assert fetch(c, "s2", [(0, 0, 1 << 20)], version=6).responses[0].partitions[0].error_code == 0
