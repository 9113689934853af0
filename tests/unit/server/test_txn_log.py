"""The log side of transactions: transactional batches, COMMIT/ABORT markers, the last stable offset,
the aborted-transaction index and read_committed Fetch (Kafka's ProducerStateManager, UnifiedLog,
TransactionIndex, LocalLog.read with TXN_COMMITTED)."""

from __future__ import annotations

import select
import struct
import time
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockbroker import ManualClock, MockBroker
from mockbroker.storage.log import AbortedTxn
from mockbroker.server.replica_manager import ProduceEntry, VerificationConfig
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import (
    CONTROL_FLAG,
    TRANSACTIONAL_FLAG,
    build_batch,
    build_end_txn_marker,
    parse_header,
    validate_batch,
)

E = ErrorCode
# these tests append transactional batches with no transaction at the coordinator: KIP-890's
# produce-time verification is off (tests/unit/txn/test_txn_verification.py covers it)
NO_VERIFY = {"transaction.partition.verification.enable": False}


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce(c, topic, pid=-1, epoch=-1, seq=-1, n=1, transactional=False, partition=0, acks=1, value=b"v"):
    batch = build_batch([(b"k", value, [])] * n, base_timestamp=1, producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, attributes=TRANSACTIONAL_FLAG if transactional else 0)
    body = {"acks": acks, "timeout": 1000, "transactional_id": "t" if transactional else None,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    return c.request(0, 9, body).responses[0].partition_responses[0]


def txn(c, topic, pid, seq, n=1, epoch=0, partition=0):
    r = produce(c, topic, pid, epoch, seq, n, transactional=True, partition=partition)
    assert r.error_code == 0, r
    return r.base_offset


def rm(cluster, topic, partition=0):
    p = cluster.metadata.partition(topic, partition)
    return cluster.brokers[p.leader_id].replica_manager


def marker(b, topic, pid, commit, epoch=0, partition=0, coordinator_epoch=0, transaction_version=0):
    return b.call(lambda cl: rm(cl, topic, partition).append_txn_marker(
        topic, partition, pid, epoch, commit, coordinator_epoch, transaction_version=transaction_version))


def log_of(b, topic, partition=0):
    return b.call(lambda cl: cl.metadata.partition(topic, partition).log)


def lso(b, topic, partition=0):
    return b.call(lambda cl: cl.metadata.partition(topic, partition).log.last_stable_offset)


def fetch(c, topic, offset=0, isolation=1, partition=0, max_wait=0, max_bytes=1 << 20, version=12):
    body = {"replica_id": -1, "max_wait": max_wait, "min_bytes": 1, "max_bytes": max_bytes,
            "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": offset, "partition_max_bytes": max_bytes,
                 "log_start_offset": -1, "current_leader_epoch": -1}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    return c.request(1, version, body).responses[0].partitions[0]


def batches(records):
    out, pos = [], 0
    while pos + 61 <= len(records):
        h = parse_header(records, pos)
        if pos + h.size_bytes > len(records):
            break
        out.append((h, bytes(records[pos:pos + h.size_bytes])))
        pos += h.size_bytes
    return out


def control_type(batch: bytes) -> int:
    """The ControlRecordType of a one-record control batch (the key's type field)."""
    body = batch[61:]
    # record: length varint, attributes int8, ts delta varint, offset delta varint, key length varint, key
    assert body[1] == 0 and body[2] == 0 and body[3] == 0 and body[4] == 8  # zigzag(4) == 8
    version, typ = struct.unpack_from(">hh", body, 5)
    assert version == 0
    return typ


def committed_view(records, aborted) -> list[int]:
    """The offsets a read_committed consumer returns, by the client's algorithm (Kafka's
    CompletedFetch: aborted producers become active at their first offset, skipped until their
    ABORT marker; control batches are never returned)."""
    pending = sorted((a.first_offset, a.producer_id) for a in aborted)
    active: set[int] = set()
    out = []
    for h, raw_batch in batches(records):
        while pending and pending[0][0] <= h.base_offset + h.last_offset_delta:
            active.add(pending.pop(0)[1])
        if h.is_control:
            if control_type(raw_batch) == 0:
                active.discard(h.producer_id)
            continue
        if h.is_transactional and h.producer_id in active:
            continue
        out.extend(range(h.base_offset, h.base_offset + h.last_offset_delta + 1))
    return out


# -- control batch bytes ---------------------------------------------------------------------------
@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_marker_bytes_field_by_field(commit):
    b = build_end_txn_marker(7, 3, 42, commit, 1_700_000_000_123)
    h = parse_header(b)
    assert h.magic == 2 and h.base_offset == 0
    assert h.attributes & (TRANSACTIONAL_FLAG | CONTROL_FLAG) == TRANSACTIONAL_FLAG | CONTROL_FLAG
    assert h.attributes & 0x07 == 0 and h.attributes & 0x08 == 0  # no compression, CreateTime
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (7, 3, -1)
    assert (h.records_count, h.last_offset_delta) == (1, 0)
    assert h.base_timestamp == h.max_timestamp == 1_700_000_000_123
    body = b[61:]
    # one record: length, attributes 0, timestamp delta 0, offset delta 0, key (4 bytes), value (6), 0 headers
    assert body[0] == 2 * (len(body) - 1)  # zigzag length of the rest
    assert body[1:4] == b"\0\0\0"
    assert body[4] == 8 and struct.unpack_from(">hh", body, 5) == (0, 1 if commit else 0)
    assert body[9] == 12 and struct.unpack_from(">hi", body, 10) == (0, 42)
    assert body[16] == 0 and len(body) == 17
    # the CRC is valid: the client-side validator refuses it only because it is a control batch
    with pytest.raises(Exception, match="control records"):
        validate_batch(memoryview(b), 1 << 20)
    assert control_type(b) == (1 if commit else 0)


# -- over the wire ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def b():
    with MockBroker(config=NO_VERIFY) as broker:
        yield broker


def test_commit_moves_the_lso_and_read_committed_sees_the_records(b, c):
    t = topic_name("commit")
    b.create_topic(t, 1)
    assert txn(c, t, 1000, 0, n=2) == 0
    assert txn(c, t, 1000, 2, n=1) == 2
    log = log_of(b, t)
    assert (log.high_watermark, lso(b, t)) == (3, 0)
    p = fetch(c, t)
    assert (p.high_watermark, p.last_stable_offset, p.records, p.aborted_transactions) == (3, 0, b"", ())
    assert marker(b, t, 1000, commit=True) == E.none
    assert lso(b, t) == 4
    p = fetch(c, t)
    assert p.last_stable_offset == 4 and p.aborted_transactions == ()
    hs = [h for h, _ in batches(p.records)]
    assert [(h.base_offset, h.is_control) for h in hs] == [(0, False), (2, False), (3, True)]
    assert committed_view(p.records, []) == [0, 1, 2]


def test_abort_enters_the_index_and_read_committed_gets_it(b, c):
    t = topic_name("abort")
    b.create_topic(t, 1)
    txn(c, t, 2000, 0, n=2)
    assert marker(b, t, 2000, commit=False) == E.none
    assert lso(b, t) == 3
    assert log_of(b, t).aborted_txns == [AbortedTxn(2000, 0, 2, 3)]
    p = fetch(c, t)
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(2000, 0)]
    assert committed_view(p.records, log_of(b, t).aborted_txns) == []
    # read_uncommitted: everything, control batch included, aborted_transactions null
    p = fetch(c, t, isolation=0)
    assert p.aborted_transactions is None
    assert [(h.base_offset, h.is_control) for h, _ in batches(p.records)] == [(0, False), (2, True)]
    # a new transaction of the same producer after the marker
    txn(c, t, 2000, 2, n=1)
    assert lso(b, t) == 3
    assert marker(b, t, 2000, commit=True) == E.none
    p = fetch(c, t)
    assert committed_view(p.records, log_of(b, t).aborted_txns) == [3]
    # a fetch past the aborted transaction does not get it
    assert fetch(c, t, offset=3).aborted_transactions == ()


