"""The group APIs at their edges, as a real Kafka 4.4.0 answers them.

Each test is a case the differential tester (tests/differential/) found answered otherwise by
mockbroker, with Kafka 4.4.0's answer as it was observed side by side: a name listed twice, an empty
list of partitions, a generation or epoch a client should not send, the fields of an error answer.
"""

from __future__ import annotations

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

E = ErrorCode


@pytest.fixture
def b():
    with MockBroker(config={"mock.topics": ["t:2"]}, clock=ManualClock()) as broker:
        yield broker


@pytest.fixture
def c(b):
    client = RawKafkaClient.connect(b.bootstrap_servers)
    yield client
    client.close()


def simple_commit(c: RawKafkaClient, group: str, partitions=(0,), version: int = 8) -> None:
    """A generation -1 commit without a member: an Empty classic group that only stores offsets."""
    r = c.request(ApiKey.OFFSET_COMMIT, version, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": "t", "partitions": [
            {"partition_index": p, "committed_offset": 1, "committed_leader_epoch": -1, "committed_metadata": ""}
            for p in partitions]}]})
    assert {p.error_code for t in r.topics for p in t.partitions} == {E.none}


class TestDeleteGroups:
    @pytest.mark.parametrize("version", [0, 3])
    def test_a_group_named_twice_is_deleted_and_answered_once(self, b, c, version):
        """KafkaApis takes the names distinct: one result, NONE (mockbroker answered it twice, the
        second GROUP_ID_NOT_FOUND since the first had deleted it)."""
        simple_commit(c, "twice")
        r = c.request(ApiKey.DELETE_GROUPS, version, {"groups_names": ["twice", "twice", "absent", "absent"]})
        assert [(x.group_id, x.error_code) for x in r.results] == [("twice", E.none), ("absent", E.group_id_not_found)]
        assert b.group("twice") is None
