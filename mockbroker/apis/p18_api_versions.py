"""ApiVersions (key 18): v0-4.

Behavior:
* Lists every API this broker serves with the ranges of the configured Kafka
  release (``mock.kafka.version``), cut to the versions kio can parse; from
  4.0 Produce is advertised from v0 although v0-2 are refused, as Kafka 4.x
  does (KAFKA-18659).
* An unsupported ApiVersions version never reaches this handler: the
  dispatcher answers v0 UNSUPPORTED_VERSION listing only ApiVersions (KIP-511).
* v3+: ClientSoftwareName/Version must match Kafka's pattern, else
  INVALID_REQUEST; accepted values are kept on the connection.
* No features are advertised (``supported_features``/``finalized_features``
  empty, epoch -1): the mock finalizes no transaction.version, so Java/franz-go
  transactional producers stay on Produce <= 11 paths.

Version notes:
* v1: throttle_time_ms.  v2: clients back off on it (KIP-219).
* v3: flexible request and body, but the response header stays v0 (KIP-511);
  client software name and version (KIP-511).
"""

from __future__ import annotations

import re
from typing import Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext

API_KEY = ApiKey.API_VERSIONS

# ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if ctx.version >= 3:
        name = req.client_software_name
        ver = req.client_software_version
        if not (_SOFTWARE.match(name or "") and _SOFTWARE.match(ver or "")):
            return {"error_code": ErrorCode.invalid_request, "api_keys": []}
        ctx.conn.client_software = (name, ver)
    return {
        "error_code": ErrorCode.none,
        "api_keys": [
            {"api_key": s.key, "min_version": s.advertised_min, "max_version": s.max_version}
            for s in ctx.broker.registry
        ],
        "finalized_features_epoch": -1,
    }
