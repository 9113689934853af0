"""The mockbroker process: every simulated broker, on one event loop (kfake's ``Cluster``).

Three names, three things:

* ``Cluster`` (this module): what one mockbroker process runs — one
  ``Broker`` per ``mock.num.brokers``, the state they share (metadata, the
  controller, simulated replication, the group coordinator, the configured
  quotas, the request journal), the housekeeping timers, and the front ends
  it starts after its brokers and stops before them (the admin HTTP API, which
  the handle that starts the cluster adds: nothing here imports it).
* ``Broker`` (``broker.py``): one simulated broker — a listener, its
  ``KafkaApis``, ``ReplicaManager``, quota managers and memory pool.
* ``MockBroker`` (``runner.py``): the Python handle tests use — a ``Cluster``
  on a background thread, steered through ``call``.

Calls go one way: the cluster builds the brokers and the shared state, and
wires the few signals that flow back (a high-watermark move completes
delayed operations through the ``ActionQueue``; a deleted topic drops its
committed offsets) as callbacks it registers.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Protocol

from protocol.errors import ErrorCode
from protocol.registry import ApiRegistry

from .apis import build_handlers
from .broker import Broker, SharedState
from .common.clock import Clock, ManualClock, PeriodicTask, SystemClock, every
from .state.cluster_view import TopicPartition
from .config.broker_config import BrokerConfig, Listener, parse_topic_spec, parse_users, routable_address
from .server.config_catalog import ConfigCatalog
from .group.group import assignment_interval_applies, initial_group_epoch
from .share.config import share_group_configs
from .share.coordinator import ShareGroupCoordinator
from .share.persister import SharePersister
from .controller.controller import Controller
from .common.faults import FaultInjector
from .controller.features import FeatureControl
from .group.service import GroupCoordinatorService
from .observe.journal import RequestJournal
from .observe.journal_writer import JournalWriter
from .server.log_cleaner import LogCleaner
from .server.log_dirs import LogDirs
from .state.metadata import ClusterMetadata, Topic
from .controller.quorum import ControllerQuorum
from .quota.entities import QuotaStore
from .quota.throttle import ThrottleEvent
from .server.replica_manager import ActionQueue
from .state.replication import ReplicationSimulator
from .security.authorizer import StandardAuthorizer, acl_from_spec
from .controller.delegation_tokens import DelegationTokenManager
from .security.sasl_mechanisms import CredentialStore
from .txn.coordinator import GROUP_METADATA_TOPIC, MarkerErrors, TransactionCoordinator
from .txn.state_manager import TransactionConfig, TransactionStateManager
from .txn.verification import AddPartitionsToTxnManager

log = logging.getLogger("mockbroker.config")


class FrontEnd(Protocol):
    """Something the cluster serves besides the Kafka listeners (the admin HTTP API)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Cluster:
    """Every simulated broker of one mockbroker process, on one event loop."""

    def __init__(self, config: BrokerConfig, clock: Clock | None = None,
                 host: str | None = None, port: int | None = None) -> None:
        self.config = config
        self.clock: Clock = clock or (ManualClock() if config["mock.clock"] == "manual" else SystemClock())
        self.loop = asyncio.get_running_loop()
        bind = getattr(self.clock, "bind", None)
        if bind is not None:
            bind(self.loop)
        self.metadata = ClusterMetadata(config, self.clock)
        self.actions = ActionQueue(self.loop)
        self.replication = ReplicationSimulator(self.metadata, config["mock.replication.lag.ms"], self.actions.add)
        self.controller = Controller(self.metadata, self.replication)
        self.log_cleaner = LogCleaner(self.metadata)  # compaction of cleanup.policy=compact logs
        self._cleaner_task: PeriodicTask | None = None
        # every config resource (DescribeConfigs, (Incremental)AlterConfigs); dynamic broker configs
        self.config_catalog = ConfigCatalog(config, self.metadata)
        self.config_catalog.on_change.append(self._broker_configs_changed)
        self.groups = GroupCoordinatorService(self.metadata, self.clock, config)
        self.controller.on_topic_deleted(self.groups.delete_topic_offsets)
        # the groups' own configs: the streams coordinator, built on first use, takes the consumer's
        self.groups.consumer.group_configs = lambda gid: self.config_catalog.groups.get(gid, {})
        # KIP-932: the share coordinator's state (cluster-wide, as its __share_group_state log) and
        # the share groups' coordinator (its groups live in the group registry)
        first_node = config["node.id"]
        catalog = self.config_catalog
        self.share_persister = SharePersister(
            self.metadata, int(catalog.broker_value(first_node, "share.coordinator.state.topic.num.partitions") or 50),
            int(catalog.broker_value(first_node, "share.coordinator.state.topic.replication.factor") or 3))
        self.share_groups = ShareGroupCoordinator(self.groups.registry, self.metadata, self.clock,
                                                  self.groups.heartbeat_purgatory,
                                                  share_group_configs(catalog, first_node), self.share_persister,
                                                  initial_group_epoch(config["mock.kafka.version"]),
                                                  assignment_interval_applies(config["mock.kafka.version"]))
        # the transaction coordinator, at the transaction.version ApiVersions finalizes
        # (mock.transaction.version, by default the release's: 2 on 4.x)
        self.txn = TransactionCoordinator(
            TransactionStateManager(self.metadata, self.clock,
                                    TransactionConfig.from_config(config, config.transaction_version)),
            self.controller, _LeaderMarkerWriter(self, config["mock.txn.marker.latency.ms"]),
            self.groups.registry.partition_for)
        self.registry = ApiRegistry(config["mock.kafka.version"], set(build_handlers()),
                                    client_telemetry=config["mock.client.telemetry.enabled"])
        # the KRaft controller quorum (every broker a voter) and the finalized features it holds
        self.quorum = ControllerQuorum(self.metadata, self.clock, config["mock.kafka.version"])
        self.features = FeatureControl(config["mock.kafka.version"], self.quorum, config.transaction_version)
        self.features.on_change.append(self._feature_changed)
        # every broker's log directories (DescribeLogDirs, AlterReplicaLogDirs)
        self.log_dirs = LogDirs(self.metadata, self.clock, config["log.dirs"], config["mock.log.dir.total.bytes"],
                                self.replication.lag_ms)
        self.faults = FaultInjector()
        self.faults.add_all(config["mock.faults"])
        self.journal = RequestJournal(config["mock.journal.max.entries"])
        self.journal_writer: JournalWriter | None = None  # the on-disk journal (mock.journal.dir)
        if config["mock.journal.dir"]:
            self.journal_writer = JournalWriter(config["mock.journal.dir"], config["mock.journal.segment.bytes"],
                                                config["mock.journal.queue.records"])
            self.journal.sinks.append(self.journal_writer.sink)
        self.quota_store = QuotaStore()
        self.quota_store.load(config["mock.quotas"])
        self.throttle_events: deque[ThrottleEvent] = deque(maxlen=config["mock.journal.max.entries"] or None)
        listeners = config.listeners()
        if host is not None or port is not None:  # --host/--port: the first listener
            first_listener = listeners[0]
            listeners[0] = Listener(first_listener.name, first_listener.protocol,
                                    first_listener.host if host is None else host,
                                    first_listener.port if port is None else port,
                                    _overridden(first_listener, host, port, config["advertised.listeners"]))
        # SCRAM credentials are derived once, at start-up (random salt per user and mechanism); the
        # store exists without a SASL listener too, as Kafka's ScramImage: AlterUserScramCredentials
        # and DescribeUserScramCredentials answer on any listener
        credentials = CredentialStore(parse_users(config["mock.sasl.users"]), config["sasl.enabled.mechanisms"])
        tokens = DelegationTokenManager(self.clock, config["delegation.token.secret.key"],
                                        config["delegation.token.max.lifetime.ms"],
                                        config["delegation.token.expiry.time.ms"],
                                        config["delegation.token.expiry.check.interval.ms"])
        credentials.tokens = tokens
        authorizer = (StandardAuthorizer(config["super.users"], config["allow.everyone.if.no.acl.found"])
                      if config["authorizer.class.name"] else None)
        if authorizer is not None:
            for spec in config["mock.acls"]:
                authorizer.add(acl_from_spec(spec))
        self.authorizer = authorizer  # the cluster's ACLs (StandardAuthorizer), None without one
        # KIP-890: every leader asks the coordinator before appending a transactional batch (at Produce
        # v12+ whatever transaction.partition.verification.enable says: that adds the partitions)
        verifier = AddPartitionsToTxnManager(self.txn)
        shared = SharedState(config, self.clock, self.loop, self.metadata, self.controller, self.replication,
                             self.actions, self.groups, self.txn, verifier, self.quota_store, self.registry,
                             self.journal, self.faults, self.throttle_events, credentials, self.config_catalog,
                             self.quorum, self.features, self.log_dirs, self.share_groups, self.share_persister,
                             tokens, authorizer)
        first = config["node.id"]
        self.brokers: dict[int, Broker] = {}
        for i in range(config["mock.num.brokers"]):
            self.brokers[first + i] = Broker(shared, first + i, [lst.for_broker(i) for lst in listeners])
        self._timers: list[PeriodicTask] = []
        self.front_ends: list[FrontEnd] = []  # started after the brokers, in order; stopped first

    async def start(self) -> None:
        for line in self.config.without_effect():  # Kafka's broker configs mockbroker does not simulate
            log.info(line)
        if self.journal_writer is not None:
            self.journal_writer.start()
        for b in self.brokers.values():
            self._registered(b.node_id, await b.start(), voter=True)
        for item in self.config["mock.topics"]:
            name, parts, rf = parse_topic_spec(item)
            if name not in self.metadata.topics:
                self.controller.create_topic(name, parts, rf)
        self._every(self.config["log.retention.check.interval.ms"], self.metadata.enforce_retention,
                    "kafka-log-retention")
        self._start_cleaner()
        self._every(self.config["offsets.retention.check.interval.ms"], self.groups.expire_offsets,
                    "delete-expired-group-metadata")
        # the abort of timed-out transactions and the expiration of transactional ids, on this clock
        self.txn.startup()
        # ReplicaManager's isr-expiration task: every replica.lag.time.max.ms / 2
        lag_max = self.config["replica.lag.time.max.ms"]
        self._every(max(lag_max // 2, 1), lambda: self.replication.shrink_lagging_isr(lag_max), "isr-expiration")
        # ClientQuotaManager: sensors idle for an hour are dropped (InactiveSensorExpirationTimeSeconds)
        self._every(60_000, self._expire_quota_sensors, "quota-sensor-expiration")
        idle = self.config["connections.max.idle.ms"]
        self._every(min(max(idle // 10, 1000), 30_000), lambda: self._close_idle(idle), "idle-connections")
        for front_end in self.front_ends:
            try:
                await front_end.start()
            except BaseException:
                await self.stop()
                raise

    def _every(self, interval_ms: int, fn: Callable[[], object], name: str) -> PeriodicTask:
        task = every(self.clock, interval_ms, fn, name)
        self._timers.append(task)
        return task

    def _start_cleaner(self) -> None:
        """The cleaner thread: it sleeps log.cleaner.backoff.ms when no compacted log is dirty enough."""
        self._cleaner_task = self._every(max(self.config["log.cleaner.backoff.ms"], 1), self.log_cleaner.run,
                                         "kafka-log-cleaner-thread-0")

    def _broker_configs_changed(self, keys: set[str]) -> None:
        """Dynamic broker configs changed (``ConfigCatalog``): what is read once must be read again, as
        ``LogCleaner.reconfigure`` restarts its threads with the new back-off."""
        if "log.cleaner.backoff.ms" in keys and self._cleaner_task is not None:
            self._cleaner_task.cancel()
            self._timers.remove(self._cleaner_task)
            self._start_cleaner()

    def _registered(self, node_id: int, endpoints: dict[str, tuple[str, int]], voter: bool) -> None:
        """A broker (re)started: registered with its endpoints, and a node of the controller quorum
        (a voter when formatted with the cluster, ``controller.quorum.voters``)."""
        self.metadata.broker_up(node_id, endpoints)
        self.quorum.node_started(node_id, next(iter(endpoints.values()), ("", 0)), voter)

    def _feature_changed(self, name: str, level: int) -> None:
        """A finalized feature level changed (UpdateFeatures): transaction.version is the transaction
        coordinator's (``TransactionCoordinator`` reads ``MetadataCache.features`` per request)."""
        if name == "transaction.version":
            self.txn.txn_manager.config = replace(self.txn.config, transaction_version=level)

    def _expire_quota_sensors(self) -> None:
        now = self.clock.monotonic_ms()
        for b in self.brokers.values():
            b.quotas.expire(now)

    def _close_idle(self, idle_ms: int) -> None:
        now = self.clock.monotonic_ms()
        for b in self.brokers.values():
            b.close_idle(now, idle_ms)

    async def stop(self) -> None:
        for front_end in reversed(self.front_ends):
            await front_end.stop()
        for t in self._timers:
            t.cancel()
        for b in self.brokers.values():
            await b.stop()
            self.metadata.broker_down(b.node_id)
            self.quorum.node_stopped(b.node_id)
            b.shutdown()
        self.groups.shutdown()
        self.txn.shutdown()
        if self.journal_writer is not None:  # after the brokers: every request answered is in it
            self.journal_writer.close()

    def bootstrap_servers(self, listener_name: str | None = None) -> str:
        """Every broker's advertised address on ``listener_name`` (default: the first listener)."""
        out = []
        for b in self.brokers.values():
            node = self.metadata.brokers.get(b.node_id)
            address = node.endpoint(listener_name or b.listeners[0].name) if node else None
            if address is not None:
                host, port = address
                out.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
        return ",".join(out)

    def broker(self, node_id: int | None = None) -> Broker:
        """One simulated broker (the first by default)."""
        return self.brokers[node_id if node_id is not None else next(iter(self.brokers))]

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str] | None = None) -> Topic:
        return self.controller.create_topic(name, partitions, replication_factor, configs)

    # -- broker membership: the cluster is its one writer (ClusterMetadata.broker_up/broker_down) ----
    async def stop_broker(self, node_id: int) -> None:
        """Close a broker's listener and connections; its leadership moves, its replicas leave the ISR."""
        await self.brokers[node_id].stop()
        self.metadata.broker_down(node_id)
        self.quorum.node_stopped(node_id)
        self.replication.broker_stopped(node_id)
        self.groups.on_brokers_changed()
        self.txn.on_brokers_changed()

    async def start_broker(self, node_id: int) -> None:
        """Reopen a stopped broker on its port; its replicas catch up and rejoin the ISR."""
        broker = self.brokers[node_id]
        if broker.running:
            return
        self._registered(node_id, await broker.start(), voter=False)
        self.replication.broker_started(node_id)
        self.groups.on_brokers_changed()
        self.txn.on_brokers_changed()


class _LeaderMarkerWriter:
    """The coordinator's WriteTxnMarkers: each partition's marker goes to its leader's
    ``ReplicaManager.append_txn_marker`` (Kafka's TransactionMarkerChannelManager sends one request
    per leader broker).  A partition whose topic is gone answers NONE (Kafka drops it from the
    transaction); one without a running leader NOT_LEADER_OR_FOLLOWER, written again later.  A
    ``__consumer_offsets`` partition's marker completes the transaction's offsets in the group
    coordinator."""

    def __init__(self, cluster: Cluster, latency_ms: int = 0) -> None:
        self._cluster = cluster
        self._latency_ms = latency_ms  # mock.txn.marker.latency.ms: the inter-broker request's trip

    def write_markers(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      partitions: frozenset[TopicPartition], on_done: Callable[[MarkerErrors], None]) -> None:
        if self._latency_ms > 0:
            self._cluster.clock.call_later(self._latency_ms, partial(
                self._write, producer_id, producer_epoch, commit, coordinator_epoch, partitions, on_done))
        else:
            self._write(producer_id, producer_epoch, commit, coordinator_epoch, partitions, on_done)

    def _write(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
               partitions: frozenset[TopicPartition], on_done: Callable[[MarkerErrors], None]) -> None:
        errors: dict[TopicPartition, ErrorCode] = {}
        waiting = set(partitions)

        def answered(tp: TopicPartition, error: ErrorCode) -> None:
            if tp not in waiting:
                return
            errors[tp] = error
            waiting.discard(tp)
            if not waiting:
                on_done(errors)

        for tp in sorted(partitions):
            topic, index = tp
            if topic == GROUP_METADATA_TOPIC:
                # KafkaApis.handleWriteTxnMarkersRequest hands a __consumer_offsets marker to the group
                # coordinator (completeTransaction): the pending TxnOffsetCommit offsets commit or go
                answered(tp, self._cluster.groups.complete_transaction(index, producer_id, commit))
                continue
            p = self._cluster.metadata.partition(topic, index)
            if p is None:
                answered(tp, ErrorCode.none)
                continue
            leader = self._cluster.brokers.get(p.leader_id)
            if leader is None or not leader.running:
                answered(tp, ErrorCode.not_leader_or_follower)
                continue
            leader.replica_manager.append_txn_marker(topic, index, producer_id, producer_epoch, commit,
                                                     coordinator_epoch, partial(answered, tp))


def _overridden(listener: Listener, host: str | None, port: int | None, advertised: str) -> tuple[str, int] | None:
    """The first listener's advertised address after ``--host``/``--port``: an explicit
    ``advertised.listeners`` entry stands; otherwise it follows the new bound address."""
    if advertised.strip() or listener.advertised is None:
        return listener.advertised
    return routable_address((listener.host if host is None else host, listener.port if port is None else port))