def test_interleaved_transactions_of_two_producers(b, c):
    t = topic_name("interleave")
    b.create_topic(t, 1)
    txn(c, t, 1, 0)          # 0: p1 begins
    txn(c, t, 2, 0)          # 1: p2 begins
    txn(c, t, 1, 1)          # 2
    assert lso(b, t) == 0
    assert marker(b, t, 1, commit=False) == E.none   # 3: p1 aborted while p2 is open
    assert lso(b, t) == 1
    # the aborted entry records the LSO of that moment: p2's first offset (lastStableOffset(CompletedTxn))
    assert log_of(b, t).aborted_txns == [AbortedTxn(1, 0, 3, 1)]
    p = fetch(c, t)
    assert p.last_stable_offset == 1
    assert [h.base_offset for h, _ in batches(p.records)] == [0]
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(1, 0)]
    txn(c, t, 2, 1)          # 4
    assert marker(b, t, 2, commit=True) == E.none    # 5
    assert lso(b, t) == 6
    p = fetch(c, t)
    assert committed_view(p.records, p.aborted_transactions) == [1, 4]
    # a fetch from offset 4 still overlaps nothing aborted; from 2 it overlaps p1's (last offset 3)
    assert fetch(c, t, offset=4).aborted_transactions == ()
    assert [a.producer_id for a in fetch(c, t, offset=2).aborted_transactions] == [1]


