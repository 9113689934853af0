"""The differential run: the same cases to a real Kafka and to mockbroker, outcomes compared.

For each (key, version) both brokers advertise, in key order: its topics are created on both
(``Scope``), each case's state is set up on both, its request goes to both (each side in its own
thread, case by case in step), the outcomes are normalised and compared; then the scope's topics
are deleted on both, so every scope starts from the same small state.

Each difference is printed as one line that ends with the command reproducing it alone.
"""

from __future__ import annotations

import random
import re
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import generate, schema
from .generate import Case, Scope
from .normalise import Normaliser, diff
from .state import SetupError, Side, resolve
from .wire import Outcome

ROOT = Path(__file__).resolve().parents[2]
DIFFERENCES_MD = ROOT / "docs" / "differences.md"
# What Kafka 4.4's broker advertises but serves only to other brokers or controllers, and what
# the tester leaves out, with the reason.
AUTO_CREATE_SETTLE_S = 5.0  # how long a case waits for the topics a Metadata request may have auto-created
ZERO_UUID = uuid.UUID(int=0)
SKIPPED_KEYS = {
    17: "SaslHandshake changes what the connection accepts next (the SASL tests cover it)",
    36: "SaslAuthenticate: likewise",
}


@dataclass
class Result:
    case: Case
    outcomes: dict[str, Outcome]
    differences: list[tuple[str, Any, Any]] = field(default_factory=list)
    known: str | None = None  # the known difference (docs/differences.md) that covers it

    @property
    def same(self) -> bool:
        return not self.differences

    def closes(self) -> str | None:
        kinds = {name: o.kind for name, o in self.outcomes.items()}
        if kinds.get("mockbroker") == "closed" and kinds.get("kafka") != "closed":
            return "mockbroker"
        if kinds.get("kafka") == "closed" and kinds.get("mockbroker") != "closed":
            return "kafka"
        return None


@dataclass
class Known:
    """One row of docs/differences.md's table of differences the tester finds and Kafka is not matched on."""

    api: str
    versions: str
    mutation: re.Pattern[str]
    path: re.Pattern[str]
    reason: str

    def covers(self, r: Result) -> bool:
        if self.api not in ("*", r.case.api):
            return False
        if self.versions != "*" and r.case.version not in schema.Versions(self.versions):
            return False
        text = "; ".join(r.case.mutations) or "valid"
        if not self.mutation.search(text):
            return False
        return all(self.path.search(p) for p, _a, _b in r.differences)


def known_differences(path: Path = DIFFERENCES_MD) -> list[Known]:
    """The rows of the ``differential-known`` table in docs/differences.md."""
    out = []
    inside = False
    for line in path.read_text().splitlines():
        if "<!-- differential-known -->" in line:
            inside = True
            continue
        if inside and "<!-- /differential-known -->" in line:
            break
        if not inside or not line.startswith("|") or set(line.replace("|", "").strip()) <= set("-: "):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]  # "\|" is a pipe in a cell
        if len(cells) < 5 or cells[0] == "API":
            continue
        api, versions, mutation, where, reason = cells[:5]
        out.append(Known(api, versions, re.compile(_unquote(mutation)), re.compile(_unquote(where)), reason))
    return out


def _unquote(cell: str) -> str:
    cell = cell.strip()
    if cell.startswith("`") and cell.endswith("`"):
        cell = cell[1:-1]
    return ".*" if cell in ("*", "") else cell.replace("\\|", "|")


