"""Produce, Fetch, ListOffsets, DeleteRecords, OffsetForLeaderEpoch and DescribeProducers answer the
edge cases as Kafka 4.4.0 does: each expected answer here is what the differential tester
(tests/differential/) saw a real Kafka 4.4.0 give for the same request.
"""

from __future__ import annotations

import struct

import pytest

from protocol.errors import ErrorCode, default_message
from protocol.records import build_batch, compute_crc, parse_header

E = ErrorCode
LONG_MIN = -(2**63)


def batch(n: int = 2) -> bytes:
    return build_batch([(b"k", b"v%d" % i, []) for i in range(n)], base_timestamp=1_764_000_000_000)


def patched(b: bytes, at: int, data: bytes, crc: bool = True) -> bytes:
    out = bytearray(b)
    out[at:at + len(data)] = data
    if crc:
        struct.pack_into(">I", out, 17, compute_crc(out))
    return bytes(out)


def produce(c, topic, parts, version=9, acks=-1, tid=None, tid_field=True):
    """parts: [(partition, records)]."""
    body = {"acks": acks, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": i, "records": r} for i, r in parts]}]}
    if tid_field:
        body["transactional_id"] = tid
    return c.request(0, version, body)


def hw(broker, topic, partition):
    return broker.call(lambda cl: cl.metadata.partition(topic, partition).log.high_watermark)


def answers(resp):
    return sorted((p.index, p.error_code, p.base_offset, p.log_start_offset,
                   getattr(p, "error_message", None)) for t in resp.responses for p in t.partition_responses)


class TestProduce:
    def test_a_partition_listed_twice_is_answered_once_and_written_once(self, raw, broker):
        broker.create_topic("pd-dup", 2)
        c = raw()
        r = produce(c, "pd-dup", [(0, batch(2)), (0, batch(3))])
        assert answers(r) == [(0, E.none, 0, 0, None)]
        assert hw(broker, "pd-dup", 0) == 3  # the last entry's batch, once

    def test_a_topic_with_no_partitions_is_not_answered(self, raw, broker):
        broker.create_topic("pd-empty", 1)
        body = {"transactional_id": None, "acks": -1, "timeout": 5000, "topic_data": [
            {"name": "pd-empty", "partition_data": []}]}
        assert raw().request(0, 9, body).responses == ()

    def test_an_invalid_magic_in_one_partition_fails_the_whole_request(self, raw, broker):
        broker.create_topic("pd-magic", 2)
        r = produce(raw(), "pd-magic", [(0, batch()), (1, patched(batch(), 16, b"\x03"))])
        assert [(p.index, p.error_code) for t in r.responses for p in t.partition_responses] == [
            (0, E.corrupt_message), (1, E.corrupt_message)]
        assert hw(broker, "pd-magic", 0) == 0

    def test_an_unknown_compression_id_below_v7_fails_the_whole_request(self, raw, broker):
        broker.create_topic("pd-codec3", 2)
        r = produce(raw(), "pd-codec3", [(0, batch()), (1, patched(batch(), 21, struct.pack(">h", 5)))], version=3,
                    tid_field=True)
        assert sorted((p.index, p.error_code) for t in r.responses for p in t.partition_responses) == [
            (0, E.unknown_server_error), (1, E.unknown_server_error)]
        assert hw(broker, "pd-codec3", 0) == 0

    def test_errors_from_the_log_carry_kafkas_log_start_offset_and_no_message(self, raw, broker):
        broker.create_topic("pd-log", 3)
        r = produce(raw(), "pd-log", [(0, patched(batch(), 21, struct.pack(">h", 5))),  # unknown codec at v9
                                      (1, patched(batch(2), 57, struct.pack(">i", 3))),  # 3 records said, 2 sent
                                      (2, patched(batch(), 17, b"\0\0\0\0", crc=False))])  # a wrong CRC
        assert answers(r) == [(0, E.unknown_server_error, -1, 0, None), (1, E.invalid_record, -1, 0, None),
                              (2, E.corrupt_message, -1, -1, None)]

    def test_request_level_record_checks_have_no_message(self, raw, broker):
        broker.create_topic("pd-req", 2)
        r = produce(raw(), "pd-req", [(0, b""), (1, batch() + batch())])
        assert answers(r) == [(0, E.invalid_record, -1, -1, None), (1, E.invalid_record, -1, -1, None)]

    def test_null_records_in_one_partition_write_nothing(self, raw, broker):
        """Kafka 4.4.0 never answers (a NullPointerException in ProduceRequest.partitionSizes) and writes
        nothing; mockbroker answers every partition INVALID_RECORD and writes nothing either."""
        broker.create_topic("pd-null", 2)
        r = produce(raw(), "pd-null", [(0, batch()), (1, None)])
        assert answers(r) == [(0, E.invalid_record, -1, -1, None), (1, E.invalid_record, -1, -1, None)]
        assert hw(broker, "pd-null", 0) == 0
        # a topic Kafka does not know is answered before the records are looked at
        r = produce(raw(), "pd-null-unknown", [(0, None)])
        assert [(p.index, p.error_code) for t in r.responses for p in t.partition_responses] == [
            (0, E.unknown_topic_or_partition)]

    def test_a_transactional_batch_without_a_producer_id_is_appended(self, raw, broker):
        """Kafka verifies (and tracks) only batches with a producer id."""
        broker.create_topic("pd-txn", 1)
        r = produce(raw(), "pd-txn", [(0, patched(batch(), 21, struct.pack(">h", 0x10)))], tid="some-txn")
        assert answers(r) == [(0, E.none, 0, 0, None)]


def fetch(c, topic, parts, version=12, isolation=0, session_id=0, epoch=-1, replica_id=-1, max_wait=0):
    """parts: [(partition, offset, last_fetched_epoch)]."""
    body = {"replica_id": replica_id, "max_wait": max_wait, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": isolation, "session_id": session_id, "session_epoch": epoch,
            "topics": [{"topic": topic, "partitions": [
                {"partition": p, "fetch_offset": off, "partition_max_bytes": 1 << 20, "log_start_offset": -1,
                 "current_leader_epoch": -1, "last_fetched_epoch": lfe} for p, off, lfe in parts]}],
            "forgotten_topics_data": [], "rack_id": ""}
    return c.request(1, version, body)


class TestFetch:
    @pytest.fixture
    def topic(self, raw, broker):
        name = f"fe-{id(self)}"
        broker.create_topic(name, 2)
        produce(raw(), name, [(0, batch(3))])
        return name

    def test_a_partition_listed_twice_is_answered_once(self, raw, topic):
        r = fetch(raw(), topic, [(0, 0, -1), (0, 1, -1)])
        assert [p.partition_index for t in r.responses for p in t.partitions] == [0]

    def test_an_unknown_isolation_level_is_unknown_server_error_for_the_request(self, raw, topic):
        r = fetch(raw(), topic, [(0, 0, -1)], isolation=6)
        assert r.error_code == E.unknown_server_error
        p = r.responses[0].partitions[0]
        assert (p.error_code, p.high_watermark, p.log_start_offset, p.records) == (E.unknown_server_error, -1, -1, b"")

    def test_offset_out_of_range_answers_every_offset_minus_one(self, raw, topic):
        p = fetch(raw(), topic, [(0, 1000, -1)]).responses[0].partitions[0]
        assert (p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset, p.aborted_transactions) == (
            E.offset_out_of_range, -1, -1, -1, None)

    def test_an_unknown_partition_has_no_aborted_transactions_but_an_empty_list(self, raw, topic):
        p = fetch(raw(), topic, [(7, 0, -1)]).responses[0].partitions[0]
        assert (p.error_code, p.aborted_transactions) == (E.unknown_topic_or_partition, ())

    @pytest.mark.parametrize("replica_id", [1, 1000])  # the leader itself, no replica at all
    def test_a_fetch_from_a_replica_id_that_is_no_follower(self, raw, topic, replica_id):
        p = fetch(raw(), topic, [(0, 0, -1)], replica_id=replica_id).responses[0].partitions[0]
        assert (p.error_code, p.high_watermark) == (E.not_leader_or_follower, -1)

    @pytest.mark.parametrize("session_id", [2**31 - 1, -(2**31)])
    def test_a_session_id_outside_every_cache_shard(self, raw, topic, session_id):
        r = fetch(raw(), topic, [(0, 0, -1)], session_id=session_id)
        assert (r.error_code, r.session_id) == (E.unknown_server_error, session_id)

    def test_a_last_fetched_epoch_the_log_does_not_know(self, raw, topic):
        p = fetch(raw(), topic, [(0, 0, 2**31 - 1)]).responses[0].partitions[0]
        assert (p.error_code, p.high_watermark) == (E.offset_out_of_range, -1)
        assert fetch(raw(), topic, [(0, 0, 0)]).responses[0].partitions[0].error_code == E.none


def list_offsets(c, topic, parts, version=9, isolation=0, replica_id=-1):
    """parts: [(partition, timestamp, current_leader_epoch)]."""
    body = {"replica_id": replica_id, "isolation_level": isolation, "timeout": 1000, "topics": [
        {"name": topic, "partitions": [{"partition_index": p, "timestamp": ts, "current_leader_epoch": cle}
                                       for p, ts, cle in parts]}]}
    return c.request(2, version, body)


class TestListOffsets:
    def test_a_partition_listed_twice_is_one_invalid_request(self, raw, broker):
        broker.create_topic("lo-dup", 2)
        r = list_offsets(raw(), "lo-dup", [(0, -1, -1), (1, -1, -1), (0, -2, -1)])
        assert sorted((p.partition_index, p.error_code) for t in r.topics for p in t.partitions) == [
            (0, E.invalid_request), (1, E.none)]

    @pytest.mark.parametrize(("version", "timestamp"), [(6, -3), (7, -4), (8, -5), (10, -6), (11, -7),
                                                        (11, LONG_MIN)])
    def test_a_sentinel_timestamp_below_its_version_is_unsupported(self, raw, broker, version, timestamp):
        broker.create_topic(f"lo-ts-{version}-{-timestamp % 100}", 1)
        r = list_offsets(raw(), f"lo-ts-{version}-{-timestamp % 100}", [(0, timestamp, -1)], version=version)
        assert r.topics[0].partitions[0].error_code == E.unsupported_version

    def test_a_topic_with_no_partitions_is_not_answered(self, raw, broker):
        broker.create_topic("lo-empty", 1)
        assert list_offsets(raw(), "lo-empty", []).topics == ()

    def test_a_current_leader_epoch_of_minus_two_is_fenced(self, raw, broker):
        broker.create_topic("lo-fenced", 1)
        assert list_offsets(raw(), "lo-fenced", [(0, -1, -2)]).topics[0].partitions[0].error_code == \
            E.fenced_leader_epoch

    def test_an_unknown_isolation_level_is_unknown_server_error(self, raw, broker):
        broker.create_topic("lo-iso", 1)
        p = list_offsets(raw(), "lo-iso", [(0, -1, -1)], isolation=3).topics[0].partitions[0]
        assert (p.error_code, p.offset, p.timestamp) == (E.unknown_server_error, -1, -1)


def delete_records(c, topic, parts):
    return c.request(21, 2, {"timeout": 5000, "topics": [
        {"name": topic, "partitions": [{"partition_index": p, "offset": o} for p, o in parts]}]})


class TestDeleteRecords:
    def test_a_partition_listed_twice_is_deleted_to_its_last_offset_once(self, raw, broker):
        broker.create_topic("dr-dup", 1)
        c = raw()
        produce(c, "dr-dup", [(0, batch(5))])
        r = delete_records(c, "dr-dup", [(0, 1), (0, 3)])
        assert [(p.partition_index, p.low_watermark, p.error_code) for t in r.topics for p in t.partitions] == [
            (0, 3, E.none)]

    def test_a_topic_with_no_partitions_is_not_answered(self, raw, broker):
        broker.create_topic("dr-empty", 1)
        assert delete_records(raw(), "dr-empty", []).topics == ()


class TestOffsetForLeaderEpoch:
    def request(self, c, topic, current, epoch):
        return c.request(23, 4, {"replica_id": -1, "topics": [{"topic": topic, "partitions": [
            {"partition": 0, "current_leader_epoch": current, "leader_epoch": epoch}]}]}).topics[0].partitions[0]

    def test_a_current_leader_epoch_of_minus_two_is_fenced(self, raw, broker):
        broker.create_topic("ofle-fenced", 1)
        p = self.request(raw(), "ofle-fenced", -2, 0)
        assert (p.error_code, p.leader_epoch, p.end_offset) == (E.fenced_leader_epoch, -1, -1)

    def test_an_epoch_below_the_earliest_answers_itself_and_the_earliest_start(self, raw, broker):
        """LeaderEpochFileCache.endOffsetFor: no epoch at or below the asked one, a higher one."""
        broker.create_topic("ofle-below", 1)
        c = raw()
        produce(c, "ofle-below", [(0, batch(2))])
        p = self.request(c, "ofle-below", -1, -2)
        assert (p.error_code, p.leader_epoch, p.end_offset) == (E.none, -2, 0)
        p = self.request(c, "ofle-below", -1, 5)  # above the newest: unknown
        assert (p.leader_epoch, p.end_offset) == (-1, -1)


def test_describe_producers_of_an_unknown_topic_has_kafkas_message(raw, broker):
    r = raw().request(61, 0, {"topics": [{"name": "dp-unknown", "partition_indexes": [0, 1]}]})
    assert [(p.error_code, p.error_message) for p in r.topics[0].partitions] == [
        (E.unknown_topic_or_partition, default_message(E.unknown_topic_or_partition))] * 2


def test_a_fetch_naming_the_zero_topic_id_fails_as_a_whole(raw, broker):
    """Kafka 4.4.0: UNKNOWN_SERVER_ERROR for the request, no partitions (an unknown non-zero id is the
    partition's UNKNOWN_TOPIC_ID)."""
    import uuid
    c = raw()
    body = {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "topics": [{"topic_id": uuid.UUID(int=0), "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                 "log_start_offset": -1, "partition_max_bytes": 1024}]}], "forgotten_topics_data": [], "rack_id": ""}
    r = c.request(1, 15, body)
    assert (r.error_code, list(r.responses)) == (E.unknown_server_error, [])
    body["topics"][0]["topic_id"] = uuid.UUID(int=7)
    r = c.request(1, 15, body)
    assert r.error_code == E.none and r.responses[0].partitions[0].error_code == E.unknown_topic_id


def test_a_duplicate_batch_answers_its_timestamp_as_the_log_append_time(raw, broker):
    """UnifiedLog.append gives a duplicate (a retried idempotent batch) its original's timestamp as the
    log append time, also on a CreateTime topic, where the first append answers -1 (Kafka 4.4.0)."""
    broker.create_topic("pd-dup-time", 1)
    c = raw()
    pid = c.request(22, 4, {"transactional_id": None, "transaction_timeout": 60000, "producer_id": -1,
                            "producer_epoch": -1}).producer_id
    batch = build_batch([(b"k", b"v", [])], base_timestamp=1_700_000_000_000, producer_id=pid, producer_epoch=0,
                        base_sequence=0)
    first = produce(c, "pd-dup-time", [(0, batch)]).responses[0].partition_responses[0]
    again = produce(c, "pd-dup-time", [(0, batch)]).responses[0].partition_responses[0]
    assert (first.error_code, first.base_offset, first.log_append_time) == (E.none, 0, None)  # -1 on the wire
    assert (again.error_code, again.base_offset) == (E.none, 0)
    assert again.log_append_time is not None and int(again.log_append_time.timestamp() * 1000) == 1_700_000_000_000
