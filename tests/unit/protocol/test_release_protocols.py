"""The group protocols a release switches off, as its real broker answers them by default.

* Kafka 3.7-3.9 advertise ConsumerGroupHeartbeat (and 3.8+ ConsumerGroupDescribe) but run only the
  classic protocol (``group.coordinator.rebalance.protocols=classic``; no group.version feature):
  both answer UNSUPPORTED_VERSION, as Kafka 3.8.1 did (tests/unit/protocol/test_kafka_releases.py has the
  ApiVersions).  4.0 on, group.version 1 is finalized and the protocol runs.
* Kafka 4.1 advertises the share group APIs, but a fresh cluster leaves share.version at 0 (share
  groups are a preview): all seven answer UNSUPPORTED_VERSION, field for field as Kafka 4.1.2 did,
  until an UpdateFeatures finalizes share.version 1.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

E = ErrorCode
MEMBER = "AAAAAAAAAAAAAAAAAAAAAA"
NOT_REQUESTED = -(2**31)
REFUSED_HEARTBEAT = {"error_code": 35, "error_message": None, "member_id": None, "member_epoch": 0,
                     "heartbeat_interval": 0, "assignment": None}


def refused_group(gid: str) -> dict[str, Any]:
    return {"error_code": 35, "error_message": None, "group_id": gid, "group_state": "", "group_epoch": 0,
            "assignment_epoch": 0, "assignor_name": "", "members": [], "authorized_operations": NOT_REQUESTED}


def plain(o: Any) -> Any:
    """A decoded response as dicts and lists (no throttle time; durations in ms)."""
    if dataclasses.is_dataclass(o):
        return {f.name: plain(getattr(o, f.name)) for f in dataclasses.fields(o) if f.name != "throttle_time"}
    if isinstance(o, (list, tuple)):
        return [plain(x) for x in o]
    if hasattr(o, "total_seconds"):
        return int(o.total_seconds() * 1000)
    return o


CONSUMER_HEARTBEAT = {"group_id": "g", "member_id": "", "member_epoch": 0, "instance_id": None, "rack_id": None,
                      "rebalance_timeout": 30000, "subscribed_topic_names": ["t"], "server_assignor": None,
                      "topic_partitions": []}


@pytest.mark.parametrize("release", ["3.7", "3.8", "3.9"])
def test_3_x_refuses_the_consumer_protocol(release):
    with MockBroker(config={"mock.kafka.version": release, "mock.topics": ["t:1"]}) as b, \
            RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert plain(c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, CONSUMER_HEARTBEAT)) == REFUSED_HEARTBEAT
        if release != "3.7":  # ConsumerGroupDescribe from 3.8
            got = c.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": ["g", "h"],
                                                                "include_authorized_operations": False})
            assert plain(got) == {"groups": [refused_group("g"), refused_group("h")]}


def test_4_0_runs_the_consumer_protocol():
    with MockBroker(config={"mock.kafka.version": "4.0", "mock.topics": ["t:1"]}) as b, \
            RawKafkaClient.connect(b.bootstrap_servers) as c:
        r = c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, CONSUMER_HEARTBEAT)
        assert r.error_code == E.none and r.member_epoch == 1


SHARE_REQUESTS = [
    (ApiKey.SHARE_GROUP_HEARTBEAT, 1, {"group_id": "s", "member_id": MEMBER, "member_epoch": 0, "rack_id": None,
                                       "subscribed_topic_names": ["t"]}),
    (ApiKey.SHARE_GROUP_DESCRIBE, 1, {"group_ids": ["s", "s2"], "include_authorized_operations": False}),
    (ApiKey.SHARE_FETCH, 1, {"group_id": "s", "member_id": MEMBER, "share_session_epoch": 0, "max_wait": 100,
                             "min_bytes": 1, "max_bytes": 1000, "max_records": 10, "batch_size": 10, "topics": [],
                             "forgotten_topics_data": []}),
    (ApiKey.SHARE_ACKNOWLEDGE, 1, {"group_id": "s", "member_id": MEMBER, "share_session_epoch": 1, "topics": []}),
    (ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, {"groups": [{"group_id": "s", "topics": None},
                                                         {"group_id": "s2", "topics": None}]}),
    (ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": "s", "topics": []}),
    (ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, {"group_id": "s", "topics": []}),
]
# What Kafka 4.1.2, freshly formatted, answered each of SHARE_REQUESTS
KAFKA_4_1_2 = [
    REFUSED_HEARTBEAT,
    {"groups": [refused_group("s"), refused_group("s2")]},
    {"error_code": 35, "error_message": None, "acquisition_lock_timeout": 0, "responses": [], "node_endpoints": []},
    {"error_code": 35, "error_message": None, "responses": [], "node_endpoints": []},
    {"groups": [{"group_id": "s", "topics": [], "error_code": 35, "error_message": None},
                {"group_id": "s2", "topics": [], "error_code": 35, "error_message": None}]},
    {"error_code": 35, "error_message": "The version of API is not supported.", "responses": []},
    {"error_code": 35, "error_message": "The version of API is not supported.", "responses": []},
]


def test_4_1_refuses_share_groups_until_share_version_1():
    with MockBroker(config={"mock.kafka.version": "4.1", "mock.topics": ["t:1"]}) as b, \
            RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert [plain(c.request(key, version, body)) for key, version, body in SHARE_REQUESTS] == KAFKA_4_1_2
        r = c.request(ApiKey.UPDATE_FEATURES, 1, {"timeout": 60000, "validate_only": False, "feature_updates": [
            {"feature": "share.version", "max_version_level": 1, "upgrade_type": 1}]})
        assert (r.error_code, [x.error_code for x in r.results]) == (E.none, [E.none])
        key, version, body = SHARE_REQUESTS[0]
        joined = c.request(key, version, body)
        assert (joined.error_code, joined.member_epoch) == (E.none, 1)
