"""The handler contract: what an API handler is given and what it returns.

A handler is a plain function ``handle(ctx: RequestContext, req) -> Outcome``
(one module per API under ``apis/``).  It runs on the event loop, never
awaits, and follows kfake's ladder: validate (each failure an error code in
the response), then mutate, then respond.  ``ctx`` is its input and is immutable:
a handler writes nothing into it, and nothing after the handler does either.
It returns one ``Outcome``:

* ``Response(body, ...)``: the body is described once for every version
  (``protocol.codec.build`` keeps the fields the negotiated version has; a key
  no version has is refused under tests).  Besides the body it carries what the
  dispatcher needs of the answer, each said by the handler rather than guessed
  from the body: ``partitions`` (the error code and bytes of every partition it
  answers, for the journal and the request metrics), ``error_code`` (the
  journal's top-level error when the body's own ``error_code`` field is not it:
  the first failed item of a batched API), ``details`` (the journal record's per-API details),
  ``controller_throttle_ms`` (KIP-599,
  CreateTopics/DeleteTopics), ``client_software`` (ApiVersions v3+), and for
  Fetch what a throttle changes (``if_throttled``, ``finish``);
* ``NoResponse(partitions)``: nothing is sent (Produce with acks=0);
* ``CloseConnection(reason)``: Kafka closes the connection (an error on acks=0);
* a ``Deferred``: the answer comes later (a purgatory or a coordinator completes
  it with ``complete_with(build)``, ``build`` returning one of the above); the
  connection stays muted with the request pending until then.

A handler module may also offer ``error_response(ctx, request, error) ->
Response`` (Kafka's ``getErrorResponse``), used when a fault rule injects an
error; without one an API answers injected errors in its top-level error code.
Modules with ``HANDLES_INJECTED_ERRORS`` (Produce, Fetch, Metadata) instead
serve the request with ``ctx.injected`` set and give the error to the
partitions it applies to.

Quotas, the throttle, fault rules, encoding, the journal and the connection are
the dispatcher's (``kafka_apis.py``), not the handler's.

A wire-protocol violation raises ``protocol.errors.ProtocolError``: the
connection is closed with one log line.  Anything else a handler raises is a
broker bug: that connection is closed as an internal error, the others go on.

Handlers reach the broker only through ``ctx.broker``, a ``BrokerServices``:
the one simulated broker the request came to, with the cluster-wide state it
can see.  This mirrors the members Kafka's ``KafkaApis`` is constructed with
(``metadataCache``, ``replicaManager``, ``groupCoordinator``, ``quotas``,
``fetchManager``, ...); nothing in a handler walks from the broker up to the
process or across to the connection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias

from protocol.errors import ErrorCode
from protocol.registry import ApiRegistry, ApiSpec

from .common.channel import Authenticator
from .server.client_metrics_manager import ClientMetricsManager
from .common.clock import Clock
from .server.config_catalog import ConfigCatalog
from .controller.controller import Controller
from .common.faults import InjectedError
from .controller.features import FeatureControl
from .server.fetch_session import FetchManager
from .group.service import GroupCoordinatorService
from .observe.journal import PartitionRecord
from .server.log_dirs import LogDirs
from .state.metadata import ClusterMetadata
from .purgatory import DelayedOperation
from .controller.quorum import ControllerQuorum
from .quota.entities import QuotaStore
from .quota.manager import QuotaManagers
from .server.replica_manager import ReplicaManager
from .security.authorizer import StandardAuthorizer
from .controller.delegation_tokens import DelegationTokenManager
from .security.sasl_mechanisms import CredentialStore
from .share.coordinator import ShareGroupCoordinator
from .txn.coordinator import TransactionCoordinator

if TYPE_CHECKING:
    from .share.manager import SharePartitionManager  # built on first use (Broker.share_partitions)

Body: TypeAlias = dict[str, Any]


class Response(NamedTuple):
    """A response to send, and what the dispatcher must know of it (see the module docstring).
    Immutable; a ``NamedTuple`` rather than a frozen dataclass because one is made per request and
    a tuple is made in a fifth of the time."""

    body: Body
    # every partition the response gives an error code (a topic-level error: partition -1), in
    # response order, with the bytes appended or fetched; the journal's partitions
    partitions: Sequence[PartitionRecord] = ()
    # the journal's top-level error; None: the body's ``error_code`` (None too when it has none)
    error_code: int | None = None
    controller_throttle_ms: int = 0  # KIP-599: CreateTopics/DeleteTopics' controller mutation throttle
    client_software: tuple[str, str] | None = None  # ApiVersions v3+: what the connection's client is
    details: Mapping[str, Any] | None = None  # the journal record's per-API details (PushTelemetry: metrics kept)
    # Fetch (FetchContext): the body answered instead when a quota throttles this one
    # (getThrottledResponse), and, when none does, what sending it does (updateAndGenerateResponseData:
    # the fetch session created or updated) returning the body to send (``body`` itself if unchanged)
    if_throttled: Callable[[], Body] | None = None
    finish: Callable[[], Body] | None = None
    # the framed response of a body (Fetch: record sets unjoined, bodies shared in a completion
    # pass; ``fetch_response.py``); None: the dispatcher's ``encode_response``
    encode: Callable[[RequestContext, Body], Any] | None = None

    @property
    def top_error(self) -> int | None:
        if self.error_code is not None:
            return self.error_code
        code = self.body.get("error_code")
        return None if code is None else int(code)


@dataclass(frozen=True, slots=True)
class NoResponse:
    """Nothing is sent (Produce with acks=0); ``partitions`` as a ``Response``'s, for the journal."""

    partitions: Sequence[PartitionRecord] = ()


