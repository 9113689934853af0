"""Quotas over a real socket with the clock driven by the test: throttle times from Kafka's
formula, the three delivery modes, the throttle record, and the client-quota admin APIs."""

from __future__ import annotations

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.codec import build_request, encode_request, timedelta_ms
from protocol.errors import ErrorCode
from protocol.records import build_batch
from protocol.registry import any_spec
from tests.polling import until

from ..purgatory.test_delayed_ops import answered

QUOTA_BPS = 10_000  # producer_byte_rate


class ReferenceRate:
    """Kafka's SampledStat/Rate and QuotaUtils.throttleTime (3.8+), written out independently."""

    def __init__(self, samples=11, window_ms=1000):
        self.s, self.w = samples, window_ms
        self.samples = []  # [value, start, last]

    def record(self, v, t):
        if not self.samples or t - self.samples[-1][1] >= self.w:
            self.samples.append([0.0, t, t])
            self.samples = self.samples[-(self.s + 1):]
        self.samples[-1][0] += v
        self.samples[-1][2] = t

    def measure(self, t):
        """(rate per second, window ms) at ``t``; some sample must still be live."""
        live = [x for x in self.samples if t - x[2] < self.s * self.w]
        total = sum(x[0] for x in live)
        el = t - min(x[1] for x in live)
        full = el // self.w
        if full < self.s - 1:
            el += (self.s - 1 - full) * self.w
        el = max(el, 1)
        return total / (el / 1000), el

    def throttle(self, bound, t):
        rate, el = self.measure(t)
        return 0 if rate <= bound else int((rate - bound) / bound * el + 0.5)


def produce_frame(topic, value_len, corr=1, client_id="q1"):
    body = build_request(0, 9, {"acks": 1, "timeout": 1000, "topic_data": [{"name": topic, "partition_data": [
        {"index": 0, "records": build_batch([(b"k", b"x" * value_len, [])], base_timestamp=1)}]}]})
    return encode_request(0, 9, corr, client_id, body, any_spec(0))


def start(mode, quotas="clients/q1:producer_byte_rate=%d" % QUOTA_BPS):
    clock = ManualClock()
    b = MockBroker(config={"mock.throttle.mode": mode, "mock.quotas": quotas}, clock=clock)
    b.start()
    b.create_topic("q", 1)
    return b, clock


@pytest.fixture(params=["mute"])
def muted(request):
    b, clock = start(request.param)
    yield b, clock
    b.stop()


def send_produce(c, value_len):
    frame = produce_frame("q", value_len, corr=c._corr + 1, client_id=c.client_id)
    c._corr += 1
    c.send_raw(frame)
    return c._corr, len(frame)


def test_throttle_times_follow_kafkas_formula(muted):
    b, clock = muted
    ref = ReferenceRate()
    with RawKafkaClient.connect(b.bootstrap_servers, client_id="q1") as c:
        seen = []
        for value_len in (60_000, 60_000, 1_000, 1_000, 1_000):
            corr, size = send_produce(c, value_len)
            resp = c.response(0, 9, corr)
            ref.record(size, clock.monotonic_ms())
            expected = ref.throttle(QUOTA_BPS, clock.monotonic_ms())
            assert timedelta_ms(resp.throttle_time) == expected
            seen.append(expected)
            b.advance(max(expected, 1))  # wait out the mute, as a client honouring KIP-219
        # the burst allowance ((samples - 1) windows) passes, the rest is throttled about a window each
        assert seen[0] == 0 and all(x > 0 for x in seen[1:])


def test_mute_mode_answers_at_once_then_reads_nothing_until_the_deadline(muted):
    b, clock = muted
    with RawKafkaClient.connect(b.bootstrap_servers, client_id="q1") as c:
        corr, _ = send_produce(c, 200_000)  # 20x the quota in one request
        throttle = timedelta_ms(c.response(0, 9, corr).throttle_time)
        assert throttle > 1000
        corr2, _ = send_produce(c, 10)  # a client that ignores the throttle
        assert not answered(c)
        b.advance(throttle - 1)
        assert not answered(c)
        b.advance(1)
        assert answered(c, timeout=2)
        c.response(0, 9, corr2)
    (ev, *_rest) = b.throttle_events("q1")
    assert (ev["api_key"], ev["api_version"], ev["throttle_ms"], ev["mode"]) == (0, 9, throttle, "mute")
    assert ev["client_should_throttle"] is True  # Produce v9 >= 6: KIP-219 clients back off
    # the request was sent the instant the response came (the clock stood still): early by the whole throttle
    assert ev["next_request_ms"] == ev["start_ms"] and ev["early_ms"] == throttle
    assert ev["held_while_muted"] is True and ev["judged"] is True and ev["violation"] is True


