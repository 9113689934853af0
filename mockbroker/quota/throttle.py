"""Applying quotas to a response and delivering the throttle (KafkaApis' quota calls,
``RequestHandlerHelper.sendResponseMaybeThrottle``, ``ThrottledChannel``).

The dispatcher calls ``apply_quotas`` after the handler and
``send_response_maybe_throttle`` with the encoded response; the connection
only offers ``send_response``, ``start_throttling``/``end_throttling`` and
``hold_until``, and reports its next request to the ``ThrottledChannel``.

Which quotas a response is charged, as Kafka 4.x does:

* Produce: ``producer_byte_rate`` with the request size, and the request
  quotas unless acks=0 (exempt); the larger throttle applies.
* Fetch: the request quotas first, then ``consumer_byte_rate`` with the
  response size; a fetch that violates the byte quota is un-charged and
  answered empty, at once, with the throttle time (KIP-219).
* Every other API: the request quotas (``request_percentage`` from the
  handler's time, and ``request_rate`` in requests per second).
* CreateTopics / DeleteTopics: ``controller_mutation_rate`` as well
  (strict from CreateTopics v6 / DeleteTopics v5: THROTTLING_QUOTA_EXCEEDED).

Delivery (``mock.throttle.mode``):

* ``mute`` (Kafka >= 2.0, KIP-219): the response goes out at once, then the
  channel is not read for the throttle time; the connection still sees the first
  byte of the client's next request arrive (``KafkaConnection.start_throttling``).
* ``delay`` (Kafka < 2.0): the response itself is held for the throttle time.
* ``observe``: the response goes out at once and the socket keeps being read;
  a request that arrives before the deadline is held until it passes.

In each, the ``ThrottleEvent`` records when the next request arrived and whether
the client waited out its throttle, by ``quota.verdict``'s rule.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from protocol.registry import ApiKey

from ..clock import Clock
from ..connection import KafkaConnection
from ..request import RequestContext
from .manager import QuotaManagers
from .verdict import is_early, is_judged


@dataclass(slots=True)
class ThrottleEvent:
    """One throttled response and what the client did next on that connection; judged by
    ``quota.verdict``'s rule (did the client wait out the throttle?)."""

    node_id: int
    conn_id: int
    peer: str
    user: str
    client_id: str
    api_key: int
    api_version: int
    client_should_throttle: bool  # KIP-219: does this response version make clients back off
    mode: str
    quota_type: str               # the quota that throttled: Produce, Fetch, Request, ControllerMutation
    start_ms: int                 # monotonic ms when the throttle began: the response was sent (mute/observe) or held (delay)
    throttle_ms: int
    sent_ms: int | None = None    # when the response went out: start_ms, or after the hold (delay; None until then)
    next_request_ms: int | None = None  # when the connection's next request began to arrive (its first byte)
    early_ms: int | None = None         # deadline - arrival, when the next request arrived before the deadline, else 0
    held_while_muted: bool | None = None  # mute mode: the next request (not pipelined) arrived before the mute's end
    # the client had sent its next request before this response went out (pipelined, up to
    # max.in.flight): it could not have known of the throttle, so that request is no violation
    pipelined: bool = False

    @property
    def deadline_ms(self) -> int:
        """From when the client may send again: its back-off runs from the response (KIP-219), so
        the response's sending + the throttle; mute and observe: also the end of the broker's own
        mute or hold; delay: twice the throttle after the hold began (once the response is out,
        ``sent_ms`` + the throttle)."""
        sent = self.sent_ms if self.sent_ms is not None else self.start_ms + self.throttle_ms
        return sent + self.throttle_ms

    @property
    def judged(self) -> bool:
        """A next request came, not pipelined, after a throttle longer than the tolerance."""
        return is_judged(self.next_request_ms is not None, self.pipelined, self.throttle_ms)

    @property
    def violation(self) -> bool:
        """KIP-219: the next request arrived more than the tolerance before the deadline (every mode)."""
        return is_early(self.judged, self.early_ms)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["deadline_ms"] = self.deadline_ms
        d["judged"] = self.judged
        d["violation"] = self.violation
        return d


def request_throttle_ms(q: QuotaManagers, ctx: RequestContext, now_ms: int) -> int:
    user, cid = ctx.principal, ctx.client_id
    pct = ctx.handler_ns * 100 / 1e9  # ClientRequestQuotaManager.nanosToPercentage
    t1 = q.request.maybe_record_and_get_throttle_time_ms(user, cid, pct, now_ms)
    t2 = q.request_rate.maybe_record_and_get_throttle_time_ms(user, cid, 1, now_ms)
    return max(t1, t2)


