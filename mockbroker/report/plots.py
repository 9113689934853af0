"""The report's plots (docs/report.md): one PNG per client and run, drawn with matplotlib's Agg canvas
(no pyplot, so safe beside another thread) when matplotlib is installed."""

from __future__ import annotations

import datetime as dt
import io
import os
from collections import defaultdict
from typing import Any

from .views import ClientRun, View

QUOTA_COLOUR = "#d62728"
RATE_COLOUR = "#1f4e9c"
BYTES_COLOUR = "#9ecae1"
THROTTLE_COLOUR = "#fdae6b"
EARLY_COLOUR = "#b71c1c"


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


