"""ListGroups (key 16): v0-5.

Behavior: the groups this broker coordinates (Kafka asks every broker and
merges), with their protocol type ("" for a group that only stores offsets),
state (v4+) and type (v5+: "classic", or "consumer" for KIP-848 groups, whose
states are Empty, Assigning, Reconciling and Stable).  Both filters are
case-insensitive.

Version notes:
* v1 throttle.  v2 clients back off.  v3 flexible.  v4 states filter and state.
* v5 types filter and group type (KIP-848).
"""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey
from ..request import RequestContext

API_KEY = ApiKey.LIST_GROUPS


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    states = {s.lower() for s in getattr(req, "states_filter", ()) or ()}
    types = {t.lower() for t in getattr(req, "types_filter", ()) or ()}
    groups = []
    for g in ctx.broker.groups.list_groups(ctx.node_id):
        group_type = getattr(g, "group_type", "classic")
        if (states and g.state.value.lower() not in states) or (types and group_type not in types):
            continue
        groups.append({"group_id": g.group_id, "protocol_type": g.protocol_type or "",
                       "group_state": g.state.value, "group_type": group_type})
    return {"error_code": ErrorCode.none, "groups": groups}
