"""What the delegation-token APIs (CreateDelegationToken, RenewDelegationToken,
ExpireDelegationToken, DescribeDelegationToken) share: ``KafkaApis.allowTokenRequests`` and the
principals as the requests name them.
"""

from __future__ import annotations

from protocol.errors import ErrorCode

from ..controller.delegation_tokens import USER_TYPE, Principal
from ..request import RequestContext, Response
from .common import instant


def allow_token_requests(ctx: RequestContext) -> bool:
    """KafkaApis.allowTokenRequests: never over PLAINTEXT, never from a connection that logged in
    with a token, never over SSL without a client certificate (the ANONYMOUS principal)."""
    if ctx.token_authenticated or ctx.security_protocol == "PLAINTEXT":
        return False
    return not (ctx.security_protocol == "SSL" and ctx.principal == "ANONYMOUS")


def requester(ctx: RequestContext) -> Principal:
    """The request's principal (``User:`` and the connection's principal name)."""
    return USER_TYPE, ctx.principal


def expiry_answer(error: ErrorCode, expiry_ms: int) -> Response:
    """Renew's and ExpireDelegationToken's response: the error and the token's expiry timestamp;
    KafkaApis' own refusal (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) answers -1
    (DelegationTokenManager.ErrorTimestamp), the controller's errors the message's default, 0."""
    if error is ErrorCode.delegation_token_request_not_allowed:
        expiry_ms = -1
    elif error is not ErrorCode.none:
        expiry_ms = 0
    return Response({"error_code": error, "expiry_timestamp": instant(expiry_ms)}, error_code=error)
