"""``MockBroker``: the Python handle on a mockbroker ``Cluster`` running on a background
thread, for tests and scripts.

    with MockBroker(config={"num.partitions": 3}) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)

One ``MockBroker`` runs one ``Cluster`` (``mock.num.brokers`` simulated
brokers, one by default).  The cluster's state lives on its own event loop;
``call`` runs a function there and returns its result, so tests never touch
broker state from another thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .common.clock import Clock, ManualClock
from .cluster import Cluster
from .config.broker_config import BrokerConfig
from .control import ControlPlane

if TYPE_CHECKING:
    from .admin.http import AdminServer

T = TypeVar("T")


def assemble(config: BrokerConfig, clock: Clock | None = None, host: str | None = None,
             port: int | None = None) -> tuple[Cluster, ControlPlane, AdminServer | None]:
    """What ``MockBroker`` and ``mockbroker serve`` run, made the same way: the cluster, its
    control plane and, when ``mock.admin.listener`` is set, the admin HTTP API as one of the
    cluster's front ends (started and stopped with it).  Call on the loop it is to run on."""
    cluster = Cluster(config, clock, host, port)
    control = ControlPlane(cluster)
    admin = None
    if config["mock.admin.listener"]:
        from .admin import add_admin  # the HTTP stack only when asked for

        admin = add_admin(cluster, control)
    return cluster, control, admin


def loop_factory(config: BrokerConfig) -> Callable[[], asyncio.AbstractEventLoop]:
    """The event loop ``mock.event.loop`` names, for ``asyncio.Runner``: asyncio's own, or uvloop's
    (imported only when asked for; ``BrokerConfig`` refused the key at load if it is not installed)."""
    if config["mock.event.loop"] == "uvloop":
        import uvloop

        factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop  # Any where uvloop is absent
        return factory
    return asyncio.new_event_loop


def run_loop(main: Callable[[], Coroutine[Any, Any, T]], config: BrokerConfig) -> T:
    """Run ``main()`` to completion on a new loop of ``config``'s kind (``asyncio.run`` with a loop factory)."""
    with asyncio.Runner(loop_factory=loop_factory(config)) as runner:
        return runner.run(main())


def ready_line(cluster: Cluster, admin: AdminServer | None) -> str:
    line = f"mockbroker ready bootstrap={cluster.bootstrap_servers()}"
    if admin is not None:
        line += f" admin={admin.address}"
    return line


