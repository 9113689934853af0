"""A produced batch whose header lies, one field at a time, gets Kafka's error code, and a batch
that is taken moves the log end offset by its real record count and no more.

Each example builds an honest v2 batch (1-8 records, uncompressed, gzip, lz4 or zstd, plain or
idempotent), changes one header field (the CRC recomputed or not, where it covers the field),
produces it to a fresh topic (so no producer state is left from another example) through a
running broker, and compares the partition's answer with ``kafka_error``: what Kafka 4.x
answers, following ``KafkaApis.handleProduceRequest`` (``RequestUtils.hasTransactionalRecords``,
``ProduceRequest.validateRecords``), ``ByteBufferLogInputStream.nextBatchSize``,
``UnifiedLog.analyzeAndValidateRecords``, ``LogValidator.validateBatch`` / its record iteration
(``DefaultRecordBatch.RecordIterator``) and ``ProducerAppendInfo`` for a producer with no state.

Time is a ManualClock, so "now" is known: a base timestamp lie moves every record's timestamp (the
honest batches' deltas are 0), and Kafka 4.x refuses a record more than
``message.timestamp.after.max.ms`` (1 h) ahead with INVALID_TIMESTAMP (``LogValidator.validateTimestamp``,
in Java's long arithmetic).
"""

from __future__ import annotations

import gzip
import itertools
import struct

import lz4.frame
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import CRC_OFFSET, HEADER, LONG_MAX, build_batch, compute_crc, parse_header, wrap64

E = ErrorCode
NOW = 1_700_000_000_000  # the ManualClock's wall time (never advanced here)
HOUR = 3_600_000

# codec id -> compressor of the records section (the framings Kafka's clients write)
COMPRESS = {
    1: gzip.compress,
    3: lambda d: lz4.frame.compress(d, block_linked=False),
    4: zstandard.ZstdCompressor().compress,
}

# header fields: name -> (struct offset, format); "count+delta" lies in both consistently
FIELDS = {
    "base_offset": (0, ">q"),
    "batch_length": (8, ">i"),
    "partition_leader_epoch": (12, ">i"),
    "magic": (16, ">b"),
    "crc": (17, ">I"),
    "attributes": (21, ">h"),
    "last_offset_delta": (23, ">i"),
    "base_timestamp": (27, ">q"),
    "max_timestamp": (35, ">q"),
    "producer_id": (43, ">q"),
    "producer_epoch": (51, ">h"),
    "base_sequence": (53, ">i"),
    "records_count": (57, ">i"),
}
CRC_COVERED = {"attributes", "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
               "producer_epoch", "base_sequence", "records_count", "count+delta"}

