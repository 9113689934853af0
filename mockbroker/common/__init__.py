"""What every layer of the broker may name, importing nothing of mockbroker: the one injectable
clock and its periodic scheduler (Kafka's ``Time`` and ``KafkaScheduler``), the fault rules, the
connection's mute and close reasons (``KafkaChannel``'s states), and the encodings the handlers and
the replica manager share.

Imports: ``protocol/`` only.
"""
