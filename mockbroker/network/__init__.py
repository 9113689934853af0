"""The network: one ``KafkaConnection`` per client socket (``connection``, reading frames into the
``SimpleMemoryPool``'s buffers, ``memory_pool``, KIP-72; ``socket_io`` for its writes), the
dispatcher (``kafka_apis``, Kafka's ``KafkaApis``/``RequestChannel``: decode, handler, quotas,
encode), the throttled responses and KIP-219 muting (``throttled_channel``, ``ThrottledChannel``),
the TLS handshake and the SASL authenticator (``tls``, ``sasl_authenticator``), the fault rules'
actions on a request (``fault_actions``) and the journal record of each request
(``journal_recorder``).

Imports: ``apis/`` (the handlers it dispatches to), the handler contract (``request``) and every
layer below; nothing of the node (``broker``) or above.  Mirrors Kafka's ``kafka.network`` and
``org.apache.kafka.common.network``.
"""
