"""Kafka 4.4.0's own command-line tools against mockbroker and a real Kafka 4.4.0, side by side (issue 24).

One scenario per broker -- the same topics, records (fixed timestamps), consumer groups (one with
committed offsets and no members, one with a live confluent-kafka member) and an open transaction,
set up with confluent-kafka -- then all its tool runs in one JVM (java/src/CliTools.java calls each
tool's main class in turn, Exit's procedures throwing, stdout and stderr captured per run); the
mockbroker side runs while the real Kafka starts.  The runs: kafka-topics (create with configs and a
replica assignment, alter, describe, delete, and their errors), kafka-configs (topics, brokers per
broker and by default, groups, client-metrics; a broker's --all), kafka-consumer-groups (list,
describe offsets/members/state, reset-offsets by each of its specs with --dry-run and --execute,
delete-offsets, delete), kafka-transactions (list, describe, describe-producers, find-hanging, abort),
kafka-get-offsets (-1, -2, -3, -4, -5, a timestamp) and kafka-delete-records.  Each run's exit code,
stdout and the first lines of stderr (stack frames left out) are the same from both once
``normalise`` has replaced what must differ (topic ids, ports, member ids, producer ids,
transaction times); docs/differences.md says what is left out and why.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mockbroker import MockBroker

from .javatools import JAVA_TIMEOUT_S, OUT_DIR, tail
from .javatools import java_classpath as _java_classpath
from .realkafka import brokers, kafka_classpath
from .realkafka import start as realkafka_start

confluent_kafka = pytest.importorskip("confluent_kafka")

# both: one partition for each internal log (Kafka creates __consumer_offsets and __transaction_state on
# first use: 100 partitions less to create); mockbroker: node 1 as Kafka's, no initial rebalance delay as
# bench/brokers.py's Kafka (group.initial.rebalance.delay.ms=0)
INTERNAL = {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}
MOCK_44 = {"mock.kafka.version": "4.4", "node.id": 1, "group.initial.rebalance.delay.ms": 0, **INTERNAL}
BASE_TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: the records' timestamps count up from it by seconds
DATETIME = "2026-01-01T00:00:04.000"  # the fifth record's


@dataclass
class Run:
    label: str
    code: int
    out: str
    err: str


def main_of(tool: str) -> str:
    """A Kafka tool's main class; "@Class": one of this project's Java steps (java/src) instead."""
    return tool[1:] if tool.startswith("@") else brokers.tool_main(kafka_classpath(), tool)


RETRIABLE = {confluent_kafka.KafkaError.NOT_COORDINATOR, confluent_kafka.KafkaError.COORDINATOR_NOT_AVAILABLE,
             confluent_kafka.KafkaError.COORDINATOR_LOAD_IN_PROGRESS}


def setup(boot: str) -> tuple[list[Any], Any]:
    """Topics ``cg`` (2 partitions, 10 records each) and ``txn``; group ``cg-a`` with committed offsets
    and no members, classic group ``cg-live`` and KIP-848 group ``cg-848`` with one member each; an
    open transaction of ``cli-txn`` on txn-0.  Returns the live consumers and the transactional
    producer (to close after the tools ran)."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": boot})
    for f in admin.create_topics([NewTopic("cg", 2, 1), NewTopic("txn", 1, 1)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": boot, "linger.ms": 0})
    for part in (0, 1):
        for i in range(10):
            p.produce("cg", value=b"v%d" % i, key=b"k", partition=part, timestamp=BASE_TS + i * 1000)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": boot, "group.id": "cg-a", "enable.auto.commit": False})
    for attempt in range(20):  # Kafka creates and loads __consumer_offsets on the first FindCoordinator
        try:
            c.commit(offsets=[TopicPartition("cg", 0, 7), TopicPartition("cg", 1, 5)], asynchronous=False)
            break
        except confluent_kafka.KafkaException as e:
            if attempt == 19 or e.args[0].code() not in RETRIABLE:
                raise
            time.sleep(0.5)
    c.close()
    live = Consumer({"bootstrap.servers": boot, "group.id": "cg-live", "client.id": "live-client",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    live.subscribe(["cg"])
    for _ in range(150):  # joined once both partitions are assigned (bounded: 30 s)
        live.poll(0.2)
        if len(live.assignment()) == 2:
            break
    assert len(live.assignment()) == 2, live.assignment()
    live.commit(offsets=[TopicPartition("cg", 1, 1)], asynchronous=False)
    member = Consumer({"bootstrap.servers": boot, "group.id": "cg-848", "client.id": "member-client",
                       "group.protocol": "consumer", "enable.auto.commit": False})
    member.subscribe(["txn"])
    for _ in range(150):  # KIP-848: assigned by the broker's heartbeats (bounded: 30 s)
        member.poll(0.2)
        if member.assignment():
            break
    assert member.assignment(), "cg-848 got no assignment"
    t = Producer({"bootstrap.servers": boot, "transactional.id": "cli-txn", "linger.ms": 0,
                  "transaction.timeout.ms": 300_000})  # open while the tools run, however slow the machine
    t.init_transactions(30)
    t.begin_transaction()
    t.produce("txn", value=b"open", partition=0, timestamp=BASE_TS)
    assert t.flush(30) == 0
    return [live, member], t


def script(boot: str, tmp: Path) -> list[tuple[str, str, list[str]]]:
    """(label, tool, arguments) of every tool run, in order."""
    bs = ["--bootstrap-server", boot]
    tmp.mkdir(exist_ok=True)
    offsets = tmp / "delete-records.json"
    offsets.write_text(json.dumps({"partitions": [{"topic": "cg", "partition": 1, "offset": 3}], "version": 1}))
    beyond = tmp / "delete-records-beyond.json"
    beyond.write_text(json.dumps({"partitions": [{"topic": "cg", "partition": 0, "offset": 99}], "version": 1}))
    topics = "kafka-topics"
    configs = "kafka-configs"
    groups = "kafka-consumer-groups"
    txns = "kafka-transactions"
    runs: list[tuple[str, str, list[str]]] = [
        ("topics create configs", topics, [*bs, "--create", "--topic", "t-conf", "--partitions", "3",
                                          "--replication-factor", "1", "--config", "cleanup.policy=compact",
                                          "--config", "retention.ms=3600000", "--config", "max.message.bytes=2000"]),
        ("topics create assignment", topics, [*bs, "--create", "--topic", "t-assign", "--replica-assignment", "1,1"]),
        ("topics create exists", topics, [*bs, "--create", "--topic", "t-conf", "--partitions", "1"]),
        ("topics create if-not-exists", topics, [*bs, "--create", "--topic", "t-conf", "--partitions", "1",
                                                 "--if-not-exists"]),
        ("topics create bad config", topics, [*bs, "--create", "--topic", "t-bad", "--config", "cleanup.policy=nope"]),
        ("topics describe", topics, [*bs, "--describe", "--topic", "t-conf"]),
        ("topics describe assignment", topics, [*bs, "--describe", "--topic", "t-assign"]),
        ("topics alter partitions", topics, [*bs, "--alter", "--topic", "t-conf", "--partitions", "5"]),
        ("topics alter fewer", topics, [*bs, "--alter", "--topic", "t-conf", "--partitions", "2"]),
        ("topics alter same", topics, [*bs, "--alter", "--topic", "t-conf", "--partitions", "5"]),
        ("topics describe altered", topics, [*bs, "--describe", "--topic", "t-conf"]),
        ("topics create replication", topics, [*bs, "--create", "--topic", "t-rf", "--replication-factor", "3"]),
        ("topics create partitions 0", topics, [*bs, "--create", "--topic", "t-p0", "--partitions", "0"]),
        ("topics create bad name", topics, [*bs, "--create", "--topic", "bad name"]),
        ("topics create bad assignment", topics, [*bs, "--create", "--topic", "t-ba", "--replica-assignment", "1,7"]),
        ("topics alter assignment", topics, [*bs, "--alter", "--topic", "t-assign", "--partitions", "3",
                                            "--replica-assignment", "1,1,1"]),
        ("topics describe under-replicated", topics, [*bs, "--describe", "--under-replicated-partitions"]),
        ("topics describe unavailable", topics, [*bs, "--describe", "--unavailable-partitions"]),
        ("topics describe missing", topics, [*bs, "--describe", "--topic", "t-none"]),
        ("topics describe overrides", topics, [*bs, "--describe", "--topics-with-overrides", "--exclude-internal"]),
        ("topics delete", topics, [*bs, "--delete", "--topic", "t-assign"]),
        ("topics delete missing", topics, [*bs, "--delete", "--topic", "t-none"]),
        ("topics list", topics, [*bs, "--list", "--exclude-internal"]),
        # kafka-configs
        ("configs topic describe", configs, [*bs, "--describe", "--entity-type", "topics", "--entity-name", "t-conf"]),
        ("configs topic alter", configs, [*bs, "--alter", "--entity-type", "topics", "--entity-name", "t-conf",
                                          "--add-config", "retention.ms=1000,segment.bytes=1048576",
                                          "--delete-config", "cleanup.policy"]),
        ("configs topic described", configs, [*bs, "--describe", "--entity-type", "topics", "--entity-name", "t-conf"]),
        ("configs topic bad", configs, [*bs, "--alter", "--entity-type", "topics", "--entity-name", "t-conf",
                                        "--add-config", "retention.ms=soon"]),
        ("configs topic unknown", configs, [*bs, "--alter", "--entity-type", "topics", "--entity-name", "t-conf",
                                            "--add-config", "no.such.config=1"]),
        ("configs topic all configs", configs, [*bs, "--describe", "--all", "--entity-type", "topics",
                                                "--entity-name", "cg"]),
        ("configs topic missing", configs, [*bs, "--describe", "--entity-type", "topics", "--entity-name", "t-none"]),
        ("configs broker read-only", configs, [*bs, "--alter", "--entity-type", "brokers", "--entity-name", "1",
                                               "--add-config", "log.dirs=/x"]),
        ("configs broker default alter", configs, [*bs, "--alter", "--entity-type", "brokers", "--entity-default",
                                                   "--add-config", "log.retention.ms=7200000"]),
        ("configs broker default describe", configs, [*bs, "--describe", "--entity-type", "brokers",
                                                      "--entity-default"]),
        ("configs broker alter", configs, [*bs, "--alter", "--entity-type", "brokers", "--entity-name", "1",
                                           "--add-config", "log.cleaner.backoff.ms=20000"]),
        # Kafka's broker takes the value into its live config a moment after the alteration returns
        ("wait broker config", "@WaitConfig", [boot, "1", "log.cleaner.backoff.ms", "20000"]),
        ("configs broker describe", configs, [*bs, "--describe", "--entity-type", "brokers", "--entity-name", "1"]),
        ("configs broker delete", configs, [*bs, "--alter", "--entity-type", "brokers", "--entity-name", "1",
                                            "--delete-config", "log.cleaner.backoff.ms"]),
        ("configs broker default delete", configs, [*bs, "--alter", "--entity-type", "brokers", "--entity-default",
                                                    "--delete-config", "log.retention.ms"]),
        ("configs broker described", configs, [*bs, "--describe", "--entity-type", "brokers", "--entity-name", "1"]),
        ("configs broker all", configs, [*bs, "--describe", "--all", "--entity-type", "brokers", "--entity-name", "1"]),
        ("configs group alter", configs, [*bs, "--alter", "--entity-type", "groups", "--entity-name", "cg-a",
                                          "--add-config", "consumer.session.timeout.ms=50000"]),
        ("configs group describe", configs, [*bs, "--describe", "--entity-type", "groups", "--entity-name", "cg-a"]),
        ("configs group bad", configs, [*bs, "--alter", "--entity-type", "groups", "--entity-name", "cg-a",
                                        "--add-config", "consumer.session.timeout.ms=1"]),
        ("configs client-metrics alter", configs, [*bs, "--alter", "--entity-type", "client-metrics", "--entity-name",
                                                   "cm", "--add-config",
                                                   "metrics=[org.apache.kafka.producer.,org.apache.kafka.consumer.],"
                                                   "interval.ms=5000"]),
        ("configs client-metrics describe", configs, [*bs, "--describe", "--entity-type", "client-metrics",
                                                      "--entity-name", "cm"]),
        ("configs client-metrics delete", configs, [*bs, "--alter", "--entity-type", "client-metrics",
                                                    "--entity-name", "cm", "--delete-config", "interval.ms"]),
        ("configs groups all", configs, [*bs, "--describe", "--entity-type", "groups"]),
        ("configs brokers all", configs, [*bs, "--describe", "--entity-type", "brokers"]),
        ("configs client-metrics described", configs, [*bs, "--describe", "--entity-type", "client-metrics"]),
        # kafka-consumer-groups
        ("groups list", groups, [*bs, "--list"]),
        ("groups list state", groups, [*bs, "--list", "--state"]),
        ("groups describe", groups, [*bs, "--describe", "--group", "cg-a"]),
        ("groups describe live", groups, [*bs, "--describe", "--group", "cg-live"]),
        ("groups describe members", groups, [*bs, "--describe", "--group", "cg-live", "--members", "--verbose"]),
        ("groups describe state", groups, [*bs, "--describe", "--group", "cg-live", "--state", "--verbose"]),
        ("groups list type", groups, [*bs, "--list", "--type"]),
        ("groups describe 848", groups, [*bs, "--describe", "--group", "cg-848"]),
        ("groups describe 848 state", groups, [*bs, "--describe", "--group", "cg-848", "--state", "--verbose"]),
        ("groups describe 848 members", groups, [*bs, "--describe", "--group", "cg-848", "--members", "--verbose"]),
        ("groups describe missing", groups, [*bs, "--describe", "--group", "cg-none"]),
        ("groups reset earliest dry", groups, [*bs, "--reset-offsets", "--group", "cg-a", "--topic", "cg",
                                               "--to-earliest", "--dry-run"]),
        ("groups reset offset", groups, [*bs, "--reset-offsets", "--group", "cg-a", "--topic", "cg:0",
                                         "--to-offset", "3", "--execute"]),
        ("groups reset shift", groups, [*bs, "--reset-offsets", "--group", "cg-a", "--all-topics",
                                        "--shift-by", "-2", "--execute"]),
        ("groups reset datetime", groups, [*bs, "--reset-offsets", "--group", "cg-a", "--topic", "cg",
                                           "--to-datetime", DATETIME, "--execute"]),
        ("groups reset latest export", groups, [*bs, "--reset-offsets", "--group", "cg-a", "--all-topics",
                                                "--to-latest", "--export", "--dry-run"]),
        ("groups reset current", groups, [*bs, "--reset-offsets", "--group", "cg-a", "--topic", "cg",
                                          "--to-current", "--dry-run"]),
        ("groups reset duration", groups, [*bs, "--reset-offsets", "--group", "cg-a", "--topic", "cg",
                                           "--by-duration", "PT0S", "--dry-run"]),
        ("groups reset missing topic", groups, [*bs, "--reset-offsets", "--group", "cg-a", "--topic", "t-none",
                                                "--to-earliest", "--dry-run"]),
        ("groups describe all", groups, [*bs, "--describe", "--all-groups", "--offsets", "--verbose"]),
        ("groups reset live", groups, [*bs, "--reset-offsets", "--group", "cg-live", "--topic", "cg",
                                       "--to-earliest", "--execute"]),
        ("groups described", groups, [*bs, "--describe", "--group", "cg-a"]),
        ("groups delete offsets", groups, [*bs, "--delete-offsets", "--group", "cg-a", "--topic", "cg:1"]),
        ("groups delete offsets live", groups, [*bs, "--delete-offsets", "--group", "cg-live", "--topic", "cg"]),
        ("groups delete live", groups, [*bs, "--delete", "--group", "cg-live"]),
        ("groups delete", groups, [*bs, "--delete", "--group", "cg-a"]),
        ("groups delete missing", groups, [*bs, "--delete", "--group", "cg-a"]),
        # kafka-transactions
        ("txn list", txns, [*bs, "list"]),
        ("txn describe", txns, [*bs, "describe", "--transactional-id", "cli-txn"]),
        ("txn describe missing", txns, [*bs, "describe", "--transactional-id", "none"]),
        ("txn describe-producers", txns, [*bs, "describe-producers", "--topic", "txn", "--partition", "0"]),
        ("txn list ongoing", txns, [*bs, "list", "--state", "Ongoing"]),
        ("txn list duration", txns, [*bs, "list", "--duration-filter", "3600000"]),
        ("txn find-hanging", txns, [*bs, "find-hanging", "--broker-id", "1"]),
        ("txn find-hanging topic", txns, [*bs, "find-hanging", "--topic", "txn"]),
        ("txn abort", txns, [*bs, "abort", "--topic", "txn", "--partition", "0", "--start-offset", "0"]),
        ("txn abort again", txns, [*bs, "abort", "--topic", "txn", "--partition", "0", "--start-offset", "0"]),
        ("txn describe-producers aborted", txns, [*bs, "describe-producers", "--topic", "txn", "--partition", "0"]),
        ("txn offsets aborted", "kafka-get-offsets", [*bs, "--topic", "txn", "--time", "-1"]),
        # kafka-get-offsets, kafka-delete-records
        ("offsets latest", "kafka-get-offsets", [*bs, "--topic", "cg", "--time", "-1"]),
        ("offsets earliest", "kafka-get-offsets", [*bs, "--topic", "cg", "--time", "-2"]),
        ("offsets max timestamp", "kafka-get-offsets", [*bs, "--topic", "cg", "--time", "-3"]),
        ("offsets timestamp", "kafka-get-offsets", [*bs, "--topic", "cg", "--time", str(BASE_TS + 4500)]),
        ("offsets future", "kafka-get-offsets", [*bs, "--topic-partitions", "cg:0", "--time", str(BASE_TS + 10 ** 8)]),
        ("offsets earliest local", "kafka-get-offsets", [*bs, "--topic", "cg", "--time", "-4"]),
        ("offsets tiered", "kafka-get-offsets", [*bs, "--topic", "cg", "--time", "-5"]),
        ("offsets missing", "kafka-get-offsets", [*bs, "--topic", "t-none", "--time", "-1"]),
        ("delete records", "kafka-delete-records", [*bs, "--offset-json-file", str(offsets)]),
        ("delete records beyond", "kafka-delete-records", [*bs, "--offset-json-file", str(beyond)]),
        ("offsets after delete", "kafka-get-offsets", [*bs, "--topic", "cg", "--time", "-2"]),
    ]
    return runs


def run_tools(runs: list[tuple[str, str, list[str]]], tmp: Path) -> list[Run]:
    """Every run of ``runs`` in one JVM (java/src/CliTools.java): its exit code, stdout and stderr."""
    _java_classpath("CliTools", "WaitConfig")  # compiled against kafka-clients; run with Kafka's broker and tools jars
    tmp.mkdir(exist_ok=True)
    file = tmp / "script.txt"
    file.write_text("".join(f"@@ {main_of(tool)}\n" + "".join(f"{a}\n" for a in args) for _, tool, args in runs))
    cmd = [shutil.which("java") or "java", *brokers.TOOL_JVM_OPTS, "-cp", kafka_classpath() + os.pathsep + str(OUT_DIR),
           "CliTools", str(file)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S * 2, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"CliTools timed out\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{tail(r.stdout, 40)}\nstderr:\n{tail(r.stderr, 40)}"
    found = re.findall(r"^#### RUN (\d+) EXIT (-?\d+)\n#### OUT\n(.*?)^#### ERR\n(.*?)^#### END\n", r.stdout,
                       re.S | re.M)
    assert [int(n) for n, *_ in found] == list(range(len(runs))), tail(r.stdout, 40)
    return [Run(label, int(code), out, err) for (label, _, _), (_, code, out, err) in zip(runs, found)]


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory) -> Iterator[dict[str, list[Run]]]:
    """The scenario's runs by broker: mockbroker's set up and run while the real Kafka starts (in a
    thread: its start is mostly waiting on its own JVM), then Kafka's."""
    tmp = tmp_path_factory.mktemp("cli")
    kafka_classpath()  # resolved here (or the module skipped), not in the thread
    started: dict[str, Any] = {}
    failed: list[BaseException] = []
    kafka_nodes = realkafka_start(1, configure=lambda kafka: kafka.extra_props.update(INTERNAL))

    def start_kafka() -> None:
        try:
            started["kafka"] = next(kafka_nodes)
        except BaseException as e:  # pytest.fail's Failed too: raised again below, in the test
            failed.append(e)

    thread = threading.Thread(target=start_kafka, name="realkafka-start", daemon=True)
    thread.start()
    out: dict[str, list[Run]] = {}
    try:
        with MockBroker(config=MOCK_44) as mock:
            out["mockbroker"] = session(mock.bootstrap_servers, tmp / "mockbroker")
        thread.join(brokers.KAFKA_READY_TIMEOUT_S + 30)
        assert not thread.is_alive(), "Kafka 4.4.0 did not start"
        if failed:
            raise failed[0]
        out["kafka"] = session(started["kafka"].bootstrap, tmp / "kafka")
        yield out
    finally:
        thread.join(brokers.KAFKA_READY_TIMEOUT_S + 30)
        kafka_nodes.close()  # realkafka.start's finally: Kafka stopped


def session(boot: str, tmp: Path) -> list[Run]:
    """The scenario set up on the broker at ``boot`` and every tool run of it, in one JVM."""
    consumers, txn = setup(boot)
    try:
        return run_tools(script(boot, tmp), tmp)
    finally:
        for consumer in consumers:
            consumer.close()
        txn.abort_transaction(10)  # its partition's marker was written by kafka-transactions abort already


UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# kafka-transactions' columns that differ by nature: mockbroker hands out producer ids from 1000
# (docs/differences.md), and the transaction's start is the wall time of each run
VARYING_COLUMNS = {"ProducerId", "CurrentTransactionStartTimeMs", "TransactionDurationMs"}
DAY_MS = 86_400_000  # a producer's LastTimestamp later than a day after the records': a marker's wall time
# the broker configs each side sets in its static configuration (Kafka: bench/brokers.py's
# server.properties for a single KRaft node; mockbroker: its listener and SASL mechanisms)
STATIC_CONFIGS = {
    "advertised.listeners", "controller.listener.names", "controller.quorum.voters", "group.initial.rebalance.delay.ms",
    "inter.broker.listener.name", "listener.security.protocol.map", "listeners", "log.dirs", "num.partitions",
    "offsets.topic.replication.factor", "quota.window.num", "quota.window.size.seconds", "sasl.enabled.mechanisms",
    "share.coordinator.state.topic.min.isr", "share.coordinator.state.topic.replication.factor",
    "transaction.state.log.min.isr", "transaction.state.log.replication.factor", "broker.id", "node.id",
    "process.roles", *INTERNAL,
}


def tables(text: str) -> str:
    """Tab-separated tables (kafka-transactions) with the ``VARYING_COLUMNS`` values replaced by N."""
    out, header = [], None
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("\t")] if "\t" in line else None
        if cells and VARYING_COLUMNS & set(cells):
            header = cells
        elif cells and header and len(cells) == len(header):
            cells = ["N" if h in VARYING_COLUMNS or (h == "LastTimestamp" and int(c) > BASE_TS + DAY_MS) else c
                     for h, c in zip(header, cells)]
        else:
            header = None if cells is None else header
        out.append("\t".join(cells) if cells else line)
    return "\n".join(out)


def normalise(run: Run) -> tuple[str, int, str, list[str]]:
    """(label, exit code, stdout, stderr's lines but stack frames) with what must differ replaced."""
    def sub(text: str) -> str:
        text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
        text = re.sub(r"TopicId: \S+", "TopicId: ID", text)
        # a KIP-848 member's id (base64: it may start or end with '+' or '/', where \b does not match)
        text = re.sub(r"(cg-848 .*?)(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{22}(?![A-Za-z0-9+/])", r"\1MEMBER", text)
        return re.sub(UUID, "UUID", text)  # the classic members' ids

    err = [line for line in sub(run.err).splitlines() if line.strip() and not line.startswith(("\tat ", "\t..."))]
    return run.label, run.code, tables(sub(run.out)), err[:3]


def broker_configs(run: Run) -> dict[str, str]:
    """``kafka-configs --describe --all`` of a broker: each config's line by name."""
    lines = run.out.splitlines()
    assert lines[0] == "All configs for broker 1 are:", run.out
    return {line.strip().split("=", 1)[0]: line.strip() for line in lines[1:]}


def test_tools_print_what_they_print_against_kafka_4_4(transcripts):
    mock, kafka = ([normalise(r) for r in transcripts[n] if r.label != "configs broker all"]
                   for n in ("mockbroker", "kafka"))
    differing = [(m, k) for m, k in zip(mock, kafka) if m != k]
    assert not differing, "\n\n".join(f"mockbroker: {m}\nkafka:      {k}" for m, k in differing)
    assert len(mock) == len(kafka) > 60


def test_kafka_configs_describe_all_of_a_broker_as_kafka_4_4(transcripts):
    """Every broker config Kafka 4.4.0 lists, with the same value, sensitivity and synonyms, but those
    either side sets in its static configuration."""
    mock, kafka = (broker_configs(next(r for r in transcripts[n] if r.label == "configs broker all"))
                   for n in ("mockbroker", "kafka"))
    assert list(mock) == list(kafka)
    static = {name for name in kafka if "STATIC_BROKER_CONFIG" in mock[name] + kafka[name]}
    assert static <= STATIC_CONFIGS, static - STATIC_CONFIGS
    differing = {name: (mock[name], kafka[name]) for name in kafka if name not in static and mock[name] != kafka[name]}
    assert not differing, differing
    assert len(kafka) - len(static) > 300


def test_what_the_tools_did_on_mockbroker(transcripts):
    """The outcomes themselves (the comparison above would pass were both wrong alike)."""
    runs = {r.label: r for r in transcripts["mockbroker"]}

    def out(label: str, code: int = 0) -> str:
        r = runs[label]
        assert r.code == code, (label, r.out, r.err)
        return r.out

    assert out("topics create configs") == "Created topic t-conf.\n"
    assert "Topic 't-conf' already exists." in out("topics create exists", 1)
    assert "The topic t-conf currently has 5 partition(s); 2 would not be an increase." in out("topics alter fewer", 1)
    head = out("topics describe altered").splitlines()[0]
    assert "PartitionCount: 5" in head and head.endswith(
        "Configs: min.insync.replicas=1,cleanup.policy=compact,retention.ms=3600000,max.message.bytes=2000")
    assert out("topics list").split() == ["cg", "t-conf", "txn"]  # t-assign deleted
    assert "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}" in \
        out("configs topic described").splitlines()
    assert "cleanup.policy" not in out("configs topic described")
    assert out("configs broker described") == "Dynamic configs for broker 1 are:\n"
    assert "consumer.session.timeout.ms=50000" in out("configs group describe")
    assert "interval.ms" not in out("configs client-metrics described")
    assert out("groups list state").split() == ["GROUP", "STATE", "cg-848", "Stable", "cg-a", "Empty", "cg-live",
                                                "Stable"]
    assert out("groups list type").split() == ["GROUP", "TYPE", "cg-848", "Consumer", "cg-a", "Classic", "cg-live",
                                               "Classic"]

    def offsets(label: str) -> list[list[str]]:
        return sorted(line.split()[1:4] for line in out(label).splitlines() if line.startswith("cg-a "))

    assert offsets("groups describe") == [["cg", "0", "7"], ["cg", "1", "5"]]
    assert offsets("groups reset earliest dry") == [["cg", "0", "0"], ["cg", "1", "0"]]  # not executed:
    assert offsets("groups reset offset") == [["cg", "0", "3"]]
    assert offsets("groups reset shift") == [["cg", "0", "1"], ["cg", "1", "3"]]  # 3-2 and 5-2
    assert offsets("groups reset datetime") == [["cg", "0", "4"], ["cg", "1", "4"]]  # the record at 00:00:04
    assert "the current state is Stable" in out("groups reset live")
    assert "Successful" in out("groups delete offsets")
    assert "Deletion of requested consumer groups ('cg-a') was successful." in out("groups delete")
    assert "GroupNotEmptyException" in out("groups delete live")
    producers = out("txn describe-producers").splitlines()[1].split("\t")
    assert [c.strip() for c in producers][1:6] == ["0", "-1", "0", str(BASE_TS), "0"]  # open from offset 0
    assert out("txn abort") == ""
    assert out("txn abort again", 1) + runs["txn abort again"].err == (
        "Could not find any open transactions starting at offset 0 on partition txn-0\n")
    aborted = [c.strip() for c in out("txn describe-producers aborted").splitlines()[1].split("\t")]
    assert aborted[1:3] + aborted[5:6] == ["0", "0", "None"]  # the tool's coordinator epoch 0; none open
    assert out("txn offsets aborted").split() == ["txn:0:2"]  # the record and the ABORT marker
    assert out("offsets latest").split() == ["cg:0:10", "cg:1:10"]
    assert out("offsets max timestamp").split() == ["cg:0:9", "cg:1:9"]
    assert out("offsets timestamp").split() == ["cg:0:5", "cg:1:5"]  # the first at or after 00:00:04.5
    assert "partition: cg-1\tlow_watermark: 3" in out("delete records")
    assert out("offsets after delete").split() == ["cg:0:0", "cg:1:3"]
