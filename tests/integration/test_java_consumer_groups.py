"""Kafka's own Java consumer (kafka-clients 4.4.0) in groups on the broker: classic and KIP-848.

tests/integration/java/src/GroupConsumers.java runs three KafkaConsumers on threads in one group
over a six-partition topic, for group.protocol=classic (JoinGroup/SyncGroup/Heartbeat with the
Java client's default range + cooperative-sticky assignors) and group.protocol=consumer
(ConsumerGroupHeartbeat with the server-side uniform assignor).  It waits until the partitions are
split two each and every record was read, commits, closes one member and waits until the other two
own all six.  The broker's view is then checked: the group's state, its members and the committed
offsets.  Skips without java, javac or mvn, fails under CI (see javatools.py).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from mockbroker import MockBroker

from .javatools import JAVA_TIMEOUT_S, tail
from .records import produce_numbered
from .javatools import java_classpath as _java_classpath

N_RECORDS, PARTITIONS = 600, 6


@pytest.fixture(scope="module")
def java_classpath() -> str:
    return _java_classpath("GroupConsumers")


@pytest.fixture(scope="module")
def broker():
    # the KIP-848 group's next target at the heartbeat after a join, not one assignment interval later:
    # with Kafka 4.3+'s 1 s interval the first member owns all six partitions for a second, reads every
    # record, and gives them up uncommitted (auto-commit off), so the others commit positions in their
    # partitions they have not read yet and the committed offsets below depend on that race
    cfg = {"group.initial.rebalance.delay.ms": 100, "group.consumer.heartbeat.interval.ms": 500,
           "group.consumer.session.timeout.ms": 6000, "group.consumer.assignment.interval.ms": 0}
    with MockBroker(config=cfg) as b:
        yield b


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_java_consumers_share_partitions_and_take_over(java_classpath, broker, protocol):
    topic = f"java-{protocol}"
    broker.create_topic(topic, PARTITIONS)
    produce_numbered(broker.bootstrap_servers, topic, N_RECORDS, PARTITIONS)
    cmd = [shutil.which("java") or "java", "-cp", java_classpath, "GroupConsumers", broker.bootstrap_servers,
           topic, protocol, "3", str(PARTITIONS), str(N_RECORDS)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"GroupConsumers timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    report = f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
    assert r.returncode == 0, report
    assert r.stdout.split() == ["ASSIGNED", "[2,2,2]", "SEEN", str(N_RECORDS), "TAKEOVER", "[3,3]", "DONE"], report
    group = f"java-{protocol}"
    # every member committed what it read: the whole topic, whoever owned which partition
    assert broker.committed_offsets(group) == {(topic, q): N_RECORDS // PARTITIONS for q in range(PARTITIONS)}
    if protocol == "classic":
        g = broker.group(group)
        assert (g["protocol_type"], g["state"], g["members"]) == ("consumer", "Empty", []), g  # all left with LeaveGroup
    else:
        d = broker.call(lambda b: b.groups.consumer_group_describe(b.groups.find_coordinator(group).node_id,
                                                                   [group])[0])
        assert d.members == [] and d.state == "Empty", d
