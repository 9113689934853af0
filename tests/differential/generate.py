"""Requests from Kafka 4.4's schemas: a valid request for any (key, version), and mutations of it.

The valid request is built by walking the request's schema for that version: each field gets a
value from a rule on what the field *is* (its ``entityType``, name and type: a topic name, a
partition index, a producer epoch, a timeout), chosen from the state the case needs set up (a
topic with records, a group with a stable member, a transactional producer).  The few things a
schema does not say (which kind of group an API's GroupId names, which topics an API destroys)
are in ``PROFILES``, one line per API.

A mutation changes one place of the valid tree in a way a buggy client might: an array entry
listed twice, an empty array, null where the version allows it, an unknown name or id, a string
of 250 characters, negative, zero and extreme numbers (per kind: timeouts, epochs, offsets,
sentinel timestamps, partition indexes, replica ids, max bytes), a flipped bool, a corrupt or
otherwise wrong record batch.  Case 0 of each (key, version) is the valid request; the others
carry one mutation, or two (a fifth of them), drawn without repeats from every place and kind the
request has, with a seed: the same seed gives the same cases.
"""

from __future__ import annotations

import base64
import copy
import random
import struct
import time
import uuid
import zlib
from dataclasses import dataclass, field
from typing import Any

from protocol.records import build_batch

from . import schema
from .schema import INT_RANGE, Field
from .state import Lazy, assignment, ref, streams_join, subscription

NODE_ID = 1  # both brokers run as node 1 (Kafka's bench/brokers.py numbers its nodes from 1)
# written into every record batch, the same on both sides: the start of today (UTC), so that no record is
# older than a topic's retention.ms (7 days): with a fixed date, both brokers' retention sweeps (every 5
# minutes on Kafka, at their own moments) deleted the records, moving the log start offsets apart
RECORD_TIMESTAMP = int(time.time()) // 86_400 * 86_400_000
LONG_NAME = 250  # one more than Kafka's longest topic name (249)
# how long past a request's own timeout an answer is waited for: a broker on a loaded machine (a JVM
# collecting, two cores shared by several brokers) stalled past 2 s now and then, on either side
ANSWER_MARGIN_S = 5.0

