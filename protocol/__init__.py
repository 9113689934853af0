"""The Kafka wire layer: framing, headers, API registry, record batches, error codes.

Imports nothing from ``mockbroker``.  Message codecs are kio's (generated from
Kafka's JSON schemas); this package adds the registry and the header rules.
"""

from .errors import (
    CorruptRecordBatch,
    ErrorCode,
    InvalidFrameSize,
    InvalidRequest,
    ProtocolError,
    UnsupportedVersion,
)
from .registry import (
    DEFAULT_KAFKA_RELEASE,
    KAFKA_RELEASES,
    ApiKey,
    ApiRegistry,
    ApiSpec,
)

__all__ = [
    "ApiKey",
    "ApiRegistry",
    "ApiSpec",
    "CorruptRecordBatch",
    "DEFAULT_KAFKA_RELEASE",
    "ErrorCode",
    "InvalidFrameSize",
    "InvalidRequest",
    "KAFKA_RELEASES",
    "ProtocolError",
    "UnsupportedVersion",
]
