"""Writing the report (docs/report.md): Parquet tables, report.md, and report.html with PNG plots
(matplotlib, Agg backend) when matplotlib is installed.  Only aggregates are collected here."""

from __future__ import annotations

import html
import os
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from .job import CLIENT, Report

#: Rows of a table shown in report.md / report.html (the Parquet tables have them all).
MAX_ROWS = 200


def write_parquet(report: Report, out: str) -> None:
    for name, df in report.tables.items():
        df.write.mode("overwrite").partitionBy("run", "client_id").parquet(os.path.join(out, "tables", name))


def _rows(report: Report, name: str, order: list[str]) -> list[dict[str, Any]]:
    return [r.asDict() for r in report.tables[name].orderBy(*order).limit(MAX_ROWS).collect()]


def _client(r: dict[str, Any]) -> str:
    return f"{r['client_software_name']} {r['client_software_version']} / {r['client_id'] or '(none)'} / {r['principal']}"


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.1f}"
    if isinstance(v, list):
        return ", ".join(map(str, v))
    return str(v)


def _md_table(rows: list[dict[str, Any]], cols: list[str]) -> list[str]:
    if not rows:
        return ["(none)", ""]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(_fmt(r.get(c)).replace("|", "\\|") for c in cols) + " |")
    return out + [""]


SECTIONS: list[tuple[str, str, list[str]]] = [
    ("Verdicts", "verdicts", ["verdict", "requests", "throttles", "judged", "violations_obliged",
                              "violations_not_obliged", "undetermined", "pipelined", "worst_early_ms",
                              "versions_early"]),
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
    ("Connections", "connections", ["connections", "brokers", "reconnects"]),
]


def collect(report: Report) -> dict[str, list[dict[str, Any]]]:
    key = ["run", *CLIENT]
    return {name: _rows(report, name, key + [c for c in cols[:2] if c in ("api", "api_version", "error_code")])
            for _, name, cols in SECTIONS}


def render_md(report: Report, data: dict[str, list[dict[str, Any]]], inputs: list[str],
              images: Sequence[str] = ()) -> str:
    lines = ["# Throttle-conformance report", "",
             f"Input: {', '.join(inputs)}; {report.records} records.", ""]
    if report.warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in report.warnings] + [""]
    for title, name, cols in SECTIONS:
        lines += [f"## {title}", ""]
        lines += _md_table(data[name], ["run", "client", *cols]) if data[name] else ["(none)", ""]
    if images:
        lines += ["## Plots", ""] + [f"![{os.path.basename(p)}]({os.path.basename(p)})" for p in images] + [""]
    return "\n".join(lines)


