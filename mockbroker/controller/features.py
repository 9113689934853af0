"""The cluster's feature levels: what ApiVersions finalizes and UpdateFeatures changes.

Kafka's ``FeatureControlManager`` (the controller's finalized levels and ``updateFeatures``) with the
release's features as a real broker of ``mock.kafka.version`` lists them (``KAFKA_FEATURES``: Kafka
4.2-4.4 recorded from real brokers: metadata.version, group.version, share.version,
streams.version, transaction.version, eligible.leader.replicas.version, kraft.version).  A fresh
cluster finalizes each at the level ``kafka-storage format`` gives it (transaction.version at
``mock.transaction.version`` when set).  ``kraft.version`` is the quorum's (``quorum.py``): 0, a
static quorum, until upgraded.

What a level changes here: transaction.version is the transaction coordinator's (TV2's epoch bump
per transaction) and what clients read to pick EndTxn v5 / Produce v12 without AddPartitionsToTxn
(``Cluster`` hands a change to the coordinator through ``on_change``).  group.version and
share.version switch the consumer (KIP-848) and share (KIP-932) group protocols on (``enables``):
off where the release has no such feature (Kafka 3.x: ``group.coordinator.rebalance.protocols``
defaults to classic) or has it at level 0 (Kafka 4.1's share.version, a preview until an
UpdateFeatures raises it), and their APIs then answer UNSUPPORTED_VERSION as Kafka's do.  The other
levels (metadata.version, streams.version, eligible.leader.replicas.version) are validated, stored
and reported, and change nothing else.

The finalized features epoch is the metadata log offset the broker's image is at (Kafka's
``FinalizedFeatures.finalizedFeaturesEpoch``: the image's offset, so it moves with every metadata
change and the idle no-op records, as ``kafka-features describe`` shows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from protocol.errors import ErrorCode
from protocol.registry import KAFKA_FEATURES

from .quorum import ControllerQuorum

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
GROUP_VERSION = "group.version"  # GroupVersion.GV_1: the consumer rebalance protocol
SHARE_VERSION = "share.version"  # ShareVersion.SV_1: share groups
# FeatureUpdate.UpgradeType codes
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3

# MetadataVersion (Kafka 4.4.0): feature level -> (name, whether its metadata changed from the previous)
METADATA_VERSIONS: dict[int, tuple[str, bool]] = {
    7: ("3.3-IV3", True), 8: ("3.4-IV0", True), 9: ("3.5-IV0", False), 10: ("3.5-IV1", False),
    11: ("3.5-IV2", True), 12: ("3.6-IV0", False), 13: ("3.6-IV1", True), 14: ("3.6-IV2", True),
    15: ("3.7-IV0", True), 16: ("3.7-IV1", False), 17: ("3.7-IV2", True), 18: ("3.7-IV3", False),
    19: ("3.7-IV4", False), 20: ("3.8-IV0", False), 21: ("3.9-IV0", False), 22: ("4.0-IV0", False),
    23: ("4.0-IV1", True), 24: ("4.0-IV2", False), 25: ("4.0-IV3", False), 26: ("4.1-IV0", False),
    27: ("4.1-IV1", False), 28: ("4.2-IV0", False), 29: ("4.2-IV1", False), 30: ("4.3-IV0", True),
    31: ("4.4-IV0", False), 32: ("4.4-IV1", True), 33: ("4.4-IV2", True), 34: ("4.5-IV0", False),
}
MINIMUM_METADATA_VERSION = 7  # MetadataVersion.MINIMUM_VERSION, 3.3-IV3
CIDR_ACL_METADATA_VERSION = 32  # 4.4-IV1: ACL hosts may be CIDR blocks (MetadataVersion.isCidrAclSupported)

# FeatureVersion.dependencies(): (feature, level) -> the levels of other features it needs
DEPENDENCIES: dict[tuple[str, int], dict[str, int]] = {
    ("eligible.leader.replicas.version", 1): {METADATA_VERSION: 23},  # ELRV_1 needs 4.0-IV1
}


def metadata_changed(a: int, b: int) -> bool:
    """``MetadataVersion.checkIfMetadataChanged``: whether a version between the two (the higher
    included) changed the metadata."""
    low, high = min(a, b), max(a, b)
    return any(METADATA_VERSIONS.get(level, ("", False))[1] for level in range(low + 1, high + 1))


class FeatureControl:
    def __init__(self, release: str, quorum: ControllerQuorum, transaction_version: int | None = None) -> None:
        self.quorum = quorum
        features = KAFKA_FEATURES.get(release, {})
        # name -> (lowest, highest) supported level (BrokerFeatures, the same on every node)
        self.supported: dict[str, tuple[int, int]] = {n: (lo, hi) for n, (lo, hi, _) in features.items()}
        self.finalized: dict[str, int] = {n: level for n, (_, _, level) in features.items()
                                          if level > 0 and n != KRAFT_VERSION}
        if transaction_version is not None and "transaction.version" in self.supported:
            self.finalized["transaction.version"] = transaction_version
        # told (name, level) when a level changes
        self.on_change: list[Callable[[str, int], None]] = []

    def level(self, name: str) -> int:
        """The finalized level of ``name`` (0 when not finalized)."""
        if name == KRAFT_VERSION:
            return self.quorum.kraft_version
        return self.finalized.get(name, 0)

    def enables(self, name: str) -> bool:
        """Whether the protocol feature ``name`` gates is on: the release has the feature and it is
        finalized at 1 or more (``GroupVersion.isConsumerRebalanceProtocolSupported``,
        ``ShareVersion.supportsShareGroups``, which KafkaApis checks before serving those APIs)."""
        return name in self.supported and self.level(name) >= 1

    def cidr_acls_supported(self) -> bool:
        """MetadataVersion.isCidrAclSupported: metadata.version 4.4-IV1 (32) or later."""
        return self.level(METADATA_VERSION) >= CIDR_ACL_METADATA_VERSION

    def finalized_levels(self) -> dict[str, int]:
        """What ApiVersions finalizes: every feature above level 0 (KRaft keeps no level-0 feature)."""
        out = {n: v for n, v in self.finalized.items() if v > 0}
        if self.quorum.kraft_version > 0:
            out[KRAFT_VERSION] = self.quorum.kraft_version
        return dict(sorted(out.items()))

    @property
    def epoch(self) -> int:
        """The metadata offset of the image (-1 for a release that lists no features)."""
        return self.quorum.end_offset() if self.supported else -1

    # -- UpdateFeatures ------------------------------------------------------------------------------
    def update(self, updates: Sequence[tuple[str, int, int]], validate_only: bool) -> tuple[ErrorCode, str | None]:
        """``FeatureControlManager.updateFeatures``: (feature, level, upgrade type) items, all applied or
        none; the first failure's error and message."""
        proposed = dict(self.finalized)
        proposed[METADATA_VERSION] = self.level(METADATA_VERSION)
        proposed.update({name: level for name, level, _ in updates})
        changes: list[tuple[str, int]] = []
        for name, level, upgrade_type in updates:
            error, message = self._check(name, level, upgrade_type, proposed)
            if error is not ErrorCode.none:
                return error, message
            changes.append((name, level))
        if not validate_only:
            for name, level in changes:
                self._apply(name, level)
        return ErrorCode.none, None

    def _check(self, name: str, level: int, upgrade_type: int,
               proposed: dict[str, int]) -> tuple[ErrorCode, str | None]:
        def invalid(message: str) -> tuple[ErrorCode, str]:
            return ErrorCode.invalid_update_version, f"Invalid update version {level} for feature {name}. {message}"

        if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            return invalid("The controller does not support the given upgrade type.")
        current = self.level(name)
        if level < 0:
            return invalid("A feature version cannot be less than 0.")
        lo, hi = self.supported.get(name, (0, 0))
        if not lo <= level <= hi:  # QuorumFeatures.reasonNotSupported for the local controller
            node = self.quorum.leader_id
            return invalid(f"Local controller {node} does not support this feature." if hi == 0
                           else f"Local controller {node} only supports versions {lo}-{hi}")
        if level < current and upgrade_type == UPGRADE:
            return invalid("Can't downgrade the version of this feature without setting the upgrade type to "
                           "either safe or unsafe downgrade.")
        if level > current and upgrade_type != UPGRADE:
            return invalid("Can't downgrade to a newer version.")
        if name == METADATA_VERSION:
            if level < current and metadata_changed(current, level):
                reason = ("Unsafe metadata downgrade is not supported in this version."
                          if upgrade_type == UNSAFE_DOWNGRADE else
                          "Refusing to perform the requested downgrade because it might delete metadata information.")
                return (ErrorCode.invalid_update_version,
                        f"Unsupported metadata.version downgrade from {current} to {level}. {reason}")
            return ErrorCode.none, None
        if name == KRAFT_VERSION:
            if upgrade_type != UPGRADE and level != current:
                return invalid("Can't downgrade the version of this feature.")
            return ErrorCode.none, None
        if name not in self.supported:  # Feature.featureFromName
            return invalid(f"Feature {name} not found.")
        # Feature.validateVersion: a level above 0 needs metadata.version and its dependencies
        metadata_version = proposed.get(METADATA_VERSION, 0)
        if level >= 1 and METADATA_VERSION in self.supported and metadata_version < MINIMUM_METADATA_VERSION:
            return invalid(f"{name} could not be set to {level} because it depends on "
                           f"metadata.version={MINIMUM_METADATA_VERSION} (3.3-IV3)")
        for dependency, needed in DEPENDENCIES.get((name, level), {}).items():
            if proposed.get(dependency, 0) < needed:
                return invalid(f"{name} could not be set to {level} because it depends on {dependency} level {needed}")
        return ErrorCode.none, None

    def _apply(self, name: str, level: int) -> None:
        if name == KRAFT_VERSION:
            self.quorum.upgrade_kraft_version(level, validate_only=False)
        else:
            if level > 0:
                self.finalized[name] = level
            else:
                self.finalized.pop(name, None)
            self.quorum.append()  # a FeatureLevelRecord
        for listener in self.on_change:
            listener(name, level)