# What a schema does not say: per API (by schema name without "Request"), the state its requests
# are about.  group: which group its GroupId names ("classic": a group with a stable member;
# "offsets": an Empty group with committed offsets; "fresh": a group nobody made yet;
# "consumer"/"share"/"streams": a KIP-848/932/1071 group with one member); producer: "txn" (a
# transactional producer), "ongoing" (one with a partition in an open transaction), "offsets" (one
# with a group added to its transaction), "idempotent", "new" (a transactional id not yet used);
# fresh_topic: its topics are made for each case (it deletes or changes them); protect: fields it
# never mutates; protect_values: values a field is never mutated to (a number, or "" for a string);
# both with the reason in PROTECTED_REASONS.
PROFILES: dict[str, dict[str, Any]] = {
    "Produce": {},
    "Fetch": {},
    "ListOffsets": {},
    "Metadata": {},
    "OffsetCommit": {"group": "classic"},
    "OffsetFetch": {"group": "offsets"},
    "FindCoordinator": {"group": "offsets"},
    "JoinGroup": {"group": "fresh"},
    "Heartbeat": {"group": "classic"},
    "LeaveGroup": {"group": "classic"},
    "SyncGroup": {"group": "classic"},
    "DescribeGroups": {"group": "classic"},
    "ListGroups": {"group": "classic"},
    "CreateTopics": {"new_topic": True},
    "DeleteTopics": {"fresh_topic": True},
    "DeleteRecords": {"fresh_topic": True},
    "InitProducerId": {"producer": "new"},
    "OffsetForLeaderEpoch": {},
    "AddPartitionsToTxn": {"producer": "txn"},
    "AddOffsetsToTxn": {"producer": "txn", "group": "fresh"},
    "EndTxn": {"producer": "ongoing"},
    "WriteTxnMarkers": {"producer": "ongoing"},
    "TxnOffsetCommit": {"producer": "offsets", "group": "fresh"},
    "DescribeConfigs": {},
    "AlterConfigs": {"fresh_topic": True},
    "IncrementalAlterConfigs": {"fresh_topic": True},
    "AlterReplicaLogDirs": {"fresh_topic": True},
    "CreatePartitions": {"fresh_topic": True},
    "DeleteGroups": {"group": "offsets"},
    "ElectLeaders": {},
    "AlterPartitionReassignments": {"fresh_topic": True},
    "OffsetDelete": {"group": "offsets"},
    "DescribeTransactions": {"producer": "txn"},
    "ListTransactions": {"producer": "txn"},
    "DescribeProducers": {},
    "ConsumerGroupHeartbeat": {"group": "consumer"},
    "ConsumerGroupDescribe": {"group": "consumer"},
    "GetTelemetrySubscriptions": {},
    "PushTelemetry": {"telemetry": True},
    "ShareGroupHeartbeat": {"group": "share"},
    "ShareGroupDescribe": {"group": "share"},
    "ShareFetch": {"group": "share"},
    "ShareAcknowledge": {"group": "share"},
    "DescribeShareGroupOffsets": {"group": "share"},
    "AlterShareGroupOffsets": {"group": "share"},
    "DeleteShareGroupOffsets": {"group": "share"},
    "StreamsGroupHeartbeat": {"group": "streams"},
    "StreamsGroupDescribe": {"group": "streams"},
    "StreamsGroupTopologyDescriptionUpdate": {"group": "streams"},
    "UpdateFeatures": {"protect": {"ValidateOnly"}},
    "RemoveRaftVoter": {"protect_values": {"VoterId": {NODE_ID}}},
    "UnregisterBroker": {"protect_values": {"BrokerId": {NODE_ID}}},
    "UnregisterController": {"protect_values": {"ControllerId": {NODE_ID}}},
    "AddRaftVoter": {"protect_values": {"Name": {""}}},
}
PROTECTED_REASONS = {
    "UpdateFeatures.ValidateOnly": "a feature change would apply to every later case of the run",
    "RemoveRaftVoter.VoterId": "removing the only voter stops the cluster for every later case",
    "UnregisterBroker.BrokerId": "unregistering the only broker stops the cluster for every later case",
    "UnregisterController.ControllerId": "likewise for the only controller",
    "AddRaftVoter.Listeners.Name": "never '': an empty listener name ends Kafka 4.4's process (a ConfigException from "
        "Endpoints.fromAddVoterRequest in the raft IO thread is a fatal fault), and every later case with it",
    "CreateTopics.NumPartitions, CreatePartitions.Count": "at most 100: a topic of 2^31-1 (or thousands of) "
        "partitions keeps Kafka's controller busy for minutes, and every later case with it",
}

# Arrays that are empty in the valid request (what a client sends when it has nothing to say);
# mutations still add to none of them, but duplicate, null and empty the others.
EMPTY_ARRAYS = {"Assignments", "Configs", "ForgottenTopicsData", "AcknowledgementBatches", "Renewers",
                "ActiveTasks", "StandbyTasks", "WarmupTasks", "ClientTags", "TaskOffsets", "TaskEndOffsets",
                "StatesFilter", "TypesFilter", "StateFilters", "ProducerIdFilters", "ResourceTypes",
                "CordonedLogDirs", "OfflineLogDirs", "TopicPartitions", "Owners", "Deletions"}
PARTITION_FIELDS = {"PartitionIndex", "Partition", "Index"}
BROKER_ID_FIELDS = {"BrokerId", "LeaderId", "VoterId", "NodeId", "ControllerId", "CandidateId"}


