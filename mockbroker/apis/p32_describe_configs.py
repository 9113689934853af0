"""DescribeConfigs (key 32): v1-4.

Behavior (Kafka's ``ConfigHelper.describeConfigs``, answered by the config catalogue,
``mockbroker/server/config_catalog.py``):
* Topics (type 2): every entry Kafka 4.4 lists, in its order, with the value in force, its source
  (1 topic override, 2/3 dynamic broker config, 4 static broker config, 5 default), synonyms in
  Kafka's order, type and documentation; an illegal name INVALID_TOPIC_EXCEPTION, an unknown
  topic UNKNOWN_TOPIC_OR_PARTITION.  A described resource and an unknown topic carry the empty error
  message (the response data's default, which ConfigHelper leaves), a refused one its error's
  message, an INVALID_REQUEST one the reason.
* Brokers (type 4): named by this broker's id, every broker config Kafka lists (static ones
  read-only; mockbroker's configuration where it has the key, Kafka's defaults elsewhere), and
  before them each set key that is not one of Kafka's non-internal configs (a listener-prefixed or
  internal one, as ConfigHelperUtils lists the originals); the empty name lists the cluster-default
  dynamic configs.  Another id or a name that is not one:
  INVALID_REQUEST.
* Broker loggers (type 8), groups (type 32) and client-metrics resources (type 16) as Kafka lists
  them (a group or subscription need not exist); an empty name INVALID_REQUEST; any other type
  INVALID_REQUEST ``Unsupported resource type``.
* ``configuration_keys`` null or empty means all; unknown keys are simply absent.
* No authorizer: every resource is described (no *_AUTHORIZATION_FAILED).

Version notes:
* v0 (is_default instead of a config source) is not served: Kafka 4.x removed it and there is no
  schema for it.
* v1 synonyms, config source.  v2 clients back off.  v3 config type, documentation.  v4 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..security.authorizer import AclOperation
from .common import config_resource_denied, first_error

if TYPE_CHECKING:
    from protocol.request_types import DescribeConfigsRequest

API_KEY = ApiKey.DESCRIBE_CONFIGS
DENIED_MESSAGES = {ErrorCode.topic_authorization_failed: "Topic authorization failed.",
                   ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
                   ErrorCode.group_authorization_failed: "Group authorization failed."}


def handle(ctx: RequestContext, req: DescribeConfigsRequest) -> Response:
    catalog = ctx.broker.config_catalog
    synonyms, documentation = bool(req.include_synonyms), bool(req.include_documentation)
    results: list[dict[str, Any]] = []
    for r in req.resources:
        keys = list(r.configuration_keys) if r.configuration_keys else None
        denied = config_resource_denied(ctx, AclOperation.DESCRIBE_CONFIGS, r.resource_type, r.resource_name)
        if denied is not None:  # ConfigHelper: the authorization error with its own message (Errors.java)
            results.append({"error_code": denied, "error_message": DENIED_MESSAGES.get(denied),
                            "resource_type": r.resource_type, "resource_name": r.resource_name, "configs": []})
            continue
        d = catalog.describe(ctx.node_id, r.resource_type, r.resource_name, keys, synonyms, documentation)
        results.append({"error_code": d.error, "error_message": d.message, "resource_type": r.resource_type,
                        "resource_name": r.resource_name, "configs": d.configs})
    return Response({"results": results}, error_code=first_error(results))


def error_response(ctx: RequestContext, req: DescribeConfigsRequest, error: ErrorCode) -> Response:
    results: list[dict[str, Any]] = [{"error_code": error, "error_message": None, "resource_type": r.resource_type,
                                      "resource_name": r.resource_name, "configs": []} for r in req.resources]
    return Response({"results": results}, error_code=first_error(results))
