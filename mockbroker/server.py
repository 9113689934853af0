"""The broker process: one ``BrokerServer`` (listener) per simulated broker,
all sharing one ``ClusterState``, plus the housekeeping timers.

``BrokerServer`` plays Kafka's ``SocketServer`` (accepting connections,
``connections.max.idle.ms``) and owns the per-broker pieces a real broker has
alone: its ``KafkaApis`` dispatcher and its fetch-session cache.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from protocol.codec import build_response, encode_response

from protocol.registry import ApiRegistry

from .apis import build_handlers
from .clock import Clock, SystemClock
from .cluster import BrokerNode, ClusterState, Partition, Topic
from .config import BrokerConfig, parse_listener, parse_topic_spec
from .connection import CloseReason, KafkaConnection, MemoryMutedChannels
from .faults import FaultInjector
from .journal import RequestJournal
from .fetch_session import FetchManager
from .group.service import GroupCoordinatorService
from .kafka_apis import KafkaApis
from .memory_pool import memory_pool_for
from .purgatory import DelayedOperationPurgatory, Timer
from .quota.entities import QuotaStore
from .quota.manager import QuotaManagers
from .quota.throttle import ThrottleEvent, apply_quotas
from .replication import ReplicaManager
from .sasl import CredentialStore, SaslAuthenticator, parse_users

log = logging.getLogger("mockbroker.server")


class BrokerServer:
    def __init__(self, runtime: "Broker", node_id: int, host: str, port: int, advertised: tuple[str, int] | None) -> None:
        self.runtime = runtime
        self.node_id = node_id
        self.bind_host = host
        self.bind_port = port
        self.advertised = advertised
        self.clock: Clock = runtime.clock
        self.cluster: ClusterState = runtime.cluster
        self.registry: ApiRegistry = runtime.registry
        self.faults: FaultInjector = runtime.faults
        self.journal: RequestJournal = runtime.journal
        self.groups: GroupCoordinatorService = runtime.groups
        # Quotas are enforced by each broker on its own (Kafka's QuotaFactory per broker);
        # the configured quotas are cluster-wide.
        self.quotas = QuotaManagers(runtime.quota_store, self.clock, self.cluster.config)
        self.throttle_mode: str = self.cluster.config.throttle_mode
        cfg = self.cluster.config
        self.fetch_manager = FetchManager(cfg["max.incremental.fetch.session.cache.slots"])
        # One timer per purgatory, as Kafka gives each DelayedOperationPurgatory its own SystemTimer.
        self.produce_purgatory = DelayedOperationPurgatory(
            "Produce", Timer(self.clock), purge_interval=cfg["producer.purgatory.purge.interval.requests"])
        self.fetch_purgatory = DelayedOperationPurgatory(
            "Fetch", Timer(self.clock), purge_interval=cfg["fetch.purgatory.purge.interval.requests"])
        self.apis = KafkaApis(self, self.registry, runtime.handlers)
        self.connections: set[KafkaConnection] = set()
        self.max_request_bytes: int = self.cluster.config["socket.request.max.bytes"]
        # KIP-72: one request memory pool per broker (SocketServer's), MemoryPool.NONE when disabled
        self.memory_pool = memory_pool_for(cfg["queued.max.request.bytes"], self.max_request_bytes, self.clock)
        self.memory_mutes = MemoryMutedChannels(self.memory_pool, runtime.loop)
        self.security_protocol: str = runtime.security_protocol
        self._server: asyncio.AbstractServer | None = None
        self.loop: asyncio.AbstractEventLoop = runtime.loop
        self.port = port

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
        self.cluster.add_broker(BrokerNode(self.node_id, host, port))
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
        node = self.cluster.brokers.get(self.node_id)
        if node is not None:
            node.alive = False

    @property
    def running(self) -> bool:
        return self._server is not None

    # -- connections ---------------------------------------------------------------------
    def new_authenticator(self, conn: KafkaConnection) -> SaslAuthenticator | None:
        """A SASL_PLAINTEXT listener authenticates every new connection; PLAINTEXT: None."""
        store = self.runtime.sasl_credentials
        if store is None:
            return None
        cfg = self.cluster.config
        return SaslAuthenticator(conn, store, store.mechanisms, cfg["sasl.server.max.receive.size"],
                                 cfg["connection.failed.authentication.delay.ms"])

    def connection_opened(self, conn: KafkaConnection) -> None:
        self.connections.add(conn)
        log.debug("connection %s from %s to broker %s", conn.conn_id, conn.peer, self.node_id)

    def connection_closed(self, conn: KafkaConnection) -> None:
        self.connections.discard(conn)

    def close_idle(self, now_ms: int, idle_ms: int) -> None:
        for conn in list(self.connections):
            if now_ms - conn.last_active_ms > idle_ms:
                conn.close(CloseReason.IDLE)

    def check_delayed(self, key: tuple[str, int]) -> None:
        """Complete delayed operations watching ``key`` (ReplicaManager's tryCompleteActions)."""
        self.produce_purgatory.check_and_complete(key)
        self.fetch_purgatory.check_and_complete(key)

    # -- hooks the handlers call ------------------------------------------------------------
    def apply_quotas(self, ctx: Any, request: Any, result: dict) -> tuple[dict, int, str]:
        """Charge this response to the client's quotas: (result, throttle ms, quota type)."""
        def response_size() -> int:
            # Fetch only: the frame is kept and sent if the response stays as it is (one encode)
            frame = encode_response(ctx.spec, ctx.version, ctx.correlation_id,
                                    build_response(ctx.api_key, ctx.version, result))
            ctx.encoded = (result, frame)
            return len(frame) - 4
        return apply_quotas(self.quotas, ctx, request, result, response_size, self.clock.monotonic_ms())

    def record_throttle(self, conn: KafkaConnection, ctx: Any, throttle_ms: int, mode: str,
                        quota_type: str) -> ThrottleEvent:
        ev = ThrottleEvent(self.node_id, conn.conn_id, conn.peer, ctx.principal, ctx.client_id, ctx.api_key,
                           ctx.version, ctx.spec.client_throttles(ctx.version), mode,
                           self.clock.monotonic_ms(), throttle_ms)
        self.runtime.throttle_events.append(ev)
        return ev

    def on_append(self, partition: Partition) -> None:
        self.runtime.on_append(partition)

    def create_topic(self, name: str, partitions: int, rf: int, configs: dict | None = None,
                     assignments: dict | None = None) -> Topic:
        return self.runtime.create_topic(name, partitions, rf, configs, assignments)

    def auto_create_topic(self, name: str) -> Topic:
        cfg = self.cluster.config
        rf = min(cfg["default.replication.factor"], len(self.cluster.brokers))
        return self.runtime.create_topic(name, cfg["num.partitions"], rf)

    def delete_topic(self, topic: Topic) -> None:
        self.runtime.delete_topic(topic)


class Broker:
    """Every simulated broker of one mockbroker process, on one event loop."""

    def __init__(self, config: BrokerConfig, clock: Clock | None = None,
                 host: str | None = None, port: int | None = None) -> None:
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self.loop = asyncio.get_running_loop()
        bind = getattr(self.clock, "bind", None)
        if bind is not None:
            bind(self.loop)
        self.cluster = ClusterState(config, self.clock)
        self.replicas = ReplicaManager(self.cluster, config["mock.replication.lag.ms"], self._on_high_watermark)
        self.handlers = build_handlers()
        self.registry = ApiRegistry(config["mock.kafka.version"], set(self.handlers))
        self.faults = FaultInjector()
        self.journal = RequestJournal(config["mock.journal.max.entries"])
        self.groups = GroupCoordinatorService(self.cluster, self.clock, config)
        self.quota_store = QuotaStore()
        self.quota_store.load(config["mock.quotas"])
        maxlen = config["mock.journal.max.entries"] or None
        self.throttle_events: deque[ThrottleEvent] = deque(maxlen=maxlen)
        self.security_protocol, lhost, lport = parse_listener(config["listeners"])
        # SCRAM credentials are derived once, at start-up (random salt per user and mechanism)
        self.sasl_credentials: CredentialStore | None = (
            CredentialStore(parse_users(config["mock.sasl.users"]), config["sasl.enabled.mechanisms"])
            if self.security_protocol == "SASL_PLAINTEXT" else None
        )
        if host is not None:
            lhost = host
        if port is not None:
            lport = port
        advertised = parse_listener(config["advertised.listeners"])[1:] if config["advertised.listeners"] else None
        n = config["mock.num.brokers"]
        first = config["node.id"]
        self.servers: dict[int, BrokerServer] = {}
        for i in range(n):
            p = 0 if lport == 0 else lport + i
            adv = (advertised[0], advertised[1] + i if advertised[1] else 0) if advertised else None
            self.servers[first + i] = BrokerServer(self, first + i, lhost, p, adv)
        self._timers: list[Any] = []
        self._stopped = False
        self._pending_wake: set[tuple[str, int]] = set()
        self._wake_scheduled = False

    async def start(self) -> None:
        for s in self.servers.values():
            await s.start()
        for item in self.config["mock.topics"]:
            name, parts, rf = parse_topic_spec(item)
            if name not in self.cluster.topics:
                self.create_topic(name, parts, rf)
        self._every(self.config["log.retention.check.interval.ms"], self.cluster.enforce_retention)
        self._every(self.config["offsets.retention.check.interval.ms"], self.groups.expire_offsets)
        # ReplicaManager's isr-expiration task: every replica.lag.time.max.ms / 2
        lag_max = self.config["replica.lag.time.max.ms"]
        self._every(max(lag_max // 2, 1), lambda: self.replicas.shrink_lagging_isr(lag_max))
        # ClientQuotaManager: sensors idle for an hour are dropped (InactiveSensorExpirationTimeSeconds)
        self._every(60_000, self._expire_quota_sensors)
        idle = self.config["connections.max.idle.ms"]
        self._every(min(max(idle // 10, 1000), 30_000), lambda: self._close_idle(idle))

    def _every(self, interval_ms: int, fn: Any) -> None:
        def tick() -> None:
            if self._stopped:
                return
            try:
                fn()
            finally:
                self._timers.append(self.clock.call_later(interval_ms, tick))

        self._timers.append(self.clock.call_later(interval_ms, tick))

    def _expire_quota_sensors(self) -> None:
        now = self.clock.monotonic_ms()
        for s in self.servers.values():
            s.quotas.expire(now)

    def _close_idle(self, idle_ms: int) -> None:
        now = self.clock.monotonic_ms()
        for s in self.servers.values():
            s.close_idle(now, idle_ms)

    async def stop(self) -> None:
        self._stopped = True
        for t in self._timers:
            t.cancel()
        for s in self.servers.values():
            await s.stop()

    @property
    def bootstrap_servers(self) -> str:
        out = []
        for s in self.servers.values():
            node = self.cluster.brokers.get(s.node_id)
            host = node.host if node else s.bind_host
            port = node.port if node else s.port
            out.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
        return ",".join(out)

    # -- cluster mutations -------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, rf: int, configs: dict | None = None,
                     assignments: dict | None = None) -> Topic:
        topic = self.cluster.create_topic(name, partitions, rf, configs, assignments)
        now = self.clock.monotonic_ms()
        for p in topic.partitions:
            p.replica_leo = {r: 0 for r in p.replicas}
            p.caught_up_ms = {r: now for r in p.replicas if r != p.leader_id}
            live = [r for r in p.replicas if self.cluster.brokers[r].alive]
            p.isr[:] = live
            if p.leader_id not in live:
                self.replicas.elect_leader(p)
        return topic

    def delete_topic(self, topic: Topic) -> None:
        self.cluster.delete_topic(topic)
        self.groups.delete_topic_offsets(topic.name)

    def on_append(self, partition: Partition) -> None:
        self.replicas.on_leader_append(partition)
        self._wake(partition)

    def _on_high_watermark(self, partition: Partition) -> None:
        self._wake(partition)

    def _wake(self, partition: Partition) -> None:
        """An append or a high-watermark move: let delayed operations on that partition complete.

        Like Kafka's action queue (``ReplicaManager.tryCompleteActions`` in the ``finally`` of
        ``KafkaApis.handle``), completions run after the current request's response is sent,
        so a Produce is acknowledged before the fetches it wakes are answered.
        """
        self._pending_wake.add((partition.topic.name, partition.index))
        if not self._wake_scheduled:
            self._wake_scheduled = True
            self.loop.call_soon(self._complete_actions)

    def _complete_actions(self) -> None:
        self._wake_scheduled = False
        keys, self._pending_wake = self._pending_wake, set()
        for key in keys:
            for s in self.servers.values():
                s.check_delayed(key)

    # -- broker membership (runtime) --------------------------------------------------------------
    async def stop_broker(self, node_id: int) -> None:
        """Close a broker's listener and connections; its leadership moves, its replicas leave the ISR."""
        server = self.servers[node_id]
        await server.stop()
        self.replicas.broker_stopped(node_id)
        self.groups.on_brokers_changed()

    async def start_broker(self, node_id: int) -> None:
        """Reopen a stopped broker on its port; its replicas catch up and rejoin the ISR."""
        server = self.servers[node_id]
        if server.running:
            return
        await server.start()
        self.replicas.broker_started(node_id)
        self.groups.on_brokers_changed()

