"""Request dispatch: decode -> (fault rules) -> API handler -> (purgatory) -> quota -> encode -> throttle/mute -> socket.

Kafka splits this over ``SocketServer.Processor`` (header parsing, version
checks), ``RequestChannel`` and ``KafkaApis`` (per-API handling and
``RequestHandlerHelper.sendResponseMaybeThrottle``).  Here one ``KafkaApis``
per simulated broker does it, in that order, on the event loop.  The handler
contract (what a handler gets and returns) is in ``request.py``; fault rules
(``faults.py``) act between decoding and the handler, and again once the
request took effect.

Violations of the wire protocol raise ``ProtocolError`` and close the
connection with one log line, never a traceback to the client.  An
unexpected exception, in a handler or in a completion a purgatory runs
later, is the broker's own fault: that one connection is closed with one
line (and the traceback at DEBUG), every other connection and every other
completion goes on.

Every request ends in one ``RequestRecord`` for the journal (``journal.py``)
and the request statistics (``request_stats.py``).

On a SASL_PLAINTEXT listener the connection's authenticator gates the
requests before anything is decoded (ApiVersions, SaslHandshake,
SaslAuthenticate only, in the order its state allows); those responses are
not charged to quotas, and a failed handshake or authentication is answered
after ``connection.failed.authentication.delay.ms`` and the connection then
closed (see ``sasl_authenticator.py``).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

from protocol.codec import (
    build_response,
    decode_request,
    encode_response,
    parse_request_header,
    peek_api,
)
from protocol.errors import ErrorCode, ProtocolError, UnsupportedVersion
from protocol.registry import ApiKey, ApiRegistry, ApiSpec, any_spec

from .apis import error_responder, handles_injected_errors
from .channel import CloseReason
from .clock import Clock, wall_time_ns
from .connection import KafkaConnection
from .faults import FaultInjector, FaultRule, HeldRequest, InjectedError, request_partitions
from .journal import PartitionRecord, RequestJournal, RequestRecord
from .quota.throttle import ThrottleEvent, apply_quotas, send_response_maybe_throttle
from .request import NO_RESPONSE, BrokerServices, CloseConnection, Deferred, Handler, RequestContext
from .request_stats import RequestStats

log = logging.getLogger("mockbroker.apis")

# Request fields worth keeping in the journal (acks=all waits, long polls), whatever the API.
_DETAILS = (("acks", "acks"), ("timeout", "timeout_ms"), ("max_wait", "max_wait_ms"), ("min_bytes", "min_bytes"),
            ("max_bytes", "max_bytes"), ("isolation_level", "isolation_level"), ("session_id", "session_id"),
            ("session_epoch", "session_epoch"))
_QUOTA_KEY = {ApiKey.PRODUCE: "producer_byte_rate", ApiKey.FETCH: "consumer_byte_rate"}


class KafkaApis:
    def __init__(self, broker: BrokerServices, registry: ApiRegistry, handlers: dict[int, Handler],
                 journal: RequestJournal, faults: FaultInjector, throttle_mode: str,
                 throttle_events: deque[ThrottleEvent], stats: RequestStats) -> None:
        self.broker = broker
        self.registry = registry
        self.handlers = handlers
        self.clock: Clock = broker.clock
        self.journal = journal
        self.faults = faults
        self.throttle_mode = throttle_mode
        self.throttle_events = throttle_events
        self.stats = stats
        # connection id -> the request it waits on (its context and decoded body)
        self.in_flight: dict[int, tuple[RequestContext, Any]] = {}

    # -- entry point from the connection ------------------------------------------
    def handle(self, conn: KafkaConnection, payload: memoryview) -> None:
        try:
            self._handle(conn, payload)
        except ProtocolError as e:
            self._record_refused(conn, payload)
            conn.close(CloseReason.PROTOCOL_ERROR, str(e))
        except Exception as e:  # noqa: BLE001 - a broker bug must not take other clients down
            self._record_refused(conn, payload)
            self._internal_error(conn, e)

    def connection_closed(self, conn: KafkaConnection) -> None:
        """The connection is gone with a request still waiting (parked, held, dropped): it is
        journaled now as closed, and not again if its completion comes later."""
        waiting = self.in_flight.pop(conn.conn_id, None)
        if waiting is not None:
            self._record(conn, waiting[0], waiting[1], "closed")

    def _internal_error(self, conn: KafkaConnection, e: Exception) -> None:
        log.debug("internal error on connection %s from %s", conn.conn_id, conn.peer, exc_info=e)
        conn.close(CloseReason.INTERNAL_ERROR, f"{type(e).__name__}: {e}")

    def _handle(self, conn: KafkaConnection, payload: memoryview) -> None:
        received_ns = self.clock.monotonic_ns()
        api_key, version, correlation_id = peek_api(payload)
        auth = conn.authenticator
        if auth is not None:  # SASL listener, not yet authenticated: only ApiVersions and the SASL APIs
            auth.check_request(api_key)
        spec = self.registry.get(api_key)
        if api_key == ApiKey.API_VERSIONS and spec is not None and not (
            spec.min_version <= version <= spec.max_version
        ):
            self._unsupported_api_versions(conn, spec, version, correlation_id, payload, received_ns)
            return
        if spec is None:
            name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else "unknown"
            raise UnsupportedVersion(
                f"Received request for api with key {api_key} ({name}) and unsupported version {version}"
            )
        if not spec.min_version <= version <= spec.max_version:
            raise UnsupportedVersion(
                f"Received request for api with key {api_key} ({spec.name}) and unsupported version {version}"
            )
        header = parse_request_header(payload, spec.request_header_version(version))
        request = decode_request(api_key, version, payload, header.size_bytes)
        conn.client_id = header.client_id
        ctx = RequestContext(
            conn, self.broker, spec, api_key, version, correlation_id, header.client_id,
            len(payload) + 4, received_ns, sasl=auth, arrived_ns=conn.request_arrived_ns or received_ns,
            after_throttle=_take_after_throttle(conn),
        )
        self.in_flight[conn.conn_id] = (ctx, request)
        if self.faults.rules and auth is None:
            rule = self.faults.take(api_key, version, self.broker.node_id, header.client_id,
                                    lambda: self._partitions(request, api_key), after=False)
            if rule is not None and self._apply_rule(conn, ctx, request, rule):
                return
        self._run_handler(conn, ctx, request)

    def _run_handler(self, conn: KafkaConnection, ctx: RequestContext, request: Any) -> None:
        t0 = self.clock.monotonic_ns()
        result = self.handlers[ctx.api_key](ctx, request)
        ctx.handled_ns = self.clock.monotonic_ns()
        ctx.handler_ns = ctx.handled_ns - t0
        if isinstance(result, Deferred):
            if result.done:  # completed inside the handler (acks=1, a fetch with data)
                self._finish(conn, ctx, request, result.resolve())
            else:
                result.attach(lambda d, conn=conn, ctx=ctx: self._complete(conn, ctx, request, d))
        else:
            self._finish(conn, ctx, request, result)

    def _complete(self, conn: KafkaConnection, ctx: RequestContext, request: Any, deferred: Deferred) -> None:
        """A deferred response, completed later from a purgatory or the group coordinator.

        It runs inside someone else's loop (the purgatory's completions, the action queue, a
        coordinator's join phase): an exception here closes this one connection, as the
        synchronous path does, and must not escape and drop the completions that come after it.
        """
        try:
            self._finish(conn, ctx, request, deferred.resolve(), parked=True)
        except ProtocolError as e:
            conn.close(CloseReason.PROTOCOL_ERROR, str(e))
        except Exception as e:  # noqa: BLE001 - see the docstring
            self._internal_error(conn, e)

    # -- fault rules -------------------------------------------------------------------------
    def _partitions(self, request: Any, api_key: int) -> list[tuple[str, int | None]]:
        """The (topic, partition)s a request names, topic ids resolved to names; an incremental
        Fetch also reads the partitions its session holds (it is served them all)."""
        by_id = self.broker.metadata.topics_by_id
        named = request_partitions(request)
        if api_key == ApiKey.FETCH and getattr(request, "session_id", 0) and getattr(request, "session_epoch", 0) > 0:
            session = self.broker.fetch_manager.sessions.get(request.session_id)
            if session is not None:
                named = named + [(t, p) for t, p in session.partitions]
        out = []
        for t, p in named:
            if not isinstance(t, str):
                topic = by_id.get(t)
                if topic is None:
                    continue
                t = topic.name
            out.append((t, p))
        return out

    def _apply_rule(self, conn: KafkaConnection, ctx: RequestContext, request: Any, rule: FaultRule) -> bool:
        """Act on a rule that matched before the handler; True when the request is taken care of."""
        ctx.fault_rule = rule.id
        what = f"{ctx.spec.name} v{ctx.version} (fault rule {rule.id})"
        if rule.action == "error":
            entry = rule.take_error()
            ctx.delay_ms = entry.delay_ms
            ctx.injected = InjectedError(entry.error, rule.match)
            if handles_injected_errors(ctx.api_key):
                return False  # the handler gives the error to the partitions it applies to
            responder = error_responder(ctx.api_key)
            assert responder is not None, "rules are checked when added"
            self._finish(conn, ctx, request, responder(ctx, request, entry.error))
            return True
        if rule.action == "delay":
            ctx.delay_ms = rule.delay_ms
            return False
        if rule.action == "hold":
            def resume() -> None:
                if conn.closed:
                    self._record(conn, ctx, request, "closed")
                    return
                try:
                    self._run_handler(conn, ctx, request)
                except ProtocolError as e:
                    conn.close(CloseReason.PROTOCOL_ERROR, str(e))
                except Exception as e:  # noqa: BLE001 - as in handle()
                    self._internal_error(conn, e)

            self.faults.held.append(HeldRequest(rule.id, conn.conn_id, ctx.api_key, ctx.correlation_id, resume))
            log.info("holding %s from %s (client_id=%r) until released", what, conn.peer, ctx.client_id)
            return True
        if rule.action == "drop":
            log.info("dropping %s from %s (client_id=%r): no response", what, conn.peer, ctx.client_id)
            self._record(conn, ctx, request, "dropped")
            return True  # never answered: the connection stays muted with the request pending
        self._record(conn, ctx, request, "closed")
        conn.close(CloseReason.INJECTED, f"{what} closed before it took effect")
        return True

    # -- answering ------------------------------------------------------------------------------
    def _finish(self, conn: KafkaConnection, ctx: RequestContext, request: Any, result: Any,
                parked: bool = False) -> None:
        now_ns = self.clock.monotonic_ns()
        handled_ns = ctx.handled_ns or now_ns
        if parked:  # answered later than the handler returned: how long it waited
            ctx.parked_ms = (now_ns - handled_ns) / 1e6
        if conn.closed:
            self._record(conn, ctx, request, "closed", handled_ns=handled_ns)
            return
        if self.faults.rules and ctx.sasl is None:
            rule = self.faults.take(ctx.api_key, ctx.version, self.broker.node_id, ctx.client_id,
                                    lambda: self._partitions(request, ctx.api_key), after=True)
            if rule is not None:
                ctx.fault_rule = rule.id
                self._record(conn, ctx, request, "lost", handled_ns=handled_ns)
                if rule.action == "close":
                    conn.close(CloseReason.INJECTED, f"response to {ctx.spec.name} v{ctx.version} lost (close, "
                                                     f"fault rule {rule.id})")
                return  # drop: never answered, the connection stays muted with the request pending
        if result is NO_RESPONSE:
            conn.send_response(None)
            self._record(conn, ctx, request, "no_response", handled_ns=handled_ns)
            return
        if isinstance(result, CloseConnection):
            self._record(conn, ctx, request, "closed", handled_ns=handled_ns)
            conn.close(CloseReason.ERROR_WITH_ACKS0, result.reason)
            return
        sasl = ctx.sasl
        if sasl is None:
            result, throttle_ms, quota_type = apply_quotas(
                self.broker.quotas, ctx, result, lambda: self._measure(ctx, result), self.clock.monotonic_ms())
        else:  # Kafka's authenticator answers these itself: no quotas
            throttle_ms, quota_type = 0, ""
            sasl.answered(ctx.api_key, result)
        cached = ctx.encoded
        if cached is not None and cached[0] is result:
            # the consumer byte quota measured this very response by encoding it (throttle 0: a
            # throttled fetch is answered empty instead): send that frame
            frame = cached[1]
        else:
            if ctx.spec.has_throttle_field(ctx.version):
                result["throttle_time"] = throttle_ms
            frame = encode_response(ctx.spec, ctx.version, ctx.correlation_id,
                                    build_response(ctx.api_key, ctx.version, result))
        if sasl is not None and sasl.failure is not None:  # answered after a delay, then closed
            self._record(conn, ctx, request, "closed", handled_ns=handled_ns, result=result, frame_bytes=len(frame))
            sasl.close_after_failure(frame)
            return

        def send() -> None:
            if conn.closed:
                self._record(conn, ctx, request, "closed", handled_ns=handled_ns, result=result)
                return
            sent_ns = self.clock.monotonic_ns()
            send_response_maybe_throttle(conn, frame, throttle_ms, ctx, quota_type, self.throttle_mode, self.clock,
                                         self.throttle_events)
            self._record(conn, ctx, request, "response", handled_ns=handled_ns, result=result,
                         frame_bytes=len(frame), sent_ns=sent_ns, throttle_ms=throttle_ms, quota_type=quota_type)

        if ctx.delay_ms > 0:  # a fault rule's latency
            self.clock.call_later(ctx.delay_ms, send)
        else:
            send()

    @staticmethod
    def _measure(ctx: RequestContext, result: dict[str, Any]) -> int:
        """The size of a Fetch response as sent (the consumer byte quota charges it); the frame is
        kept and sent if the response stays as it is (one encode)."""
        frame = encode_response(ctx.spec, ctx.version, ctx.correlation_id,
                                build_response(ctx.api_key, ctx.version, result))
        ctx.encoded = (result, frame)
        return len(frame) - 4

    # -- the record of each request -------------------------------------------------------------
    def _record(self, conn: KafkaConnection, ctx: RequestContext, request: Any, outcome: str,
                handled_ns: int | None = None, result: dict[str, Any] | None = None, frame_bytes: int | None = None,
                sent_ns: int | None = None, throttle_ms: int = 0, quota_type: str = "") -> None:
        if ctx.recorded:
            return
        ctx.recorded = True
        now_wall = wall_time_ns()
        now_ns = self.clock.monotonic_ns()
        handled = handled_ns if handled_ns is not None else now_ns
        software = conn.client_software
        rec = RequestRecord(
            broker=self.broker.node_id, connection=conn.conn_id, peer=conn.peer, client_id=ctx.client_id,
            principal=conn.principal, client_software_name=software[0] if software else None,
            client_software_version=software[1] if software else None, api_key=ctx.api_key, api=ctx.spec.name,
            api_version=ctx.version, correlation_id=ctx.correlation_id, request_bytes=ctx.size_bytes,
            arrived_clock_ns=ctx.arrived_ns, received_clock_ns=ctx.received_ns,
            received_wall_ns=now_wall - (now_ns - ctx.received_ns),
            handled_clock_ns=handled, handled_wall_ns=now_wall - (now_ns - handled),
            sent_clock_ns=sent_ns, sent_wall_ns=None if sent_ns is None else now_wall - (now_ns - sent_ns),
            outcome=outcome, response_bytes=frame_bytes, throttle_time_ms=throttle_ms,
            throttle_mode=self.throttle_mode if throttle_ms else "", quota_type=quota_type if throttle_ms else "",
            client_throttles=ctx.spec.client_throttles(ctx.version), fault_rule=ctx.fault_rule,
        )
        if throttle_ms and sent_ns is not None and self.throttle_mode == "mute":
            rec.mute_start_clock_ns = sent_ns
            rec.mute_end_clock_ns = sent_ns + throttle_ms * 1_000_000
        rec.parked_ms = ctx.parked_ms
        rec.after_throttle = ctx.after_throttle
        op = ctx.delayed
        if op is not None:
            rec.purgatory = op.PURGATORY or None
            rec.completed_by = ("timeout" if op.expired else "condition") if op.is_completed else None
        for attr, name in _DETAILS:
            value = getattr(request, attr, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                rec.details[name] = value
            elif value is not None and hasattr(value, "total_seconds"):  # kio timedelta fields
                rec.details[name] = int(value.total_seconds() * 1000)
        if result is not None:
            _collect_errors(rec, result, ctx.partition_bytes or {})
        elif ctx.partition_bytes:
            rec.partitions = [PartitionRecord(t, p, 0, n) for (t, p), n in ctx.partition_bytes.items()]
        store = self.broker.quota_store
        if store.quotas:
            user, cid = conn.principal, ctx.client_id
            tags = store.metric_tags(_QUOTA_KEY.get(ctx.api_key, "request_percentage"), user, cid)
            rec.quota_entity = tags
            rec.quotas = store.quotas_in_force(user, cid)
        if outcome in ("response", "no_response", "closed"):  # a dropped one stays: the connection waits on it
            waiting = self.in_flight.get(conn.conn_id)
            if waiting is not None and waiting[0] is ctx:
                del self.in_flight[conn.conn_id]
        self.journal.record(rec)
        self.stats.record(rec)

    def _unsupported_api_versions(self, conn: KafkaConnection, spec: ApiSpec, version: int, correlation_id: int,
                                  payload: memoryview, received_ns: int) -> None:
        """KIP-511: a v0 response, UNSUPPORTED_VERSION, listing only ApiVersions' range."""
        result = {
            "error_code": ErrorCode.unsupported_version,
            "api_keys": [{"api_key": spec.key, "min_version": spec.advertised_min, "max_version": spec.max_version}],
        }
        frame = encode_response(spec, 0, correlation_id, build_response(ApiKey.API_VERSIONS, 0, result))
        ctx = RequestContext(conn, self.broker, spec, spec.key, version, correlation_id, conn.client_id,
                             len(payload) + 4, received_ns, arrived_ns=conn.request_arrived_ns or received_ns,
                             after_throttle=_take_after_throttle(conn))
        sent_ns = self.clock.monotonic_ns()
        conn.send_response(frame)
        self._record(conn, ctx, None, "response", handled_ns=sent_ns, result=result, frame_bytes=len(frame),
                     sent_ns=sent_ns)

    def _record_refused(self, conn: KafkaConnection, payload: memoryview) -> None:
        """A request that closes its connection before it has a context (it does not parse, or is a
        version not served): a record with what its header says, outcome closed."""
        try:
            api_key, version, correlation_id = peek_api(payload)
        except ProtocolError:
            return  # not even a request header
        waiting = self.in_flight.get(conn.conn_id)
        if waiting is not None and waiting[0].correlation_id == correlation_id and waiting[0].api_key == api_key:
            return  # it got a context: _record has it (or the close will)
        spec = self.registry.get(api_key) or any_spec(api_key)
        if spec is None:
            spec = ApiSpec(api_key, f"UNKNOWN_{api_key}", version, version, version, None, None, None)
        now = self.clock.monotonic_ns()
        ctx = RequestContext(conn, self.broker, spec, api_key, version, correlation_id, conn.client_id,
                             len(payload) + 4, now, arrived_ns=conn.request_arrived_ns or now,
                             after_throttle=_take_after_throttle(conn))
        self._record(conn, ctx, None, "closed", handled_ns=now)


