"""One consumer-group member in its own process, driven by tests/integration/test_consumer_groups.py.

    python group_member.py '<json config>'

Run as a subprocess so that a test can SIGKILL it: a killed member sends no
LeaveGroup and no last commit, exactly like a crashed application.  The
config names the library (``kafka-python``, ``aiokafka``, ``confluent``), the
bootstrap servers, group, topic, client id, optional group.instance.id,
session and heartbeat timeouts, the assignor (``roundrobin``), and how often
processed offsets are committed.

The member behaves as a careful application does: it subscribes, "processes"
each record by reporting it, commits the offsets of processed records
synchronously every ``commit_interval_ms``, commits again when partitions
are revoked (before the rebalance) and before a clean close.

Protocol: one JSON object per line on stdout, each with ``ev`` and ``t``
(``time.monotonic()``, the same clock in every process and in the broker's
journal):

* ``ready``: imports done; the member waits for ``go`` on stdin before it creates
  its consumer (so a test starts several members within one initial rebalance
  delay, or has a replacement ready before it stops the original);
* ``assign`` with ``parts`` (sorted partitions of ``assignment()``), and
  ``member_id`` and ``generation`` when the library exposes them: every change of
  the assignment, and every rejoin that completes in a new generation with the same
  partitions (a member must tell the test it followed a rebalance even when its
  partitions stay; librdkafka does not expose its generation);
* ``recs`` with ``r`` = ``[[partition, offset, value], ...]``: records processed;
* ``commit`` with ``offsets`` = ``{partition: next offset}``, after the
  broker acknowledged it; ``commit_failed`` with ``err`` otherwise;
* ``closed``: ``close()`` returned (on ``close`` from stdin, or stdin's end);
* ``error`` with ``err``: the member failed (the test fails on it).

Commands on stdin, one per line: ``go``, ``close``.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
import traceback

_out_lock = threading.Lock()


def emit(ev: str, **kw) -> None:
    kw["ev"] = ev
    kw["t"] = time.monotonic()
    line = json.dumps(kw, separators=(",", ":"))
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Commands:
    """stdin lines on a thread; end of stdin counts as ``close`` (the test went away)."""

    def __init__(self) -> None:
        self.q: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            self.q.put(line.strip())
        self.q.put("close")

    def wait(self, want: str, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            try:
                cmd = self.q.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                return False
            if cmd == want:
                return True
            if cmd == "close":
                return False
        return False

    def closing(self) -> bool:
        try:
            while True:
                if self.q.get_nowait() == "close":
                    return True
        except queue.Empty:
            return False


class AssignmentWatch:
    """Whether the member's assignment or its generation changed since it last said so; a generation
    below 0 is the client between two generations (reset for a rejoin), which is no news."""

    def __init__(self) -> None:
        self.parts: list[int] | None = None
        self.generation: int | None = None

    def __call__(self, parts: list[int], generation: int | None) -> bool:
        if generation is not None and generation < 0:
            generation = self.generation
        if parts == self.parts and generation == self.generation:
            return False
        self.parts, self.generation = parts, generation
        return True


class Progress:
    """Next offset to commit per partition (processed records only) and what was last committed."""

    def __init__(self) -> None:
        self.processed: dict[int, int] = {}
        self.committed: dict[int, int] = {}

    def pending(self, owned: set[int]) -> dict[int, int]:
        return {p: o for p, o in self.processed.items() if p in owned and self.committed.get(p) != o}

    def forget(self, parts: set[int]) -> None:
        for p in parts:
            self.processed.pop(p, None)
            self.committed.pop(p, None)


# -- kafka-python ------------------------------------------------------------------------------------
def run_kafka_python(cfg: dict, cmds: Commands) -> None:
    from kafka import AsyncConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.structs import OffsetAndMetadata

    topic = cfg["topic"]
    assignors = {"roundrobin": [RoundRobinPartitionAssignor], "range": [RangePartitionAssignor]}[cfg["assignor"]]
    emit("ready")
    if not cmds.wait("go", 60):
        emit("closed")
        return
    c = KafkaConsumer(bootstrap_servers=cfg["bootstrap"], group_id=cfg["group"], client_id=cfg["client_id"],
                      group_instance_id=cfg.get("instance_id"), enable_auto_commit=False,
                      auto_offset_reset="earliest", session_timeout_ms=cfg["session_ms"],
                      heartbeat_interval_ms=cfg["heartbeat_ms"], max_poll_interval_ms=cfg["max_poll_ms"],
                      partition_assignment_strategy=assignors, max_poll_records=cfg["max_records"],
                      retry_backoff_ms=100, reconnect_backoff_ms=50)
    progress = Progress()

    def commit(owned: set[int]) -> None:
        todo = progress.pending(owned)
        if not todo:
            return
        try:
            c.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in todo.items()})
        except Exception as e:  # noqa: BLE001 - CommitFailedError during a rebalance, reported
            emit("commit_failed", err=repr(e), offsets=todo)
            return
        progress.committed.update(todo)
        emit("commit", offsets=todo)

    class Listener(AsyncConsumerRebalanceListener):
        # kafka-python 3 may run the listener on its IO thread, where the blocking commit() raises
        # ("Cannot block on net.run() from the IO thread"): await the commit's future instead
        async def on_partitions_revoked(self, revoked):
            parts = {tp.partition for tp in revoked}
            todo = progress.pending(parts)
            if todo:
                try:
                    await c.commit_async({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                                          for p, o in todo.items()})
                except Exception as e:  # noqa: BLE001 - reported
                    emit("commit_failed", err=repr(e), offsets=todo)
                else:
                    emit("commit", offsets=todo)
            progress.forget(parts)

        async def on_partitions_assigned(self, assigned):
            pass

    c.subscribe([topic], listener=Listener())
    changed = AssignmentWatch()
    next_commit = time.monotonic() + cfg["commit_interval_ms"] / 1000
    try:
        while not cmds.closing():
            batch = c.poll(timeout_ms=100)
            rows = [[tp.partition, m.offset, m.value.decode()] for tp, msgs in batch.items() for m in msgs]
            for p, o, _ in rows:
                progress.processed[p] = o + 1
            if rows:
                emit("recs", r=rows)
            parts = sorted(tp.partition for tp in c.assignment())
            gen = c._coordinator._generation
            if changed(parts, gen.generation_id):
                emit("assign", parts=parts, member_id=gen.member_id, generation=gen.generation_id)
            if time.monotonic() >= next_commit:
                commit(set(parts))
                next_commit = time.monotonic() + cfg["commit_interval_ms"] / 1000
        commit({tp.partition for tp in c.assignment()})
    finally:
        c.close(autocommit=False)
        emit("closed")


# -- aiokafka ----------------------------------------------------------------------------------------
def run_aiokafka(cfg: dict, cmds: Commands) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    topic = cfg["topic"]
    assignors = {"roundrobin": (RoundRobinPartitionAssignor,), "range": (RangePartitionAssignor,)}[cfg["assignor"]]
    emit("ready")
    if not cmds.wait("go", 60):
        emit("closed")
        return

    async def main() -> None:
        c = AIOKafkaConsumer(bootstrap_servers=cfg["bootstrap"], group_id=cfg["group"], client_id=cfg["client_id"],
                             group_instance_id=cfg.get("instance_id"), enable_auto_commit=False,
                             auto_offset_reset="earliest", session_timeout_ms=cfg["session_ms"],
                             heartbeat_interval_ms=cfg["heartbeat_ms"], max_poll_interval_ms=cfg["max_poll_ms"],
                             rebalance_timeout_ms=cfg["max_poll_ms"], partition_assignment_strategy=assignors,
                             retry_backoff_ms=100)
        progress = Progress()

        async def commit(owned: set[int]) -> None:
            todo = progress.pending(owned)
            if not todo:
                return
            try:
                await c.commit({TopicPartition(topic, p): o for p, o in todo.items()})
            except Exception as e:  # noqa: BLE001 - CommitFailedError during a rebalance, reported
                emit("commit_failed", err=repr(e), offsets=todo)
                return
            progress.committed.update(todo)
            emit("commit", offsets=todo)

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                parts = {tp.partition for tp in revoked}
                await commit(parts)
                progress.forget(parts)

            async def on_partitions_assigned(self, assigned):
                pass

        await c.start()
        c.subscribe([topic], listener=Listener())
        changed = AssignmentWatch()
        next_commit = time.monotonic() + cfg["commit_interval_ms"] / 1000
        try:
            while not cmds.closing():
                batch = await c.getmany(timeout_ms=100, max_records=cfg["max_records"])
                rows = [[tp.partition, m.offset, m.value.decode()] for tp, msgs in batch.items() for m in msgs]
                for p, o, _ in rows:
                    progress.processed[p] = o + 1
                if rows:
                    emit("recs", r=rows)
                parts = sorted(tp.partition for tp in c.assignment())
                if changed(parts, c._coordinator.generation):
                    emit("assign", parts=parts, member_id=c._coordinator.member_id,
                         generation=c._coordinator.generation)
                if time.monotonic() >= next_commit:
                    await commit(set(parts))
                    next_commit = time.monotonic() + cfg["commit_interval_ms"] / 1000
            await commit({tp.partition for tp in c.assignment()})
        finally:
            await c.stop()
            emit("closed")

    asyncio.run(main())


# -- confluent-kafka (librdkafka) ------------------------------------------------------------------------
def run_confluent(cfg: dict, cmds: Commands) -> None:
    from confluent_kafka import Consumer, TopicPartition

    topic = cfg["topic"]
    emit("ready")
    if not cmds.wait("go", 60):
        emit("closed")
        return
    conf = {"bootstrap.servers": cfg["bootstrap"], "group.id": cfg["group"], "client.id": cfg["client_id"],
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "session.timeout.ms": cfg["session_ms"], "heartbeat.interval.ms": cfg["heartbeat_ms"],
            "max.poll.interval.ms": cfg["max_poll_ms"], "partition.assignment.strategy": cfg["assignor"],
            "enable.partition.eof": False, "retry.backoff.ms": 100, "reconnect.backoff.ms": 50,
            "topic.metadata.refresh.interval.ms": 2000}
    if cfg.get("instance_id"):
        conf["group.instance.id"] = cfg["instance_id"]
    c = Consumer(conf)
    progress = Progress()

    def commit(owned: set[int]) -> None:
        todo = progress.pending(owned)
        if not todo:
            return
        try:
            res = c.commit(offsets=[TopicPartition(topic, p, o) for p, o in todo.items()], asynchronous=False)
        except Exception as e:  # noqa: BLE001 - KafkaException during a rebalance, reported
            emit("commit_failed", err=repr(e), offsets=todo)
            return
        bad = [tp for tp in res or [] if tp.error is not None]
        if bad:
            emit("commit_failed", err=repr([(tp.partition, str(tp.error)) for tp in bad]), offsets=todo)
            return
        progress.committed.update(todo)
        emit("commit", offsets=todo)

    def on_revoke(consumer, partitions):
        parts = {tp.partition for tp in partitions}
        commit(parts)
        progress.forget(parts)

    c.subscribe([topic], on_revoke=on_revoke)
    changed = AssignmentWatch()
    next_commit = time.monotonic() + cfg["commit_interval_ms"] / 1000
    try:
        while not cmds.closing():
            msgs = c.consume(num_messages=cfg["max_records"], timeout=0.1)
            rows = []
            for m in msgs:
                if m.error() is not None:
                    emit("client_error", err=str(m.error()))
                    continue
                rows.append([m.partition(), m.offset(), m.value().decode()])
            for p, o, _ in rows:
                progress.processed[p] = o + 1
            if rows:
                emit("recs", r=rows)
            parts = sorted(tp.partition for tp in c.assignment())
            if changed(parts, None):  # librdkafka does not tell its generation
                emit("assign", parts=parts, member_id=c.memberid())
            if time.monotonic() >= next_commit:
                commit(set(parts))
                next_commit = time.monotonic() + cfg["commit_interval_ms"] / 1000
        commit({tp.partition for tp in c.assignment()})
    finally:
        c.close()
        emit("closed")


RUNNERS = {"kafka-python": run_kafka_python, "aiokafka": run_aiokafka, "confluent": run_confluent}


def main() -> None:
    cfg = json.loads(sys.argv[1])
    if cfg.get("debug"):  # the library's own log on stderr (the test keeps it in a file)
        import logging

        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr,
                            format="%(relativeCreated)d %(name)s %(levelname)s %(message)s")
    cmds = Commands()
    try:
        RUNNERS[cfg["lib"]](cfg, cmds)
    except BaseException as e:  # noqa: BLE001 - reported to the test
        emit("error", err=repr(e), tb=traceback.format_exc())
        raise


if __name__ == "__main__":
    main()