def apply_quotas(q: QuotaManagers, ctx: RequestContext, result: dict[str, Any],
                 response_size: Callable[[], int], now_ms: int) -> tuple[dict[str, Any], int, str]:
    """Charge the quotas for this response: (possibly replaced result, throttle ms, quota type)."""
    user, cid = ctx.principal, ctx.client_id
    key = ctx.api_key
    if key == ApiKey.PRODUCE:
        bw = q.produce.maybe_record_and_get_throttle_time_ms(user, cid, ctx.size_bytes, now_ms)
        rq = request_throttle_ms(q, ctx, now_ms)  # acks=0 never gets here (no response)
        throttle = max(bw, rq)
        quota_type = "Produce" if bw >= rq else "Request"
        if bw:
            q.produce.record_throttle(user, cid, bw, now_ms)
        if rq:
            q.request.record_throttle(user, cid, rq, now_ms)
        return result, throttle, quota_type
    if key == ApiKey.FETCH:
        # KafkaApis.handleFetchRequest: both quotas are recorded; when either throttles, the
        # byte-rate record is undone and the response is empty (the larger throttle applies)
        rq = request_throttle_ms(q, ctx, now_ms)
        bw = 0
        size = 0
        if q.fetch.enabled:
            size = response_size()
            bw = q.fetch.maybe_record_and_get_throttle_time_ms(user, cid, size, now_ms)
        throttle = max(bw, rq)
        if throttle:
            if q.fetch.enabled:
                q.fetch.unrecord(user, cid, size, now_ms)
            if bw > rq:
                q.fetch.record_throttle(user, cid, bw, now_ms)
            else:
                q.request.record_throttle(user, cid, rq, now_ms)
            result = throttled_fetch_response(ctx, result)
        return result, throttle, "Fetch" if bw > rq else "Request"
    rq = request_throttle_ms(q, ctx, now_ms)
    if rq:
        q.request.record_throttle(user, cid, rq, now_ms)
    cm = ctx.controller_throttle_ms  # sendResponseMaybeThrottleWithControllerQuota: the larger applies
    if cm > rq:
        return result, cm, "ControllerMutation"
    return result, rq, "Request"


def throttled_fetch_response(ctx: RequestContext, result: dict[str, Any]) -> dict[str, Any]:
    """FetchContext.getThrottledResponse: no partitions; a full or sessionless fetch
    answers session id 0 (a session just created for it is dropped), an incremental one
    keeps its session id."""
    session_id = result.get("session_id", 0)
    if session_id and ctx.fetch_session_epoch == 0:  # a full fetch that would have created this session
        ctx.broker.fetch_manager.sessions.pop(session_id, None)
        session_id = 0
    return {"error_code": result.get("error_code", 0), "session_id": session_id, "responses": []}


class ThrottledChannel:
    """One throttled response on one connection (Kafka's ``ThrottledChannel``), in the mode
    ``mock.throttle.mode`` chose; it records what the client did next in its ``ThrottleEvent``.

    The next request's arrival is its first byte on the connection, in every mode: observe and
    delay read the socket as usual; mute watches it (``KafkaConnection.start_throttling``) without
    serving anything before the mute ends.  A request already waiting when the response goes out is
    pipelined, and its arrival is that moment."""

    __slots__ = ("conn", "event", "clock")

    def __init__(self, conn: KafkaConnection, event: ThrottleEvent, clock: Clock) -> None:
        self.conn = conn
        self.event = event
        self.clock = clock

    def start(self, frame: bytes | memoryview) -> None:
        event = self.event
        if event.mode == "delay":  # Kafka < 2.0 ThrottledResponse: the response itself is held
            self.clock.call_later(event.throttle_ms, lambda: self.send(frame))
            return
        conn = self.conn
        self.send(frame)
        if event.mode == "mute":  # startThrottling now, endThrottling at the deadline
            conn.start_throttling(watch=not event.pipelined)
            self.clock.call_later(event.throttle_ms, conn.end_throttling)
        else:  # observe: keep reading; a request arriving early is held until the deadline
            conn.hold_until(event.deadline_ms)

    def send(self, frame: bytes | memoryview) -> None:
        conn, event = self.conn, self.event
        event.sent_ms = self.clock.monotonic_ms()
        if conn.closed:
            return
        # before the response goes out: once it has, the client may read it and send again at once
        event.pipelined = conn.input_waiting() > 0
        conn.next_request_observer = self.observe_next_request
        conn.send_response(frame)
        if event.pipelined and conn.next_request_observer is not None:  # it is there already
            conn.next_request_observer = None
            self.observe_next_request(event.sent_ms)

    def observe_next_request(self, now_ms: int) -> None:
        ev = self.event
        ev.next_request_ms = now_ms
        ev.early_ms = max(ev.deadline_ms - now_ms, 0)
        if ev.mode == "mute":
            ev.held_while_muted = ev.early_ms > 0 and not ev.pipelined
        # the next request's journal record says what came of the throttle
        self.conn.request_after_throttle = {
            "throttle_ms": ev.throttle_ms, "mode": ev.mode, "client_throttles": ev.client_should_throttle,
            "gap_ms": now_ms - (ev.sent_ms if ev.sent_ms is not None else ev.start_ms), "early_ms": ev.early_ms,
            "pipelined": ev.pipelined, "judged": ev.judged, "violation": ev.violation}


def send_response_maybe_throttle(conn: KafkaConnection, frame: bytes | memoryview, throttle_ms: int,
                                 ctx: RequestContext, quota_type: str, mode: str, clock: Clock,
                                 events: deque[ThrottleEvent]) -> None:
    """Send a response carrying ``throttle_ms`` as ``mode`` says, recording the throttle."""
    if throttle_ms <= 0:
        conn.send_response(frame)
        return
    event = ThrottleEvent(ctx.node_id, conn.conn_id, conn.peer, ctx.principal, ctx.client_id, ctx.api_key,
                          ctx.version, ctx.spec.client_throttles(ctx.version), mode, quota_type,
                          clock.monotonic_ms(), throttle_ms)
    events.append(event)
    ThrottledChannel(conn, event, clock).start(frame)
