"""ReplicaManager's ActionQueue guards each completion as Kafka's DelayedActionQueue does: one completer
that raises for one partition is logged, and every other completer and partition still runs."""

from __future__ import annotations

import asyncio
import logging

from mockbroker.server.replica_manager import ActionQueue


class _Topic:
    def __init__(self, name: str) -> None:
        self.name = name


class _Partition:
    def __init__(self, topic: str, index: int) -> None:
        self.topic, self.index = _Topic(topic), index


def test_a_raising_completer_drops_no_other_completion(caplog):
    loop = asyncio.new_event_loop()
    try:
        q = ActionQueue(loop)
        done: list[tuple[str, tuple[str, int]]] = []

        def failing(key: tuple[str, int]) -> None:
            if key == ("t", 1):
                raise RuntimeError("a marker's on_done failed")
            done.append(("first", key))

        q.completers += [failing, lambda key: done.append(("second", key))]
        for i in range(3):
            q.add(_Partition("t", i))
        with caplog.at_level(logging.ERROR, logger="mockbroker.replica_manager"):
            loop.run_until_complete(asyncio.sleep(0))
    finally:
        loop.close()
    assert sorted(done) == sorted([("first", ("t", 0)), ("first", ("t", 2))] + [("second", ("t", i)) for i in range(3)])
    assert [r.getMessage() for r in caplog.records] == ["Failed to complete the delayed operations of t-1"]
