"""SaslAuthenticate (key 36): v0-2.

Behavior:
* After SaslHandshake v1 on a SASL_PLAINTEXT listener, each request carries
  one SASL token to the chosen mechanism (``mockbroker/security/sasl_mechanisms.py``): PLAIN
  (RFC 4616) in one round, SCRAM-SHA-256/512 (RFC 5802/7677) in two
  (server-first, then server-final with ``v=``).  On success the username
  becomes the connection's principal (the quota user).
* A rejected token: SASL_AUTHENTICATION_FAILED with Kafka's message
  ("Authentication failed: Invalid username or password" for PLAIN; for
  SCRAM "Authentication failed during authentication due to invalid
  credentials with SASL mechanism SCRAM-SHA-256"), sent after
  ``connection.failed.authentication.delay.ms`` (100, the channel muted
  meanwhile), then the connection is closed.
* Any other request before authentication completes closes the connection
  without an answer (after the handshake Kafka first answers it with that
  API's ILLEGAL_SASL_STATE error response; the mock does not).
* After authentication, or on a PLAINTEXT listener (``KafkaApis``):
  ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful
  authentication", charged to quotas like any request.
* A successful answer carries an empty error message, as Kafka's (the
  schema's default for the nullable string).

Version notes:
* v1: session_lifetime_ms (KIP-368), always 0 (no re-authentication).
* v2: flexible.  No version has a throttle field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import SaslAuthenticateRequest

API_KEY = ApiKey.SASL_AUTHENTICATE


def handle(ctx: RequestContext, req: SaslAuthenticateRequest) -> Response:
    auth = ctx.sasl  # set only while the connection is authenticating (the gate allowed this request)
    if auth is None:
        return Response({"error_code": ErrorCode.illegal_sasl_state,
                         "error_message": "SaslAuthenticate request received after successful authentication",
                         "auth_bytes": b""})
    return Response(auth.authenticate(req.auth_bytes))
