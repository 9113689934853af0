"""Writing the report (docs/report.md): the Parquet tables, report.md, and report.html (html.py) with a
plot per client and run (plots.py) when matplotlib is installed.

Only the tables' rows are used here (``Report.materialise``: aggregates, sorted).  Runs are kept
apart everywhere: every table row and every plot belongs to one run, named by its start time
(views.py)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from .html import render_html
from .job import Report
from .plots import import_plotting, plots
from .views import MAX_ROWS, SECTION_NOTES, SECTIONS, View, cell_text, client_label, fmt, label, matrix, view


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
        apis, clients, cells, quiet = matrix(v, run)
        lines += [f"### Run {v.names[run]}", "",
                  "| client | verdict | throttle mode | quotas | plot | " + " | ".join(apis) + (" |" if apis else ""),
                  "|" + "---|" * (5 + len(apis))]
        for c in clients:
            row = [c.label, cell_text(c.verdict), fmt(c.verdict.get("throttle_modes")),
                   fmt(c.verdict.get("quotas")), f"[{c.plot}]({c.plot})" if c.plot else "",
                   *(cell_text(cells[c.key].get(a)) for a in apis)]
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

