"""One simulated broker: its listeners and everything a real broker has alone.

``Broker`` plays Kafka's ``SocketServer`` (an acceptor per listener, each
connection remembering the listener it came on,
``connections.max.idle.ms``, the request memory pool) and ``BrokerServer``'s
per-broker pieces: its ``KafkaApis`` dispatcher, its ``ReplicaManager`` with
the produce and fetch purgatories, its quota managers (Kafka's
``QuotaFactory``: each broker enforces quotas on its own) and its fetch
session cache.  What every broker shares (metadata, the controller,
replication, the group coordinator, the configured quotas) belongs to the
``Cluster`` and is handed in; nothing here calls back up into it.

A ``Broker`` is the ``ConnectionOwner`` of its connections and the
``BrokerServices`` its handlers see (``request.py``).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocol.registry import ApiRegistry

from .apis import build_handlers
from .common.channel import Authenticator, CloseReason
from .server.client_metrics_manager import ClientMetricsManager
from .common.clock import Clock
from .config.broker_config import SASL_PROTOCOLS, BrokerConfig, Listener
from .server.config_catalog import ConfigCatalog
from .share.config import share_group_configs
from .share.coordinator import ShareGroupCoordinator
from .share.persister import SharePersister
from .network.connection import KafkaConnection
from .controller.controller import Controller
from .network.fault_actions import FaultActions
from .common.faults import FaultInjector
from .controller.features import FeatureControl
from .server.fetch_session import FetchManager
from .group.service import GroupCoordinatorService
from .observe.journal import RequestJournal
from .network.journal_recorder import RequestRecorder
from .network.kafka_apis import KafkaApis
from .server.log_dirs import LogDirs
from .network.memory_pool import MemoryMutedChannels, memory_pool_for
from .state.metadata import ClusterMetadata
from .controller.quorum import ControllerQuorum
from .quota.entities import QuotaStore
from .quota.manager import QuotaManagers
from .quota.throttle import ThrottleEvent
from .server.replica_manager import ActionQueue, ReplicaManager, TxnVerifier, VerificationConfig
from .state.replication import ReplicationSimulator
from .observe.request_stats import RequestStats
from .network.sasl_authenticator import SaslAuthenticator
from .security.authorizer import StandardAuthorizer
from .controller.delegation_tokens import DelegationTokenManager
from .security.sasl_mechanisms import CredentialStore
from .network.throttled_channel import ThrottleDelivery
from .network.tls import TlsHandshake, peer_subject
from .txn.coordinator import TransactionCoordinator

if TYPE_CHECKING:
    from .share.manager import SharePartitionManager

log = logging.getLogger("mockbroker.broker")


@dataclass(slots=True)
class SharedState:
    """What every simulated broker of one cluster shares (handed to each ``Broker``)."""

    config: BrokerConfig
    clock: Clock
    loop: asyncio.AbstractEventLoop
    metadata: ClusterMetadata
    controller: Controller
    replication: ReplicationSimulator
    actions: ActionQueue
    groups: GroupCoordinatorService
    txn: TransactionCoordinator
    txn_verifier: TxnVerifier | None          # KIP-890: the coordinator's AddPartitionsToTxn (None: never asked)
    quota_store: QuotaStore
    registry: ApiRegistry
    journal: RequestJournal
    faults: FaultInjector
    throttle_events: deque[ThrottleEvent]
    sasl_credentials: CredentialStore  # SASL users: PLAIN passwords, SCRAM credentials (ScramImage)
    config_catalog: ConfigCatalog  # config resources: DescribeConfigs, (Incremental)AlterConfigs
    quorum: ControllerQuorum       # the KRaft controller quorum (DescribeQuorum)
    features: FeatureControl       # finalized features (ApiVersions, UpdateFeatures)
    log_dirs: LogDirs              # every broker's log directories (DescribeLogDirs, AlterReplicaLogDirs)
    share_groups: ShareGroupCoordinator  # share groups' membership (KIP-932)
    share_persister: SharePersister      # the share coordinator's persisted share-partition state
    delegation_tokens: DelegationTokenManager  # the cluster's delegation tokens (KIP-48)
    authorizer: StandardAuthorizer | None      # the ACLs (authorizer.class.name), None: no authorizer


class Broker:
    def __init__(self, shared: SharedState, node_id: int, listeners: list[Listener]) -> None:
        cfg = shared.config
        self.node_id = node_id
        # Kafka's EndPoints: bound port per listener name (0 until bound; a restart reuses it)
        self.listeners = listeners
        self.ports: dict[str, int] = {lst.name: lst.port for lst in listeners}
        self._config = cfg
        # BrokerServices (what handlers see)
        self.clock: Clock = shared.clock
        self.loop: asyncio.AbstractEventLoop = shared.loop
        self.registry: ApiRegistry = shared.registry
        self.metadata: ClusterMetadata = shared.metadata
        self.controller: Controller = shared.controller
        self.groups: GroupCoordinatorService = shared.groups
        self.txn: TransactionCoordinator = shared.txn
        self.quota_store: QuotaStore = shared.quota_store
        self.config_catalog: ConfigCatalog = shared.config_catalog
        self.quorum: ControllerQuorum = shared.quorum
        self.features: FeatureControl = shared.features
        self.log_dirs: LogDirs = shared.log_dirs
        self.credentials: CredentialStore = shared.sasl_credentials
        self.delegation_tokens: DelegationTokenManager = shared.delegation_tokens
        self.authorizer: StandardAuthorizer | None = shared.authorizer
        self.quotas = QuotaManagers(shared.quota_store, self.clock, cfg)
        self.fetch_manager = FetchManager(cfg["max.incremental.fetch.session.cache.slots"])
        self.replica_manager = ReplicaManager(
            node_id, shared.metadata, shared.replication, shared.actions, self.clock,
            cfg["producer.purgatory.purge.interval.requests"], cfg["fetch.purgatory.purge.interval.requests"],
            shared.txn_verifier, cfg["mock.produce.check.records"],
            VerificationConfig(cfg["transaction.partition.verification.enable"],
                               cfg["add.partitions.to.txn.retry.backoff.ms"],
                               cfg["add.partitions.to.txn.retry.backoff.max.ms"]))
        # KIP-932: this broker's share-partitions and share sessions (SharePartitionManager), built on
        # first use (``share_partitions``)
        self.share_groups: ShareGroupCoordinator = shared.share_groups
        self._shared = shared
        self._share_partitions: SharePartitionManager | None = None
        # KIP-714: this broker's client telemetry (BrokerServer's ClientMetricsManager)
        self.client_metrics = ClientMetricsManager(node_id, shared.config_catalog.client_metrics, self.clock,
                                                   cfg["telemetry.max.bytes"],
                                                   exporter=cfg["mock.client.telemetry.enabled"])
        self.request_stats = RequestStats()
        self.apis = KafkaApis(
            self, shared.registry, build_handlers(),
            RequestRecorder(node_id, self.clock, cfg.throttle_mode, shared.journal, self.request_stats,
                            shared.quota_store),
            FaultActions(shared.faults, node_id, shared.metadata, self.fetch_manager),
            ThrottleDelivery(cfg.throttle_mode, self.clock, shared.throttle_events))
        self.apis.recorder.pass_scope = self.replica_manager.shared_encodings
        # ConnectionOwner (what connections see)
        self.max_request_bytes: int = cfg["socket.request.max.bytes"]
        # KIP-72: one request memory pool per broker (SocketServer's), MemoryPool.NONE when disabled
        self.memory_pool = memory_pool_for(cfg["queued.max.request.bytes"], self.max_request_bytes, self.clock)
        self.memory_mutes = MemoryMutedChannels(self.memory_pool, self.loop)
        self.connections: set[KafkaConnection] = set()
        self._servers: list[asyncio.AbstractServer] = []
        self._handshakes: set[asyncio.Task[None]] = set()  # TLS handshakes under way (tls.TlsHandshake)

    @property
    def share_partitions(self) -> SharePartitionManager:
        """This broker's SharePartitionManager, built (and its modules imported) when a share request,
        a metrics scrape or a share-group view first asks for it: until then it would hold nothing."""
        if self._share_partitions is None:
            from .share.manager import SharePartitionManager

            shared, node_id = self._shared, self.node_id
            self._share_partitions = SharePartitionManager(
                node_id, shared.metadata, self.replica_manager, shared.share_persister,
                share_group_configs(shared.config_catalog, node_id), self.clock,
                int(shared.config_catalog.broker_value(node_id, "group.share.max.share.sessions") or 2000))
        return self._share_partitions

    def __repr__(self) -> str:
        bound = ",".join(f"{lst.name}://{lst.host}:{self.ports[lst.name]}" for lst in self.listeners)
        return f"<Broker {self.node_id} {bound} {'running' if self.running else 'stopped'}>"

    @property
    def port(self) -> int:
        """The bound port of the first listener."""
        return self.ports[self.listeners[0].name]

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> dict[str, tuple[str, int]]:
        """Open the listeners (a restart reuses their ports): the advertised endpoints, for the
        cluster to register this broker with (``ClusterMetadata.broker_up``)."""
        endpoints: dict[str, tuple[str, int]] = {}
        try:
            for lst in self.listeners:
                server = await self.loop.create_server(
                    self._accept_tls(lst) if lst.name in self._config.tls_contexts
                    else lambda lst=lst: KafkaConnection(self, lst.name, lst.protocol),
                    lst.host or None, self.ports[lst.name], reuse_address=True)
                self._servers.append(server)
                port = server.sockets[0].getsockname()[1]
                self.ports[lst.name] = port  # a restart reuses the same port
                if lst.advertised is not None:  # a listener bound but not advertised, as Kafka allows
                    endpoints[lst.name] = (lst.advertised[0], lst.advertised[1] or port)
                log.info("broker %s listening on %s://%s:%s (%s, advertised %s)", self.node_id, lst.name,
                         lst.host, port, lst.protocol,
                         "%s:%s" % endpoints[lst.name] if lst.name in endpoints else "not")
        except BaseException:
            self._close_servers()
            raise
        return endpoints

    def _accept_tls(self, lst: Listener) -> Callable[[], TlsHandshake]:
        """An SSL/SASL_SSL listener's protocol factory: each connection's TLS handshake first, then its
        ``KafkaConnection`` (an SSL listener's principal from the client certificate; SASL_SSL's from SASL)."""
        context = self._config.tls_contexts[lst.name]
        mapper = self._config.principal_mappers[lst.name]

        def principal(sslobj: ssl.SSLObject) -> str | None:
            if lst.protocol != "SSL":
                return None
            subject = peer_subject(sslobj)
            return None if subject is None else mapper.name(subject)

        return lambda: TlsHandshake(self.loop, context, lst.name,
                                    lambda: KafkaConnection(self, lst.name, lst.protocol), principal, self._handshakes)

    def _close_servers(self) -> None:
        for server in self._servers:
            server.close()
        self._servers = []
        for task in list(self._handshakes):
            task.cancel()

    async def stop(self) -> None:
        """Close the listeners and every connection (the cluster marks it down)."""
        self._close_servers()
        for conn in list(self.connections):
            conn.close(CloseReason.BROKER_STOPPED)
        if self._share_partitions is not None:
            self._share_partitions.broker_stopped()  # its share-partitions and locks were in its memory

    def shutdown(self) -> None:
        """The process stops: no delayed operation of this broker fires any more."""
        self.replica_manager.shutdown()
        if self._share_partitions is not None:
            self._share_partitions.shutdown()

    @property
    def running(self) -> bool:
        return bool(self._servers)

    # -- ConnectionOwner -------------------------------------------------------------------
    def new_authenticator(self, conn: KafkaConnection) -> Authenticator | None:
        """A SASL_PLAINTEXT or SASL_SSL listener authenticates every new connection; PLAINTEXT, SSL: None."""
        store = self.credentials
        if conn.security_protocol not in SASL_PROTOCOLS:
            return None
        cfg = self._config
        return SaslAuthenticator(conn, store, store.mechanisms, cfg["sasl.server.max.receive.size"],
                                 cfg["connection.failed.authentication.delay.ms"])

    def dispatch(self, conn: KafkaConnection, payload: memoryview) -> None:
        self.apis.handle(conn, payload)

    def connection_opened(self, conn: KafkaConnection) -> None:
        self.connections.add(conn)
        log.debug("connection %s from %s to broker %s", conn.conn_id, conn.peer, self.node_id)

    def connection_closed(self, conn: KafkaConnection) -> None:
        self.connections.discard(conn)
        self.apis.connection_closed(conn)
        if self._share_partitions is not None:
            self._share_partitions.connection_closed(conn.conn_id)
        self.client_metrics.connection_closed(conn.conn_id)

    # -- housekeeping (called by the cluster's timers) ----------------------------------------
    def close_idle(self, now_ms: int, idle_ms: int) -> None:
        for conn in list(self.connections):
            if now_ms - conn.last_active_ms > idle_ms:
                conn.close(CloseReason.IDLE)
