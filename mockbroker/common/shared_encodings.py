"""Encodings shared by the responses built in one completion pass.

When an append wakes the fetches parked on a partition, Kafka's
``DelayedOperationPurgatory.checkAndComplete`` completes them in one pass, and the consumers
parked at the log end offset all get the same record set: their responses differ only in the
correlation id, the throttle time and the session id.  Kafka shares the record bytes (each
response's ``FileRecords`` views the same segment); here the whole encoded body is built once
in the pass and the others reuse it (``fetch_response.py``), with their own first bytes.

The log reads of the pass are shared the same way (``read``): the fetches parked at one offset
read the same batches, so the log is read once for them, and once for their completion check.

The sharing lasts one pass (``with shared:`` around ``check_and_complete``) and no longer, so an
encoding pins nothing past the pass that built it; outside a pass nothing is kept.  An entry
holds the objects its key names by identity (the record sets), so no id in a key is reused
while the entry lives.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any


class SharedEncodings:
    __slots__ = ("_entries", "_depth", "_at_end", "hits", "read_hits")

    def __init__(self) -> None:
        self._entries: dict[Hashable, Any] = {}
        self._depth = 0
        self._at_end: list[Callable[[], None]] = []  # run once when the pass ends (``at_end``)
        self.hits = 0  # responses that reused an encoding (for tests and benchmarks)
        self.read_hits = 0  # log reads reused (``ReplicaManager._read_log``, ``bytes_available``)

    def __enter__(self) -> SharedEncodings:
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if not self._depth:
            self._entries.clear()
            at_end, self._at_end = self._at_end, []
            for step in at_end:
                step()

    @property
    def in_pass(self) -> bool:
        return self._depth > 0

    def at_end(self, step: Callable[[], None]) -> None:
        """Run ``step`` once the pass is over (the journal's one step per pass); only in a pass."""
        self._at_end.append(step)

    def get(self, key: Hashable, make: Callable[[], Any], read: bool = False) -> Any:
        """The value for ``key``: made once in a pass, made each time outside one; a reuse is
        counted in ``hits``, or ``read_hits`` for a log read."""
        if not self._depth:
            return make()
        value = self._entries.get(key)
        if value is None:
            value = self._entries[key] = make()
        elif read:
            self.read_hits += 1
        else:
            self.hits += 1
        return value

    def read(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """``get`` for a log read shared by the fetches of a pass (counted in ``read_hits``)."""
        return self.get(key, make, read=True)