def member_id(label: str) -> str:
    """A client-generated member id (KIP-1082: a UUID, base64url without padding: 22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid5(uuid.NAMESPACE_URL, label).bytes).decode().rstrip("=")


@dataclass
class Case:
    key: int
    version: int
    index: int
    api: str
    body: dict[str, Any]
    mutations: list[str]
    needs: dict[str, Any]  # what to set up first: see runner.setup_case
    expect_none: bool = False
    wait: float = 3.0
    scope: str = ""  # the prefix of every name the case's scope makes

    @property
    def label(self) -> str:
        return f"{self.api} v{self.version} #{self.index}"


@dataclass
class Scope:
    """The names one (key, version) uses: its topics, and per case its group and transactional id.
    ``run``: a tag of the run's own (Differential.run_tag), so that brokers that ran the tester before
    (a reproducer, another seed against the same brokers) hold nothing under the names of this run: a
    group a former run left, expiring or removed on each broker's own schedule, would be listed by one
    and not the other."""

    key: int
    version: int
    run: str = ""
    prefix: str = ""
    topics: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.prefix = f"dt-{self.run}-k{self.key}v{self.version}" if self.run else f"dt-k{self.key}v{self.version}"
        self.topics = {self.topic("a"): 3, self.topic("b"): 1}

    def topic(self, which: str, case: int | None = None) -> str:
        return f"{self.prefix}-{which}" if case is None else f"{self.prefix}-c{case}-{which}"


class _Walk:
    """The valid-request rules, for one case."""

    def __init__(self, api: str, version: int, scope: Scope, index: int, profile: dict[str, Any]) -> None:
        self.api = api
        self.version = version
        self.scope = scope
        self.index = index
        self.profile = profile
        fresh = profile.get("fresh_topic")
        self.topic_a = scope.topic("a", index if fresh else None)
        self.topic_b = scope.topic("b", index if fresh else None)
        self.group = f"{scope.prefix}-c{index}-g"
        self.tid = f"{scope.prefix}-c{index}-tx"
        self.member = member_id(self.group)
        self.new_topic = scope.topic("new", index)
        self.user = f"{scope.prefix}-c{index}-u"
        kind = profile.get("producer")
        self.producer = {"txn": self.tid, "ongoing": self.tid, "offsets": self.tid, "idempotent": "idempotent"}.get(
            kind or "", self.tid)
        self.needs: dict[str, Any] = {"topics": {self.topic_a: 3, self.topic_b: 1}} if fresh else {}
        gkind = profile.get("group")
        if gkind in ("classic", "offsets", "consumer", "share", "streams"):
            self.needs["group"] = (gkind, self.group, self.member, self.topic_a)
        if kind in ("txn", "ongoing", "offsets"):
            self.needs["producer"] = (kind, self.tid, self.topic_a, self.group)
        if profile.get("telemetry"):
            self.needs["telemetry"] = self.group

    # --- the tree ----------------------------------------------------------------------------------
    def struct(self, fields: list[Field], topic: str | None, index: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        names = {f.name for f in fields if f.present(self.version)}
        has_name = any(f.entity_type == "topicName" and not f.is_array for f in fields if f.present(self.version))
        for f in fields:
            if not f.present(self.version):
                continue
            if f.name == "TopicId" and has_name:
                out[f.name] = uuid.UUID(int=0)  # by name when the version has both (Metadata, DeleteTopics)
                continue
            out[f.name] = self.field(f, topic, index, names)
        return out

    def field(self, f: Field, topic: str | None, index: int, siblings: set[str]) -> Any:
        if f.is_array and f.is_struct:
            if f.name in EMPTY_ARRAYS and not (self.api == "SyncGroup" and f.name == "Assignments"):
                return []
            return [self.struct(f.fields, t, i) for i, t in enumerate(self.entries(f, topic))]
        if f.is_struct:
            if f.is_nullable(self.version) and f.name in ("Cursor", "UserEndpoint", "ReplicaState"):
                return None if f.name != "ReplicaState" else self.struct(f.fields, topic, 0)
            return self.struct(f.fields, topic, index)
        value = self.array(f, topic) if f.is_array else self.primitive(f, topic, index, siblings)
        if value is None and not f.is_nullable(self.version):
            return copy.copy(f.default) if f.default is not None else schema._zero(f.type)
        return value

    def entries(self, f: Field, topic: str | None) -> list[str | None]:
        """The topic each entry of a struct array is about: one entry, or for partitions two (0, 1)."""
        names = {g.name for g in f.fields if g.present(self.version)}
        if names & PARTITION_FIELDS and ("Partitions" in f.name or f.name in ("PartitionData", "Partitions")):
            parts = self.partitions(topic)
            return [topic] * min(2, parts)
        if any(g.entity_type == "topicName" or g.name == "TopicId" for g in f.fields if g.present(self.version)):
            return [self.topic_a]
        return [topic]

    def partitions(self, topic: str | None) -> int:
        return 1 if topic == self.topic_b else 3

    def array(self, f: Field, topic: str | None) -> Any:
        t = topic or self.topic_a
        if f.name in EMPTY_ARRAYS or f.name in ("SourceTopicRegex",):
            return []
        if f.element == "int32" and f.name in ("Partitions", "PartitionIndexes", "NewIsr", "PreferredSuccessors"):
            return list(range(min(2, self.partitions(t))))
        if f.entity_type == "brokerId":
            return [NODE_ID]
        if f.entity_type == "topicName":
            return [self.new_topic if self.api == "CreateTopics" else t]
        if f.entity_type == "groupId":
            return [self.group]
        if f.entity_type == "transactionalId":
            return [self.tid]
        if f.name == "CoordinatorKeys":
            return [self.group]
        if f.name == "ConfigurationKeys":
            return None
        if f.name == "AcknowledgeTypes":
            return [1]
        return []

    def primitive(self, f: Field, topic: str | None, index: int, siblings: set[str]) -> Any:
        api, name, t = self.api, f.name, f.type
        topic = topic or self.topic_a
        et = f.entity_type
        if (api, name) in RULES:  # what one API's field is beats what the field's kind is
            value = RULES[(api, name)]
            return value(self) if callable(value) and not isinstance(value, (type, Lazy)) else value
        if et == "topicName":
            if api == "CreateTopics":
                return self.new_topic
            return topic
        if name == "TopicId":
            return ref("topic_id", topic)
        if et == "groupId" or (name == "GroupId" and t == "string"):
            return self.group
        if et == "transactionalId":
            return self.tid
        if et == "producerId":
            return -1 if api == "InitProducerId" else ref("producer_id", self.producer)
        if name == "ProducerEpoch":
            return -1 if api == "InitProducerId" else ref("producer_epoch", self.producer)
        if name == "MemberId":
            return self.member_id()
        if name in ("GenerationId", "GenerationIdOrMemberEpoch"):
            if api == "TxnOffsetCommit":
                return -1
            return ref("generation", self.group)
        if name == "MemberEpoch":
            if api == "OffsetFetch":
                return -1
            return ref("member_epoch", self.group)
        if name in PARTITION_FIELDS:
            return index
        if et == "brokerId" or name in BROKER_ID_FIELDS:
            return f.default if name == "ReplicaId" else NODE_ID
        if name == "ClusterId":
            return None if f.is_nullable(self.version) else Lazy("cluster-id", lambda s: s.cluster_id)
        if name == "Records":
            return build_batch([(b"k0", b"v0", []), (b"k1", b"v1", [])], base_timestamp=RECORD_TIMESTAMP)
        value = RULES.get((api, name), RULES.get(name, _MISSING))
        if value is not _MISSING:
            return value(self) if callable(value) and not isinstance(value, (type, Lazy)) else value
        if name in ("GroupInstanceId", "InstanceId", "RackId", "Reason", "ServerAssignor", "SubscribedTopicRegex"):
            return None
        return copy.copy(f.default)

    def member_id(self) -> Any:
        if self.api == "JoinGroup":
            return ""
        if self.api == "TxnOffsetCommit":
            return ""
        if self.api == "OffsetFetch":
            return None
        return ref("member_id", self.group)


_MISSING = object()
MiB = 1 << 20

# Values by field name (or (api, field name)): a value, or a function of the walk.
RULES: dict[Any, Any] = {
    "TimeoutMs": 30000, "timeoutMs": 30000, ("Produce", "TimeoutMs"): 5000, ("ListOffsets", "TimeoutMs"): 5000,
    "MaxWaitMs": 50, "MinBytes": 1, "MaxBytes": MiB, "PartitionMaxBytes": MiB, "MaxRecords": 100, "BatchSize": 100,
    "FetchOffset": 0, "Acks": -1, "IsolationLevel": 0, "SessionId": 0, "Timestamp": -1,
    "CommittedOffset": 1, "CommittedMetadata": "", "RetentionTimeMs": -1,
    "SessionTimeoutMs": 30000, "RebalanceTimeoutMs": 30000, "ProtocolType": "consumer", "ProtocolName": "range",
    ("JoinGroup", "Name"): "range", ("JoinGroup", "Metadata"): lambda w: subscription([w.topic_a]),
    ("SyncGroup", "Assignment"): lambda w: assignment(w.topic_a, [0]),
    "NumPartitions": 2, ("CreateTopics", "ReplicationFactor"): 1, ("CreatePartitions", "Count"): 4,
    ("CreateTopics", "Name"): lambda w: w.new_topic,
    ("AlterConfigs", "Name"): "retention.ms", ("IncrementalAlterConfigs", "Name"): "retention.ms",
    ("AlterConfigs", "Value"): "86400000", ("IncrementalAlterConfigs", "Value"): "86400000",
    ("AlterConfigs", "ResourceType"): 2, ("IncrementalAlterConfigs", "ResourceType"): 2,
    ("DescribeConfigs", "ResourceType"): 2,
    ("AlterConfigs", "ResourceName"): lambda w: w.topic_a, ("IncrementalAlterConfigs", "ResourceName"): lambda w: w.topic_a,
    ("DescribeConfigs", "ResourceName"): lambda w: w.topic_a,
    ("CreateAcls", "ResourceType"): 2, ("CreateAcls", "ResourceName"): "dt-acl", "ResourcePatternType": 3,
    "Principal": "User:alice", ("CreateAcls", "Host"): "*", "Operation": 3, "PermissionType": 3,
    "ResourceTypeFilter": 2, "ResourceNameFilter": None, "PatternTypeFilter": 1, "PrincipalFilter": None,
    "HostFilter": None, ("DescribeAcls", "Operation"): 1, ("DeleteAcls", "Operation"): 1,
    ("DescribeAcls", "PermissionType"): 1, ("DeleteAcls", "PermissionType"): 1,
    ("AlterClientQuotas", "EntityType"): "client-id", ("AlterClientQuotas", "EntityName"): lambda w: w.user,
    ("DescribeClientQuotas", "EntityType"): "client-id", "MatchType": 0, "Match": "dt-client",
    ("AlterClientQuotas", "Key"): "producer_byte_rate", ("AlterClientQuotas", "Value"): 1048576.0,
    ("AlterUserScramCredentials", "Name"): lambda w: w.user, ("DescribeUserScramCredentials", "Name"): lambda w: w.user,
    ("AlterUserScramCredentials", "Mechanism"): 1, "Iterations": 8192, "Salt": b"salt-of-the-differential",
    "SaltedPassword": bytes(range(32)),
    ("SaslHandshake", "Mechanism"): "PLAIN", "AuthBytes": b"\0alice\0alice-secret",
    "ClientSoftwareName": "mockbroker-differential", "ClientSoftwareVersion": "1.0",
    ("FindCoordinator", "Key"): lambda w: w.group, "KeyType": 0,
    "Committed": True, "CoordinatorEpoch": 0, "TransactionResult": False,
    "TransactionTimeoutMs": 60000, "Enable2Pc": False, "KeepPreparedTxn": False,
    "DurationFilter": -1, "ResponsePartitionLimit": 2000,
    "ClientInstanceId": lambda w: ref("client_instance_id", w.group) if w.api == "PushTelemetry" else uuid.UUID(int=0),
    ("PushTelemetry", "SubscriptionId"): lambda w: ref("subscription_id", w.group),
    "CompressionType": 0, "Metrics": b"", "Terminating": False,
    "ShareSessionEpoch": 0, "StartOffset": 0, ("DeleteRecords", "Offset"): 1,
    "Path": Lazy("log-dir", lambda s: s.log_dir()),
    "ExpiryTimePeriodMs": -1, "RenewPeriodMs": -1, "MaxLifetimeMs": -1, "Hmac": b"not-a-token-hmac",
    "OwnerPrincipalType": None, "OwnerPrincipalName": None, "PrincipalType": "User", "PrincipalName": "alice",
    "EndpointType": 1, "ElectionType": 0,
    ("UpdateFeatures", "Feature"): "group.version", "MaxVersionLevel": 1, "UpgradeType": 1, "ValidateOnly": True,
    ("UpdateFeatures", "ValidateOnly"): True, ("AlterClientQuotas", "ValidateOnly"): False,
    ("AddRaftVoter", "VoterId"): 9, ("RemoveRaftVoter", "VoterId"): 9, ("UpdateRaftVoter", "VoterId"): 9,
    ("AddRaftVoter", "Name"): "CONTROLLER", ("AddRaftVoter", "Host"): "127.0.0.1", ("AddRaftVoter", "Port"): 9,
    "AckWhenCommitted": True, "VoterDirectoryId": uuid.UUID(int=9),
    ("UnregisterBroker", "BrokerId"): 9, ("UnregisterController", "ControllerId"): 9,
    ("DescribeQuorum", "TopicName"): "__cluster_metadata",
    ("ConsumerGroupHeartbeat", "SubscribedTopicNames"): lambda w: [w.topic_a],
    ("ShareGroupHeartbeat", "SubscribedTopicNames"): lambda w: [w.topic_a],
    "IncludeSynonyms": False, "IncludeDocumentation": False, "AllowAutoTopicCreation": False,
}


def _rules_for_arrays(walk: _Walk, f: Field) -> Any:
    value = RULES.get((walk.api, f.name))
    return value(walk) if callable(value) and not isinstance(value, Lazy) else value


def valid_request(key: int, version: int, scope: Scope, index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the valid request body of case ``index``, what it needs set up)."""
    msg = schema.request(key)
    api = msg.name.removesuffix("Request")
    w = _Walk(api, version, scope, index, PROFILES.get(api, {}))
    if api == "StreamsGroupHeartbeat":
        body = streams_join(w.group, ref("member_id", w.group), w.topic_a)  # type: ignore[arg-type]
        body["MemberEpoch"] = ref("member_epoch", w.group)
        # the member heartbeats after its join (the setup's): Kafka refuses a topology outside a (re-)join
        # ("Topology can only be provided when (re-)joining."), so the valid heartbeat carries none
        body["Topology"] = None
        body = _fit(msg.fields, body, version, w)
    else:
        body = w.struct(msg.fields, None, 0)
        for f in msg.fields:  # top-level arrays a rule names (SubscribedTopicNames)
            if f.present(version) and f.is_array and (api, f.name) in RULES:
                body[f.name] = _rules_for_arrays(w, f)
    return body, w.needs


