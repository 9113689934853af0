"""The broker's services under the handlers: the replica manager (``replica_manager``: appends in
Kafka's validation order, reads, the produce and fetch purgatories; Kafka's ``ReplicaManager``),
its delayed operations (``delayed_produce``, ``delayed_fetch``), incremental fetch sessions
(``fetch_session``, ``FetchSessionCache``), the log cleaner and the log directories
(``log_cleaner``, ``log_dirs``: they work over the metadata's partitions), the dynamic
configuration catalogue (``config_catalog``, ``ConfigHelper``/``DynamicConfig``) and KIP-714 client
telemetry (``client_metrics_manager``, ``ClientMetricsManager``).

Imports: ``controller/``, ``state/`` and the leaves; nothing of the group, transaction and share
coordinators (which import it) or above.  Mirrors Kafka's ``kafka.server``.
"""
