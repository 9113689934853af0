"""DescribeUserScramCredentials (key 50): v0-0.

Behavior (Kafka's KafkaApis.handleDescribeUserScramCredentialsRequest answering from
``ScramImage.describe``): the named users, or every user with a SCRAM credential when
``users`` is null or empty; per user the mechanisms and iterations of its credentials
(never salts or keys).  A user without any credential gets RESOURCE_NOT_FOUND ("Attempt to
describe a user credential that does not exist: U"), a user named twice one
DUPLICATE_RESOURCE result; the error messages are "" where none is set (at the top, and for a
described user), as Kafka's.  The credentials are the cluster's ``CredentialStore``:
those of ``mock.sasl.users`` derived at start for the enabled SCRAM mechanisms, and those
AlterUserScramCredentials set.  With an authorizer DESCRIBE on the cluster is checked first
(``apis/authorization.py``).

Differences: Kafka lists users in a HashMap's order; mockbroker in request order (all users:
by mechanism, then as created).

Version notes:
* v0 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..security.sasl_mechanisms import SCRAM_TYPES

if TYPE_CHECKING:
    from protocol.request_types import DescribeUserScramCredentialsRequest

API_KEY = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS


def handle(ctx: RequestContext, req: DescribeUserScramCredentialsRequest) -> Response:
    known = ctx.broker.credentials.scram_users()
    # ScramImage.describe: user -> named twice; null or empty: every user
    named: dict[str, bool] = {}
    for u in req.users or ():
        named[u.name] = u.name in named
    if not req.users:
        named = dict.fromkeys(known, False)
    results: list[dict[str, Any]] = []
    for user, twice in named.items():
        # "" unless an error sets one: the message's default, as ScramImage.describe leaves it
        res: dict[str, Any] = {"user": user, "error_code": ErrorCode.none, "error_message": "",
                               "credential_infos": []}
        if twice:
            res.update(error_code=ErrorCode.duplicate_resource, error_message=(
                "Cannot describe SCRAM credentials for the same user twice in a single request: " + user))
        elif user in known:
            res["credential_infos"] = [{"mechanism": SCRAM_TYPES[m], "iterations": i} for m, i in known[user]]
        else:
            res.update(error_code=ErrorCode.resource_not_found,
                       error_message="Attempt to describe a user credential that does not exist: " + user)
        results.append(res)
    return Response({"error_code": ErrorCode.none, "error_message": "", "results": results})


def error_response(ctx: RequestContext, req: DescribeUserScramCredentialsRequest, error: ErrorCode) -> Response:
    """DescribeUserScramCredentialsRequest.getErrorResponse: the error at the top and for each named
    user (an empty user name, as Kafka leaves it)."""
    results: list[dict[str, Any]] = [{"user": "", "error_code": error, "error_message": None, "credential_infos": []}
               for _ in req.users or ()]
    return Response({"error_code": error, "error_message": None, "results": results})
