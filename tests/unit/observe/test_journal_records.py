"""Exactly one journal record per request, also for those that end without an answer: cut off by a
close while parked, refused before they had a context, or answered by the KIP-511 fallback; and
``seq`` numbers that leave a gap only where a record was dropped."""

from __future__ import annotations

import struct

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from tests.polling import until

from ..purgatory.test_delayed_ops import fetch_body, parked, produce_body


def records(b, client_id):
    return [(r["api"], r["api_version"], r["correlation_id"], r["outcome"]) for r in b.journal(client_id=client_id)]


def test_a_parked_request_cut_off_by_a_close_has_one_closed_record():
    with MockBroker(config={"mock.topics": "jr:1"}, clock=ManualClock()) as b:
        c = RawKafkaClient.connect(b.bootstrap_servers, client_id="gone")
        corr = c.send(1, 12, fetch_body("jr", 0, max_wait_ms=1000))
        parked(b, "Fetch")
        c.close()
        until(lambda: records(b, "gone"), "the closed fetch's record")
        b.advance(1000)  # the fetch expires now: no second record
        assert records(b, "gone") == [("FETCH", 12, corr, "closed")]


def test_refused_requests_and_the_kip511_fallback_are_recorded():
    with MockBroker() as b:
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="old") as c:
            # ApiVersions v99: answered v0 UNSUPPORTED_VERSION (KIP-511)
            c.send_raw(struct.pack(">ihhih3s", 13, 18, 99, 7, 3, b"old"))
            c.recv_frame()
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="bad") as c:
            c.send_raw(struct.pack(">ihhih3s", 13, 3, 99, 8, 3, b"bad"))  # Metadata v99: closed
            assert c.is_closed_by_peer()
        until(lambda: len(b.journal()) >= 2, "both records")
        got = [(r["api"], r["api_version"], r["correlation_id"], r["outcome"], r["error_code"]) for r in b.journal()]
        assert ("API_VERSIONS", 99, 7, "response", 35) in got
        assert ("METADATA", 99, 8, "closed", None) in got
        assert [r["seq"] for r in b.journal()] == list(range(1, len(got) + 1))


def test_a_parked_produce_cut_off_by_a_close_keeps_the_bytes_it_appended():
    """acks=all waits for the followers (100 ms of replication lag on a manual clock); the client
    closes first: the record is closed, and still says what the request appended."""
    cfg = {"mock.num.brokers": 3, "default.replication.factor": 3, "mock.replication.lag.ms": 100}
    with MockBroker(config=cfg, clock=ManualClock()) as b:
        b.create_topic("jp", 1, 3)
        leader = b.partition_state("jp", 0)["leader"]
        node_ids = b.call(lambda cl: list(cl.brokers))
        c = RawKafkaClient.connect(b.bootstrap_servers.split(",")[node_ids.index(leader)], client_id="gone-p")
        corr = c.send(0, 9, produce_body("jp", acks=-1, n=3))
        parked(b, "Produce", node_id=leader)
        c.close()
        until(lambda: records(b, "gone-p"), "the closed produce's record")
        b.advance(100)  # the followers catch up now: no second record
        [rec] = b.journal(client_id="gone-p")
        assert (rec["correlation_id"], rec["outcome"], rec["purgatory"]) == (corr, "closed", "Produce")
        assert [(p["topic"], p["partition"], p["error_code"]) for p in rec["partitions"]] == [("jp", 0, 0)]
        assert rec["partitions"][0]["bytes"] > 0