def test_mute_mode_a_client_sending_right_at_its_deadline_is_no_violation(muted):
    """A KIP-219 client (Java kafka-clients) sends its next request at its receipt of the response plus
    the throttle: at or just after the broker's deadline.  Arriving as reading resumes (or while the
    loop is late to resume) is no violation; only a request in the socket before the deadline is."""
    b, clock = muted
    with RawKafkaClient.connect(b.bootstrap_servers, client_id="q1") as c:
        corr, _ = send_produce(c, 200_000)
        throttle = timedelta_ms(c.response(0, 9, corr).throttle_time)
        b.advance(throttle)  # the mute ends; the clock stands still while the client sends at once
        corr2, _ = send_produce(c, 10)
        assert answered(c, timeout=2)
        c.response(0, 9, corr2)
    (ev, *_rest) = b.throttle_events("q1")
    assert ev["next_request_ms"] == ev["deadline_ms"]
    assert ev["held_while_muted"] is False
    [row] = [v for v in b.violations(by="entity") if v["client_id"] == "q1"]
    assert row["violations_obliged"] == 0
    # the journal record of the request after the throttle says the same
    first, second = b.journal("PRODUCE", client_id="q1")[:2]
    assert first["after_throttle"] is None
    assert second["after_throttle"] == {"throttle_ms": throttle, "mode": "mute", "client_throttles": True,
                                        "gap_ms": throttle, "early_ms": 0, "pipelined": False, "judged": True,
                                        "violation": False}


def kernel_bytes_waiting(b, client_id):
    """What the broker's end of that client's connection has not read (FIONREAD on its socket)."""
    import array
    import fcntl
    import termios

    def unread(cluster):
        [conn] = [c for br in cluster.brokers.values() for c in br.connections if c.client_id == client_id]
        n = array.array("i", [0])
        fcntl.ioctl(conn.transport.get_extra_info("socket").fileno(), termios.FIONREAD, n, True)
        return n[0]
    return b.call(unread)


def unsent(c: RawKafkaClient) -> int:
    """What the client's socket has not yet delivered to the broker's end (TIOCOUTQ: on loopback a byte
    is acknowledged once it is in the receiver's queue)."""
    import array
    import fcntl
    import termios

    n = array.array("i", [0])
    fcntl.ioctl(c.sock.fileno(), termios.TIOCOUTQ, n, True)
    return n[0]


def test_mute_mode_times_the_next_request_by_its_first_byte_and_serves_it_at_the_deadline(muted):
    """Muted, the connection reads the first byte of the next request (to see when it arrived) and
    leaves the rest in the socket until the mute ends.  Early by 2 ms is a violation, by 1 ms is not
    (whole-ms clocks on both sides, quota/verdict.py)."""
    b, clock = muted
    with RawKafkaClient.connect(b.bootstrap_servers, client_id="q1") as c:
        corr, _ = send_produce(c, 200_000)
        throttle = timedelta_ms(c.response(0, 9, corr).throttle_time)
        b.advance(throttle - 2)
        corr2, size2 = send_produce(c, 100_000)  # 2 ms before the deadline
        assert not answered(c)
        # one byte read, not the request: the rest waits in the broker's receive queue, or, when that
        # queue is full (the kernel grows it only as the application reads), still in the client's
        # send queue
        assert kernel_bytes_waiting(b, "q1") + unsent(c) == size2 - 1
        b.advance(1)
        assert not answered(c)
        b.advance(1)
        throttle2 = timedelta_ms(c.response(0, 9, corr2).throttle_time)
        b.advance(throttle2 - 1)
        corr3, _ = send_produce(c, 10)  # 1 ms before the deadline
        assert not answered(c)
        b.advance(1)
        c.response(0, 9, corr3)
    first, second = b.throttle_events("q1")[:2]
    assert (first["early_ms"], first["judged"], first["violation"]) == (2, True, True)
    assert first["next_request_ms"] == first["deadline_ms"] - 2
    assert (second["early_ms"], second["judged"], second["violation"]) == (1, True, False)
    [row] = [v for v in b.violations(by="entity") if v["client_id"] == "q1"]
    assert (row["judged"], row["violations_obliged"], row["worst_early_ms"], row["verdict"]) == (2, 1, 2, "partly")


