"""The admin listener (``mock.admin.listener``): the control plane over HTTP, and ``/metrics``.

Imported only when the listener is configured, so a broker without it never
loads the HTTP stack (aiohttp, prometheus-client).
"""

from __future__ import annotations

from ..cluster import Cluster
from ..config import parse_host_port
from ..control import ControlPlane
from .http import AdminServer


async def start_admin(cluster: Cluster, control: ControlPlane) -> AdminServer:
    host, port = parse_host_port(cluster.config["mock.admin.listener"])
    server = AdminServer(cluster, control, host, port)
    await server.start()
    return server
