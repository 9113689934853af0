"""What the broker records of what it does: the request journal's record (``journal``), its
rotating JSON-lines writer (``journal_writer``), and the per-API request statistics behind
``/metrics`` (``request_stats``, Kafka's ``RequestMetrics``).  Reading a journal back is a front
door of its own, ``mockbroker.journal_reader`` (``python -m mockbroker.journal_reader``).

Imports: ``protocol/`` only.  Recording a request as the dispatcher finishes it is the network's
(``network/journal_recorder``); serving these over HTTP is ``admin/``'s.
"""
