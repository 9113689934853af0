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

# Errors.java's message per code (Kafka 4.4.0): what ApiError(error) and an exception created with no
# message of its own say (``Errors.message()``); None for NONE.  tests/integration/test_kafka_messages_java.py
# checks it against kafka-clients 4.4.0.
DEFAULT_MESSAGES: dict[int, str | None] = {
    -1: 'The server experienced an unexpected error when processing the request.',
    0: None,
    1: 'The requested offset is not within the range of offsets maintained by the server.',
    2: 'This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.',
    3: 'This server does not host this topic-partition.',
    4: 'The requested fetch size is invalid.',
    5: 'There is no leader for this topic-partition as we are in the middle of a leadership election.',
    6: 'For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition.',
    7: 'The request timed out.',
    8: 'The broker is not available.',
    9: 'The replica is not available for the requested topic-partition. Produce/Fetch requests and other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition.',
    10: 'The request included a message larger than the max message size the server will accept.',
    11: 'The controller moved to another broker.',
    12: 'The metadata field of the offset request was too large.',
    13: 'The server disconnected before a response was received.',
    14: "The coordinator is loading and hence can't process requests.",
    15: 'The coordinator is not available.',
    16: 'This is not the correct coordinator.',
    17: 'The request attempted to perform an operation on an invalid topic.',
    18: 'The request included message batch larger than the configured segment size on the server.',
    19: 'Messages are rejected since there are fewer in-sync replicas than required.',
    20: 'Messages are written to the log, but to fewer in-sync replicas than required.',
    21: 'Produce request specified an invalid value for required acks.',
    22: 'Specified group generation id is not valid.',
    23: "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list.",
    24: 'The group id is invalid.',
    25: 'The coordinator is not aware of this member.',
    26: 'The session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms).',
    27: 'The group is rebalancing, so a rejoin is needed.',
    28: 'The committing offset data size is not valid.',
    29: 'Topic authorization failed.',
    30: 'Group authorization failed.',
    31: 'Cluster authorization failed.',
    32: 'The timestamp of the message is out of acceptable range.',
    33: 'The broker does not support the requested SASL mechanism.',
    34: 'Request is not valid given the current SASL state.',
    35: 'The version of API is not supported.',
    36: 'Topic with this name already exists.',
    37: 'Number of partitions is below 1.',
    38: 'Replication factor is below 1 or larger than the number of available brokers.',
    39: 'Replica assignment is invalid.',
    40: 'Configuration is invalid.',
    41: 'This is not the correct controller for this cluster.',
    42: 'This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.',
    43: 'The message format version on the broker does not support the request.',
    44: 'Request parameters do not satisfy the configured policy.',
    45: 'The broker received an out of order sequence number.',
    46: 'The broker received a duplicate sequence number.',
    47: 'Producer attempted to produce with an old epoch.',
    48: 'The producer attempted a transactional operation in an invalid state.',
    49: 'The producer attempted to use a producer id which is not currently assigned to its transactional id.',
    50: 'The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms).',
    51: 'The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.',
    52: 'Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer.',
    53: 'Transactional Id authorization failed.',
    54: 'Security features are disabled.',
    55: 'The broker did not attempt to execute this operation. This may happen for batched RPCs where some operations in the batch failed, causing the broker to respond without trying the rest.',
    56: 'Disk error when trying to access log file on the disk.',
    57: 'The user-specified log directory is not found in the broker config.',
    58: 'SASL Authentication failed.',
    59: "This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question. This could happen if, for instance, the producer's records were deleted because their retention time had elapsed. Once the last records of the producerId are removed, the producer's metadata is removed from the broker, and future appends by the producer will return this exception.",
    60: 'A partition reassignment is in progress.',
    61: 'Delegation Token feature is not enabled.',
    62: 'Delegation Token is not found on server.',
    63: 'Specified Principal is not valid Owner/Renewer.',
    64: 'Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels.',
    65: 'Delegation Token authorization failed.',
    66: 'Delegation Token is expired.',
    67: 'Supplied principalType is not supported.',
    68: 'The group is not empty.',
    69: 'The group id does not exist.',
    70: 'The fetch session ID was not found.',
    71: 'The fetch session epoch is invalid.',
    72: 'There is no listener on the leader broker that matches the listener on which metadata request was processed.',
    73: 'Topic deletion is disabled.',
    74: 'The leader epoch in the request is older than the epoch on the broker.',
    75: 'The leader epoch in the request is newer than the epoch on the broker.',
    76: 'The requesting client does not support the compression type of given partition.',
    77: 'Broker epoch has changed.',
    78: 'The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing.',
    79: 'The group member needs to have a valid member id before actually entering a consumer group.',
    80: 'The preferred leader was not available.',
    81: 'The group has reached its maximum size.',
    82: 'The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.',
    83: 'Eligible topic partition leaders are not available.',
    84: 'Leader election not needed for topic partition.',
    85: 'No partition reassignment is in progress.',
    86: 'Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.',
    87: 'This record has failed the validation on broker and hence will be rejected.',
    88: 'There are unstable offsets that need to be cleared.',
    89: 'The throttling quota has been exceeded.',
    90: 'There is a newer producer with the same transactionalId which fences the current one.',
    91: 'A request illegally referred to a resource that does not exist.',
    92: 'A request illegally referred to the same resource twice.',
    93: 'Requested credential would not meet criteria for acceptability.',
    94: 'Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters.',
    95: 'The given update version was invalid.',
    96: 'Unable to update finalized features due to an unexpected server error.',
    97: 'Request principal deserialization failed during forwarding. This indicates an internal error on the broker cluster security setup.',
    98: 'Requested snapshot was not found.',
    99: 'Requested position is not greater than or equal to zero, and less than the size of the snapshot.',
    100: 'This server does not host this topic ID.',
    101: 'This broker ID is already in use.',
    102: 'The given broker ID was not registered.',
    103: "The log's topic ID did not match the topic ID in the request.",
    104: 'The clusterId in the request does not match that found on the server.',
    105: 'The transactionalId could not be found.',
    106: 'The fetch session encountered inconsistent topic ID usage.',
    107: 'The new ISR contains at least one ineligible replica.',
    108: 'The AlterPartition request successfully updated the partition state but the leader has changed.',
    109: 'The requested offset is moved to tiered storage.',
    110: 'The member epoch is fenced by the group coordinator. The member must abandon all its partitions and rejoin.',
    111: 'The instance ID is still used by another member in the consumer group. That member must leave first.',
    112: 'The assignor or its version range is not supported by the consumer group.',
    113: 'The member epoch is stale. The member must retry after receiving its updated member epoch via the ConsumerGroupHeartbeat API.',
    114: 'The request was sent to an endpoint of the wrong type.',
    115: 'This endpoint type is not supported yet.',
    116: 'This controller ID is not known.',
    117: 'Client sent a push telemetry request with an invalid or outdated subscription ID.',
    118: 'Client sent a push telemetry request larger than the maximum size the broker will accept.',
    119: 'The controller has considered the broker registration to be invalid.',
    120: 'The server encountered an error with the transaction. The client can abort the transaction to continue using this transactional ID.',
    121: 'The record state is invalid. The acknowledgement of delivery could not be completed.',
    122: 'The share session was not found.',
    123: 'The share session epoch is invalid.',
    124: 'The coordinator rejected the request because the state epoch did not match.',
    125: "The voter key doesn't match the receiving replica's key.",
    126: 'The voter is already part of the set of voters.',
    127: 'The voter is not part of the set of voters.',
    128: 'The regular expression is not valid.',
    129: 'Client metadata is stale. The client should rebootstrap to obtain new metadata.',
    130: 'The supplied topology is invalid.',
    131: 'The supplied topology epoch is invalid.',
    132: 'The supplied topology epoch is outdated.',
    133: 'The limit of share sessions has been reached.',
    134: 'DeleteGroups could not complete; see the error message on the per-group result for details.',
    135: 'The broker could not process the topology description update; see the error message for details.',
    136: 'The given controller ID was not registered.',
}


def default_message(error: ErrorCode | int) -> str | None:
    """Kafka's message for ``error`` (``Errors.message()``): what ``new ApiError(error)`` carries."""
    return DEFAULT_MESSAGES.get(int(error))


__all__ = [
    "ErrorCode",
    "DEFAULT_MESSAGES",
    "default_message",
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
