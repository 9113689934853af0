"""The KIP-219 oracle, run again and again: a raw client that never waits is judged "ignores" on
every throttle it can be judged on, one that sleeps for the throttle time "honours", in each
``mock.throttle.mode`` (mute, delay, observe), on one and on three brokers, and ten identical runs
(a fresh broker each) give identical verdicts and counts.

Both clients send Produce v9 (KIP-219 obliges the client from v6) to the partition each broker
leads, one request at a time (nothing pipelined), under a ``producer_byte_rate`` of ``QUOTA``.  With
two 1 s quota samples (``quota.window.num=2``) a rate is measured over at least one second, so the
first request (``FIRST`` bytes, 1.3 s of quota) is throttled ~300 ms and each next one (``NEXT``
bytes, 0.8 s of quota) ~800 ms, or ~500 ms for the waiting client in delay mode (it waits out the
hold and then its own back-off, so it falls that much below the quota): every request is throttled,
by hundreds of ms of the quota's time, so that a client or a broker loop stalled for a while on a
loaded machine still sends the same traffic and gets the same counts.  The last throttle of each
connection has no next request, so (requests - 1) per connection are judged: 3 requests on the
ManualClock, 2 on the system clock (the second's throttle is only waited for in delay mode).

* On the ManualClock time moves only when the test says: the never-waiting client's next request
  arrives at the very instant its throttled response went out, so each is early by exactly the
  throttle; the waiting client's arrives exactly at the deadline (0 early).
* On the system clock (the probe that used to decide mute mode raced the deadline there) the same
  verdicts and counts, and every early request is early by nearly its whole throttle.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.codec import build_request, encode_request, timedelta_ms
from protocol.records import build_batch
from protocol.registry import any_spec

from ..purgatory.test_delayed_ops import answered

MODES = ("mute", "delay", "observe")
RUNS = 10
QUOTA = 20_000
FIRST = 26_000
NEXT = 16_000
REQUESTS = {"manual": 3, "system": 2}
IGNORES, HONOURS = "q-ignores", "q-honours"


def produce_frame(partition: int, value_len: int, corr: int, client_id: str) -> bytes:
    body = build_request(0, 9, {"acks": 1, "timeout": 5000, "topic_data": [{"name": "t", "partition_data": [
        {"index": partition, "records": build_batch([(b"k", b"x" * value_len, [])], base_timestamp=1)}]}]})
    return encode_request(0, 9, corr, client_id, body, any_spec(0))


class Client:
    """One raw client's connection to one broker: sends, reads the response, and then either sends
    the next at once (``waits=False``) or first sleeps for the throttle the response carried."""

    def __init__(self, b: MockBroker, mode: str, node: int, port: int, partition: int, client_id: str, waits: bool,
                 manual: bool) -> None:
        self.b, self.mode, self.node, self.partition, self.waits, self.manual = b, mode, node, partition, waits, manual
        self.c = RawKafkaClient("127.0.0.1", port, client_id=client_id)
        self.requests = REQUESTS["manual" if manual else "system"]

    def run(self) -> None:
        with self.c:
            for i in range(self.requests):
                throttle = self.exchange(FIRST if i == 0 else NEXT)
                if self.waits and throttle and i < self.requests - 1:
                    self.sleep(throttle)

    def exchange(self, value_len: int) -> int:
        self.c._corr += 1
        corr = self.c._corr
        before = len(self.events()) if self.manual else 0
        self.c.send_raw(produce_frame(self.partition, value_len, corr, self.c.client_id or ""))
        if self.manual:
            self.through_hold(before)
        return timedelta_ms(self.c.response(0, 9, corr).throttle_time)

    def sleep(self, ms: int) -> None:
        if self.manual:
            self.b.advance(ms)
        else:
            time.sleep(ms / 1000)

    def events(self) -> list[dict[str, Any]]:
        return [e for e in self.b.throttle_events(self.c.client_id) if e["node_id"] == self.node]

    def through_hold(self, before: int) -> None:
        """ManualClock: move time to the end of the throttle hold that keeps this request's response
        back, if any: the mute or the observe-mode hold of the last throttle before it, or (delay)
        the hold of its own throttled response, once the broker has it."""
        limit = time.monotonic() + 10
        while not answered(self.c, 0.005):
            assert time.monotonic() < limit, "no response in 10 s"
            events = self.events()
            holding = events[before:before + 1] if self.mode == "delay" else events[:before][-1:]
            until = max((e["start_ms"] + e["throttle_ms"] for e in holding), default=0)
            now = self.b.clock.monotonic_ms()  # type: ignore[union-attr]  # a ManualClock here
            if until > now:
                self.b.advance(until - now)


def run_once(mode: str, brokers: int, manual: bool, **config: Any) -> dict[str, Any]:
    """One run on a fresh broker: both clients on every broker; what the broker says of each."""
    cfg = {"mock.throttle.mode": mode, "mock.num.brokers": brokers, "quota.window.num": 2,
           "quota.window.size.seconds": 1, **config}
    with MockBroker(cfg, clock=ManualClock() if manual else None) as b:
        b.create_topic("t", brokers)
        for cid in (IGNORES, HONOURS):
            b.set_quota(client_id=cid, producer_byte_rate=QUOTA)
        ports = {x["id"]: x["port"] for x in b.brokers()}
        leads = {b.partition_state("t", p)["leader"]: p for p in range(brokers)}
        clients = [Client(b, mode, node, ports[node], p, cid, cid == HONOURS, manual)
                   for cid in (IGNORES, HONOURS) for node, p in sorted(leads.items())]
        if manual:  # one thread drives the clock: one connection after the other
            for c in clients:
                c.run()
        else:  # all at once, each connection on its own thread
            threads = [threading.Thread(target=c.run) for c in clients]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert not any(t.is_alive() for t in threads), "a client did not finish in 60 s"
        entity = {r["client_id"]: r for r in b.violations(by="entity")}
        conns = b.violations(by="connection")
        events = {cid: b.throttle_events(cid) for cid in (IGNORES, HONOURS)}
        journal = {cid: [j["after_throttle"] for j in b.journal("PRODUCE", client_id=cid) if j["after_throttle"]]
                   for cid in (IGNORES, HONOURS)}
    out: dict[str, Any] = {}
    for cid in (IGNORES, HONOURS):
        row = entity[cid]
        out[cid] = {
            "counts": {k: row[k] for k in ("throttles", "judged", "violations_obliged", "violations_not_obliged")},
            "verdict": row["verdict"],
            "connections": sorted((r["broker"], r["verdict"], r["judged"], r["violations_obliged"])
                                  for r in conns if r["client_id"] == cid),
            # the journal's record of each next request says the same as the broker's API
            "journal": (sum(a["judged"] for a in journal[cid]), sum(a["violation"] for a in journal[cid])),
            "early": [(e["throttle_ms"], e["early_ms"]) for e in events[cid] if e["next_request_ms"] is not None],
            "worst_early_ms": row["worst_early_ms"],
        }
    return out


def check_run(got: dict[str, Any], brokers: int, exact: bool) -> None:
    ign, hon = got[IGNORES], got[HONOURS]
    requests = REQUESTS["manual" if exact else "system"]
    judged = (requests - 1) * brokers
    for c in (ign, hon):
        assert c["counts"]["throttles"] == requests * brokers, c
        assert c["counts"]["judged"] == judged, c
        assert c["journal"][0] == judged, c
    assert ign["verdict"] == "ignores" and ign["counts"]["violations_obliged"] == judged, ign
    assert ign["journal"][1] == judged, ign
    assert all(v == "ignores" for _, v, _, _ in ign["connections"]), ign
    assert hon["verdict"] == "honours" and hon["counts"]["violations_obliged"] == 0, hon
    assert hon["journal"][1] == 0, hon
    assert all(v == "honours" for _, v, _, _ in hon["connections"]), hon
    if exact:  # ManualClock: the never-waiting client is early by the whole throttle, the other by nothing
        assert all(early == throttle for throttle, early in ign["early"]), ign["early"]
        assert all(early == 0 for _, early in hon["early"]), hon["early"]
    else:  # system clock: the throttle less the client's turnaround and the loop's delay
        assert all(1 < early <= throttle for throttle, early in ign["early"]), ign["early"]
        assert all(early <= 1 for _, early in hon["early"]), hon["early"]
    assert ign["worst_early_ms"] >= 100, ign
    assert hon["worst_early_ms"] == 0, hon


def counts_of(got: dict[str, Any]) -> dict[str, Any]:
    """What must be identical from run to run: verdicts and counts (per client and per connection)."""
    return {cid: (c["verdict"], c["counts"], c["connections"], c["journal"]) for cid, c in got.items()}


@pytest.mark.parametrize("clock", ["manual", pytest.param("system", marks=pytest.mark.slow)])
@pytest.mark.parametrize("brokers", [1, 3])
@pytest.mark.parametrize("mode", MODES)
def test_ten_runs_give_the_same_verdicts_and_counts(mode, brokers, clock):
    manual = clock == "manual"
    runs = [run_once(mode, brokers, manual) for _ in range(RUNS)]
    for got in runs:
        check_run(got, brokers, exact=manual)
    assert all(counts_of(r) == counts_of(runs[0]) for r in runs), [counts_of(r) for r in runs]
    if manual:  # on the ManualClock the early requests are early by the same ms every run
        assert all(r[IGNORES]["early"] == runs[0][IGNORES]["early"] for r in runs)
