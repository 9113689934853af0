"""Consumer groups: the classic group coordinator (Kafka's GroupCoordinator / GroupMetadata)."""

from .coordinator import GroupCoordinator, OffsetsTopicLeaders
from .metadata import GroupMetadata, GroupState, MemberMetadata

__all__ = ["GroupCoordinator", "GroupMetadata", "GroupState", "MemberMetadata", "OffsetsTopicLeaders"]
