"""Writing the report (docs/report.md): the Parquet tables, report.md, and report.html with a plot
per client and run (matplotlib, Agg backend) when matplotlib is installed.

Only the tables' rows are used here (``Report.materialise``: aggregates, sorted).  Runs are kept
apart everywhere: every table row and every plot belongs to one run, named by its start time.
report.html is one self-contained file: its CSS and script inline, its plots PNG data URIs."""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
import os
from collections import defaultdict
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from .job import CLIENT, Report

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
QUOTA_COLOUR = "#d62728"
RATE_COLOUR = "#1f4e9c"
BYTES_COLOUR = "#9ecae1"
THROTTLE_COLOUR = "#fdae6b"
EARLY_COLOUR = "#b71c1c"


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


def _ckey(r: Any) -> tuple[Any, ...]:
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
            out[_ckey(r)].append(r)
        return out


def view(report: Report) -> View:
    rows = report.materialise()
    runs = sorted({r["run"] for rs in rows.values() for r in rs})
    names = run_names(runs)
    qr = defaultdict(list)
    for r in rows["quota_rates"]:
        qr[_ckey(r)].append(r)
    clients = []
    for i, v in enumerate(rows["verdicts"]):
        k = _ckey(v)
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


def _numeric(v: Any) -> bool:
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


def _md_table(rows: list[dict[str, Any]], cols: list[str], names: dict[dt.datetime, str]) -> list[str]:
    if not rows:
        return ["(none)", ""]
    out = ["| run | client | " + " | ".join(label(c) for c in cols) + " |", "|" + "---|" * (len(cols) + 2)]
    for r in rows[:MAX_ROWS]:
        cells = [names[r["run"]], client_label(r), *(fmt(r.get(c), c) for c in cols)]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    if len(rows) > MAX_ROWS:
        out.append(f"\n({len(rows) - MAX_ROWS} more rows in tables/)")
    return out + [""]


def _matrix(v: View, run: dt.datetime) -> tuple[list[str], list[ClientRun], dict[tuple[Any, ...], dict[str, dict[str, Any]]],
                                                list[str]]:
    """The verdict matrix of a run: the throttled APIs (columns), the clients (rows), the cells, the
    APIs never throttled in the run."""
    cells: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = defaultdict(dict)
    apis: set[str] = set()
    throttled: set[str] = set()
    for r in v.rows["api_verdicts"]:
        if r["run"] != run:
            continue
        cells[_ckey(r)][r["api"]] = r
        apis.add(r["api"])
        if r["throttles"]:
            throttled.add(r["api"])
    clients = [c for c in v.clients if c.run == run]
    return sorted(throttled), clients, cells, sorted(apis - throttled)


def _cell_text(r: dict[str, Any] | None) -> str:
    if r is None:
        return ""
    return str(r["verdict"]) + (f" {r['violations_obliged']}/{r['judged']}" if r["judged"] else "")


