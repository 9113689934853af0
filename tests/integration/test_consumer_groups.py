"""Classic consumer groups with real clients: rebalances, expulsion, static members, throttled heartbeats.

Every member is a real consumer (kafka-python, aiokafka or confluent-kafka) in
its own process (``group_member.py``), so a test can close it (LeaveGroup) or
SIGKILL it (no LeaveGroup, no last commit).  Members report their
``assignment()``, the records they processed and the commits the broker
acknowledged; the test compares that with what the coordinator holds
(``MockBroker.group()``, ``committed_offsets()``, ``group_rebalances()``) and
with the request journal.

* ``test_group_of_three`` (one per library): three members over a 6-partition
  topic while records are produced; every partition owned by exactly one
  member (client and broker views agree); a member that closes sends LeaveGroup
  and hands its partitions over in a rebalance; a member killed with SIGKILL
  (no LeaveGroup) keeps its partitions until it is expelled, no sooner than
  ``session.timeout.ms`` after the last request that reset its session (the
  journal's read time) and within EXPEL_TOLERANCE_MS after that; the survivor
  then owns everything.  Every record produced was processed, each new owner
  started at (or after) the offset committed before it began, and records were
  processed twice only in the killed member's uncommitted tail (members commit
  on revocation and before a clean close, so a clean handover has none).
* ``test_mixed_group``: one member of each library with the common
  ``roundrobin`` assignor (kafka-python/aiokafka ``partition_assignment_strategy``,
  librdkafka ``partition.assignment.strategy``); the group leader, whichever
  library it is, leaves and the other two libraries take over, with no record
  lost or processed twice.
* ``test_static_member_restart`` (one per library): static members
  (group.instance.id); the follower, and for aiokafka and confluent-kafka the
  leader too, is stopped (no LeaveGroup: static members do not send one) and
  restarted within the session timeout: same generation, no rebalance
  (``group_rebalances()``), the same partitions under a new member id, the
  other member undisturbed, and nothing changes past the old session's deadline.
* ``test_throttled_heartbeats`` (one per library, ``mock.throttle.mode=observe``):
  with a request-rate quota on the member's client id its Heartbeat responses
  carry throttle times (at most one quota window) and, for longer than the
  session timeout, the member stays in the group (same generation, same member
  id) with heartbeats less than a session timeout apart; kafka-python, which
  honours KIP-219 (Heartbeat v4), never sends before the throttle ends.

Timing uses bands derived from the configured timeouts; every wait has a
deadline.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mockbroker import MockBroker

MEMBER_SCRIPT = Path(__file__).with_name("group_member.py")
N_PARTITIONS = 6
SESSION_MS = 2000          # members' session.timeout.ms
HEARTBEAT_MS = 300         # members' heartbeat.interval.ms
COMMIT_INTERVAL_MS = 300   # members commit processed offsets this often
MAX_POLL_MS = 10000        # max.poll.interval.ms (the rebalance timeout they send)
INITIAL_DELAY_MS = 300     # group.initial.rebalance.delay.ms
EXPEL_TOLERANCE_MS = 400   # expulsion no later than session timeout + this after the last heartbeat
POLL_S = 0.01              # how often the test looks at the group while waiting for an expulsion
STABLE_TIMEOUT_S = 30.0    # bound on any wait for a rebalance to settle
RATE = 200                 # records produced per second while members consume
LIBS = ["kafka-python", "aiokafka", "confluent"]
LIB_MODULE = {"kafka-python": "kafka", "aiokafka": "aiokafka", "confluent": "confluent_kafka"}
LIVENESS_APIS = {8, 11, 12, 14}  # OffsetCommit, JoinGroup, Heartbeat, SyncGroup reset a member's session
HEARTBEAT, LEAVE_GROUP = 12, 13

BROKER_CONFIG = {"num.partitions": N_PARTITIONS, "group.min.session.timeout.ms": 500,
                 "group.initial.rebalance.delay.ms": INITIAL_DELAY_MS}


@pytest.fixture(scope="module")
def broker():
    with MockBroker(config=BROKER_CONFIG) as b:
        yield b


def need(lib: str) -> None:
    pytest.importorskip(LIB_MODULE[lib])


# -- waiting ------------------------------------------------------------------------------------------
def wait_until(cond: Callable[[], object], timeout_s: float, what: Callable[[], str] | str, step: float = 0.02):
    end = time.monotonic() + timeout_s
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout_s}s waiting for "
                                 f"{what() if callable(what) else what}")
        time.sleep(step)


# -- one member process -----------------------------------------------------------------------------
class Member:
    """A consumer in a subprocess (group_member.py) and everything it reported."""

    def __init__(self, lib: str, bootstrap: str, group: str, topic: str, client_id: str, log_dir: Path,
                 instance_id: str | None = None, session_ms: int = SESSION_MS, heartbeat_ms: int = HEARTBEAT_MS,
                 assignor: str = "roundrobin") -> None:
        self.lib, self.client_id = lib, client_id
        cfg = {"lib": lib, "bootstrap": bootstrap, "group": group, "topic": topic, "client_id": client_id,
               "instance_id": instance_id, "session_ms": session_ms, "heartbeat_ms": heartbeat_ms,
               "max_poll_ms": MAX_POLL_MS, "assignor": assignor, "commit_interval_ms": COMMIT_INTERVAL_MS,
               "max_records": 50, "debug": bool(os.environ.get("GROUP_MEMBER_DEBUG"))}
        self.log_path = log_dir / f"{client_id}-{int(time.monotonic() * 1000)}.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen([sys.executable, str(MEMBER_SCRIPT), json.dumps(cfg)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.events: list[dict] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.killed_at: float | None = None

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self.events.append(ev)

    # -- views ------------------------------------------------------------------------------
    def evs(self, kind: str | None = None) -> list[dict]:
        with self._lock:
            return [e for e in self.events if kind is None or e["ev"] == kind]

    @property
    def parts(self) -> list[int] | None:
        a = self.evs("assign")
        return a[-1]["parts"] if a else None

    @property
    def last_assign(self) -> dict | None:
        a = self.evs("assign")
        return a[-1] if a else None

    def n_records(self) -> int:
        return sum(len(e["r"]) for e in self.evs("recs"))

    def check_no_error(self) -> None:
        errs = self.evs("error")
        assert not errs, f"{self.client_id} failed: {errs[0].get('tb') or errs[0]['err']}\n{self.stderr_tail()}"

    def stderr_tail(self, n: int = 30) -> str:
        try:
            return "".join(self.log_path.read_text(errors="replace").splitlines(True)[-n:])
        except OSError:
            return ""

    # -- commands -------------------------------------------------------------------------------
    def send(self, cmd: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        wait_until(lambda: self.evs("ready") or self.evs("error") or self.proc.poll() is not None, timeout_s,
                   f"{self.client_id} to start")
        self.check_no_error()
        assert self.evs("ready"), f"{self.client_id} exited: {self.stderr_tail()}"

    def go(self) -> None:
        self.send("go")

    def close(self, timeout_s: float = 20.0) -> float:
        """Clean close (a dynamic member sends LeaveGroup), waiting until the process exited; returns
        when the close began."""
        t0 = time.monotonic()
        self.send("close")
        wait_until(lambda: self.evs("closed") or self.proc.poll() is not None, timeout_s,
                   f"{self.client_id} to close")
        self.proc.wait(timeout=timeout_s)
        self._reader.join(timeout=5)  # every line it wrote is read
        self.check_no_error()
        assert self.evs("closed"), f"{self.client_id} did not close cleanly: {self.stderr_tail()}"
        return t0

    def kill(self) -> float:
        """SIGKILL: no LeaveGroup, no last commit."""
        self.killed_at = time.monotonic()
        self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(timeout=5)
        return self.killed_at

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._reader.join(timeout=5)
        for f in (self.proc.stdin, self.proc.stdout, self._log):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass


@pytest.fixture
def spawn(tmp_path):
    """Start members (``spawn(broker, lib, group, topic, client_id, ...)``); any still running at the
    end of the test are killed."""
    started: list[Member] = []

    def start(broker: MockBroker, lib: str, group: str, topic: str, client_id: str, **kw) -> Member:
        m = Member(lib, broker.bootstrap_servers, group, topic, client_id, tmp_path, **kw)
        started.append(m)
        return m

    yield start
    for m in started:
        m.stop()


def start_all(members: list[Member]) -> None:
    for m in members:
        m.wait_ready()
    for m in members:  # within one initial rebalance delay
        m.go()


# -- the group as the broker holds it --------------------------------------------------------------------
def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """ConsumerProtocolAssignment (any version): topic -> partitions (user data ignored)."""
    if not data:
        return {}
    off = 2
    (n,) = struct.unpack_from(">i", data, off)
    off += 4
    out: dict[str, list[int]] = {}
    for _ in range(max(n, 0)):
        (ln,) = struct.unpack_from(">h", data, off)
        off += 2
        topic = data[off:off + ln].decode()
        off += ln
        (k,) = struct.unpack_from(">i", data, off)
        off += 4
        out[topic] = sorted(struct.unpack_from(">%di" % k, data, off))
        off += 4 * k
    return out


def broker_view(broker: MockBroker, group: str, topic: str) -> dict:
    g = broker.group(group)
    if g is None:
        return {"state": None, "generation_id": -1, "members": {}, "by_member_id": {}, "leader_id": None}
    members = {m["client_id"]: decode_assignment(m["assignment"]).get(topic, []) for m in g["members"]}
    return {**g, "members": members, "by_member_id": {m["member_id"]: m for m in g["members"]},
            "member_ids": {m["client_id"]: m["member_id"] for m in g["members"]}}


def settled(broker: MockBroker, group: str, topic: str, members: list[Member]) -> dict | None:
    """The group is Stable with exactly ``members``, whose assignments (as the broker stores them and
    as each client's assignment() reports) cover every partition exactly once."""
    for m in members:  # a member that failed or exited fails the test at once
        m.check_no_error()
        assert m.proc.poll() is None, f"{m.client_id} exited with {m.proc.returncode}: {m.stderr_tail()}"
    v = broker_view(broker, group, topic)
    if v["state"] != "Stable" or set(v["members"]) != {m.client_id for m in members}:
        return None
    owned = [p for parts in v["members"].values() for p in parts]
    if sorted(owned) != list(range(N_PARTITIONS)):
        return None
    for m in members:
        a = m.last_assign
        if a is None or a["parts"] != v["members"][m.client_id]:
            return None
        if a.get("generation") is not None and a["generation"] != v["generation_id"]:
            return None
        if a.get("member_id") and a["member_id"] != v["member_ids"][m.client_id]:
            return None
    return v


def wait_settled(broker: MockBroker, group: str, topic: str, members: list[Member],
                 timeout_s: float = STABLE_TIMEOUT_S) -> dict:
    def what() -> str:
        for m in members:
            m.check_no_error()
        return (f"group {group} settled with {[m.client_id for m in members]}: broker "
                f"{broker_view(broker, group, topic)}, clients {[(m.client_id, m.last_assign) for m in members]}")
    v = wait_until(lambda: settled(broker, group, topic, members), timeout_s, what)
    # each partition exactly once, as the clients see it too
    client_parts = [p for m in members for p in (m.parts or [])]
    assert sorted(client_parts) == list(range(N_PARTITIONS)), client_parts
    return v


def last_liveness_ns(broker: MockBroker, client_id: str) -> int:
    """When the broker read the member's last request that resets its session (journal, monotonic ns)."""
    entries = [e for e in broker.journal(client_id=client_id) if e["api_key"] in LIVENESS_APIS]
    assert entries, f"no group requests from {client_id} in the journal"
    return max(e["received_ns"] for e in entries)


def leave_requests(broker: MockBroker, client_id: str) -> list[dict]:
    return broker.journal(api_key=LEAVE_GROUP, client_id=client_id)


# -- records ---------------------------------------------------------------------------------------------
class Producer:
    """Produces unique values at RATE records/s, round robin over the partitions, on a thread;
    remembers where each landed ((partition, offset) -> value)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        pytest.importorskip("kafka")
        from kafka import KafkaProducer

        self.topic = topic
        self.p = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5, client_id=f"producer-{topic}")
        self.futures: list[tuple[int, str, object]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.n = 0

    def start(self) -> "Producer":
        self._thread.start()
        return self

    def _run(self) -> None:
        step = 0.05
        per_step = max(1, int(RATE * step))
        next_t = time.monotonic()
        deadline = next_t + 300
        while not self._stop.is_set() and time.monotonic() < deadline:
            for _ in range(per_step):
                i = self.n
                value = "v%06d" % i
                self.futures.append((i % N_PARTITIONS, value,
                                     self.p.send(self.topic, value=value.encode(), partition=i % N_PARTITIONS)))
                self.n += 1
            next_t += step
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def wait_more(self, n: int, timeout_s: float = 10.0) -> None:
        target = self.n + n
        wait_until(lambda: self.n >= target, timeout_s, f"{n} more records produced")

    def finish(self) -> dict[tuple[int, int], str]:
        self._stop.set()
        self._thread.join(timeout=10)
        self.p.flush(timeout=30)
        out = {}
        for part, value, fut in self.futures:
            md = fut.get(timeout=30)
            assert md.partition == part
            out[(part, md.offset)] = value
        self.p.close()
        return out


def check_records(produced: dict[tuple[int, int], str], members: list[Member],
                  killed: list[Member]) -> dict[str, int]:
    """Nothing lost, nothing unknown; each member's run of a partition starts at (or after) the offset
    committed before it began, so duplicates come only from the killed members' uncommitted tails."""
    consumed: dict[tuple[int, int], list[tuple[float, str]]] = {}
    runs = []  # (partition, start offset, start time, member)
    for m in members:
        last: dict[int, int] = {}
        for e in m.evs("recs"):
            for p, o, v in e["r"]:
                want = produced.get((p, o))
                assert want == v, f"{m.client_id} read {v!r} at {p}/{o}, produced {want!r}"
                consumed.setdefault((p, o), []).append((e["t"], m.client_id))
                if last.get(p) != o - 1:
                    runs.append((p, o, e["t"], m.client_id))
                last[p] = o
    missing = sorted(set(produced) - set(consumed))
    assert not missing, f"{len(missing)} records never consumed, e.g. {missing[:10]}"
    commits = sorted((e["t"], int(p), o, m.client_id) for m in members for e in m.evs("commit")
                     for p, o in e["offsets"].items())
    for p, start, t, cid in runs:
        before = [o for ct, cp, o, _ in commits if cp == p and ct < t]
        assert not before or start >= max(before), (
            f"{cid} started partition {p} at {start}, below offset {max(before)} committed before it began")
    # the only records processed twice: a killed member processed them after its last commit
    allowed: set[tuple[int, int]] = set()
    for m in killed:
        last_commit: dict[int, int] = {}
        for e in m.evs("commit"):
            for p, o in e["offsets"].items():
                last_commit[int(p)] = o
        for e in m.evs("recs"):
            for p, o, _ in e["r"]:
                if o >= last_commit.get(p, 0):
                    allowed.add((p, o))
    dups = {k: v for k, v in consumed.items() if len(v) > 1}
    bad = sorted(k for k in dups if k not in allowed)
    assert not bad, (f"{len(bad)} records processed twice though they were committed or not owned by a killed "
                     f"member, e.g. {[(k, dups[k]) for k in bad[:5]]}")
    return {"produced": len(produced), "consumed": sum(len(v) for v in consumed.values()), "duplicates": len(dups)}


def wait_all_committed(broker: MockBroker, group: str, topic: str, produced: dict[tuple[int, int], str],
                       members: list[Member], timeout_s: float = 20.0) -> None:
    ends = {p: 1 + max(o for (pp, o) in produced if pp == p) for p in range(N_PARTITIONS)}

    def done() -> bool:
        for m in members:
            m.check_no_error()
        c = broker.committed_offsets(group)
        return all(c.get((topic, p)) == ends[p] for p in range(N_PARTITIONS))
    wait_until(done, timeout_s, lambda: f"committed offsets {broker.committed_offsets(group)} to reach {ends}")


def next_offset(m: Member, p: int) -> int:
    """1 + the highest offset of partition ``p`` the member processed (0: none)."""
    return 1 + max((o for e in m.evs("recs") for pp, o, _ in e["r"] if pp == p), default=-1)


def last_printed_commit(m: Member, p: int) -> int:
    return max((o for e in m.evs("commit") for pp, o in e["offsets"].items() if int(pp) == p), default=0)


def resumed_at(members: list[Member], p: int, since: float, timeout_s: float = 15.0) -> tuple[int, str]:
    """The first offset of ``p`` any of ``members`` processed after ``since`` (waits for it)."""
    def first() -> tuple[int, str] | None:
        hits = [(e["t"], o, m.client_id) for m in members for e in m.evs("recs") if e["t"] > since
                for pp, o, _ in e["r"] if pp == p]
        return min(hits)[1:] if hits else None
    return wait_until(first, timeout_s, f"partition {p} to be consumed again")


def wait_consuming(members: list[Member], timeout_s: float = 15.0) -> None:
    """Every member processes records again (after its latest assignment)."""
    marks = {m.client_id: m.n_records() for m in members}
    wait_until(lambda: all(m.n_records() > marks[m.client_id] for m in members), timeout_s,
               lambda: f"members to consume: {[(m.client_id, m.n_records()) for m in members]}")


# -- 1. three members of one library ---------------------------------------------------------------------
@pytest.mark.parametrize("lib", LIBS)
def test_group_of_three(broker, spawn, lib):
    need(lib)
    topic, group = f"cg3-{lib}", f"g3-{lib}"
    broker.create_topic(topic, N_PARTITIONS)
    a, b, c = (spawn(broker, lib, group, topic, f"{lib}-{n}") for n in "abc")
    start_all([a, b, c])
    v1 = wait_settled(broker, group, topic, [a, b, c])
    assert all(len(parts) == 2 for parts in v1["members"].values()), v1["members"]  # roundrobin: 6 over 3
    producer = Producer(broker.bootstrap_servers, topic).start()
    wait_consuming([a, b, c])

    # a clean close: LeaveGroup, a rebalance, the others take A's partitions
    a_parts = set(v1["members"][a.client_id])
    a.close()
    t_closed = a.evs("closed")[0]["t"]
    committed = broker.committed_offsets(group)
    assert leave_requests(broker, a.client_id), "no LeaveGroup from the closed member"
    v2 = wait_settled(broker, group, topic, [b, c])
    assert v2["generation_id"] > v1["generation_id"]
    assert a_parts <= set(v2["members"][b.client_id]) | set(v2["members"][c.client_id])
    for p in a_parts:  # A committed all it processed; the new owner goes on exactly from there
        # (read after A's exit: by then the new owner may already have consumed and committed more)
        assert committed.get((topic, p), 0) >= next_offset(a, p), (p, committed, next_offset(a, p))
        assert resumed_at([b, c], p, t_closed)[0] == next_offset(a, p)
    wait_consuming([b, c])

    # SIGKILL, with records processed since the member's last commit: no LeaveGroup, expelled after
    # session.timeout.ms
    wait_until(lambda: b.evs("recs") and b.evs("commit") and b.evs("recs")[-1]["t"] > b.evs("commit")[-1]["t"],
               10, "the member to process records after a commit")
    victim_id, b_parts = v2["member_ids"][b.client_id], v2["members"][b.client_id]
    t_kill = b.kill()
    gone = wait_until(lambda: victim_id not in broker_view(broker, group, topic)["by_member_id"] and time.monotonic(),
                      SESSION_MS / 1000 + 10, "the killed member to be expelled", step=POLL_S)
    committed = broker.committed_offsets(group)  # nobody can commit B's partitions before the rebalance ends
    last_ns = last_liveness_ns(broker, b.client_id)
    expel_ms = gone * 1000 - last_ns / 1e6
    print(f"\n{lib}: killed member expelled {expel_ms:.0f} ms after its last heartbeat "
          f"({(gone - t_kill) * 1000:.0f} ms after SIGKILL; session.timeout.ms={SESSION_MS})")
    assert not leave_requests(broker, b.client_id)
    # the broker's deadlines are whole milliseconds of its clock (as Kafka's), the last heartbeat's time
    # here its nanoseconds: the deadline may fall up to 1 ms before SESSION_MS after it
    assert SESSION_MS - 1 <= expel_ms <= SESSION_MS + EXPEL_TOLERANCE_MS, expel_ms
    assert (gone - t_kill) * 1000 <= SESSION_MS + EXPEL_TOLERANCE_MS
    # until then nobody took the dead member's partitions over
    early = [e["parts"] for e in c.evs("assign") if e["t"] < gone]
    assert set(early[-1]) == set(v2["members"][c.client_id]), early
    v3 = wait_settled(broker, group, topic, [c])
    assert v3["generation_id"] > v2["generation_id"]
    assert v3["members"][c.client_id] == list(range(N_PARTITIONS))
    tail = 0
    for p in b_parts:  # the survivor resumes at B's last commit; B's uncommitted tail is read again
        at = committed.get((topic, p), 0)
        assert last_printed_commit(b, p) <= at <= next_offset(b, p), (p, at, last_printed_commit(b, p))
        assert resumed_at([c], p, gone)[0] == at
        tail += next_offset(b, p) - at
    print(f"{lib}: the killed member's uncommitted tail: {tail} records")
    producer.wait_more(RATE // 2)

    produced = producer.finish()
    wait_all_committed(broker, group, topic, produced, [c])
    c.close()
    stats = check_records(produced, [a, b, c], killed=[b])
    print(f"{lib}: {stats}")
    assert stats["duplicates"] == tail  # exactly the uncommitted tail was processed twice


# -- 2. one member of each library ----------------------------------------------------------------------
def test_mixed_group(broker, spawn):
    for lib in LIBS:
        need(lib)
    topic, group = "cg-mixed", "g-mixed"
    broker.create_topic(topic, N_PARTITIONS)
    members = [spawn(broker, lib, group, topic, f"mixed-{lib}") for lib in LIBS]
    start_all(members)
    v1 = wait_settled(broker, group, topic, members)
    assert v1["protocol_type"] == "consumer" and v1["protocol_name"] == "roundrobin", v1
    assert all(len(parts) == 2 for parts in v1["members"].values()), v1["members"]
    producer = Producer(broker.bootstrap_servers, topic).start()
    wait_consuming(members)

    # the leader (whichever library it is) leaves; the other two libraries take over
    leader = next(m for m in members if v1["member_ids"][m.client_id] == v1["leader_id"])
    rest = [m for m in members if m is not leader]
    leader.close()
    assert leave_requests(broker, leader.client_id)
    v2 = wait_settled(broker, group, topic, rest)
    assert v2["generation_id"] > v1["generation_id"]
    assert v2["leader_id"] in {v2["member_ids"][m.client_id] for m in rest}
    assert v2["protocol_name"] == "roundrobin"
    assert all(len(parts) == 3 for parts in v2["members"].values()), v2["members"]
    wait_consuming(rest)

    produced = producer.finish()
    wait_all_committed(broker, group, topic, produced, rest)
    for m in rest:
        m.close()
    stats = check_records(produced, members, killed=[])
    print(f"\nmixed group, leader {leader.lib} left: {stats}")


# -- 3. a static member restarts within the session timeout ------------------------------------------------
STATIC_SESSION_MS = 3000


@pytest.fixture
def own_broker():
    """A broker for one test: group_rebalances() counts every group of a broker, and members of other
    tests' groups expire in the background."""
    with MockBroker(config=BROKER_CONFIG) as b:
        yield b


def restart_static(broker: MockBroker, spawn, group: str, topic: str, member: Member, instance_id: str,
                   stay: Member, before: dict) -> tuple[Member, dict, float, float]:
    """Stop a static member and start it again (same group.instance.id and client id) at once; the
    group must not rebalance: same generation, same assignments, the other member undisturbed."""
    rebalances = broker.group_rebalances()
    stay_assigns = len(stay.evs("assign"))
    old_id = before["member_ids"][member.client_id]
    again = spawn(broker, member.lib, group, topic, member.client_id, instance_id=instance_id,
                  session_ms=STATIC_SESSION_MS)
    again.wait_ready()  # the new process is ready (imports done) before the member stops
    t_stop = member.close()
    assert not leave_requests(broker, member.client_id), "a static member sent LeaveGroup on close"
    again.go()
    after = wait_settled(broker, group, topic, [again, stay], timeout_s=STATIC_SESSION_MS / 1000)
    back_ms = 1000 * (time.monotonic() - t_stop)
    assert back_ms < STATIC_SESSION_MS
    new_id = after["member_ids"][again.client_id]
    assert new_id != old_id, "the restarted static member kept its old member id"
    assert after["by_member_id"][new_id]["group_instance_id"] == instance_id
    assert after["generation_id"] == before["generation_id"], "the static member's restart caused a rebalance"
    assert broker.group_rebalances() == rebalances
    assert after["members"] == before["members"]
    assert again.parts == before["members"][member.client_id]
    assert len(stay.evs("assign")) == stay_assigns, "the other member saw a rebalance"
    return again, after, back_ms, t_stop


@pytest.mark.parametrize("lib", LIBS)
def test_static_member_restart(own_broker, spawn, lib):
    need(lib)
    broker = own_broker
    topic, group = f"cg-static-{lib}", f"g-static-{lib}"
    broker.create_topic(topic, N_PARTITIONS)
    kw = {"session_ms": STATIC_SESSION_MS}
    ids = {"lead": f"instance-{lib}-lead", "follow": f"instance-{lib}-follow"}
    lead = spawn(broker, lib, group, topic, f"static-{lib}-lead", instance_id=ids["lead"], **kw)
    follow = spawn(broker, lib, group, topic, f"static-{lib}-follow", instance_id=ids["follow"], **kw)
    lead.wait_ready()
    follow.wait_ready()
    lead.go()  # the first member in the group leads it
    wait_until(lambda: broker_view(broker, group, topic)["members"], 10, "the first member to join")
    follow.go()
    v1 = wait_settled(broker, group, topic, [lead, follow])
    assert v1["leader_id"] == v1["member_ids"][lead.client_id]
    assert {m["group_instance_id"] for m in v1["by_member_id"].values()} == set(ids.values())
    rebalances = broker.group_rebalances()

    follow, v2, back_ms, t_stop = restart_static(broker, spawn, group, topic, follow, ids["follow"], lead, v1)
    print(f"\n{lib}: static follower back {back_ms:.0f} ms after it began closing "
          f"(session.timeout.ms={STATIC_SESSION_MS})")
    if lib != "kafka-python":
        # A static leader too.  kafka-python is left out: it sends JoinGroup <= v7, so it cannot see
        # KIP-814's skip_assignment, computes an assignment (ignored by the broker, as Kafka does) and,
        # when its topic metadata arrives after that, rejoins to reassign: a rebalance of its own making.
        lead, v2, back_ms, t_stop = restart_static(broker, spawn, group, topic, lead, ids["lead"], follow, v2)
        print(f"{lib}: static leader back {back_ms:.0f} ms after it began closing")
        assert v2["leader_id"] == v2["member_ids"][lead.client_id]

    # past the old sessions' deadlines nothing changes: the replaced ids' expirations are void
    wait_until(lambda: time.monotonic() > t_stop + (STATIC_SESSION_MS + EXPEL_TOLERANCE_MS) / 1000,
               STATIC_SESSION_MS / 1000 + 2, "the old sessions' deadlines to pass", step=0.05)
    v3 = settled(broker, group, topic, [lead, follow])
    assert v3 is not None, broker_view(broker, group, topic)
    assert v3["generation_id"] == v1["generation_id"] and v3["member_ids"] == v2["member_ids"]
    assert v3["members"] == v1["members"]
    assert broker.group_rebalances() == rebalances
    for m in (lead, follow):
        m.check_no_error()


# -- 4. heartbeats of a throttled member ----------------------------------------------------------------
QUOTA_REQUESTS_PER_S = 1  # far below what a member sends: responses throttled, each by at most one window
THROTTLED_WATCH_MS = int(1.5 * SESSION_MS)  # how long the member is watched while throttled


@pytest.fixture
def observing_broker():
    """observe mode: throttled responses go out at once and the socket is still read, so the broker
    records exactly when (how early) the client sent its next request; an early one waits.  Two
    quota windows make the quota bite within a second."""
    with MockBroker(config={**BROKER_CONFIG, "mock.throttle.mode": "observe", "quota.window.num": 2}) as b:
        yield b


@pytest.mark.parametrize("lib", LIBS)
def test_throttled_heartbeats(observing_broker, spawn, lib):
    need(lib)
    broker = observing_broker
    topic, group, cid = f"cg-thr-{lib}", f"g-thr-{lib}", f"throttled-{lib}"
    broker.create_topic(topic, N_PARTITIONS)
    m = spawn(broker, lib, group, topic, cid)
    start_all([m])
    v1 = wait_settled(broker, group, topic, [m])
    member_id, assigns = v1["member_ids"][cid], len(m.evs("assign"))

    def unchanged() -> None:
        v = broker_view(broker, group, topic)
        assert v["state"] == "Stable" and v["member_ids"] == {cid: member_id}, v
        assert v["generation_id"] == v1["generation_id"], v
        m.check_no_error()

    def throttled_heartbeats() -> list[dict]:
        return [e for e in broker.journal(api_key=HEARTBEAT, client_id=cid) if e["throttle_time_ms"] > 0]

    broker.set_quota(client_id=cid, request_rate=QUOTA_REQUESTS_PER_S)
    first = wait_until(throttled_heartbeats, 10, "a throttled Heartbeat response")[0]
    t0 = first["responded_ns"] / 1e9
    # from the first throttled heartbeat on, for longer than the session timeout, the member stays
    while time.monotonic() < t0 + THROTTLED_WATCH_MS / 1000:
        unchanged()
        time.sleep(0.05)
    t_end = time.monotonic()
    broker.set_quota(client_id=cid, request_rate=None)
    unchanged()

    hb = [e for e in broker.journal(api_key=HEARTBEAT, client_id=cid) if t0 * 1e9 <= e["received_ns"] <= t_end * 1e9]
    events = [e for e in broker.throttle_events(cid) if e["api_key"] == HEARTBEAT]
    throttled = [e for e in hb if e["throttle_time_ms"] > 0]
    print(f"\n{lib}: heartbeats while throttled (ms after the first throttled one, throttle ms): "
          f"{[(round(e['received_ns'] / 1e6 - t0 * 1000), e['throttle_time_ms']) for e in hb]}; "
          f"next request early by {[e['early_ms'] for e in events]} ms")
    # Heartbeat responses carry the throttle time, at most one quota window (request quotas are capped)
    assert len(throttled) >= 2, hb
    assert all(0 < e["throttle_ms"] <= 1000 for e in events), events
    # heartbeats keep coming more often than the session timeout
    times = [t0 * 1000] + [e["received_ns"] / 1e6 for e in hb] + [t_end * 1000]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) < SESSION_MS, gaps
    if lib == "kafka-python":
        # Heartbeat v4 (>= v2): KIP-219, the client itself waits out the throttle before its next request
        assert all(e["client_should_throttle"] for e in events)
        early = [e["early_ms"] for e in events if e["next_request_ms"] is not None]
        assert early and all(x <= 5 for x in early), early
    # the same member, same generation, never reassigned
    v2 = settled(broker, group, topic, [m])
    assert v2 is not None and v2["generation_id"] == v1["generation_id"], broker_view(broker, group, topic)
    assert v2["member_ids"] == {cid: member_id}
    assert len(m.evs("assign")) == assigns
