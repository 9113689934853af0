"""UpdateFeatures (key 57): v0-2.

Behavior:
* The controller's ``FeatureControlManager.updateFeatures`` (``features.py``): every update is
  checked in request order against the level the cluster supports, the current level, the
  upgrade type and the feature's dependencies; the first failure fails them all with
  INVALID_UPDATE_VERSION and Kafka's message ("The update failed for all features since the
  following feature had an error: ..."), nothing changes.  validate_only checks without applying.
* Applied levels show at once in every broker's ApiVersions (finalized features and epoch);
  transaction.version changes the transaction coordinator.  kraft.version 1 upgrades the quorum
  (DescribeQuorum then shows directory ids).  Level 0 with a downgrade removes a feature.
* The same feature twice: the last level counts (the controller collects them in a map).
* The timeout is not waited on: the simulated controller commits at once.

Version notes:
* v0: ``allow_downgrade`` is ignored and every update is an upgrade, as Kafka 4.4's
  ``QuorumController.updateFeatures`` reads ``upgradeType`` (its default, 1, for v0).
* v1: upgrade_type (1 upgrade, 2 safe downgrade, 3 unsafe downgrade) and validate_only (KIP-778).
* v0-1 answer a result per feature (on success ``NONE``, as Kafka's ``Errors.message()`` gives);
  v2 only the top-level error (KIP-1022).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..controller.features import UPGRADE
from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import UpdateFeaturesRequest

API_KEY = ApiKey.UPDATE_FEATURES


def handle(ctx: RequestContext, req: UpdateFeaturesRequest) -> Response:
    names = [u.feature for u in req.feature_updates]
    last = {u.feature: (u.max_version_level, UPGRADE if ctx.version == 0 else u.upgrade_type)
            for u in req.feature_updates}
    updates = [(name, level, upgrade_type) for name, (level, upgrade_type) in last.items()]
    error, message = ctx.broker.features.update(updates, req.validate_only if ctx.version >= 1 else False)
    if error is not ErrorCode.none:
        return _failed(ctx, req, error,
                       f"The update failed for all features since the following feature had an error: {message}")
    results = [{"feature": n, "error_code": ErrorCode.none, "error_message": "NONE"} for n in names]
    return Response({"error_code": ErrorCode.none, "error_message": None, "results": results})


def _failed(ctx: RequestContext, req: UpdateFeaturesRequest, error: ErrorCode, message: str | None) -> Response:
    """``UpdateFeaturesResponseData`` with only the top-level error (results empty)."""
    body: dict[str, Any] = {"error_code": error, "error_message": message, "results": []}
    return Response(body)


def error_response(ctx: RequestContext, req: UpdateFeaturesRequest, error: ErrorCode) -> Response:
    """``UpdateFeaturesRequest.getErrorResponse``: the top-level error, no results."""
    return _failed(ctx, req, error, None)
