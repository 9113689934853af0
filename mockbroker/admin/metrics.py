"""``/metrics``: the cluster's state in the Prometheus text format, through ``prometheus_client``.

Metric names are Kafka's JMX metrics as the Prometheus JMX exporter renders them with
``lowercaseOutputName: true`` and its example Kafka rules (``example_configs/kafka-2_0_0.yml``):

* a Yammer meter (``name=...PerSec``) becomes a counter ``kafka_<domain>_<type>_<name>_total``
  without ``PerSec``, its other key properties labels: ``RequestsPerSec,request=R,version=V`` ->
  ``kafka_network_requestmetrics_requests_total{request="R",version="V"}``;
* a Yammer gauge becomes ``kafka_<domain>_<type>_<name>`` (``delayedOperation=...`` a label);
* a quota sensor ``kafka.server:type=T,user=U,client-id=C`` attribute ``a-b`` becomes
  ``kafka_server_quota_a_b{resource="T",user="U",clientId="C"}`` (an empty user or client-id,
  which JMX leaves out of the bean name, is the empty label value: the same series in PromQL);
* a Kafka-metrics attribute no rule matches (``socket-server-metrics``) takes the exporter's
  default form ``kafka_server_socket_server_metrics_<attribute>``;
* ``TotalTimeMs`` is a real histogram (buckets in ms) where the exporter emulates a summary:
  the same name, its ``_count`` the exporter's ``_count``.

Every series of one simulated broker carries ``broker`` (its node id); one endpoint serves them
all, where Kafka has one scrape target per broker.  Metrics Kafka does not have are named
``mockbroker_...``.  docs/metrics.md has the whole table; tests/unit/admin/test_metrics.py checks the
two do not drift apart.

Nothing is recorded for this module: ``render_metrics`` runs on the cluster's loop and reads what
the brokers keep anyway (quota sensors, the memory pool, purgatory sizes, ``RequestStats``,
fault rules).  Its cost grows with the quota entities (a few series each) and the distinct
(API, version, error) seen; connections are only counted (one pass over them, no series each).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, exposition, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..broker import Broker
from ..common.channel import MuteReason
from ..cluster import Cluster
from ..observe.request_stats import LATENCY_BUCKETS_MS
from ..share.partition import ACCEPT, REJECT, RELEASE, RENEW

# The text format 0.0.4, which every Prometheus reads: what generate_latest writes for names like these
# (all legal in 0.0.4); recent prometheus-client versions make 1.0.0 their CONTENT_TYPE_LATEST
CONTENT_TYPE = getattr(exposition, "CONTENT_TYPE_PLAIN_0_0_4", CONTENT_TYPE_LATEST)
# TotalTimeMs bucket bounds as the "le" label (the last bucket is +Inf)
_float_to_go: Callable[[float], str] = floatToGoString  # prometheus_client's untyped formatter, typed here
_LE = [_float_to_go(b) for b in LATENCY_BUCKETS_MS] + ["+Inf"]
# (name, bit) of every mute reason
_MUTE_REASONS = [(str(r.name), r.value) for r in MuteReason if r.value]
# quota managers of a broker: (attribute, the rate its sensor measures)
_QUOTA_MANAGERS = (("produce", "byte-rate"), ("fetch", "byte-rate"), ("request", "request-time"),
                   ("request_rate", "request-rate"))

# ShareGroupMetrics' ackType tag: AcknowledgeType capitalized (GAP is no acknowledge type)
_ACK_TYPES = {ACCEPT: "Accept", RELEASE: "Release", REJECT: "Reject", RENEW: "Renew"}

_api_names: dict[str, str] = {}
_error_names: dict[int, str] = {}


def kafka_api_name(api: str) -> str:
    """Kafka's ``ApiKeys.name`` (``Produce``, ``ApiVersions``) from the registry's ``PRODUCE``."""
    name = _api_names.get(api)
    if name is None:
        name = _api_names[api] = "".join(w.capitalize() for w in api.split("_"))
    return name


def kafka_error_name(code: int) -> str:
    """Kafka's ``Errors.name()`` (``NOT_LEADER_OR_FOLLOWER``); the number for a code we do not know."""
    name = _error_names.get(code)
    if name is None:
        try:
            name = ErrorCode(code).name.upper()
        except ValueError:
            name = str(code)
        _error_names[code] = name
    return name