def test_mute_mode_a_request_pipelined_before_the_throttle_is_no_violation(muted):
    """A request the client sent before the throttled response reached it (pipelined, as Java clients
    do with max.in.flight > 1) waits out the mute like any other, but the client could not have known:
    no violation.  One it sends during the throttle is."""
    b, clock = muted
    with RawKafkaClient.connect(b.bootstrap_servers, client_id="q1") as c:
        c.sock.sendall(produce_frame("q", 200_000, corr=41) + produce_frame("q", 10, corr=42))
        throttle = timedelta_ms(c.response(0, 9, 41).throttle_time)
        assert throttle > 1000 and not answered(c)
        b.advance(throttle)
        assert answered(c, timeout=2)
        throttle2 = timedelta_ms(c.response(0, 9, 42).throttle_time)
        assert throttle2 > 0  # still over the quota: muted again
        corr3, _ = send_produce(c, 10)  # sent during the second throttle
        b.advance(throttle2)
        assert answered(c, timeout=2)
        c.response(0, 9, corr3)
    first, second = b.throttle_events("q1")[:2]
    assert (first["pipelined"], first["held_while_muted"]) == (True, False)
    assert (second["pipelined"], second["held_while_muted"]) == (False, True)
    [row] = [v for v in b.violations(by="entity") if v["client_id"] == "q1"]
    assert (row["throttles"], row["violations_obliged"]) == (2, 1), row
    records = {j["correlation_id"]: j["after_throttle"] for j in b.journal("PRODUCE", client_id="q1")}
    assert records[41] is None
    assert (records[42]["pipelined"], records[42]["violation"]) == (True, False)
    assert (records[corr3]["pipelined"], records[corr3]["violation"]) == (False, True)


def test_delay_mode_holds_the_response():
    b, clock = start("delay")
    try:
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="q1") as c:
            corr, _ = send_produce(c, 200_000)
            assert not answered(c)  # Kafka < 2.0: the throttled response itself waits
            ev = b.throttle_events("q1")[0]
            b.advance(ev["throttle_ms"] - 1)
            assert not answered(c)
            b.advance(1)
            assert timedelta_ms(c.response(0, 9, corr).throttle_time) == ev["throttle_ms"]
            # the client's own back-off (KIP-219) runs from its receipt of the held response: a request
            # 2 ms before the end of that is early
            b.advance(ev["throttle_ms"] - 2)
            send_produce(c, 10)
            until(lambda: b.throttle_events("q1")[0]["next_request_ms"] is not None, "the next request's arrival")
        ev = b.throttle_events("q1")[0]
        assert ev["sent_ms"] == ev["start_ms"] + ev["throttle_ms"]
        assert ev["deadline_ms"] == ev["start_ms"] + 2 * ev["throttle_ms"]
        assert (ev["early_ms"], ev["pipelined"], ev["judged"], ev["violation"]) == (2, False, True, True)
    finally:
        b.stop()


def test_observe_mode_records_an_early_request_and_holds_it():
    b, clock = start("observe")
    try:
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="q1") as c:
            corr, _ = send_produce(c, 200_000)
            throttle = timedelta_ms(c.response(0, 9, corr).throttle_time)
            b.advance(300)
            corr2, _ = send_produce(c, 10)  # 300 ms after the response: too early
            assert not answered(c)
            ev = b.throttle_events("q1")[0]
            assert ev["mode"] == "observe" and ev["early_ms"] == throttle - 300
            assert ev["next_request_ms"] == ev["start_ms"] + 300
            b.advance(throttle - 300)
            assert answered(c, timeout=2)
            c.response(0, 9, corr2)
    finally:
        b.stop()


def test_no_quota_no_throttle_and_other_clients_unaffected(muted):
    b, clock = muted
    with RawKafkaClient.connect(b.bootstrap_servers, client_id="other") as c:
        for _ in range(3):
            corr, _ = send_produce(c, 200_000)
            assert timedelta_ms(c.response(0, 9, corr).throttle_time) == 0
    assert b.throttle_events("other") == []


