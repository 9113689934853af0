"""The admin listener (``mock.admin.listener``): the control plane over HTTP, and ``/metrics``.

Imported only when the listener is configured, so a broker without it never
loads the HTTP stack (aiohttp, prometheus-client).
"""

from __future__ import annotations

from ..cluster import Cluster
from ..config.broker_config import parse_host_port
from ..control import ControlPlane
from .http import AdminServer


def add_admin(cluster: Cluster, control: ControlPlane) -> AdminServer:
    """The admin API on ``mock.admin.listener``, as a front end of ``cluster`` (started and
    stopped with it)."""
    host, port = parse_host_port(cluster.config["mock.admin.listener"])
    server = AdminServer(cluster, control, host, port)
    cluster.front_ends.append(server)
    return server