@dataclass(frozen=True, slots=True)
class CloseConnection:
    """Close the connection instead of answering (Kafka: an error on a Produce with acks=0)."""

    reason: str


Answer: TypeAlias = Response | NoResponse | CloseConnection


class Deferred:
    """A response that comes later: a delayed operation (the purgatory) or a coordinator
    completes it.

    ``complete_with(build)`` is the one way to complete it: ``build`` makes the ``Answer`` and the
    dispatcher calls it inside its own error handling, so a failure there closes that one
    connection instead of escaping into the purgatory's or the coordinator's loop (and dropping the
    completions after it).  Completion may come before the dispatcher attaches (an operation that
    completes inside ``try_complete_else_watch``); the dispatcher then finishes at once.
    ``delayed`` is the delayed operation the request waits in, when there is one (the journal
    reports its purgatory and whether the condition or the timeout completed it); ``partitions``
    what it did before it waits (Produce: the bytes appended), journaled if no answer ever comes
    (the connection closed meanwhile).
    """

    __slots__ = ("_callback", "_build", "done", "delayed", "partitions")

    def __init__(self) -> None:
        self._callback: Callable[[Deferred], None] | None = None
        self._build: Callable[[], Answer] | None = None
        self.done = False
        self.delayed: DelayedOperation | None = None
        self.partitions: Sequence[PartitionRecord] = ()

    def complete_with(self, build: Callable[[], Answer]) -> None:
        """Complete with the answer ``build()`` returns, built by the dispatcher (the first
        completion wins)."""
        if self.done:
            return
        self.done = True
        self._build = build
        if self._callback is not None:
            self._callback(self)

    def resolve(self) -> Answer:
        """The answer of a completed Deferred (built now, once)."""
        build = self._build
        assert self.done and build is not None, "Deferred not completed"
        return build()

    def attach(self, callback: Callable[[Deferred], None]) -> None:
        """Called with this Deferred when it completes (at once if it already has)."""
        self._callback = callback
        if self.done:
            callback(self)


Outcome: TypeAlias = Response | Deferred | NoResponse | CloseConnection


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
    config_catalog: ConfigCatalog   # config resources, cluster-wide: DescribeConfigs, (Incremental)AlterConfigs
    quorum: ControllerQuorum        # the KRaft controller quorum (QuorumController's raft client)
    features: FeatureControl        # finalized features (FeatureControlManager / MetadataCache.features)
    log_dirs: LogDirs               # the brokers' log directories (LogManager's, per broker)
    credentials: CredentialStore    # SASL users, cluster-wide: SCRAM credentials (ScramImage), PLAIN passwords
    delegation_tokens: DelegationTokenManager  # the cluster's delegation tokens (DelegationTokenControlManager)
    authorizer: StandardAuthorizer | None  # the cluster's ACLs (StandardAuthorizer); None: no authorizer
    share_groups: ShareGroupCoordinator  # share groups' membership (ShareGroupHeartbeat/Describe, KIP-932)
    client_metrics: ClientMetricsManager  # this broker's KIP-714 client telemetry (ClientMetricsManager)

    @property
    def share_partitions(self) -> SharePartitionManager:
        """This broker's share-partitions and share sessions."""
        ...


class RequestContext(NamedTuple):
    """What a handler knows about the request besides its body (Kafka's ``RequestContext``): its
    header, the connection it came on, the broker it came to.  Immutable: nothing writes into it
    (a ``NamedTuple``, as ``Response``: one per request, made in a fifth of a frozen dataclass's
    time)."""

    broker: BrokerServices
    spec: ApiSpec
    # the header
    api_key: int
    version: int
    correlation_id: int
    client_id: str
    size_bytes: int                 # with its size prefix
    # the connection, as it was when the request was read
    conn_id: int
    peer: str                       # "host:port"
    listener_name: str              # the listener it was accepted on: broker addresses are answered for it
    principal: str                  # "ANONYMOUS", or the SASL user once authenticated
    client_software: tuple[str, str] | None  # name and version from an earlier ApiVersions v3+
    # broker clock: the request was complete on the connection, and taken off it and decoded
    arrived_ns: int
    received_ns: int
    # an error a fault rule gave this request; handlers that serve partitions apart (Produce,
    # Fetch, Metadata) give it to the partitions it ``applies`` to, the others answer via ``error_response``
    injected: InjectedError | None = None
    sasl: Authenticator | None = None  # the authenticator when the request came before authentication
    security_protocol: str = "PLAINTEXT"  # its listener's (RequestContext.securityProtocol)
    token_authenticated: bool = False     # the principal logged in with a delegation token

    @property
    def node_id(self) -> int:
        return self.broker.node_id

    @property
    def metadata(self) -> ClusterMetadata:
        return self.broker.metadata


Handler: TypeAlias = Callable[[RequestContext, Any], Outcome]

# Kafka's AbstractRequest.getErrorResponse: the response that gives ``error`` to every element of
# the request, with nothing taking effect (used for injected errors).
ErrorResponder: TypeAlias = Callable[[RequestContext, Any, ErrorCode], Response]