def _with_client(data: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    return {k: [{**r, "client": _client(r)} for r in rows] for k, rows in data.items()}


#: Colours of the verdicts in the client x API matrix.
VERDICT_COLOURS = {"honours": "#4caf50", "partly": "#ff9800", "ignores": "#e53935", "not throttled": "#e0e0e0",
                   "no judged throttles": "#b0bec5", "undetermined": "#90a4ae"}
MATRIX_PNG = "verdict-matrix.png"


def _pyplot() -> Any:
    import matplotlib
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
    return plt


def _per_second(rows: list[Any], t0: int, n: int, field: str, carry: bool = False) -> list[float]:
    """``field`` of the per-second rows as a dense series over seconds t0 .. t0+n-1: a second with
    no row is 0 (a rate), or the value before it (``carry``: the quota in force)."""
    out: list[float] = [0.0] * n
    for r in rows:
        v = getattr(r, field)
        out[r.second - t0] = float("nan") if v is None else float(v)
    if carry:
        seen = {r.second - t0 for r in rows}
        for i in range(1, n):
            if i not in seen:
                out[i] = out[i - 1]
    return out


def client_plots(report: Report, out: str) -> list[str]:
    """One PNG per client, per second of the run: the byte rates against the quotas in force
    (producer_byte_rate and consumer_byte_rate dashed), then throttle time and early requests."""
    plt = _pyplot()
    rate = defaultdict(list)
    for r in report.tables["rate"].orderBy("second").limit(100_000).collect():
        rate[_client(r.asDict())].append(r)
    early = defaultdict(list)
    for r in report.tables["early_over_time"].orderBy("second").limit(100_000).collect():
        early[_client(r.asDict())].append(r)
    files = []
    for i, (client, rows) in enumerate(sorted(rate.items())):
        fig, (a, b) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
        t0, n = rows[0].second, rows[-1].second - rows[0].second + 1
        edges = list(range(n + 1))  # second k of the run is the interval [k, k+1)
        a.stairs(_per_second(rows, t0, n, "request_bytes"), edges, color="C0", baseline=None,
                 label="request bytes/s")
        if any(r.producer_byte_rate is not None for r in rows):
            a.stairs(_per_second(rows, t0, n, "producer_byte_rate", carry=True), edges, color="r",
                     baseline=None, linestyle="--", linewidth=2, label="producer_byte_rate")
        if any(r.consumer_byte_rate is not None for r in rows):
            a.stairs(_per_second(rows, t0, n, "response_bytes"), edges, color="C2", baseline=None,
                     label="response bytes/s")
            a.stairs(_per_second(rows, t0, n, "consumer_byte_rate", carry=True), edges, color="m",
                     baseline=None, linestyle="--", linewidth=2, label="consumer_byte_rate")
        a.set_ylim(bottom=0)
        a.set_title(client)
        a.set_ylabel("bytes/s")
        a.legend(loc="upper right")
        e = [r for r in early.get(client, []) if 0 <= r.second - t0 < n]
        b.stairs(_per_second(e, t0, n, "throttle_ms"), edges, fill=True, color="C1", alpha=0.6,
                 label="throttle ms (sum)")
        b.set_ylim(bottom=0)
        b.set_ylabel("throttle ms")
        b.set_xlabel("s since the client's first request")
        c = b.twinx()  # early requests are counts: their own axis
        c.stairs(_per_second(e, t0, n, "early"), edges, color="k", baseline=None, linewidth=2,
                 label="early requests")
        c.set_ylim(bottom=0)
        c.set_ylabel("early requests")
        handles = [*b.get_legend_handles_labels()[0], *c.get_legend_handles_labels()[0]]
        c.legend(handles=handles, loc="upper right")
        path = os.path.join(out, f"client-{i}.png")
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
        files.append(path)
    return files


def matrix_plot(rows: list[dict[str, Any]], out: str) -> str | None:
    """The client x API matrix of verdicts (table api_verdicts): one coloured cell per client and
    API, labelled with the verdict and early/judged."""
    if not rows:
        return None
    plt = _pyplot()
    from matplotlib.patches import Patch
    clients = sorted({r["client"] for r in rows})
    apis = sorted({r["api"] for r in rows})
    cell = {(r["client"], r["api"]): r for r in rows}
    fig, ax = plt.subplots(figsize=(2.2 + 1.6 * len(apis), 1.2 + 0.5 * len(clients)))
    for y, c in enumerate(clients):
        for x, a in enumerate(apis):
            r = cell.get((c, a))
            colour = VERDICT_COLOURS.get(r["verdict"], "#ffffff") if r else "#ffffff"
            ax.add_patch(plt.Rectangle((x, y), 1, 1, facecolor=colour, edgecolor="white"))
            if r:
                label = r["verdict"] + (f"\n{r['violations_obliged']}/{r['judged']} early" if r["judged"] else "")
                ax.text(x + 0.5, y + 0.5, label, ha="center", va="center", fontsize=7)
    ax.set_xlim(0, len(apis))
    ax.set_ylim(len(clients), 0)
    ax.set_xticks([x + 0.5 for x in range(len(apis))], apis, fontsize=8)
    ax.set_yticks([y + 0.5 for y in range(len(clients))], clients, fontsize=7)
    ax.set_title("Verdicts per client and API (early / judged throttles of obliging versions)", fontsize=9)
    ax.legend(handles=[Patch(color=v, label=k) for k, v in VERDICT_COLOURS.items()], fontsize=7,
              loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path = os.path.join(out, MATRIX_PNG)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path


def render_html(md_data: dict[str, list[dict[str, Any]]], images: list[str]) -> str:
    parts = [("<!doctype html><html><head><meta charset='utf-8'><title>Throttle-conformance report</title>"
              "<style>table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px}</style></head><body>"),
             "<h1>Throttle-conformance report</h1>"]
    for title, name, cols in SECTIONS:
        cols = ["run", "client", *cols]
        parts.append(f"<h2>{html.escape(title)}</h2><table id='{name}'><tr>"
                     + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>")
        for r in md_data[name]:
            parts.append("<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c)))}</td>" for c in cols) + "</tr>")
        parts.append("</table>")
    for p in images:
        name = os.path.basename(p)
        attrs = ("id='verdict-matrix' alt='client x API matrix of verdicts'" if name == MATRIX_PNG
                 else "class='client-plot' alt='rates against the quota; throttles and early requests'")
        parts.append(f"<p><img {attrs} src='{html.escape(name)}'></p>")
    return "\n".join(parts + ["</body></html>"])


def write(report: Report, out: str, inputs: list[str]) -> list[str]:
    """Write everything into ``out``; returns the files written (besides the Parquet tables).
    Without matplotlib: the tables and report.md only."""
    os.makedirs(out, exist_ok=True)
    write_parquet(report, out)
    data = _with_client(collect(report))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        images: list[str] = []
        html_files: list[str] = []
    else:
        matrix = matrix_plot(data["api_verdicts"], out)
        images = ([matrix] if matrix else []) + client_plots(report, out)
        html_files = [os.path.join(out, "report.html")]
        with open(html_files[0], "w", encoding="utf-8") as f:
            f.write(render_html(data, images))
    md = os.path.join(out, "report.md")
    with open(md, "w", encoding="utf-8") as f:
        f.write(render_md(report, data, inputs, images))
    return [md, *html_files, *images]