def _fit(fields: list[Field], data: dict[str, Any], version: int, w: _Walk) -> dict[str, Any]:
    """A template filled to ``version``'s fields: absent ones by the rules, extra ones dropped."""
    out = {}
    for f in fields:
        if not f.present(version):
            continue
        if f.name in data:
            v = data[f.name]
            if f.is_struct and isinstance(v, dict):
                v = _fit(f.fields, v, version, w)
            elif f.is_struct and f.is_array and isinstance(v, list):
                v = [_fit(f.fields, e, version, w) if isinstance(e, dict) else e for e in v]
            out[f.name] = v
        else:
            out[f.name] = w.field(f, None, 0, set())
    return out


# --- mutations ---------------------------------------------------------------------------------------

@dataclass
class Site:
    path: tuple[Any, ...]  # keys and indexes from the root
    field: Field
    value: Any

    @property
    def where(self) -> str:
        out = ""
        for p in self.path:
            out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
        return out


def sites(fields: list[Field], tree: dict[str, Any], version: int, path: tuple[Any, ...] = ()) -> list[Site]:
    out = []
    for f in fields:
        if not f.present(version) or f.name not in tree:
            continue
        v = tree[f.name]
        here = (*path, f.name)
        out.append(Site(here, f, v))
        if f.is_struct and f.is_array and isinstance(v, list):
            for i, e in enumerate(v):
                out += sites(f.fields, e, version, (*here, i))
        elif f.is_struct and isinstance(v, dict):
            out += sites(f.fields, v, version, here)
    return out