def test_acks0_produce_is_exempt_from_request_quotas():
    b, clock = start("mute", quotas="clients/r:request_rate=1")
    try:
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="r") as c:
            for _ in range(20):
                c.send(0, 9, {"acks": 0, "timeout": 1000, "topic_data": [{"name": "q", "partition_data": [
                    {"index": 0, "records": build_batch([(b"k", b"v", [])])}]}]})
            # 1 request/s over the padded 10 s window allows a burst of 10: the acks=0 produces
            # did not count, so exactly the 11th Metadata is the first throttled request
            throttles = [timedelta_ms(c.request(3, 12, {"topics": None}).throttle_time) for _ in range(11)]
            assert throttles[:10] == [0] * 10 and throttles[10] > 0
    finally:
        b.stop()


def test_request_rate_throttle_capped_at_the_window():
    b, clock = start("observe", quotas="clients/r:request_rate=2")
    try:
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="r") as c:
            throttles, times = [], []
            for _ in range(80):
                times.append(clock.monotonic_ms())
                throttles.append(timedelta_ms(c.request(3, 12, {"topics": None}).throttle_time))
                b.advance(throttles[-1])  # a client that honours every throttle
            # 2 req/s over a padded 10 s window: a burst of 20 passes, then throttles of at most one
            # window (the cap), and a client honouring them settles at the quota
            assert throttles[:20] == [0] * 20 and throttles[20] > 0 and max(throttles) == 1000
            rate = (len(times) - 21) / ((times[-1] - times[20]) / 1000)
            assert 1.6 <= rate <= 2.4, rate
    finally:
        b.stop()


def test_fetch_over_consumer_byte_rate_is_empty_and_uncharged():
    b, clock = start("mute", quotas="clients/f:consumer_byte_rate=1000")
    try:
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="p") as p:
            for _ in range(5):
                send = p.request(0, 9, {"acks": 1, "timeout": 1000, "topic_data": [{"name": "q", "partition_data": [
                    {"index": 0, "records": build_batch([(b"k", b"x" * 4000, [])])}]}]})
                assert send.responses[0].partition_responses[0].error_code == 0
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="f") as c:
            body = {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                    "session_id": 0, "session_epoch": 0, "topics": [{"topic": "q", "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20, "log_start_offset": -1,
                         "current_leader_epoch": -1}]}], "forgotten_topics_data": [], "rack_id": ""}
            r = c.request(1, 12, body)
            assert timedelta_ms(r.throttle_time) > 0
            assert (r.error_code, r.session_id, list(r.responses)) == (0, 0, [])  # empty, no session
            assert b.call(lambda br: br.brokers[0].fetch_manager.sessions) == {}
            # un-charged: the same fetch after the mute is throttled for the same window, not twice as long
            first = timedelta_ms(r.throttle_time)
            b.advance(first)
            r2 = c.request(1, 12, body)
            assert timedelta_ms(r2.throttle_time) <= first
    finally:
        b.stop()


class TestClientQuotaApis:
    def alter(self, c, entity, ops, validate=False, version=1):
        r = c.request(49, version, {"entries": [{"entity": entity, "ops": ops}], "validate_only": validate})
        return r.entries[0]

    def describe(self, c, components, strict=False):
        return c.request(48, 1, {"components": components, "strict": strict})

    def test_alter_then_describe_then_enforced(self, muted):
        b, clock = muted
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="adm") as c:
            ent = [{"entity_type": "client-id", "entity_name": "late"}]
            e = self.alter(c, ent, [{"key": "producer_byte_rate", "value": 1000.0, "remove": False}])
            assert e.error_code == 0
            r = self.describe(c, [{"entity_type": "client-id", "match_type": 0, "match": "late"}])
            assert [(x.entity[0].entity_name, [(v.key, v.value) for v in x.values]) for x in r.entries] == [
                ("late", [("producer_byte_rate", 1000.0)])]
            r = self.describe(c, [{"entity_type": "client-id", "match_type": 2, "match": None}])
            assert {x.entity[0].entity_name for x in r.entries} == {"late", "q1"}
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="late") as c:
            corr, _ = send_produce(c, 50_000)
            assert timedelta_ms(c.response(0, 9, corr).throttle_time) > 0

    def test_validation(self, muted):
        b, clock = muted
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="adm") as c:
            ent = [{"entity_type": "user", "entity_name": None}]
            bad = [("producer_byte_rate", 1.5), ("producer_byte_rate", 0.0), ("nope", 1.0)]
            for key, value in bad:
                e = self.alter(c, ent, [{"key": key, "value": value, "remove": False}])
                assert e.error_code == ErrorCode.invalid_request and e.error_message
            e = self.alter(c, [{"entity_type": "user", "entity_name": "x"}, {"entity_type": "ip", "entity_name": "1"}],
                           [{"key": "producer_byte_rate", "value": 1.0, "remove": False}])
            assert e.error_code == ErrorCode.invalid_request
            e = self.alter(c, ent, [{"key": "request_percentage", "value": 12.5, "remove": False}], validate=True)
            assert e.error_code == 0
            r = self.describe(c, [{"entity_type": "user", "match_type": 1, "match": None}])
            assert list(r.entries) == []  # validate_only changed nothing
            r = self.describe(c, [{"entity_type": "bogus", "match_type": 0, "match": "x"}])
            assert r.error_code == ErrorCode.unsupported_version  # Kafka 4.4.0: UnsupportedVersionException

    def test_remove(self, muted):
        b, clock = muted
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="adm") as c:
            ent = [{"entity_type": "client-id", "entity_name": "q1"}]
            assert self.alter(c, ent, [{"key": "producer_byte_rate", "value": 0.0, "remove": True}]).error_code == 0
            r = self.describe(c, [{"entity_type": "client-id", "match_type": 0, "match": "q1"}])
            assert list(r.entries) == []
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="q1") as c:
            corr, _ = send_produce(c, 200_000)
            assert timedelta_ms(c.response(0, 9, corr).throttle_time) == 0


