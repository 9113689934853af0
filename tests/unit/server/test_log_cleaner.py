"""Log compaction (cleanup.policy=compact) on the ManualClock: the cleaner keeps the latest record of
each key below the active segment, tombstones until delete.retention.ms after the cleaning that first
kept them, aborted transactions' batches never and their markers until nothing needs them; batches keep
their offsets (gaps between them), the log start and end offsets do not move.

Every segment holds one batch (internal.segment.bytes=1, Kafka's way to small segments: segment.bytes is
at least 1 MiB) unless a test says otherwise, so which segments are cleanable is plain;
log.cleaner.backoff.ms is 1000, so ``b.advance(1000)`` runs one cleaner pass.  The
expected logs follow Kafka 4.4's ``Cleaner`` / ``CleanedTransactionMetadata`` / ``MemoryRecords.filterTo``
step by step (in each test's comments).
"""

from __future__ import annotations

import gzip
import itertools

import pytest

from mockbroker import ManualClock, MockBroker
from mockbroker.server.replica_manager import ProduceEntry
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import CONTROL_FLAG, build_batch, decode_records, parse_header

E = ErrorCode
T0 = 1_800_000_000_000
ONE_PER_SEGMENT = {"cleanup.policy": "compact", "internal.segment.bytes": "1", "min.cleanable.dirty.ratio": "0.01",
                   "delete.retention.ms": "5000"}
_topics = itertools.count()


@pytest.fixture
def broker():
    # the transactional batches of test_aborted_transactions_and_their_markers are appended straight
    # to the replica manager, with no transaction at the coordinator: KIP-890's verification is off
    with MockBroker(config={"log.cleaner.backoff.ms": 1000, "transaction.partition.verification.enable": False},
                    clock=ManualClock(start_wall_ms=T0)) as b:
        yield b


def now(b) -> int:
    return b.call(lambda c: c.clock.time_ms())


def produce(b, topic, records, attributes=0, payload=None):
    """One batch of (key, value) records at the broker's time; its base offset."""
    batch = build_batch([(k, v, []) for k, v in records], base_timestamp=now(b), attributes=attributes,
                        payload=payload)
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        r = c.request(0, 9, {"acks": 1, "timeout": 5000, "topic_data": [{"name": topic, "partition_data": [
            {"index": 0, "records": batch}]}]}).responses[0].partition_responses[0]
    assert r.error_code == E.none, r.error_message
    return r.base_offset


def contents(b, topic):
    """[(offset, key, value)] of the data records, [(offset, 'COMMIT'|'ABORT')] of markers, in log order."""
    out = []
    for raw in b.partition_records(topic, 0):
        h, records = decode_records(raw)
        for r in records:
            if h.attributes & CONTROL_FLAG:
                out.append((h.base_offset + r.offset_delta, "COMMIT" if r.key[3] == 1 else "ABORT"))
            else:
                out.append((h.base_offset + r.offset_delta, r.key, r.value))
    return out


def batches(b, topic):
    return [parse_header(raw) for raw in b.partition_records(topic, 0)]


def state(b, topic):
    return b.call(lambda c: (lambda log: (log.log_start_offset, log.log_end_offset, log.high_watermark))(
        c.metadata.topics[topic].partitions[0].log))


def new_topic(b, **configs):
    name = f"c{next(_topics)}"
    b.create_topic(name, 1, configs={**ONE_PER_SEGMENT, **configs})
    return name


