"""The broker's configuration under Kafka's own names: every key Kafka 4.4 accepts, with its type,
default, validator and documentation (``config_defs``, from Kafka's recorded ``ConfigDef``), and the
loaded configuration every simulated broker shares (``broker_config``: ``BrokerConfig``, Kafka's
``KafkaConfig``; TOML, environment, ``-c key=value``; unknown keys refused).

Imports: ``common/``, ``security/`` (ACL and TLS settings), ``quota/`` (quota specs), nothing above.
``from mockbroker.config import BrokerConfig, ConfigError`` works as it did before the folder.
"""

from .broker_config import BrokerConfig, ConfigError

__all__ = ["BrokerConfig", "ConfigError"]
