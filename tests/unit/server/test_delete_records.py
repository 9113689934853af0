"""The log start offset on the clock: DeleteRecords' log side (``ReplicaManager.delete_records``, what
the DeleteRecords handler calls) and retention (retention.ms / retention.bytes drop whole segments):
either way fetches below the log start offset get OFFSET_OUT_OF_RANGE and ListOffsets earliest answers
it.  Errors as Kafka 4.4's ``ReplicaManager.deleteRecordsOnLocalLog`` / ``Partition.deleteRecordsOnLeader``
/ ``UnifiedLog.maybeIncrementLogStartOffset`` give them."""

from __future__ import annotations

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import build_batch, parse_header

E = ErrorCode
T0 = 1_800_000_000_000


@pytest.fixture
def broker():
    with MockBroker(config={"log.retention.check.interval.ms": 1000}, clock=ManualClock(start_wall_ms=T0)) as b:
        yield b


def produce(b, topic, n, per_batch=1, ts=None):
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        for _ in range(n):
            batch = build_batch([(b"k", b"v", [])] * per_batch, base_timestamp=T0 if ts is None else ts)
            r = c.request(0, 9, {"acks": 1, "timeout": 5000, "topic_data": [{"name": topic, "partition_data": [
                {"index": 0, "records": batch}]}]}).responses[0].partition_responses[0]
            assert r.error_code == E.none


def delete(b, topic, offset, partition=0, node=None):
    r = b.call(lambda c: c.broker(node).replica_manager.delete_records(topic, partition, offset))
    return r.error, r.low_watermark, r.message


def fetch(b, topic, offset):
    """(error, log start offset, base offset of the first batch or None)."""
    tid = b.call(lambda c: c.metadata.topics[topic].topic_id)
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        r = c.request(1, 12, {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                              "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                                  {"topic": topic, "topic_id": tid, "partitions": [
                                      {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                                       "last_fetched_epoch": -1, "log_start_offset": -1,
                                       "partition_max_bytes": 1 << 20}]}],
                              "forgotten_topics_data": [], "rack_id": ""}).responses[0].partitions[0]
    return r.error_code, r.log_start_offset, parse_header(r.records).base_offset if r.records else None


def earliest(b, topic):
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        p = c.request(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2}]}]}
        ).topics[0].partitions[0]
    return p.error_code, p.offset


def segments(b, topic):
    return b.call(lambda c: [s.base_offset for s in c.metadata.topics[topic].partitions[0].log.segments])


def test_delete_records_moves_the_log_start_offset(broker):
    broker.create_topic("t", 1, configs={"internal.segment.bytes": "1"})
    produce(broker, "t", 5)
    assert delete(broker, "t", 3) == (E.none, 3, None)
    # an out-of-range answer carries -1 for every offset (ReplicaManager.createLogReadResult), as Kafka's
    assert fetch(broker, "t", 2) == (E.offset_out_of_range, -1, None)
    assert fetch(broker, "t", 3) == (E.none, 3, 3)
    assert earliest(broker, "t") == (E.none, 3)
    assert segments(broker, "t") == [0, 1, 2, 3, 4]  # the segments below go at the next retention pass
    broker.advance(1000)
    assert segments(broker, "t") == [3, 4]
    assert delete(broker, "t", 1) == (E.none, 3, None)  # never down: the low watermark is the log start
    assert delete(broker, "t", -1) == (E.none, 5, None)  # -1: the high watermark
    assert fetch(broker, "t", 5) == (E.none, 5, None)


def test_delete_inside_a_batch(broker):
    """The log start offset may fall inside a batch: a fetch from it gets the whole batch (the consumer
    skips the records below its position); below it is out of range."""
    broker.create_topic("t", 1)
    produce(broker, "t", 2, per_batch=3)
    assert delete(broker, "t", 4) == (E.none, 4, None)
    assert fetch(broker, "t", 4) == (E.none, 4, 3)
    assert fetch(broker, "t", 3) == (E.offset_out_of_range, -1, None)


def test_delete_records_errors(broker):
    broker.create_topic("t", 1)
    broker.create_topic("compacted", 1, configs={"cleanup.policy": "compact"})
    broker.create_topic("both", 1, configs={"cleanup.policy": "compact,delete"})
    produce(broker, "t", 2)
    assert delete(broker, "t", 3) == (E.offset_out_of_range, -1, "Cannot increment the log start offset to 3 of "
                                      "partition t-0 since it is larger than the high watermark 2")
    assert delete(broker, "t", -2) == (E.offset_out_of_range, -1, "The offset -2 for partition t-0 is not valid")
    assert delete(broker, "compacted", 0) == (E.policy_violation, -1, "Records of partition compacted-0 can not be "
                                              "deleted due to the configured policy")
    assert delete(broker, "both", 0)[:2] == (E.none, 0)
    assert delete(broker, "t", 0, partition=1)[0] == E.unknown_topic_or_partition
    assert delete(broker, "nope", 0)[0] == E.unknown_topic_or_partition
    broker.create_topic("__consumer_offsets", 1)
    assert delete(broker, "__consumer_offsets", 0) == (
        E.invalid_topic_exception, -1, "Cannot delete records of internal topic __consumer_offsets")


def test_delete_records_on_a_follower():
    with MockBroker(config={"mock.num.brokers": 2}) as b:
        b.create_topic("t", 1, replication_factor=2)
        leader = b.partition_state("t", 0)["leader"]
        follower = next(n for n in (0, 1) if n != leader)
        assert delete(b, "t", 0, node=follower)[0] == E.not_leader_or_follower
        assert delete(b, "t", 0, node=leader)[:2] == (E.none, 0)


def test_retention_ms_moves_the_log_start_offset(broker):
    """retention.ms drops whole segments whose largest timestamp is older, below the high watermark,
    never the active one while it is the last (a new one is rolled first when every segment goes)."""
    broker.create_topic("t", 1, configs={"internal.segment.bytes": "1", "retention.ms": "10000"})
    produce(broker, "t", 2, ts=T0)
    produce(broker, "t", 1, ts=T0 + 20000)
    broker.advance(10000)  # now - T0 = 10000: not more than retention.ms
    assert segments(broker, "t") == [0, 1, 2]
    broker.advance(1000)
    assert segments(broker, "t") == [2]
    assert earliest(broker, "t") == (E.none, 2)
    assert fetch(broker, "t", 1) == (E.offset_out_of_range, -1, None)
    broker.advance(30000)  # the last segment too: a new empty one at the log end
    assert segments(broker, "t") == [3] and earliest(broker, "t") == (E.none, 3)


def test_retention_bytes_and_an_empty_policy(broker):
    one = len(build_batch([(b"k", b"v", [])], base_timestamp=T0))
    broker.create_topic("sized", 1, configs={"internal.segment.bytes": "1", "retention.bytes": str(2 * one)})
    broker.create_topic("forever", 1, configs={"internal.segment.bytes": "1", "retention.ms": "1",
                                               "cleanup.policy": ""})
    produce(broker, "sized", 5)
    produce(broker, "forever", 3)
    broker.advance(1000)
    assert segments(broker, "sized") == [3, 4]  # 5 batches, 2 may stay
    assert segments(broker, "forever") == [0, 1, 2]  # no cleanup policy: nothing is deleted
