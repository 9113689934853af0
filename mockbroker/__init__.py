"""mockbroker: a Kafka-compatible broker in Python that throttles, waits and runs
short of memory as Kafka does.

    from mockbroker import MockBroker
    with MockBroker(config={"num.partitions": 3}) as broker:
        ... broker.bootstrap_servers ...

The names below are imported on first use (PEP 562), so that importing a submodule
(the pytest plugin, the CLI's ``--version``) does not load the broker and its codecs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .common.clock import ManualClock, SystemClock
    from .config.broker_config import BrokerConfig, ConfigError
    from .runner import MockBroker

_LAZY = {
    "BrokerConfig": ".config",
    "ConfigError": ".config",
    "ManualClock": ".common.clock",
    "MockBroker": ".runner",
    "SystemClock": ".common.clock",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mockbroker' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
