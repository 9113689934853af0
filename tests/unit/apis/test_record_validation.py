"""LogValidator's per-record checks on produce: a compacted topic refuses a record without a key,
a CreateTime topic a timestamp outside [now - message.timestamp.before.max.ms, now +
message.timestamp.after.max.ms]; each refused record is named in the partition's RecordErrors and
the whole batch is refused (``LogValidator.validateRecord`` / ``processRecordErrors``).

Time is a ManualClock started at NOW, so the bounds are exact.  The expected messages are Kafka
4.4's (``LogValidator.validateKey`` / ``validateTimestamp``, ``ProduceResponse.RecordError.toString``).
"""

from __future__ import annotations

import gzip
import struct

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import CorruptRecordBatch, ErrorCode
from protocol.records import (
    CRC_OFFSET,
    LONG_MAX,
    build_batch,
    check_record_count,
    compute_crc,
    parse_header,
    record_fields,
    wrap64,
)

E = ErrorCode
NOW = 1_800_000_000_000
HOUR = 3_600_000


@pytest.fixture(scope="module")
def broker():
    with MockBroker(clock=ManualClock(start_wall_ms=NOW)) as b:
        b.create_topic("compacted", 1, configs={"cleanup.policy": "compact"})
        b.create_topic("compact-delete", 1, configs={"cleanup.policy": "compact,delete"})
        b.create_topic("plain", 1)
        b.create_topic("narrow", 1, configs={"message.timestamp.before.max.ms": "1000",
                                             "message.timestamp.after.max.ms": "2000"})
        b.create_topic("narrow-compacted", 1, configs={"cleanup.policy": "compact",
                                                       "message.timestamp.after.max.ms": "0"})
        b.create_topic("append-time", 1, configs={"message.timestamp.type": "LogAppendTime",
                                                  "message.timestamp.after.max.ms": "0"})
        b.create_topic("min-isr", 1, configs={"cleanup.policy": "compact", "min.insync.replicas": "2"})
        yield b


@pytest.fixture(scope="module")
def client(broker):
    with RawKafkaClient.connect(broker.bootstrap_servers) as c:
        yield c


def produce(client, topic, records, acks=1):
    body = {"acks": acks, "timeout": 5000, "topic_data": [{"name": topic, "partition_data": [
        {"index": 0, "records": records}]}]}
    return client.request(0, 9, body).responses[0].partition_responses[0]


def errors_of(r):
    return [(e.batch_index, e.batch_index_error_message) for e in r.record_errors]


def no_key(tp):
    return f"Compacted topic cannot accept message without key in topic partition {tp}"


def out_of_range(ts, offset, before, after):
    return (f"Timestamp {ts} of message with offset {offset} is out of range. The timestamp should be within "
            f"[{wrap64(NOW - before)}, {wrap64(NOW + after)}]")


def test_a_record_without_a_key_on_a_compacted_topic(broker, client):
    before = broker.log_end_offset("compacted", 0)
    batch = build_batch([(b"k0", b"a", []), (None, b"b", []), (b"k2", b"c", []), (None, None, [])],
                        base_timestamp=NOW)
    r = produce(client, "compacted", batch)
    assert r.error_code == E.invalid_record
    assert errors_of(r) == [(1, no_key("compacted-0")), (3, no_key("compacted-0"))]
    assert r.error_message == (
        "One or more records have been rejected due to 2 record errors in total, and only showing the first "
        f"three errors at most: [RecordError(batchIndex=1, message='{no_key('compacted-0')}'), "
        f"RecordError(batchIndex=3, message='{no_key('compacted-0')}')]")
    assert (r.base_offset, r.log_start_offset) == (-1, 0)
    assert broker.log_end_offset("compacted", 0) == before  # the whole batch is refused
    # an empty key is a key (DefaultRecord: keySize >= 0); keyed records are taken
    assert produce(client, "compacted", build_batch([(b"", b"e", []), (b"k", b"v", [])], base_timestamp=NOW)
                   ).error_code == E.none
    assert broker.log_end_offset("compacted", 0) == before + 2


