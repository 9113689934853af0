"""``mockbroker admin --url URL ...``: the admin HTTP API from a shell.

Human-readable tables by default, ``--json`` for scripts.  Standard library only
(urllib), so it works wherever the broker's package is installed.

    mockbroker admin --url http://127.0.0.1:9644 status
    mockbroker admin --url URL quota set --client-id app producer_byte_rate=100000
    mockbroker admin --url URL quota get
    mockbroker admin --url URL quota delete --client-id app
    mockbroker admin --url URL inject --api Produce --errors NOT_LEADER_OR_FOLLOWER,NOT_LEADER_OR_FOLLOWER
    mockbroker admin --url URL inject --api Fetch --action hold
    mockbroker admin --url URL release [--rule 2]
    mockbroker admin --url URL faults [--delete 2 | --clear]
    mockbroker admin --url URL journal [--api Produce] [--client-id app] [--limit 20] [--follow]
    mockbroker admin --url URL transactions

When the broker sets ``mock.admin.token``, pass it with ``--token TOKEN`` or in the
environment as ``MOCKBROKER_MOCK_ADMIN_TOKEN`` (the variable that also sets it for
``mockbroker serve``); it is sent as ``Authorization: Bearer TOKEN``.

Exit codes: 0 done, 1 the API refused (its error is printed), 2 wrong command line, 3 no
answer from the URL.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any, TextIO


class ApiError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        super().__init__(body.get("error") if isinstance(body, dict) else str(body))
        self.status = status
        self.body = body


class Unreachable(Exception):
    pass


TOKEN_ENV = "MOCKBROKER_MOCK_ADMIN_TOKEN"  # mock.admin.token's environment variable


class AdminClient:
    def __init__(self, url: str, timeout: float = 10.0, token: str | None = None) -> None:
        self.url = url.rstrip("/")
        if "://" not in self.url:
            self.url = "http://" + self.url
        self.timeout = timeout
        self.token = token

    def request(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None) -> Any:
        # Imported here, not at the top: cli.py imports this module for its parser, so urllib.request
        # (http.client, email: ~30 ms) would otherwise be in every ``mockbroker serve`` start.
        from urllib.error import HTTPError, URLError
        from urllib.request import Request, urlopen

        q = {k: v for k, v in (query or {}).items() if v is not None}
        url = self.url + path + ("?" + urllib.parse.urlencode(q) if q else "")
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = Request(url, data=data, method=method, headers=headers)
        try:
            with urlopen(req, timeout=self.timeout) as r:
                raw = r.read()
        except HTTPError as e:
            raw = e.read()
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = raw.decode(errors="replace")
            raise ApiError(e.code, payload) from None
        except (URLError, OSError) as e:
            raise Unreachable(f"no answer from {self.url}: {getattr(e, 'reason', e)}") from None
        return json.loads(raw) if raw else None


# -- output -------------------------------------------------------------------------------------

def table(rows: Sequence[Sequence[Any]], head: Sequence[str], out: TextIO) -> None:
    cells = [[str(h) for h in head]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    for n, r in enumerate(cells):
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")
        if n == 0:
            out.write("  ".join("-" * w for w in widths) + "\n")


def show_status(s: dict[str, Any], out: TextIO) -> None:
    clock = s["clock"]
    out.write(f"cluster {s['cluster_id']}  controller {s['controller_id']}  clock {clock['mode']} "
              f"({clock['monotonic_ms']} ms)\n\n")
    table([(b["id"], f"{b['host']}:{b['port']}", "up" if b["alive"] else "down", b["connections"])
           for b in s["brokers"]], ["broker", "address", "state", "connections"], out)
    out.write("\n")
    table([(t["name"], t["partitions"], t["replication_factor"]) for t in s["topics"]],
          ["topic", "partitions", "replication"], out)
    out.write("\n")
    if s["groups"]:
        table([(g["group_id"], g["type"], g["state"], g["members"]) for g in s["groups"]],
              ["group", "type", "state", "members"], out)
        out.write("\n")
    muted = ", ".join(f"{k} {v}" for k, v in sorted(s["muted_connections"].items())) or "none"
    out.write(f"connections {s['connections']} (muted: {muted})  throttled responses {s['throttle_events']}  "
              f"journal records {s['journal_records']}"
              + (f" (on disk {s['journal_written']}, dropped {s['journal_dropped']})"
                 if s.get("journal_written") is not None else "")
              + f"  fault rules {s['fault_rules']}  "
              f"held requests {s['held_requests']}\n")


def show_quotas(rows: list[dict[str, Any]], out: TextIO) -> None:
    table([(q["entity"]["user"], q["entity"]["client_id"],
            ", ".join(f"{k}={v:g}" for k, v in q["values"].items())) for q in rows],
          ["user", "client_id", "quotas"], out)


def show_faults(rows: list[dict[str, Any]], out: TextIO) -> None:
    def matched(r: dict[str, Any]) -> str:
        m = r["match"]
        parts = [f"{k}={m[k]}" for k in ("api", "broker", "client_id", "topic", "partition") if m.get(k) is not None]
        if m.get("min_version") is not None:
            parts.append(f"v{m['min_version']}-{m['max_version']}")
        return " ".join(parts) or "any"

    def what(r: dict[str, Any]) -> str:
        if r["action"] == "error":
            return "error " + ",".join(e["error"] for e in r["errors"])
        if r["action"] == "delay":
            return f"delay {r['delay_ms']} ms"
        return str(r["action"]) + (" after" if r["after"] else "")

    table([(r["id"], matched(r), what(r), "always" if r["count"] is None else r["count"], r["fired"])
           for r in rows], ["rule", "match", "action", "left", "fired"], out)


def show_transactions(rows: list[dict[str, Any]], out: TextIO) -> None:
    table([(t["transactional_id"], t["state"] + (f" -> {t['pending_state']}" if t.get("pending_state") else ""),
            t["producer_id"], t["producer_epoch"], t["coordinator"],
            " ".join(f"{topic}-{p}" for topic, p in t["partitions"]) or "-") for t in rows],
          ["transactional_id", "state", "producer_id", "epoch", "coordinator", "partitions"], out)


def journal_line(r: dict[str, Any]) -> str:
    errors = [f"{p['topic']}-{p['partition']}:{p['error_code']}" for p in r.get("partitions", []) if p["error_code"]]
    top = r.get("error_code")
    return (f"{r['received_clock_ns'] / 1e6:.3f} b{r['broker']} c{r['connection']} {r['client_id'] or '-'} "
            f"{r['api']} v{r['api_version']} #{r['correlation_id']} {r['outcome']}"
            + (f" throttle={r['throttle_time_ms']}ms" if r.get("throttle_time_ms") else "")
            + (f" parked={r['parked_ms']:.1f}ms" if r.get("parked_ms") else "")
            + (f" error={top}" if top else "") + (f" errors={' '.join(errors)}" if errors else "")
            + (f" rule={r['fault_rule']}" if r.get("fault_rule") else ""))


# -- commands -------------------------------------------------------------------------------------

def _values(items: list[str]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"{item!r} is not key=value (value 'null' removes the quota)")
        out[key] = None if value in ("null", "") else float(value)
    return out


def _rule(args: argparse.Namespace) -> dict[str, Any]:
    if args.rule:
        return dict(json.loads(args.rule))
    rule: dict[str, Any] = {}
    for name in ("api", "action", "versions", "client_id", "topic"):
        if getattr(args, name) is not None:
            rule[name] = getattr(args, name)
    for name in ("broker", "partition", "delay_ms"):
        if getattr(args, name) is not None:
            rule[name] = getattr(args, name)
    if args.errors:
        rule["errors"] = [e.strip() for e in args.errors.split(",") if e.strip()]
    if args.after:
        rule["after"] = True
    if args.persistent:
        rule["count"] = None
    elif args.count is not None:
        rule["count"] = args.count
    return rule


def follow_journal(client: AdminClient, args: argparse.Namespace, out: TextIO,
                   sleep: Callable[[float], None] = time.sleep, max_polls: int | None = None) -> None:
    """Print new journal records as they come (``tail -f``), polling every ``--interval`` seconds."""
    seen: set[tuple[int, int, int, int]] = set()
    since_ms: int | None = None
    polls = 0
    while max_polls is None or polls < max_polls:
        polls += 1
        rows = client.request("GET", "/journal", query={"api": args.api, "client_id": args.client_id,
                                                        "since_ms": since_ms})
        for r in rows:
            key = (r["broker"], r["connection"], r["correlation_id"], r["received_clock_ns"])
            if key in seen:
                continue
            seen.add(key)
            out.write((json.dumps(r) if args.json else journal_line(r)) + "\n")
        out.flush()
        if rows:
            since_ms = max(r["received_clock_ns"] for r in rows) // 1_000_000
            seen = {k for k in seen if k[3] // 1_000_000 >= since_ms}
        sleep(args.interval)


def _parser_with(parent: argparse.ArgumentParser) -> type[argparse.ArgumentParser]:
    """An ArgumentParser class whose parsers all take ``parent``'s options (for add_subparsers)."""

    class Parser(argparse.ArgumentParser):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["parents"] = [*kwargs.get("parents", ()), parent]
            super().__init__(*args, **kwargs)

    return Parser