class Differential:
    def __init__(self, kafka: str, mockbroker: str, *, seed: int = 1, per_version: int = 50,
                 keys: Iterable[int] | None = None, only: tuple[int, int, int] | None = None,
                 versions: str = "all", log: Callable[[str], None] = print, deadline: float | None = None) -> None:
        self.sides = [Side("kafka", kafka), Side("mockbroker", mockbroker)]
        self.seed = seed
        self.per_version = per_version
        self.keys = set(keys) if keys is not None else None
        self.only = only
        self.versions = versions  # "all", or "slice": the newest, the oldest and one seeded between
        self.log = log
        self.deadline = deadline
        self.results: list[Result] = []
        self.setup_failures: list[str] = []
        self.pool = ThreadPoolExecutor(2, thread_name_prefix="differential")
        # the names of this run's own (Scope.run): four base-36 digits of the time it started
        self.run_tag = _base36(int(time.time() * 10) % 36**4).rjust(4, "0")

    # --- plan ----------------------------------------------------------------------------------------
    def common_versions(self) -> dict[int, tuple[int, int]]:
        k, m = self.sides[0].versions, self.sides[1].versions
        out = {}
        for key in sorted(set(k) & set(m)):
            lo, hi = max(k[key][0], m[key][0]), min(k[key][1], m[key][1])
            if lo <= hi and (key, "request") in schema.messages():
                out[key] = (lo, hi)
        return out

    def plan(self) -> list[tuple[int, int]]:

        rng = random.Random(self.seed)
        out = []
        for key, (lo, hi) in self.common_versions().items():
            if key in SKIPPED_KEYS or (self.keys is not None and key not in self.keys):
                continue
            vs = list(range(lo, hi + 1))
            if self.versions == "slice" and len(vs) > 3:
                vs = sorted({lo, hi, rng.choice(vs[1:-1])})
            out += [(key, v) for v in vs]
        if self.only is not None:
            out = [(self.only[0], self.only[1])]
        return out

    # --- running ---------------------------------------------------------------------------------------
    def both(self, fn: Callable[[Side], Any]) -> list[Any]:
        """``fn`` on each side at once; the first exception is raised after both finished."""
        futures = [self.pool.submit(fn, s) for s in self.sides]
        results, error = [], None
        for f in futures:
            try:
                results.append(f.result())
            except Exception as e:  # noqa: BLE001 - re-raised below
                results.append(e)
                error = error or e
        if error is not None:
            raise error
        return results

    def start(self) -> None:
        self.both(lambda s: s.api_versions())
        self.both(lambda s: s.warm_up())

    def run(self) -> list[Result]:
        self.start()
        started = time.monotonic()
        for key, version in self.plan():
            if self.deadline is not None and time.monotonic() - started > self.deadline:
                self.log(f"stopped at {schema.api_names()[key]} v{version}: the time bound ({self.deadline:g} s) passed")
                break
            self.run_scope(key, version)
        self.pool.shutdown()
        for s in self.sides:
            s.close()
        return self.results

    def run_scope(self, key: int, version: int) -> None:
        scope = Scope(key, version, self.run_tag)
        cases = generate.cases(key, version, self.per_version, self.seed, scope)
        if self.only is not None:
            cases = [c for c in cases if c.index == self.only[2]]
        topics = dict(scope.topics)
        for c in cases:
            topics.update(c.needs.get("topics", {}))
        try:
            self.both(lambda s: s.create_topics(topics))
            for t, n in topics.items():
                for p, count in ((0, 3), (1, 2)):
                    if p < n:
                        self.both(lambda s, t=t, p=p, count=count: s.produce(t, p, count, generate.RECORD_TIMESTAMP))
        except SetupError as e:
            self.setup_failures.append(f"{schema.api_names()[key]} v{version}: {e}")
            self.log(f"SETUP {schema.api_names()[key]} v{version}: {e}")
            return
        for case in cases:
            self.run_case(case)
        try:
            self.both(lambda s: self.cleanup(s, scope))
        except SetupError as e:
            self.log(f"CLEANUP {schema.api_names()[key]} v{version}: {e}")

    def run_case(self, case: Case) -> Result:
        def one(side: Side) -> Outcome:
            try:
                setup_case(side, case)
                body = resolve(case.body, side)
            except SetupError as e:
                return Outcome("setup failed", detail=str(e).split(": ", 1)[-1])
            conn = side.connection()
            out = conn.call(case.key, case.version, body, wait=case.wait, expect_none=case.expect_none)
            if out.kind == "answer":
                out.body = Normaliser(side, body, case.scope).answer(case.key, out.body)
            if not conn.usable:
                side.close()
            return out

        outs = dict(zip((s.name for s in self.sides), self.both(one)))
        result = Result(case, outs, compare(outs["kafka"], outs["mockbroker"]))
        self.results.append(result)
        self.settle_auto_created(case, outs)
        return result

    def settle_auto_created(self, case: Case, outs: dict[str, Outcome]) -> None:
        """Every case starts from equal state: a Metadata request that may auto-create topics leaves them
        created at once on mockbroker but some hundreds of milliseconds later on Kafka (its broker answers
        while its controller creates them), so the next case would list them on one side only.  Wait
        (at most AUTO_CREATE_SETTLE_S) until both list every name either answered UNKNOWN_TOPIC_OR_PARTITION."""
        if case.key != 3 or (case.version >= 4 and not case.body.get("AllowAutoTopicCreation")):
            return
        names = sorted({t["Name"] for o in outs.values() if o.kind == "answer" and o.body
                        for t in o.body.get("Topics") or () if t.get("ErrorCode") == 3 and t.get("Name")})
        if not names:
            return
        deadline = time.monotonic() + AUTO_CREATE_SETTLE_S

        def listed(side: Side) -> None:
            v = min(side.top(3), 12)
            while time.monotonic() < deadline:
                try:
                    md = side.call(3, {"Topics": [{"Name": n, "TopicId": ZERO_UUID} for n in names],
                                       "AllowAutoTopicCreation": False}, version=v)
                except SetupError:
                    return
                if all(t["ErrorCode"] == 0 for t in md["Topics"]):
                    return
                time.sleep(0.1)

        self.both(listed)

    def cleanup(self, side: Side, scope: Scope) -> None:
        """Delete every topic of the scope (its own and any a case made, by auto-creation or
        CreateTopics), until two listings 200 ms apart show none: a topic whose creation timed out
        for its client may still be created after it (Kafka's controller goes on with it)."""
        v = min(side.top(3), 12)
        dv = min(side.top(20), 5)

        def listed() -> list[str]:
            md = side.call(3, {"Topics": None, "AllowAutoTopicCreation": False}, version=v)
            return [t["Name"] for t in md["Topics"] if t["Name"] and t["Name"].startswith(scope.prefix + "-")]

        def step() -> tuple[bool, Any]:
            names = listed()
            if not names:
                time.sleep(0.2)
                names = listed()
                if not names:
                    return True, []
            side.call(20, {"TopicNames": names, "TimeoutMs": 30000}, version=dv, wait=60)
            return False, names[:5]

        side.settle("deleting the scope's topics", step)
        if 48 in side.versions and 49 in side.versions:
            self.cleanup_quotas(side, scope)

    @staticmethod
    def cleanup_quotas(side: Side, scope: Scope) -> None:
        """Remove the client quotas of every entity a case named (the scope's names, and any an earlier
        run left: they all start with ``dt-``, or are the default entity a null name sets): Kafka keeps
        them across runs, a fresh mockbroker has none,
        and an every-entity DescribeClientQuotas would list them on one side only."""
        described = side.call(48, {"Components": [], "Strict": False}, version=min(side.top(48), 1))
        entries = [e for e in described.get("Entries") or ()
                   if all(x.get("EntityName") is None or x["EntityName"].startswith("dt-") for x in e["Entity"])]
        if entries:
            side.call(49, {"Entries": [{"Entity": e["Entity"], "Ops": [
                {"Key": v["Key"], "Value": 0.0, "Remove": True} for v in e["Values"]]} for e in entries],
                "ValidateOnly": False}, version=min(side.top(49), 1))

    # --- reporting -------------------------------------------------------------------------------------
    def classify(self, known: list[Known]) -> None:
        for r in self.results:
            if r.differences and r.known is None:
                for k in known:
                    if k.covers(r):
                        r.known = k.reason
                        break

    def table(self) -> str:
        rows: dict[str, Counter[str]] = {}
        for r in self.results:
            c = rows.setdefault(r.case.api, Counter())
            c["sent"] += 1
            c["identical" if r.same else "different"] += 1
            if not r.same and r.known is not None:
                c["known"] += 1
            closer = r.closes()
            if closer:
                c[f"only {closer} closes"] += 1
        total: Counter[str] = Counter()
        lines = ["| API | sent | identical | different | of them known | only mockbroker closes | only Kafka closes |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
        for api, c in rows.items():
            total.update(c)
            lines.append(f"| {api} | {c['sent']} | {c['identical']} | {c['different']} | {c['known']} | "
                         f"{c['only mockbroker closes']} | {c['only kafka closes']} |")
        pct = 100.0 * total["identical"] / max(total["sent"], 1)
        lines.append(f"| **all** | {total['sent']} | {total['identical']} ({pct:.2f} %) | {total['different']} | "
                     f"{total['known']} | {total['only mockbroker closes']} | {total['only kafka closes']} |")
        return "\n".join(lines)

    def reproducer(self, r: Result) -> str:
        c = r.case
        return f"python -m tests.differential --seed {self.seed} --per-version {self.per_version} --only {c.key}:{c.version}:{c.index}"

    def line(self, r: Result) -> str:
        what = "; ".join(r.case.mutations) or "the valid request"
        first = r.differences[0]
        more = f" (+{len(r.differences) - 1} more)" if len(r.differences) > 1 else ""
        return (f"DIFF {r.case.label} [{what}] {first[0]}: kafka={_brief(first[1])} mockbroker={_brief(first[2])}"
                f"{more} | {self.reproducer(r)}")

    def unknown(self) -> list[Result]:
        return [r for r in self.results if r.differences and r.known is None]


def setup_case(side: Side, case: Case) -> None:
    needs = case.needs
    group = needs.get("group")
    if group is not None:
        kind, name, member, topic = group
        if kind == "classic":
            side.join_classic(name, topic)
        elif kind == "offsets":
            side.commit_offsets(name, topic, {0: 1, 1: 0})
        elif kind == "consumer":
            side.consumer_member(name, member, topic)
        elif kind == "share":
            side.share_member(name, member, topic)
        elif kind == "streams":
            side.streams_member(name, member, topic)
    producer = needs.get("producer")
    if producer is not None:
        kind, tid, topic, group_name = producer
        side.init_producer(tid)
        if kind == "ongoing":
            side.add_partitions(tid, topic, [0])
        elif kind == "offsets":
            side.add_offsets(tid, group_name)
    if "telemetry" in needs:
        side.telemetry(needs["telemetry"])


def compare(k: Outcome, m: Outcome) -> list[tuple[str, Any, Any]]:
    if k.kind != m.kind:
        return [("outcome", str(k), str(m))]
    if k.kind == "answer":
        return diff(k.body, m.body)
    if k.kind in ("undecodable", "setup failed") and k.detail != m.detail:
        return [("outcome", str(k), str(m))]
    return []


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def _brief(v: Any, limit: int = 200) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[:limit] + "..."


def main_report(d: Differential, out: Any = sys.stdout, verbose: bool = False) -> int:
    """Print the differences and the table; 0 when every difference is a known one.  ``verbose``:
    every place each answer differs, and both answers."""
    d.classify(known_differences())
    for r in d.results:
        if r.differences:
            print(("KNOWN " if r.known else "") + d.line(r), file=out)
            if verbose:
                for path, a, b in r.differences:
                    print(f"    {path}: kafka={_brief(a, 1000)} mockbroker={_brief(b, 1000)}", file=out)
                for name, o in r.outcomes.items():
                    print(f"    {name}: {o.kind} {_brief(o.body if o.body is not None else o.detail, 3000)}", file=out)
    for f in d.setup_failures:
        print(f"SETUP FAILED {f}", file=out)
    print(d.table(), file=out)
    return 1 if d.unknown() or d.setup_failures else 0
