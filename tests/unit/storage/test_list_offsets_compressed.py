"""ListOffsets by timestamp and max timestamp (-3) over compressed batches, through a running broker:
the exact record, as Kafka finds it (FileRecords.searchForTimestamp, RecordBatch.offsetOfMaxTimestamp),
never the batch's base or last offset.

The batches are built here with a timestamp per record and compressed by libraries the broker does
not use (stdlib gzip, python-snappy through kafka-python's xerial framing, python-lz4, python-zstandard).
"""

from __future__ import annotations

import gzip
import struct
from datetime import UTC, datetime, timedelta

import lz4.frame
import pytest
import snappy
import zstandard
from kafka.codec import snappy_encode

from mockbroker import ManualClock, MockBroker
from mockbroker.storage.log import PartitionLog
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import CRC_OFFSET, HEADER, compute_crc, parse_header

E = ErrorCode
NOT_FOUND = (E.none, -1, -1)

CODECS = {
    "gzip": (1, gzip.compress),
    "snappy-xerial": (2, lambda d: snappy_encode(d, xerial_compatible=True, xerial_blocksize=256)),
    "snappy-raw": (2, snappy.compress),
    "lz4": (3, lambda d: lz4.frame.compress(d, block_linked=False)),
    "zstd": (4, zstandard.ZstdCompressor().compress),
}


def _zz(v: int) -> bytes:
    v = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def records_section(timestamps: list[int], base_ts: int) -> bytes:
    body = bytearray()
    for i, ts in enumerate(timestamps):
        key, value = b"key-%d" % i, b"value-%d|" % i * 8
        rec = b"\0" + _zz(ts - base_ts) + _zz(i) + _zz(len(key)) + key + _zz(len(value)) + value + _zz(0)
        body += _zz(len(rec)) + rec
    return bytes(body)


def make_batch(timestamps: list[int], codec: str | None = None, payload: bytes | None = None,
               count: int | None = None) -> bytes:
    """A v2 batch with one timestamp per record (base = the first, max = the largest), its
    records section compressed with ``codec``; ``payload`` replaces that section as is."""
    base_ts = timestamps[0]
    attrs, compress = CODECS[codec] if codec else (0, lambda d: d)
    if payload is None:
        payload = compress(records_section(timestamps, base_ts))
    n = len(timestamps) if count is None else count
    head = HEADER.pack(0, 49 + len(payload), -1, 2, 0, attrs, n - 1, base_ts, max(timestamps), -1, -1, -1, n)
    out = bytearray(head + payload)
    struct.pack_into(">I", out, CRC_OFFSET, compute_crc(out))
    return bytes(out)