def _int_values(f: Field, api: str, current: Any) -> list[Any]:
    """The numbers a buggy client might send in ``f``: per kind of field, then the type's extremes."""
    lo, hi = INT_RANGE[f.type]
    name = f.name
    vals: list[Any]
    if "Timestamp" in name:
        vals = [-1, -2, -3, -4, -5, lo, hi]
    elif "Epoch" in name:
        vals = [-2, -1, 0, hi]
        if isinstance(current, Lazy):
            vals.append(current.plus(1))
        elif isinstance(current, int) and current + 1 <= hi:
            vals.append(current + 1)
    elif "Timeout" in name or "Wait" in name or name.endswith("Ms") or name.endswith("PeriodMs"):
        vals = [0, -1, 1, hi]
    elif "Offset" in name:
        vals = [-1, -2, 1000, hi, lo]
    elif name in ("Count", "NumPartitions"):
        vals = [-1, 0, 3, 100]  # not more: see PROTECTED_REASONS
    elif name in PARTITION_FIELDS:
        vals = [-1, 3, 1000, hi]
    elif f.entity_type == "brokerId" or name in BROKER_ID_FIELDS or name == "ReplicaId":
        vals = [-1, 0, 1, 2, 1000]
    elif "Bytes" in name or name in ("MaxRecords", "BatchSize"):
        vals = [0, -1, 1, hi]
    elif f.entity_type == "producerId":
        vals = [-1, 0, hi]
        if isinstance(current, Lazy):
            vals.append(current.plus(1))
    elif name == "Acks":
        vals = [0, 1, 2, -2]
    elif f.type == "int8":
        vals = [-1, 0, 1, 2, 3, 4, 5, 6, 7, 127]
    elif f.type == "int16":
        vals = [-1, 0, 1, 2, 100, hi]
    else:
        vals = [-1, 0, 1, hi, lo]
    protect = PROFILES.get(api, {}).get("protect_values", {}).get(name, set())
    return [v for v in vals if (isinstance(v, Lazy) or (lo <= v <= hi and v != current)) and v not in protect]


