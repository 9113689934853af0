"""ListGroups (key 16): v0-5.

Behavior: the groups this broker coordinates (Kafka asks every broker and
merges), with their protocol type ("" for a group that only stores offsets),
state (v4+) and type (v5+, always "classic": KIP-848 groups are not served).
The states filter (v4) is case-insensitive; the types filter (v5) keeps
"classic" only when asked.

Version notes:
* v1 throttle.  v2 clients back off.  v3 flexible.  v4 states filter and state.
* v5 types filter and group type (KIP-848).
"""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

API_KEY = ApiKey.LIST_GROUPS


def handle(ctx: Any, req: Any) -> dict:
    states = {s.lower() for s in getattr(req, "states_filter", ()) or ()}
    types = {t.lower() for t in getattr(req, "types_filter", ()) or ()}
    groups = []
    if not types or "classic" in types:
        for g in ctx.broker.runtime.groups.list_groups(ctx.node_id):
            if states and g.state.value.lower() not in states:
                continue
            groups.append({"group_id": g.group_id, "protocol_type": g.protocol_type or "",
                           "group_state": g.state.value, "group_type": "classic"})
    return {"error_code": ErrorCode.none, "groups": groups}
