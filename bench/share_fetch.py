"""Share groups (KIP-932) side by side: ShareFetch throughput and what acquiring under a lock costs,
on mockbroker and on a real Kafka 4.4.0 in one run.

Per broker (``mockbroker serve`` as a subprocess, then a single-node KRaft Kafka 4.4.0 from
bench/brokers.py), with a raw client (protocol/client.py) in this process:

1. CreateTopics v7 of a one-partition topic; one member joins a share group (FindCoordinator v6 until
   the group has a coordinator, ShareGroupHeartbeat v1 every 200 ms until the partition is assigned)
   and opens its share session
   with an empty ShareFetch v2 (the share-partition starts at the log end);
2. N records are produced (Produce v9, acks=1, batches of ``BATCH`` records);
3. "share": ShareFetch v2 (max_wait 500 ms) until all N were acquired, each one accepting the ranges
   the previous one acquired (piggy-backed), then a ShareAcknowledge for the last: records/s from the
   first ShareFetch to the last acknowledgement;
4. "fetch": the same N records read with plain Fetch v12 from offset 0 (sessionless), records/s;
5. the ratio fetch / share is what acquiring, locking and acknowledging cost per record on that broker.

Run: ``.venv/bin/python bench/share_fetch.py [--records N]`` (default 50,000; about a minute, most of
it Kafka starting).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import brokers  # noqa: E402

from protocol.client import RawKafkaClient  # noqa: E402
from protocol.records import build_batch  # noqa: E402
from protocol.registry import ApiKey  # noqa: E402

BATCH = 500
TOPIC, GROUP = "share-bench", "share-bench"


def connect(bootstrap: str) -> RawKafkaClient:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    return RawKafkaClient(host, int(port), client_id="share-bench", timeout=30.0)


def setup(c: RawKafkaClient) -> tuple[uuid.UUID, str]:
    r = c.request(ApiKey.CREATE_TOPICS, 7, {"topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1,
                                                         "assignments": [], "configs": []}],
                                             "timeout": 30_000, "validate_only": False})
    assert r.topics[0].error_code == 0, r
    member = str(uuid.uuid4())
    epoch, deadline, last = 0, time.monotonic() + 60, None
    while time.monotonic() < deadline:  # Kafka creates __consumer_offsets when first asked
        fc = c.request(ApiKey.FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": [GROUP]})
        if fc.coordinators[0].error_code == 0:
            break
        time.sleep(0.2)
    while time.monotonic() < deadline:
        hb = c.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {
            "group_id": GROUP, "member_id": member, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": [TOPIC] if epoch == 0 else None})
        last = hb
        if hb.error_code == 0:
            epoch = hb.member_epoch
            if hb.assignment is not None and hb.assignment.topic_partitions:
                return hb.assignment.topic_partitions[0].topic_id, member
        time.sleep(0.2)
    raise RuntimeError(f"no assignment within 60 s: {last}")


def share_fetch(c: RawKafkaClient, tid: uuid.UUID, member: str, epoch: int, acks: list[tuple[int, int]]) -> object:
    return c.request(ApiKey.SHARE_FETCH, 2, {
        "group_id": GROUP, "member_id": member, "share_session_epoch": epoch, "max_wait": 500, "min_bytes": 1,
        "max_bytes": 50 << 20, "max_records": 5000, "batch_size": 5000, "share_acquire_mode": 0,
        "is_renew_ack": False, "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0,
                                                                            "acknowledgement_batches": [
            {"first_offset": f, "last_offset": la, "acknowledge_types": [1]} for f, la in acks]}]}],
        "forgotten_topics_data": []})


def measure(bootstrap: str, records: int) -> dict[str, float]:
    c = connect(bootstrap)
    tid, member = setup(c)
    share_fetch(c, tid, member, 0, [])  # the session, and the share-partition loaded at the log end
    for i in range(0, records, BATCH):
        body = {"acks": 1, "timeout": 30_000, "topic_data": [{"name": TOPIC, "partition_data": [
            {"index": 0, "records": build_batch([(b"k", b"v" * 100, [])] * min(BATCH, records - i))}]}]}
        assert c.request(ApiKey.PRODUCE, 9, body).responses[0].partition_responses[0].error_code == 0
    got, epoch, acks = 0, 1, []
    t0 = time.perf_counter()
    while got < records:
        r = share_fetch(c, tid, member, epoch, acks)
        epoch += 1
        acks = [(a.first_offset, a.last_offset) for t in r.responses for p in t.partitions
                for a in p.acquired_records]
        got += sum(la - f + 1 for f, la in acks)
    r = c.request(ApiKey.SHARE_ACKNOWLEDGE, 2, {
        "group_id": GROUP, "member_id": member, "share_session_epoch": epoch, "is_renew_ack": False,
        "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
            {"first_offset": f, "last_offset": la, "acknowledge_types": [1]} for f, la in acks]}]}]})
    share_s = time.perf_counter() - t0
    offset, t0 = 0, time.perf_counter()
    while offset < records:
        f = c.request(ApiKey.FETCH, 12, {
            "replica_id": -1, "max_wait": 500, "min_bytes": 1, "max_bytes": 50 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "topics": [{"topic": TOPIC, "partitions": [
                {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 50 << 20, "log_start_offset": -1,
                 "current_leader_epoch": -1}]}], "forgotten_topics_data": [], "rack_id": ""})
        data = f.responses[0].partitions[0].records or b""
        offset += _count(bytes(data))
    fetch_s = time.perf_counter() - t0
    c.close()
    return {"share": records / share_s, "fetch": records / fetch_s}


def _count(data: bytes) -> int:
    from protocol.records import parse_header

    n, pos = 0, 0
    while pos + 61 <= len(data):
        h = parse_header(data, pos)
        if pos + h.size_bytes > len(data):
            break
        n += h.last_offset_delta + 1
        pos += h.size_bytes
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=50_000)
    n = ap.parse_args().records
    rows = []
    with brokers.serve_mockbroker([]) as (_proc, boot):
        rows.append(("mockbroker", measure(boot, n)))
    try:
        kafka = brokers.RealKafka(brokers.kafka_classpath())
        kafka.start()
        try:
            rows.append((f"Kafka {kafka.version}", measure(kafka.bootstrap, n)))
        finally:
            kafka.stop()
    except brokers.Unavailable as e:
        print(f"real Kafka unavailable: {e}")
    print(f"{n} records of 100 B, one partition, one member, acknowledging each ShareFetch's records with the next")
    print(f"{'broker':<14} {'share rec/s':>12} {'fetch rec/s':>12} {'fetch/share':>12}")
    for name, m in rows:
        print(f"{name:<14} {m['share']:>12,.0f} {m['fetch']:>12,.0f} {m['fetch'] / m['share']:>12.2f}")
    if len(rows) == 2:
        print(f"share rec/s, mockbroker / Kafka: {rows[0][1]['share'] / rows[1][1]['share']:.2f}")


if __name__ == "__main__":
    main()