def render_md(report: Report, v: View, inputs: list[str]) -> str:
    lines = ["# Throttle-conformance report", "",
             f"Input: {', '.join(inputs)}; {report.records:,} records in {len(v.runs)} run(s).  Windowed rates: "
             f"quota.window.num={report.quota_window_num} × quota.window.size.seconds="
             f"{report.quota_window_size_seconds}.", ""]
    lines += ["## Runs", "", "| run | clients | requests |", "|---|---|---|"]
    for run in v.runs:
        cs = [c for c in v.clients if c.run == run]
        lines.append(f"| {v.names[run]} | {len(cs)} | {sum(c.verdict['requests'] for c in cs):,} |")
    lines.append("")
    if report.warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in report.warnings] + [""]
    lines += ["## Verdict matrix", "",
              "Per run, each client's verdict and, per API throttled in the run, the verdict of that API's "
              "throttles (early / judged throttles of versions that oblige the client to back off).", ""]
    for run in v.runs:
        apis, clients, cells, quiet = _matrix(v, run)
        lines += [f"### Run {v.names[run]}", "",
                  "| client | verdict | throttle mode | quotas | plot | " + " | ".join(apis) + (" |" if apis else ""),
                  "|" + "---|" * (5 + len(apis))]
        for c in clients:
            row = [c.label, _cell_text(c.verdict), fmt(c.verdict.get("throttle_modes")),
                   fmt(c.verdict.get("quotas")), f"[{c.plot}]({c.plot})" if c.plot else "",
                   *(_cell_text(cells[c.key].get(a)) for a in apis)]
            lines.append("| " + " | ".join(x.replace("|", "\\|") for x in row) + " |")
        if quiet:
            lines += ["", f"Never throttled in this run: {', '.join(quiet)}."]
        lines.append("")
    for title, name, cols in SECTIONS:
        lines += [f"## {title}", ""]
        if name in SECTION_NOTES:
            lines += [SECTION_NOTES[name], ""]
        lines += _md_table(v.rows[name], cols, v.names)
    plotted = [c for c in v.clients if c.plot]
    if plotted:
        lines += ["## Plots", "",
                  "One per client and run: the bytes each second charged to its byte-rate quota (bars), Kafka's "
                  "windowed rate of them (line) and the quota (dashed); below, the throttle time of each second and "
                  "the requests judged early (triangles).", ""]
        for c in plotted:
            lines += [f"### {v.names[c.run]} · {c.label} · {c.verdict['verdict']}", "", f"![{c.label}]({c.plot})", ""]
    return "\n".join(lines)


# -- plots ------------------------------------------------------------------------------------
def import_plotting() -> bool:
    """Import what the plots use (run early, in a thread of its own); False without matplotlib."""
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
        import matplotlib.ticker  # noqa: F401
    except ImportError:
        return False
    return True


