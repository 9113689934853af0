"""The checks a ConsumerGroupHeartbeat passes before its group is looked at.

Mirrors Kafka 4.4's ``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid``, in its
order and with its messages (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR), and ``HeartbeatError``, the
error a heartbeat is answered with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class HeartbeatError(Exception):
    """The error a heartbeat is answered with (``message`` None: Kafka sends none, as for a coordinator
    that is not the group's)."""

    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def rebalance_timeout_ms(req: Any) -> int:
    value = req.rebalance_timeout
    return -1 if value is None else timedelta_ms(value)


def validate_heartbeat(version: int, req: Any, assignors: Sequence[str]) -> None:
    """throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    def invalid(msg: str) -> HeartbeatError:
        return HeartbeatError(ErrorCode.invalid_request, msg)

    epoch = req.member_epoch
    if (version >= 1 or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH) and not req.member_id:
        raise invalid("MemberId can't be empty.")
    if not req.group_id:
        raise invalid("GroupId can't be empty.")
    if req.instance_id is not None and not req.instance_id:
        raise invalid("InstanceId can't be empty.")
    if req.rack_id is not None and not req.rack_id:
        raise invalid("RackId can't be empty.")
    if epoch == 0:
        if rebalance_timeout_ms(req) == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or len(req.topic_partitions) > 0:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and getattr(req, "subscribed_topic_regex", None) is None:
            raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            raise invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid("MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in assignors:
        raise HeartbeatError(ErrorCode.unsupported_assignor,
                             f"ServerAssignor {req.server_assignor} is not supported. "
                             f"Supported assignors: {', '.join(assignors)}.")
