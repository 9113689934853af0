"""Share groups observable from outside: ``GET /share-groups/{id}`` on the admin HTTP API and the
Prometheus series under Kafka's share-group metric names (ShareGroupMetrics, ShareSessionCache,
DelayedShareFetchMetrics, BrokerTopicMetrics, group- and share-coordinator metrics), after a share
consumer's fetches and acknowledgements over a real socket."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from mockbroker import ManualClock, MockBroker
from mockbroker.admin.metrics import render_metrics
from protocol.errors import ErrorCode
from ..admin.test_metrics import one, scrape
from .test_share_wire import SF, ACCEPT, REJECT, RELEASE, Member, acquired, produce, topic_id


@pytest.fixture(scope="module")
def b():
    cfg = {"mock.topics": ["t:1"], "mock.admin.listener": "127.0.0.1:0",
           "group.share.assignment.interval.ms": 0}  # the initialized partitions at the next heartbeat
    with MockBroker(config=cfg, clock=ManualClock()) as broker:
        yield broker


E = ErrorCode


def get(b: MockBroker, path: str) -> tuple[int, dict]:
    assert b.admin_url is not None
    try:
        with urllib.request.urlopen(b.admin_url + path, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def consumed(b):
    """Two members of g-obs: five records fetched by one, acknowledged ACCEPT x2, RELEASE, REJECT, a
    failed acknowledgement (a record the member does not hold), one long poll that expires."""
    tid = topic_id(b, "t")
    m, other = Member(b, "g-obs"), Member(b, "g-obs")
    m.join(), other.join()
    assert acquired(m.fetch(tid)) == []  # the share-partition starts at the log end (latest)
    produce(m.c, "t", 5)
    assert acquired(m.fetch(tid)) == [(0, 4, 1)]
    assert acquired(other.fetch(tid)) == []  # all five are m's
    m.ack(tid, [(0, 1, [ACCEPT]), (2, 2, [RELEASE]), (3, 3, [REJECT])])
    r = other.ack(tid, [(4, 4, [ACCEPT])])  # m holds it
    assert [p.error_code for t in r.responses for p in t.partitions] == [E.invalid_record_state]
    return m, other


def test_get_share_group_shows_members_and_in_flight_records(b, consumed):
    m, other = consumed
    status, v = get(b, "/share-groups/g-obs")
    assert status == 200 and (v["group_id"], v["type"]) == ("g-obs", "share")
    assert sorted(x["member_id"] for x in v["members"]) == sorted([m.member_id, other.member_id])
    assert {x["member_id"]: x["assigned"] for x in v["members"]} == {m.member_id: {"t": [0]},
                                                                     other.member_id: {"t": [0]}}
    sp = v["share_partitions"][0]
    assert (sp["topic"], sp["partition"], sp["start_offset"]) == ("t", 0, 2)
    assert {r["first_offset"]: (r["state"], r["delivery_count"], r["member_id"]) for r in sp["records"]} == {
        2: ("AVAILABLE", 1, None), 3: ("ARCHIVED", 1, None), 4: ("ACQUIRED", 1, m.member_id)}
    assert v["acknowledgements"] == {"ACCEPT": 2, "RELEASE": 1, "REJECT": 1}
    assert get(b, "/share-groups/nope")[0] == 404
    m.c.request(8, 8, {"group_id": "classic-g", "generation_id_or_member_epoch": -1, "member_id": "",
                       "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}]})
    assert get(b, "/share-groups/classic-g")[0] == 404  # a classic group is no share group
    assert get(b, "/groups/classic-g")[0] == 200


def expire_a_long_poll(b: MockBroker) -> Member:
    """A member of g-exp long-polls a share-partition with nothing to acquire; the clock passes its
    max_wait and the purgatory answers it empty (DelayedShareFetch expired)."""
    tid = topic_id(b, "t")
    m = Member(b, "g-exp")
    m.join()
    assert acquired(m.fetch(tid)) == []  # opens the session; latest: nothing
    corr = m.c.send(SF, 2, {"group_id": "g-exp", "member_id": m.member_id, "share_session_epoch": m.session,
                            "max_wait": 500, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 500,
                            "batch_size": 500, "share_acquire_mode": 0, "is_renew_ack": False,
                            "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0,
                                                                       "acknowledgement_batches": []}]}],
                            "forgotten_topics_data": []})
    for _ in range(200):  # bounded: the request reaches the broker and waits in its ShareFetch purgatory
        if b'numdelayedoperations{broker="0",delayedOperation="ShareFetch"} 1.0' in b.call(
                lambda c: render_metrics(c)[0]):
            break
        time.sleep(0.01)
    else:
        raise AssertionError("the ShareFetch did not wait in the purgatory")
    b.advance(500)
    assert acquired(m.c.response(SF, 2, corr)) == []
    return m  # its connection open: a closed one takes its share session with it


def test_prometheus_series_under_kafkas_share_metric_names(b, consumed):
    idle = expire_a_long_poll(b)
    m = scrape(b)
    acks = {t: one(m, "kafka_server_sharegroupmetrics_recordacknowledgements_total", broker=0, ackType=t)
            for t in ("Accept", "Release", "Reject", "Renew")}
    assert acks == {"Accept": 2, "Release": 1, "Reject": 1, "Renew": 0}
    assert one(m, "kafka_server_brokertopicmetrics_failedshareacknowledgementrequests_total", broker=0) == 1
    assert one(m, "kafka_server_sharesessioncache_sharesessionscount", broker=0) == 3  # one per fetching member
    assert one(m, "kafka_server_sharesessioncache_sharepartitionscount", broker=0) == 3
    assert one(m, "kafka_server_sharesessioncache_sharesessionevictions_total", broker=0) == 0
    # every ShareFetch that found nothing to acquire waited and expired: max_wait 0 ones at once (three),
    # the long poll at 500 ms
    assert one(m, "kafka_server_delayedsharefetchmetrics_expires_total", broker=0) == 4
    # every group epoch bump is a rebalance: a join, then the partitions initialized (g-obs: 3, g-exp: 2),
    # from a new group's epoch 1 (Kafka 4.3+)
    epochs = [b.share_group(g)["group_epoch"] for g in ("g-obs", "g-exp")]
    assert epochs == [4, 3]
    assert one(m, "kafka_server_group_coordinator_metrics_share_group_rebalance_count") == sum(e - 1 for e in epochs)
    writes = one(m, "kafka_server_share_coordinator_metrics_write_total")
    assert writes >= 2 and writes == b.share_group("g-obs")["broker_metrics"]["share_coordinator_writes"]
    assert idle.c is not None
