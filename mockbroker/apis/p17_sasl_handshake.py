"""SaslHandshake (key 17): v0-1.

Behavior:
* Before authentication on a SASL_PLAINTEXT listener (Kafka's
  ``SaslServerAuthenticator``): the client names a mechanism.  An enabled one
  is answered NONE with the enabled mechanisms and authentication starts; any
  other gets UNSUPPORTED_SASL_MECHANISM with the enabled mechanisms, sent after
  ``connection.failed.authentication.delay.ms`` (100), and the connection is
  then closed.  It may follow one ApiVersions.
* Enabled mechanisms: ``sasl.enabled.mechanisms``, by default PLAIN,
  SCRAM-SHA-256 and SCRAM-SHA-512 (Kafka's default is GSSAPI, which the mock
  does not serve); listed in configured order (Kafka's order is a set's).
* After authentication, or on a PLAINTEXT listener (``KafkaApis``):
  ILLEGAL_SASL_STATE with no mechanisms, charged to quotas like any request.
  Re-authentication (KIP-368) is not served: ``connections.max.reauth.ms``
  stays 0, as Kafka's default.

Version notes:
* v0: the SASL tokens then travel raw, framed only by the 4-byte size, with
  no Kafka header; each answer is framed the same way (PLAIN answers an
  empty token) and a failure closes the connection without an answer (a
  wrong PLAIN password after the failed-authentication delay).
* v1: the tokens travel in SaslAuthenticate requests (KIP-152).
* Never flexible; no throttle field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import SaslHandshakeRequest

API_KEY = ApiKey.SASL_HANDSHAKE


def handle(ctx: RequestContext, req: SaslHandshakeRequest) -> Response:
    auth = ctx.sasl  # set only while the connection is authenticating (the gate allowed this request)
    if auth is None:
        return Response({"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []})
    return Response(auth.handshake(ctx.version, req.mechanism))
