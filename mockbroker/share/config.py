"""The share group configs in force for a group: Kafka 4.4's ``ShareGroupConfigProvider`` and
``GroupConfigManager``.

A group's own value (set with IncrementalAlterConfigs on the GROUP resource, kept by the config
catalogue) stands; without one the broker's (``group.share.*``: mockbroker's configuration, or
Kafka's default) does.  Read at each use, so an alteration takes effect on the next lock, delivery or
heartbeat, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..server.config_catalog import ConfigCatalog

# group config -> the broker config that is its default (GroupConfig's synonyms)
BROKER_DEFAULTS = {
    "share.record.lock.duration.ms": "group.share.record.lock.duration.ms",
    "share.delivery.count.limit": "group.share.delivery.count.limit",
    "share.partition.max.record.locks": "group.share.partition.max.record.locks",
    "share.session.timeout.ms": "group.share.session.timeout.ms",
    "share.heartbeat.interval.ms": "group.share.heartbeat.interval.ms",
    "share.assignment.interval.ms": "group.share.assignment.interval.ms",
}
# GroupConfig's defaults of the share configs without a broker synonym
GROUP_DEFAULTS = {
    "share.auto.offset.reset": "latest",
    "share.isolation.level": "read_uncommitted",
    "share.renew.acknowledge.enable": "true",
}


class ShareGroupConfigs:
    """``group_configs(group_id)``: the group's explicit configs (strings); ``broker_value(name)``: a
    broker config's value in force (a string)."""

    def __init__(self, group_configs: Callable[[str], Mapping[str, str]],
                 broker_value: Callable[[str], str | None]) -> None:
        self._group = group_configs
        self._broker = broker_value

    def _raw(self, group_id: str, name: str) -> str:
        value = self._group(group_id).get(name)
        if value is not None:
            return value
        broker_key = BROKER_DEFAULTS.get(name)
        if broker_key is not None:
            v = self._broker(broker_key)
            if v is not None:
                return v
        return GROUP_DEFAULTS[name]

    def _int(self, group_id: str, name: str) -> int:
        return int(self._raw(group_id, name))

    def record_lock_duration_ms(self, group_id: str) -> int:
        return self._int(group_id, "share.record.lock.duration.ms")

    def delivery_count_limit(self, group_id: str) -> int:
        return self._int(group_id, "share.delivery.count.limit")

    def max_record_locks(self, group_id: str) -> int:
        return self._int(group_id, "share.partition.max.record.locks")

    def session_timeout_ms(self, group_id: str) -> int:
        return self._int(group_id, "share.session.timeout.ms")

    def assignment_interval_ms(self, group_id: str) -> int:
        return self._int(group_id, "share.assignment.interval.ms")

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self._int(group_id, "share.heartbeat.interval.ms")

    def auto_offset_reset(self, group_id: str) -> str:
        return self._raw(group_id, "share.auto.offset.reset")

    def read_committed(self, group_id: str) -> bool:
        return self._raw(group_id, "share.isolation.level").strip().lower() == "read_committed"

    def renew_enabled(self, group_id: str) -> bool:
        return self._raw(group_id, "share.renew.acknowledge.enable").strip().lower() == "true"

    def broker_int(self, name: str, default: int) -> int:
        v = self._broker(name)
        return int(v) if v is not None else default


def share_group_configs(catalog: ConfigCatalog, node_id: int) -> ShareGroupConfigs:
    """The share group configs as broker ``node_id`` reads them: the group's (the config catalogue's
    GROUP resources), else the broker's value in force there."""
    return ShareGroupConfigs(lambda group_id: catalog.groups.get(group_id, {}),
                             lambda name: catalog.broker_value(node_id, name))
