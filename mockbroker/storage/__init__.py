"""What a partition stores: its log of record batches kept as bytes (``log``: segments, indexes,
the offset and time lookups, Kafka's ``UnifiedLog``/``LogSegment``) and its producers' state
(``producer_state``: sequences, epochs, the last five batches, open transactions, Kafka's
``ProducerStateManager``).

Imports: ``protocol/`` only.  What works over many partitions' logs (the cleaner, the log
directories) needs the cluster's metadata and is in ``server/``.
"""
