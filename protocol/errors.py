"""Wire-level faults and Kafka error codes.

Two separate channels, as in Kafka and franz-go's kfake:

* ``ProtocolError`` and its subclasses are *wire faults*: the frame or header
  cannot be understood.  The broker closes that one connection (Kafka's
  ``InvalidRequestException`` / ``InvalidReceiveException`` path in
  ``SocketServer.Processor.processChannelException``) and logs one line.
* ``ErrorCode`` values travel *inside* a response.  They are the generated
  constants of Kafka's ``Errors.java`` as kio publishes them, re-exported here
  so the rest of mockbroker never imports kio directly for them.  kio 0.6.5's
  enum stops at 133; the codes Kafka 4.4 added since (``KAFKA_44_ERRORS``) are
  added to it when this module is imported, before kio's native reader first
  reads an error code (it reads the members once), so that a 4.4 message
  carrying one decodes and a handler can answer with one.
  tests/integration/test_kafka_messages_java.py checks the whole enum (code,
  name, retriable) against kafka-clients 4.4.0's ``Errors``.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

# Errors.java codes of Kafka 4.4.0 that kio 0.6.5 lacks: (code, name, retriable, Errors.message())
KAFKA_44_ERRORS: tuple[tuple[int, str, bool, str], ...] = (
    (134, "group_deletion_failed", False,
     "DeleteGroups could not complete; see the error message on the per-group result for details."),
    (135, "streams_topology_description_update_failed", False,
     "The broker could not process the topology description update; see the error message for details."),
    (136, "controller_id_not_registered", False, "The given controller ID was not registered."),
)


def _add_error_codes() -> None:
    """Add ``KAFKA_44_ERRORS`` to kio's ``ErrorCode`` (an IntEnum has no public way to grow: the members
    are made as its ``__new__`` makes them and entered where the enum looks members up)."""
    for code, name, retriable, doc in KAFKA_44_ERRORS:
        if code in ErrorCode._value2member_map_:
            continue  # kio has it (a newer kio): keep kio's
        member = int.__new__(ErrorCode, code)
        member._value_ = code
        member._name_ = name
        member.retriable = retriable  # kio's __new__ sets it the same way
        member.__objclass__ = ErrorCode  # type: ignore[attr-defined]  # as enum sets it on its members
        member._sort_order_ = len(ErrorCode._member_names_)  # type: ignore[attr-defined]  # as enum sets it
        member.__doc__ = doc
        setattr(ErrorCode, name, member)
        ErrorCode._member_map_[name] = member
        ErrorCode._value2member_map_[code] = member
        ErrorCode._member_names_.append(name)


_add_error_codes()

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
