"""Which quotas a response is charged (KafkaApis' quota calls), and the record of one throttle
(``ThrottleEvent``).  Plain values in, plain values out: the dispatcher (``kafka_apis.py``)
calls ``charge_quotas`` once per answered request, and delivering the throttle (mute, delay,
observe) is the network layer's (``throttled_channel.py``).

As Kafka 4.x charges them:

* Produce (``handleProduceRequest``): ``producer_byte_rate`` with the request size, and the
  request quotas unless acks=0 (exempt: no response); the larger throttle applies.
* Fetch (``handleFetchRequest``): the request quotas first, then ``consumer_byte_rate`` with
  the response size; a fetch either throttles is un-charged its bytes and answered empty, at
  once, with the throttle time (KIP-219), before its fetch session is touched.
* Every other API (``RequestHandlerHelper.sendResponseMaybeThrottle``): the request quotas
  (``request_percentage`` from the handler's time, and ``request_rate`` in requests per second).
* CreateTopics / DeleteTopics (``sendResponseMaybeThrottleWithControllerQuota``):
  ``controller_mutation_rate`` as well, the larger throttle applies (strict from CreateTopics
  v6 / DeleteTopics v5: THROTTLING_QUOTA_EXCEEDED, decided by the handler).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from protocol.registry import ApiKey

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


@dataclass(frozen=True, slots=True)
class QuotaCharge:
    """What charging a response gave: its throttle, the quota that set it (Produce, Fetch, Request,
    ControllerMutation), and for a Fetch whether it is answered empty instead."""

    throttle_ms: int
    quota_type: str
    empty_fetch: bool = False


def request_throttle_ms(q: QuotaManagers, user: str, client_id: str, handler_ns: int, now_ms: int) -> int:
    pct = handler_ns * 100 / 1e9  # ClientRequestQuotaManager.nanosToPercentage
    t1 = q.request.maybe_record_and_get_throttle_time_ms(user, client_id, pct, now_ms)
    t2 = q.request_rate.maybe_record_and_get_throttle_time_ms(user, client_id, 1, now_ms)
    return max(t1, t2)


def charge_quotas(q: QuotaManagers, api_key: int, user: str, client_id: str, request_bytes: int, handler_ns: int,
                  controller_throttle_ms: int, response_size: Callable[[], int], now_ms: int) -> QuotaCharge:
    """Charge the quotas for one response (``response_size`` is asked only when the consumer byte
    quota is on; a manager with no quota of its kind configured records nothing: its ``enabled``)."""
    if api_key == ApiKey.PRODUCE:
        bw = q.produce.maybe_record_and_get_throttle_time_ms(user, client_id, request_bytes, now_ms)
        rq = request_throttle_ms(q, user, client_id, handler_ns, now_ms)  # acks=0 never gets here
        if bw:
            q.produce.record_throttle(user, client_id, bw, now_ms)
        if rq:
            q.request.record_throttle(user, client_id, rq, now_ms)
        return QuotaCharge(max(bw, rq), "Produce" if bw >= rq else "Request")
    if api_key in (ApiKey.FETCH, ApiKey.SHARE_FETCH):  # processShareFetchResponse charges as Fetch
        # KafkaApis.handleFetchRequest: both quotas are recorded; when either throttles, the
        # byte-rate record is undone and the response is empty (the larger throttle applies)
        rq = request_throttle_ms(q, user, client_id, handler_ns, now_ms)
        bw = 0
        size = 0
        if q.fetch.enabled:
            size = response_size()
            bw = q.fetch.maybe_record_and_get_throttle_time_ms(user, client_id, size, now_ms)
        throttle = max(bw, rq)
        if throttle:
            if q.fetch.enabled:
                q.fetch.unrecord(user, client_id, size, now_ms)
            if bw > rq:
                q.fetch.record_throttle(user, client_id, bw, now_ms)
            else:
                q.request.record_throttle(user, client_id, rq, now_ms)
        return QuotaCharge(throttle, "Fetch" if bw > rq else "Request", empty_fetch=throttle > 0)
    rq = request_throttle_ms(q, user, client_id, handler_ns, now_ms)
    if rq:
        q.request.record_throttle(user, client_id, rq, now_ms)
    if controller_throttle_ms > rq:  # sendResponseMaybeThrottleWithControllerQuota: the larger applies
        return QuotaCharge(controller_throttle_ms, "ControllerMutation")
    return QuotaCharge(rq, "Request")
