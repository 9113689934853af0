"""report.html (docs/report.md): one self-contained page, its CSS and script inline and its plots PNG data
URIs: a coloured verdict matrix per run with a legend, each client's plot with its verdict beside it,
sortable and collapsible detail tables."""

from __future__ import annotations

import base64
import datetime as dt
import html
from typing import Any

from .job import Report
from .views import (MAX_ROWS, SECTION_NOTES, SECTIONS, VERDICT_COLOURS, VERDICT_MEANING, ClientRun, View, cell_text,
                    client_label, fmt, label, matrix, numeric)

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
            f"color:{_text_colour(verdict)}' title='{_e(VERDICT_MEANING.get(verdict, ''))}'>{_e(cell_text(r))}"
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
            num = numeric(val)
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
        apis, clients, cells, quiet = matrix(v, run)
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