class MockBroker:
    """``MockBroker(config=..., clock=...)``: start with ``start()`` or ``with``; the control
    methods below are the admin HTTP API's, called in this process (``ControlPlane``)."""

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock | None = None,
        config_file: str | None = None,
    ) -> None:
        self.config = BrokerConfig.load(file=config_file, extra=dict(config or {}), environ={})
        self.host = host
        self.port = port
        self.clock = clock
        self._served: tuple[Cluster, ControlPlane, AdminServer | None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> "MockBroker":
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            try:
                self._served = assemble(self.config, self.clock, self.host, self.port)
                cluster = self._served[0]
                await cluster.start()
            except BaseException as e:  # noqa: BLE001 - reported to the starting thread
                ready.set_exception(e)
                return
            self.clock = cluster.clock
            ready.set_result(None)
            await self._stop.wait()
            await cluster.stop()

        self._thread = threading.Thread(target=run_loop, args=(main, self.config), name="mockbroker", daemon=True)
        self._thread.start()
        ready.result(timeout=30)
        return self

    def stop(self) -> None:
        """Stop the cluster: connections closed, the on-disk journal flushed, the thread joined."""
        if self._loop is not None and self._stop is not None and self._thread and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=10)

    def __enter__(self) -> "MockBroker":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- access ----------------------------------------------------------------------------
    @property
    def cluster(self) -> Cluster:
        assert self._served is not None, "broker not started"
        return self._served[0]

    @property
    def bootstrap_servers(self) -> str:
        """Every broker's advertised address on the first listener (``listeners``' first item)."""
        return self.bootstrap_servers_for(None)

    def bootstrap_servers_for(self, listener_name: str | None) -> str:
        """Every broker's advertised address on the named listener (``EXTERNAL``, ``INTERNAL``, ...);
        also after ``stop()`` (the addresses it had)."""
        name = listener_name.upper() if listener_name else None
        if self._thread is not None and self._thread.is_alive():
            return self.call(lambda c: c.bootstrap_servers(name))
        return self.cluster.bootstrap_servers(name)  # stopped: its loop no longer runs anything

    @property
    def admin_url(self) -> str | None:
        """``http://HOST:PORT`` of the admin API (``mock.admin.listener``), else None."""
        assert self._served is not None, "broker not started"
        admin = self._served[2]
        return None if admin is None else f"http://{admin.address}"

    def call(self, fn: Callable[[Cluster], T], timeout: float = 10) -> T:
        """Run ``fn(cluster)`` on the cluster's loop and return its result."""
        assert self._loop is not None
        cluster = self.cluster

        async def run() -> T:
            return fn(cluster)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def control(self, fn: Callable[[ControlPlane], T], timeout: float = 10) -> T:
        """Run ``fn(control_plane)`` on the cluster's loop: what the admin API's routes do."""
        assert self._loop is not None and self._served is not None
        control = self._served[1]

        async def run() -> T:
            return fn(control)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    # -- the control plane ------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Brokers, topics, groups, connections and throttles at a glance (GET /status)."""
        return self.control(lambda c: c.status())

    def brokers(self) -> list[dict[str, Any]]:
        return self.control(lambda c: c.brokers())

    def stop_broker(self, node_id: int) -> None:
        """Stop one simulated broker: listener closed, leadership moved, its replicas leave the ISR."""
        assert self._loop is not None and self._served is not None
        control = self._served[1]
        asyncio.run_coroutine_threadsafe(control.stop_broker(node_id), self._loop).result(10)

    def start_broker(self, node_id: int) -> None:
        """Restart a stopped broker on its port; its replicas catch up and rejoin the ISR."""
        assert self._loop is not None and self._served is not None
        control = self._served[1]
        asyncio.run_coroutine_threadsafe(control.start_broker(node_id), self._loop).result(10)

    def topics(self) -> list[dict[str, Any]]:
        return self.control(lambda c: c.topics())

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     configs: dict[str, str] | None = None) -> None:
        self.control(lambda c: c.create_topic(name, partitions, replication_factor, configs))

    def delete_topic(self, name: str) -> None:
        self.control(lambda c: c.delete_topic(name))

    def partition_state(self, topic: str, partition: int) -> dict[str, Any]:
        """Leader, leader epoch, replicas, ISR, high watermark, log end and start offsets."""
        return self.control(lambda c: c.partition(topic, partition))

    def set_replication_lag(self, lag_ms: int, broker_id: int | None = None, topic: str | None = None) -> None:
        """How long followers (on ``broker_id``, or of ``topic``, or all) take to catch up."""
        self.control(lambda c: c.set_replication_lag(lag_ms, broker_id, topic))

    def set_isr(self, topic: str, partition: int, isr: list[int]) -> None:
        self.control(lambda c: c.set_isr(topic, partition, list(isr)))

    def elect_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Move leadership to ``node_id`` (an ISR member), as a preferred-replica election does;
        the old leader stays up and answers NOT_LEADER_OR_FOLLOWER."""
        self.control(lambda c: c.elect_leader(topic, partition, node_id))

    def partition_records(self, topic: str, partition: int) -> list[bytes]:
        """The stored batches of a partition (bytes exactly as served)."""
        return self.control(lambda c: c.partition_records(topic, partition))

    def log_end_offset(self, topic: str, partition: int) -> int:
        return int(self.partition_state(topic, partition)["log_end_offset"])

    # quotas
    def quotas(self, user: str | None = None, client_id: str | None = None) -> list[dict[str, Any]]:
        return self.control(lambda c: c.quotas(user, client_id))

    def set_quota(self, user: str | None = None, client_id: str | None = None, **values: float | None) -> None:
        """Set (or with None remove) quotas of an entity; "<default>" names the default entity."""
        self.control(lambda c: c.set_quota(user, client_id, values))

    def delete_quota(self, user: str | None = None, client_id: str | None = None, key: str | None = None) -> None:
        self.control(lambda c: c.delete_quota(user, client_id, key))

    def quota_metrics(self, node_id: int | None = None) -> dict[str, dict[tuple[str, str], dict[str, float]]]:
        """Kafka's per-entity quota metrics of one broker, keyed by (user, client-id) tags:
        Produce/Fetch ``byte-rate`` and ``throttle-time``, Request ``request-time`` and
        ``throttle-time`` (plus RequestRate ``request-rate`` for the KIP-124 draft quota)."""
        return self.control(lambda c: c.quota_metrics(node_id))

    # transactions
    def transactions(self) -> list[dict[str, Any]]:
        """Every transactional id's state as the coordinator holds it: ``transactional_id``,
        ``state`` ("Ongoing", "CompleteCommit", ...), ``pending_state``, ``producer_id``,
        ``producer_epoch``, ``timeout_ms``, ``start_timestamp`` (-1: none), ``partitions``
        [(topic, partition)], ``coordinator`` (node id, -1: none alive)."""
        return self.control(lambda c: c.transactions())

    # client telemetry (KIP-714)
    # ACLs (authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer)
    def acls(self) -> list[dict[str, str]]:
        """Every ACL, in creation order, as tables with Kafka's names (``add_acl``'s fields)."""
        return self.control(lambda c: c.acls())

    def add_acl(self, resource_type: str, name: str, principal: str, operation: str, *,
                pattern_type: str = "LITERAL", host: str = "*", permission: str = "ALLOW") -> dict[str, str]:
        """Add an ACL, at once on every broker, as CreateAcls would: e.g.
        ``add_acl("TOPIC", "orders", "User:bob", "READ")``, ``permission="DENY"``,
        ``pattern_type="PREFIXED"``.  ValueError (Kafka's message) for what CreateAcls refuses."""
        spec = {"resource_type": resource_type, "name": name, "principal": principal, "operation": operation,
                "pattern_type": pattern_type, "host": host, "permission": permission}
        return self.control(lambda c: c.add_acl(spec))

    def remove_acls(self, **filter_: str) -> list[dict[str, str]]:
        """Remove the ACLs a filter matches (``add_acl``'s fields, each optional; none: every ACL),
        as DeleteAcls: the ACLs removed."""
        return self.control(lambda c: c.remove_acls(dict(filter_)))

    def client_metrics(self, client_id: str | None = None) -> list[dict[str, Any]]:
        """Every client instance that pushed KIP-714 telemetry (needs mock.client.telemetry.enabled):
        ``client_instance_id`` (as the client's ``clientInstanceId()`` prints it), ``broker``,
        ``client_id``, ``client_software_name``/``_version``, ``client_source_address``/``_port``,
        ``subscription_id``, ``push_interval_ms``, ``requested_metrics``, ``pushes``, ``last_push_ms``
        (broker clock), ``terminated``, ``resource`` (OTLP resource attributes) and ``metrics``:
        {name: [{type, attributes, value, time_unix_nano}]}, the latest value per attribute set
        (a histogram's or summary's value: {count, sum}).  ``client_id`` keeps that client's."""
        return self.control(lambda c: c.client_metrics(client_id))

    # groups
    def groups(self) -> list[dict[str, Any]]:
        return self.control(lambda c: c.groups())

    def group(self, group_id: str) -> dict[str, Any] | None:
        """A group as the coordinator holds it (None when it has none): type, state, generation
        (classic) or epochs (KIP-848), protocol, coordinator, members with their partitions
        (``assigned``: {topic: [partitions]}; a classic member's ``assignment`` also holds the
        bytes SyncGroup gave it), committed offsets."""
        def get(c: ControlPlane) -> dict[str, Any] | None:
            try:
                return c.group(group_id)
            except LookupError:
                return None
        return self.control(get)

    def share_group(self, group_id: str) -> dict[str, Any] | None:
        """A share group (KIP-932) as ``group`` gives it, with ``share_partitions``: every
        share-partition's start and end offsets and in-flight records (state, delivery count, owner,
        lock deadline on the broker's monotonic clock), ``persisted``: what the share coordinator
        keeps, and ``metrics``.  None when there is no such group or it is not a share group."""
        g = self.group(group_id)
        return g if g is not None and g["type"] == "share" else None

    def streams_group(self, group_id: str) -> dict[str, Any] | None:
        """A KIP-1071 streams group (None when there is none of that id): the ``group`` view with its
        topology (partition counts decided once ready), ``status`` (why it is not ready), and per
        member its process, endpoint, epoch, state and tasks ({subtopology: [partitions]}: active,
        standby, warmup, and the target's)."""
        def get(c: ControlPlane) -> dict[str, Any] | None:
            try:
                return c.streams_group(group_id)
            except LookupError:
                return None
        return self.control(get)

    def expel_member(self, group_id: str, member_id: str) -> dict[str, Any]:
        """Fault: expel a member as its session timeout would, at once (``DELETE
        /groups/{group}/members/{member}``): a classic member is removed and its group rebalances; a
        consumer, streams or share member is fenced and its partitions or tasks go to the others. The
        member learns it on its next heartbeat and rejoins. The group view after it; LookupError when
        there is no such group or member."""
        return self.control(lambda c: c.expel_member(group_id, member_id))

    def move_coordinator(self, group_id: str, node_id: int) -> dict[str, Any]:
        """Move the group's coordinator to broker ``node_id`` (``POST /groups/{group}/coordinator``):
        the leadership of its __consumer_offsets partition moves to that live replica, every broker
        stays up; the old coordinator answers NOT_COORDINATOR and the clients find the new one. The
        group view after it; LookupError for no such group, ValueError for a broker that is not a
        live replica."""
        return self.control(lambda c: c.move_coordinator(group_id, node_id))

    def inject_coordinator_loading(self, group_id: str, duration_ms: int) -> None:
        """Fault: the group's coordinator answers COORDINATOR_LOAD_IN_PROGRESS for ``duration_ms``
        (Heartbeat answers NONE and SyncGroup REBALANCE_IN_PROGRESS meanwhile, as Kafka does)."""
        self.control(lambda c: c.inject_coordinator_loading(group_id, duration_ms))

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets by (topic, partition)."""
        g = self.group(group_id)
        return {} if g is None else {(o["topic"], o["partition"]): o["offset"] for o in g["committed_offsets"]}

    def group_rebalances(self) -> int:
        """Join phases completed so far by the coordinator (every group)."""
        return int(self.status()["rebalances"])

    def group_purgatory_gauges(self) -> dict[str, dict[str, int]]:
        """PurgatorySize and NumDelayedOperations of the Heartbeat and Rebalance purgatories."""
        gauges = self.control(lambda c: c.purgatories())
        return {k: gauges[k] for k in ("Heartbeat", "Rebalance")}

    # connections, throttles, gauges, journal
    def connections(self, broker: int | None = None, client_id: str | None = None) -> list[dict[str, Any]]:
        """Each connection: peer, client id and software, principal, why it is muted, its in-flight request."""
        return self.control(lambda c: c.connections(broker, client_id))

    def throttle_events(self, client_id: str | None = None) -> list[dict[str, Any]]:
        """Every throttled response (per connection and entity): when, how long, which API and
        version, and whether/how early the client sent its next request (see quota.throttle)."""
        return self.control(lambda c: c.throttle_events(client_id))

    def violations(self, by: str = "connection") -> list[dict[str, Any]]:
        """KIP-219 violations per connection or per entity (``ControlPlane.violations``)."""
        return self.control(lambda c: c.violations(by))

    def purgatory_gauges(self, node_id: int | None = None) -> dict[str, dict[str, int]]:
        """PurgatorySize and NumDelayedOperations of a broker's Produce and Fetch purgatories (the
        first broker by default)."""
        gauges = self.control(lambda c: c.purgatories(node_id))
        return {k: gauges[k] for k in ("Produce", "Fetch")}

    def memory_pool_metrics(self, node_id: int | None = None) -> dict[str, float]:
        """KIP-72 request memory pool of one broker (the first by default): Kafka's
        ``MemoryPoolAvailable``, ``MemoryPoolUsed``, ``MemoryPoolAvgDepletedPercent`` (a fraction)
        and ``MemoryPoolDepletedTimeTotal`` (ms), plus the mock's ``peak_used`` (most memory ever
        allocated at once), ``refused`` (allocations refused) and ``memory_muted`` (connections
        waiting for memory now)."""
        return self.control(lambda c: c.memory_pool(node_id))

    def journal(self, api_key: int | str | None = None, client_id: str | None = None,
                since_ms: int | None = None, until_ms: int | None = None, limit: int | None = None
                ) -> list[dict[str, Any]]:
        """Journal records (dicts, docs/journal.md) of handled requests, oldest first."""
        return self.control(lambda c: c.journal(api_key, client_id, since_ms, until_ms, limit))

    # clock
    def advance(self, ms: float) -> None:
        """Move a ManualClock (``clock=ManualClock()`` or ``mock.clock=manual``) forward on the
        broker's loop (timers fire there)."""
        if not isinstance(self.clock, ManualClock):
            raise TypeError("advance() needs MockBroker(clock=ManualClock()) or mock.clock=manual")
        self.control(lambda c: c.advance_clock(ms))

    # faults
    def inject(self, spec: Mapping[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        """Add a fault rule (``mockbroker/common/faults.py``), e.g.
        ``inject(api="Produce", errors=["NOT_LEADER_OR_FOLLOWER"] * 2)``,
        ``inject(api="Fetch", action="hold")``, ``inject(action="delay", delay_ms=200, broker=1, count=None)``."""
        rule = {**(spec or {}), **kw}
        return self.control(lambda c: c.inject(rule))

    def faults(self) -> list[dict[str, Any]]:
        """The fault rules with how often each fired."""
        return self.control(lambda c: c.faults())

    def remove_fault(self, rule_id: int) -> None:
        self.control(lambda c: c.remove_fault(rule_id))

    def clear_faults(self) -> None:
        self.control(lambda c: c.clear_faults())

    def held(self) -> list[dict[str, Any]]:
        return self.control(lambda c: c.held())

    def release(self, rule_id: int | None = None) -> int:
        """Let held requests (of one rule, or all) go on; how many."""
        return int(self.control(lambda c: c.release(rule_id))["released"])

    def lose_response(self, api_key: int, action: str = "close", count: int = 1) -> dict[str, Any]:
        """Lose the next ``count`` responses of an API after the request took effect: ``close`` the
        connection or ``drop`` the response (idempotence tests)."""
        return self.inject(api=api_key, action=action, after=True, count=count)
