"""What real Kafka brokers answer to ApiVersions, one release each (their latest patch recorded).

Recorded by ``scripts/record_kafka_releases.py`` from single-node KRaft brokers (Maven Central's
kafka_2.13 jars, storage formatted with Kafka's defaults, so every feature is finalized at the
release's latest production level; a static quorum, so kraft.version stays 0 and is not listed
as finalized); do not edit.  ``protocol/registry.py`` reads it.
"""

from __future__ import annotations

from typing import Any

# release: the broker's version, the ApiVersions version asked, every API key's advertised
# (min, max), supported features (min, max), finalized features (level) and their epoch
RECORDED: dict[str, dict[str, Any]] = {
    "4.2": {
        "kafka": "4.2.2",
        "api_versions_request": 4,
        "api_keys": {
            0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10),
            10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6),
            16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2),
            22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2),
            28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3), 32: (1, 4), 33: (0, 2),
            34: (1, 2), 35: (1, 4), 36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2),
            40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 1),
            46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0),
            55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0),
            66: (0, 2), 68: (0, 1), 69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1),
            77: (1, 1), 78: (1, 2), 79: (1, 2), 80: (0, 1), 81: (0, 0), 83: (0, 0),
            84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1), 88: (0, 0), 89: (0, 0),
            90: (0, 1), 91: (0, 0), 92: (0, 0),
        },
        "supported_features": {
            "eligible.leader.replicas.version": (0, 1),
            "group.version": (0, 1),
            "kraft.version": (0, 1),
            "metadata.version": (7, 29),
            "share.version": (0, 1),
            "streams.version": (0, 1),
            "transaction.version": (0, 2),
        },
        "finalized_features": {
            "eligible.leader.replicas.version": 1,
            "group.version": 1,
            "metadata.version": 29,
            "share.version": 1,
            "streams.version": 1,
            "transaction.version": 2,
        },
        "finalized_features_epoch": 16,
    },
    "4.3": {
        "kafka": "4.3.1",
        "api_versions_request": 4,
        "api_keys": {
            0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10),
            10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6),
            16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2),
            22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2),
            28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3), 32: (1, 4), 33: (0, 2),
            34: (1, 2), 35: (1, 5), 36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2),
            40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 1),
            46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0),
            55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0),
            66: (0, 2), 68: (0, 1), 69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1),
            77: (1, 1), 78: (1, 2), 79: (1, 2), 80: (0, 1), 81: (0, 0), 83: (0, 0),
            84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1), 88: (0, 0), 89: (0, 0),
            90: (0, 1), 91: (0, 0), 92: (0, 0),
        },
        "supported_features": {
            "eligible.leader.replicas.version": (0, 1),
            "group.version": (0, 1),
            "kraft.version": (0, 1),
            "metadata.version": (7, 30),
            "share.version": (0, 1),
            "streams.version": (0, 1),
            "transaction.version": (0, 2),
        },
        "finalized_features": {
            "eligible.leader.replicas.version": 1,
            "group.version": 1,
            "metadata.version": 30,
            "share.version": 1,
            "streams.version": 1,
            "transaction.version": 2,
        },
        "finalized_features_epoch": 16,
    },
    "4.4": {
        "kafka": "4.4.0",
        "api_versions_request": 5,
        "api_keys": {
            0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10),
            10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6),
            16: (0, 5), 17: (0, 1), 18: (0, 5), 19: (2, 7), 20: (1, 6), 21: (0, 2),
            22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2),
            28: (0, 6), 29: (1, 3), 30: (1, 3), 31: (1, 3), 32: (1, 4), 33: (0, 2),
            34: (1, 2), 35: (1, 5), 36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2),
            40: (1, 2), 41: (1, 3), 42: (0, 3), 43: (0, 2), 44: (0, 1), 45: (0, 1),
            46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0),
            55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0),
            66: (0, 2), 68: (0, 1), 69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1),
            77: (1, 1), 78: (1, 2), 79: (1, 2), 80: (0, 1), 81: (0, 0), 83: (0, 0),
            84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1), 88: (0, 1), 89: (0, 1),
            90: (0, 1), 91: (0, 0), 92: (0, 0), 93: (0, 0), 94: (0, 0),
        },
        "supported_features": {
            "eligible.leader.replicas.version": (0, 1),
            "group.version": (0, 1),
            "kraft.version": (0, 1),
            "metadata.version": (7, 33),
            "share.version": (0, 2),
            "streams.version": (0, 1),
            "transaction.version": (0, 2),
        },
        "finalized_features": {
            "eligible.leader.replicas.version": 1,
            "group.version": 1,
            "metadata.version": 33,
            "share.version": 2,
            "streams.version": 1,
            "transaction.version": 2,
        },
        "finalized_features_epoch": 16,
    },
}