def test_controller_mutation_quota_strict_and_permissive():
    # 1 partition/s with 11 one-second samples: a burst of 11 partitions, then refused (v6+).
    # Each request goes on a fresh connection of the same client id (the same quota entity), so
    # no connection is held for a throttle in observe mode.
    b, clock = start("observe", quotas="clients/adm:controller_mutation_rate=1")
    try:
        def create(name, n, version=7):
            with RawKafkaClient.connect(b.bootstrap_servers, client_id="adm") as c:
                r = c.request(19, version, {"topics": [{"name": name, "num_partitions": n, "replication_factor": 1,
                                                        "assignments": [], "configs": []}],
                                            "timeout": 1000, "validate_only": False})
                return r.topics[0].error_code, timedelta_ms(r.throttle_time)

        assert create("m1", 10) == (0, 0)
        assert create("m2", 5) == (0, 4000)  # tokens 1 -> -4: accepted, then throttled 4 s
        assert create("m3", 1) == (ErrorCode.throttling_quota_exceeded, 4000)  # strict: refused
        assert create("m4", 1, version=5) == (0, 5000)  # v5 is permissive: created, throttled longer
        b.advance(6000)
        assert create("m5", 1) == (0, 0)
        assert create("m6", 1) == (0, 1000)
    finally:
        b.stop()


def test_quota_sensors_expire_after_an_hour_idle(muted):
    b, clock = muted
    with RawKafkaClient.connect(b.bootstrap_servers, client_id="q1") as c:
        corr, _ = send_produce(c, 10)
        c.response(0, 9, corr)
    assert ("", "q1") in b.quota_metrics()["Produce"]
    b.advance(3_600_000)
    assert ("", "q1") in b.quota_metrics()["Produce"]  # idle exactly an hour: kept
    b.advance(60_000)
    assert ("", "q1") not in b.quota_metrics()["Produce"]


def test_fetch_size_capped_by_the_consumer_quota_window():
    # consumer_byte_rate 1000 with 11 samples: one fetch reads at most 10 windows' worth (10,000 bytes),
    # so 24 KB waiting costs a throttle of a few ms (header overhead), not the ~14 s the whole would
    b, clock = start("mute", quotas="clients/f:consumer_byte_rate=1000")
    try:
        assert b.call(lambda br: br.brokers[0].quotas.fetch.max_value_in_quota_window("ANONYMOUS", "f")) == 10_000
        assert b.call(lambda br: br.brokers[0].quotas.fetch.max_value_in_quota_window("ANONYMOUS", "x")) == float("inf")
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="p") as p:
            for _ in range(8):
                p.request(0, 9, {"acks": 1, "timeout": 1000, "topic_data": [{"name": "q", "partition_data": [
                    {"index": 0, "records": build_batch([(b"k", b"x" * 3000, [])])}]}]})
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="f") as c:
            body = {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                    "session_id": 0, "session_epoch": -1, "topics": [{"topic": "q", "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
                         "log_start_offset": -1, "current_leader_epoch": -1}]}],
                    "forgotten_topics_data": [], "rack_id": ""}
            throttle = timedelta_ms(c.request(1, 12, body).throttle_time)
            assert 0 < throttle < 1000
    finally:
        b.stop()


