"""mockbroker: a Kafka-compatible broker in Python that throttles, waits and runs
short of memory as Kafka does.

    from mockbroker import MockBroker
    with MockBroker(config={"num.partitions": 3}) as broker:
        ... broker.bootstrap_servers ...
"""

from .clock import ManualClock, SystemClock
from .config import BrokerConfig, ConfigError
from .runner import MockBroker

__all__ = ["BrokerConfig", "ConfigError", "ManualClock", "MockBroker", "SystemClock"]
