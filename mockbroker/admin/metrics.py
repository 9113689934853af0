"""``/metrics``: placeholder until the Prometheus collector lands."""

from __future__ import annotations

from ..cluster import Cluster


def render_metrics(cluster: Cluster) -> tuple[bytes, str]:
    return b"", "text/plain; version=0.0.4; charset=utf-8"
