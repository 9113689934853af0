"""What a fault rule (``faults.py``) does to one request on the connection: the dispatcher asks
``FaultActions`` before the handler (``before``: an error, a delay, hold, drop, close) and once the
request took effect (``after``: its response lost, by a drop or a close).  The rules, their
matching and their firings are ``faults.py``'s; this is the part that needs the connection and
the dispatcher, which it reaches only through ``Dispatcher``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from protocol.registry import ApiKey

from ..apis import error_responder, handles_injected_errors
from ..common.channel import CloseReason
from .connection import KafkaConnection
from ..common.faults import FaultInjector, FaultRule, HeldRequest, InjectedError, request_partitions
from ..server.fetch_session import FetchManager
from ..observe.journal import PartitionRecord
from .journal_recorder import InFlight, bytes_moved
from ..state.metadata import ClusterMetadata
from ..request import Answer, CloseConnection

log = logging.getLogger("mockbroker.apis")


class Dispatcher(Protocol):
    """What fault actions need of the dispatcher (``KafkaApis``)."""

    def run_handler(self, conn: KafkaConnection, flight: InFlight) -> None: ...

    def finish(self, conn: KafkaConnection, flight: InFlight, answer: Answer, parked: bool = False) -> None: ...

    def record(self, flight: InFlight, outcome: str, handled_ns: int | None = None,
               partitions: list[PartitionRecord] | None = None) -> None: ...

    def guarded(self, conn: KafkaConnection, run: Callable[[], None]) -> None: ...


class FaultActions:
    def __init__(self, faults: FaultInjector, node_id: int, metadata: ClusterMetadata,
                 fetch_manager: FetchManager) -> None:
        self.faults = faults
        self.node_id = node_id
        self.metadata = metadata
        self.fetch_manager = fetch_manager

    def take(self, api_key: int, version: int, client_id: str, request: Any, after: bool) -> FaultRule | None:
        """The rule that acts on this request now, if any (its firing counted)."""
        if not self.faults.rules:
            return None
        return self.faults.take(api_key, version, self.node_id, client_id,
                                lambda: self.partitions(request, api_key), after=after)

    def partitions(self, request: Any, api_key: int) -> list[tuple[str, int | None]]:
        """The (topic, partition)s a request names, topic ids resolved to names; an incremental
        Fetch also reads the partitions its session holds (it is served them all)."""
        by_id = self.metadata.topics_by_id
        named = request_partitions(request)
        if api_key == ApiKey.FETCH and request.session_id and request.session_epoch > 0:
            session = self.fetch_manager.sessions.get(request.session_id)
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

    @staticmethod
    def injected(rule: FaultRule | None) -> tuple[InjectedError | None, int]:
        """The error (and its delay) an error rule gives the request, taken from its stack now:
        the context is made with it."""
        if rule is None or rule.action != "error":
            return None, 0
        entry = rule.take_error()
        return InjectedError(entry.error, rule.match), entry.delay_ms

    def before(self, dispatcher: Dispatcher, conn: KafkaConnection, flight: InFlight, rule: FaultRule) -> bool:
        """Act on a rule that matched before the handler; True when the request is taken care of."""
        ctx = flight.ctx
        flight.fault_rule = rule.id
        what = f"{ctx.spec.name} v{ctx.version} (fault rule {rule.id})"
        if rule.action == "error":
            assert ctx.injected is not None, "the context is made with the rule's error"
            if handles_injected_errors(ctx.api_key):
                return False  # the handler gives the error to the partitions it applies to
            responder = error_responder(ctx.api_key)
            assert responder is not None, "rules are checked when added"
            dispatcher.finish(conn, flight, responder(ctx, flight.request, ctx.injected.error))
            return True
        if rule.action == "delay":
            flight.delay_ms = rule.delay_ms
            return False
        if rule.action == "hold":
            def resume() -> None:
                if conn.closed:
                    dispatcher.record(flight, "closed")
                    return
                dispatcher.guarded(conn, lambda: dispatcher.run_handler(conn, flight))

            self.faults.held.append(HeldRequest(rule.id, ctx.conn_id, ctx.api_key, ctx.correlation_id, resume))
            log.info("holding %s from %s (client_id=%r) until released", what, conn.peer, ctx.client_id)
            return True
        if rule.action == "drop":
            log.info("dropping %s from %s (client_id=%r): no response", what, conn.peer, ctx.client_id)
            dispatcher.record(flight, "dropped")
            return True  # never answered: the connection stays muted with the request pending
        dispatcher.record(flight, "closed")
        conn.close(CloseReason.INJECTED, f"{what} closed before it took effect")
        return True

    def after(self, dispatcher: Dispatcher, conn: KafkaConnection, flight: InFlight, handled_ns: int,
              answer: Answer) -> bool:
        """The request took effect: a rule that loses its response (True: lost, by a drop or a close;
        the record keeps the bytes it appended or read)."""
        ctx = flight.ctx
        if ctx.sasl is not None:
            return False
        rule = self.take(ctx.api_key, ctx.version, ctx.client_id, flight.request, after=True)
        if rule is None:
            return False
        flight.fault_rule = rule.id
        dispatcher.record(flight, "lost", handled_ns,
                          [] if isinstance(answer, CloseConnection) else bytes_moved(answer))
        if rule.action == "close":
            conn.close(CloseReason.INJECTED, f"response to {ctx.spec.name} v{ctx.version} lost (close, "
                                             f"fault rule {rule.id})")
        return True  # drop: never answered, the connection stays muted with the request pending