def test_only_the_first_three_errors_are_in_the_message(broker, client):
    r = produce(client, "compact-delete", build_batch([(None, b"x", [])] * 5, base_timestamp=NOW))
    assert r.error_code == E.invalid_record
    assert [i for i, _ in errors_of(r)] == [0, 1, 2, 3, 4]
    assert r.error_message.startswith("One or more records have been rejected due to 5 record errors in total")
    assert r.error_message.count("RecordError(") == 3


def test_a_keyless_record_in_a_compressed_batch(broker, client):
    plain = build_batch([(b"k", b"a", []), (None, b"b", [])], base_timestamp=NOW)
    gz = build_batch([(b"k", b"a", []), (None, b"b", [])], base_timestamp=NOW, attributes=1,
                     payload=gzip.compress(plain[61:]))
    r = produce(client, "compacted", gz)
    assert (r.error_code, errors_of(r)) == (E.invalid_record, [(1, no_key("compacted-0"))])


def test_keys_are_not_required_on_a_delete_topic(broker, client):
    assert produce(client, "plain", build_batch([(None, b"v", [])], base_timestamp=NOW)).error_code == E.none


def test_timestamps_out_of_range_are_named(broker, client):
    before_ms, after_ms = 1000, 2000
    stamps = [NOW, NOW - 1000, NOW - 1001, NOW + 2000, NOW + 2001, -1]
    batch = build_batch([(None, b"%d" % i, []) for i in range(6)], base_timestamp=NOW, timestamps=stamps)
    r = produce(client, "narrow", batch)
    assert r.error_code == E.invalid_timestamp
    assert r.error_message == "One or more records have been rejected due to invalid timestamp"
    # -1 (no timestamp) is not checked; the bounds are inclusive
    assert errors_of(r) == [(2, out_of_range(NOW - 1001, 2, before_ms, after_ms)),
                            (4, out_of_range(NOW + 2001, 4, before_ms, after_ms))]
    assert broker.log_end_offset("narrow", 0) == 0
    ok = build_batch([(None, b"a", []), (None, b"b", [])], base_timestamp=NOW, timestamps=[NOW - 1000, NOW + 2000])
    assert produce(client, "narrow", ok).error_code == E.none


def test_a_record_older_than_its_batch_base_timestamp(broker, client):
    """A record's timestamp delta may be negative (a producer's later records may carry earlier
    timestamps): the base and max timestamps in range do not make every record so."""
    batch = build_batch([(None, b"a", []), (None, b"b", [])], base_timestamp=NOW, timestamps=[NOW, NOW - 5000])
    h = parse_header(batch)
    assert (h.base_timestamp, h.max_timestamp) == (NOW, NOW)
    r = produce(client, "narrow", batch)
    assert errors_of(r) == [(1, out_of_range(NOW - 5000, 1, 1000, 2000))]


def test_the_default_refuses_an_hour_ahead(broker, client):
    r = produce(client, "plain", build_batch([(None, b"v", [])], base_timestamp=NOW + HOUR + 1))
    assert r.error_code == E.invalid_timestamp
    # before.max.ms is Long.MAX_VALUE: now - before does not wrap, now + after does not either
    assert errors_of(r) == [(0, out_of_range(NOW + HOUR + 1, 0, LONG_MAX, HOUR))]
    assert produce(client, "plain", build_batch([(None, b"v", [])], base_timestamp=NOW + HOUR)).error_code == E.none
    assert produce(client, "plain", build_batch([(None, b"v", [])], base_timestamp=0)).error_code == E.none


def test_a_key_error_and_a_timestamp_error_together(broker, client):
    """Each record gets at most one error, the key's first; one timestamp error makes the partition's
    error INVALID_TIMESTAMP, the key errors still listed."""
    batch = build_batch([(None, b"a", []), (b"k", b"b", [])], base_timestamp=NOW, timestamps=[NOW + 5, NOW + 7])
    r = produce(client, "narrow-compacted", batch)
    assert r.error_code == E.invalid_timestamp
    assert errors_of(r) == [(0, no_key("narrow-compacted-0")), (1, out_of_range(NOW + 7, 1, LONG_MAX, 0))]


def test_log_append_time_topics_do_not_check_timestamps(broker, client):
    r = produce(client, "append-time", build_batch([(b"k", b"v", [])], base_timestamp=NOW + 10 * HOUR))
    assert r.error_code == E.none and r.log_append_time.timestamp() * 1000 == NOW


