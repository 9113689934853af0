"""A streams group member speaking StreamsGroupHeartbeat and StreamsGroupDescribe over the wire, and
the word count topology it registers: shared by the wire tests against mockbroker
(tests/unit/group/test_streams_group_protocol.py) and the side-by-side one against Kafka 4.4
(tests/integration/test_streams_group_kafka.py)."""

from __future__ import annotations

import uuid
from typing import Any

from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

E = ErrorCode
SGH, SGD = ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE

REPARTITION, CHANGELOG = "wc-count-repartition", "wc-count-changelog"
# what Kafka Streams 4.4 declares for these topics (InternalTopicConfig's defaults)
REPARTITION_CONFIGS = {"cleanup.policy": "delete", "segment.bytes": "52428800", "retention.ms": "-1"}
CHANGELOG_CONFIGS = {"cleanup.policy": "compact"}


def topology(source: str = "input", epoch: int = 1, extra_source: str | None = None) -> dict:
    def info(name: str, configs: dict[str, str], rf: int) -> dict:
        return {"name": name, "partitions": 0, "replication_factor": rf,
                "topic_configs": [{"key": k, "value": v} for k, v in sorted(configs.items())]}

    sources = [source] + ([extra_source] if extra_source else [])
    return {"epoch": epoch, "subtopologies": [
        {"subtopology_id": "0", "source_topics": sources, "source_topic_regex": [], "state_changelog_topics": [],
         "repartition_sink_topics": [REPARTITION], "repartition_source_topics": [], "copartition_groups": []},
        {"subtopology_id": "1", "source_topics": [], "source_topic_regex": [],
         "state_changelog_topics": [info(CHANGELOG, CHANGELOG_CONFIGS, -1)], "repartition_sink_topics": [],
         "repartition_source_topics": [info(REPARTITION, REPARTITION_CONFIGS, 0)], "copartition_groups": []}]}


def tasks(r_tasks) -> dict[str, list[int]]:
    return {t.subtopology_id: sorted(t.partitions) for t in r_tasks or ()}


class Member:
    def __init__(self, b: Any, group: str = "wc", process: str | None = None,
                 instance_id: str | None = None) -> None:
        """``b``: a bootstrap address, or a MockBroker."""
        bootstrap = b if isinstance(b, str) else b.bootstrap_servers
        self.c = RawKafkaClient.connect(bootstrap, client_id="wc-" + (process or "p"))
        self.group = group
        self.member_id = str(uuid.uuid4())
        self.process = process or str(uuid.uuid4())
        self.instance_id = instance_id
        self.epoch = 0
        self.active: dict[str, list[int]] = {}
        self.standby: dict[str, list[int]] = {}

    def hb(self, epoch: int | None = None, topo: dict | None = None, active=None, shutdown: bool = False,
           endpoint_epoch: int = 0):
        e = self.epoch if epoch is None else epoch
        owned = self.active if active is None else active
        r = self.c.request(SGH, 1, {
            "group_id": self.group, "member_id": self.member_id, "member_epoch": e,
            "endpoint_information_epoch": endpoint_epoch, "instance_id": self.instance_id, "rack_id": None,
            "rebalance_timeout": 30_000 if e == 0 else -1,
            "topology": (topo or topology()) if e == 0 else None,
            "active_tasks": [] if e == 0 else [{"subtopology_id": s, "partitions": ps} for s, ps in owned.items()],
            "standby_tasks": [] if e == 0 else [{"subtopology_id": s, "partitions": ps}
                                                for s, ps in self.standby.items()],
            "warmup_tasks": [],
            "process_id": self.process if e == 0 else None,
            "user_endpoint": {"host": "localhost", "port": 7070} if e == 0 else None,
            "client_tags": [] if e == 0 else None, "task_offsets": None, "task_end_offsets": None,
            "shutdown_application": shutdown})
        if r.error_code == E.none:
            self.epoch = r.member_epoch
            if r.active_tasks is not None:
                self.active = tasks(r.active_tasks)
                self.standby = tasks(r.standby_tasks)
        return r

    def statuses(self, r) -> list[tuple[int, str]]:
        return [(s.status_code, s.status_detail) for s in r.status or ()]


def describe(m: Member, *groups: str):
    return m.c.request(SGD, 1, {"group_ids": list(groups) or [m.group], "include_authorized_operations": False,
                                "include_topology_description": False}).groups
