"""KIP-1071 streams groups side by side with a real Kafka 4.4.0: the same heartbeats, the same answers.

Two members of a word count application (tests/streams_member.py: the topology Kafka Streams
registers, raw StreamsGroupHeartbeats) go through a membership sequence against mockbroker and
against a single-node Kafka 4.4.0 (tests/integration/realkafka.py), on real time: the first member
joins and is told the internal topics are missing (the broker creates them), gets every task once
they exist, a second member joins and waits while the first revokes, both reach the next epoch,
then the first leaves and the second takes every task.  Each step is taken when its answer is
there (bounded retries: Kafka creates the topics asynchronously); what is compared is each step's
answer: errors, member epochs, tasks, statuses with their details, and StreamsGroupDescribe's state
and epochs.  Both brokers run with group.streams.initial.rebalance.delay.ms=0.  Then Kafka Streams
4.4 itself: StreamsTopologies' four-sub-topology application under exactly_once_v2 against the real
Kafka gives the exact outputs test_java_streams.py checks it gives on mockbroker.  Skips without java
or mvn, fails under CI (tests/toolchains.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.registry import ApiKey
from tests.streams_member import Member, describe, tasks

from .javatools import JAVA_TIMEOUT_S, tail
from .realkafka import JVM_OPTS, brokers, kafka_classpath

GROUP = "wc"


@pytest.fixture(scope="module")
def kafka() -> Iterator[Any]:
    # (a 500 ms streams heartbeat interval, as test_java_streams' mockbroker has: what a Streams member
    # waits between the heartbeat that reported the missing internal topics and the one with its tasks)
    k = brokers.RealKafka(kafka_classpath(), nodes=1, jvm_opts=JVM_OPTS,
                          extra_props={"group.streams.initial.rebalance.delay.ms": "0",
                                       "group.streams.heartbeat.interval.ms": "500",
                                       # a floor only (the default stands): a group may set a 1 s session
                                       "group.streams.min.session.timeout.ms": "1000",
                                       "group.streams.min.heartbeat.interval.ms": "500"})
    try:
        k.start()
    except (RuntimeError, OSError) as e:
        k.stop(kill=True)
        pytest.fail(f"Kafka 4.4.0 did not start: {e}", pytrace=False)
    yield k
    k.stop(kill=True)  # nothing of it is kept: no controlled shutdown to wait for


def _until(m: Member, done: Callable[[Any], bool], attempts: int = 60) -> Any:
    """Heartbeats (0.25 s apart) until ``done`` holds for an answer; the last answer."""
    for _ in range(attempts):
        r = m.hb()
        if done(r):
            return r
        time.sleep(0.25)
    return r


def _statuses(r: Any) -> list[tuple[int, str]]:
    return [(s.status_code, s.status_detail) for s in r.status or ()]


def _prepare(bootstrap: str, group: str) -> None:
    """The input topic (2 partitions; it may be there from another scenario) and ``group``'s coordinator."""
    with RawKafkaClient.connect(bootstrap) as c:
        r = c.request(ApiKey.CREATE_TOPICS, 7, {"topics": [{"name": "input", "num_partitions": 2,
                                                             "replication_factor": 1, "assignments": [],
                                                             "configs": []}],
                                                "timeout": 10_000, "validate_only": False})
        assert r.topics[0].error_code in (0, 36)  # 36: TOPIC_ALREADY_EXISTS
        for _ in range(60):  # Kafka creates __consumer_offsets on the first FindCoordinator
            coordinator = c.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
            if coordinator.coordinators[0].error_code == 0:
                break
            time.sleep(0.25)


def scenario(bootstrap: str) -> list[tuple[Any, ...]]:
    _prepare(bootstrap, GROUP)
    a, b = Member(bootstrap, process="pa"), Member(bootstrap, process="pb")
    steps: list[tuple[Any, ...]] = []
    r = _until(a, lambda r: r.error_code == 0)
    steps.append(("a joins", r.error_code, r.member_epoch, tasks(r.active_tasks), _statuses(r)))
    r = _until(a, lambda r: bool(a.active))
    steps.append(("a gets its tasks", r.member_epoch, a.active, _statuses(r)))
    r = b.hb()
    steps.append(("b joins", r.error_code, r.member_epoch, tasks(r.active_tasks), [s for s, _ in _statuses(r)]))
    r = _until(a, lambda r: a.active != {"0": [0, 1], "1": [0, 1]})
    steps.append(("a revokes", r.member_epoch, a.active))
    r = _until(a, lambda r: r.member_epoch > steps[1][1])
    steps.append(("a reaches the next epoch", r.member_epoch, a.active))
    r = _until(b, lambda r: bool(b.active))
    steps.append(("b gets its tasks", r.member_epoch, b.active))
    d = describe(a)[0]
    steps.append(("describe", d.group_state, d.group_epoch, d.assignment_epoch,
                  sorted((m.process_id, m.member_epoch) for m in d.members)))
    r = a.hb(epoch=-1)
    steps.append(("a leaves", r.error_code, r.member_epoch))
    r = _until(b, lambda r: b.active == {"0": [0, 1], "1": [0, 1]})
    steps.append(("b takes every task", r.member_epoch, b.active))
    d = describe(b)[0]
    steps.append(("describe", d.group_state, d.group_epoch, d.assignment_epoch,
                  sorted((m.process_id, m.member_epoch) for m in d.members)))
    return steps


