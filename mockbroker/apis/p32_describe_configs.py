"""DescribeConfigs (key 32): v1-4.

Behavior:
* Topic resources (type 2): every topic config Kafka reports, with the value
  in force and its source (1 topic override, 4 static broker config, 5
  default); unknown topic -> UNKNOWN_TOPIC_OR_PARTITION.
* Broker resources (type 4): this broker's configuration under Kafka's names
  (``mock.*`` knobs are not Kafka's and are left out); the name must be this
  broker's id (or empty), else INVALID_REQUEST.  Static configs are read-only.
* Broker loggers (type 8): empty.  Other types: INVALID_REQUEST.
* ``configuration_keys`` null means all; unknown keys are simply absent.
* Synonyms (when asked): the value's own source entry; documentation null.

Version notes:
* v1 synonyms, config source.  v2 clients back off.  v3 config type, documentation.  v4 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..config import CONFIG_DEF
from ..metadata import TOPIC_CONFIGS
from ..request import RequestContext, Response
from .common import first_error

if TYPE_CHECKING:
    from protocol.request_types import DescribeConfigsRequest

API_KEY = ApiKey.DESCRIBE_CONFIGS
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
# ConfigEntry.ConfigType
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST = 1, 2, 3, 4, 5, 6, 7


def _type_of(value: Any) -> int:
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return LONG
    if isinstance(value, float):
        return DOUBLE
    if isinstance(value, list):
        return LIST
    return STRING


def _fmt(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


def _entry(name: str, value: Any, source: int, read_only: bool, synonyms: bool) -> dict[str, Any]:
    return {
        "name": name, "value": _fmt(value), "read_only": read_only, "config_source": source,
        "is_sensitive": False, "config_type": _type_of(value), "documentation": None,
        "synonyms": [{"name": name, "value": _fmt(value), "source": source}] if synonyms else [],
    }


def handle(ctx: RequestContext, req: DescribeConfigsRequest) -> Response:
    cluster = ctx.metadata
    synonyms = bool(req.include_synonyms)
    results = []
    for r in req.resources:
        keys = None if r.configuration_keys is None else set(r.configuration_keys)
        res: dict[str, Any] = {"error_code": ErrorCode.none, "error_message": None,
                               "resource_type": r.resource_type, "resource_name": r.resource_name, "configs": []}
        results.append(res)
        if r.resource_type == TOPIC:
            topic = cluster.topics.get(r.resource_name)
            if topic is None:
                res.update(error_code=ErrorCode.unknown_topic_or_partition,
                           error_message=f"Topic {r.resource_name} does not exist.")
                continue
            res["configs"] = [
                _entry(n, cluster.topic_config(topic, n), cluster.topic_config_source(topic, n), False, synonyms)
                for n in sorted(TOPIC_CONFIGS) if keys is None or n in keys
            ]
        elif r.resource_type == BROKER:
            if r.resource_name not in ("", str(ctx.node_id)):
                res.update(error_code=ErrorCode.invalid_request,
                           error_message=f"Unexpected broker id, expected {ctx.node_id} or empty string, "
                                         f"but received {r.resource_name}")
                continue
            cfg = cluster.config
            res["configs"] = [
                _entry(n, cfg[n], 4 if cfg.is_explicit(n) else 5, True, synonyms)
                for n in sorted(CONFIG_DEF) if not n.startswith("mock.") and (keys is None or n in keys)
            ]
        elif r.resource_type == BROKER_LOGGER:
            continue
        else:
            res.update(error_code=ErrorCode.invalid_request,
                       error_message=f"Unsupported resource type {r.resource_type}")
    return Response({"results": results}, error_code=first_error(results))


def error_response(ctx: RequestContext, req: DescribeConfigsRequest, error: ErrorCode) -> Response:
    results: list[dict[str, Any]] = [{"error_code": error, "error_message": None, "resource_type": r.resource_type,
                "resource_name": r.resource_name, "configs": []} for r in req.resources]
    return Response({"results": results}, error_code=first_error(results))