def _take_after_throttle(conn: KafkaConnection) -> dict[str, Any] | None:
    """What the throttle before this request said of it, once: the first request after a throttle."""
    after, conn.request_after_throttle = conn.request_after_throttle, None
    return after


_PARTITION_KEYS = ("partition_index", "index", "partition")
_TOPIC_KEYS = ("name", "topic")


def _collect_errors(rec: RequestRecord, result: dict[str, Any], sizes: dict[tuple[str, int], int]) -> None:
    """The top-level error code and every partition's (with its bytes) of a handler's response."""
    top = result.get("error_code")
    if top is None:  # per-item top-level errors (FindCoordinator v4+, DescribeGroups, ...): the first failed one
        items = [x for v in result.values() if isinstance(v, list) for x in v
                 if isinstance(x, dict) and "error_code" in x and not any(k in x for k in _TOPIC_KEYS)]
        if items:
            top = next((x["error_code"] for x in items if x["error_code"]), 0)
    if top is not None:
        rec.error_code = int(top)
    seen: set[tuple[str, int]] = set()

    def walk(node: Any, topic: str | None) -> None:
        if isinstance(node, dict):
            name = next((node[k] for k in _TOPIC_KEYS if isinstance(node.get(k), str)), None)
            if name is not None and any(isinstance(v, list) for v in node.values()):
                topic = name
                code = node.get("error_code")
                if code:  # a topic-level error (Metadata, CreateTopics): partition -1
                    rec.partitions.append(PartitionRecord(name, -1, int(code), 0))
            idx = next((node[k] for k in _PARTITION_KEYS if isinstance(node.get(k), int)), None)
            error = node.get("error_code")
            if error is None:  # AddPartitionsToTxn v0-3 names its partitions' error partition_error_code
                error = node.get("partition_error_code")
            if topic is not None and idx is not None and error is not None:
                seen.add((topic, idx))
                rec.partitions.append(PartitionRecord(topic, idx, int(error), sizes.get((topic, idx), 0)))
                return
            for v in node.values():
                if isinstance(v, (list, dict)):
                    walk(v, topic)
        elif isinstance(node, list):
            for item in node:
                walk(item, topic)

    for key, value in result.items():
        if isinstance(value, list):
            walk(value, None)
    for (t, p), n in sizes.items():  # appended or fetched but not in the response (an incremental fetch)
        if (t, p) not in seen:
            rec.partitions.append(PartitionRecord(t, p, 0, n))