def _records_mutations(batch: bytes | None) -> list[tuple[str, Any]]:
    if not batch:
        return []
    out: list[tuple[str, Any]] = [("null records", None), ("empty records", b"")]

    def patched(offset: int, data: bytes, crc: bool = True) -> bytes:
        b = bytearray(batch)
        b[offset:offset + len(data)] = data
        if crc:
            from protocol.records import compute_crc
            struct.pack_into(">I", b, 17, compute_crc(b))
        return bytes(b)

    out.append(("a wrong CRC", patched(17, struct.pack(">I", (zlib.crc32(batch) ^ 0xDEAD) & 0xFFFFFFFF), crc=False)))
    for magic in (0, 1, 3):
        out.append((f"magic {magic}", patched(16, bytes([magic]))))
    out.append(("cut 5 bytes short", batch[:-5]))
    out.append(("a record count of 3 for 2 records", patched(57, struct.pack(">i", 3))))
    out.append(("compression id 5", patched(21, struct.pack(">h", 5))))
    out.append(("transactional without a producer id", patched(21, struct.pack(">h", 0x10))))
    out.append(("a batch length of 10", patched(8, struct.pack(">i", 10))))
    out.append(("two batches", batch + batch))
    out.append(("idempotent at producer id 5, sequence 0", patched(43, struct.pack(">qhi", 5, 0, 0))))
    return out