def test_membership_sequence_matches_kafka(kafka):
    expected = scenario(kafka.bootstrap)
    with MockBroker(config={"group.streams.initial.rebalance.delay.ms": 0, "mock.kafka.version": "4.4"}) as b:
        got = scenario(b.bootstrap_servers)
    assert got == expected
    # what both answered (Kafka's behaviour, so that a change on either side shows here)
    assert [s[0] for s in got] == ["a joins", "a gets its tasks", "b joins", "a revokes", "a reaches the next epoch",
                                   "b gets its tasks", "describe", "a leaves", "b takes every task", "describe"]
    assert got[3] == ("a revokes", 3, {"0": [0], "1": [0]})


def test_four_sub_topologies_give_on_kafka_the_outputs_they_give_on_mockbroker(kafka, tmp_path):
    """Kafka Streams 4.4's application of four sub-topologies (StreamsTopologies: a stream-table join,
    a windowed count suppressed until its window closes, a global table lookup, a word count with a
    repartition) under ``group.protocol=streams`` and exactly_once_v2 against the real Kafka 4.4.0: the
    exact outputs test_java_streams.py checks on mockbroker (its matrix runs, from the same builders),
    read read_committed."""
    from .javatools import java_classpath
    from .test_java_streams import (PARTITIONS, WORDS, _by_key, _expected_counts, _topic, expected_global,
                                    expected_join, expected_window, four_application)

    run = "kafka-streams-eos"
    spec = four_application(run, "streams", "exactly_once_v2", kafka.bootstrap, 1,
                            lambda t: kafka.create_topic(t, PARTITIONS))
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    cmd = [shutil.which("java") or "java", "-Xmx256m", "-cp", java_classpath("StreamsWordCount", "StreamsTopologies"),
           "StreamsTopologies", kafka.bootstrap, str(tmp_path / "spec.json"), str(tmp_path / "state")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    report = f"exit {r.returncode}\nstdout:\n{tail(r.stdout, 40)}\nstderr:\n{tail(r.stderr, 40)}"
    assert r.returncode == 0, report
    (res,) = [json.loads(line.split(" ", 2)[2]) for line in r.stdout.splitlines() if line.startswith(f"RESULT {run} ")]
    got = {name: _by_key(res["out"], _topic(run, f"{name}-out")) for name in ("join", "window", "global", "throttle")}
    assert (res["state"], got) == ("RUNNING", {"join": expected_join(), "window": expected_window(),
                                               "global": expected_global(), "throttle": _expected_counts(WORDS)}), report


def fenced_scenario(bootstrap: str) -> list[tuple[Any, ...]]:
    """A member that stops heartbeating (a stalled instance) past its group's 1 s session timeout:
    what the broker answers it afterwards, the half of issue 26's race that the broker decides. Kafka
    Streams' thread sees the commit fail (TaskMigratedException: it unsubscribes and subscribes again)
    and its heartbeat fenced (StreamsMembershipManager.onFenced), then it rejoins at epoch 0."""
    group = "fenced"
    _prepare(bootstrap, group)
    with RawKafkaClient.connect(bootstrap, client_id="admin") as c:
        r = c.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
            "resource_type": 32, "resource_name": group, "configs": [
                {"name": "streams.session.timeout.ms", "config_operation": 0, "value": "1000"},
                {"name": "streams.heartbeat.interval.ms", "config_operation": 0, "value": "500"}]}],
            "validate_only": False})
        assert r.responses[0].error_code == 0, r.responses[0].error_message
    a = Member(bootstrap, group=group, process="pa")

    def commit() -> list[int]:
        r = a.c.request(ApiKey.OFFSET_COMMIT, 9, {
            "group_id": group, "generation_id_or_member_epoch": a.epoch, "member_id": a.member_id,
            "topics": [{"name": "input", "partitions": [{"partition_index": 0, "committed_offset": 0}]}]})
        return [p.error_code for t in r.topics for p in t.partitions]

    steps: list[tuple[Any, ...]] = []
    r = _until(a, lambda r: bool(a.active))
    joined = r.member_epoch
    steps.append(("a gets its tasks", r.heartbeat_interval, a.active))
    steps.append(("a commits", commit()))
    time.sleep(2.5)  # no heartbeat for 2.5 session timeouts: the broker expires the member and fences it
    steps.append(("the fenced member commits", commit()))
    r = a.hb()
    steps.append(("the fenced member heartbeats", r.error_code))
    r = a.hb(epoch=0)  # what StreamsMembershipManager.transitionToJoining sends: the same member id, epoch 0
    steps.append(("it rejoins", r.error_code, r.member_epoch > joined))
    r = _until(a, lambda r: bool(a.active))
    steps.append(("it gets its tasks back", a.active))
    d = describe(a)[0]
    steps.append(("describe", d.group_state, [m.member_id == a.member_id for m in d.members]))
    return steps


def test_a_fenced_member_is_answered_as_kafka_answers_it(kafka):
    expected = fenced_scenario(kafka.bootstrap)
    with MockBroker(config={"group.streams.initial.rebalance.delay.ms": 0, "mock.kafka.version": "4.4",
                            "group.streams.min.session.timeout.ms": 1000,
                            "group.streams.min.heartbeat.interval.ms": 500}) as b:
        got = fenced_scenario(b.bootstrap_servers)
    assert got == expected
    assert got[2:4] == [("the fenced member commits", [25]), ("the fenced member heartbeats", 25)]
