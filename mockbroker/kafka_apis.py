"""Request dispatch: decode -> (quota) -> API handler -> (purgatory) -> encode -> socket.

Kafka splits this over ``SocketServer.Processor`` (header parsing, version
checks), ``RequestChannel`` and ``KafkaApis`` (per-API handling and
``RequestHandlerHelper.sendResponseMaybeThrottle``).  Here one object per
simulated broker does it, in that order, on the event loop.

Handlers are plain functions ``handle(ctx, request) -> Result`` where Result is

* a ``dict``: the response, described once for every version (``protocol.codec.build``
  keeps the fields the negotiated version has);
* ``NO_RESPONSE``: nothing is sent (Produce with acks=0);
* ``CloseConnection``: Kafka closes the connection (an error on acks=0);
* ``Deferred``: the answer comes later (purgatory); the connection stays
  muted with the request pending until ``Deferred.complete`` is called.

Violations of the wire protocol raise ``ProtocolError`` and close the
connection with one log line, never a traceback to the client.

On a SASL_PLAINTEXT listener ``conn.sasl`` holds the authenticator until
authentication completes; the gate in ``_handle`` lets only what its state
allows through (ApiVersions, SaslHandshake, SaslAuthenticate) and closes the
connection on anything else, before decoding it.  Those responses are not
charged to quotas; a failed handshake or authentication is answered after
``connection.failed.authentication.delay.ms`` and the connection then closed
(see ``sasl.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.codec import (
    build_response,
    decode_request,
    encode_response,
    parse_request_header,
    peek_api,
)
from protocol.errors import ErrorCode, ProtocolError, UnsupportedVersion
from protocol.registry import ApiKey, ApiRegistry, ApiSpec

from .connection import CloseReason, KafkaConnection
from .journal import JournalEntry

if TYPE_CHECKING:
    from .server import BrokerServer

log = logging.getLogger("mockbroker.apis")


class _NoResponse:
    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()


@dataclass(slots=True)
class CloseConnection:
    reason: str


class Deferred:
    """A response that a delayed operation will produce (see the purgatory).

    ``complete`` may run before the dispatcher attaches its callback (an
    operation that completes inside ``try_complete_else_watch``); the result
    is then kept and delivered on attach.
    """

    __slots__ = ("_callback", "_result", "done")

    def __init__(self) -> None:
        self._callback: Callable[[Any], None] | None = None
        self._result: Any = None
        self.done = False

    def complete(self, result: Any) -> None:
        if self.done:
            return
        self.done = True
        self._result = result
        if self._callback is not None:
            self._callback(result)

    def attach(self, callback: Callable[[Any], None]) -> None:
        self._callback = callback
        if self.done:
            callback(self._result)


@dataclass(slots=True)
class RequestContext:
    """What a handler knows about the request besides its body (Kafka's RequestContext)."""

    conn: KafkaConnection
    broker: "BrokerServer"
    spec: ApiSpec
    api_key: int
    version: int
    correlation_id: int
    client_id: str
    size_bytes: int
    received_ns: int
    handler_ns: int = 0                     # time in the handler (request_percentage quota)
    fetch_session_epoch: int | None = None  # set by Fetch (a throttled full fetch drops its new session)
    controller_throttle_ms: int = 0          # set by CreateTopics/DeleteTopics (KIP-599)
    sasl: Any = None                         # the authenticator when the request came before authentication
    encoded: Any = None                      # (result, frame) when the Fetch byte quota already encoded it

    @property
    def cluster(self):  # type: ignore[no-untyped-def]
        return self.broker.cluster

    @property
    def node_id(self) -> int:
        return self.broker.node_id

    @property
    def principal(self) -> str:
        return self.conn.principal


Handler = Callable[[RequestContext, Any], Any]

class KafkaApis:
    def __init__(self, broker: "BrokerServer", registry: ApiRegistry, handlers: dict[int, Handler]) -> None:
        self.broker = broker
        self.registry = registry
        self.handlers = handlers
        self.clock = broker.clock
        self.requests_by_api: dict[int, int] = {}
        self.journal = broker.journal

    # -- entry point from the connection ------------------------------------------
    def handle(self, conn: KafkaConnection, payload: bytes) -> None:
        try:
            self._handle(conn, payload)
        except ProtocolError as e:
            conn.close(CloseReason.PROTOCOL_ERROR, str(e))
        except Exception:  # noqa: BLE001 - a broker bug must not take other clients down
            log.exception("unexpected error handling a request from %s", conn.peer)
            conn.close(CloseReason.PROTOCOL_ERROR, "internal error while handling the request")

    def _handle(self, conn: KafkaConnection, payload: bytes) -> None:
        received_ns = self.clock.monotonic_ns()
        api_key, version, correlation_id = peek_api(payload)
        sasl = conn.sasl
        if sasl is not None:  # SASL listener, not yet authenticated: only ApiVersions and the SASL APIs
            sasl.check_request(api_key)
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
            len(payload) + 4, received_ns, sasl=sasl,
        )
        self.requests_by_api[api_key] = self.requests_by_api.get(api_key, 0) + 1
        t0 = self.clock.monotonic_ns()
        result = self.handlers[api_key](ctx, request)
        ctx.handler_ns = self.clock.monotonic_ns() - t0
        if isinstance(result, Deferred):
            result.attach(lambda r, ctx=ctx, request=request: self._finish(ctx, request, r))
        else:
            self._finish(ctx, request, result)

    def _finish(self, ctx: RequestContext, request: Any, result: Any) -> None:
        conn = ctx.conn
        if conn.closed:
            self._journal(ctx, "closed")
            return
        fault = self.broker.faults.take(ctx.api_key)
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
        if ctx.sasl is None:
            result, throttle_ms, quota_type = self.broker.apply_quotas(ctx, request, result)
        else:  # Kafka's authenticator answers these itself: no quotas
            throttle_ms, quota_type = 0, ""
            ctx.sasl.answered(ctx.api_key, result)
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
        if ctx.sasl is not None and ctx.sasl.failure is not None:  # answered after a delay, then closed
            ctx.sasl.close_after_failure(frame)
            return
        conn.deliver(frame, throttle_ms, ctx, quota_type)

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
