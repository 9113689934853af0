"""DescribeDelegationToken (key 41): v1-3.

Behavior (KafkaApis.handleDescribeTokensRequest): DELEGATION_TOKEN_REQUEST_NOT_ALLOWED as for
CreateDelegationToken, then DELEGATION_TOKEN_AUTH_DISABLED; an empty owners list: no tokens; a null
list: every token; otherwise the tokens whose owner or a renewer is one of the owners named.  Of
those, a principal sees the tokens it owns or renews, and the others only with DESCRIBE on the
token (resource DELEGATION_TOKEN, its id) or DESCRIBE_TOKENS on its owner (resource USER,
"User:name"), as ``DelegationTokenManager.filterToken``; with no authorizer every check passes, so
a principal sees tokens it neither owns nor renews, as Kafka without an authorizer shows them.
Tokens already swept away after their expiry are gone; expired ones not yet swept are listed.

Version notes:
* v2+ flexible; v3 the token requester in each token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import AclOperation, ResourceType
from ..request import RequestContext, Response
from .common import authorized
from .token_requests import allow_token_requests, requester

if TYPE_CHECKING:
    from protocol.request_types import DescribeDelegationTokenRequest

API_KEY = ApiKey.DESCRIBE_DELEGATION_TOKEN


def handle(ctx: RequestContext, req: DescribeDelegationTokenRequest) -> Response:
    if not allow_token_requests(ctx):
        return error_response(ctx, req, ErrorCode.delegation_token_request_not_allowed)
    manager = ctx.broker.delegation_tokens
    if not manager.enabled:
        return error_response(ctx, req, ErrorCode.delegation_token_auth_disabled)
    owners = None if req.owners is None else [(o.principal_type, o.principal_name) for o in req.owners]
    tokens: list[dict[str, Any]] = []
    principal = requester(ctx)
    if owners != []:
        for t in manager.tokens():
            if owners is not None and not any(t.owner_or_renewer(o) for o in owners):
                continue
            if not t.owner_or_renewer(principal) and \
                    not authorized(ctx, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, t.token_id) and \
                    not authorized(ctx, AclOperation.DESCRIBE_TOKENS, ResourceType.USER, f"{t.owner[0]}:{t.owner[1]}"):
                continue
            tokens.append({"principal_type": t.owner[0], "principal_name": t.owner[1],
                           "token_requester_principal_type": t.requester[0],
                           "token_requester_principal_name": t.requester[1],
                           "issue_timestamp": t.issue_ms, "expiry_timestamp": t.expiry_ms,
                           "max_timestamp": t.max_ms, "token_id": t.token_id, "hmac": t.hmac,
                           "renewers": [{"principal_type": p, "principal_name": n} for p, n in t.renewers]})
    return Response({"error_code": ErrorCode.none, "tokens": tokens})


def error_response(ctx: RequestContext, req: DescribeDelegationTokenRequest, error: ErrorCode) -> Response:
    """DescribeDelegationTokenResponse(version, throttle, error): no tokens."""
    return Response({"error_code": error, "tokens": []}, error_code=error)
