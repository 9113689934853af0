"""RenewDelegationToken (key 39): v1-2.

Behavior (KafkaApis.handleRenewTokenRequest, ``DelegationTokenControlManager.renewDelegationToken``):
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED as for CreateDelegationToken; then, from the controller,
DELEGATION_TOKEN_AUTH_DISABLED, DELEGATION_TOKEN_NOT_FOUND (an unknown HMAC, or a token the expiry
sweep removed), DELEGATION_TOKEN_EXPIRED, DELEGATION_TOKEN_OWNER_MISMATCH (neither owner nor
renewer).  The new expiry is now + the renew period (``delegation.token.expiry.time.ms``, or the
request's when positive and smaller), never past the token's max timestamp.

Version notes:
* v2 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from .token_requests import allow_token_requests, expiry_answer, requester

if TYPE_CHECKING:
    from protocol.request_types import RenewDelegationTokenRequest

API_KEY = ApiKey.RENEW_DELEGATION_TOKEN


def handle(ctx: RequestContext, req: RenewDelegationTokenRequest) -> Response:
    if not allow_token_requests(ctx):
        return expiry_answer(ErrorCode.delegation_token_request_not_allowed, -1)
    error, expiry = ctx.broker.delegation_tokens.renew(bytes(req.hmac), requester(ctx), timedelta_ms(req.renew_period))
    return expiry_answer(error, expiry)
