"""Delivering a throttle on the connection (Kafka's ``ThrottledChannel`` and the throttle half of
``RequestHandlerHelper.sendResponseMaybeThrottle``); which quotas set it is ``quota/throttle.py``.

The connection only offers ``send_response``, ``start_throttling``/``end_throttling`` and
``hold_until``, and reports its next request to the ``ThrottledChannel`` through
``next_request_observer``.  Delivery (``mock.throttle.mode``):

* ``mute`` (Kafka >= 2.0, KIP-219): the response goes out at once, then the
  channel is not read for the throttle time; the connection still sees the first
  byte of the client's next request arrive (``KafkaConnection.start_throttling``).
* ``delay`` (Kafka < 2.0): the response itself is held for the throttle time.
* ``observe``: the response goes out at once and the socket keeps being read;
  a request that arrives before the deadline is held until it passes.

In each, the ``ThrottleEvent`` records when the next request arrived and whether the client
waited out its throttle, by ``quota.verdict``'s rule, and the next request's journal record gets
the same (``AfterThrottle``, handed to the dispatcher by ``ThrottleDelivery.take_after``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

from protocol.gather import Frame

from ..common.clock import Clock
from .connection import KafkaConnection
from ..quota.throttle import ThrottleEvent
from ..request import RequestContext


@dataclass(frozen=True, slots=True)
class AfterThrottle:
    """What came of a throttle, said of the first request after it (its journal record's
    ``after_throttle``, docs/journal.md)."""

    throttle_ms: int
    mode: str
    client_throttles: bool
    gap_ms: int         # from the response's sending to the next request's arrival
    early_ms: int
    pipelined: bool
    judged: bool
    violation: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class ThrottledChannel:
    """One throttled response on one connection (Kafka's ``ThrottledChannel``), in the mode
    ``mock.throttle.mode`` chose; it records what the client did next in its ``ThrottleEvent``.

    The next request's arrival is its first byte on the connection, in every mode: observe and
    delay read the socket as usual; mute watches it (``KafkaConnection.start_throttling``) without
    serving anything before the mute ends.  A request already waiting when the response goes out is
    pipelined, and its arrival is that moment."""

    __slots__ = ("conn", "event", "clock", "delivery")

    def __init__(self, conn: KafkaConnection, event: ThrottleEvent, clock: Clock, delivery: ThrottleDelivery) -> None:
        self.conn = conn
        self.event = event
        self.clock = clock
        self.delivery = delivery

    def start(self, frame: Frame) -> None:
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

    def send(self, frame: Frame) -> None:
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
        self.delivery.after[self.conn.conn_id] = AfterThrottle(
            ev.throttle_ms, ev.mode, ev.client_should_throttle,
            now_ms - (ev.sent_ms if ev.sent_ms is not None else ev.start_ms), ev.early_ms, ev.pipelined, ev.judged,
            ev.violation)


class ThrottleDelivery:
    """One broker's throttle delivery: sends each response as ``mock.throttle.mode`` says, keeps
    every throttle's ``ThrottleEvent`` (``events``, the cluster's), and what the last throttle of a
    connection says of its next request until that request takes it."""

    def __init__(self, mode: str, clock: Clock, events: deque[ThrottleEvent]) -> None:
        self.mode = mode
        self.clock = clock
        self.events = events
        self.after: dict[int, AfterThrottle] = {}  # connection id -> what came of its last throttle

    def send_response_maybe_throttle(self, conn: KafkaConnection, frame: Frame, throttle_ms: int,
                                     ctx: RequestContext, quota_type: str) -> None:
        """Send a response carrying ``throttle_ms``, recording the throttle."""
        if throttle_ms <= 0:
            conn.send_response(frame)
            return
        event = ThrottleEvent(ctx.node_id, conn.conn_id, conn.peer, ctx.principal, ctx.client_id, ctx.api_key,
                              ctx.version, ctx.spec.client_throttles(ctx.version), self.mode, quota_type,
                              self.clock.monotonic_ms(), throttle_ms)
        self.events.append(event)
        ThrottledChannel(conn, event, self.clock, self).start(frame)

    def take_after(self, conn_id: int) -> AfterThrottle | None:
        """What the throttle before this request said of it, once: the first request after a throttle."""
        return self.after.pop(conn_id, None)

    def forget(self, conn_id: int) -> None:
        self.after.pop(conn_id, None)
