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

The same JVM then runs tests/integration/java/src/StreamsTopologies.java, every application (but the
matrix runs below) under ``streams`` and ``exactly_once_v2``, each output read read_committed and checked exactly: one
application of four sub-topologies (a stream-table join, a windowed count suppressed until its
window closes with stream time driven by the record timestamps, a global table lookup, a word count)
whose stream thread's producer and consumer are under byte-rate quotas (throttle_time_ms in the
journal); two instances of a stateless application, one hung mid-transaction and closed with
``close(Duration.ZERO)`` (its tasks move once its poll interval expires, the coordinator aborts its
transaction at its timeout, the woken zombie is fenced); and the word count against three brokers,
the group coordinator's broker stopped and started over the admin HTTP API while it counts; and
the word count whose producer meets CONCURRENT_TRANSACTIONS on EndTxn and TxnOffsetCommit (fault
rules: retried, nothing else happens) and then PRODUCER_FENCED on EndTxn (a rule the JVM posts over
the admin HTTP API: Streams' task migration, a new producer, a rejoin; the output still exact);
and the word count with ``streams.num.standby.replicas=1`` on the group (IncrementalAlterConfigs),
two instances: the standbys catch up (store lag 0), one instance stops and is expelled over the
admin HTTP API, the other takes over from its standby restoring next to nothing, and the
repartition topic is purged (DeleteRecords) up to the committed offsets on the way;
and the word count against the three brokers while its group's coordinator moves, every broker up
(``POST /groups/{g}/coordinator``: NOT_COORDINATOR from the old one, FindCoordinator, the new one).
The inputs and the expected outputs are built here (``TOPOLOGIES``), the JVM gets them as JSON.

The four-sub-topology application runs again, unthrottled, against the cluster of three (``MATRIX``:
each run its own topics, ``tp-<run>-join-customers``, ...), the same outputs checked exactly, and
the broker's view: the classic group with ``protocol_type`` consumer or the streams group's
topology, the internal topics with their partition counts and configs, the transactions. The issue's
matrix (five topologies x two group protocols x two guarantees x one and three brokers: 40 runs, ~4 s
each) is covered pairwise instead, one application start per row::

    topologies              group.protocol  processing.guarantee  brokers
    join, window, global,   streams         exactly_once_v2       1   (under quotas)
      word count            classic         at_least_once         3
                            streams         at_least_once         3
                            classic         exactly_once_v2       3
    word count              streams         at_least_once         1   (StreamsWordCount)
                            classic         at_least_once         1   (StreamsWordCount)
                            streams         exactly_once_v2       1   (and with a failover)
                            streams         exactly_once_v2       3   (a broker restarted)
                            streams         exactly_once_v2       3   (the coordinator moved)
                            streams         exactly_once_v2       1   (standbys, two instances)
    stateless               streams         exactly_once_v2       1   (a member hung, two instances)

Every pair of values of protocol, guarantee and brokers meets in a run of the four sub-topologies
but (classic, 1 broker) and (at_least_once, 1 broker), which the word count's runs hold: what the
protocol changes (who assigns the tasks and creates the internal topics), what the guarantee changes
(transactions, TxnOffsetCommit from a classic or a streams member) and what three brokers change
(coordinators and partition leaders on different nodes, replicated internal topics) each meet the
other two; the topologies differ in the processors the client runs, which the broker does not see
beyond their topics.

The fixture sets both initial rebalance delays to 0, as Kafka's own test setups do
(``group.initial.rebalance.delay.ms``, ``group.streams.initial.rebalance.delay.ms``; Kafka's default
3000 ms would add 3 s to each start), and a 500 ms streams heartbeat interval (Kafka: at least 5 s),
which is what a member waits between the heartbeat that reported the missing internal topics and the
one that gets its tasks.  Skips without java, javac or mvn, fails under CI (see javatools.py).
"""

from __future__ import annotations

import functools
import json
import logging
import random
import shutil
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

from mockbroker import MockBroker

from .javatools import JAVA_TIMEOUT_S, tail
from .javatools import java_classpath as _java_classpath

PARTITIONS = 2
SESSION_MS = 3000  # a stopped instance is fenced after this (Kafka's default and minimum: 45 s)
VOCABULARY = ["kafka", "streams", "mock", "broker", "word", "count", "topic", "task", "epoch", "group"]
PROTOCOLS = ["streams", "classic", "streams-eos", "streams-eos-failover"]
WINDOW_MS = 10_000  # StreamsTopologies.WINDOW_MS
# the topologies run's stream thread clients (with quota.window.num=2, a client moving B bytes is
# throttled for about B/quota - 1 s: measured ~28 KB produced and ~17 KB fetched, ~2-5 s in all).
# The producer's last ~18 KB go out in three requests within about 1 s on an idle machine: at 5000 B/s
# they are over the quota even when a loaded machine spreads them over 3 s (at 9000 B/s, over 2 s was
# enough to miss the throttle)
THROTTLE_QUOTAS = {"producer": {"producer_byte_rate": 5000.0}, "consumer": {"consumer_byte_rate": 5000.0}}
_BASE_TS = int(time.time() * 1000) // WINDOW_MS * WINDOW_MS - 60_000  # record timestamps, near now


def _rec(topic: str, partition: int, key: str, value: str, ts: int) -> dict[str, Any]:
    return {"topic": topic, "partition": partition, "key": key, "value": value, "ts": ts}


def _join() -> tuple[list[str], list[dict[str, Any]], int]:
    """Customers (a table) then orders (a stream), co-partitioned by customer; customer c1 is renamed
    at a timestamp between two of its orders; orders of c6 (no such customer) are dropped."""
    customers = [_rec("tp-join-customers", c % 2, f"c{c}", f"name{c}", _BASE_TS) for c in range(6)]
    customers.append(_rec("tp-join-customers", 1, "c1", "name1-v2", _BASE_TS + 1205))
    orders = [_rec("tp-join-orders", (j % 7) % 2, f"c{j % 7}", f"o{j}", _BASE_TS + 1000 + 10 * j) for j in range(42)]
    return ["customers", "orders"], customers + orders, sum(1 for j in range(42) if j % 7 != 6)


def _window() -> tuple[list[str], list[dict[str, Any]], int]:
    """Events of four keys 0.5 s apart over 30 s (three 10 s windows); then per partition one late
    event (its window closed: dropped) and one far ahead (it closes every window: the suppressed
    counts come out)."""
    events = [_rec("tp-window-in", (e % 4) % 2, f"k{e % 4}", f"e{e}", _BASE_TS + 500 * e) for e in range(60)]
    late = [_rec("tp-window-in", p, f"k{p}", "late", _BASE_TS) for p in range(PARTITIONS)]
    flush = [_rec("tp-window-in", p, "flush", "flush", _BASE_TS + 100_000) for p in range(PARTITIONS)]
    return ["in"], events + late + flush, len({(r["key"], r["ts"] // WINDOW_MS) for r in events})


def _global() -> tuple[list[str], list[dict[str, Any]], int]:
    """Products (a global table: one topic, every partition on every instance), purchases keyed by
    user whose value names a product; product p5 does not exist (those purchases are dropped)."""
    products = [_rec("tp-global-products", i % 2, f"p{i}", f"product-{i}", _BASE_TS) for i in range(5)]
    purchases = [_rec("tp-global-in", (i % 3) % 2, f"u{i % 3}", f"p{i % 6}", _BASE_TS + 1000 + i) for i in range(30)]
    return ["products", "in"], products + purchases, sum(1 for i in range(30) if i % 6 != 5)


KILL_RECORDS = 200


def _kill() -> tuple[list[str], list[dict[str, Any]], int]:
    recs = [_rec("tp-kill-in", (i % 10) % 2, f"k{i % 10}", str(i), _BASE_TS + i) for i in range(KILL_RECORDS)]
    return ["in"], recs, KILL_RECORDS


# the throttled run's input: one word 400 times (one key, so one repartition partition; its quotas were
# calibrated on these records, which earlier drew each word from a new Random(27): always "task")
THROTTLE_WORDS = ["task"] * 400
_rng = random.Random(28)
WORDS = [_rng.choice(VOCABULARY) for _ in range(400)]  # ten words: both partitions of a repartition


def _words(name: str, words: list[str]) -> tuple[list[str], list[dict[str, Any]], int]:
    """A word count's input ``tp-<name>-in``: one record per word, alternating partitions."""
    recs = [_rec(f"tp-{name}-in", i % 2, f"w{i}", w, _BASE_TS + i) for i, w in enumerate(words)]
    return ["in"], recs, len(words)


# StreamsTopologies' txnfaults run: its one stream thread's producer (transactional.id
# tp-txnfaults-<process id>-1) gets CONCURRENT_TRANSACTIONS on its first EndTxn and TxnOffsetCommit
# requests (rules added before the JVM starts), then PRODUCER_FENCED on one EndTxn (the rule posted by
# the application's JVM once the first half is counted)
TXN_PRODUCER = "tp-txnfaults-StreamThread-1-producer"
CONCURRENT = 3
TXN_RULES = [{"api": api, "client_id": TXN_PRODUCER, "errors": ["CONCURRENT_TRANSACTIONS"] * CONCURRENT}
             for api in ("EndTxn", "TxnOffsetCommit")]
FENCE_RULE = {"api": "EndTxn", "client_id": TXN_PRODUCER, "errors": ["PRODUCER_FENCED"]}


def _coordinator(b: MockBroker, group: str) -> int:
    return int(b.call(lambda c: c.groups.find_coordinator(group).node_id))


TOPOLOGIES = {"join": _join, "window": _window, "global": _global, "kill": _kill,
              "throttle": functools.partial(_words, "throttle", THROTTLE_WORDS),
              **{n: functools.partial(_words, n, WORDS) for n in ("restart", "txnfaults", "standby", "move")}}
FOUR = ["join", "window", "global", "throttle"]  # StreamsTopologies' application of four sub-topologies
# the four-sub-topology application's matrix runs on the cluster of three, each against its own topics
# (tp-<run>-join-customers, ...): group.protocol and processing.guarantee (no quotas, no fault)
MATRIX = {"classic-alos": ("classic", "at_least_once"), "streams-alos": ("streams", "at_least_once"),
          "classic-eos": ("classic", "exactly_once_v2")}
# StreamsTopologies' runs: four topologies in one application under quotas (one start for four)
RUNS = {"topologies": FOUR, "kill": ["kill"], "txnfaults": ["txnfaults"], **{run: FOUR for run in MATRIX},
        "restart": ["restart"], "standby": ["standby"], "move": ["move"]}
FOUR_RUNS = ["topologies", *MATRIX]


def _topic(run: str, name: str) -> str:
    """A topic of a StreamsTopologies run (``tp-join-out``; a matrix run's ``tp-<run>-join-out``)."""
    return f"tp-{run}-{name}" if run in MATRIX or run not in RUNS else f"tp-{name}"


def four_application(run: str, protocol: str, guarantee: str, bootstrap: str, replication: int,
                     create_topic: Callable[[str], None]) -> dict[str, Any]:
    """The spec of a StreamsTopologies run of the four-sub-topology application on its own topics
    (``tp-<run>-join-customers``, ...), no quotas and no fault, the word count counting WORDS; its
    topics made with ``create_topic(name)`` (PARTITIONS partitions)."""
    spec: dict[str, Any] = {"run": run, "inputs": [], "outputs": [], "expect": 0, "topology": "topologies",
                            "prefix": f"tp-{run}-", "bootstrap": bootstrap, "protocol": protocol,
                            "guarantee": guarantee, "replication": replication}
    for name in FOUR:
        topics, inputs, expect = _words(name, WORDS) if name == "throttle" else TOPOLOGIES[name]()
        for t in (*topics, "out"):
            create_topic(_topic(run, f"{name}-{t}"))
        spec["inputs"] += [dict(r, topic=_topic(run, r["topic"].removeprefix("tp-"))) for r in inputs]
        spec["outputs"].append(_topic(run, f"{name}-out"))
        spec["expect"] += expect
    return spec


def expected_join() -> dict[str, list[str]]:
    expected: dict[str, list[str]] = {}
    for j in range(42):
        c = j % 7
        if c == 6:
            continue  # no such customer: an inner join drops the order
        # orders of c1 after its rename (timestamp 1205) carry the new name
        name = "name1-v2" if c == 1 and 1000 + 10 * j > 1205 else f"name{c}"
        expected.setdefault(f"c{c}", []).append(f"{name}:o{j}")
    return expected


def expected_window() -> dict[str, list[str]]:
    """One final count per key and window, in window order per key; the late events and the window of
    the flush events (still open) are not there."""
    counts: dict[str, int] = {}
    for e in range(60):
        start = (_BASE_TS + 500 * e) // WINDOW_MS * WINDOW_MS
        key = f"k{e % 4}@{start}"
        counts[key] = counts.get(key, 0) + 1
    return {key: [str(n)] for key, n in counts.items()}


def expected_global() -> dict[str, list[str]]:
    expected: dict[str, list[str]] = {}
    for i in range(30):
        if i % 6 != 5:
            expected.setdefault(f"u{i % 3}", []).append(f"product-{i % 6}")
    return expected


class _Records(logging.Handler):
    """The broker's log records while the JVM runs (caplog is per test; the JVM runs once per module)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def java_classpath() -> str:
    return _java_classpath("StreamsWordCount", "StreamsTopologies")


@pytest.fixture(scope="module")
def broker():
    cfg = {"group.initial.rebalance.delay.ms": 0, "group.streams.initial.rebalance.delay.ms": 0,
           "group.streams.heartbeat.interval.ms": 500, "group.streams.session.timeout.ms": SESSION_MS,
           # the hung member's transaction (StreamsTopologies' kill run: 3 s timeout) is aborted soon after
           "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
           # quotas measured over 1-2 s rather than 10-11 s: the throttle run's quotas throttle at once
           "quota.window.num": 2,
           # StreamsTopologies' txnfaults run posts a fault rule
           "mock.admin.listener": "127.0.0.1:0"}
    with MockBroker(config=cfg) as b:
        yield b


@pytest.fixture(scope="module")
def cluster():
    """Three brokers for StreamsTopologies' restart and move runs, steered over the admin HTTP API."""
    cfg = {"group.initial.rebalance.delay.ms": 0, "group.streams.initial.rebalance.delay.ms": 0,
           "group.streams.heartbeat.interval.ms": 500, "mock.num.brokers": 3, "mock.admin.listener": "127.0.0.1:0"}
    with MockBroker(config=cfg) as b:
        yield b


@pytest.fixture(scope="module")
def lines() -> list[str]:
    rng = random.Random(26)
    return [" ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(1, 8))) for _ in range(300)]


@pytest.fixture(scope="module")
def java_run(java_classpath, broker, cluster, lines, tmp_path_factory):
    """One JVM: the word count runs (StreamsWordCount), then StreamsTopologies' runs; the parsed
    ``RESULT`` lines by run, and the output (for the assertion messages)."""
    tmp_path = tmp_path_factory.mktemp("streams")
    (tmp_path / "lines.txt").write_text("\n".join(lines) + "\n")
    for protocol in PROTOCOLS:
        broker.create_topic(f"wc-{protocol}-in", PARTITIONS)
        broker.create_topic(f"wc-{protocol}-out", PARTITIONS)
    specs = []
    for run, builds in RUNS.items():
        spec: dict[str, Any] = {"run": run, "inputs": [], "outputs": [], "expect": 0}
        target = broker
        if run == "restart":  # the group coordinator's broker is the one stopped
            target = cluster
            spec.update(bootstrap=cluster.bootstrap_servers, admin=cluster.admin_url, stop=_coordinator(cluster, "tp-restart"))
        if run == "move":  # the group coordinator moves to the next broker, every broker up
            target = cluster
            spec.update(bootstrap=cluster.bootstrap_servers, admin=cluster.admin_url,
                        to=(_coordinator(cluster, "tp-move") + 1) % 3)
        if run == "txnfaults":
            spec.update(admin=broker.admin_url, fence=FENCE_RULE)
        if run == "standby":  # streams.num.standby.replicas, set on the group by the JVM
            spec.update(admin=broker.admin_url, standbys=1)
        if run in MATRIX:  # (counting WORDS, ten words over both partitions of its repartition topic,
            # where the throttled run's quotas were calibrated on THROTTLE_WORDS, one word)
            spec = four_application(run, *MATRIX[run], cluster.bootstrap_servers, 3,
                                    lambda t: cluster.create_topic(t, PARTITIONS, replication_factor=3))
            builds = []
        for name in builds:
            topics, inputs, expect = TOPOLOGIES[name]()
            for t in (*topics, "out"):
                target.create_topic(_topic(run, f"{name}-{t}"), PARTITIONS,
                                    replication_factor=3 if target is cluster else 1)
            spec["inputs"] += inputs
            spec["outputs"].append(_topic(run, f"{name}-out"))
            spec["expect"] += expect
        (tmp_path / f"{run}.json").write_text(json.dumps(spec))
        specs.append(str(tmp_path / f"{run}.json"))
    for suffix, values in THROTTLE_QUOTAS.items():
        broker.set_quota(client_id=f"tp-topologies-StreamThread-1-{suffix}", **values)
    for rule in TXN_RULES:
        broker.inject(rule)
    log = _Records()
    logger = logging.getLogger("mockbroker")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(log)
    cmd = [shutil.which("java") or "java", "-Xmx256m", "-cp", java_classpath, "StreamsWordCount",
           broker.bootstrap_servers, ",".join(PROTOCOLS), str(tmp_path / "lines.txt"), str(tmp_path / "state"),
           ",".join(specs)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"StreamsWordCount timed out after {JAVA_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    finally:
        logger.removeHandler(log)
        logger.setLevel(level)
    report = f"exit {r.returncode}\nstdout:\n{tail(r.stdout, 40)}\nstderr:\n{tail(r.stderr, 40)}"
    assert r.returncode == 0, report
    results = {}
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            _, run, body = line.split(" ", 2)
            results[run] = json.loads(body)
    assert sorted(results) == sorted([*PROTOCOLS, *RUNS]), report
    return results, report, log.records


def test_word_count_with_a_repartition_under_both_group_protocols(java_run, broker, lines):
    results, _report, log = java_run
    expected: dict[str, int] = {}
    for line in lines:
        for w in line.split():
            expected[w] = expected.get(w, 0) + 1
    protocols = PROTOCOLS
    for protocol in protocols:
        res = results[protocol]
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
    # (the members' sessions may have ended since: the JVM ran on)
    assert broker.group("wc-classic")["protocol_type"] == "consumer"
    assert not [e for e in broker.journal("LeaveGroup") if e["client_id"].startswith("wc-classic")]
    assert [e for e in broker.journal("JoinGroup") if e["client_id"].startswith("wc-classic")]
    # the instance that stopped without leaving was fenced by its session timeout, not by a leave
    assert any("fenced from the group because its session timeout expired" in rec.getMessage()
               and "wc-streams-eos-failover" in rec.getMessage() for rec in log), "no fencing"
    print({p: res["ms"] for p, res in results.items()})


def _expected_counts(words: list[str]) -> dict[str, list[str]]:
    """A word count of ``words`` as its output shows it: each word's counts 1..n, in order."""
    expected: dict[str, int] = {}
    for w in words:
        expected[w] = expected.get(w, 0) + 1
    return {w: [str(i) for i in range(1, n + 1)] for w, n in expected.items()}


def _by_key(out: list[list[Any]], topic: str) -> dict[str, list[str]]:
    """An output topic's values per key, in the order read (one key: one output partition, in order)."""
    got: dict[str, list[str]] = {}
    for t, _partition, key, value in out:
        if t == topic:
            got.setdefault(key, []).append(value)
    return got


@pytest.mark.parametrize("run", FOUR_RUNS)
def test_stream_table_join(java_run, run):
    results, report, _log = java_run
    res = results[run]
    assert (res["state"], _by_key(res["out"], _topic(run, "join-out"))) == ("RUNNING", expected_join()), report


@pytest.mark.parametrize("run", FOUR_RUNS)
def test_windowed_count_suppressed_until_the_window_closes(java_run, run):
    results, report, _log = java_run
    res = results[run]
    got = _by_key(res["out"], _topic(run, "window-out"))
    assert (res["state"], got) == ("RUNNING", expected_window()), report
    assert len(got) == 12, report


@pytest.mark.parametrize("run", FOUR_RUNS)
def test_global_table_lookup(java_run, run):
    results, report, _log = java_run
    res = results[run]
    assert (res["state"], _by_key(res["out"], _topic(run, "global-out"))) == ("RUNNING", expected_global()), report


def test_member_hung_mid_transaction_its_tasks_move_and_the_output_is_exact(java_run, broker):
    """StreamsTopologies' kill run: instance a's thread hangs with its transaction open (its output
    for the first record of the second half sent, not committed) and a is closed with
    close(Duration.ZERO); its member leaves when its poll interval (2 s) expires, b takes its tasks,
    the coordinator aborts a's transaction at its timeout (3 s), and the read_committed output holds
    every record exactly once, in order per key."""
    results, report, _log = java_run
    res = results["kill"]
    assert (res["both_had_tasks"], res["hung"], res["state"]) == (True, True, "RUNNING"), report
    got = _by_key(res["out"], "tp-kill-out")
    assert got == {f"k{k}": [f"out-{i}" for i in range(k, KILL_RECORDS, 10)] for k in range(10)}, report
    # a's transaction was aborted by the coordinator when it timed out (a fence: the epoch bumped),
    # b's last one committed; transactional ids are <application.id>-<process id>-<thread>
    txns = sorted((t["state"], t["timeout_ms"]) for t in broker.transactions()
                  if t["transactional_id"].startswith("tp-kill-"))
    assert txns == [("CompleteAbort", 3000), ("CompleteCommit", 3000)], txns
    # the zombie, woken once the output was complete, was fenced: its produce answered
    # INVALID_PRODUCER_EPOCH or its commit PRODUCER_FENCED, whichever it reached first
    answers = {(e["api"], p["error_code"] if e["error_code"] is None else e["error_code"])
               for e in broker.journal(client_id="tp-kill-a-StreamThread-1-producer")
               for p in (e["partitions"] or [{"error_code": None}])}
    assert answers & {("PRODUCE", 47), ("END_TXN", 90)}, answers


def test_throttled_application_output_is_exact(java_run, broker):
    results, report, _log = java_run
    res = results["topologies"]
    assert (res["state"], _by_key(res["out"], "tp-throttle-out")) == (
        "RUNNING", _expected_counts(THROTTLE_WORDS)), report
    for suffix, api in (("producer", "Produce"), ("consumer", "Fetch")):
        throttled = [e["throttle_time_ms"] for e in broker.journal(api, f"tp-topologies-StreamThread-1-{suffix}")
                     if e["throttle_time_ms"] > 0]
        assert throttled, (suffix, "never throttled")
    print({run: results[run]["ms"] for run in RUNS})


def test_broker_stopped_and_started_under_a_three_broker_cluster(java_run, cluster):
    """StreamsTopologies' restart run: the group coordinator's broker of three stopped while the
    second half is counted, started again; every count 1..n once, in order."""
    results, report, _log = java_run
    res = results["restart"]
    assert (res["state"], _by_key(res["out"], "tp-restart-out")) == ("RUNNING", _expected_counts(WORDS)), report


def test_concurrent_transactions_and_producer_fenced_at_commit(java_run, broker):
    """StreamsTopologies' txnfaults run (exactly_once_v2, one stream thread). Kafka 4.4's
    TransactionManager retries an EndTxn or TxnOffsetCommit answered CONCURRENT_TRANSACTIONS (a
    RetriableException: the handler re-enqueues it), so Streams never sees those three answers of
    each: no rebalance, no new producer. PRODUCER_FENCED on EndTxn is fatal to the producer;
    StreamsProducer.commitTransaction turns it into a TaskMigratedException, and StreamThread's
    handleTaskMigrated closes every task dirty (TaskManager.handleLostAll: with exactly_once_v2 a new
    producer, whose InitProducerId aborts the open transaction), unsubscribes and subscribes again: the
    same thread rejoins and the application goes REBALANCING and back to RUNNING. The output,
    read_committed, is every count 1..n once, in order: the fenced transaction's records never show."""
    results, report, _log = java_run
    res = results["txnfaults"]
    assert (res["state"], _by_key(res["out"], "tp-txnfaults-out")) == ("RUNNING", _expected_counts(WORDS)), report
    # the retried CONCURRENT_TRANSACTIONS changed nothing: one start, one rebalance (the fence's)
    assert res["before_fence"] == ["CREATED->REBALANCING", "REBALANCING->RUNNING"], res
    assert res["transitions"] == [*res["before_fence"], "RUNNING->REBALANCING", "REBALANCING->RUNNING"], res
    assert res["threads"] == ["StreamThread-1"], res  # migrated tasks, not a replaced thread
    fired = {r["match"]["api"]: r["fired"] for r in broker.faults() if r["match"]["client_id"] == TXN_PRODUCER
             and r["errors"][0]["error"] == "CONCURRENT_TRANSACTIONS"}
    assert fired == {"END_TXN": CONCURRENT, "TXN_OFFSET_COMMIT": CONCURRENT}, broker.faults()
    journal = broker.journal(client_id=TXN_PRODUCER)
    end_txn = [e["error_code"] for e in journal if e["api"] == "END_TXN"]
    assert end_txn[:CONCURRENT + 1] == [51] * CONCURRENT + [0], end_txn  # retried until it committed
    assert end_txn.count(90) == 1 and set(end_txn) == {0, 51, 90}, end_txn
    # transaction version 2: sendOffsetsToTransaction goes straight to TxnOffsetCommit, no AddOffsetsToTxn
    assert not [e for e in journal if e["api"] == "ADD_OFFSETS_TO_TXN"]
    offsets = [{p["error_code"] for p in e["partitions"]} for e in journal if e["api"] == "TXN_OFFSET_COMMIT"]
    assert offsets[:CONCURRENT + 1] == [{51}] * CONCURRENT + [{0}], offsets
    # one producer until the fence (InitProducerId at start), a new one after it; the open
    # transaction of the fenced one aborted by the new one's InitProducerId, the last one committed
    fence = next(e["seq"] for e in journal if e["api"] == "END_TXN" and e["error_code"] == 90)
    inits = [(e["seq"] > fence, e["error_code"]) for e in journal if e["api"] == "INIT_PRODUCER_ID"]
    assert [after for after, code in inits if code == 0] == [False, True], inits
    txns = [(t["state"], t["producer_epoch"]) for t in broker.transactions()
            if t["transactional_id"].startswith("tp-txnfaults-")]
    assert [state for state, _ in txns] == ["CompleteCommit"], txns


def test_standby_tasks_catch_up_and_take_over_without_restoring(java_run, broker):
    """StreamsTopologies' standby run: ``streams.num.standby.replicas=1`` set on the group through
    IncrementalAlterConfigs (GROUP resource); two instances of the word count. The broker gives each
    instance the other's stateful task (subtopology 1, the count) as a standby, as the instances
    report them too (``metadataForLocalThreads``); the standby stores catch up with the changelogs
    (``allLocalStorePartitionLags``: lag 0). Instance a then stops without leaving and its member is
    expelled over the admin HTTP API: b turns its standby into the active task and restores next to
    nothing of that changelog (its restore listener), and the output stays exact."""
    results, report, _log = java_run
    res = results["standby"]
    assert (res["state"], _by_key(res["out"], "tp-standby-out")) == ("RUNNING", _expected_counts(WORDS)), report
    # each instance: one standby, the count task the other runs (a stateless task gets none)
    stateful_a = [t for t in res["active_a"] if t.startswith("1_")]
    assert (len(stateful_a), res["standby_b"]) == (1, stateful_a), res
    assert len(res["standby_a"]) == 1 and res["standby_a"][0].startswith("1_") and res["standby_a"] != stateful_a, res
    # the broker's view (GET /streams-groups/tp-standby) agrees
    view = {m["client_id"].split("-")[2]: {s: ps for s, ps in m["standby"].items()} for m in res["group"]}
    assert view == {n: {"1": [int(res[f"standby_{n}"][0][2:])]} for n in "ab"}, res["group"]
    # b's stores (its active count task's and its standby's) caught up: lag 0
    (store, lags), = res["lags_b"].items()
    assert store.startswith("KSTREAM-AGGREGATE-STATE-STORE") and sorted(lags) == ["0", "1"], res["lags_b"]
    assert all(lag == 0 and end > 0 for _pos, end, lag in lags.values()), res["lags_b"]
    # after the expel b runs a's count task; of its changelog partition it restored next to nothing
    assert res["standby_b"][0] in res["active_b"], res
    part = int(res["standby_b"][0][2:])
    changelog = f"tp-standby-{store}-changelog"
    size = lags[str(part)][1]  # that changelog partition's records when a stopped
    restored = res["restored_after"].get(f"{changelog}-{part}", 0) - res["restored_before"].get(f"{changelog}-{part}", 0)
    assert size >= 40 and restored <= size // 10, (restored, size, res)
    print({"standby_restored": restored, "changelog_records": size, "ms": res["ms"]})


@pytest.mark.usefixtures("java_run")
def test_repartition_topic_purged_up_to_the_committed_offsets(broker):
    """The standby run's instances purge their repartition topic every 200 ms
    (``repartition.purge.interval.ms``; Kafka's default 30 s): TaskManager.maybePurgeCommittedRecords
    sends DeleteRecords up to the offsets the group committed. The broker answered them without error
    and each partition's log start offset moved up, never past the group's committed offset."""
    topic, = broker.call(lambda c: [n for n in c.metadata.topics if n.startswith("tp-standby-")
                                    and n.endswith("-repartition")])
    deletes = [p for e in broker.journal("DeleteRecords") for p in e["partitions"] if p["topic"] == topic]
    assert deletes and {p["error_code"] for p in deletes} == {0}, deletes
    committed = broker.committed_offsets("tp-standby")
    starts = {p: broker.partition_state(topic, p)["log_start_offset"] for p in range(PARTITIONS)}
    assert all(0 < starts[p] <= committed[(topic, p)] for p in range(PARTITIONS)), (starts, committed)
    print({"purges": len(deletes), "log_start": starts, "committed": committed})


def test_coordinator_moves_while_the_application_runs(java_run, cluster):
    """StreamsTopologies' move run (three brokers, exactly_once_v2): once the first half is counted the
    group's coordinator moves to another broker, every broker staying up (POST
    /groups/tp-move/coordinator: the leadership of its __consumer_offsets partition moves). The old
    coordinator answers the members' next group request NOT_COORDINATOR, they find the new one with
    FindCoordinator and carry on there; every count 1..n once, in order."""
    results, report, _log = java_run
    res = results["move"]
    assert (res["state"], _by_key(res["out"], "tp-move-out")) == ("RUNNING", _expected_counts(WORDS)), report
    new = _coordinator(cluster, "tp-move")
    old = (new - 1) % 3
    journal = [e for e in cluster.journal() if e["client_id"].startswith("tp-move-")]
    group_apis = ("STREAMS_GROUP_HEARTBEAT", "OFFSET_COMMIT", "TXN_OFFSET_COMMIT", "OFFSET_FETCH")
    not_coordinator = [e for e in journal if e["api"] in group_apis and e["broker"] == old and 16 in
                       {e["error_code"], *(p["error_code"] for p in e["partitions"])}]
    assert not_coordinator, sorted({(e["api"], e["broker"], e["error_code"]) for e in journal})
    first = min(e["seq"] for e in not_coordinator)
    # after it: FindCoordinator, then the members' heartbeats answered by the new coordinator
    assert [e for e in journal if e["api"] == "FIND_COORDINATOR" and e["seq"] > first], journal[-5:]
    after = [e["broker"] for e in journal if e["api"] == "STREAMS_GROUP_HEARTBEAT" and e["seq"] > first
             and e["error_code"] == 0]
    assert after and set(after) == {new}, after
    print({"not_coordinator": len(not_coordinator), "ms": res["ms"]})


# the four-sub-topology application's internal topics (after the application id and a dash) as
# Kafka Streams declares them: the join's table, the windowed count and its suppression buffer, the
# word count's store and repartition; each with the partitions of its sources. The windowed store's
# changelog keeps the window (10 s, no grace) plus windowstore.changelog.additional.retention.ms (1 day);
# a repartition topic keeps its records until Streams deletes them (retention.ms -1, DeleteRecords)
FOUR_INTERNAL = {
    "{app}-join-customers-STATE-STORE-0000000000-changelog": ("compact", None),
    "KSTREAM-AGGREGATE-STATE-STORE-0000000008-changelog": ("compact,delete", str(WINDOW_MS + 86_400_000)),
    "KTABLE-SUPPRESS-STATE-STORE-0000000011-changelog": ("compact", None),
    "KSTREAM-AGGREGATE-STATE-STORE-0000000024-changelog": ("compact", None),
    "KSTREAM-AGGREGATE-STATE-STORE-0000000024-repartition": ("delete", "-1"),
}


@pytest.mark.parametrize("run", list(MATRIX))
def test_four_sub_topologies_on_three_brokers(java_run, cluster, run):
    """StreamsTopologies' matrix runs: the application of four sub-topologies (whose join, window and
    global outputs the tests above check) on the cluster of three, with the classic protocol (the
    client's StreamsPartitionAssignor, the client creating its internal topics with CreateTopics)
    under at_least_once and exactly_once_v2, and with the streams protocol (the broker creating them
    from the topology the member registered) under at_least_once. No failure is injected, so
    at-least-once must be exact too: the word count (of ten words, over both partitions of the
    repartition topic) 1..n once per word, in order. The internal topics are the same under every run:
    Kafka's names, the partition counts of their sources, replication factor 3, the configs Streams
    asks for."""
    results, report, _log = java_run
    res = results[run]
    counts = _by_key(res["out"], _topic(run, "throttle-out"))
    assert (res["state"], counts) == ("RUNNING", _expected_counts(WORDS)), report
    app = f"tp-{run}"
    internal = {}
    for name, t in cluster.call(lambda c: dict(c.metadata.topics)).items():
        if name.startswith(app + "-") and name.endswith(("-changelog", "-repartition")):
            internal[name.removeprefix(app + "-")] = (
                len(t.partitions), {len(p.replicas) for p in t.partitions},
                t.overrides.get("cleanup.policy"), t.overrides.get("retention.ms"))
    assert internal == {name.format(app=app): (PARTITIONS, {3}, policy, retention)
                        for name, (policy, retention) in FOUR_INTERNAL.items()}, internal
    # at_least_once: no transactional producer; exactly_once_v2: one (one stream thread), its last
    # transaction committed
    txns = [t["state"] for t in cluster.transactions() if t["transactional_id"].startswith(app + "-")]
    assert txns == ([] if MATRIX[run][1] == "at_least_once" else ["CompleteCommit"]), txns
    group = cluster.group(app)
    if MATRIX[run][0] == "classic":
        # one member (one thread) holding every partition of every source and of the repartition topic;
        # Streams does not leave on close under the classic protocol, so it is still there
        assert (group["type"], group["protocol_type"], group.get("protocol_name")) == (
            "classic", "consumer", "stream"), group
        sources = [_topic(run, f"{name}-{t}") for name in FOUR for t in TOPOLOGIES[name]()[0] if t != "products"]
        topics = sorted([*sources, f"{app}-KSTREAM-AGGREGATE-STATE-STORE-0000000024-repartition"])
        assert [m["assigned"] for m in group["members"]] == [{t: list(range(PARTITIONS)) for t in topics}], group
        assert cluster.streams_group(app) is None
    else:
        # the topology the member registered: the global table is no subtopology of the group (2 is its
        # node group's number), the word count is two (4 writes the repartition topic 5 reads)
        g = cluster.streams_group(app)
        assert (g["type"], g["state"], g["members"]) == ("streams", "Empty", []), g
        topology = [(s["subtopology_id"], s["source_topics"], s["repartition_sink_topics"],
                     [r["name"] for r in s["repartition_source_topics"]],
                     [c["name"].removeprefix(app + "-") for c in s["state_changelog_topics"]])
                    for s in g["topology"]["subtopologies"]]
        changelog = [name.format(app=app) for name in FOUR_INTERNAL if name.endswith("-changelog")]
        repartition = f"{app}-KSTREAM-AGGREGATE-STATE-STORE-0000000024-repartition"
        assert topology == [
            ("0", [_topic(run, "join-customers"), _topic(run, "join-orders")], [], [], changelog[:1]),
            ("1", [_topic(run, "window-in")], [], [], changelog[1:3]),
            ("3", [_topic(run, "global-in")], [], [], []),
            ("4", [_topic(run, "throttle-in")], [repartition], [], []),
            ("5", [], [], [repartition], changelog[3:]),
        ], topology
