"""One simulated broker: its listener and everything a real broker has alone.

``Broker`` plays Kafka's ``SocketServer`` (accepting connections,
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
from collections import deque
from dataclasses import dataclass

from protocol.registry import ApiRegistry

from .apis import build_handlers
from .channel import Authenticator, CloseReason
from .clock import Clock
from .config import BrokerConfig
from .connection import KafkaConnection, MemoryMutedChannels
from .controller import Controller
from .faults import FaultInjector
from .fetch_session import FetchManager
from .group.service import GroupCoordinatorService
from .journal import RequestJournal
from .kafka_apis import KafkaApis
from .memory_pool import memory_pool_for
from .metadata import BrokerNode, ClusterMetadata
from .quota.entities import QuotaStore
from .quota.manager import QuotaManagers
from .quota.throttle import ThrottleEvent
from .replica_manager import ActionQueue, ReplicaManager
from .replication import ReplicationSimulator
from .request_stats import RequestStats
from .sasl_authenticator import SaslAuthenticator
from .sasl_mechanisms import CredentialStore

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
    quota_store: QuotaStore
    registry: ApiRegistry
    journal: RequestJournal
    faults: FaultInjector
    throttle_events: deque[ThrottleEvent]
    security_protocol: str
    sasl_credentials: CredentialStore | None


class Broker:
    def __init__(self, shared: SharedState, node_id: int, host: str, port: int,
                 advertised: tuple[str, int] | None) -> None:
        cfg = shared.config
        self.node_id = node_id
        self.bind_host = host
        self.bind_port = port
        self.port = port
        self.advertised = advertised
        self.security_protocol = shared.security_protocol
        self._credentials = shared.sasl_credentials
        self._config = cfg
        # BrokerServices (what handlers see)
        self.clock: Clock = shared.clock
        self.loop: asyncio.AbstractEventLoop = shared.loop
        self.registry: ApiRegistry = shared.registry
        self.metadata: ClusterMetadata = shared.metadata
        self.controller: Controller = shared.controller
        self.groups: GroupCoordinatorService = shared.groups
        self.quota_store: QuotaStore = shared.quota_store
        self.quotas = QuotaManagers(shared.quota_store, self.clock, cfg)
        self.fetch_manager = FetchManager(cfg["max.incremental.fetch.session.cache.slots"])
        self.replica_manager = ReplicaManager(
            node_id, shared.metadata, shared.replication, shared.actions, self.clock,
            cfg["producer.purgatory.purge.interval.requests"], cfg["fetch.purgatory.purge.interval.requests"])
        self.request_stats = RequestStats()
        self.apis = KafkaApis(self, shared.registry, build_handlers(), shared.journal, shared.faults,
                              cfg.throttle_mode, shared.throttle_events, self.request_stats)
        # ConnectionOwner (what connections see)
        self.max_request_bytes: int = cfg["socket.request.max.bytes"]
        # KIP-72: one request memory pool per broker (SocketServer's), MemoryPool.NONE when disabled
        self.memory_pool = memory_pool_for(cfg["queued.max.request.bytes"], self.max_request_bytes, self.clock)
        self.memory_mutes = MemoryMutedChannels(self.memory_pool, self.loop)
        self.connections: set[KafkaConnection] = set()
        self._server: asyncio.AbstractServer | None = None

    def __repr__(self) -> str:
        return f"<Broker {self.node_id} {self.bind_host}:{self.port} {'running' if self.running else 'stopped'}>"

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        self._server = await self.loop.create_server(
            lambda: KafkaConnection(self), self.bind_host, self.bind_port, reuse_address=True
        )
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        self.bind_port = self.port  # a restart reuses the same port
        host, port = self.advertised or (self._advertise_host(), self.port)
        if self.advertised and self.advertised[1] == 0:
            port = self.port
        self.metadata.add_broker(BrokerNode(self.node_id, host, port))
        log.info("broker %s listening on %s://%s:%s (advertised %s:%s)", self.node_id, self.security_protocol,
                 self.bind_host, self.port, host, port)

    def _advertise_host(self) -> str:
        if self.bind_host in ("", "0.0.0.0"):
            return "127.0.0.1"
        if self.bind_host == "::":
            return "::1"
        return self.bind_host

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for conn in list(self.connections):
            conn.close(CloseReason.BROKER_STOPPED)
        node = self.metadata.brokers.get(self.node_id)
        if node is not None:
            node.alive = False

    @property
    def running(self) -> bool:
        return self._server is not None

    # -- ConnectionOwner -------------------------------------------------------------------
    def new_authenticator(self, conn: KafkaConnection) -> Authenticator | None:
        """A SASL_PLAINTEXT listener authenticates every new connection; PLAINTEXT: None."""
        store = self._credentials
        if store is None:
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

    # -- housekeeping (called by the cluster's timers) ----------------------------------------
    def close_idle(self, now_ms: int, idle_ms: int) -> None:
        for conn in list(self.connections):
            if now_ms - conn.last_active_ms > idle_ms:
                conn.close(CloseReason.IDLE)