class ClusterCollector(Collector):
    """Every metric family of one cluster, read when collected."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def collect(self) -> Iterator[Metric]:
        brokers = list(self.cluster.brokers.values())
        yield from self._quotas(brokers)
        yield from self._socket_server(brokers)
        yield from self._purgatories(brokers)
        yield from self._requests(brokers)
        yield from self._share_groups(brokers)
        yield from self._mockbroker(brokers)

    # -- kafka.server:type={Produce,Fetch,Request},user=U,client-id=C -------------------------------
    @staticmethod
    def _quotas(brokers: list[Broker]) -> Iterator[Metric]:
        labels = ["broker", "resource", "user", "clientId"]
        rates = {
            "byte-rate": GaugeMetricFamily(
                "kafka_server_quota_byte_rate",
                "Bytes/s a (user, client-id) quota entity produced (resource=Produce) or fetched (Fetch) over "
                "the quota window (ClientQuotaManager byte-rate).", labels=labels),
            "request-time": GaugeMetricFamily(
                "kafka_server_quota_request_time",
                "Request handling time of a quota entity as a percentage of one thread (request_percentage "
                "quota, ClientRequestQuotaManager request-time).", labels=labels),
            "request-rate": GaugeMetricFamily(
                "kafka_server_quota_request_rate",
                "Requests/s of a quota entity (mockbroker's request_rate quota, resource=RequestRate).",
                labels=labels),
        }
        throttle = GaugeMetricFamily(
            "kafka_server_quota_throttle_time",
            "Average throttle time (ms) of a quota entity's throttled responses over the quota window, per quota "
            "(resource=Produce, Fetch, Request, RequestRate).", labels=labels)
        for b in brokers:
            node = str(b.node_id)
            for attr, rate_name in _QUOTA_MANAGERS:
                manager = getattr(b.quotas, attr)
                if not manager.sensors:
                    continue
                resource = manager.quota_type
                family = rates[rate_name]
                for (user, client_id), values in manager.metrics(rate_name).items():
                    tags = [node, resource, user, client_id]
                    family.add_metric(tags, values[rate_name])
                    throttle.add_metric(tags, values["throttle-time"])
        yield from rates.values()
        yield throttle

    # -- kafka.network:type=SocketServer, kafka.server:type=socket-server-metrics ----------------
    @staticmethod
    def _socket_server(brokers: list[Broker]) -> Iterator[Metric]:
        available = GaugeMetricFamily(
            "kafka_network_socketserver_memorypoolavailable",
            "Bytes free in the KIP-72 request memory pool (queued.max.request.bytes; Long.MAX_VALUE without "
            "a pool).", labels=["broker"])
        used = GaugeMetricFamily(
            "kafka_network_socketserver_memorypoolused",
            "Bytes of the request memory pool held by requests read and not yet answered.", labels=["broker"])
        depleted_pct = GaugeMetricFamily(
            "kafka_server_socket_server_metrics_memorypoolavgdepletedpercent",
            "Fraction of the recent window (2 x 30 s) the memory pool was out of memory (Kafka's Meter rate: "
            "in [0, 1] despite the name).", labels=["broker"])
        depleted_total = GaugeMetricFamily(
            "kafka_server_socket_server_metrics_memorypooldepletedtimetotal",
            "Total ms the memory pool has been out of memory (cumulative).", labels=["broker"])
        connections = GaugeMetricFamily(
            "kafka_server_socket_server_metrics_connection_count",
            "Open client connections of a broker's listener.", labels=["broker", "listener"])
        for b in brokers:
            node = str(b.node_id)
            m = b.memory_pool.metrics()
            available.add_metric([node], m["MemoryPoolAvailable"])
            used.add_metric([node], m["MemoryPoolUsed"])
            depleted_pct.add_metric([node], m["MemoryPoolAvgDepletedPercent"])
            depleted_total.add_metric([node], m["MemoryPoolDepletedTimeTotal"])
            for lst in b.listeners:  # per listener name, as Kafka's socket-server-metrics
                count = sum(1 for conn in b.connections if conn.listener_name == lst.name)
                connections.add_metric([node, lst.name], count)
        yield from (available, used, depleted_pct, depleted_total, connections)

    # -- kafka.server:type=DelayedOperationPurgatory,name=...,delayedOperation=P ------------------
    def _purgatories(self, brokers: list[Broker]) -> Iterator[Metric]:
        size = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            "Watch-list entries of a purgatory (an operation counts once per key it watches; completed ones "
            "until purged).", labels=["broker", "delayedOperation"])
        delayed = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_numdelayedoperations",
            "Operations waiting in a purgatory.", labels=["broker", "delayedOperation"])
        for b in brokers:
            node = str(b.node_id)
            for purgatory, g in b.replica_manager.gauges().items():
                size.add_metric([node, purgatory], g["PurgatorySize"])
                delayed.add_metric([node, purgatory], g["NumDelayedOperations"])
            share = b.share_partitions.purgatory  # KIP-932's ShareFetch purgatory
            size.add_metric([node, share.name], share.gauges()["PurgatorySize"])
            delayed.add_metric([node, share.name], share.gauges()["NumDelayedOperations"])
        # the group coordinator's purgatories belong to the cluster (one coordinator service for all
        # simulated brokers): no broker label
        for purgatory, g in self.cluster.groups.gauges().items():
            size.samples.append(Sample(size.name, {"delayedOperation": purgatory}, g["PurgatorySize"]))
            delayed.samples.append(Sample(delayed.name, {"delayedOperation": purgatory}, g["NumDelayedOperations"]))
        yield size
        yield delayed

    # -- kafka.network:type=RequestMetrics ----------------------------------------------------------
    @staticmethod
    def _requests(brokers: list[Broker]) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "kafka_network_requestmetrics_requests",
            "Requests answered (or closed, dropped) per API and version (RequestsPerSec's count).",
            labels=["broker", "request", "version"])
        errors = CounterMetricFamily(
            "kafka_network_requestmetrics_errors",
            "Error codes answered per API (ErrorsPerSec's count): one per top-level error and one per "
            "partition error; NONE is not counted.", labels=["broker", "request", "error"])
        latency = HistogramMetricFamily(
            "kafka_network_requestmetrics_totaltimems",
            "Time (ms) from reading a request to writing its response (or deciding not to), per API and "
            "version (TotalTimeMs).", labels=["broker", "request", "version"])
        for b in brokers:
            node = str(b.node_id)
            stats = b.request_stats
            for (api, version), n in stats.requests.items():
                requests.add_metric([node, kafka_api_name(api), str(version)], n)
            for (api, code), n in stats.errors.items():
                errors.add_metric([node, kafka_api_name(api), kafka_error_name(code)], n)
            for (api, version), h in stats.latency.items():
                cumulative, buckets = 0, []
                for le, n in zip(_LE, h.counts):
                    cumulative += n
                    buckets.append((le, cumulative))
                latency.add_metric([node, kafka_api_name(api), str(version)], buckets, h.total_ms)
        yield from (requests, errors, latency)

    # -- share groups (KIP-932): ShareGroupMetrics, ShareSessionCache, DelayedShareFetchMetrics, -------
    # -- BrokerTopicMetrics, GroupCoordinatorMetrics, ShareCoordinatorMetrics ------------------------
    def _share_groups(self, brokers: list[Broker]) -> Iterator[Metric]:
        acks = CounterMetricFamily(
            "kafka_server_sharegroupmetrics_recordacknowledgements",
            "Records acknowledged by share consumers, per acknowledge type (ShareGroupMetrics "
            "RecordAcknowledgementsPerSec's count).", labels=["broker", "ackType"])
        sessions = GaugeMetricFamily(
            "kafka_server_sharesessioncache_sharesessionscount",
            "Share sessions in the broker's share-session cache (ShareSessionCache ShareSessionsCount).",
            labels=["broker"])
        session_partitions = GaugeMetricFamily(
            "kafka_server_sharesessioncache_sharepartitionscount",
            "Share-partitions of the cached share sessions (ShareSessionCache SharePartitionsCount).",
            labels=["broker"])
        evictions = CounterMetricFamily(
            "kafka_server_sharesessioncache_sharesessionevictions",
            "Share sessions evicted from the cache (ShareSessionCache ShareSessionEvictionsPerSec's count).",
            labels=["broker"])
        expires = CounterMetricFamily(
            "kafka_server_delayedsharefetchmetrics_expires",
            "ShareFetch requests that waited in the purgatory until max_wait_ms (DelayedShareFetchMetrics "
            "ExpiresPerSec's count).", labels=["broker"])
        failed_acks = CounterMetricFamily(
            "kafka_server_brokertopicmetrics_failedshareacknowledgementrequests",
            "Share-partition acknowledgements answered with an error (BrokerTopicMetrics "
            "FailedShareAcknowledgementRequestsPerSec's count, all topics).", labels=["broker"])
        for b in brokers:
            node = str(b.node_id)
            m = b.share_partitions
            by_type: Counter[str] = Counter()
            for (_group, ack_type), n in m.acknowledgements.items():
                if ack_type in _ACK_TYPES:
                    by_type[_ACK_TYPES[ack_type]] += n
            for name in _ACK_TYPES.values():
                acks.add_metric([node, name], by_type[name])
            sessions.add_metric([node], len(m.sessions))
            session_partitions.add_metric([node], m.sessions.total_partitions())
            evictions.add_metric([node], m.sessions.evictions)
            expires.add_metric([node], m.expired_fetches)
            failed_acks.add_metric([node], m.failed_acknowledgements)
        # the group coordinator and the share coordinator belong to the cluster: no broker label
        # Kafka-metrics attributes: the exporter's default form, a gauge (as socket-server-metrics above)
        rebalances = GaugeMetricFamily(
            "kafka_server_group_coordinator_metrics_share_group_rebalance_count",
            "Share group rebalances: group epoch bumps (GroupCoordinatorMetrics share-group-rebalance-count).",
            labels=[])
        rebalances.add_metric([], self.cluster.share_groups.rebalances)
        writes = GaugeMetricFamily(
            "kafka_server_share_coordinator_metrics_write_total",
            "Share-group state writes to the share coordinator (ShareCoordinatorMetrics write-total).", labels=[])
        writes.add_metric([], self.cluster.share_persister.writes)
        yield from (acks, sessions, session_partitions, evictions, expires, failed_acks, rebalances, writes)

    # -- mockbroker's own ------------------------------------------------------------------------------
    def _mockbroker(self, brokers: list[Broker]) -> Iterator[Metric]:
        muted = GaugeMetricFamily(
            "mockbroker_connections_muted",
            "Connections not read, by reason (a connection muted for two reasons counts under both): "
            "RESPONSE_PENDING, THROTTLED (KIP-219 mute mode), MEMORY (KIP-72 pool), HELD (observe mode), "
            "CLOSING.", labels=["broker", "reason"])
        peak = GaugeMetricFamily(
            "mockbroker_memory_pool_peak_used_bytes",
            "The most request memory pool bytes ever held at once.", labels=["broker"])
        refused = CounterMetricFamily(
            "mockbroker_memory_pool_refused",
            "Allocations the request memory pool refused (the connection waited for memory).", labels=["broker"])
        for b in brokers:
            node = str(b.node_id)
            by_state = Counter(conn.mute.value for conn in b.connections)
            for reason, bit in _MUTE_REASONS:
                muted.add_metric([node, reason], sum(n for state, n in by_state.items() if state & bit))
            m = b.memory_pool.metrics()
            peak.add_metric([node], m["peak_used"])
            refused.add_metric([node], m["refused"])
        fired = CounterMetricFamily(
            "mockbroker_fault_rule_fired",
            "Times a fault rule acted (mockbroker/common/faults.py); a removed rule's series goes with it.",
            labels=["rule", "action", "api"])
        for rule in self.cluster.faults.rules:
            key = rule.match.api_key
            api = kafka_api_name(ApiKey(key).name) if key is not None else ""
            fired.add_metric([str(rule.id), rule.action, api], rule.fired)
        yield from (muted, peak, refused, fired)
        yield from _journal(self.cluster)


# -- HOOK: the on-disk journal (mock.journal.dir) -------------------------------------------------------
# Read through getattr: when the cluster has a ``journal_writer`` (not None) with ``written`` and
# ``dropped`` record counters, these two families appear; without one (no mock.journal.dir, or a cluster
# from before the writer existed) nothing is yielded.
def _journal(cluster: Cluster) -> Iterator[Metric]:
    writer: Any = getattr(cluster, "journal_writer", None)
    if writer is None:
        return
    written = CounterMetricFamily(
        "mockbroker_journal_records_written",
        "Request records the on-disk journal (mock.journal.dir) wrote.", labels=[])
    dropped = CounterMetricFamily(
        "mockbroker_journal_records_dropped",
        "Request records the on-disk journal dropped (its queue was full or writing failed).", labels=[])
    written.add_metric([], getattr(writer, "written", 0))
    dropped.add_metric([], getattr(writer, "dropped", 0))
    yield written
    yield dropped


def render_metrics(cluster: Cluster) -> tuple[bytes, str]:
    """The body and content type of ``GET /metrics`` (on the cluster's loop)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ClusterCollector(cluster))
    return generate_latest(registry), CONTENT_TYPE
