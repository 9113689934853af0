"""One module per API, named by key like franz-go's kfake (``00_produce.go``).

Each module has ``API_KEY`` and ``handle(ctx, request)`` (the contract is in
``mockbroker/request.py``); its docstring opens with the served versions,
then Behavior (including what differs from Kafka) and Version notes.
``build_handlers`` makes the table per broker instance.
"""

from __future__ import annotations

from dataclasses import fields
from functools import cache
from importlib import import_module
from types import ModuleType
from typing import Any

from protocol.codec import response_class
from protocol.errors import ErrorCode
from protocol.registry import schema_versions

from ..request import ErrorResponder, Handler, RequestContext, Response

# Every handler module, in key order, named once (tests/unit/test_handlers_contract.py checks that
# each pNN_*.py file is here and that no key is served twice).
NAMES = (
    "p00_produce",
    "p01_fetch",
    "p02_list_offsets",
    "p03_metadata",
    "p08_offset_commit",
    "p09_offset_fetch",
    "p10_find_coordinator",
    "p11_join_group",
    "p12_heartbeat",
    "p13_leave_group",
    "p14_sync_group",
    "p15_describe_groups",
    "p16_list_groups",
    "p17_sasl_handshake",
    "p18_api_versions",
    "p19_create_topics",
    "p20_delete_topics",
    "p21_delete_records",
    "p22_init_producer_id",
    "p23_offset_for_leader_epoch",
    "p24_add_partitions_to_txn",
    "p25_add_offsets_to_txn",
    "p26_end_txn",
    "p27_write_txn_markers",
    "p28_txn_offset_commit",
    "p29_describe_acls",
    "p30_create_acls",
    "p31_delete_acls",
    "p32_describe_configs",
    "p33_alter_configs",
    "p34_alter_replica_log_dirs",
    "p35_describe_log_dirs",
    "p36_sasl_authenticate",
    "p37_create_partitions",
    "p38_create_delegation_token",
    "p39_renew_delegation_token",
    "p40_expire_delegation_token",
    "p41_describe_delegation_token",
    "p42_delete_groups",
    "p43_elect_leaders",
    "p44_incremental_alter_configs",
    "p45_alter_partition_reassignments",
    "p46_list_partition_reassignments",
    "p47_offset_delete",
    "p48_describe_client_quotas",
    "p49_alter_client_quotas",
    "p50_describe_user_scram_credentials",
    "p51_alter_user_scram_credentials",
    "p55_describe_quorum",
    "p57_update_features",
    "p60_describe_cluster",
    "p61_describe_producers",
    "p64_unregister_broker",
    "p65_describe_transactions",
    "p66_list_transactions",
    "p68_consumer_group_heartbeat",
    "p69_consumer_group_describe",
    "p71_get_telemetry_subscriptions",
    "p72_push_telemetry",
    "p74_list_config_resources",
    "p75_describe_topic_partitions",
    "p76_share_group_heartbeat",
    "p77_share_group_describe",
    "p78_share_fetch",
    "p79_share_acknowledge",
    "p80_add_raft_voter",
    "p81_remove_raft_voter",
    "p88_streams_group_heartbeat",
    "p89_streams_group_describe",
    "p90_describe_share_group_offsets",
    "p91_alter_share_group_offsets",
    "p92_delete_share_group_offsets",
    "p93_streams_group_topology_description_update",
    "p94_unregister_controller",
)
MODULES: tuple[ModuleType, ...] = tuple(import_module(f"{__name__}.{name}") for name in NAMES)


def build_handlers() -> dict[int, Handler]:
    """API key -> handler, in key order (a new dict per broker: nothing shared between brokers)."""
    return {int(m.API_KEY): m.handle for m in sorted(MODULES, key=lambda m: int(m.API_KEY))}


def _top_level_error(ctx: RequestContext, req: Any, error: ErrorCode) -> Response:
    """The default error response: the API's top-level error code (JoinGroup, Heartbeat, ...)."""
    return Response({"error_code": error})


def _has_top_level_error(api_key: int) -> bool:
    return all(any(f.name == "error_code" for f in fields(response_class(api_key, v)))
               for v in schema_versions(api_key))


def _module(api_key: int) -> ModuleType | None:
    return next((m for m in MODULES if int(m.API_KEY) == api_key), None)


@cache
def error_responder(api_key: int) -> ErrorResponder | None:
    """How an API answers an injected error when its handler does not serve partitions apart
    (``HANDLES_INJECTED_ERRORS``: those see ``ctx.injected`` themselves, and get None): the
    module's ``error_response``, else its top-level error code.  Looked up when a rule first fires
    (the top-level check reads every version's schema)."""
    m = _module(api_key)
    if m is None or getattr(m, "HANDLES_INJECTED_ERRORS", False):
        return None
    if hasattr(m, "error_response"):
        responder: ErrorResponder = m.error_response
        return responder
    return _top_level_error if _has_top_level_error(api_key) else None


def handles_injected_errors(api_key: int) -> bool:
    m = _module(api_key)
    return m is not None and bool(getattr(m, "HANDLES_INJECTED_ERRORS", False))


def supports_error_injection(api_key: int) -> bool:
    """Whether an error rule for this API can be answered (checked when the rule is added)."""
    return handles_injected_errors(api_key) or error_responder(api_key) is not None
