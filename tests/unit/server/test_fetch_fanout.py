"""Fetch responses as segments (protocol/gather.py, mockbroker/apis/fetch_response.py): byte-identical to
kio's own encoding, the fetches one append wakes sharing one body, record sets never joined."""

from __future__ import annotations

import gc
import time
import weakref

import pytest

from mockbroker.apis.fetch_response import encoder
from mockbroker.common.shared_encodings import SharedEncodings
from protocol.codec import build_response, decode_response, encode_response
from protocol.gather import GatherFrame, RecordChunks
from protocol.records import build_batch
from protocol.registry import ApiKey, any_spec

from ..apis.test_fetch_wire import fetch, produce

SPEC = any_spec(ApiKey.FETCH)


class Ctx:
    """What an encoder reads of a RequestContext."""

    def __init__(self, version: int, correlation_id: int) -> None:
        self.spec, self.version, self.correlation_id = SPEC, version, correlation_id


def body(records, aborted=None, topic="t"):
    topics = [{"topic": topic, "topic_id": __import__("uuid").UUID(int=7), "partitions": [
        {"partition_index": 0, "error_code": 0, "high_watermark": 12, "last_stable_offset": 12,
         "log_start_offset": 0, "aborted_transactions": aborted, "preferred_read_replica": -1,
         "records": records},
        {"partition_index": 1, "error_code": 1, "high_watermark": -1, "last_stable_offset": -1,
         "log_start_offset": -1, "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}]}]
    return topics, {"error_code": 0, "session_id": 0, "responses": topics, "node_endpoints": []}


BATCH = build_batch([(b"k", b"v" * 700, [])] * 3, base_timestamp=1)
SMALL = build_batch([(b"k", b"v", [])], base_timestamp=1)


@pytest.mark.parametrize("version", [4, 6, 7, 11, 12, 13, 16, 18])
def test_shared_frames_are_byte_identical_to_kios_encoding(version):
    shared = SharedEncodings()
    half = len(BATCH) // 2
    for records, plain in ((BATCH, BATCH), (SMALL, SMALL),
                           (RecordChunks([BATCH, memoryview(BATCH)[:half]], len(BATCH) + half),
                            BATCH + BATCH[:half])):
        topics, b = body(records, aborted=[{"producer_id": 5, "first_offset": 3}])
        _, expected_body = body(plain, aborted=[{"producer_id": 5, "first_offset": 3}])
        encode = encoder(shared, topics)
        with shared:
            frames = []
            for corr, throttle, session in ((1, 0, 0), (2, 250, 77), (3, 0, 1 << 30)):
                frame = encode(Ctx(version, corr), {**b, "throttle_time": throttle, "session_id": session})
                want = encode_response(SPEC, version, corr, build_response(
                    ApiKey.FETCH, version, {**expected_body, "throttle_time": throttle, "session_id": session}))
                assert isinstance(frame, GatherFrame) and len(frame) == len(want)
                assert bytes(frame) == bytes(want)
                frames.append(frame)
        # one body for the three, the record set by reference (zero copy) when large
        assert frames[0].body is frames[1].body is frames[2].body
        if records is BATCH:
            assert any(seg is BATCH for seg in frames[0].body)
    assert shared.hits == 6


def test_outside_a_pass_nothing_is_kept_and_a_changed_body_is_encoded_afresh():
    shared = SharedEncodings()
    topics, b = body(BATCH)
    encode = encoder(shared, topics)
    f1, f2 = encode(Ctx(12, 1), b), encode(Ctx(12, 2), b)
    assert f1.body is not f2.body and shared.hits == 0
    with shared:
        throttled = encode(Ctx(12, 3), {**b, "responses": []})  # getThrottledResponse: no partitions
    want = encode_response(SPEC, 12, 3, build_response(ApiKey.FETCH, 12, {**b, "responses": []}))
    assert bytes(throttled) == bytes(want) and shared.hits == 0


def park(c, topic, partition_max_bytes=1 << 20):
    """A Fetch v12 of partition 0 from offset 0 that waits up to 20 s for one byte; its correlation id."""
    return c.send(1, 12, {
        "replica_id": -1, "max_wait": 20_000, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [],
        "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                    "partition_max_bytes": partition_max_bytes,
                                                    "log_start_offset": -1, "current_leader_epoch": -1}]}]})


def wait_parked(broker, n):
    deadline = time.monotonic() + 10
    while broker.call(lambda c: c.broker().replica_manager.fetch_purgatory.num_delayed()) < n:
        assert time.monotonic() < deadline, "the fetches did not park"
        time.sleep(0.01)


def test_fetches_one_append_wakes_share_one_encoding(raw, broker):
    """Four consumers parked at the log end; one append answers them all with the same records,
    one body encoded once (three reuse it), each with its own correlation id."""
    broker.create_topic("fan", 1)
    hits = lambda: broker.call(lambda c: c.broker().replica_manager.shared_encodings.hits)  # noqa: E731
    before = hits()
    consumers = [raw() for _ in range(4)]
    corrs = []
    for i, c in enumerate(consumers):
        for _ in range(i):  # different correlation ids
            fetch(c, "fan", [])
        corrs.append(park(c, "fan"))
    wait_parked(broker, 4)
    produce(raw(), "fan", 0, n=5, value=b"x" * 300)
    stored = fetch(raw(), "fan", [(0, 0, 1 << 20)]).responses[0].partitions[0].records
    for c, corr in zip(consumers, corrs):
        got, r = decode_response(1, 12, 1, c.recv_frame())
        p = r.responses[0].partitions[0]
        assert (got, r.error_code, p.error_code, p.high_watermark, p.records) == (corr, 0, 0, 5, stored)
    # three reuse the first's encoding, three the response it built (its topics, journal partitions)
    assert hits() - before == 6


