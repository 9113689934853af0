"""Kafka's transaction coordinator (``org.apache.kafka.coordinator.transaction`` and
``kafka.coordinator.transaction``): the per-transactional-id state machine, the manager of the
ids and their ``__transaction_state`` partitions, and the coordinator that drives them.
Time comes only from the injectable clock; transaction markers go through a ``MarkerWriter``.
"""
