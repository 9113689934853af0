"""One module per API, named by key like franz-go's kfake (``00_produce.go``).

Each module has ``API_KEY`` and ``handle(ctx, request)`` (the contract is in
``mockbroker/request.py``); its docstring opens with the served versions,
then Behavior (including what differs from Kafka) and Version notes.
``build_handlers`` makes the table per broker instance; a module is imported on its
key's first request (``handler_module``), not at start-up.
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

# Every handler module, in key order, named once (tests/unit/apis/test_handlers_contract.py checks that
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
# API key -> its module's name: "p03_metadata" serves key 3.  A module is imported when its key's
# first request comes (or an error rule for it is added), not at start-up: a run that never sends
# DescribeAcls never loads its handler (bench/startup.py measures what that saves).
_NAME_BY_KEY: dict[int, str] = {int(name[1:3]): name for name in NAMES}


@cache
def handler_module(api_key: int) -> ModuleType | None:
    """The handler module of ``api_key`` (imported on first use), None for a key not served."""
    name = _NAME_BY_KEY.get(api_key)
    return None if name is None else import_module(f"{__name__}.{name}")


def all_modules() -> tuple[ModuleType, ...]:
    """Every handler module, imported, in key order (the contract tests and the API docs read them all)."""
    return tuple(m for m in map(handler_module, sorted(_NAME_BY_KEY)) if m is not None)


def build_handlers() -> dict[int, Handler]:
    """API key -> handler, in key order (a new dict per broker: nothing shared between brokers).
    Each entry loads its module on the first request and then replaces itself with the module's
    ``handle``."""
    handlers: dict[int, Handler] = {}
    for key in sorted(_NAME_BY_KEY):
        handlers[key] = _loader(handlers, key)
    return handlers


def _loader(handlers: dict[int, Handler], api_key: int) -> Handler:
    def first_request(ctx: RequestContext, req: Any) -> Any:
        handle: Handler = import_module(f"{__name__}.{_NAME_BY_KEY[api_key]}").handle
        handlers[api_key] = handle
        return handle(ctx, req)

    return first_request


def _top_level_error(ctx: RequestContext, req: Any, error: ErrorCode) -> Response:
    """The default error response: the API's top-level error code (JoinGroup, Heartbeat, ...)."""
    return Response({"error_code": error})


def _has_top_level_error(api_key: int) -> bool:
    return all(any(f.name == "error_code" for f in fields(response_class(api_key, v)))
               for v in schema_versions(api_key))


@cache
def error_responder(api_key: int) -> ErrorResponder | None:
    """How an API answers an injected error when its handler does not serve partitions apart
    (``HANDLES_INJECTED_ERRORS``: those see ``ctx.injected`` themselves, and get None): the
    module's ``error_response``, else its top-level error code.  Looked up when a rule first fires
    (the top-level check reads every version's schema)."""
    m = handler_module(api_key)
    if m is None or getattr(m, "HANDLES_INJECTED_ERRORS", False):
        return None
    if hasattr(m, "error_response"):
        responder: ErrorResponder = m.error_response
        return responder
    return _top_level_error if _has_top_level_error(api_key) else None


def handles_injected_errors(api_key: int) -> bool:
    m = handler_module(api_key)
    return m is not None and bool(getattr(m, "HANDLES_INJECTED_ERRORS", False))


def supports_error_injection(api_key: int) -> bool:
    """Whether an error rule for this API can be answered (checked when the rule is added)."""
    return handles_injected_errors(api_key) or error_responder(api_key) is not None