def _plot_one(c: ClientRun, run_name: str, rate: list[dict[str, Any]], windowed: list[dict[str, Any]],
              run_start: dt.datetime) -> bytes:
    """One client's plot in one run (PNG bytes): a panel per byte-rate quota it was charged to (the
    bytes per second, Kafka's windowed rate, the quota), or its bytes (requests) per second without
    one; then, when it was throttled, the throttle ms per second and its requests judged early.
    The x axis is seconds since the run started, so the plots of one run line up."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import EngFormatter, MaxNLocator

    def x(t: dt.datetime) -> float:
        return (t - run_start).total_seconds()

    panels: list[tuple[str, Any]] = []
    by_quota: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in windowed:
        by_quota[r["quota"]][r["broker"]].append(r)
    for quota in ("producer_byte_rate", "consumer_byte_rate"):
        if quota in by_quota:
            panels.append(("quota", (quota, by_quota[quota])))
    if not panels:
        panels.append(("bytes" if any(r["produce_bytes"] or r["fetch_bytes"] for r in rate) else "requests", None))
    if any(r["throttles"] for r in rate):
        panels.append(("throttle", None))
    heights = [1.75 if k != "throttle" else 1.1 for k, _ in panels]
    inches = sum(heights) + 0.45 * len(panels) + 0.85
    fig = Figure(figsize=(8.4, inches), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
    fig.subplots_adjust(left=0.1, right=0.985, top=1 - 0.85 / inches, bottom=0.5 / inches, hspace=0.45)
    v = c.verdict
    title = f"{c.label}\n{run_name}  ·  {v['verdict']}"
    if v["judged"]:
        title += f" ({v['violations_obliged']} of {v['judged']} judged throttles early)"
    fig.suptitle(title, fontsize=9.5, x=0.1, ha="left", y=1 - 0.08 / inches, va="top")
    bytes_fmt = EngFormatter(unit="B/s", sep=" ")
    label_fmt = EngFormatter(unit="B", places=0, sep=" ")
    lo = min((x(r["time"]) for r in rate), default=0.0)
    hi = max((x(r["time"]) + 1 for r in rate), default=1.0)

    def clip(ax: Any, xs: list[float], ys: list[float], top: float) -> None:
        """Bars taller than the axis (a burst): cut at its top, marked with their height."""
        ax.set_ylim(0, top)
        for xi, yi in zip(xs, ys, strict=True):
            if yi > top:
                ax.annotate(label_fmt(yi), (xi + 0.5, top), xytext=(0, -1), textcoords="offset points",
                            ha="center", va="top", fontsize=6, color="#4a6a85", rotation=90)

    for ax, (kind, data) in zip(axes, panels, strict=True):
        ax.grid(axis="y", color="#e6e6e6", linewidth=0.6)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        ax.tick_params(labelsize=8)
        if kind == "quota":
            quota, brokers = data
            several = len(brokers) > 1
            has_bound = any(r["quota_bound"] is not None for rows in brokers.values() for r in rows)
            peak = 0.0
            for i, (broker, rows) in enumerate(sorted(brokers.items())):
                xs = [x(r["time"]) for r in rows]
                suffix = f", broker {broker}" if several else ""
                if not several:
                    ys = [float(r["bytes"]) for r in rows]
                    ax.bar(xs, ys, width=1.0, align="edge", color=BYTES_COLOUR, label="bytes charged per second")
                ax.plot([t + 1 for t in xs], [r["windowed_rate"] for r in rows], color=f"C{i}" if several
                        else RATE_COLOUR, linewidth=1.6, label=f"windowed rate{suffix}")
                bounds = [r["quota_bound"] for r in rows]
                if has_bound:
                    ax.step([*xs, xs[-1] + 1], [*(float("nan") if b is None else b for b in bounds), bounds[-1]
                                                 if bounds[-1] is not None else float("nan")],
                            where="post", color=QUOTA_COLOUR, linestyle="--", linewidth=1.4,
                            label=quota if i == 0 else None)
                peak = max(peak, *(r["windowed_rate"] for r in rows), *(b for b in bounds if b is not None))
                hi, lo = max(hi, xs[-1] + 1), min(lo, xs[0])
            top = peak * 2.2 or 1.0
            if not several:
                (rows,) = brokers.values()
                clip(ax, [x(r["time"]) for r in rows], [float(r["bytes"]) for r in rows], top)
            else:
                ax.set_ylim(0, top)
            ax.set_ylabel("bytes/s", fontsize=8)
            ax.yaxis.set_major_formatter(bytes_fmt)
            what = "Produce request" if quota == "producer_byte_rate" else "Fetch response"
            ax.set_title(f"{what} bytes against {quota}" if has_bound else f"{what} bytes (no {quota} for it)",
                         fontsize=8.5, loc="left")
        elif kind == "bytes":
            xs = [x(r["time"]) for r in rate]
            ax.bar(xs, [r["produce_bytes"] for r in rate], width=1.0, align="edge", color=BYTES_COLOUR,
                   label="Produce request bytes")
            if any(r["fetch_bytes"] for r in rate):
                ax.bar(xs, [r["fetch_bytes"] for r in rate], width=1.0, align="edge", color="#a1d99b",
                       bottom=[r["produce_bytes"] for r in rate], label="Fetch response bytes")
            ax.set_ylim(bottom=0)
            ax.set_ylabel("bytes/s", fontsize=8)
            ax.yaxis.set_major_formatter(bytes_fmt)
            ax.set_title("bytes per second (no byte-rate quota)", fontsize=8.5, loc="left")
        elif kind == "requests":
            ax.bar([x(r["time"]) for r in rate], [r["requests"] for r in rate], width=1.0, align="edge",
                   color=BYTES_COLOUR, label="requests")
            ax.set_ylim(bottom=0)
            ax.set_ylabel("requests/s", fontsize=8)
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_title("requests per second (no Produce or Fetch bytes)", fontsize=8.5, loc="left")
        else:
            xs = [x(r["time"]) for r in rate]
            ax.bar(xs, [r["throttle_ms"] for r in rate], width=1.0, align="edge", color=THROTTLE_COLOUR,
                   label="throttle ms")
            peak_ms = max((r["throttle_ms"] for r in rate), default=0) or 1
            early = [(x(r["time"]) + 0.5, r["early"]) for r in rate if r["early"]]
            if early:
                ax.scatter([e[0] for e in early], [peak_ms * 1.12] * len(early), marker="v",
                           s=[14 + 6 * min(n, 10) for _, n in early], color=EARLY_COLOUR, zorder=3, clip_on=False,
                           label=f"judged early ({sum(n for _, n in early)})")
            ax.set_ylim(0, peak_ms * 1.2)
            ax.set_ylabel("throttle ms", fontsize=8)
            ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=4))
            ax.set_title("throttle time per second; requests judged early", fontsize=8.5, loc="left")
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False, ncols=3,
                  borderaxespad=0.1, handlelength=1.6)
    axes[-1].set_xlim(lo, hi)
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1].set_xlabel(f"seconds since the run started ({run_name})", fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", pil_kwargs={"compress_level": 3})
    return buf.getvalue()


def plots(v: View, out: str) -> list[str]:
    """One PNG per client and run, ``client-<run>-<n>.png`` (both from 1, in the verdict table's
    order); sets each ClientRun's ``plot`` and ``png``."""
    rate = v.by_client("rate")
    windowed = v.by_client("windowed_rate")
    files = []
    run_no = {r: i + 1 for i, r in enumerate(v.runs)}
    count: dict[dt.datetime, int] = defaultdict(int)
    for c in v.clients:
        count[c.run] += 1
        rows = rate.get(c.key, [])
        if not rows:
            continue
        c.png = _plot_one(c, v.names[c.run], rows, windowed.get(c.key, []), c.run)
        c.plot = f"client-{run_no[c.run]}-{count[c.run]}.png"
        path = os.path.join(out, c.plot)
        with open(path, "wb") as f:
            f.write(c.png)
        files.append(path)
    return files


