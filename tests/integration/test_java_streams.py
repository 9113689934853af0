"""A Kafka Streams 4.4 application on the broker: a word count with a repartition step, under
``group.protocol=streams`` (KIP-1071: StreamsGroupHeartbeat, the broker creating the internal topics
and assigning the tasks) and ``group.protocol=classic`` (JoinGroup/SyncGroup with the client-side
StreamsPartitionAssignor, the client creating its internal topics), and ``streams`` again under
``processing.guarantee=exactly_once_v2`` (transactions: the counts, the repartitioned records and the
consumed offsets committed together, TxnOffsetCommit from a streams group member), and that once
more with two instances of the application: one stops without leaving the group, as a crashed
instance would, the broker fences it when its session times out and the other takes over its tasks,
restoring their counts from the changelog; one after the other in one JVM.

tests/integration/java/src/StreamsWordCount.java produces the lines, runs the application with two
stream threads and its record cache off, and reads the output until each word has its final count.
The output is checked exactly: each word's counts are 1, 2, ..., n in order (nothing lost, nothing
counted twice, no count restarting after the failover), and the broker's view afterwards: the internal topics with the partition counts and
configs Kafka would give them, the group Empty once the application closed.

The fixture sets both initial rebalance delays to 0, as Kafka's own test setups do
(``group.initial.rebalance.delay.ms``, ``group.streams.initial.rebalance.delay.ms``; Kafka's default
3000 ms would add 3 s to each start), and a 500 ms streams heartbeat interval (Kafka: at least 5 s),
which is what a member waits between the heartbeat that reported the missing internal topics and the
one that gets its tasks.  Skips without java, javac or mvn, fails under CI (see javatools.py).
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import subprocess

import pytest

from mockbroker import MockBroker

from .javatools import JAVA_TIMEOUT_S, tail
from .javatools import java_classpath as _java_classpath

PARTITIONS = 2
SESSION_MS = 3000  # a stopped instance is fenced after this (Kafka's default and minimum: 45 s)
VOCABULARY = ["kafka", "streams", "mock", "broker", "word", "count", "topic", "task", "epoch", "group"]


@pytest.fixture(scope="module")
def java_classpath() -> str:
    return _java_classpath("StreamsWordCount")


@pytest.fixture(scope="module")
def broker():
    cfg = {"group.initial.rebalance.delay.ms": 0, "group.streams.initial.rebalance.delay.ms": 0,
           "group.streams.heartbeat.interval.ms": 500, "group.streams.session.timeout.ms": SESSION_MS}
    with MockBroker(config=cfg) as b:
        yield b


def test_word_count_with_a_repartition_under_both_group_protocols(java_classpath, broker, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="mockbroker.group")
    rng = random.Random(26)
    lines = [" ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(1, 8))) for _ in range(300)]
    expected: dict[str, int] = {}
    for line in lines:
        for w in line.split():
            expected[w] = expected.get(w, 0) + 1
    (tmp_path / "lines.txt").write_text("\n".join(lines) + "\n")
    protocols = ["streams", "classic", "streams-eos", "streams-eos-failover"]
    for protocol in protocols:
        broker.create_topic(f"wc-{protocol}-in", PARTITIONS)
        broker.create_topic(f"wc-{protocol}-out", PARTITIONS)
    cmd = [shutil.which("java") or "java", "-Xmx256m", "-cp", java_classpath, "StreamsWordCount",
           broker.bootstrap_servers, ",".join(protocols), str(tmp_path / "lines.txt"), str(tmp_path / "state")]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"StreamsWordCount timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    report = f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{tail(r.stderr, 40)}"
    assert r.returncode == 0, report
    results = {}
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            _, protocol, body = line.split(" ", 2)
            results[protocol] = json.loads(body)
    assert sorted(results) == sorted(protocols), report
    for protocol, res in results.items():
        assert res["state"] == "RUNNING", (protocol, res)
        # every update of every count, in order: 1..n, nothing lost and nothing counted twice
        assert res["counts"] == {w: list(range(1, n + 1)) for w, n in expected.items()}, (protocol, res)

    def topic(name):
        t = broker.call(lambda c: c.metadata.topics.get(name))
        return None if t is None else (len(t.partitions), t.overrides.get("cleanup.policy"))

    for protocol in protocols:
        assert topic(f"wc-{protocol}-counts-repartition") == (PARTITIONS, "delete"), protocol
        assert topic(f"wc-{protocol}-counts-changelog") == (PARTITIONS, "compact"), protocol
    # the streams groups as StreamsGroupDescribe sees them once the application closed
    for app in ("wc-streams", "wc-streams-eos", "wc-streams-eos-failover"):
        g = broker.call(lambda c: c.groups.streams_group_describe(c.groups.find_coordinator(app).node_id, [app])[0])
        assert (g["group_state"], g["members"]) == ("Empty", []), g
        assert [s["subtopology_id"] for s in g["topology"]["subtopologies"]] == ["0", "1"], g
        # every input record's offset committed: 300 lines over the input's partitions
        committed = broker.committed_offsets(app)
        assert sum(o for (t, _), o in committed.items() if t == f"{app}-in") == len(lines), committed
    # under the classic protocol Streams does not leave on close (its consumers set
    # internal.leave.group.on.close=false): both threads stay members until their sessions end
    classic = broker.group("wc-classic")
    assert (classic["protocol_type"], classic["state"], len(classic["members"])) == ("consumer", "Stable", 2), classic
    # the instance that stopped without leaving was fenced by its session timeout, not by a leave
    assert any("fenced from the group because its session timeout expired" in rec.getMessage()
               and "wc-streams-eos-failover" in rec.getMessage() for rec in caplog.records), "no fencing"
    print({p: res["ms"] for p, res in results.items()})
