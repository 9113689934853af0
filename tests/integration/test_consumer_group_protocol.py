"""KIP-848 consumer groups with a real client: confluent-kafka (librdkafka) with group.protocol=consumer.

librdkafka sends ConsumerGroupHeartbeat v1 and follows the server-side assignment: revocation first,
then the new partitions.  Three members over six partitions split them two each; a member that
closes leaves with epoch -1 and the others take its partitions; a member killed with SIGKILL is
fenced by the session timeout, measured against group.consumer.session.timeout.ms.  Group configs set
with confluent-kafka's AdminClient (IncrementalAlterConfigs on the GROUP resource) pace that group's
heartbeats only, a live group's from its next heartbeat, as the request journal shows.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from mockbroker import MockBroker  # noqa: E402
from mockbroker.group.consumer_group import ConsumerGroupDescription  # noqa: E402

SESSION_MS, INTERVAL_MS = 3000, 300
N_RECORDS = 600


@pytest.fixture(scope="module")
def broker():
    cfg = {"group.consumer.session.timeout.ms": SESSION_MS, "group.consumer.heartbeat.interval.ms": INTERVAL_MS}
    with MockBroker(config=cfg) as b:
        yield b


def consumer(b: MockBroker, group: str, name: str) -> Consumer:
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "client.id": name, "enable.auto.commit": False})
    return c


def assignments(cs: list[Consumer]) -> list[list[int]]:
    return [sorted(tp.partition for tp in c.assignment()) for c in cs]


def describe(b: MockBroker, group: str) -> ConsumerGroupDescription:
    return b.call(lambda br: br.groups.consumer_group_describe(br.groups.find_coordinator(group).node_id, [group])[0])


def test_three_members_split_six_partitions_then_take_over(broker):
    broker.create_topic("kip848", 6)
    cs = [consumer(broker, "g848", f"c{i}") for i in range(3)]
    for c in cs:
        c.subscribe(["kip848"])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (all(len(x) == 2 for x in assignments(cs))
                                               and describe(broker, "g848").state == "Stable"):
        for c in cs:
            c.poll(0.02)
    a = assignments(cs)
    assert sorted(p for x in a for p in x) == list(range(6)) and all(len(x) == 2 for x in a), a
    t0 = time.monotonic()
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(N_RECORDS):
        p.produce("kip848", value=b"%d" % i, partition=i % 6)
    assert p.flush(30) == 0
    seen: list[int] = []
    while time.monotonic() < t0 + 20 and len(seen) < N_RECORDS:
        for c in cs:
            m = c.poll(0.02)
            if m is not None and m.error() is None:
                seen.append(int(m.value()))
    assert sorted(seen) == list(range(N_RECORDS))  # every record exactly once: each partition had one owner
    assert assignments(cs) == a  # no rebalance meanwhile
    d = describe(broker, "g848")
    assert d.state == "Stable" and len(d.members) == 3
    assert {m.member_epoch for m in d.members} == {d.assignment_epoch}
    for c in cs:
        c.commit(asynchronous=False)
    epoch = d.group_epoch
    cs[0].close()  # leaves with epoch -1
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        for c in cs[1:]:
            c.poll(0.02)
        a = assignments(cs[1:])
        if sorted(p for x in a for p in x) == list(range(6)):
            break
    assert sorted(p for x in a for p in x) == list(range(6)) and all(len(x) == 3 for x in a), a
    d = describe(broker, "g848")
    assert len(d.members) == 2 and d.group_epoch == epoch + 1
    committed = broker.committed_offsets("g848")
    assert committed == {("kip848", q): N_RECORDS // 6 for q in range(6)}
    for c in cs[1:]:
        c.close()


MEMBER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer",
                  "client.id": "doomed"})
    c.subscribe([sys.argv[3]])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not c.assignment():
        c.poll(0.05)
    print("ASSIGNED", sorted(tp.partition for tp in c.assignment()), flush=True)
    while True:
        c.poll(0.1)
""")


