"""Side by side with a real Kafka 4.4.0: compacted topics and record timestamps as clients see them.

* A record without a key on a compacted topic, and records whose timestamps are out of
  message.timestamp.before/after.max.ms: the same batch, produced to both, gets the same error code,
  message and RecordErrors (the bounds in a timestamp message are each broker's clock); confluent-kafka's
  producer gets the same delivery error from both.
* Compaction: the same keyed records (tombstones among them) produced by kafka-python to a compacted topic
  with segment.ms=100 on both brokers (log.cleaner.backoff.ms=100, set on Kafka dynamically), a batch a
  segment; once each broker's cleaner has run, a kafka-python consumer reads the same compacted view from
  both -- the latest record per key, the tombstone, the offsets with their gaps -- and ListOffsets still
  answers the first and last offsets.  Kafka's cleaner runs on its own threads, so both are polled until
  the view settles, bounded in time.
"""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.records import build_batch

from .realkafka import realkafka  # noqa: F401 - a fixture

SEGMENT_MS = 100
SETTLE_S = 60
HOUR = 3_600_000


@pytest.fixture(scope="module")
def kafka(realkafka):  # noqa: F811 - the fixture
    with RawKafkaClient.connect(realkafka.bootstrap) as c:  # the cleaner's back-off: a dynamic config
        r = c.request(44, 1, {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
            {"name": "log.cleaner.backoff.ms", "config_operation": 0, "value": "100"}]}], "validate_only": False})
        assert r.responses[0].error_code == 0, r.responses[0].error_message
    return realkafka


@pytest.fixture(scope="module")
def mock():
    with MockBroker(config={"log.cleaner.backoff.ms": 100}) as b:
        yield b


def create(bootstrap: str, topic: str, configs: dict[str, str]) -> None:
    with RawKafkaClient.connect(bootstrap) as c:
        r = c.request(19, 7, {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1,
                                          "assignments": [], "configs": [{"name": k, "value": v}
                                                                         for k, v in configs.items()]}],
                              "timeout": 30000, "validate_only": False})
        assert r.topics[0].error_code == 0, r.topics[0].error_message
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the topic's leader is known (Kafka: once the controller placed it)
        with RawKafkaClient.connect(bootstrap) as c:
            md = c.request(3, 12, {"topics": [{"name": topic, "topic_id": None}], "allow_auto_topic_creation": False,
                                   "include_topic_authorized_operations": False})
        if md.topics[0].error_code == 0 and md.topics[0].partitions and md.topics[0].partitions[0].leader_id >= 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"{topic}: no leader after 30 s")


def produce_raw(bootstrap: str, topic: str, batch: bytes):
    """One Produce; retried (bounded) while the broker answers NOT_LEADER_OR_FOLLOWER, as clients retry:
    Kafka's Metadata can name the new topic's leader a moment before that broker leads it."""
    deadline = time.monotonic() + 30
    while True:
        with RawKafkaClient.connect(bootstrap) as c:
            r = c.request(0, 9, {"acks": -1, "timeout": 10000, "topic_data": [{"name": topic, "partition_data": [
                {"index": 0, "records": batch}]}]}).responses[0].partition_responses[0]
        if r.error_code != 6 or time.monotonic() > deadline:  # NOT_LEADER_OR_FOLLOWER
            return r
        time.sleep(0.1)


def answer(r) -> tuple:
    return (r.error_code, r.error_message, [(e.batch_index, e.batch_index_error_message) for e in r.record_errors],
            r.base_offset, r.log_start_offset)


def both(kafka, mock, topic: str, configs: dict[str, str]) -> list[str]:
    for b in (kafka.bootstrap, mock.bootstrap_servers):
        create(b, topic, configs)
    return [kafka.bootstrap, mock.bootstrap_servers]


def test_a_record_without_a_key_on_a_compacted_topic(kafka, mock):
    now = int(time.time() * 1000)
    batch = build_batch([(b"k", b"a", []), (None, b"b", []), (None, None, [])], base_timestamp=now)
    answers = [answer(produce_raw(b, "keyless", batch)) for b in both(kafka, mock, "keyless",
                                                                          {"cleanup.policy": "compact"})]
    assert answers[0] == answers[1]
    assert answers[0][0] == 87  # INVALID_RECORD
    assert [i for i, _ in answers[0][2]] == [1, 2]


def test_keyless_records_from_a_client(kafka, mock):
    errors = {}
    for name, b in zip(("kafka", "mock"), both(kafka, mock, "keyless-client", {"cleanup.policy": "compact"})):
        got: list[KafkaError] = []
        p = Producer({"bootstrap.servers": b, "linger.ms": 0, "retries": 0,
                      "on_delivery": lambda err, _m, got=got: got.append(err)})
        p.produce("keyless-client", b"no key")
        p.flush(30)
        errors[name] = [e.code() if e is not None else None for e in got]
    assert errors["kafka"] == errors["mock"] == [KafkaError.INVALID_RECORD]