def test_non_transactional_write_while_open_is_invalid_txn_state(b, c):
    t = topic_name("mixed")
    b.create_topic(t, 1)
    txn(c, t, 5, 0)
    r = produce(c, t, 5, 0, 1)
    assert r.error_code == E.invalid_txn_state
    # a plain (non-idempotent) producer still appends, and is visible once the LSO passes it
    assert produce(c, t).error_code == 0
    assert lso(b, t) == 0
    marker(b, t, 5, commit=True)
    assert committed_view(fetch(c, t).records, []) == [0, 1]


def test_marker_epoch_and_coordinator_epoch_checks(b, c):
    t = topic_name("epochs")
    b.create_topic(t, 1)
    txn(c, t, 9, 0, epoch=3)
    assert marker(b, t, 9, True, epoch=2) == E.invalid_producer_epoch
    # TV2: the coordinator bumps the epoch for the marker; an equal epoch with the txn open is refused
    assert marker(b, t, 9, True, epoch=3, transaction_version=2) == E.invalid_producer_epoch
    assert marker(b, t, 9, True, epoch=4, coordinator_epoch=5, transaction_version=2) == E.none
    # TV2 retry of the same marker (no transaction open): written again
    assert marker(b, t, 9, True, epoch=4, coordinator_epoch=5, transaction_version=2) == E.none
    assert marker(b, t, 9, False, epoch=4, coordinator_epoch=4) == E.transaction_coordinator_fenced
    assert lso(b, t) == log_of(b, t).log_end_offset == 3
    # an idle producer's marker (no transaction) moves nothing and enters no index
    assert marker(b, t, 77, False) == E.none
    assert log_of(b, t).aborted_txns == []
    assert b.call(lambda cl: rm(cl, t).append_txn_marker("no-such-topic", 0, 9, 4, True, 5)) \
        == E.unknown_topic_or_partition


def test_txn_verifier_hook(b, c):
    t = topic_name("verify")
    b.create_topic(t, 1)
    seen = []

    def verifier(txn_id, pid, epoch, partitions, produce_version, callback):
        seen.extend((txn_id, topic, partition, pid, epoch) for topic, partition in partitions)
        callback({tp: E.invalid_txn_state for tp in partitions} if pid == 66 else {})

    def hook(cl, verifier, verification):
        manager = rm(cl, t)
        before = manager.txn_verifier, manager.verification
        manager.txn_verifier, manager.verification = verifier, verification
        return before

    # the module's broker has verification off: on for this topic's leader while the hook is in
    before = b.call(lambda cl: hook(cl, verifier, VerificationConfig(enabled=True)))
    try:
        assert produce(c, t, 66, 0, 0, transactional=True).error_code == E.invalid_txn_state
        assert txn(c, t, 67, 0) == 0
        assert txn(c, t, 67, 1) == 1  # the transaction is open here: not verified again
        assert seen == [("t", t, 0, 66, 0), ("t", t, 0, 67, 0)]
    finally:
        b.call(lambda cl: hook(cl, *before))


