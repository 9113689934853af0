"""AlterUserScramCredentials (key 51): v0-0.

Behavior (Kafka's ControllerApis.handleAlterUserScramCredentials and
``ScramControlManager.alterCredentials``): deletions and upsertions keyed by user; a user
altered twice in one request (two deletions, or a deletion and an upsertion, of any
mechanisms) gets DUPLICATE_RESOURCE ("A user credential cannot be altered twice in the same
request") and nothing for it changes (so ``kafka-configs --add-config
'SCRAM-SHA-256=[...],SCRAM-SHA-512=[...]'`` fails with DuplicateResourceException, as against
Kafka 4.4).  An empty name: UNACCEPTABLE_CREDENTIAL ("Username must
not be empty"); a mechanism other than SCRAM-SHA-256 (1) or SCRAM-SHA-512 (2):
UNSUPPORTED_SASL_MECHANISM ("Unknown SCRAM mechanism"); iterations below 4096 or above 16384:
UNACCEPTABLE_CREDENTIAL ("Too few iterations" / "Too many iterations"); deleting a credential
that does not exist: RESOURCE_NOT_FOUND ("Attempt to delete a user credential that does not
exist"); an empty salted password: UNKNOWN_SERVER_ERROR (Kafka's HMAC refuses an empty key).
The client sends the salt and the salted password (Hi(password, salt, i)); the broker stores
the salt, StoredKey and ServerKey, as ``UserScramCredentialRecord``.  The valid changes apply
at once on every broker: a new SCRAM login checks the new credential, a deleted one fails;
connections already authenticated stay so, as in Kafka.  Results: the deletions, then the
upsertions, then the failures.  With an authorizer ALTER on the cluster is checked first
(``apis/authorization.py``).

Differences: Kafka orders each group of results as a HashMap does; mockbroker in request order.

Version notes:
* v0 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..security.sasl_mechanisms import SCRAM_MAX_ITERATIONS, SCRAM_MIN_ITERATIONS, SCRAM_TYPES, ScramCredential
from .common import first_error

if TYPE_CHECKING:
    from protocol.request_types import AlterUserScramCredentialsRequest

API_KEY = ApiKey.ALTER_USER_SCRAM_CREDENTIALS
MECHANISM_OF = {t: m for m, t in SCRAM_TYPES.items()}
TWICE = "A user credential cannot be altered twice in the same request"


def _name_and_mechanism(name: str, mechanism: int) -> tuple[ErrorCode, str | None] | None:
    """ScramControlManager.validateScramUsernameAndMechanism."""
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if mechanism not in MECHANISM_OF:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


def handle(ctx: RequestContext, req: AlterUserScramCredentialsRequest) -> Response:
    store = ctx.broker.credentials
    deletions: dict[str, str] = {}                       # user -> mechanism
    upserts: dict[str, tuple[str, ScramCredential]] = {}  # user -> (mechanism, credential)
    errors: dict[str, tuple[ErrorCode, str | None]] = {}
    for d in req.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = (ErrorCode.duplicate_resource, TWICE)
            continue
        error = _name_and_mechanism(d.name, d.mechanism)
        if error is None and store.scram_credential(MECHANISM_OF[d.mechanism], d.name) is None:
            error = (ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist")
        if error is not None:
            errors[d.name] = error
        else:
            deletions[d.name] = MECHANISM_OF[d.mechanism]
    for u in req.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upserts.pop(u.name, None) is not None:
            errors[u.name] = (ErrorCode.duplicate_resource, TWICE)
            continue
        error = _name_and_mechanism(u.name, u.mechanism)
        if error is None and u.iterations < SCRAM_MIN_ITERATIONS:
            error = (ErrorCode.unacceptable_credential, "Too few iterations")
        elif error is None and u.iterations > SCRAM_MAX_ITERATIONS:
            error = (ErrorCode.unacceptable_credential, "Too many iterations")
        elif error is None and not u.salted_password:  # finishUpsertion: ApiError.fromThrowable, no message
            error = (ErrorCode.unknown_server_error, None)
        if error is not None:
            errors[u.name] = error
            continue
        mechanism = MECHANISM_OF[u.mechanism]
        upserts[u.name] = (mechanism, ScramCredential.from_salted_password(
            mechanism, bytes(u.salt), bytes(u.salted_password), u.iterations))
    # ControllerResult.atomicOf: every valid change applies together
    for user, mechanism in deletions.items():
        store.delete_scram_credential(mechanism, user)
    for user, (mechanism, credential) in upserts.items():
        store.set_scram_credential(mechanism, user, credential)
    results: list[dict[str, Any]] = [{"user": u, "error_code": ErrorCode.none, "error_message": None}
                                     for u in (*deletions, *upserts)]
    results += [{"user": u, "error_code": code, "error_message": msg} for u, (code, msg) in errors.items()]
    return Response({"results": results}, error_code=first_error(results))


def error_response(ctx: RequestContext, req: AlterUserScramCredentialsRequest, error: ErrorCode) -> Response:
    """AlterUserScramCredentialsRequest.getErrorResponse: every user named, sorted, given the error."""
    users = sorted({d.name for d in req.deletions} | {u.name for u in req.upsertions})
    results = [{"user": u, "error_code": error, "error_message": None} for u in users]
    return Response({"results": results}, error_code=first_error(results))