def produce(c: RawKafkaClient, topic: str, batch: bytes, partition: int = 0, acks: int = -1):
    body = {"acks": acks, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    r = c.request(0, 9, body).responses[0].partition_responses[0]
    assert r.error_code == E.none, r
    return r


def append_time_ms(r) -> int:
    return (r.log_append_time - datetime.fromtimestamp(0, UTC)) // timedelta(milliseconds=1)


def lookup(c: RawKafkaClient, topic: str, ts: int, partition: int = 0, version: int = 7):
    r = c.request(2, version, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": partition, "timestamp": ts}]}]})
    p = r.topics[0].partitions[0]
    return p.error_code, p.offset, p.timestamp


# -- by timestamp and max timestamp, every codec -------------------------------------------------

B0 = [1000, 1010, 1020, 1030, 1040]  # offsets 0-4
B1 = [2000, 1500, 2100, 2100, 2050]  # offsets 5-9: out of order, a tie at the maximum


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_timestamp_lookup_is_the_exact_record_in_compressed_batches(raw, broker, codec):
    topic = f"loc-{codec}"
    broker.create_topic(topic, 1)
    c = raw()
    produce(c, topic, make_batch(B0, codec))
    produce(c, topic, make_batch(B1, codec))
    stored = broker.partition_records(topic, 0)
    assert [parse_header(b).compression for b in stored] == [CODECS[codec][0]] * 2  # stored as sent

    assert lookup(c, topic, 0) == (E.none, 0, 1000)  # before everything
    assert lookup(c, topic, 1000) == (E.none, 0, 1000)
    # inside the first batch: its base offset 0 and max timestamp 1040 would be wrong
    assert lookup(c, topic, 1001) == (E.none, 1, 1010)
    assert lookup(c, topic, 1015) == (E.none, 2, 1020)
    assert lookup(c, topic, 1040) == (E.none, 4, 1040)
    # inside the second: the first record >= the target in offset order, not the smallest timestamp
    assert lookup(c, topic, 1041) == (E.none, 5, 2000)
    assert lookup(c, topic, 1400) == (E.none, 5, 2000)
    assert lookup(c, topic, 2001) == (E.none, 7, 2100)
    assert lookup(c, topic, 2100) == (E.none, 7, 2100)
    assert lookup(c, topic, 2101) == NOT_FOUND  # after everything
    # -3: the first record with the batch's max timestamp (7, of the tie 7/8), not the last offset 9
    assert lookup(c, topic, -3) == (E.none, 7, 2100)
    for v in range(1, 12):  # every version answers the same for a timestamp
        assert lookup(c, topic, 1015, version=v)[:2] == (E.none, 2)


@pytest.mark.parametrize("codec", ["gzip", "lz4"])
def test_max_timestamp_takes_the_first_batch_reaching_it(raw, broker, codec):
    topic = f"lomax-{codec}"
    broker.create_topic(topic, 1)
    c = raw()
    produce(c, topic, make_batch([100, 300, 200, 300], codec))  # 0-3
    produce(c, topic, make_batch([300, 300, 50], codec))  # 4-6: ties, later
    produce(c, topic, make_batch([10, 20]))  # 7-8 uncompressed
    assert lookup(c, topic, -3) == (E.none, 1, 300)
    assert lookup(c, topic, 250) == (E.none, 1, 300)
    assert lookup(c, topic, 15) == (E.none, 0, 100)


def test_mixed_compressed_and_plain_batches(raw, broker):
    broker.create_topic("lomix", 1)
    c = raw()
    produce(c, "lomix", make_batch([10, 20, 30]))  # 0-2
    produce(c, "lomix", make_batch([40, 50, 60], "zstd"))  # 3-5
    produce(c, "lomix", make_batch([70, 80, 90], "snappy-raw"))  # 6-8
    assert [lookup(c, "lomix", t)[1] for t in (5, 25, 35, 45, 55, 65, 75, 85, 90)] == [0, 2, 3, 4, 5, 6, 7, 8, 8]
    assert lookup(c, "lomix", -3) == (E.none, 8, 90)


# -- LogAppendTime -----------------------------------------------------------------------------------


@pytest.fixture
def manual_broker():
    clock = ManualClock()
    with MockBroker(config={}, clock=clock) as b:
        yield b


def test_log_append_time_answers_the_first_record_of_the_batch(manual_broker):
    b = manual_broker
    b.create_topic("lat", 1, configs={"message.timestamp.type": "LogAppendTime"})
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        # the records' own (create) timestamps play no part: every record has the batch's append time
        t1 = append_time_ms(produce(c, "lat", make_batch([5, 900, 1])))  # 0-2 uncompressed
        b.advance(10)
        t2 = append_time_ms(produce(c, "lat", make_batch([7, 3, 999], "gzip")))  # 3-5
        b.advance(10)
        t3 = append_time_ms(produce(c, "lat", make_batch([2, 2, 2], "zstd")))  # 6-8
        assert t1 < t2 < t3
        assert lookup(c, "lat", 0) == (E.none, 0, t1)
        assert lookup(c, "lat", t1) == (E.none, 0, t1)  # the first record, not the batch's last (2)
        assert lookup(c, "lat", t1 + 1) == (E.none, 3, t2)
        assert lookup(c, "lat", t2 + 1) == (E.none, 6, t3)
        assert lookup(c, "lat", t3 + 1) == NOT_FOUND
        assert lookup(c, "lat", -3) == (E.none, 6, t3)  # offsetOfMaxTimestamp: the first record


# -- the high watermark -------------------------------------------------------------------------------


@pytest.fixture
def cluster():
    cfg = {"mock.num.brokers": 3, "default.replication.factor": 3, "mock.replication.lag.ms": 100}
    with MockBroker(config=cfg, clock=ManualClock()) as b:
        yield b


def test_records_at_or_above_the_high_watermark_are_not_answered(cluster):
    cluster.create_topic("lohw", 1, 3)
    st = cluster.partition_state("lohw", 0)
    with RawKafkaClient.connect(cluster.bootstrap_servers.split(",")[st["leader"]]) as c:
        produce(c, "lohw", make_batch(B0, "lz4"), acks=1)  # 0-4
        cluster.advance(100)
        assert cluster.partition_state("lohw", 0)["high_watermark"] == 5
        produce(c, "lohw", make_batch([5000, 5040, 5010, 5040, 5020], "zstd"), acks=1)  # 5-9, above the HW
        st = cluster.partition_state("lohw", 0)
        assert (st["high_watermark"], st["log_end_offset"]) == (5, 10)

        assert lookup(c, "lohw", 1015) == (E.none, 2, 1020)
        assert lookup(c, "lohw", 2000) == NOT_FOUND  # found at offset 5 >= HW: no offset
        # -3: the largest timestamp (offset 6) is above the HW, so no offset -- not the largest below it
        assert lookup(c, "lohw", -3) == NOT_FOUND
        assert lookup(c, "lohw", -1)[1] == 5

        cluster.advance(100)
        assert cluster.partition_state("lohw", 0)["high_watermark"] == 10
        assert lookup(c, "lohw", 2000) == (E.none, 5, 5000)
        assert lookup(c, "lohw", 5030) == (E.none, 6, 5040)
        assert lookup(c, "lohw", -3) == (E.none, 6, 5040)


# -- the log start offset ------------------------------------------------------------------------------


def test_log_start_offset_inside_a_compressed_batch():
    """The broker serves no DeleteRecords and retention drops whole segments, so the log start
    offset never falls inside a batch over the wire; set here on the log as DeleteRecords would."""
    log = PartitionLog(0)
    for ts in ([1000, 3000, 1020, 1030, 1040], [2000, 2600, 2700]):
        b = make_batch(ts, "gzip")
        log.append(memoryview(b), parse_header(b), 0, 1 << 30, 1 << 40, False)
    log.high_watermark = log.log_end_offset
    log.log_start_offset = 2
    # FileRecords.searchForTimestamp: offset >= startingOffset, so the record is 2 (ts 1020),
    # not max(base, log start) with the batch's max timestamp
    assert log.offset_for_timestamp(0) == (2, 1020)
    assert log.offset_for_timestamp(1025) == (3, 1030)
    # offset 1 (3000) is below the log start: the next record >= 2500 at or after it
    assert log.offset_for_timestamp(2500) == (6, 2600)
    # UnifiedLog's MAX_TIMESTAMP lookup is not bounded by the log start offset
    assert log.max_timestamp_offset() == (1, 3000)


def test_only_the_first_segment_reaching_the_timestamp_is_searched():
    """UnifiedLog.searchOffsetInLocalLog: the first segment whose largest timestamp reaches the
    target; a match there only below the log start offset is no answer, later segments unread."""
    log = PartitionLog(0)
    for ts in ([100, 900, 130], [110, 120], [950, 960]):  # offsets 0-2, 3-4, 5-6
        b = make_batch(ts, "lz4")
        log.append(memoryview(b), parse_header(b), 0, 1, 1 << 40, False)  # a segment per batch
    assert len(log.segments) == 3
    log.high_watermark = log.log_end_offset
    assert log.offset_for_timestamp(500) == (1, 900)
    log.log_start_offset = 2  # as DeleteRecords inside the first segment would
    assert log.offset_for_timestamp(500) is None  # not (5, 950) from the third segment
    assert log.offset_for_timestamp(930) == (5, 950)


# -- batches that cannot be read ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def unchecked():
    """A broker that stores what the record walk on produce would refuse
    (``mock.produce.check.records=false``), so reading such batches back can be tested."""
    with MockBroker(config={"mock.produce.check.records": False}) as b:
        yield b


def produce_error(c: RawKafkaClient, topic: str, batch: bytes) -> int:
    body = {"acks": -1, "timeout": 5000, "topic_data": [{"name": topic, "partition_data": [
        {"index": 0, "records": batch}]}]}
    return c.request(0, 9, body).responses[0].partition_responses[0].error_code


def test_undecompressable_batch_is_unknown_server_error_for_its_partition_only(raw, broker, unchecked):
    not_gzip = make_batch([100, 200], "gzip", payload=b"\x1f\x8b\x08\x00 not deflate data")
    broker.create_topic("locorrupt", 1)
    assert produce_error(raw(), "locorrupt", not_gzip) == E.unknown_server_error  # Kafka decompresses on produce
    unchecked.create_topic("locorrupt", 2)
    c = RawKafkaClient.connect(unchecked.bootstrap_servers)
    # a gzip batch whose payload is no gzip stream (the CRC over it is right; unchecked, produce takes it)
    produce(c, "locorrupt", not_gzip)
    produce(c, "locorrupt", make_batch([100, 200], "gzip"), partition=1)
    r = c.request(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "locorrupt", "partitions": [
        {"partition_index": 0, "timestamp": 150}, {"partition_index": 1, "timestamp": 150}]}]})
    p0, p1 = r.topics[0].partitions
    assert (p0.error_code, p0.offset, p0.timestamp) == (E.unknown_server_error, -1, -1)
    assert (p1.error_code, p1.offset, p1.timestamp) == (E.none, 1, 200)
    assert lookup(c, "locorrupt", -3)[0] == E.unknown_server_error
    # lookups that need no record reading still answer, on the same connection
    assert lookup(c, "locorrupt", -2) == (E.none, 0, -1)
    assert lookup(c, "locorrupt", -1) == (E.none, 2, -1)
    assert lookup(c, "locorrupt", 201) == NOT_FOUND  # no batch reaches 201: nothing is read
    c.close()


def test_malformed_records_in_a_compressed_batch_are_invalid_record(raw, broker, unchecked):
    two = records_section([100, 200], 100)
    # the header says three records, the payload holds two (InvalidRecordException in Kafka)
    three = make_batch([100, 200, 200], "zstd", payload=zstandard.ZstdCompressor().compress(two))
    broker.create_topic("loinvalid", 1)
    assert produce_error(raw(), "loinvalid", three) == E.invalid_record
    unchecked.create_topic("loinvalid", 1)
    c = RawKafkaClient.connect(unchecked.bootstrap_servers)
    produce(c, "loinvalid", three)
    assert lookup(c, "loinvalid", 150) == (E.invalid_record, -1, -1)
    assert lookup(c, "loinvalid", -3) == (E.invalid_record, -1, -1)
    c.close()