def test_a_woken_fetch_is_freed_by_reference_counting(raw, broker):
    """A completed DelayedFetch and its request's Deferred hold no cycle: 10,000 woken fetches
    would otherwise be left to the cyclic GC, whose full collections stall the event loop."""
    broker.create_topic("cyc", 1)
    consumers = [raw() for _ in range(3)]
    for c in consumers:
        c.send(1, 12, {
            "replica_id": -1, "max_wait": 20_000, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [],
            "topics": [{"topic": "cyc", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
                                                        "log_start_offset": -1, "current_leader_epoch": -1}]}]})
    purgatory = lambda c: c.broker().replica_manager.fetch_purgatory  # noqa: E731
    deadline = time.monotonic() + 10
    while broker.call(lambda c: purgatory(c).num_delayed()) < 3:
        assert time.monotonic() < deadline, "the fetches did not park"
        time.sleep(0.01)
    refs = broker.call(lambda c: [weakref.ref(op) for op in purgatory(c)._watchers[("cyc", 0)]])
    gc.collect()
    gc.disable()
    try:
        produce(raw(), "cyc", 0)
        for c in consumers:
            c.recv_frame()
        broker.call(lambda c: None)  # the loop is past the completion pass
        assert len(refs) == 3 and [r() for r in refs] == [None, None, None]
    finally:
        gc.enable()


def test_fetches_one_append_wakes_share_their_log_reads(raw, broker):
    """The fetches parked at one offset with the same bounds read the log once in the completion
    pass (their completion check and their read); one with another partition_max_bytes reads its own."""
    broker.create_topic("fanread", 1)
    shared = lambda: broker.call(lambda c: c.broker().replica_manager.shared_encodings.read_hits)  # noqa: E731
    before = shared()
    consumers = [raw() for _ in range(4)]
    for i, c in enumerate(consumers):
        park(c, "fanread", 1 << 20 if i < 3 else 100)
    wait_parked(broker, 4)
    produce(raw(), "fanread", 0, n=5, value=b"x" * 300)
    stored = fetch(raw(), "fanread", [(0, 0, 1 << 20)]).responses[0].partitions[0].records
    for c in consumers:
        _, r = decode_response(1, 12, 1, c.recv_frame())
        p = r.responses[0].partitions[0]
        # the 100-byte one gets the first batch whole all the same (KIP-74)
        assert (r.error_code, p.error_code, p.high_watermark, p.records) == (0, 0, 5, stored)
    # two of the three alike reuse the first's completion check and its read: 2 + 2
    assert shared() - before == 4


def test_a_passs_records_reach_the_journal_and_statistics_in_one_step_at_its_end(raw, broker):
    """The records of the fetches one append wakes go to the journal (its sinks) and the request
    statistics when the completion pass is over, in the order written and numbered on: the same
    records, each once, as when written one at a time."""
    broker.create_topic("fanrec", 1)
    seen = []

    def install(c):
        b = c.broker()
        scope = b.replica_manager.shared_encodings
        b.apis.recorder.journal.sinks.append(lambda rec: seen.append((rec.seq, rec.api, rec.outcome, scope.in_pass)))
        return b.request_stats.requests.get(("FETCH", 12), 0)

    fetches_before = broker.call(install)
    consumers = [raw() for _ in range(3)]
    for c in consumers:
        park(c, "fanrec")
    wait_parked(broker, 3)
    produce(raw(), "fanrec", 0, n=1)
    for c in consumers:
        decode_response(1, 12, 1, c.recv_frame())
    broker.call(lambda c: None)  # the loop is past the completion pass
    fetched = [s for s in seen if s[1] == "FETCH"]
    assert [(api, outcome, in_pass) for _, api, outcome, in_pass in fetched] == [("FETCH", "response", False)] * 3
    seqs = [s[0] for s in fetched]
    assert seqs == list(range(seqs[0], seqs[0] + 3))
    stats = broker.call(lambda c: (c.broker().request_stats.requests[("FETCH", 12)],
                                   c.broker().request_stats.latency[("FETCH", 12)].count))
    assert stats[0] - fetches_before == 3 and stats[1] == stats[0]
    assert [r["seq"] for r in broker.journal() if r["api"] == "FETCH"][-3:] == seqs


def test_statistics_in_one_step_count_as_one_at_a_time():
    """``RequestStats.record_many``: the counts, errors and latency histogram (its sum to the last
    bit) of recording the same records one by one."""
    from mockbroker.observe.journal import PartitionRecord, RequestRecord
    from mockbroker.observe.request_stats import RequestStats

    def rec(i):
        return RequestRecord(broker=0, connection=i, peer="p", client_id="c", principal="User:ANONYMOUS",
                             client_software_name=None, client_software_version=None, api_key=1,
                             api="FETCH" if i % 3 else "PRODUCE", api_version=12, correlation_id=i,
                             request_bytes=10, arrived_clock_ns=0, received_clock_ns=i * 1_234_567,
                             received_wall_ns=0, sent_clock_ns=i * 7_654_321 + 11, error_code=i % 2,
                             partitions=[PartitionRecord("t", 0, 6 if i % 5 == 0 else 0, 3)])

    one, many = RequestStats(), RequestStats()
    recs = [rec(i) for i in range(40)]
    for r in recs:
        one.record(r)
    many.record_many(recs[:1])
    many.record_many(recs[1:])
    assert (one.requests, one.errors) == (many.requests, many.errors)
    assert {k: (h.counts, h.total_ms, h.count) for k, h in one.latency.items()} == \
        {k: (h.counts, h.total_ms, h.count) for k, h in many.latency.items()}
