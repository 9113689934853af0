"""Writing the report (docs/report.md): Parquet tables, report.md, and report.html with PNG plots
(matplotlib, Agg backend) when matplotlib is installed.  Only aggregates are collected here."""

from __future__ import annotations

import html
import os
from collections import defaultdict
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


def render_md(report: Report, data: dict[str, list[dict[str, Any]]], inputs: list[str]) -> str:
    lines = ["# Throttle-conformance report", "",
             f"Input: {', '.join(inputs)}; {report.records} records.", ""]
    if report.warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in report.warnings] + [""]
    for title, name, cols in SECTIONS:
        lines += [f"## {title}", ""]
        lines += _md_table(data[name], ["run", "client", *cols]) if data[name] else ["(none)", ""]
    return "\n".join(lines)


def _with_client(data: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    return {k: [{**r, "client": _client(r)} for r in rows] for k, rows in data.items()}


def plots(report: Report, out: str) -> list[str]:
    """One PNG per client: byte rate against producer_byte_rate; throttle time and early requests."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rate = defaultdict(list)
    for r in report.tables["rate"].orderBy("second").limit(100_000).collect():
        rate[_client(r.asDict())].append(r)
    early = defaultdict(list)
    for r in report.tables["early_over_time"].orderBy("second").limit(100_000).collect():
        early[_client(r.asDict())].append(r)
    files = []
    for i, (client, rows) in enumerate(sorted(rate.items())):
        fig, (a, b) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
        t0 = rows[0].second
        a.plot([r.second - t0 for r in rows], [r.request_bytes for r in rows], label="request bytes/s")
        quota = [r.producer_byte_rate for r in rows]
        if any(q is not None for q in quota):
            a.plot([r.second - t0 for r in rows], quota, "r--", label="producer_byte_rate")
        a.set_title(client)
        a.legend(loc="upper right")
        e = early.get(client, [])
        b.bar([r.second - t0 for r in e], [r.throttle_ms for r in e], label="throttle ms")
        b.plot([r.second - t0 for r in e], [r.early for r in e], "k.", label="early requests")
        b.set_xlabel("s")
        b.legend(loc="upper right")
        path = os.path.join(out, f"client-{i}.png")
        fig.savefig(path)
        plt.close(fig)
        files.append(path)
    return files


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
    parts += [f"<p><img src='{html.escape(os.path.basename(p))}'></p>" for p in images]
    return "\n".join(parts + ["</body></html>"])


def write(report: Report, out: str, inputs: list[str]) -> list[str]:
    """Write everything into ``out``; returns the files written (besides the Parquet tables)."""
    os.makedirs(out, exist_ok=True)
    write_parquet(report, out)
    data = _with_client(collect(report))
    written = [os.path.join(out, "report.md")]
    with open(written[0], "w", encoding="utf-8") as f:
        f.write(render_md(report, data, inputs))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return written
    images = plots(report, out)
    with open(os.path.join(out, "report.html"), "w", encoding="utf-8") as f:
        f.write(render_html(data, images))
    return [*written, os.path.join(out, "report.html"), *images]
