"""Request dispatch: decode -> (fault rules) -> API handler -> (purgatory) -> quota -> encode -> throttle/mute -> socket.

Kafka splits this over ``SocketServer.Processor`` (header parsing, version
checks), ``RequestChannel`` and ``KafkaApis`` (per-API handling and
``RequestHandlerHelper.sendResponseMaybeThrottle``).  Here one ``KafkaApis``
per simulated broker does it, in that order, on the event loop, and does only
that: the handler contract (what a handler gets and returns) is in
``request.py``, what a fault rule does in ``fault_actions.py``, which quotas
a response is charged in ``quota/throttle.py``, delivering the throttle in
``throttled_channel.py``, and the journal record in ``journal_recorder.py``.

Violations of the wire protocol raise ``ProtocolError`` and close the
connection with one log line, never a traceback to the client.  An
unexpected exception, in a handler or in a completion a purgatory runs
later, is the broker's own fault: that one connection is closed with one
line (and the traceback at DEBUG), every other connection and every other
completion goes on (``guarded``).

On a SASL_PLAINTEXT listener the connection's authenticator gates the
requests before anything is decoded (ApiVersions, SaslHandshake,
SaslAuthenticate only, in the order its state allows); those responses are
not charged to quotas, and a failed handshake or authentication is answered
after ``connection.failed.authentication.delay.ms`` and the connection then
closed (see ``sasl_authenticator.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from protocol.codec import (
    build_response,
    decode_request,
    encode_response,
    encode_response_dict,
    parse_request_header,
    peek_api,
)
from protocol.errors import ErrorCode, ProtocolError, UnsupportedVersion
from protocol.gather import Frame
from protocol.registry import ApiKey, ApiRegistry, ApiSpec, any_spec

from ..apis import error_responder
from ..apis.authorization import request_denied
from ..common.channel import CloseReason
from ..common.clock import Clock
from .connection import KafkaConnection
from .fault_actions import FaultActions
from ..observe.journal import PartitionRecord
from .journal_recorder import InFlight, RequestRecorder, bytes_moved
from ..quota.throttle import charge_quotas
from ..request import (
    Answer, Body, BrokerServices, CloseConnection, Deferred, Handler, NoResponse, RequestContext, Response,
)
from .throttled_channel import ThrottleDelivery

log = logging.getLogger("mockbroker.apis")


class KafkaApis:
    def __init__(self, broker: BrokerServices, registry: ApiRegistry, handlers: dict[int, Handler],
                 recorder: RequestRecorder, fault_actions: FaultActions, throttle: ThrottleDelivery) -> None:
        self.broker = broker
        self.registry = registry
        self.handlers = handlers
        self.clock: Clock = broker.clock
        self.recorder = recorder
        self.fault_actions = fault_actions
        self.throttle = throttle

    # -- entry points from the connection ------------------------------------------------------
    def handle(self, conn: KafkaConnection, payload: memoryview) -> None:
        self.guarded(conn, lambda: self._handle(conn, payload), payload)

    def connection_closed(self, conn: KafkaConnection) -> None:
        """The connection is gone: a request still waiting on it (parked, held, dropped) is
        journaled now as closed, and not again if its completion comes later."""
        self.recorder.connection_closed(conn.conn_id)
        self.throttle.forget(conn.conn_id)

    def guarded(self, conn: KafkaConnection, run: Callable[[], None], payload: memoryview | None = None) -> None:
        """Run one step of a request (decoding and the handler, a deferred completion, a held
        request's release): a protocol violation closes the connection as PROTOCOL_ERROR, any other
        exception is a broker bug and closes it as INTERNAL_ERROR; nothing escapes into the caller's
        loop (the purgatory's completions, the action queue, a coordinator's join phase).  With the
        request's ``payload``, a request that fails before it has a context is journaled too."""
        try:
            run()
        except ProtocolError as e:
            if payload is not None:
                self._record_refused(conn, payload)
            conn.close(CloseReason.PROTOCOL_ERROR, str(e))
        except Exception as e:  # noqa: BLE001 - a broker bug must not take other clients down
            if payload is not None:
                self._record_refused(conn, payload)
            log.debug("internal error on connection %s from %s", conn.conn_id, conn.peer, exc_info=e)
            conn.close(CloseReason.INTERNAL_ERROR, f"{type(e).__name__}: {e}")

    # -- decoding -----------------------------------------------------------------------------
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
        faults = self.fault_actions
        rule = None if auth is not None else faults.take(api_key, version, header.client_id, request, after=False)
        injected, delay_ms = faults.injected(rule)
        ctx = self._context(conn, spec, api_key, version, correlation_id, header.client_id, len(payload) + 4,
                            received_ns, injected=injected, sasl=auth)
        flight = InFlight(conn, ctx, request, self._after_throttle(conn), delay_ms=delay_ms)
        self.recorder.begin(flight)
        if rule is not None and faults.before(self, conn, flight, rule):
            return
        self.run_handler(conn, flight)

    def _context(self, conn: KafkaConnection, spec: ApiSpec, api_key: int, version: int, correlation_id: int,
                 client_id: str, size_bytes: int, received_ns: int, **extra: Any) -> RequestContext:
        return RequestContext(self.broker, spec, api_key, version, correlation_id, client_id, size_bytes,
                              conn.conn_id, conn.peer, conn.listener_name, conn.principal, conn.client_software,
                              conn.request_arrived_ns or received_ns, received_ns,
                              security_protocol=conn.security_protocol,
                              token_authenticated=conn.token_authenticated, **extra)

    def _after_throttle(self, conn: KafkaConnection) -> dict[str, Any] | None:
        after = self.throttle.take_after(conn.conn_id)
        return None if after is None else after.as_dict()

    # -- the handler ----------------------------------------------------------------------------
    def run_handler(self, conn: KafkaConnection, flight: InFlight) -> None:
        t0 = self.clock.monotonic_ns()
        if self.broker.authorizer is not None:  # KafkaApis' checks that refuse a whole request
            error = request_denied(flight.ctx, flight.request)
            responder = None if error is None else error_responder(flight.ctx.api_key)
            if error is not None and responder is not None:
                flight.handled_ns = self.clock.monotonic_ns()
                self.finish(conn, flight, responder(flight.ctx, flight.request, error))
                return
        outcome = self.handlers[flight.ctx.api_key](flight.ctx, flight.request)
        flight.handled_ns = self.clock.monotonic_ns()
        flight.handler_ns = flight.handled_ns - t0
        if isinstance(outcome, Deferred):
            flight.delayed, flight.partitions = outcome.delayed, outcome.partitions
            if outcome.done:  # completed inside the handler (acks=1, a fetch with data)
                self.finish(conn, flight, outcome.resolve())
            else:
                outcome.attach(lambda d: self._complete(conn, flight, d))
        else:
            self.finish(conn, flight, outcome)

    def _complete(self, conn: KafkaConnection, flight: InFlight, deferred: Deferred) -> None:
        """A deferred response, completed later from a purgatory or a coordinator, inside their
        loop: guarded as the synchronous path is."""
        if flight.delayed is None:  # it began waiting in a purgatory after the handler returned
            flight.delayed = deferred.delayed
        self.guarded(conn, lambda: self.finish(conn, flight, deferred.resolve(), parked=True))

    def record(self, flight: InFlight, outcome: str, handled_ns: int | None = None,
               partitions: list[PartitionRecord] | None = None) -> None:
        self.recorder.record(flight, outcome, handled_ns, partitions=partitions)

    # -- answering ------------------------------------------------------------------------------
    def finish(self, conn: KafkaConnection, flight: InFlight, answer: Answer, parked: bool = False) -> None:
        """The handler's answer -> (fault rules after) -> quotas -> encode -> send, maybe throttled."""
        ctx = flight.ctx
        now_ns = self.clock.monotonic_ns()
        handled_ns = flight.handled_ns or now_ns
        if parked:  # answered later than the handler returned: how long it waited
            flight.parked_ms = (now_ns - handled_ns) / 1e6
        recorder = self.recorder
        if conn.closed:
            recorder.record(flight, "closed", handled_ns)
            return
        if self.fault_actions.after(self, conn, flight, handled_ns, answer):
            return
        if isinstance(answer, NoResponse):
            conn.send_response(None)
            recorder.record(flight, "no_response", handled_ns, answer)
            return
        if isinstance(answer, CloseConnection):
            recorder.record(flight, "closed", handled_ns)
            conn.close(CloseReason.ERROR_WITH_ACKS0, answer.reason)
            return
        if answer.client_software is not None:
            conn.client_software = answer.client_software
        body, partitions = answer.body, None
        frame: Frame | None = None
        sasl = ctx.sasl
        if sasl is None:
            measured: list[tuple[Body, Frame]] = []

            def response_size() -> int:
                """The Fetch response's size as sent (the consumer byte quota charges it); the frame
                is kept and sent if the body stays as it is (one encode)."""
                measured.append((answer.body, self._encode(ctx, answer.body, answer)))
                return len(measured[0][1]) - 4

            charge = charge_quotas(self.broker.quotas, ctx.api_key, ctx.principal, ctx.client_id, ctx.size_bytes,
                                   flight.handler_ns, answer.controller_throttle_ms, response_size,
                                   self.clock.monotonic_ms())
            throttle_ms, quota_type = charge.throttle_ms, charge.quota_type
            if charge.empty_fetch and answer.if_throttled is not None:
                body, partitions = answer.if_throttled(), bytes_moved(answer)
            elif answer.finish is not None:
                body = answer.finish()
            if measured and measured[0][0] is body and not throttle_ms:
                frame = measured[0][1]
        else:  # Kafka's authenticator answers these itself: no quotas
            throttle_ms, quota_type = 0, ""
            sasl.answered(ctx.api_key, body)
        if frame is None:
            if ctx.spec.has_throttle_field(ctx.version):
                body["throttle_time"] = throttle_ms
            frame = self._encode(ctx, body, answer)
        if sasl is not None and sasl.failure is not None:  # answered after a delay, then closed
            recorder.record(flight, "closed", handled_ns, answer, frame_bytes=len(frame))
            sasl.close_after_failure(frame)
            return
        send_frame = frame

        def send() -> None:
            if conn.closed:
                recorder.record(flight, "closed", handled_ns, answer, partitions=partitions)
                return
            sent_ns = self.clock.monotonic_ns()
            self.throttle.send_response_maybe_throttle(conn, send_frame, throttle_ms, ctx, quota_type)
            recorder.record(flight, "response", handled_ns, answer, frame_bytes=len(send_frame), sent_ns=sent_ns,
                            throttle_ms=throttle_ms, quota_type=quota_type, partitions=partitions)

        if flight.delay_ms > 0:  # a fault rule's latency
            self.clock.call_later(flight.delay_ms, send)
        else:
            send()

    @staticmethod
    def _encode(ctx: RequestContext, body: Body, answer: Response) -> Frame:
        """The framed response: the answer's own ``encode`` (Fetch: a ``GatherFrame``) or kio's."""
        if answer.encode is not None:
            frame: Frame = answer.encode(ctx, body)
            return frame
        return encode_response_dict(ctx.spec, ctx.version, ctx.correlation_id, body)

    # -- requests answered or refused before they have a handler ------------------------------------
    def _unsupported_api_versions(self, conn: KafkaConnection, spec: ApiSpec, version: int, correlation_id: int,
                                  payload: memoryview, received_ns: int) -> None:
        """KIP-511: a v0 response, UNSUPPORTED_VERSION, listing only ApiVersions' range."""
        body = {
            "error_code": ErrorCode.unsupported_version,
            "api_keys": [{"api_key": spec.key, "min_version": spec.advertised_min, "max_version": spec.max_version}],
        }
        frame = encode_response(spec, 0, correlation_id, build_response(ApiKey.API_VERSIONS, 0, body))
        ctx = self._context(conn, spec, spec.key, version, correlation_id, conn.client_id, len(payload) + 4,
                            received_ns)
        flight = InFlight(conn, ctx, None, self._after_throttle(conn))
        sent_ns = self.clock.monotonic_ns()
        conn.send_response(frame)
        self.recorder.record(flight, "response", sent_ns, Response(body), frame_bytes=len(frame), sent_ns=sent_ns)

    def _record_refused(self, conn: KafkaConnection, payload: memoryview) -> None:
        """A request that closes its connection before it has a context (it does not parse, or is a
        version not served): a record with what its header says, outcome closed."""
        try:
            api_key, version, correlation_id = peek_api(payload)
        except ProtocolError:
            return  # not even a request header
        waiting = self.recorder.waiting(conn.conn_id)
        if waiting is not None and waiting.ctx.correlation_id == correlation_id and waiting.ctx.api_key == api_key:
            return  # it got a context: it is recorded (or the close will record it)
        spec = self.registry.get(api_key) or any_spec(api_key)
        if spec is None:
            spec = ApiSpec(api_key, f"UNKNOWN_{api_key}", version, version, version, None, None, None)
        now = self.clock.monotonic_ns()
        ctx = self._context(conn, spec, api_key, version, correlation_id, conn.client_id, len(payload) + 4, now)
        self.recorder.record(InFlight(conn, ctx, None, self._after_throttle(conn)), "closed", now)
