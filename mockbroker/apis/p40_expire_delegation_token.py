"""ExpireDelegationToken (key 40): v1-2.

Behavior (KafkaApis.handleExpireTokenRequest, ``DelegationTokenControlManager.expireDelegationToken``):
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED as for CreateDelegationToken; then DELEGATION_TOKEN_AUTH_DISABLED,
DELEGATION_TOKEN_NOT_FOUND, DELEGATION_TOKEN_OWNER_MISMATCH.  A negative expiry period removes the
token at once (the answer is now); otherwise an expired token gets DELEGATION_TOKEN_EXPIRED and a
live one expires at now + the period (never past its max timestamp).  A removed token logs in no
more; connections it authenticated stay open, as in Kafka.

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
    from protocol.request_types import ExpireDelegationTokenRequest

API_KEY = ApiKey.EXPIRE_DELEGATION_TOKEN


def handle(ctx: RequestContext, req: ExpireDelegationTokenRequest) -> Response:
    if not allow_token_requests(ctx):
        return expiry_answer(ErrorCode.delegation_token_request_not_allowed, -1)
    error, expiry = ctx.broker.delegation_tokens.expire(bytes(req.hmac), requester(ctx),
                                                        timedelta_ms(req.expiry_time_period))
    return expiry_answer(error, expiry)
