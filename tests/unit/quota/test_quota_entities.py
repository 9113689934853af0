"""Quota entity precedence and sensor sharing, as Kafka's DefaultQuotaCallback."""

from __future__ import annotations

import pytest

from mockbroker.quota.entities import (
    DEFAULT,
    QuotaStore,
    parse_quota_spec,
    validate_quota,
)

K = "producer_byte_rate"


def store(*entities):
    s = QuotaStore()
    for i, e in enumerate(entities):
        s.set(e, K, 1000.0 * (i + 1))
    return s


LEVELS = [
    ("alice", "app"), ("alice", DEFAULT), ("alice", None), (DEFAULT, "app"),
    (DEFAULT, DEFAULT), (DEFAULT, None), (None, "app"), (None, DEFAULT),
]


@pytest.mark.parametrize("level", range(8))
def test_most_specific_of_the_eight_levels_wins(level):
    # every level from this one down is configured: the bound is this level's
    s = QuotaStore()
    for i in range(level, 8):
        s.set(LEVELS[i], K, float(i + 1))
    tags = s.metric_tags(K, "alice", "app")
    assert s.quota_limit(K, *tags) == float(level + 1)


def test_only_client_quotas_share_across_users():
    s = store((None, "app"))
    assert s.metric_tags(K, "alice", "app") == s.metric_tags(K, "bob", "app") == ("", "app")


def test_only_user_quotas_share_across_client_ids():
    s = store(("alice", None))
    assert s.metric_tags(K, "alice", "a") == s.metric_tags(K, "alice", "b") == ("alice", "")
    assert s.quota_limit(K, "bob", "") is None  # no default user quota: unlimited


def test_default_client_quota_gives_each_client_id_its_own_bucket():
    s = store((None, DEFAULT))
    assert s.metric_tags(K, "", "a") != s.metric_tags(K, "", "b")
    assert s.quota_limit(K, "", "a") == s.quota_limit(K, "", "b") == 1000.0


def test_mixed_levels_walk_in_order():
    s = store(("alice", None), (None, "app"))
    assert s.metric_tags(K, "alice", "app") == ("alice", "")  # level 3 before level 7
    assert s.metric_tags(K, "bob", "app") == ("", "app")
    assert s.metric_tags(K, "bob", "other") == ("", "other") and s.quota_limit(K, "", "other") is None


def test_validation_and_spec():
    assert validate_quota("producer_byte_rate", 1.5)
    assert validate_quota("request_percentage", 1.5) is None
    assert validate_quota("nope", 1.0) == "Invalid configuration key nope"
    assert parse_quota_spec("users/alice/clients/<default>:producer_byte_rate=5;clients/x:request_rate=2") == [
        {"user": "alice", "client-id": DEFAULT, "producer_byte_rate": 5.0}, {"client-id": "x", "request_rate": 2.0}]
