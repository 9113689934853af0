"""Wire-level faults and Kafka error codes.

Two separate channels, as in Kafka and franz-go's kfake:

* ``ProtocolError`` and its subclasses are *wire faults*: the frame or header
  cannot be understood.  The broker closes that one connection (Kafka's
  ``InvalidRequestException`` / ``InvalidReceiveException`` path in
  ``SocketServer.Processor.processChannelException``) and logs one line.
* ``ErrorCode`` values travel *inside* a response.  They are the generated
  constants of Kafka's ``Errors.java`` as kio publishes them, re-exported here
  so the rest of mockbroker never imports kio directly for them.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = [
    "ErrorCode",
    "ProtocolError",
    "InvalidFrameSize",
    "InvalidRequest",
    "UnsupportedVersion",
    "CorruptRecordBatch",
]


class ProtocolError(Exception):
    """A fault that makes Kafka close the connection without a response."""


class InvalidFrameSize(ProtocolError):
    """The 4-byte size prefix is negative, zero or over socket.request.max.bytes.

    Mirrors ``org.apache.kafka.common.network.InvalidReceiveException``.
    """


class InvalidRequest(ProtocolError):
    """The header or body cannot be parsed (Kafka's ``InvalidRequestException``)."""


class UnsupportedVersion(ProtocolError):
    """Unknown API key or a version outside the enabled range.

    Kafka 4.x logs ``UnsupportedVersionException: Received request for api with
    key K (Name) and unsupported version V`` and closes the connection.
    """


class CorruptRecordBatch(Exception):
    """A record batch failed validation; carries the Kafka error to answer with."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
