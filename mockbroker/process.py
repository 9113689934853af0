"""What one mockbroker runs, in a process (``mockbroker serve``) or on a thread (``MockBroker``):
the ``Cluster``, its ``ControlPlane`` and, when ``mock.admin.listener`` is set, the admin HTTP API.
Both entry points start and stop it the same way."""

from __future__ import annotations

from typing import Any

from .clock import Clock
from .cluster import Cluster
from .config import BrokerConfig
from .control import ControlPlane


class BrokerProcess:
    def __init__(self, config: BrokerConfig, clock: Clock | None = None, host: str | None = None,
                 port: int | None = None) -> None:
        self.cluster = Cluster(config, clock, host, port)
        self.control = ControlPlane(self.cluster)
        self.admin: Any = None  # admin.http.AdminServer once started

    async def start(self) -> None:
        await self.cluster.start()
        if self.cluster.config["mock.admin.listener"]:
            from .admin import start_admin  # the HTTP stack only when asked for

            try:
                self.admin = await start_admin(self.cluster, self.control)
            except BaseException:
                await self.cluster.stop()
                raise

    async def stop(self) -> None:
        if self.admin is not None:
            await self.admin.stop()
            self.admin = None
        await self.cluster.stop()

    @property
    def admin_address(self) -> str | None:
        return self.admin.address if self.admin is not None else None

    def ready_line(self) -> str:
        line = f"mockbroker ready bootstrap={self.cluster.bootstrap_servers()}"
        if self.admin is not None:
            line += f" admin={self.admin.address}"
        return line