I16 = st.integers(-(2**15), 2**15 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
LIES = {
    "base_offset": I64,
    "batch_length": st.one_of(st.integers(-100, 400), I32),
    "partition_leader_epoch": I32,
    "magic": st.integers(-128, 127),
    "crc": st.integers(0, 2**32 - 1),
    "last_offset_delta": st.one_of(st.integers(-3, 12), I32),
    "base_timestamp": st.one_of(st.integers(-3, NOW + HOUR), st.just(NOW + HOUR), st.just(NOW + HOUR + 1), I64),
    "max_timestamp": I64,
    "producer_id": st.one_of(st.integers(-3, 5), I64),
    "producer_epoch": I16,
    "base_sequence": st.one_of(st.integers(-3, 5), I32),
    "records_count": st.one_of(st.integers(-3, 12), I32),
    "count+delta": st.one_of(st.integers(-3, 12), st.integers(2**20, 2**31 - 1), st.just(1_000_000_000)),
}
# attribute lies: a codec (ids 5-7 unknown; the payload never decompresses with another codec
# than its own) and flag bits: LogAppendTime, transactional, control, unused ones
CODEC_LIES = [0, 1, 3, 4, 5, 6, 7]
FLAG_BITS = [0x08, 0x10, 0x20, 0x40, 0x80, 0x100, 0x4000]

_pids = itertools.count(1000)
_topics = itertools.count()


@pytest.fixture(scope="module")
def broker():
    with MockBroker(config={"num.partitions": 1}, clock=ManualClock(start_wall_ms=NOW)) as b:
        yield b


@pytest.fixture(scope="module")
def client(broker):
    c = RawKafkaClient.connect(broker.bootstrap_servers)
    yield c
    c.close()


def honest_batch(values: list[bytes], codec: int, idempotent: bool) -> bytes:
    pid, epoch, seq = (next(_pids), 0, 0) if idempotent else (-1, -1, -1)
    records = [(None, v, []) for v in values]
    plain = build_batch(records, base_timestamp=NOW - 5_000, producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq)
    if codec == 0:
        return plain
    return build_batch(records, base_timestamp=NOW - 5_000, producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, attributes=codec, payload=COMPRESS[codec](plain[61:]))


def lie(batch: bytes, field: str, value: int, recompute_crc: bool) -> bytes:
    out = bytearray(batch)
    if field == "count+delta":
        struct.pack_into(">i", out, 57, value)
        struct.pack_into(">i", out, 23, value - 1)
    else:
        offset, fmt = FIELDS[field]
        struct.pack_into(fmt, out, offset, value)
    if recompute_crc and field in CRC_COVERED:
        struct.pack_into(">I", out, CRC_OFFSET, compute_crc(out))
    return bytes(out)


def _next_batch_size(rest: bytes) -> int | None:
    """``ByteBufferLogInputStream.nextBatchSize`` on what follows the first batch: the size of a
    whole next batch, None when there is none; raises for a corrupt one."""
    if len(rest) < 12:
        return None
    size = struct.unpack_from(">i", rest, 8)[0]
    if size < 14:
        raise _Kafka(E.corrupt_message)
    if len(rest) < 17:
        return None
    if not 0 <= struct.unpack_from(">b", rest, 16)[0] <= 2:
        raise _Kafka(E.corrupt_message)
    return size + 12 if len(rest) >= size + 12 else None


class _Kafka(Exception):
    def __init__(self, error: ErrorCode) -> None:
        self.error = error


def kafka_error(honest: bytes, field: str, value: int, recompute_crc: bool) -> ErrorCode:
    """What Kafka 4.x answers for ``honest`` with ``field`` set to ``value`` (one partition, a
    Produce without transactional id, a fresh CreateTime topic)."""
    try:
        return _kafka_error(honest, field, value, recompute_crc)
    except _Kafka as e:
        return e.error


def _kafka_error(honest: bytes, field: str, value: int, recompute_crc: bool) -> ErrorCode:
    h = parse_header(honest)
    idempotent = h.producer_id >= 0
    crc_ok = recompute_crc or field not in CRC_COVERED
    if field == "batch_length":
        length = value
        if length < 14:
            return E.corrupt_message  # nextBatchSize, while KafkaApis looks for transactional records
        if length + 12 > len(honest):
            return E.invalid_record  # no whole batch: "must have at least one record batch"
        if _next_batch_size(honest[length + 12:]) is not None:
            return E.invalid_record  # "exactly one record batch per partition"
        return E.corrupt_message  # the batch is cut short: under 61 bytes or its CRC fails
    if field == "magic":
        if value in (0, 1):
            return E.invalid_record  # validateRecords: magic v2 only
        return E.corrupt_message  # nextBatchSize: "Invalid magic found in record"
    if field == "crc":
        return E.corrupt_message
    if field == "attributes":
        if value & 0x10:
            return E.transactional_id_authorization_failed  # transactional records, no transactional id
        if value & 0x07 > 4:
            return E.unknown_server_error  # CompressionType.forId: IllegalArgumentException
    if not crc_ok:
        return E.corrupt_message
    if field == "base_offset":
        return E.invalid_record
    if field == "last_offset_delta":
        return E.invalid_record  # an invalid offset range, or inconsistent with the count
    if field == "records_count":
        return E.invalid_record  # not positive, or inconsistent with the offset range
    if field == "count+delta":
        return E.invalid_record  # not positive, or the records say otherwise (premature EOF / remaining)
    if field == "attributes":
        if value & 0x20:
            return E.invalid_record  # control records from a client
        if value & 0x07 != h.compression:
            return E.unknown_server_error  # the records section does not decompress: KafkaException
        return E.none  # LogAppendTime on a CreateTime topic (maxTimestamp set), unused bits
    if field == "producer_id":
        # hasProducerId with the plain batch's sequence -1: "Invalid sequence number"
        return E.invalid_record if value >= 0 and not idempotent else E.none
    if field == "producer_epoch":
        return E.invalid_producer_epoch if idempotent and value < -1 else E.none
    if field == "base_sequence":
        return E.invalid_record if idempotent and value < 0 else E.none
    if field == "base_timestamp" and value != -1:
        # every record's timestamp is the base timestamp: refused more than 1 h ahead (or, wrapping
        # in Java's long arithmetic, as far behind: message.timestamp.before.max.ms is Long.MAX_VALUE)
        diff = wrap64(NOW - value)
        if diff > LONG_MAX or wrap64(-diff) > HOUR:
            return E.invalid_timestamp
    # partition leader epoch (overwritten), max timestamp (recomputed from the records by Kafka,
    # read from them here)
    return E.none


@st.composite
def lying_batches(draw):
    values = draw(st.lists(st.binary(max_size=300), min_size=1, max_size=8))
    codec = draw(st.sampled_from([0, 0, 1, 3, 4]))
    idempotent = draw(st.booleans())
    honest = honest_batch(values, codec, idempotent)
    h = parse_header(honest)
    field = draw(st.sampled_from(sorted(LIES) + ["attributes"]))
    if field == "attributes":
        value = draw(st.sampled_from(CODEC_LIES))
        for bit in draw(st.lists(st.sampled_from(FLAG_BITS), max_size=3)):
            value |= bit
        value = value - (1 << 16) if value >= 1 << 15 else value
    else:
        value = draw(LIES[field])
    honest_value = {"count+delta": h.records_count, "attributes": h.attributes}.get(field)
    if honest_value is None:
        honest_value = struct.unpack_from(FIELDS[field][1], honest, FIELDS[field][0])[0]
    if value == honest_value:
        value = honest_value ^ 1 if field != "batch_length" else honest_value + 1
    return honest, len(values), field, value, draw(st.booleans())


def produce(client: RawKafkaClient, topic: str, records: bytes):
    body = {"acks": 1, "timeout": 5000, "topic_data": [{"name": topic, "partition_data": [
        {"index": 0, "records": records}]}]}
    return client.request(0, 9, body).responses[0].partition_responses[0]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(lying_batches())
def test_each_lying_header_field_gets_kafkas_error(broker, client, case):
    honest, n, field, value, recompute_crc = case
    topic = f"lies-{next(_topics)}"
    broker.create_topic(topic, 1)
    r = produce(client, topic, lie(honest, field, value, recompute_crc))
    want = kafka_error(honest, field, value, recompute_crc)
    assert r.error_code == want, (field, value, recompute_crc, r.error_message)
    # taken: the offsets move by the records really there; refused: nothing is appended
    assert broker.log_end_offset(topic, 0) == (n if want is E.none else 0)
    if want is E.none:
        assert r.base_offset == 0
        assert [parse_header(b).records_count for b in broker.partition_records(topic, 0)] == [n]


def test_the_reported_count_of_a_billion_records_is_refused(broker, client):
    """The probe of issue 21: one real record, recordsCount 1,000,000,000 and lastOffsetDelta
    999,999,999 with a recomputed CRC was taken and moved the log end offset by 10^9."""
    broker.create_topic("billion", 1)
    liar = lie(build_batch([(None, b"one", [])], base_timestamp=NOW), "count+delta", 1_000_000_000, True)
    r = produce(client, "billion", liar)
    # LogValidator's InvalidRecordException: appendToLocalLog answers it without a message (Kafka 4.4.0)
    assert (r.error_code, r.error_message) == (E.invalid_record, None)
    assert produce(client, "billion", build_batch([(None, b"next", [])], base_timestamp=NOW)).base_offset == 0
    assert broker.log_end_offset("billion", 0) == 1


def test_log_append_time_from_a_client():
    """LogValidator.validateTimestamp: a client batch with the LogAppendTime attribute is refused
    record by record (RecordErrors) on a LogAppendTime topic and when it has no maxTimestamp; on a
    CreateTime topic it is stored as CreateTime with its maxTimestamp."""
    with MockBroker(clock=ManualClock(start_wall_ms=NOW)) as b, RawKafkaClient.connect(b.bootstrap_servers) as c:
        b.create_topic("lat", 1, configs={"message.timestamp.type": "LogAppendTime"})
        b.create_topic("ct", 1)
        batch = build_batch([(None, b"a", []), (None, b"b", [])], base_timestamp=NOW - 10, attributes=0x08)
        r = produce(c, "lat", batch)
        assert r.error_code == E.invalid_timestamp
        assert r.error_message == "One or more records have been rejected due to invalid timestamp"
        assert [e.batch_index for e in r.record_errors] == [0, 1]
        assert b.log_end_offset("lat", 0) == 0
        no_max = lie(batch, "max_timestamp", -1, True)
        assert produce(c, "ct", no_max).error_code == E.invalid_timestamp
        assert produce(c, "ct", batch).error_code == E.none
        stored = parse_header(b.partition_records("ct", 0)[0])
        assert (stored.attributes & 0x08, stored.max_timestamp) == (0, NOW - 10)
        assert stored.crc == compute_crc(b.partition_records("ct", 0)[0])


def test_header_only_when_the_record_check_is_off():
    """mock.produce.check.records=false trusts the header (what bench/throughput.py compares)."""
    with MockBroker(config={"mock.produce.check.records": False}) as b, \
            RawKafkaClient.connect(b.bootstrap_servers) as c:
        b.create_topic("trusting", 1)
        liar = lie(build_batch([(None, b"one", [])]), "count+delta", 3, True)
        assert produce(c, "trusting", liar).error_code == E.none
        assert b.log_end_offset("trusting", 0) == 3


def test_header_struct_matches_the_fields():
    """The lies land where DefaultRecordBatch reads the fields."""
    offsets = [o for o, _ in FIELDS.values()]
    assert offsets == sorted(offsets) and HEADER.size == 61