def test_killed_member_is_fenced_after_the_session_timeout(broker):
    broker.create_topic("kip848k", 4)
    survivor = consumer(broker, "g848k", "survivor")
    survivor.subscribe(["kip848k"])
    proc = subprocess.Popen([sys.executable, "-c", MEMBER, broker.bootstrap_servers, "g848k", "kip848k"],
                            stdout=subprocess.PIPE, text=True)
    t_start = time.monotonic()
    try:
        lines: queue.Queue[str] = queue.Queue()  # read aside: the survivor must keep polling to revoke
        threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
        line = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not line.startswith("ASSIGNED"):
            survivor.poll(0.05)
            try:
                line = lines.get_nowait()
            except queue.Empty:
                pass
        assert line.startswith("ASSIGNED [") and line.strip() != "ASSIGNED []", line
        print(f"member assigned after {time.monotonic() - t_start:.1f} s")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(survivor.assignment()) != 2:
            survivor.poll(0.05)
        assert len(survivor.assignment()) == 2
        os.kill(proc.pid, signal.SIGKILL)  # no leave heartbeat
        killed = time.monotonic()
        gone = None
        while time.monotonic() - killed < SESSION_MS / 1000 + 5:
            survivor.poll(0.02)
            if len(describe(broker, "g848k").members) == 1:
                gone = time.monotonic() - killed
                break
        assert gone is not None, "the killed member was never fenced"
        # its last heartbeat was at most one interval before the kill: fenced SESSION_MS after it
        assert (SESSION_MS - INTERVAL_MS - 50) / 1000 <= gone <= SESSION_MS / 1000 + 1.0, gone
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(survivor.assignment()) != 4:
            survivor.poll(0.05)
        assert sorted(tp.partition for tp in survivor.assignment()) == [0, 1, 2, 3]
        print(f"survivor took over after {time.monotonic() - t_start:.1f} s")
        print(f"killed member fenced {gone * 1000:.0f} ms after SIGKILL (session {SESSION_MS} ms)")
    finally:
        proc.kill()
        proc.wait(10)
        survivor.close()


def _set_group_configs(admin: AdminClient, group: str, interval_ms: int, session_ms: int) -> None:
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("consumer.heartbeat.interval.ms", str(interval_ms), incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("consumer.session.timeout.ms", str(session_ms), incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(10)


def _heartbeats_in(broker: MockBroker, cs: dict[str, Consumer], seconds: float) -> dict[str, int]:
    """ConsumerGroupHeartbeats each client sent (the journal) while all of them polled for ``seconds``."""
    start = time.time_ns()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for c in cs.values():
            c.poll(0.02)
    stop = time.time_ns()
    return {name: sum(1 for r in broker.journal(68, client_id=name) if start <= r["received_wall_ns"] <= stop)
            for name in cs}


def test_group_configs_from_the_admin_client_pace_that_groups_heartbeats(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    slow_interval = 6000
    _set_group_configs(admin, "g848slow", slow_interval, 45000)
    described = admin.describe_configs([ConfigResource(ResourceType.GROUP, "g848slow")])
    entries = next(iter(described.values())).result(10)
    assert (entries["consumer.heartbeat.interval.ms"].value, entries["consumer.heartbeat.interval.ms"].source) == (
        str(slow_interval), ConfigSource.GROUP_CONFIG.value)
    broker.create_topic("kip848cfg", 2)
    cs = {"slow": consumer(broker, "g848slow", "slow"), "fast": consumer(broker, "g848fast", "fast")}
    for c in cs.values():
        c.subscribe(["kip848cfg"])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not all(
            len(c.assignment()) == 2 and describe(broker, g).state == "Stable"
            for c, g in ((cs["slow"], "g848slow"), (cs["fast"], "g848fast"))):
        for c in cs.values():
            c.poll(0.02)
    assert all(len(c.assignment()) == 2 for c in cs.values())
    window = 2.0
    # librdkafka heartbeats once per interval the broker answers: at most one in the window for the
    # group's 6 s; about window / 300 ms for the broker's
    n = _heartbeats_in(broker, cs, window)
    assert n["slow"] <= 1 and n["fast"] >= window * 1000 / INTERVAL_MS / 2, n
    # altered while live: the fast group's member learns the new interval at its next heartbeat
    _set_group_configs(admin, "g848fast", slow_interval, 45000)
    _heartbeats_in(broker, {"fast": cs["fast"]}, 2 * INTERVAL_MS / 1000)
    n = _heartbeats_in(broker, cs, window)
    assert n["slow"] <= 1 and n["fast"] <= 1, n
    assert {len(describe(broker, g).members) for g in ("g848slow", "g848fast")} == {1}
    for c in cs.values():
        c.close()
