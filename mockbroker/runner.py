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
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .clock import Clock, ManualClock
from .config import BrokerConfig
from .quota.entities import validate_quota
from .cluster import Cluster

T = TypeVar("T")


class MockBroker:
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
        self.cluster: Cluster | None = None
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
                self.cluster = Cluster(self.config, self.clock, self.host, self.port)
                await self.cluster.start()
            except BaseException as e:  # noqa: BLE001 - reported to the starting thread
                ready.set_exception(e)
                return
            ready.set_result(None)
            await self._stop.wait()
            await self.cluster.stop()

        self._thread = threading.Thread(target=asyncio.run, args=(main(),), name="mockbroker", daemon=True)
        self._thread.start()
        ready.result(timeout=30)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=10)

    def __enter__(self) -> "MockBroker":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- access ----------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        assert self.cluster is not None, "broker not started"
        return self.cluster.bootstrap_servers

    def call(self, fn: Callable[[Cluster], T], timeout: float = 10) -> T:
        """Run ``fn(cluster)`` on the cluster's loop and return its result."""
        assert self._loop is not None and self.cluster is not None
        cluster = self.cluster

        async def run() -> T:
            return fn(cluster)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def call_async(self, fn: Callable[[Cluster], Any], timeout: float = 10) -> Any:
        """Await ``fn(cluster)`` (a coroutine function) on the cluster's loop."""
        assert self._loop is not None and self.cluster is not None
        return asyncio.run_coroutine_threadsafe(fn(self.cluster), self._loop).result(timeout)

    # -- cluster control (the control-plane issue exposes these over HTTP) -------------------
    def stop_broker(self, node_id: int) -> None:
        """Stop one simulated broker: listener closed, leadership moved, its replicas leave the ISR."""
        self.call_async(lambda b: b.stop_broker(node_id))

    def start_broker(self, node_id: int) -> None:
        """Restart a stopped broker on its port; its replicas catch up and rejoin the ISR."""
        self.call_async(lambda b: b.start_broker(node_id))

    def set_replication_lag(self, lag_ms: int, broker_id: int | None = None, topic: str | None = None) -> None:
        """How long followers (on ``broker_id``, or of ``topic``, or all) take to catch up."""
        self.call(lambda b: b.replication.set_lag(lag_ms, broker_id, topic))

    def set_isr(self, topic: str, partition: int, isr: list[int]) -> None:
        self.call(lambda b: b.replication.set_isr(b.metadata.partition(topic, partition), list(isr)))

    def elect_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Move leadership to ``node_id`` (an ISR member), as a preferred-replica election does;
        the old leader stays up and answers NOT_LEADER_OR_FOLLOWER."""
        def elect(b: Cluster) -> None:
            p = b.metadata.partition(topic, partition)
            if node_id not in p.isr:
                raise ValueError(f"broker {node_id} is not in the ISR {p.isr} of {topic}-{partition}")
            b.replication.elect_leader(p, preferred=node_id)
        self.call(elect)

    def partition_state(self, topic: str, partition: int) -> dict[str, Any]:
        """Leader, leader epoch, replicas, ISR, high watermark and log end offset of a partition."""
        def get(b: Cluster) -> dict[str, Any]:
            p = b.metadata.partition(topic, partition)
            return {"leader": p.leader_id, "leader_epoch": p.leader_epoch, "replicas": list(p.replicas),
                    "isr": list(p.isr), "high_watermark": p.log.high_watermark,
                    "log_end_offset": p.log.log_end_offset, "log_start_offset": p.log.log_start_offset}
        return self.call(get)

    def purgatory_gauges(self, node_id: int | None = None) -> dict[str, dict[str, int]]:
        """PurgatorySize and NumDelayedOperations per purgatory of a broker (the first by default)."""
        def get(b: Cluster) -> dict[str, dict[str, int]]:
            return b.broker(node_id).replica_manager.gauges()
        return self.call(get)

    def group(self, group_id: str) -> dict[str, Any] | None:
        """A consumer group as the coordinator holds it (None when it has none): state, generation,
        protocol, leader, coordinator node, members (id, instance id, client id, assignment bytes)."""
        def get(b: Cluster) -> dict[str, Any] | None:
            g = b.groups.get_group(group_id)
            if g is None:
                return None
            node = b.groups.find_coordinator(group_id)
            return {"state": g.state.value, "generation_id": g.generation_id, "protocol_type": g.protocol_type,
                    "protocol_name": g.protocol_name, "leader_id": g.leader_id,
                    "coordinator": node.node_id if node is not None else -1,
                    "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                                 "client_id": m.client_id, "assignment": m.assignment}
                                for m in g.members.values()]}
        return self.call(get)

    def inject_coordinator_loading(self, group_id: str, duration_ms: int) -> None:
        """Fault: the group's coordinator answers COORDINATOR_LOAD_IN_PROGRESS for ``duration_ms``
        (Heartbeat answers NONE and SyncGroup REBALANCE_IN_PROGRESS meanwhile, as Kafka does)."""
        self.call(lambda b: b.groups.inject_loading(group_id, duration_ms))

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets by (topic, partition)."""
        return self.call(lambda b: {tp: om.offset for tp, om in b.groups.committed_offsets(group_id).items()})

    def group_rebalances(self) -> int:
        """Join phases completed so far by the coordinator (every group)."""
        return self.call(lambda b: b.groups.rebalances)

    def group_purgatory_gauges(self) -> dict[str, dict[str, int]]:
        """PurgatorySize and NumDelayedOperations of the Heartbeat and Rebalance purgatories."""
        return self.call(lambda b: b.groups.gauges())

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     configs: dict[str, str] | None = None) -> None:
        self.call(lambda b: b.create_topic(name, partitions, replication_factor, configs))

    def advance(self, ms: float) -> None:
        """Move a ManualClock forward on the broker's loop (timers fire there)."""
        if not isinstance(self.clock, ManualClock):
            raise TypeError("advance() needs MockBroker(clock=ManualClock())")
        clock = self.clock
        self.call(lambda b: clock.advance(ms))

    def lose_response(self, api_key: int, action: str = "close", count: int = 1) -> Any:
        return self.call(lambda b: b.faults.lose_response(api_key, action, count))

    def throttle_events(self, client_id: str | None = None) -> list[dict[str, Any]]:
        """Every throttled response (per connection and entity): when, how long, which API and
        version, and whether/how early the client sent its next request (see quota.throttle)."""
        return self.call(lambda b: [e.as_dict() for e in b.throttle_events
                                    if client_id is None or e.client_id == client_id])

    def quota_metrics(self, node_id: int | None = None) -> dict[str, dict[tuple[str, str], dict[str, float]]]:
        """Kafka's per-entity quota metrics of one broker, keyed by (user, client-id) tags:
        Produce/Fetch ``byte-rate`` and ``throttle-time``, Request ``request-time`` and
        ``throttle-time`` (plus RequestRate ``request-rate`` for the KIP-124 draft quota)."""
        def get(b: Cluster) -> dict[str, dict[tuple[str, str], dict[str, float]]]:
            q = b.broker(node_id).quotas
            return {"Produce": q.produce.metrics("byte-rate"), "Fetch": q.fetch.metrics("byte-rate"),
                    "Request": q.request.metrics("request-time"), "RequestRate": q.request_rate.metrics("request-rate")}
        return self.call(get)

    def memory_pool_metrics(self, node_id: int | None = None) -> dict[str, float]:
        """KIP-72 request memory pool of one broker (the first by default): Kafka's
        ``MemoryPoolAvailable``, ``MemoryPoolUsed``, ``MemoryPoolAvgDepletedPercent`` (a fraction)
        and ``MemoryPoolDepletedTimeTotal`` (ms), plus the mock's ``peak_used`` (most memory ever
        allocated at once), ``refused`` (allocations refused) and ``memory_muted`` (connections
        waiting for memory now)."""
        def get(b: Cluster) -> dict[str, float]:
            s = b.broker(node_id)
            return {**s.memory_pool.metrics(), "memory_muted": len(s.memory_mutes)}
        return self.call(get)

    def set_quota(self, user: str | None = None, client_id: str | None = None, **values: float | None) -> None:
        """Set (or with None remove) quotas of an entity; "<default>" names the default entity."""
        for k, v in values.items():
            msg = None if v is None else validate_quota(k, float(v))
            if msg:
                raise ValueError(msg)
        self.call(lambda b: [b.quota_store.set((user, client_id), k, v) for k, v in values.items()])

    def journal(self, api_key: int | None = None, client_id: str | None = None) -> list[dict[str, Any]]:
        """Journal entries (dicts with held_ms) of handled requests, oldest first."""
        return self.call(lambda b: [e.as_dict() for e in b.journal.select(api_key, client_id)])

    def partition_records(self, topic: str, partition: int) -> list[bytes]:
        """The stored batches of a partition (bytes exactly as served)."""
        def get(b: Cluster) -> list[bytes]:
            p = b.metadata.partition(topic, partition)
            if p is None:
                raise KeyError(f"{topic}-{partition}")
            return [batch for seg in p.log.segments for batch in seg.batches]
        return self.call(get)

    def log_end_offset(self, topic: str, partition: int) -> int:
        return self.call(lambda b: b.metadata.partition(topic, partition).log.log_end_offset)