def test_the_latest_record_of_each_key_stays(broker):
    t = new_topic(broker)
    for k, v in [(b"k1", b"a0"), (b"k2", b"b0"), (b"k1", b"a1"), (b"k3", b"c0"), (b"k2", None), (b"k1", b"a2")]:
        produce(broker, t, [(k, v)])
    broker.advance(999)
    assert len(contents(broker, t)) == 6  # the cleaner has not run yet
    broker.advance(1)
    # offset map over [0, 5) (offset 5 is the active segment): k1 -> 2, k2 -> 4, k3 -> 3
    assert contents(broker, t) == [(2, b"k1", b"a1"), (3, b"k3", b"c0"), (4, b"k2", None), (5, b"k1", b"a2")]
    assert state(broker, t) == (0, 6, 6)  # log start and end do not move
    assert broker.call(lambda c: c.log_cleaner.stats.last_cleaned) == (t, 0, 0, 5)  # the dirty section [0, 5)
    # the tombstone's batch was written again with a delete horizon: the cleaning's time + delete.retention.ms
    tomb = batches(broker, t)[2]
    assert (tomb.base_offset, tomb.delete_horizon_ms, tomb.records_count) == (4, T0 + 1000 + 5000, 1)
    # the untouched batches are the bytes produced (no horizon, no rewrite)
    assert [h.delete_horizon_ms for h in batches(broker, t)] == [None, None, T0 + 6000, None]


def test_a_tombstone_goes_after_delete_retention_ms(broker):
    t = new_topic(broker)
    produce(broker, t, [(b"k", b"v")])
    produce(broker, t, [(b"k", None)])
    produce(broker, t, [(b"x", b"1")])
    broker.advance(1000)  # first cleaning at T0 + 1000: the tombstone stays, horizon T0 + 6000
    assert contents(broker, t) == [(1, b"k", None), (2, b"x", b"1")]
    broker.advance(3000)
    produce(broker, t, [(b"x", b"2")])  # T0 + 4000, offset 3: offset 2 leaves the active segment
    broker.advance(1000)  # T0 + 5000: the dirty section [2, 3) is cleaned; the horizon is ahead
    assert contents(broker, t) == [(1, b"k", None), (2, b"x", b"1"), (3, b"x", b"2")]
    produce(broker, t, [(b"x", b"3")])  # offset 4
    broker.advance(1000)  # T0 + 6000: x -> 3; the horizon is reached (kept only while now < horizon)
    assert contents(broker, t) == [(3, b"x", b"2"), (4, b"x", b"3")]
    assert state(broker, t) == (0, 5, 5)


def test_no_cleaning_without_dirty_bytes_enough(broker):
    """min.cleanable.dirty.ratio: the dirty section must be more than that share of the log."""
    t = new_topic(broker, **{"min.cleanable.dirty.ratio": "0.5"})
    for v in (b"1", b"2", b"3"):
        produce(broker, t, [(b"k", v)])
    broker.advance(1000)  # dirty [0, 2) of 2 segments: cleaned, the checkpoint is 2
    assert contents(broker, t) == [(1, b"k", b"2"), (2, b"k", b"3")]
    produce(broker, t, [(b"k", b"4")])
    # dirty: segment 2 (one batch) of 2 (offsets 1 and 2): ratio 0.5, not above 0.5
    broker.advance(5000)
    assert contents(broker, t) == [(1, b"k", b"2"), (2, b"k", b"3"), (3, b"k", b"4")]
    produce(broker, t, [(b"k", b"5")])
    broker.advance(1000)  # dirty: 2 of 3 segments
    assert contents(broker, t) == [(3, b"k", b"4"), (4, b"k", b"5")]


def test_min_compaction_lag_keeps_recent_records(broker):
    t = new_topic(broker, **{"min.compaction.lag.ms": "10000"})
    produce(broker, t, [(b"k", b"old")])
    broker.advance(6000)
    produce(broker, t, [(b"k", b"new")])
    produce(broker, t, [(b"k", b"newest")])
    broker.advance(1000)  # T0 + 7000: segment 0 is 7 s old, segment 1 1 s: the first uncleanable is 1
    assert contents(broker, t) == [(0, b"k", b"old"), (1, b"k", b"new"), (2, b"k", b"newest")]
    broker.advance(4000)  # T0 + 11000: segment 0 is past the lag; segment 1 is not: nothing newer to map
    assert contents(broker, t) == [(0, b"k", b"old"), (1, b"k", b"new"), (2, b"k", b"newest")]
    broker.advance(6000)  # T0 + 17000: both segments past the lag: [0, 2) mapped, k -> 1
    assert contents(broker, t) == [(1, b"k", b"new"), (2, b"k", b"newest")]


