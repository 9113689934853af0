"""The KRaft controller's part a client reaches: topic creation and deletion and producer ids
(``controller``, Kafka's ``ReplicationControlManager``/``ProducerIdControlManager``), the metadata
quorum's state (``quorum``, Kafka's ``KafkaRaftClient`` as DescribeQuorum shows it), the finalized
features (``features``, ``FeatureControlManager``) and delegation tokens (``delegation_tokens``,
``DelegationTokenControlManager``).

Imports: ``state/`` and the leaves; nothing of ``server/`` or the coordinators beside it.
"""