def test_a_log_append_time_batch_reads_as_its_max_timestamp(broker, client):
    """On a CreateTime topic every record of a batch saying LogAppendTime has the batch's maxTimestamp
    (DefaultRecord.readFrom's logAppendTime): that is what the bounds check."""
    batch = build_batch([(None, b"a", []), (None, b"b", [])], base_timestamp=NOW + 3000, attributes=0x08)
    r = produce(client, "narrow", batch)
    assert errors_of(r) == [(0, out_of_range(NOW + 3000, 0, 1000, 2000)),
                            (1, out_of_range(NOW + 3000, 1, 1000, 2000))]


def test_min_insync_replicas_is_checked_before_the_records(broker, client):
    """Partition.appendRecordsToLeader checks min.insync.replicas before UnifiedLog.append runs
    LogValidator: acks=all to an under-replicated compacted topic is NOT_ENOUGH_REPLICAS."""
    r = produce(client, "min-isr", build_batch([(None, b"v", [])], base_timestamp=NOW), acks=-1)  # ISR of 1
    assert r.error_code == E.not_enough_replicas
    keyless = build_batch([(None, b"v", [])], base_timestamp=NOW)
    assert produce(client, "min-isr", keyless).error_code == E.invalid_record


def test_header_only_when_the_record_check_is_off():
    """mock.produce.check.records=false walks nothing: the base and max timestamps stand for the
    records' and keys are not checked (docs/configuration.md)."""
    with MockBroker(config={"mock.produce.check.records": False}, clock=ManualClock(start_wall_ms=NOW)) as b, \
            RawKafkaClient.connect(b.bootstrap_servers) as c:
        b.create_topic("c", 1, configs={"cleanup.policy": "compact", "message.timestamp.before.max.ms": "10"})
        assert produce(c, "c", build_batch([(None, b"v", [])], base_timestamp=NOW)).error_code == E.none
        hidden = build_batch([(b"k", b"a", []), (b"k", b"b", [])], base_timestamp=NOW, timestamps=[NOW, NOW - 50])
        assert produce(c, "c", hidden).error_code == E.none  # the header says [NOW, NOW]
        r = produce(c, "c", build_batch([(b"k", b"v", [])], base_timestamp=NOW - 11))
        assert (r.error_code, [e.batch_index for e in r.record_errors]) == (E.invalid_timestamp, [0])


# -- the walk itself -------------------------------------------------------------------------------

def test_the_scan_reads_timestamp_deltas_and_null_keys():
    batch = memoryview(build_batch([(b"k", b"a", []), (None, b"b", [("h", b"1")]), (b"", None, [])],
                                   base_timestamp=NOW, timestamps=[NOW, NOW - 70, NOW + 9000]))
    h = parse_header(batch)
    scan = check_record_count(batch, h, timestamps=True, keys=True)
    assert (scan.min_timestamp_delta, scan.max_timestamp_delta, scan.keyless) == (-70, 9000, True)
    assert check_record_count(batch, h, timestamps=True).keyless is False  # keys not asked
    assert record_fields(batch, h) == [(0, NOW, True), (1, NOW - 70, False), (2, NOW + 9000, True)]
    gz = build_batch([(b"k", b"a", [])], base_timestamp=NOW, attributes=1,
                     payload=gzip.compress(build_batch([(None, b"a", [])], base_timestamp=NOW)[61:]))
    assert check_record_count(memoryview(gz), parse_header(gz), keys=True).keyless is True


def test_a_record_too_short_for_its_fields_is_invalid():
    """A record whose length leaves no room for its timestamp delta: the framing alone passes, reading
    the delta is DefaultRecord.readFrom's "Found invalid record structure"."""
    two = build_batch([(None, b"", []), (None, b"x" * 20, [])], base_timestamp=NOW)
    first_len = two[61] >> 1  # the first record's length varint (one byte)
    batch = bytearray(two[:61] + bytes([2, 0]) + two[62 + first_len:])  # the first record cut to its attributes
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">I", batch, CRC_OFFSET, compute_crc(batch))
    view = memoryview(bytes(batch))
    h = parse_header(view)
    check_record_count(view, h)
    with pytest.raises(CorruptRecordBatch) as e:
        check_record_count(view, h, timestamps=True)
    assert (e.value.error, str(e.value)) == (E.invalid_record, "Found invalid record structure")