def test_max_compaction_lag_cleans_below_the_dirty_ratio(broker):
    """A dirty segment whose first batch is older than max.compaction.lag.ms is cleaned whatever the
    ratio (1 here: never by ratio); the active segment of a compacted topic rolls once
    max.compaction.lag.ms has passed (LogConfig.maxSegmentMs), segment.ms being a week."""
    t = new_topic(broker, **{"min.cleanable.dirty.ratio": "1", "internal.segment.bytes": "1000000",
                             "max.compaction.lag.ms": "20000"})
    produce(broker, t, [(b"k", b"1")])
    produce(broker, t, [(b"k", b"2")])
    broker.advance(10000)
    produce(broker, t, [(b"z", b"0")])
    broker.advance(10000)  # T0 + 20000: one segment, the active one: nothing to clean
    assert len(contents(broker, t)) == 3
    produce(broker, t, [(b"k", b"3")])  # the segment made at T0 is 20 s old: it rolls
    assert broker.call(lambda c: [s.base_offset for s in c.metadata.topics[t].partitions[0].log.segments]) == [0, 3]
    broker.advance(1000)  # its first batch is 21 s old, 1 s past the lag
    assert contents(broker, t) == [(1, b"k", b"2"), (2, b"z", b"0"), (3, b"k", b"3")]


def test_segments_are_cleaned_in_groups_of_segment_bytes(broker):
    """Cleaner.groupSegmentsBySize: consecutive segments whose sizes add up to segment.bytes or less are
    cleaned into one."""
    one = len(build_batch([(b"k0", b"v0", [])], base_timestamp=T0))
    t = new_topic(broker, **{"internal.segment.bytes": str(2 * one), "segment.ms": "100",
                             "min.cleanable.dirty.ratio": "0.99"})
    for k, v in [(b"k0", b"v0"), (b"k1", b"v1"), (b"k2", b"v2"), (b"k3", b"v3"), (b"k0", b"v9"), (b"z", b"0")]:
        produce(broker, t, [(k, v)])
        broker.advance(100)  # segment.ms: the next batch starts a segment
    segments = broker.call(lambda c: [(s.base_offset, len(s.batches))
                                      for s in c.metadata.topics[t].partitions[0].log.segments])
    assert segments == [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1), (5, 1)]
    broker.advance(400)  # T0 + 1000: groups [0, 1], [2, 3] and [4] (5 is active); k0@0 goes
    segments = broker.call(lambda c: [(s.base_offset, len(s.batches))
                                      for s in c.metadata.topics[t].partitions[0].log.segments])
    assert segments == [(0, 1), (2, 2), (4, 1), (5, 1)]
    assert contents(broker, t) == [(1, b"k1", b"v1"), (2, b"k2", b"v2"), (3, b"k3", b"v3"), (4, b"k0", b"v9"),
                                   (5, b"z", b"0")]


