"""Applying quotas to a response and delivering the throttle (KafkaApis' quota calls,
``RequestHandlerHelper.sendResponseMaybeThrottle``, ``ThrottledChannel``).

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
  channel is not read for the throttle time.
* ``delay`` (Kafka < 2.0): the response itself is held for the throttle time.
* ``observe``: the response goes out at once and the socket keeps being read;
  a request that arrives before the deadline is held until it passes and its
  arrival is recorded, so a test sees exactly how early a client sent.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from protocol.registry import ApiKey

from .manager import QuotaManagers

MODES = ("mute", "delay", "observe")


@dataclass(slots=True)
class ThrottleEvent:
    """One throttled response and what the client did next on that connection."""

    node_id: int
    conn_id: int
    peer: str
    user: str
    client_id: str
    api_key: int
    api_version: int
    client_should_throttle: bool  # KIP-219: does this response version make clients back off
    mode: str
    start_ms: int                 # monotonic ms when the response was sent (mute/observe) or queued (delay)
    throttle_ms: int
    next_request_ms: int | None = None  # when the connection's next request arrived (observe: exactly)
    early_ms: int | None = None         # deadline - arrival, when the client sent before the deadline
    held_while_muted: bool | None = None  # mute mode: a request was already waiting when reading resumed

    @property
    def deadline_ms(self) -> int:
        return self.start_ms + self.throttle_ms

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["deadline_ms"] = self.deadline_ms
        return d


def request_throttle_ms(q: QuotaManagers, ctx: Any, now_ms: int) -> int:
    user, cid = ctx.principal, ctx.client_id
    pct = ctx.handler_ns * 100 / 1e9  # ClientRequestQuotaManager.nanosToPercentage
    t1 = q.request.maybe_record_and_get_throttle_time_ms(user, cid, pct, now_ms)
    t2 = q.request_rate.maybe_record_and_get_throttle_time_ms(user, cid, 1, now_ms)
    return max(t1, t2)


def apply_quotas(q: QuotaManagers, ctx: Any, request: Any, result: dict, response_size: Any,
                 now_ms: int) -> tuple[dict, int, str]:
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


def throttled_fetch_response(ctx: Any, result: dict) -> dict:
    """FetchContext.getThrottledResponse: no partitions; a full or sessionless fetch
    answers session id 0 (a session just created for it is dropped), an incremental one
    keeps its session id."""
    session_id = result.get("session_id", 0)
    req_session = getattr(ctx, "fetch_session_epoch", None)
    if session_id and req_session == 0:  # a full fetch that would have created this session
        ctx.broker.fetch_manager.sessions.pop(session_id, None)
        session_id = 0
    return {"error_code": result.get("error_code", 0), "session_id": session_id, "responses": []}
