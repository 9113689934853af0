"""One module per API, named by key like franz-go's kfake (``00_produce.go``).

Each module has ``API_KEY`` and ``handle(ctx, request)`` (the contract is in
``mockbroker/request.py``); its docstring opens with the served versions,
then Behavior (including what differs from Kafka) and Version notes.
``build_handlers`` makes the table per broker instance.
"""

from __future__ import annotations

from types import ModuleType

from ..request import Handler
from . import (
    p00_produce,
    p01_fetch,
    p02_list_offsets,
    p03_metadata,
    p08_offset_commit,
    p09_offset_fetch,
    p10_find_coordinator,
    p11_join_group,
    p12_heartbeat,
    p13_leave_group,
    p14_sync_group,
    p15_describe_groups,
    p16_list_groups,
    p17_sasl_handshake,
    p18_api_versions,
    p19_create_topics,
    p20_delete_topics,
    p22_init_producer_id,
    p23_offset_for_leader_epoch,
    p32_describe_configs,
    p36_sasl_authenticate,
    p42_delete_groups,
    p48_describe_client_quotas,
    p49_alter_client_quotas,
    p60_describe_cluster,
    p68_consumer_group_heartbeat,
    p69_consumer_group_describe,
)

MODULES: tuple[ModuleType, ...] = (
    p00_produce,
    p01_fetch,
    p02_list_offsets,
    p03_metadata,
    p08_offset_commit,
    p09_offset_fetch,
    p10_find_coordinator,
    p11_join_group,
    p12_heartbeat,
    p13_leave_group,
    p14_sync_group,
    p15_describe_groups,
    p16_list_groups,
    p17_sasl_handshake,
    p18_api_versions,
    p19_create_topics,
    p20_delete_topics,
    p22_init_producer_id,
    p23_offset_for_leader_epoch,
    p32_describe_configs,
    p36_sasl_authenticate,
    p42_delete_groups,
    p48_describe_client_quotas,
    p49_alter_client_quotas,
    p60_describe_cluster,
    p68_consumer_group_heartbeat,
    p69_consumer_group_describe,
)


def build_handlers() -> dict[int, Handler]:
    """API key -> handler, in key order (a new dict per broker: nothing shared between brokers)."""
    return {int(m.API_KEY): m.handle for m in sorted(MODULES, key=lambda m: int(m.API_KEY))}
