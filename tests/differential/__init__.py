"""The differential tester: the same schema-generated requests to a real Kafka 4.4.0 and to mockbroker.

``schema`` reads and writes Kafka 4.4's messages from its JSON schemas; ``generate`` builds a valid
request for any (key, version) on real state and mutations of it; ``state`` sets that state up on
each broker through the protocol; ``wire`` sends a request and says what became of it; ``normalise``
takes out what legitimately differs; ``run`` compares.  ``python -m tests.differential --help``;
``tests/differential/test_differential.py`` runs the seeded slice in the suite.  docs/differences.md
lists the normalisation rules and the differences it knows of.
"""
