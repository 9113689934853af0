"""ApiVersions (key 18): v0-5.

Behavior:
* Lists every API this broker serves with the ranges of the configured Kafka
  release (``mock.kafka.version``), cut to the versions kio can parse; from
  4.0 Produce is advertised from v0 although v0-2 are refused, as Kafka 4.x
  does (KAFKA-18659).
* An unsupported ApiVersions version never reaches this handler: the
  dispatcher answers v0 UNSUPPORTED_VERSION listing only ApiVersions (KIP-511).
* v3+: ClientSoftwareName/Version must match Kafka's pattern, else
  INVALID_REQUEST; accepted values are kept on the connection.
* v5 (KIP-1242): a client that knows the cluster it means sends its cluster id
  and the node id it dialled, both or neither (one without the other:
  INVALID_REQUEST); another cluster's id or another node's id is
  REBOOTSTRAP_REQUIRED (the client rebootstraps: its address now reaches
  another broker), with no API listed.
* Features (``ApiVersionsResponse.createApiVersionsResponseData``): the
  features a real broker of the release supports (4.2-4.4: metadata.version,
  group.version, share.version, streams.version, transaction.version,
  eligible.leader.replicas.version, kraft.version; 4.0-4.1: transaction.version)
  and the cluster's finalized levels (``features.py``: those ``kafka-storage
  format`` gives a fresh cluster, then what UpdateFeatures set; a level 0 is not
  listed, KRaft keeps no level-0 feature).  The epoch is the controller
  quorum's metadata log end offset (``quorum.py``).  Java and franz-go
  transactional producers use KIP-890 part 2 (EndTxn v5, Produce v12 without
  AddPartitionsToTxn) when transaction.version is 2.  Earlier releases list no
  features, epoch -1.

Version notes:
* v1: throttle_time_ms.  v2: clients back off on it (KIP-219).
* v3: flexible request and body, but the response header stays v0 (KIP-511);
  client software name and version (KIP-511).
* v5: cluster id and node id checks (KIP-1242).
* v0-3: supported features whose minimum is 0 (all but metadata.version) are left out,
  as Kafka does since KAFKA-17492 (older clients fail to parse them); the
  finalized ones are still listed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import ApiVersionsRequest

API_KEY = ApiKey.API_VERSIONS

# ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def handle(ctx: RequestContext, req: ApiVersionsRequest) -> Response:
    software = None
    if ctx.version >= 5 and (req.cluster_id is None) != (req.node_id == -1):  # ApiVersionsRequest.isValid
        return Response({"error_code": ErrorCode.invalid_request, "api_keys": []})
    if ctx.version >= 3:
        name = req.client_software_name
        ver = req.client_software_version
        if not (_SOFTWARE.match(name or "") and _SOFTWARE.match(ver or "")):
            return Response({"error_code": ErrorCode.invalid_request, "api_keys": []})
        software = (name, ver)
    if ctx.version >= 5 and req.cluster_id is not None and (
            req.cluster_id != ctx.metadata.cluster_id or req.node_id != ctx.node_id):
        # KafkaApis.clusterIdOrNodeIdIsInvalid; the client software is kept (the request is valid)
        return Response({"error_code": ErrorCode.rebootstrap_required, "api_keys": []}, client_software=software)
    out: dict[str, Any] = {
        "error_code": ErrorCode.none,
        "api_keys": [
            {"api_key": s.key, "min_version": s.advertised_min, "max_version": s.max_version}
            for s in ctx.broker.registry
        ],
        "finalized_features_epoch": -1,
    }
    features = ctx.broker.features
    if features.supported:
        out["supported_features"] = [  # KAFKA-17492: a minimum of 0 is not shown to v0-3 clients
            {"name": name, "min_version": lo, "max_version": hi}
            for name, (lo, hi) in sorted(features.supported.items()) if ctx.version >= 4 or lo != 0]
        out["finalized_features_epoch"] = features.epoch
        out["finalized_features"] = [{"name": name, "max_version_level": level, "min_version_level": level}
                                     for name, level in features.finalized_levels().items()]
    return Response(out, client_software=software)
