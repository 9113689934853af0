"""What the report shows, shared by report.md, report.html and the plots (docs/report.md): the rows of
every table as dicts, the runs (named by their start time) and the clients per run, how values are
formatted, the tables' sections and each run's verdict matrix."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .job import Report
from .reading import CLIENT

#: Rows of a table shown in report.md / report.html (the Parquet tables have them all).
MAX_ROWS = 200

#: Colours of the verdicts (the matrix's cells, the plots' titles, the badges).
VERDICT_COLOURS = {"honours": "#4caf50", "partly": "#ff9800", "ignores": "#e53935", "not throttled": "#e0e0e0",
                   "no judged throttles": "#b0bec5", "undetermined": "#90a4ae"}
VERDICT_MEANING = {"honours": "no judged throttle followed by an early request",
                   "partly": "some judged throttles followed by an early request",
                   "ignores": "early after at least 90% of the judged throttles",
                   "not throttled": "no throttled response",
                   "no judged throttles": "throttled, but none judged (no next request, pipelined, delay mode, "
                                          "or versions that do not oblige the client)",
                   "undetermined": "throttled in mute mode, the journal without the broker's after_throttle"}


# -- runs and clients -------------------------------------------------------------------------
def run_names(runs: Iterable[dt.datetime]) -> dict[dt.datetime, str]:
    """Each run's name: its start time (UTC) to the second, to the millisecond where two runs
    start in the same second."""
    runs = sorted(set(runs))
    seconds = defaultdict(list)
    for r in runs:
        seconds[r.strftime("%Y-%m-%d %H:%M:%S")].append(r)
    out = {}
    for s, rs in seconds.items():
        for r in rs:
            out[r] = f"{s}.{r.microsecond // 1000:03d} UTC" if len(rs) > 1 else f"{s} UTC"
    return out


def client_label(r: Any) -> str:
    d = r if isinstance(r, dict) else r.asDict()
    return (f"{d['client_software_name']} {d['client_software_version']} / {d['client_id'] or '(none)'} / "
            f"{d['principal']}")


def ckey(r: Any) -> tuple[Any, ...]:
    return (r["run"], *(r[c] for c in CLIENT))


@dataclass
class ClientRun:
    """One client in one run: its verdict row and what its plot shows."""
    run: dt.datetime
    key: tuple[Any, ...]
    label: str
    verdict: dict[str, Any]
    quota_rates: list[dict[str, Any]] = field(default_factory=list)
    plot: str | None = None   # the PNG's file name
    png: bytes | None = None


@dataclass
class View:
    """The rows of every table as dicts, the runs and their names, the clients per run."""
    rows: dict[str, list[dict[str, Any]]]
    runs: list[dt.datetime]
    names: dict[dt.datetime, str]
    clients: list[ClientRun]

    def by_client(self, table: str) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
        out: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
        for r in self.rows[table]:
            out[ckey(r)].append(r)
        return out


def view(report: Report) -> View:
    rows = report.materialise()
    runs = sorted({r["run"] for rs in rows.values() for r in rs})
    names = run_names(runs)
    qr = defaultdict(list)
    for r in rows["quota_rates"]:
        qr[ckey(r)].append(r)
    clients = []
    for i, v in enumerate(rows["verdicts"]):
        k = ckey(v)
        clients.append(ClientRun(v["run"], k, client_label(v), v, qr.get(k, [])))
    return View(rows, runs, names, clients)


# -- formatting -------------------------------------------------------------------------------
#: Column headings (the tables' column names otherwise).
LABELS = {"violations_obliged": "early (obliged)", "violations_not_obliged": "early (not obliged)",
          "worst_early_ms": "worst early ms", "versions_early": "versions early", "throttle_modes": "throttle mode",
          "quota_entities": "quota entity", "api_version": "version", "request_bytes": "request bytes",
          "response_bytes": "response bytes", "throttle_ms_total": "throttle ms", "client_throttles": "obliged",
          "throttle_mode": "mode", "quota_type": "quota", "with_next": "with next", "avg_gap_ms": "avg gap ms",
          "min_gap_ms": "min gap ms", "avg_gap_minus_throttle_ms": "avg gap − throttle ms",
          "avg_max_wait_ms": "avg max wait ms", "max_max_wait_ms": "max max wait ms", "avg_min_bytes": "avg min bytes",
          "avg_parked_ms": "avg parked ms", "max_parked_ms": "max parked ms", "timed_out": "timed out",
          "error_code": "error code", "quota_bound": "quota B/s", "mean_windowed_rate": "mean windowed B/s",
          "peak_windowed_rate": "peak windowed B/s", "mean_over_quota": "mean / quota",
          "seconds_above_quota": "seconds above quota", "quota_user": "entity user",
          "quota_client_id": "entity client-id"}


def label(col: str) -> str:
    return LABELS.get(col, col.replace("_", " "))


def fmt(v: Any, col: str = "") -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if col == "mean_over_quota":
            return f"{v:.2f}"
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.1f}"
    if isinstance(v, int) and col not in ("broker", "api_version", "error_code"):
        return f"{v:,}"
    if isinstance(v, list):
        return ", ".join(map(str, v))
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    return str(v)


def numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# -- the tables of report.md and report.html --------------------------------------------------
SECTIONS: list[tuple[str, str, list[str]]] = [
    ("Verdicts", "verdicts", ["verdict", "throttle_modes", "quota_entities", "quotas", "requests", "throttles",
                              "judged", "violations_obliged", "violations_not_obliged", "undetermined", "pipelined",
                              "worst_early_ms", "versions_early"]),
    ("Quotas and the windowed rates achieved", "quota_rates", [
        "broker", "quota_user", "quota_client_id", "quota", "quota_bound", "mean_windowed_rate",
        "peak_windowed_rate", "mean_over_quota", "seconds_above_quota", "seconds", "bytes"]),
    ("Verdicts per client and API", "api_verdicts", ["api", "verdict", "requests", "throttles", "judged",
                                                      "violations_obliged", "violations_not_obliged",
                                                      "worst_early_ms", "versions_early"]),
    ("Requests per API and version", "requests", ["api", "api_version", "requests", "request_bytes",
                                                  "response_bytes", "errors", "throttled", "throttle_ms_total"]),
    ("Error codes", "error_codes", ["api", "api_version", "error_code", "count"]),
    ("Throttles and the next request", "throttles", [
        "api", "api_version", "client_throttles", "throttle_mode", "quota_type", "throttles", "with_next",
        "pipelined", "judged", "early", "undetermined", "avg_gap_ms", "min_gap_ms", "avg_gap_minus_throttle_ms",
        "worst_early_ms"]),
    ("Long-poll fetch", "long_poll", ["api_version", "fetches", "avg_max_wait_ms", "max_max_wait_ms",
                                      "avg_min_bytes", "parked", "avg_parked_ms", "max_parked_ms", "timed_out"]),
    ("acks=all produce", "acks_all", ["api_version", "produces", "parked", "avg_parked_ms", "max_parked_ms",
                                      "timed_out"]),
    ("Connections", "connections", ["connections", "brokers", "bootstrap", "reconnects"]),
]
SECTION_NOTES = {
    "quota_rates": "Kafka's windowed rate of each byte-rate quota sensor (per broker and quota entity), "
                   "quota.window.num × quota.window.size.seconds, at the end of every second from the "
                   "client's first to its last charged request.",
    "long_poll": "parked: the fetches that waited in the Fetch purgatory (not those answered at once).",
    "acks_all": "parked: the produces that waited in the Produce purgatory for their acks.",
    "connections": "bootstrap: opened before the client's first Metadata response (to a bootstrap address); "
                   "reconnects: connections to a broker after the first (not bootstrap) one.",
}




def matrix(v: View, run: dt.datetime) -> tuple[list[str], list[ClientRun], dict[tuple[Any, ...], dict[str, dict[str, Any]]],
                                                list[str]]:
    """The verdict matrix of a run: the throttled APIs (columns), the clients (rows), the cells, the
    APIs never throttled in the run."""
    cells: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = defaultdict(dict)
    apis: set[str] = set()
    throttled: set[str] = set()
    for r in v.rows["api_verdicts"]:
        if r["run"] != run:
            continue
        cells[ckey(r)][r["api"]] = r
        apis.add(r["api"])
        if r["throttles"]:
            throttled.add(r["api"])
    clients = [c for c in v.clients if c.run == run]
    return sorted(throttled), clients, cells, sorted(apis - throttled)


def cell_text(r: dict[str, Any] | None) -> str:
    if r is None:
        return ""
    return str(r["verdict"]) + (f" {r['violations_obliged']}/{r['judged']}" if r["judged"] else "")