def mutations_of(site: Site, api: str, version: int, rng: random.Random, prefix: str = "dt") -> list[tuple[str, Any]]:
    """(description, new value) for each way ``site`` may be mutated (names made up start with ``prefix``)."""
    f, v = site.field, site.value
    protect = PROFILES.get(api, {}).get("protect", set())
    if f.name in protect:
        return []
    out: list[tuple[str, Any]] = []
    nullable = f.is_nullable(version)
    if f.is_array:
        if isinstance(v, list) and v:
            out.append((f"{site.where}: the first entry listed twice", v + [copy.deepcopy(v[0])]))
            out.append((f"{site.where}: empty", []))
            if not f.is_struct and f.element == "int32":
                out.append((f"{site.where}: plus -1", v + [-1]))
            elif not f.is_struct and f.element == "string":  # a primitive array's entries are no sites
                out.append((f"{site.where}[0]=an unknown name",
                            [f"{prefix}-unknown-" + format(rng.getrandbits(32), "x")] + v[1:]))
                out.append((f"{site.where}[0]=''", [""] + v[1:]))
            elif not f.is_struct and f.element == "uuid":
                out.append((f"{site.where}[0]=an unknown uuid", [uuid.UUID(int=rng.getrandbits(128))] + v[1:]))
        if nullable and v is not None:
            out.append((f"{site.where}: null", None))
        return out
    if f.is_struct:
        if nullable and v is not None:
            out.append((f"{site.where}: null", None))
        return out
    t = f.type
    if t in INT_RANGE:
        out += [(f"{site.where}={x!r}" if not isinstance(x, Lazy) else f"{site.where}=<{x.label}>", x)
                for x in _int_values(f, api, v)]
    elif t == "bool":
        out.append((f"{site.where}={not v}", not v))
    elif t == "float64":
        out += [(f"{site.where}={x!r}", x) for x in (0.0, -1.0, float("inf"), float("nan"), 1e300)]
    elif t == "uuid":
        unknown = uuid.UUID(int=rng.getrandbits(128))
        out.append((f"{site.where}=an unknown uuid", unknown))
        if v != uuid.UUID(int=0):
            out.append((f"{site.where}=the zero uuid", uuid.UUID(int=0)))
    elif t == "string":
        if v != "" and "" not in PROFILES.get(api, {}).get("protect_values", {}).get(f.name, set()):
            out.append((f"{site.where}=''", ""))
        tag = format(rng.getrandbits(32), "x")
        out.append((f"{site.where}=an unknown name", f"{prefix}-unknown-{tag}"))
        # a name of its own too (padded to the length): one shared by every case made a group of that name
        # hold what earlier cases left in it (their members, offsets), by then different on each broker
        out.append((f"{site.where}={LONG_NAME} characters", f"{prefix}-long-{tag}".ljust(LONG_NAME, "x")))
        if nullable and v is not None:
            out.append((f"{site.where}=null", None))
    elif t == "bytes":
        out.append((f"{site.where}=empty bytes", b""))
        out.append((f"{site.where}=7 bytes of 0xff", b"\xff" * 7))
        if nullable and v is not None:
            out.append((f"{site.where}=null", None))
    elif t == "records":
        out += [(f"{site.where}: {d}", x) for d, x in _records_mutations(v if isinstance(v, bytes) else None)]
    return out