# -- report.html ------------------------------------------------------------------------------
CSS = """
:root{--fg:#1d232a;--muted:#5f6b76;--line:#d9dee3;--bg:#f6f8fa;--accent:#1f4e9c}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
  color:var(--fg);background:#fff}
header{background:#1d2733;color:#fff;padding:18px 0 14px}
header .wrap,main{max-width:1240px;margin:0 auto;padding:0 20px}
header h1{margin:0 0 4px;font-size:22px;font-weight:600}
header p{margin:2px 0;color:#c9d3dd;font-size:13px}
nav{margin-top:10px;font-size:13px}nav a{color:#9cc3ff;margin-right:16px;text-decoration:none}
h2{font-size:18px;margin:28px 0 8px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:15px;margin:18px 0 6px}
p.note{color:var(--muted);font-size:12.5px;margin:4px 0 8px}
table{border-collapse:collapse;font-size:12px;font-variant-numeric:tabular-nums}
th,td{border:1px solid var(--line);padding:3px 6px;vertical-align:top}
th{background:var(--bg);font-weight:600;text-align:left;white-space:normal}
td.num{text-align:right;white-space:nowrap}
td.client{min-width:200px;max-width:280px;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}
.legend{display:flex;flex-wrap:wrap;gap:6px 16px;font-size:12px;margin:6px 0 10px}
.legend span{display:inline-flex;align-items:center;gap:6px}
.chip{display:inline-block;width:14px;height:14px;border-radius:3px;border:1px solid rgba(0,0,0,.15)}
table.matrix td.v{text-align:center;white-space:nowrap;font-weight:500}
table.matrix td.client{min-width:220px}
.badge{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:600;font-size:13px}
details.run>summary{font-size:15px;font-weight:600;margin:16px 0 6px;cursor:pointer}
.client-card{display:grid;grid-template-columns:minmax(0,1fr) 300px;gap:16px;align-items:start;
  border:1px solid var(--line);border-radius:8px;padding:10px 12px;margin:10px 0;background:#fff}
.client-card img{max-width:100%;height:auto;display:block}
.client-card aside h4{margin:2px 0 8px;font-size:13.5px;overflow-wrap:anywhere}
.client-card dl{display:grid;grid-template-columns:auto 1fr;gap:2px 10px;margin:8px 0 0;font-size:12.5px}
.client-card dt{color:var(--muted)}.client-card dd{margin:0;overflow-wrap:anywhere}
details.table{margin:8px 0}details.table>summary{cursor:pointer;font-weight:600;padding:4px 0}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th[aria-sort=ascending]::after{content:" ▲";font-size:9px}
table.sortable th[aria-sort=descending]::after{content:" ▼";font-size:9px}
"""

SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){
    th.addEventListener('click',function(){
      var asc=th.getAttribute('aria-sort')!=='ascending';
      t.querySelectorAll('th').forEach(function(h){h.removeAttribute('aria-sort')});
      th.setAttribute('aria-sort',asc?'ascending':'descending');
      var body=t.tBodies[0],rows=Array.from(body.rows);
      rows.sort(function(a,b){
        var x=a.cells[i].getAttribute('data-v'),y=b.cells[i].getAttribute('data-v');
        var nx=parseFloat(x),ny=parseFloat(y),c;
        if(x!==''&&y!==''&&!isNaN(nx)&&!isNaN(ny)){c=nx-ny}else{c=(x||'').localeCompare(y||'')}
        return asc?c:-c});
      rows.forEach(function(r){body.appendChild(r)});
    });
  });
});
"""


def _e(s: Any) -> str:
    return html.escape(str(s), quote=True)


def _chip(verdict: str) -> str:
    return f"<span class='chip' style='background:{VERDICT_COLOURS.get(verdict, '#fff')}'></span>"


def _legend() -> str:
    return "<div class='legend'>" + "".join(
        f"<span title='{_e(VERDICT_MEANING[k])}'>{_chip(k)}{_e(k)}</span>" for k in VERDICT_COLOURS) + "</div>"


def _text_colour(verdict: str) -> str:
    return "#fff" if verdict in ("honours", "ignores") else "#1d232a"


def _vcell(r: dict[str, Any] | None, tag: str = "td") -> str:
    if r is None:
        return f"<{tag} class='v'></{tag}>"
    verdict = r["verdict"]
    return (f"<{tag} class='v' data-v='{_e(verdict)}' style='background:{VERDICT_COLOURS.get(verdict, '#fff')};"
            f"color:{_text_colour(verdict)}' title='{_e(VERDICT_MEANING.get(verdict, ''))}'>{_e(_cell_text(r))}"
            f"</{tag}>")


def _breakable(text: str) -> str:
    """Escaped, with line-break opportunities after ``=``, ``_`` and ``,`` (``producer_byte_rate=40000``
    wraps in a narrow column instead of widening the table)."""
    return _e(text).replace("=", "=<wbr>").replace("_", "_<wbr>").replace(",", ",<wbr>")


def _html_table(rows: list[dict[str, Any]], cols: list[str], names: dict[dt.datetime, str], tid: str) -> str:
    if not rows:
        return "<p class='note'>(none)</p>"
    head = "<th data-col='client'>client · run</th>" + "".join(
        f"<th data-col='{_e(c)}'>{_e(label(c)).replace('determined', 'deter&shy;mined')}</th>" for c in cols)
    body = []
    for r in rows[:MAX_ROWS]:
        cells = [f"<td class='client' data-v='{_e(client_label(r))}'>{_e(client_label(r))}"
                 f"<br><small style='color:#5f6b76'>{_e(names[r['run']])}</small></td>"]
        for c in cols:
            val = r.get(c)
            num = _numeric(val)
            sort = val if num else fmt(val, c)
            style = ""
            if c == "verdict":
                style = f" style='background:{VERDICT_COLOURS.get(str(val), '#fff')};color:{_text_colour(str(val))}'"
            text = _e(fmt(val, c)) if num else _breakable(fmt(val, c))
            cells.append(f"<td{' class=num' if num else ''} data-v='{_e(sort)}'{style}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = (f"<p class='note'>{len(rows) - MAX_ROWS} more rows in tables/</p>" if len(rows) > MAX_ROWS else "")
    return (f"<div class='scroll'><table id='{_e(tid)}' class='sortable'><thead><tr>{head}</tr></thead><tbody>"
            + "".join(body) + "</tbody></table></div>" + more)


def _card(c: ClientRun, names: dict[dt.datetime, str]) -> str:
    v = c.verdict
    verdict = v["verdict"]
    items = [("throttles", v["throttles"]), ("judged", v["judged"]), ("early", v["violations_obliged"]),
             ("worst early", f"{v['worst_early_ms']:.0f} ms" if v.get("worst_early_ms") is not None else ""),
             ("early, versions", fmt(v.get("versions_early"))), ("throttle mode", fmt(v.get("throttle_modes"))),
             ("quota entity", fmt(v.get("quota_entities"))), ("quotas", fmt(v.get("quotas"))),
             ("requests", f"{v['requests']:,}")]
    for q in c.quota_rates:
        items.append((f"windowed rate{'' if len(c.quota_rates) == 1 else ', broker ' + str(q['broker'])}",
                      f"mean {fmt(q['mean_windowed_rate'])} B/s, peak {fmt(q['peak_windowed_rate'])} B/s "
                      f"({fmt(q['mean_over_quota'], 'mean_over_quota')} × {q['quota']})"))
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(val)}</dd>" for k, val in items if val not in ("", None))
    img = (f"<img class='client-plot' alt='{_e(c.label)}: rates against the quota, throttles and early requests' "
           f"src='data:image/png;base64,{base64.b64encode(c.png).decode()}' data-file='{_e(c.plot)}'>"
           if c.png else "<p class='note'>(no plot: matplotlib is not installed)</p>")
    return (f"<article class='client-card' data-client='{_e(c.label)}' data-run='{_e(names[c.run])}'>"
            f"<div>{img}</div><aside><h4>{_e(c.label)}</h4>"
            f"<span class='badge verdict' style='background:{VERDICT_COLOURS.get(verdict, '#fff')};"
            f"color:{_text_colour(verdict)}'>{_e(verdict)}</span><dl>{dl}</dl></aside></article>")


def render_html(report: Report, v: View, inputs: list[str]) -> str:
    n_runs = len(v.runs)
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>"
             "<meta name='viewport' content='width=device-width,initial-scale=1'>"
             "<title>Throttle-conformance report</title><style>" + CSS + "</style></head><body>",
             "<header><div class='wrap'><h1>Throttle-conformance report</h1>"
             f"<p>{report.records:,} records in {n_runs} run{'s' if n_runs != 1 else ''} "
             f"({_e(', '.join(v.names[r] for r in v.runs))}); windowed rates with quota.window.num="
             f"{report.quota_window_num} × quota.window.size.seconds={report.quota_window_size_seconds}</p>"
             f"<p>Input: {_e(', '.join(inputs))}</p>"
             "<nav><a href='#matrix'>Verdict matrix</a><a href='#quotas'>Quotas and rates</a>"
             "<a href='#clients'>Clients</a><a href='#details'>Detail tables</a></nav></div></header><main>"]
    if report.warnings:
        parts.append("<h2>Warnings</h2><ul>" + "".join(f"<li>{_e(w)}</li>" for w in report.warnings) + "</ul>")
    parts.append("<h2 id='matrix'>Verdict matrix</h2><p class='note'>Per run: each client's verdict, the throttle "
                 "mode and quotas, and per API throttled in the run the verdict of that API's throttles (early / "
                 "judged throttles of versions that oblige the client to back off).</p>" + _legend())
    for i, run in enumerate(v.runs):
        apis, clients, cells, quiet = _matrix(v, run)
        head = ("<th>client</th><th>verdict</th><th>throttle mode</th><th>quotas</th>"
                + "".join(f"<th>{_e(a)}</th>" for a in apis))
        rows = []
        for c in clients:
            rows.append(f"<tr><td class='client'><a href='#c-{i}-{clients.index(c)}'>{_e(c.label)}</a></td>"
                        + _vcell(c.verdict) + f"<td>{_e(fmt(c.verdict.get('throttle_modes')))}</td>"
                        f"<td>{_e(fmt(c.verdict.get('quotas')))}</td>"
                        + "".join(_vcell(cells[c.key].get(a)) for a in apis) + "</tr>")
        parts.append(f"<h3>Run {_e(v.names[run])}</h3><div class='scroll'><table class='matrix' id='matrix-{i + 1}'>"
                     f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
                     + (f"<p class='note'>Never throttled in this run: {_e(', '.join(quiet))}.</p>" if quiet else ""))
    title, name, cols = SECTIONS[1]
    parts.append(f"<h2 id='quotas'>{_e(title)}</h2><p class='note'>{_e(SECTION_NOTES[name])}</p>"
                 + _html_table(v.rows[name], cols, v.names, name))
    parts.append("<h2 id='clients'>Clients</h2><p class='note'>Per run and client: the bytes each second charged to "
                 "its byte-rate quota (bars), Kafka's windowed rate of them (line) and the quota (dashed); below, the "
                 "throttle time of each second and the requests judged early (triangles).</p>")
    for i, run in enumerate(v.runs):
        clients = [c for c in v.clients if c.run == run]
        cards = "".join(f"<div id='c-{i}-{j}'>{_card(c, v.names)}</div>" for j, c in enumerate(clients))
        parts.append(f"<details class='run' open><summary>Run {_e(v.names[run])} · {len(clients)} clients</summary>"
                     f"{cards}</details>")
    parts.append("<h2 id='details'>Detail tables</h2><p class='note'>Click a heading to sort; the Parquet tables "
                 "in tables/ have every row.</p>")
    for title, name, cols in SECTIONS:
        if name == "quota_rates":
            continue
        note = f"<p class='note'>{_e(SECTION_NOTES[name])}</p>" if name in SECTION_NOTES else ""
        parts.append(f"<details class='table'{' open' if name == 'verdicts' else ''}><summary>{_e(title)} "
                     f"({len(v.rows[name])} rows)</summary>{note}{_html_table(v.rows[name], cols, v.names, name)}"
                     "</details>")
    parts.append("</main><script>" + SCRIPT + "</script></body></html>")
    return "\n".join(parts)


# -- writing ----------------------------------------------------------------------------------
def write_parquet(report: Report, out: str) -> None:
    """One Parquet file per table, ``tables/<name>/part-00000-*.parquet``, its rows sorted."""
    for name, df in report.tables.items():
        df.write.mode("overwrite").parquet(os.path.join(out, "tables", name))


def write(report: Report, out: str, inputs: list[str],
          stage: Callable[[str], AbstractContextManager[Any]] | None = None) -> list[str]:
    """Write everything into ``out``; returns the files written (besides the Parquet tables).
    The Parquet tables are written by Spark from a second thread while this one draws the plots
    (matplotlib's Agg canvas, no pyplot: safe beside another thread).  Without matplotlib: no plots."""
    stage = stage or (lambda name: nullcontext())
    os.makedirs(out, exist_ok=True)
    v = view(report)
    images: list[str] = []
    with stage("writing the tables and plots"):
        from pyspark import InheritableThread  # the job group (progress.py) goes with it
        failed: list[BaseException] = []

        def tables() -> None:
            try:
                write_parquet(report, out)
            except BaseException as e:  # noqa: BLE001 - raised in the calling thread below
                failed.append(e)
        writer = InheritableThread(target=tables, name="report-parquet")
        writer.start()
        try:
            if import_plotting():
                images = plots(v, out)
        finally:
            writer.join()
        if failed:
            raise failed[0]
    with stage("writing report.md and report.html"):
        page = os.path.join(out, "report.html")
        with open(page, "w", encoding="utf-8") as f:
            f.write(render_html(report, v, inputs))
        md = os.path.join(out, "report.md")
        with open(md, "w", encoding="utf-8") as f:
            f.write(render_md(report, v, inputs))
    return [md, page, *images]
