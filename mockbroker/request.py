"""The handler contract: what an API handler is given and what it may return.

A handler is a plain function ``handle(ctx: RequestContext, request) -> Result``
(one module per API under ``apis/``).  It runs on the event loop, never
awaits, and follows kfake's ladder: validate (each failure an error code in
the response), then mutate, then respond.  It returns

* a ``dict``: the response, described once for every version
  (``protocol.codec.build`` keeps the fields the negotiated version has; a key
  no version has is refused under tests);
* ``NO_RESPONSE``: nothing is sent (Produce with acks=0);
* ``CloseConnection``: Kafka closes the connection (an error on acks=0);
* a ``Deferred``: the answer comes later (a purgatory completes it); the
  connection stays muted with the request pending until then.

A handler module may also offer ``error_response(ctx, request, error)``
(Kafka's ``getErrorResponse``), used when a fault rule injects an error;
without one an API answers injected errors in its top-level error code.
Produce and Fetch instead serve the request with ``ctx.injected`` set and
give the error to the partitions it applies to.

A wire-protocol violation raises ``protocol.errors.ProtocolError``: the
connection is closed with one log line.  Anything else a handler raises is a
broker bug: that connection is closed as an internal error, the others go on.

Handlers reach the broker only through ``ctx.broker``, a ``BrokerServices``:
the one simulated broker the request came to, with the cluster-wide state it
can see.  This mirrors the members Kafka's ``KafkaApis`` is constructed with
(``metadataCache``, ``replicaManager``, ``groupCoordinator``, ``quotas``,
``fetchManager``, ...); nothing in a handler walks from the broker up to the
process or across to the connection's owner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from protocol.errors import ErrorCode
from protocol.registry import ApiRegistry, ApiSpec

from .channel import Authenticator
from .clock import Clock
from .controller import Controller
from .faults import InjectedError
from .fetch_session import FetchManager
from .group.service import GroupCoordinatorService
from .metadata import ClusterMetadata
from .purgatory import DelayedOperation
from .quota.entities import QuotaStore
from .quota.manager import QuotaManagers
from .replica_manager import ReplicaManager
from .txn.coordinator import TransactionCoordinator


class _NoResponse:
    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()


@dataclass(slots=True)
class CloseConnection:
    """Close the connection instead of answering (Kafka: an error on a Produce with acks=0)."""

    reason: str


class Deferred:
    """A response that comes later: a delayed operation (the purgatory) or the group
    coordinator completes it.

    ``complete_with(build)`` hands over a function that builds the response: the dispatcher calls
    it inside its own error handling, so a failure there closes that one connection instead of
    escaping into the purgatory's completion loop (and dropping the completions after it).
    Completion may come before the dispatcher attaches (an operation that completes inside
    ``try_complete_else_watch``); the dispatcher then finishes at once.
    """

    __slots__ = ("_callback", "_result", "_build", "done")

    def __init__(self) -> None:
        self._callback: Callable[[Deferred], None] | None = None
        self._result: Any = None
        self._build: Callable[[], Any] | None = None
        self.done = False

    def complete(self, result: Any) -> None:
        """Complete with a ready result (the first completion wins)."""
        if self.done:
            return
        self.done = True
        self._result = result
        if self._callback is not None:
            self._callback(self)

    def complete_with(self, build: Callable[[], Any]) -> None:
        """Complete with the result ``build()`` returns, built by the dispatcher."""
        if self.done:
            return
        self.done = True
        self._build = build
        if self._callback is not None:
            self._callback(self)

    def resolve(self) -> Any:
        """The result of a completed Deferred (built now when it was given as a function)."""
        assert self.done, "Deferred not completed"
        build = self._build
        if build is not None:
            self._build = None
            self._result = build()
        return self._result

    def attach(self, callback: Callable[[Deferred], None]) -> None:
        """Called with this Deferred when it completes (at once if it already has)."""
        self._callback = callback
        if self.done:
            callback(self)


Result: TypeAlias = dict[str, Any] | Deferred | _NoResponse | CloseConnection


class ClientChannel(Protocol):
    """What a handler may know of the connection its request came on."""

    conn_id: int
    peer: str              # "host:port"
    principal: str         # "ANONYMOUS", or the SASL user once authenticated
    client_software: tuple[str, str] | None  # name and version from ApiVersions v3+ (set by its handler)
    listener_name: str     # the listener it was accepted on: broker addresses are answered for it


class BrokerServices(Protocol):
    """The simulated broker a request came to, as its handlers see it (``Broker`` implements it)."""

    node_id: int
    clock: Clock
    registry: ApiRegistry           # what this broker serves and advertises (ApiVersions)
    metadata: ClusterMetadata       # brokers, topics, partitions: the KRaft metadata every broker reads
    controller: Controller          # topic creation/deletion, producer ids (forwarded to the controller)
    replica_manager: ReplicaManager  # append_records, fetch_messages, this broker's purgatories
    fetch_manager: FetchManager     # this broker's KIP-227 fetch sessions
    groups: GroupCoordinatorService  # the group coordinator (checks itself which broker leads a group)
    txn: TransactionCoordinator     # the transaction coordinator (checks itself which broker leads an id)
    quotas: QuotaManagers           # this broker's quota managers (Kafka's QuotaFactory)
    quota_store: QuotaStore         # the configured client quotas, cluster-wide (Describe/AlterClientQuotas)


@dataclass(slots=True)
class RequestContext:
    """What a handler knows about the request besides its body (Kafka's ``RequestContext``)."""

    conn: ClientChannel
    broker: BrokerServices
    spec: ApiSpec
    api_key: int
    version: int
    correlation_id: int
    client_id: str
    size_bytes: int
    received_ns: int
    handler_ns: int = 0                     # time in the handler (request_percentage quota)
    handled_ns: int = 0                     # broker clock: the handler returned
    parked_ms: float | None = None          # answered this long after the handler returned (a Deferred)
    fetch_session_epoch: int | None = None  # set by Fetch (a throttled full fetch drops its new session)
    controller_throttle_ms: int = 0          # set by CreateTopics/DeleteTopics (KIP-599)
    sasl: Authenticator | None = None        # the authenticator when the request came before authentication
    # (result, frame) when the Fetch byte quota already encoded this response to measure it
    encoded: tuple[dict[str, Any], memoryview] | None = None
    # an error a fault rule gave this request; handlers that serve partitions apart (Produce,
    # Fetch) give it to the partitions it ``applies`` to, the others answer via ``error_response``
    injected: InjectedError | None = None
    delay_ms: int = 0                        # a fault rule's latency: the response goes out this much later
    fault_rule: int | None = None            # the id of the fault rule that acted on this request
    delayed: DelayedOperation | None = None  # the delayed operation the handler parked (the journal reports it)
    partition_bytes: dict[tuple[str, int], int] | None = None  # bytes appended/fetched per partition
    arrived_ns: int = 0                      # broker clock: the request was complete on the connection
    recorded: bool = False                   # its journal record is written (one per request)
    after_throttle: dict[str, Any] | None = None  # the first request after a throttle: what came of it

    @property
    def node_id(self) -> int:
        return self.broker.node_id

    @property
    def metadata(self) -> ClusterMetadata:
        return self.broker.metadata

    @property
    def principal(self) -> str:
        return self.conn.principal


Handler: TypeAlias = Callable[[RequestContext, Any], Result]

# Kafka's AbstractRequest.getErrorResponse: the response that gives ``error`` to every element of
# the request, with nothing taking effect (used for injected errors).
ErrorResponder: TypeAlias = Callable[[RequestContext, Any, ErrorCode], "dict[str, Any]"]
