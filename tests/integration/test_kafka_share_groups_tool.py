"""Kafka 4.4.0's own ``kafka-share-groups`` (org.apache.kafka.tools.consumer.group.ShareGroupCommand, run by
the harness of tests/integration/realkafka.py) against mockbroker: it lists a share group's members
(ShareGroupDescribe), resets its start offsets when the group is empty (AlterShareGroupOffsets), shows them
with the lag (DescribeShareGroupOffsets), deletes them (DeleteShareGroupOffsets) and the group
(DeleteGroups), as it does on a real Kafka 4.4.0."""

from __future__ import annotations

import uuid

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.records import build_batch
from protocol.registry import ApiKey

from .realkafka import kafka_tool


def rows(stdout: str) -> list[list[str]]:
    """The tool's table, without its header."""
    return [line.split() for line in stdout.strip().splitlines()[1:] if line.strip()]


def test_kafka_share_groups_tool():
    # the partitions initialized at the next heartbeat, not one assignment interval later (Kafka 4.3+: 1 s)
    with MockBroker(config={"group.share.assignment.interval.ms": 0}) as b, \
            RawKafkaClient.connect(b.bootstrap_servers, client_id="cli") as c:
        b.create_topic("q", 2)
        body = {"acks": 1, "timeout": 1000, "topic_data": [{"name": "q", "partition_data": [
            {"index": 0, "records": build_batch([(b"k", b"v", [])] * 5, base_timestamp=1)}]}]}
        assert c.request(ApiKey.PRODUCE, 9, body).responses[0].partition_responses[0].error_code == 0
        member = str(uuid.uuid4())

        def heartbeat(epoch: int, topics: list[str] | None = None) -> int:
            r = c.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, {"group_id": "sg", "member_id": member,
                                                             "member_epoch": epoch, "rack_id": None,
                                                             "subscribed_topic_names": topics})
            assert r.error_code == 0, r
            return int(r.member_epoch)

        # a new group is at epoch 1 (Kafka 4.3+): the join brings it to 2, the partitions initialized to 3
        assert heartbeat(heartbeat(0, ["q"])) == 3

        def tool(*args: str) -> list[list[str]]:
            r = kafka_tool("kafka-share-groups", "--bootstrap-server", b.bootstrap_servers, *args)
            assert r.returncode == 0, r.stdout + r.stderr
            return rows(r.stdout)

        assert tool("--describe", "--group", "sg", "--members") == [["sg", member, "/127.0.0.1", "cli", "2", "q:0,1"]]
        heartbeat(-1)  # offsets are reset on an empty group only
        assert sorted(tool("--reset-offsets", "--group", "sg", "--topic", "q", "--to-earliest", "--execute")) == [
            ["sg", "q", "0", "0"], ["sg", "q", "1", "0"]]
        assert sorted(tool("--describe", "--group", "sg")) == [["sg", "q", "0", "0", "5"], ["sg", "q", "1", "0", "0"]]
        assert tool("--delete-offsets", "--group", "sg", "--topic", "q") == [["q", "Successful"]]
        r = kafka_tool("kafka-share-groups", "--bootstrap-server", b.bootstrap_servers, "--delete", "--group", "sg")
        assert (r.returncode, r.stdout.strip()) == (0, "Deletion of requested share groups ('sg') was successful.")
        assert b.share_group("sg") is None
