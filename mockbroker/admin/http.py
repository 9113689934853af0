"""The admin HTTP API: ``ControlPlane`` over JSON, served by aiohttp on the cluster's own loop.

Routes and bodies are described by ``openapi.json`` beside this module (served
at ``/openapi.json``); ``docs/admin.md`` shows examples.  Every route calls
one ``ControlPlane`` method, so the Python API (``MockBroker``) and this one
behave the same.  Wrong input is a 400 with ``{"error": ..., "field": ...}``
(a body nested deeper than ``MAX_BODY_DEPTH`` too); an unknown broker, topic,
partition, group, fault rule or quota entity is a 404; no input can crash the
broker (a bug is a 500 with one log line).

Before any route (``_guard``), so that no web page and no DNS-rebinding attack
can drive it from a developer's browser: a ``Host`` that is neither a loopback
name nor the listener's own address (nor one of ``mock.admin.hosts``) is a 403,
an ``Origin`` other than the API's own is a 403, a request without the bearer
token when ``mock.admin.token`` is set is a 401, and a POST, PUT, PATCH or
DELETE whose ``Content-Type`` is not ``application/json`` is a 415 (a browser
sends a cross-site request without a CORS preflight only with a form's content
types, and this API answers no preflight).

This module is imported only when ``mock.admin.listener`` is set.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from aiohttp import web

from ..cluster import Cluster
from ..control import ControlError, ControlPlane, InvalidArgument
from .metrics import render_metrics

log = logging.getLogger("mockbroker.admin")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(data, default=_default), status=status, content_type="application/json")


def _error(status: int, message: str, field: str | None = None,
           headers: dict[str, str] | None = None) -> web.Response:
    response = _json({"error": message, "field": field}, status)
    response.headers.update(headers or {})
    return response


# No body of this API nests deeper than 4; deeper is refused before any handler sees it.
MAX_BODY_DEPTH = 32
_MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _too_deep() -> InvalidArgument:
    return InvalidArgument(f"body nests JSON arrays or objects deeper than {MAX_BODY_DEPTH} levels", "body")


def _depth_within(data: Any, limit: int) -> bool:
    """Whether ``data`` nests lists and dicts at most ``limit`` deep (iteratively: no recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is None:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True


def _parse(raw: bytes) -> Any:
    try:
        data = json.loads(raw)
    except RecursionError:  # the parser's own depth limit (the interpreter's recursion limit)
        raise _too_deep() from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InvalidArgument(f"body is not JSON: {e}", "body") from None
    if not _depth_within(data, MAX_BODY_DEPTH):
        raise _too_deep()
    return data


@web.middleware
async def _json_body(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every mutating request's body, if it has one, is JSON nested at most MAX_BODY_DEPTH deep,
    whether its route reads a body or not (parsed once, kept for ``_body``)."""
    if request.method in _MUTATING and request.can_read_body:
        raw = await request.read()
        if raw:
            request["json"] = _parse(raw)
    return await handler(request)


async def _body(request: web.Request, *names: str, required: tuple[str, ...] = (), optional: bool = False,
                any_fields: bool = False) -> dict[str, Any]:
    """The JSON object body of a request that takes no query parameters: only the fields ``names``
    (any with ``any_fields``: the callee checks them), every one of ``required``; ``optional``: an
    absent body is an empty one."""
    _query(request)
    if "json" not in request:
        if not optional:
            raise InvalidArgument("a JSON object body is required", "body")
        data: Any = {}
    else:
        data = request["json"]
    if not isinstance(data, dict):
        raise InvalidArgument("body must be a JSON object", "body")
    if not any_fields:
        _fields(data, *names)
    for name in required:
        if name not in data:
            raise InvalidArgument(f"{name} is required", name)
    return data


def _query(request: web.Request, *names: str) -> dict[str, str | None]:
    unknown = sorted(set(request.query) - set(names))
    if unknown:
        raise InvalidArgument(f"unknown query parameter {unknown[0]!r} (parameters: {', '.join(names) or 'none'})",
                              unknown[0])
    return {n: request.query.get(n) for n in names}


def _fields(body: dict[str, Any], *names: str) -> None:
    unknown = sorted(set(body) - set(names))
    if unknown:
        raise InvalidArgument(f"unknown field {unknown[0]!r} (fields: {', '.join(names)})", unknown[0])


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ControlError as e:
        return _error(e.status, e.message, e.field)
    except web.HTTPException as e:  # aiohttp's own: no route (404), wrong method (405, with Allow)
        if e.status_code >= 400:
            allow = {"Allow": e.headers["Allow"]} if "Allow" in e.headers else None
            return _error(e.status_code, e.reason or "error", None, allow)
        raise
    except Exception as e:  # noqa: BLE001 - a bug: one log line, a 500, the broker goes on
        log.warning("admin API: %s %s failed: %s: %s", request.method, request.path, type(e).__name__, e)
        log.debug("admin API failure", exc_info=e)
        return _error(500, f"internal error: {type(e).__name__}")


_LOOPBACK_NAMES = frozenset({"localhost", "localhost."})


def _hostname(authority: str) -> str | None:
    """The host of a ``Host`` header or an origin's authority, lower case, without port or
    brackets; None when it is not one."""
    a = authority.strip().lower()
    if a.startswith("["):
        end = a.find("]")
        if end <= 0 or (a[end + 1:] and not a[end + 1:].startswith(":")):
            return None
        return a[1:end]
    if a.count(":") > 1:  # an IPv6 literal without brackets is no authority
        return None
    return a.split(":", 1)[0] or None


def _port(authority: str, default: int) -> int | None:
    authority = authority.strip()
    tail = authority.rsplit("]", 1)[1] if authority.startswith("[") else authority
    if ":" not in tail:
        return default
    digits = tail.rsplit(":", 1)[1]
    return int(digits) if digits.isdigit() else None


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Guard:
    """Who may call the API (the checks before any route): Host, Origin, bearer token, and
    ``application/json`` on every mutating request."""

    def __init__(self, listener_host: str, token: str, extra_hosts: list[str]) -> None:
        self.listener_host = listener_host.strip("[]").lower()
        self.token = token
        self.extra_hosts = {h.strip("[]").lower() for h in extra_hosts}
        self.port = 0  # the bound port, set once listening

    def _own_host(self, host: str, request: web.Request) -> bool:
        if _is_loopback(host) or host == self.listener_host or host in self.extra_hosts:
            return True
        sockname = request.transport.get_extra_info("sockname") if request.transport is not None else None
        if not sockname:
            return False
        return host == str(sockname[0]).lower()  # the address the client connected to

    def refusal(self, request: web.Request) -> web.Response | None:
        """The error response for a request that may not be served, else None."""
        host_header = request.headers.get("Host", "")
        host = _hostname(host_header)
        if host is None or not self._own_host(host, request):
            return _error(403, f"Host {host_header!r} is not this listener's address or a loopback name "
                               "(mock.admin.hosts adds names)", "Host")
        origin = request.headers.get("Origin")
        if origin is not None:
            scheme, _, authority = origin.partition("://")
            o_host = _hostname(authority) if scheme == "http" and "/" not in authority else None
            if o_host is None or not self._own_host(o_host, request) or _port(authority, 80) != self.port:
                return _error(403, f"Origin {origin!r} is not this API's own origin", "Origin")
        if self.token:
            scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(presented.strip().encode(), self.token.encode()):
                return _error(401, "a bearer token is required (mock.admin.token): Authorization: Bearer TOKEN",
                              "Authorization", {"WWW-Authenticate": 'Bearer realm="mockbroker admin"'})
        if request.method in _MUTATING and request.content_type != "application/json":
            return _error(415, f"{request.method} needs Content-Type: application/json "
                               f"(got {request.headers.get('Content-Type', 'none')!r})", "Content-Type")
        return None


def build_app(cluster: Cluster, control: ControlPlane, guard: Guard | None = None) -> web.Application:
    c = control
    middlewares = [_errors, _json_body]
    if guard is not None:
        @web.middleware
        async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            refused = guard.refusal(request)
            return refused if refused is not None else await handler(request)

        middlewares.insert(0, _guard)
    app = web.Application(middlewares=middlewares, client_max_size=1024 * 1024)
    spec = resources.files(__package__).joinpath("openapi.json").read_text()
    r = app.router

    def get(path: str, fn: Callable[[web.Request], Any]) -> None:
        async def handler(request: web.Request) -> web.Response:
            return _json(fn(request))
        r.add_get(path, handler, allow_head=False)

    # -- status, brokers ---------------------------------------------------------------------
    get("/status", lambda q: (_query(q), c.status())[1])
    get("/brokers", lambda q: (_query(q), c.brokers())[1])

    async def stop_broker(q: web.Request) -> web.Response:
        _query(q)
        return _json(await c.stop_broker(q.match_info["broker"]))

    async def start_broker(q: web.Request) -> web.Response:
        _query(q)
        return _json(await c.start_broker(q.match_info["broker"]))

    r.add_post("/brokers/{broker}/stop", stop_broker)
    r.add_post("/brokers/{broker}/start", start_broker)

    # -- topics and partitions ------------------------------------------------------------------
    get("/topics", lambda q: (_query(q), c.topics())[1])

    async def create_topic(q: web.Request) -> web.Response:
        b = await _body(q, "name", "partitions", "replication_factor", "configs", required=("name",))
        return _json(c.create_topic(b["name"], b.get("partitions"), b.get("replication_factor"), b.get("configs")),
                     201)

    r.add_post("/topics", create_topic)
    get("/topics/{topic}", lambda q: (_query(q), c.topic(q.match_info["topic"]))[1])

    async def delete_topic(q: web.Request) -> web.Response:
        _query(q)
        c.delete_topic(q.match_info["topic"])
        return web.Response(status=204)

    r.add_delete("/topics/{topic}", delete_topic)
    get("/topics/{topic}/partitions/{partition}",
        lambda q: (_query(q), c.partition(q.match_info["topic"], q.match_info["partition"]))[1])

    async def elect(q: web.Request) -> web.Response:
        b = await _body(q, "broker", required=("broker",))
        return _json(c.elect_leader(q.match_info["topic"], q.match_info["partition"], b["broker"]))

    async def set_isr(q: web.Request) -> web.Response:
        b = await _body(q, "isr", required=("isr",))
        return _json(c.set_isr(q.match_info["topic"], q.match_info["partition"], b["isr"]))

    r.add_post("/topics/{topic}/partitions/{partition}/elect", elect)
    r.add_put("/topics/{topic}/partitions/{partition}/isr", set_isr)
    get("/replication/lag", lambda q: (_query(q), c.replication_lag())[1])

    async def set_lag(q: web.Request) -> web.Response:
        b = await _body(q, "lag_ms", "broker", "topic", required=("lag_ms",))
        return _json(c.set_replication_lag(b["lag_ms"], b.get("broker"), b.get("topic")))

    r.add_put("/replication/lag", set_lag)

    # -- quotas --------------------------------------------------------------------------------
    get("/quotas", lambda q: c.quotas(**_query(q, "user", "client_id")))

    async def set_quota(q: web.Request) -> web.Response:
        b = await _body(q, "user", "client_id", "values")
        return _json(c.set_quota(b.get("user"), b.get("client_id"), b.get("values")))

    async def delete_quota(q: web.Request) -> web.Response:
        args = _query(q, "user", "client_id", "key")
        c.delete_quota(args["user"], args["client_id"], args["key"])
        return web.Response(status=204)

    r.add_put("/quotas", set_quota)
    r.add_delete("/quotas", delete_quota)

    # -- groups --------------------------------------------------------------------------------
    get("/groups", lambda q: (_query(q), c.groups())[1])
    get("/groups/{group}", lambda q: (_query(q), c.group(q.match_info["group"]))[1])
    get("/streams-groups/{group}", lambda q: (_query(q), c.streams_group(q.match_info["group"]))[1])
    get("/share-groups/{group}", lambda q: (_query(q), c.share_group(q.match_info["group"]))[1])
    get("/transactions", lambda q: (_query(q), c.transactions())[1])
    get("/client-metrics", lambda q: c.client_metrics(_query(q, "client_id")["client_id"]))

    async def loading(q: web.Request) -> web.Response:
        b = await _body(q, "duration_ms", required=("duration_ms",))
        c.inject_coordinator_loading(q.match_info["group"], b["duration_ms"])
        return web.Response(status=204)

    r.add_post("/groups/{group}/loading", loading)

    async def move_coordinator(q: web.Request) -> web.Response:
        b = await _body(q, "broker", required=("broker",))
        return _json(c.move_coordinator(q.match_info["group"], b["broker"]))

    r.add_post("/groups/{group}/coordinator", move_coordinator)

    async def expel(q: web.Request) -> web.Response:
        _query(q)
        return _json(c.expel_member(q.match_info["group"], q.match_info["member"]))

    r.add_delete("/groups/{group}/members/{member}", expel)

    # -- connections, throttles, gauges, journal --------------------------------------------------
    get("/connections", lambda q: c.connections(**_query(q, "broker", "client_id")))
    get("/throttles", lambda q: c.throttle_events(**_query(q, "client_id", "user", "connection")))
    get("/throttles/violations", lambda q: c.violations(**{k: v for k, v in _query(q, "by").items()
                                                            if v is not None}))
    get("/memory-pool", lambda q: c.memory_pool(_query(q, "broker")["broker"]))
    get("/purgatories", lambda q: c.purgatories(_query(q, "broker")["broker"]))
    get("/journal", lambda q: c.journal(**_query(q, "api", "client_id", "since_ms", "until_ms", "limit")))

    # -- clock ---------------------------------------------------------------------------------
    get("/clock", lambda q: (_query(q), c.clock())[1])

    async def advance(q: web.Request) -> web.Response:
        b = await _body(q, "ms", required=("ms",))
        return _json(c.advance_clock(b["ms"]))

    r.add_post("/clock/advance", advance)

    # -- ACLs (authorizer.class.name) -------------------------------------------------------------
    get("/acls", lambda q: (_query(q), c.acls())[1])

    async def add_acl(q: web.Request) -> web.Response:
        return _json(c.add_acl(await _body(q, any_fields=True)), 201)

    async def remove_acls(q: web.Request) -> web.Response:
        return _json(c.remove_acls(await _body(q, any_fields=True, optional=True)))

    r.add_post("/acls", add_acl)
    r.add_delete("/acls", remove_acls)

    # -- faults --------------------------------------------------------------------------------
    get("/faults", lambda q: (_query(q), c.faults())[1])
    get("/faults/held", lambda q: (_query(q), c.held())[1])

    async def inject(q: web.Request) -> web.Response:
        return _json(c.inject(await _body(q, any_fields=True)), 201)

    async def clear(q: web.Request) -> web.Response:
        _query(q)
        c.clear_faults()
        return web.Response(status=204)

    async def release(q: web.Request) -> web.Response:
        b = await _body(q, "rule", optional=True)
        return _json(c.release(b.get("rule")))

    async def remove(q: web.Request) -> web.Response:
        _query(q)
        c.remove_fault(q.match_info["rule"])
        return web.Response(status=204)

    r.add_post("/faults", inject)
    r.add_delete("/faults", clear)
    r.add_post("/faults/release", release)
    get(r"/faults/{rule:\d+}", lambda q: (_query(q), c.fault(q.match_info["rule"]))[1])
    r.add_delete(r"/faults/{rule:\d+}", remove)

    # -- metrics and the description -------------------------------------------------------------
    async def metrics(q: web.Request) -> web.Response:
        _query(q)
        body, content_type = render_metrics(cluster)
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def openapi(q: web.Request) -> web.Response:
        return web.Response(text=spec, content_type="application/json")

    r.add_get("/metrics", metrics, allow_head=False)
    r.add_get("/openapi.json", openapi, allow_head=False)
    return app


class _OneLine(logging.Filter):
    """aiohttp logs a request it cannot parse (a bad header, say) with its traceback: keep one line
    naming the reason, as the broker does for bad Kafka input."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            e = record.exc_info[1]
            record.msg = f"admin API: bad HTTP request: {type(e).__name__}: {e}".replace("\n", " ")
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


class AdminServer:
    """The admin listener of one cluster (aiohttp's AppRunner on the cluster's loop)."""

    def __init__(self, cluster: Cluster, control: ControlPlane, host: str, port: int) -> None:
        self.cluster = cluster
        cfg = cluster.config
        self.guard = Guard(host, cfg["mock.admin.token"], cfg["mock.admin.hosts"])
        self.app = build_app(cluster, control, self.guard)
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        server_log = logging.getLogger("aiohttp.server")
        if not any(isinstance(f, _OneLine) for f in server_log.filters):
            server_log.addFilter(_OneLine())
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        await site.start()
        server = site._server  # aiohttp has no public accessor for the bound sockets
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        self.guard.port = self.port
        log.info("admin API on http://%s", self.address)

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
