"""The journal record of each request (``journal.py``'s ``RequestRecord``), written once per
request by the dispatcher's ``RequestRecorder``: what came in (the context), what the dispatcher
did with it (``InFlight``: its times, a fault rule, a delay), and what went out (the handler's
``Response``: its error codes and partitions as the handler reported them, the frame, the
throttle).  Kafka's ``RequestChannel.updateRequestMetrics`` and request log, in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from protocol.registry import ApiKey

from ..common.clock import Clock, wall_time_ns
from ..observe.journal import PartitionRecord, RequestJournal, RequestRecord
from ..purgatory import DelayedOperation
from ..quota.entities import QuotaStore
from ..request import NoResponse, RequestContext, Response
from ..observe.request_stats import RequestStats
from ..common.shared_encodings import SharedEncodings

# Request fields worth keeping in the journal (acks=all waits, long polls), whatever the API.
_DETAILS = (("acks", "acks"), ("timeout", "timeout_ms"), ("max_wait", "max_wait_ms"), ("min_bytes", "min_bytes"),
            ("max_bytes", "max_bytes"), ("isolation_level", "isolation_level"), ("session_id", "session_id"),
            ("session_epoch", "session_epoch"))
_QUOTA_KEY: dict[int, str] = {ApiKey.PRODUCE: "producer_byte_rate", ApiKey.FETCH: "consumer_byte_rate"}


_DETAILS_BY_TYPE: dict[type, tuple[tuple[str, str], ...]] = {}


def _details_of(request_type: type) -> tuple[tuple[str, str], ...]:
    """The ``_DETAILS`` a request class has among its own fields (the version's fields, not the
    defaults of others'), found once per class."""
    found = _DETAILS_BY_TYPE.get(request_type)
    if found is None:
        own = getattr(request_type, "__dataclass_fields__", ())
        found = _DETAILS_BY_TYPE[request_type] = tuple((a, n) for a, n in _DETAILS if a in own)
    return found


class Peer(Protocol):
    """What the record says of the connection, read when the record is written (ApiVersions may
    have told the client's software meanwhile, SaslAuthenticate the principal)."""

    @property
    def client_software(self) -> tuple[str, str] | None: ...

    @property
    def principal(self) -> str: ...


@dataclass(slots=True)
class InFlight:
    """One request from its decoding to its record, as the dispatcher carries it (Kafka's
    ``RequestChannel.Request``: its times and what happened to it besides the handler)."""

    conn: Peer
    ctx: RequestContext
    request: Any
    after_throttle: dict[str, Any] | None = None  # the first request after a throttle: what came of it
    handler_ns: int = 0                     # time in the handler (request_percentage quota)
    handled_ns: int = 0                     # broker clock: the handler returned
    parked_ms: float | None = None          # answered this long after the handler returned (a Deferred)
    delayed: DelayedOperation | None = None  # the delayed operation it waited in
    partitions: Sequence[PartitionRecord] = ()  # what it did before it waited (Deferred.partitions)
    delay_ms: int = 0                       # a fault rule's latency: the response goes out this much later
    fault_rule: int | None = None           # the id of the fault rule that acted on it
    recorded: bool = False                  # its record is written (one per request)


class RequestRecorder:
    """One broker's requests into the cluster's journal and the broker's request statistics; the
    requests waiting on each connection, so that a connection that closes on one has it recorded."""

    def __init__(self, node_id: int, clock: Clock, throttle_mode: str, journal: RequestJournal, stats: RequestStats,
                 quota_store: QuotaStore) -> None:
        self.node_id = node_id
        self.clock = clock
        self.throttle_mode = throttle_mode
        self.journal = journal
        self.stats = stats
        self.quota_store = quota_store
        self.in_flight: dict[int, InFlight] = {}  # connection id -> the request it waits on
        # a completion pass (``SharedEncodings``) answers thousands of parked requests at once:
        # their records go to the journal and the statistics in one step when the pass ends, in
        # the order written (nothing reads the journal inside the pass: it runs on the loop)
        self.pass_scope: SharedEncodings | None = None
        self._pending: list[RequestRecord] = []

    def begin(self, flight: InFlight) -> None:
        self.in_flight[flight.ctx.conn_id] = flight

    def waiting(self, conn_id: int) -> InFlight | None:
        return self.in_flight.get(conn_id)

    def connection_closed(self, conn_id: int) -> None:
        """The connection is gone with a request still waiting (parked, held, dropped): it is
        recorded now as closed, and not again if its completion comes later."""
        flight = self.in_flight.pop(conn_id, None)
        if flight is not None:
            self.record(flight, "closed")

    def record(self, flight: InFlight, outcome: str, handled_ns: int | None = None,
               answer: Response | NoResponse | None = None, frame_bytes: int | None = None,
               sent_ns: int | None = None, throttle_ms: int = 0, quota_type: str = "",
               partitions: list[PartitionRecord] | None = None) -> None:
        """``answer``: what the handler answered, for its error codes and partitions (a ``NoResponse``,
        or ``partitions`` given instead, for the bytes alone)."""
        if flight.recorded:
            return
        flight.recorded = True
        ctx = flight.ctx
        now_wall = wall_time_ns()
        now_ns = self.clock.monotonic_ns()
        handled = handled_ns if handled_ns is not None else now_ns
        software = flight.conn.client_software
        rec = RequestRecord(
            broker=self.node_id, connection=ctx.conn_id, peer=ctx.peer, client_id=ctx.client_id,
            principal=flight.conn.principal, client_software_name=software[0] if software else None,
            client_software_version=software[1] if software else None, api_key=ctx.api_key, api=ctx.spec.name,
            api_version=ctx.version, correlation_id=ctx.correlation_id, request_bytes=ctx.size_bytes,
            arrived_clock_ns=ctx.arrived_ns, received_clock_ns=ctx.received_ns,
            received_wall_ns=now_wall - (now_ns - ctx.received_ns),
            handled_clock_ns=handled, handled_wall_ns=now_wall - (now_ns - handled),
            sent_clock_ns=sent_ns, sent_wall_ns=None if sent_ns is None else now_wall - (now_ns - sent_ns),
            outcome=outcome, response_bytes=frame_bytes, throttle_time_ms=throttle_ms,
            throttle_mode=self.throttle_mode if throttle_ms else "", quota_type=quota_type if throttle_ms else "",
            client_throttles=ctx.spec.client_throttles(ctx.version), fault_rule=flight.fault_rule,
        )
        if throttle_ms and sent_ns is not None and self.throttle_mode == "mute":
            rec.mute_start_clock_ns = sent_ns
            rec.mute_end_clock_ns = sent_ns + throttle_ms * 1_000_000
        rec.parked_ms = flight.parked_ms
        rec.after_throttle = flight.after_throttle
        op = flight.delayed
        if op is not None:
            rec.purgatory = op.PURGATORY or None
            rec.completed_by = ("timeout" if op.expired else "condition") if op.is_completed else None
        request = flight.request
        for attr, name in _details_of(type(request)):
            value = getattr(request, attr)
            if value is None:
                continue
            kind = type(value)
            if kind is int or kind is float or isinstance(value, (int, float)) and not isinstance(value, bool):
                rec.details[name] = value
            elif hasattr(value, "total_seconds"):  # kio timedelta fields
                rec.details[name] = int(value.total_seconds() * 1000)
        if isinstance(answer, Response):
            rec.error_code = answer.top_error
            if answer.details:
                rec.details.update(answer.details)
            rec.partitions = list(answer.partitions)
        elif isinstance(answer, NoResponse):
            rec.partitions = list(answer.partitions)
        elif flight.partitions:  # never answered (the connection closed while it waited)
            rec.partitions = list(flight.partitions)
        if partitions is not None:
            rec.partitions = partitions
        store = self.quota_store
        if store.quotas:
            user, cid = flight.conn.principal, ctx.client_id
            rec.quota_entity = store.metric_tags(_QUOTA_KEY.get(ctx.api_key, "request_percentage"), user, cid)
            rec.quotas = store.quotas_in_force(user, cid)
        if outcome in ("response", "no_response", "closed"):  # a dropped one stays: the connection waits on it
            if self.in_flight.get(ctx.conn_id) is flight:
                del self.in_flight[ctx.conn_id]
        scope = self.pass_scope
        if scope is not None and scope.in_pass:
            if not self._pending:
                scope.at_end(self._flush)
            self._pending.append(rec)
            return
        self.journal.record(rec)
        self.stats.record(rec)

    def _flush(self) -> None:
        """The records of a completion pass, in one step."""
        pending, self._pending = self._pending, []
        self.journal.record_many(pending)
        self.stats.record_many(pending)


def bytes_moved(answer: Response | NoResponse) -> list[PartitionRecord]:
    """The partitions of an answer that never went out (lost, or a throttled Fetch answered
    empty): what was appended or read, with no error."""
    return [PartitionRecord(p.topic, p.partition, 0, p.bytes) for p in answer.partitions if p.bytes]
