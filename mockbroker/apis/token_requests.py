"""What the delegation-token APIs (CreateDelegationToken, RenewDelegationToken,
ExpireDelegationToken, DescribeDelegationToken) share: ``KafkaApis.allowTokenRequests`` and the
principals as the requests name them.
"""

from __future__ import annotations

from ..delegation_tokens import USER_TYPE, Principal
from ..request import RequestContext


def allow_token_requests(ctx: RequestContext) -> bool:
    """KafkaApis.allowTokenRequests: never over PLAINTEXT, never from a connection that logged in
    with a token, never over SSL without a client certificate (the ANONYMOUS principal)."""
    if ctx.token_authenticated or ctx.security_protocol == "PLAINTEXT":
        return False
    return not (ctx.security_protocol == "SSL" and ctx.principal == "ANONYMOUS")


def requester(ctx: RequestContext) -> Principal:
    """The request's principal (``User:`` and the connection's principal name)."""
    return USER_TYPE, ctx.principal
