"""CreateDelegationToken (key 38): v1-3.

Behavior (Kafka's KafkaApis.handleCreateTokenRequest, then the controller's
``DelegationTokenControlManager.createDelegationToken``): refused with
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED over PLAINTEXT, from a connection that logged in with a token,
or over SSL without a client certificate; a renewer whose principal type is not ``User``:
INVALID_PRINCIPAL_TYPE; without ``delegation.token.secret.key``: DELEGATION_TOKEN_AUTH_DISABLED.
The owner is the request's owner principal (v3) when named, else the requester (a name with a
null principal type is answered UNKNOWN_SERVER_ERROR with the ANONYMOUS owner and requester before
anything else, as Kafka's KafkaPrincipal constructor throws on it); a token for
another owner needs CREATE_TOKENS on that user (DELEGATION_TOKEN_AUTHORIZATION_FAILED, checked
before the renewers), which with no authorizer is always allowed.  The
token's max lifetime is ``delegation.token.max.lifetime.ms`` or the request's max_lifetime_ms when
that is positive and smaller; it expires ``delegation.token.expiry.time.ms`` after issue (never
past its max).  Timestamps are the broker clock's.

Version notes:
* v2+ flexible; v3 owner principal in the request, the requester in the response.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import AclOperation, ResourceType
from ..controller.delegation_tokens import Principal
from ..request import RequestContext, Response
from .common import authorized, instant
from .token_requests import allow_token_requests, requester

if TYPE_CHECKING:
    from protocol.request_types import CreateDelegationTokenRequest

API_KEY = ApiKey.CREATE_DELEGATION_TOKEN


def _answer(error: ErrorCode, owner: Principal, req_principal: Principal, issue: int = -1, expiry: int = -1,
            max_ms: int = -1, token_id: str = "", mac: bytes = b"") -> Response:
    """CreateDelegationTokenResponse.prepareResponse (the requester is dropped below v3 by the codec)."""
    body: dict[str, Any] = {"error_code": error, "principal_type": owner[0], "principal_name": owner[1],
                            "token_requester_principal_type": req_principal[0],
                            "token_requester_principal_name": req_principal[1],
                            "issue_timestamp": instant(issue), "expiry_timestamp": instant(expiry),
                            "max_timestamp": instant(max_ms),
                            "token_id": token_id, "hmac": mac}
    return Response(body, error_code=error)


def handle(ctx: RequestContext, req: CreateDelegationTokenRequest) -> Response:
    by = requester(ctx)
    name = req.owner_principal_name if ctx.version >= 3 else None
    if name and req.owner_principal_type is None:
        # KafkaApis makes the owner's KafkaPrincipal first, whose constructor throws a
        # NullPointerException for the null type: Kafka answers getErrorResponse's UNKNOWN_SERVER_ERROR
        return error_response(ctx, req, ErrorCode.unknown_server_error)
    owner: Principal = (req.owner_principal_type, name) if name and req.owner_principal_type is not None else by
    renewers = [(r.principal_type, r.principal_name) for r in req.renewers]
    if not allow_token_requests(ctx):
        return _answer(ErrorCode.delegation_token_request_not_allowed, owner, by)
    if owner != by and not authorized(ctx, AclOperation.CREATE_TOKENS, ResourceType.USER, f"{owner[0]}:{owner[1]}"):
        return _answer(ErrorCode.delegation_token_authorization_failed, owner, by)
    if any(ptype != "User" for ptype, _ in renewers):
        return _answer(ErrorCode.invalid_principal_type, owner, by)
    error, token = ctx.broker.delegation_tokens.create(owner, by, renewers, timedelta_ms(req.max_lifetime))
    if token is None:  # the controller's answer: its timestamps are the message's defaults
        return _answer(error, owner, by, 0, 0, 0)
    return _answer(error, owner, by, token.issue_ms, token.expiry_ms, token.max_ms, token.token_id, token.hmac)


def error_response(ctx: RequestContext, req: CreateDelegationTokenRequest, error: ErrorCode) -> Response:
    """CreateDelegationTokenRequest.getErrorResponse: ANONYMOUS owner and requester."""
    anonymous = ("User", "ANONYMOUS")
    return _answer(error, anonymous, anonymous)