def bounds_free(a: tuple) -> tuple:
    """An answer with the bounds of its timestamp messages (each broker's now) taken out, and them."""
    pattern = re.compile(r"within \[(-?\d+), (-?\d+)\]")
    found = [tuple(map(int, m.groups())) for _, msg in a[2] for m in [pattern.search(msg)] if m]
    return (a[0], a[1], [(i, pattern.sub("within [..]", m)) for i, m in a[2]], a[3], a[4]), found


def test_timestamps_out_of_range(kafka, mock):
    configs = {"message.timestamp.before.max.ms": str(HOUR), "message.timestamp.after.max.ms": str(HOUR)}
    now = int(time.time() * 1000)
    stamps = [now, now + 2 * HOUR, now - 2 * HOUR, -1, now - 10]
    batch = build_batch([(None, b"%d" % i, []) for i in range(len(stamps))], base_timestamp=now, timestamps=stamps)
    answers = [bounds_free(answer(produce_raw(b, "stamps", batch))) for b in both(kafka, mock, "stamps", configs)]
    (kafka_answer, kafka_bounds), (mock_answer, mock_bounds) = answers
    assert kafka_answer == mock_answer
    assert kafka_answer[0] == 32  # INVALID_TIMESTAMP
    assert [i for i, _ in kafka_answer[2]] == [1, 2]
    for lo, hi in kafka_bounds + mock_bounds:  # each broker's now, within the test's few seconds
        assert now - HOUR - 1000 <= lo <= now - HOUR + 30_000 and hi - lo == 2 * HOUR


def test_a_client_timestamp_ahead(kafka, mock):
    errors = {}
    for name, b in zip(("kafka", "mock"), both(kafka, mock, "ahead", {})):
        got: list[KafkaError] = []
        p = Producer({"bootstrap.servers": b, "linger.ms": 0, "retries": 0,
                      "on_delivery": lambda err, _m, got=got: got.append(err)})
        p.produce("ahead", b"v", key=b"k", timestamp=int(time.time() * 1000) + 2 * HOUR)
        p.flush(30)  # its own batch: a refused record takes its whole batch with it
        p.produce("ahead", b"v", key=b"k")
        p.flush(30)
        errors[name] = [e.code() if e is not None else None for e in got]
    assert errors["kafka"] == errors["mock"] == [KafkaError.INVALID_TIMESTAMP, None]


# -- compaction ----------------------------------------------------------------------------------------

RECORDS = [(b"k0", b"a0"), (b"k1", b"a1"), (b"k2", b"a2"), (b"k0", b"b0"), (b"k1", None), (b"k3", b"a3"),
           (b"k2", b"b2"), (b"k0", b"c0"), (b"k4", b"a4"), (b"k3", b"b3")]
FINAL = (b"end", b"x")  # alone in the active segment at the end, which is never cleaned


def expected_view() -> list[tuple[int, bytes, bytes | None]]:
    latest = {}
    for offset, (k, _v) in enumerate(RECORDS):
        latest[k] = offset
    kept = [(o, k, v) for o, (k, v) in enumerate(RECORDS) if latest[k] == o]
    return kept + [(len(RECORDS), *FINAL)]


def produce_spread(bootstrap: str, topic: str) -> None:
    """Each record its own batch, more than segment.ms apart: a segment each on both brokers."""
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    try:
        for k, v in RECORDS + [FINAL]:
            time.sleep(SEGMENT_MS * 1.5 / 1000)
            p.send(topic, key=k, value=v).get(timeout=30)
    finally:
        p.close()


def read_all(bootstrap: str, topic: str) -> tuple[list[tuple[int, bytes, bytes | None]], int, int]:
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=2000)
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        first, last = c.beginning_offsets([tp])[tp], c.end_offsets([tp])[tp]
        c.seek_to_beginning(tp)
        out = []
        deadline = time.monotonic() + 20
        while c.position(tp) < last and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=500).values():
                out += [(r.offset, r.key, r.value) for r in records]
        return out, first, last
    finally:
        c.close()


def test_a_consumer_reads_the_compacted_view(kafka, mock):
    configs = {"cleanup.policy": "compact", "segment.ms": str(SEGMENT_MS), "min.cleanable.dirty.ratio": "0.01"}
    brokers = both(kafka, mock, "compacted", configs)
    for b in brokers:
        produce_spread(b, "compacted")
    want = expected_view()
    views = {}
    for name, b in zip(("kafka", "mock"), brokers):
        deadline = time.monotonic() + SETTLE_S
        view, first, last = read_all(b, "compacted")
        while view != want and time.monotonic() < deadline:  # each cleaner on its own schedule
            time.sleep(0.5)
            view, first, last = read_all(b, "compacted")
        views[name] = (view, first, last)
    assert views["kafka"] == views["mock"]
    assert views["mock"] == (want, 0, len(RECORDS) + 1)
