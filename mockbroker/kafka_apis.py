"""Request dispatch: decode -> API handler -> (purgatory) -> quota -> encode -> throttle/mute -> socket.

Kafka splits this over ``SocketServer.Processor`` (header parsing, version
checks), ``RequestChannel`` and ``KafkaApis`` (per-API handling and
``RequestHandlerHelper.sendResponseMaybeThrottle``).  Here one ``KafkaApis``
per simulated broker does it, in that order, on the event loop.  The handler
contract (what a handler gets and returns) is in ``request.py``.

Violations of the wire protocol raise ``ProtocolError`` and close the
connection with one log line, never a traceback to the client.  An
unexpected exception, in a handler or in a completion a purgatory runs
later, is the broker's own fault: that one connection is closed with one
line (and the traceback at DEBUG), every other connection and every other
completion goes on.

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
from protocol.registry import ApiKey, ApiRegistry, ApiSpec

from .channel import CloseReason
from .clock import Clock
from .connection import KafkaConnection
from .faults import FaultInjector
from .journal import JournalEntry, RequestJournal
from .quota.throttle import ThrottleEvent, apply_quotas, send_response_maybe_throttle
from .request import NO_RESPONSE, BrokerServices, CloseConnection, Deferred, Handler, RequestContext

log = logging.getLogger("mockbroker.apis")


class KafkaApis:
    def __init__(self, broker: BrokerServices, registry: ApiRegistry, handlers: dict[int, Handler],
                 journal: RequestJournal, faults: FaultInjector, throttle_mode: str,
                 throttle_events: deque[ThrottleEvent]) -> None:
        self.broker = broker
        self.registry = registry
        self.handlers = handlers
        self.clock: Clock = broker.clock
        self.journal = journal
        self.faults = faults
        self.throttle_mode = throttle_mode
        self.throttle_events = throttle_events
        self.requests_by_api: dict[int, int] = {}

    # -- entry point from the connection ------------------------------------------
    def handle(self, conn: KafkaConnection, payload: memoryview) -> None:
        try:
            self._handle(conn, payload)
        except ProtocolError as e:
            conn.close(CloseReason.PROTOCOL_ERROR, str(e))
        except Exception as e:  # noqa: BLE001 - a broker bug must not take other clients down
            self._internal_error(conn, e)

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
            self._unsupported_api_versions(conn, spec, correlation_id)
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
            len(payload) + 4, received_ns, sasl=auth,
        )
        self.requests_by_api[api_key] = self.requests_by_api.get(api_key, 0) + 1
        t0 = self.clock.monotonic_ns()
        result = self.handlers[api_key](ctx, request)
        ctx.handler_ns = self.clock.monotonic_ns() - t0
        if isinstance(result, Deferred):
            if result.done:  # completed inside the handler (acks=1, a fetch with data)
                self._finish(conn, ctx, result.resolve())
            else:
                result.attach(lambda d, conn=conn, ctx=ctx: self._complete(conn, ctx, d))
        else:
            self._finish(conn, ctx, result)

    def _complete(self, conn: KafkaConnection, ctx: RequestContext, deferred: Deferred) -> None:
        """A deferred response, completed later from a purgatory or the group coordinator.

        It runs inside someone else's loop (the purgatory's completions, the action queue, a
        coordinator's join phase): an exception here closes this one connection, as the
        synchronous path does, and must not escape and drop the completions that come after it.
        """
        try:
            self._finish(conn, ctx, deferred.resolve())
        except ProtocolError as e:
            conn.close(CloseReason.PROTOCOL_ERROR, str(e))
        except Exception as e:  # noqa: BLE001 - see the docstring
            self._internal_error(conn, e)

    def _finish(self, conn: KafkaConnection, ctx: RequestContext, result: Any) -> None:
        if conn.closed:
            self._journal(ctx, "closed")
            return
        fault = self.faults.take(ctx.api_key)
        if fault == "close":
            self._journal(ctx, "lost")
            conn.close(CloseReason.INJECTED, f"response to {ctx.spec.name} v{ctx.version} lost (close)")
            return
        if fault == "drop":
            self._journal(ctx, "lost")
            return  # never answered: the connection stays muted with the request pending
        if result is NO_RESPONSE:
            self._journal(ctx, "no_response")
            conn.send_response(None)
            return
        if isinstance(result, CloseConnection):
            self._journal(ctx, "closed")
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
        self._journal(ctx, "response", throttle_ms)
        if sasl is not None and sasl.failure is not None:  # answered after a delay, then closed
            sasl.close_after_failure(frame)
            return
        send_response_maybe_throttle(conn, frame, throttle_ms, ctx, quota_type, self.throttle_mode, self.clock,
                                     self.throttle_events)

    @staticmethod
    def _measure(ctx: RequestContext, result: dict[str, Any]) -> int:
        """The size of a Fetch response as sent (the consumer byte quota charges it); the frame is
        kept and sent if the response stays as it is (one encode)."""
        frame = encode_response(ctx.spec, ctx.version, ctx.correlation_id,
                                build_response(ctx.api_key, ctx.version, result))
        ctx.encoded = (result, frame)
        return len(frame) - 4

    def _journal(self, ctx: RequestContext, outcome: str, throttle_ms: int = 0) -> None:
        c = ctx.conn
        self.journal.record(JournalEntry(
            ctx.node_id, c.conn_id, c.peer, ctx.client_id, ctx.api_key, ctx.version, ctx.correlation_id,
            ctx.received_ns, self.clock.monotonic_ns(), outcome, throttle_ms,
        ))

    def _unsupported_api_versions(self, conn: KafkaConnection, spec: ApiSpec, correlation_id: int) -> None:
        """KIP-511: a v0 response, UNSUPPORTED_VERSION, listing only ApiVersions' range."""
        body = build_response(
            ApiKey.API_VERSIONS,
            0,
            {
                "error_code": ErrorCode.unsupported_version,
                "api_keys": [
                    {"api_key": spec.key, "min_version": spec.advertised_min, "max_version": spec.max_version}
                ],
            },
        )
        conn.send_response(encode_response(spec, 0, correlation_id, body))