def build_parser(sub: Any) -> None:
    json_help = "print the API's JSON instead of tables"
    a = sub.add_parser("admin", help="steer and observe a running broker through its admin API")
    a.add_argument("--url", required=True, help="the admin listener, e.g. http://127.0.0.1:9644")
    a.add_argument("--json", action="store_true", help=json_help)
    a.add_argument("--token", help=f"the broker's mock.admin.token (default: ${TOKEN_ENV})")
    # --json is also taken after the subcommand (`admin --url URL status --json`); SUPPRESS keeps a
    # subcommand that was not given it from resetting the one given before the subcommand
    after = argparse.ArgumentParser(add_help=False)
    after.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=json_help)
    cmd = a.add_subparsers(dest="admin_command", required=True, parser_class=_parser_with(after))
    cmd.add_parser("status", help="brokers, topics, groups, connections, throttles at a glance")
    q = cmd.add_parser("quota", help="client quotas (as Describe/AlterClientQuotas)")
    qs = q.add_subparsers(dest="quota_command", required=True, parser_class=_parser_with(after))
    for name in ("get", "set", "delete"):
        p = qs.add_parser(name)
        p.add_argument("--user")
        p.add_argument("--client-id", dest="client_id")
        if name == "set":
            p.add_argument("values", nargs="+", metavar="KEY=VALUE",
                           help="producer_byte_rate=..., consumer_byte_rate=..., request_percentage=..., "
                                "request_rate=..., controller_mutation_rate=... (null removes)")
        if name == "delete":
            p.add_argument("--key", help="one quota key (default: all of the entity's)")
    i = cmd.add_parser("inject", help="add a fault rule")
    i.add_argument("--rule", help="the whole rule as JSON (as POST /faults takes it)")
    i.add_argument("--api")
    i.add_argument("--errors", help="error codes, comma-separated: one per matching request")
    i.add_argument("--action", choices=["error", "delay", "hold", "drop", "close"])
    i.add_argument("--delay-ms", dest="delay_ms", type=int)
    i.add_argument("--after", action="store_true", help="drop/close after the request took effect")
    i.add_argument("--count", type=int)
    i.add_argument("--persistent", action="store_true", help="never used up")
    i.add_argument("--versions")
    i.add_argument("--broker", type=int)
    i.add_argument("--client-id", dest="client_id")
    i.add_argument("--topic")
    i.add_argument("--partition", type=int)
    r = cmd.add_parser("release", help="let held requests go on")
    r.add_argument("--rule", type=int)
    f = cmd.add_parser("faults", help="list the fault rules (or remove them)")
    g = f.add_mutually_exclusive_group()
    g.add_argument("--delete", type=int, metavar="RULE")
    g.add_argument("--clear", action="store_true")
    cmd.add_parser("transactions", help="every transactional id: state, producer id and epoch, partitions")
    j = cmd.add_parser("journal", help="the request journal")
    j.add_argument("--api")
    j.add_argument("--client-id", dest="client_id")
    j.add_argument("--limit", type=int)
    j.add_argument("--follow", action="store_true", help="keep printing new records (Ctrl-C stops)")
    j.add_argument("--interval", type=float, default=0.5, help="--follow's poll interval in seconds")