@pytest.mark.parametrize("version", [4, 11, 12, 16])
def test_fetch_throttled_by_the_request_quota_is_empty_too(version):
    """KafkaApis.handleFetchRequest: a fetch throttled by either quota is answered empty and its bytes
    un-recorded; unthrottled fetches under a byte quota send the frame that was encoded to measure them
    (records intact, header v0 for v4/v11 and v1 for flexible v12+)."""
    b, clock = start("observe", quotas="clients/f:consumer_byte_rate=1000000000,request_rate=1")
    try:
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="p") as p:
            batch = build_batch([(b"k", b"v" * 100, [])], base_timestamp=1)
            p.request(0, 9, {"acks": 1, "timeout": 1000, "topic_data": [{"name": "q", "partition_data": [
                {"index": 0, "records": batch}]}]})
        topic_id = b.call(lambda br: br.metadata.topics["q"].topic_id)
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="f") as c:
            body = {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                    "session_id": 0, "session_epoch": -1, "topics": [{"topic": "q", "topic_id": topic_id, "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20, "log_start_offset": -1,
                         "current_leader_epoch": -1}]}], "forgotten_topics_data": [], "rack_id": ""}
            throttles = []
            for _ in range(12):  # request_rate 1/s over the 10 s padded window: the 11th is throttled
                r = c.request(1, version, body)
                throttles.append(timedelta_ms(r.throttle_time))
                if throttles[-1]:
                    assert list(r.responses) == []
                else:
                    part = r.responses[0].partitions[0]
                    got = bytes(part.records)  # as produced, but for the partition leader epoch the broker stamps
                    assert (part.error_code, got[:12], got[16:]) == (0, batch[:12], batch[16:])
                b.advance(throttles[-1])
            assert throttles[:10] == [0] * 10 and all(t > 0 for t in throttles[10:]), throttles
    finally:
        b.stop()


def test_a_throttled_incremental_fetch_leaves_its_session_as_it_was():
    """KafkaApis.handleFetchRequest decides the quotas before the session is touched
    (FetchContext.getThrottledResponse instead of updateAndGenerateResponseData): a throttled
    incremental fetch is answered empty with its session id, and the session still holds what the
    client last received, so the next fetch carries the news the throttled one did not (here the
    high watermark the second record moved)."""
    b, clock = start("observe", quotas="clients/f:request_rate=1")
    key = ("q", 0)

    def produce(p):
        r = p.request(0, 9, {"acks": 1, "timeout": 1000, "topic_data": [{"name": "q", "partition_data": [
            {"index": 0, "records": build_batch([(b"k", b"v", [])], base_timestamp=1)}]}]})
        assert r.responses[0].partition_responses[0].error_code == 0

    def fetch(c, session_id, epoch):
        return c.request(1, 12, {
            "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": session_id, "session_epoch": epoch, "topics": [{"topic": "q", "partitions": [
                {"partition": 0, "fetch_offset": 1, "partition_max_bytes": 1 << 20, "log_start_offset": -1,
                 "current_leader_epoch": -1}]}], "forgotten_topics_data": [], "rack_id": ""})

    def cached_high_watermark(session_id):
        return b.call(lambda cl: cl.broker().fetch_manager.sessions[session_id].partitions[key].high_watermark)

    try:
        with RawKafkaClient.connect(b.bootstrap_servers, client_id="p") as p, \
                RawKafkaClient.connect(b.bootstrap_servers, client_id="f") as c:
            produce(p)
            full = fetch(c, 0, 0)  # request 1 of the 10 request_rate=1 lets through unthrottled
            session = full.session_id
            assert session and timedelta_ms(full.throttle_time) == 0
            assert full.responses[0].partitions[0].high_watermark == 1
            for epoch in range(1, 10):  # requests 2-10: nothing new, nothing in the response
                r = fetch(c, session, epoch)
                assert timedelta_ms(r.throttle_time) == 0 and list(r.responses) == []
            produce(p)  # the high watermark moves to 2
            throttled = fetch(c, session, 10)  # request 11
            assert timedelta_ms(throttled.throttle_time) > 0
            assert (throttled.error_code, throttled.session_id, list(throttled.responses)) == (0, session, [])
            assert cached_high_watermark(session) == 1  # what the client last received, not 2
    finally:
        b.stop()