def test_a_batch_that_loses_records_is_written_again_with_its_offsets(broker):
    """MemoryRecords.buildRetainedRecordsInto: the same base and last offset (the count drops), the
    same compression; a consumer reads the offsets with gaps."""
    t = new_topic(broker)
    plain = build_batch([(b"a", b"1", []), (b"b", b"1", []), (b"c", b"1", [])], base_timestamp=T0)
    produce(broker, t, [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")], attributes=1,
            payload=gzip.compress(plain[61:]))
    produce(broker, t, [(b"b", b"2")])
    produce(broker, t, [(b"z", b"0")])
    broker.advance(1000)
    first = batches(broker, t)[0]
    assert (first.base_offset, first.last_offset_delta, first.records_count, first.compression) == (0, 2, 2, 1)
    assert contents(broker, t) == [(0, b"a", b"1"), (2, b"c", b"1"), (3, b"b", b"2"), (4, b"z", b"0")]


def test_fetch_and_list_offsets_over_gaps(broker):
    t = new_topic(broker)
    for k, v in [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"b", b"2"), (b"c", b"1")]:
        produce(broker, t, [(k, v)])
    broker.advance(1000)
    assert [o for o, *_ in contents(broker, t)] == [2, 3, 4]
    with RawKafkaClient.connect(broker.bootstrap_servers) as c:
        lo = c.request(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": t, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": ts}
                                       for ts in (-2,)]}]}).topics[0].partitions[0]
        assert (lo.error_code, lo.offset) == (E.none, 0)  # earliest: the log start offset, not the first record
        tid = broker.call(lambda cl: cl.metadata.topics[t].topic_id)
        r = c.request(1, 12, {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                              "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                                  {"topic": t, "topic_id": tid, "partitions": [
                                      {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 1,
                                       "last_fetched_epoch": -1, "log_start_offset": -1,
                                       "partition_max_bytes": 1 << 20}]}],
                              "forgotten_topics_data": [], "rack_id": ""}).responses[0].partitions[0]
        assert r.error_code == E.none and r.log_start_offset == 0
        assert parse_header(r.records).base_offset == 2  # offset 1 is gone: the next batch


def test_aborted_transactions_and_their_markers(broker):
    """CleanedTransactionMetadata: the aborted transaction's batch goes at once; its ABORT marker stays
    while a batch of it does, then gets a delete horizon and goes after it; the COMMIT marker of a
    transaction whose batches are kept stays."""
    t = new_topic(broker)

    def append(records, txn):
        batch = build_batch([(k, v, []) for k, v in records], base_timestamp=now(broker), producer_id=7,
                            producer_epoch=0, base_sequence=append.seq, attributes=0x10 if txn else 0)
        append.seq += len(records)

        def go(c):
            rm = c.broker().replica_manager
            out = []
            rm.append_records([ProduceEntry(c.metadata.topics[t].partitions[0], batch)], 1, 5000, 9, out.extend)
            return out[0].error
        assert broker.call(go) == E.none
    append.seq = 0

    def marker(commit):
        assert broker.call(lambda c: c.broker().replica_manager.append_txn_marker(
            t, 0, 7, 0, commit, 0)) == E.none

    append([(b"k1", b"aborted")], True)   # 0
    marker(False)                          # 1: ABORT
    append([(b"k9", b"kept")], True)      # 2
    marker(True)                           # 3: COMMIT
    produce(broker, t, [(b"k1", b"b")])    # 4
    produce(broker, t, [(b"k5", b"1")])    # 5: the active segment
    broker.advance(1000)
    # offset 0 is aborted (and not producer 7's last data batch, 2 is): deleted; the ABORT marker stays
    # (a batch of its transaction was seen), in the cleaned index; the COMMIT marker stays
    assert contents(broker, t) == [(1, "ABORT"), (2, b"k9", b"kept"), (3, "COMMIT"), (4, b"k1", b"b"),
                                   (5, b"k5", b"1")]
    aborted = broker.call(lambda c: [(a.producer_id, a.first_offset, a.last_offset)
                                     for a in c.metadata.topics[t].partitions[0].log.aborted_txns])
    assert aborted == [(7, 0, 1)]
    produce(broker, t, [(b"k5", b"2")])    # 6
    broker.advance(1000)                   # T0 + 2000: no batch of the aborted transaction is left
    marker_batch = batches(broker, t)[0]
    assert (marker_batch.base_offset, marker_batch.delete_horizon_ms) == (1, T0 + 2000 + 5000)
    assert broker.call(lambda c: c.metadata.topics[t].partitions[0].log.aborted_txns) == []
    assert contents(broker, t) == [(1, "ABORT"), (2, b"k9", b"kept"), (3, "COMMIT"), (4, b"k1", b"b"),
                                   (5, b"k5", b"1"), (6, b"k5", b"2")]
    produce(broker, t, [(b"k5", b"3")])    # 7
    broker.advance(5000)                   # T0 + 7000: cleaned at T0 + 3000 (k5@5 goes), the marker kept
    assert contents(broker, t)[:1] == [(1, "ABORT")]
    produce(broker, t, [(b"k5", b"4")])    # 8
    broker.advance(1000)                   # T0 + 8000: cleaned again, past the marker's horizon
    assert contents(broker, t) == [(2, b"k9", b"kept"), (3, "COMMIT"), (4, b"k1", b"b"), (7, b"k5", b"3"),
                                   (8, b"k5", b"4")]