def test_list_offsets_latest_read_committed_is_the_lso(b, c):
    t = topic_name("lo")
    b.create_topic(t, 1)
    produce(c, t)
    txn(c, t, 11, 0, n=3)

    def latest(isolation):
        body = {"replica_id": -1, "isolation_level": isolation, "topics": [
            {"name": t, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]}
        return c.request(2, 7, body).topics[0].partitions[0].offset

    assert (latest(0), latest(1)) == (4, 1)
    marker(b, t, 11, commit=False)
    assert (latest(0), latest(1)) == (5, 5)


def test_retention_drops_index_entries_below_the_log_start(b, c):
    t = topic_name("ret")
    b.create_topic(t, 1)
    txn(c, t, 3, 0)
    marker(b, t, 3, commit=False)
    txn(c, t, 3, 1)
    marker(b, t, 3, commit=False)

    def shrink(cl):
        log = cl.metadata.partition(t, 0).log
        # roll segments by hand so that retention can drop the first transaction's
        from mockbroker.storage.log import LogSegment
        seg = log.segments[0]
        first = LogSegment(0, seg.created_ms, seg.batches[:2], seg.last_offsets[:2], seg.max_timestamps[:2],
                           sum(len(x) for x in seg.batches[:2]), max(seg.max_timestamps[:2]))
        rest = LogSegment(2, seg.created_ms, seg.batches[2:], seg.last_offsets[2:], seg.max_timestamps[2:],
                          sum(len(x) for x in seg.batches[2:]), max(seg.max_timestamps[2:]))
        log.segments = [first, rest]
        log._delete_while(lambda s, _next: s is first, 0)
        return log.log_start_offset, log.aborted_txns

    start, aborted = b.call(shrink)
    assert start == 2 and aborted == [AbortedTxn(3, 2, 3, 4)]


def test_marker_counts_when_the_high_watermark_passes_it():
    """acks=-1 for the marker: ``on_done`` once the follower has it; the LSO moves then too."""
    with MockBroker(config={"mock.num.brokers": 2, **NO_VERIFY}, clock=ManualClock()) as mb:
        t = topic_name("acks")
        mb.create_topic(t, 1, replication_factor=2)
        mb.set_replication_lag(1000)
        batch = build_batch([(b"k", b"v", [])], base_timestamp=1, producer_id=4, producer_epoch=0,
                            base_sequence=0, attributes=TRANSACTIONAL_FLAG)
        done: list = []

        def append(cl):
            p = cl.metadata.partition(t, 0)
            rm(cl, t).append_records([ProduceEntry(p, batch)], 1, 1000, 9, lambda rs: None, "t")
            return rm(cl, t).append_txn_marker(t, 0, 4, 0, True, 0, on_done=done.append)

        assert mb.call(append) == E.none
        time.sleep(0.05)
        assert done == [] and lso(mb, t) == 0  # not replicated yet: the LSO waits for the HW
        mb.advance(1000)
        deadline = time.monotonic() + 5
        while not done and time.monotonic() < deadline:
            time.sleep(0.01)
        assert done == [E.none] and lso(mb, t) == 2


def test_long_poll_read_committed_fetch_is_answered_when_the_marker_lands():
    with MockBroker(config=NO_VERIFY, clock=ManualClock()) as mb:
        t = topic_name("poll")
        mb.create_topic(t, 1)
        with RawKafkaClient.connect(mb.bootstrap_servers) as c:
            txn(c, t, 8, 0, n=2)
            body = {"replica_id": -1, "max_wait": 10_000, "min_bytes": 1, "max_bytes": 1 << 20,
                    "isolation_level": 1, "session_id": 0, "session_epoch": -1,
                    "topics": [{"topic": t, "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
                         "log_start_offset": -1, "current_leader_epoch": -1}]}],
                    "forgotten_topics_data": [], "rack_id": ""}
            corr = c.send(1, 12, body)
            deadline = time.monotonic() + 5
            while mb.purgatory_gauges()["Fetch"]["NumDelayedOperations"] != 1:
                assert time.monotonic() < deadline
                time.sleep(0.005)
            assert not select.select([c.sock], [], [], 0.2)[0]  # data below the HW, but not stable: waits
            assert marker(mb, t, 8, commit=True) == E.none
            assert select.select([c.sock], [], [], 5)[0]
            p = c.response(1, 12, corr).responses[0].partitions[0]
            assert p.last_stable_offset == 3
            assert committed_view(p.records, []) == [0, 1]