def apply(tree: dict[str, Any], path: tuple[Any, ...], value: Any) -> bool:
    node: Any = tree
    for p in path[:-1]:
        try:
            node = node[p]
        except (KeyError, IndexError, TypeError):
            return False
        if node is None:
            return False
    try:
        node[path[-1]] = value
    except (KeyError, IndexError, TypeError):
        return False
    return True


def expected_wait(body: Any) -> float:
    """How long to wait for an answer: the request's own longest timeout (up to 8 s) and ANSWER_MARGIN_S more."""
    longest = 0

    def walk(t: Any) -> None:
        nonlocal longest
        if isinstance(t, dict):
            for k, v in t.items():
                if isinstance(v, int) and not isinstance(v, bool) and (
                        k in ("TimeoutMs", "timeoutMs", "MaxWaitMs", "RebalanceTimeoutMs")):
                    longest = max(longest, v)
                else:
                    walk(v)
        elif isinstance(t, list):
            for v in t:
                walk(v)

    walk(body)
    return min(max(longest, 0), 8000) / 1000 + ANSWER_MARGIN_S


def cases(key: int, version: int, count: int, seed: int, scope: Scope | None = None) -> list[Case]:
    """``count`` cases of (key, version): the valid request, then mutations of it (seeded).

    The places and kinds of mutation are drawn on case 0's tree; each case applies them to its
    own valid tree (its own group, transactional id and topics), with values drawn from a seed of
    its own."""
    scope = scope or Scope(key, version)
    msg = schema.request(key)
    api = msg.name.removesuffix("Request")
    rng = random.Random(f"{seed}:{key}:{version}")
    body0, _needs0 = valid_request(key, version, scope, 0)
    options = []
    for site in sites(msg.fields, body0, version):
        for n, _m in enumerate(mutations_of(site, api, version, random.Random(0), scope.prefix)):
            options.append((site.path, n))
    rng.shuffle(options)
    singles = iter(options)
    out = []
    for i in range(count):
        body, needs = valid_request(key, version, scope, i)
        applied: list[str] = []
        if i > 0 and options:
            if i % 5 == 0 and len(options) > 1:
                picks = rng.sample(options, 2)
            else:
                nxt = next(singles, None)
                picks = [nxt] if nxt is not None else rng.sample(options, 1)
            crng = random.Random(f"{seed}:{key}:{version}:{i}")
            # the deeper place first: a change to an array does not move the place inside it
            for path, n in sorted(picks, key=lambda p: -len(p[0])):
                site = _site_at(msg.fields, body, version, path)
                if site is None:
                    continue
                muts = mutations_of(site, api, version, crng, scope.prefix)
                if n < len(muts) and apply(body, path, muts[n][1]):
                    applied.append(muts[n][0])
        expect_none = key == 0 and body.get("Acks") == 0
        out.append(Case(key, version, i, api, body, applied, needs, expect_none, expected_wait(body), scope.prefix))
    return out


def _site_at(fields: list[Field], tree: dict[str, Any], version: int, path: tuple[Any, ...]) -> Site | None:
    for site in sites(fields, tree, version):
        if site.path == path:
            return site
    return None
