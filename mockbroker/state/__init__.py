"""What every broker of the cluster reads: the KRaft metadata (``metadata``: brokers, topics,
partitions and their logs, Kafka's ``MetadataImage``), the replication simulation over it
(``replication``: followers, ISR, high watermark, leader election, Kafka's ``Partition``), and the
read-only views of it the coordinators are given (``cluster_view``).

Imports: ``common/``, ``config/``, ``storage/`` and the other leaves; nothing of the coordinators.
"""