# -- a model: which offsets a read_committed reader sees -------------------------------------------
OPS = st.lists(st.one_of(
    st.tuples(st.just("data"), st.integers(0, 2), st.integers(1, 3)),
    st.tuples(st.just("plain"), st.just(0), st.integers(1, 2)),
    st.tuples(st.just("end"), st.integers(0, 2), st.booleans()),
), max_size=14)


@settings(max_examples=40, deadline=None)
@given(OPS)
def test_model_read_committed_visibility(b, ops):
    t = topic_name("model")
    b.create_topic(t, 1)
    seq = {0: 0, 1: 0, 2: 0}
    open_first: dict[int, int] = {}          # producer -> first offset of its open transaction
    records: dict[int, list[int]] = {}       # producer -> offsets of its open transaction's records
    visible: list[int] = []
    end = expected_lso = 0
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        for op, who, arg in ops:
            pid = 500 + who
            if op == "data":
                base = txn(c, t, pid, seq[who], n=arg)
                assert base == end
                seq[who] += arg
                open_first.setdefault(who, base)
                records.setdefault(who, []).extend(range(base, base + arg))
                end += arg
            elif op == "plain":
                assert produce(c, t, n=arg).error_code == 0
                visible.extend(range(end, end + arg))
                end += arg
            else:
                assert marker(b, t, pid, commit=arg) == E.none
                if who in open_first:
                    if arg:
                        visible.extend(records[who])
                    del open_first[who], records[who]
                end += 1
            expected_lso = min(open_first.values(), default=end)
            assert lso(b, t) == expected_lso
        p = fetch(c, t)
        assert p.last_stable_offset == expected_lso
        got = committed_view(p.records, p.aborted_transactions)
        assert got == sorted(v for v in visible if v < expected_lso)
        # read_uncommitted reads every batch up to the high watermark
        assert sum(h.last_offset_delta + 1 for h, _ in batches(fetch(c, t, isolation=0).records)) == end


# -- a real client: kafka-python as a read_committed consumer ----------------------------------------
def test_kafka_python_read_committed_skips_aborted_and_control_records(b, c):
    kafka = pytest.importorskip("kafka")
    t = topic_name("kpy")
    b.create_topic(t, 1)
    produce(c, t, value=b"plain-0")
    for pid in (31, 32):
        assert produce(c, t, pid, 0, 0, n=2, transactional=True, value=f"txn-{pid}".encode()).error_code == 0
    assert produce(c, t, 31, 0, 2, transactional=True, value=b"txn-31").error_code == 0
    assert marker(b, t, 31, commit=False) == E.none
    assert marker(b, t, 32, commit=True) == E.none
    produce(c, t, value=b"plain-1")
    open_pid = 33
    assert produce(c, t, open_pid, 0, 0, transactional=True, value=b"open").error_code == 0  # stays open

    def consume(isolation):
        consumer = kafka.KafkaConsumer(bootstrap_servers=b.bootstrap_servers, isolation_level=isolation,
                                       auto_offset_reset="earliest", enable_auto_commit=False,
                                       consumer_timeout_ms=1500)
        try:
            consumer.assign([kafka.TopicPartition(t, 0)])
            return [(m.offset, m.value) for m in consumer]
        finally:
            consumer.close()

    assert consume("read_committed") == [(0, b"plain-0"), (3, b"txn-32"), (4, b"txn-32"), (8, b"plain-1")]
    # read_uncommitted: every data record, the aborted and open ones too, never the control records
    assert [o for o, _ in consume("read_uncommitted")] == [0, 1, 2, 3, 4, 5, 8, 9]


def test_producer_state_errors_carry_no_message(b, c):
    """LogAppendResult.errorMessage: OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH and
    INVALID_TXN_STATE from the producer state are answered without their exception's message (Kafka
    logs it; hasCustomErrorMessage is false for them)."""
    t = topic_name("nomsg")
    b.create_topic(t, 1)
    assert produce(c, t, 31, 1, 0).error_code == E.none
    for r, error in ((produce(c, t, 31, 1, 5), E.out_of_order_sequence_number),
                     (produce(c, t, 31, 0, 1), E.invalid_producer_epoch)):
        assert (r.error_code, r.error_message) == (error, None)
    txn(c, t, 32, 0)
    r = produce(c, t, 32, 0, 1)  # a plain batch while its transaction is open
    assert (r.error_code, r.error_message) == (E.invalid_txn_state, None)