def test_the_last_batch_of_an_active_producer_stays_empty(broker):
    """BatchRetention.RETAIN_EMPTY: the producer state needs its last batch's offsets."""
    t = new_topic(broker)

    def go(c, batch):
        out = []
        c.broker().replica_manager.append_records([ProduceEntry(c.metadata.topics[t].partitions[0], batch)],
                                                  1, 5000, 9, out.extend)
        return out[0].error
    b0 = build_batch([(b"k", b"1", [])], base_timestamp=T0, producer_id=3, producer_epoch=0, base_sequence=0)
    assert broker.call(lambda c: go(c, b0)) == E.none
    produce(broker, t, [(b"k", b"2")])
    produce(broker, t, [(b"z", b"0")])
    broker.advance(1000)
    first = batches(broker, t)[0]
    assert (first.base_offset, first.records_count, first.producer_id, first.base_sequence, first.max_timestamp) \
        == (0, 0, 3, 0, T0)
    assert contents(broker, t) == [(1, b"k", b"2"), (2, b"z", b"0")]


def test_retention_of_compacted_topics(broker):
    """compact alone ignores retention.ms; compact,delete deletes old segments in the cleaner's pass."""
    keep = new_topic(broker, **{"retention.ms": "2000"})
    both = new_topic(broker, **{"retention.ms": "2000", "cleanup.policy": "compact,delete"})
    for t in (keep, both):
        produce(broker, t, [(b"a", b"1")])
        produce(broker, t, [(b"b", b"1")])
    # past retention.ms by far, and several cleaner passes (log.cleaner.backoff.ms 1000): a day of them
    # took 6 s idle and timed out under load
    broker.advance(60_000)
    assert state(broker, keep)[0] == 0 and len(contents(broker, keep)) == 2
    # compact,delete: the first segment is past retention.ms (the active one is never deleted while it is
    # the last, non-empty, below the high watermark: here it is also past, and goes with a new one rolled)
    assert state(broker, both) == (2, 2, 2) and contents(broker, both) == []


def test_a_log_whose_cleaning_fails_is_left_alone(broker, caplog):
    t = new_topic(broker)
    produce(broker, t, [(b"k", b"1")])
    produce(broker, t, [(b"k", b"2")])

    def corrupt(c):
        seg = c.metadata.topics[t].partitions[0].log.segments[0]
        raw = bytearray(seg.batches[0])
        raw[-3:] = b"\xff\xff\xff"  # the record's varints run past its end
        seg.batches[0] = bytes(raw)
    broker.call(corrupt)
    broker.advance(1000)
    assert "Marking its partition as uncleanable" in caplog.text
    assert broker.call(lambda c: c.log_cleaner.stats.cleanings) == 0
    other = new_topic(broker)
    produce(broker, other, [(b"k", b"1")])
    produce(broker, other, [(b"k", b"2")])
    produce(broker, other, [(b"z", b"0")])
    broker.advance(1000)  # other logs are still cleaned
    assert contents(broker, other) == [(1, b"k", b"2"), (2, b"z", b"0")]