def run(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    client = AdminClient(args.url, token=args.token or os.environ.get(TOKEN_ENV) or None)
    try:
        return _run(client, args, out)
    except ApiError as e:
        detail = e.body if isinstance(e.body, dict) else {"error": e.body}
        field = f" ({detail.get('field')})" if detail.get("field") else ""
        err.write(f"mockbroker admin: {e.status}: {detail.get('error')}{field}\n")
        return 1
    except Unreachable as e:
        err.write(f"mockbroker admin: {e}\n")
        return 3
    except (argparse.ArgumentTypeError, ValueError) as e:
        err.write(f"mockbroker admin: {e}\n")
        return 2
    except KeyboardInterrupt:
        return 0


def _run(client: AdminClient, args: argparse.Namespace, out: TextIO) -> int:
    c = args.admin_command

    def emit(data: Any, human: Callable[[Any, TextIO], object]) -> int:
        if args.json:
            out.write(json.dumps(data, indent=1) + "\n")
        else:
            human(data, out)
        return 0

    if c == "status":
        return emit(client.request("GET", "/status"), show_status)
    if c == "quota":
        entity = {"user": args.user, "client_id": args.client_id}
        if args.quota_command == "get":
            return emit(client.request("GET", "/quotas", query=entity), show_quotas)
        if args.quota_command == "set":
            return emit(client.request("PUT", "/quotas", {**entity, "values": _values(args.values)}),
                        lambda q, o: show_quotas([q], o))
        client.request("DELETE", "/quotas", query={**entity, "key": args.key})
        return 0
    if c == "inject":
        return emit(client.request("POST", "/faults", _rule(args)), lambda r, o: show_faults([r], o))
    if c == "release":
        body = {"rule": args.rule} if args.rule is not None else None
        return emit(client.request("POST", "/faults/release", body), lambda r, o: o.write(
            f"released {r['released']} request(s)\n"))
    if c == "faults":
        if args.delete is not None:
            client.request("DELETE", f"/faults/{args.delete}")
            return 0
        if args.clear:
            client.request("DELETE", "/faults")
            return 0
        return emit(client.request("GET", "/faults"), show_faults)
    if c == "transactions":
        return emit(client.request("GET", "/transactions"), show_transactions)
    if c == "journal":
        if args.follow:
            follow_journal(client, args, out)
            return 0
        rows = client.request("GET", "/journal", query={"api": args.api, "client_id": args.client_id,
                                                        "limit": args.limit})
        return emit(rows, lambda rs, o: [o.write(journal_line(r) + "\n") for r in rs] and None)
    raise ValueError(f"unknown command {c}")
