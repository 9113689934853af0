"""One broker under test (``Side``) and the state the cases are built on, made through the protocol.

The same steps run on each side, so both brokers hold equal state: topics (created by CreateTopics,
records written by Produce), committed offsets (OffsetCommit), a classic group with a stable member
(JoinGroup, SyncGroup), KIP-848 consumer, share and streams group members (their heartbeats),
transactional and idempotent producers (FindCoordinator, InitProducerId, AddPartitionsToTxn),
client telemetry (GetTelemetrySubscriptions).  What a broker assigns (topic ids, producer ids,
member ids, epochs, the cluster id, ports) differs between the two: each side keeps its own in
``values``, keyed by the symbol the cases use (``Lazy``), and the normaliser maps them back.

Setup steps retry what Kafka answers while it gets ready (a coordinator loading, a leader being
elected) for up to ``SETTLE_S``; a step that still fails raises ``SetupError`` with the answer.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from protocol.records import build_batch

from . import schema
from .wire import Connection, connect

SETTLE_S = 30.0
CLASSIC_SESSION_MS = 300_000  # a classic setup member's session: longer than any scope runs
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions: both brokers run with Kafka's default
RETRIABLE = {7, 14, 15, 16, 5, 6, 3, 51, 27}  # timeouts, coordinator loading/not available/not coordinator,
# leader not available, not leader, unknown topic (metadata not yet propagated), concurrent txns, rebalance


COORDINATOR_RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


class SetupError(RuntimeError):
    """A setup step the broker did not take."""


class Lazy:
    """A value each side resolves for itself: a topic id, a producer id, a member's epoch."""

    __slots__ = ("label", "fn")

    def __init__(self, label: str, fn: Callable[[Side], Any]) -> None:
        self.label = label
        self.fn = fn

    def __call__(self, side: Side) -> Any:
        return self.fn(side)

    def __repr__(self) -> str:
        return f"<{self.label}>"

    def plus(self, delta: int) -> Lazy:
        return Lazy(f"{self.label}{delta:+d}", lambda s, f=self.fn: f(s) + delta)


def ref(kind: str, name: str) -> Lazy:
    """The value ``side.values[(kind, name)]``."""
    return Lazy(f"{kind}:{name}", lambda s: s.value(kind, name))


def resolve(tree: Any, side: Side) -> Any:
    if isinstance(tree, Lazy):
        return resolve(tree(side), side)
    if isinstance(tree, dict):
        return {k: resolve(v, side) for k, v in tree.items()}
    if isinstance(tree, list):
        return [resolve(v, side) for v in tree]
    return tree


def subscription(topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v0 (the classic ``consumer`` protocol's JoinGroup metadata)."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)  # null user data


def assignment(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v0 for one topic."""
    out = struct.pack(">hi", 0, 1) + struct.pack(">h", len(topic)) + topic.encode()
    out += struct.pack(">i", len(partitions)) + b"".join(struct.pack(">i", p) for p in partitions)
    return out + struct.pack(">i", -1)


@dataclass
class Side:
    """One broker: its address, what it advertises, and the values it assigned to the cases' state."""

    name: str  # "kafka" or "mockbroker"
    bootstrap: str
    versions: dict[int, tuple[int, int]] = field(default_factory=dict)
    values: dict[tuple[str, str], Any] = field(default_factory=dict)
    cluster_id: str = ""
    ports: dict[int, int] = field(default_factory=dict)  # port -> node id
    conn: Connection | None = None
    # (__consumer_offsets partition, topic) whose coordinator is known to know the topic (coordinator_knows)
    known_topics: set[tuple[int, str]] = field(default_factory=set)

    # --- connections -----------------------------------------------------------------------------
    def connection(self) -> Connection:
        if self.conn is None or not self.conn.usable:
            if self.conn is not None:
                self.conn.close()
            self.conn = connect(self.bootstrap)
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def value(self, kind: str, name: str) -> Any:
        try:
            return self.values[(kind, name)]
        except KeyError:
            raise SetupError(f"{self.name}: no {kind} {name!r} was set up") from None

    def top(self, api_key: int) -> int:
        """The highest version of ``api_key`` this side advertises."""
        return self.versions[api_key][1]

    # --- requests for setup ----------------------------------------------------------------------
    def call(self, api_key: int, body: dict[str, Any], version: int | None = None, wait: float = 30.0) -> dict[str, Any]:
        v = self.top(api_key) if version is None else version
        out = self.connection().call(api_key, v, resolve(body, self), wait=wait)
        if out.kind != "answer":
            raise SetupError(f"{self.name}: {schema.api_names()[api_key]} v{v} during setup: {out}")
        assert out.body is not None
        return out.body

    def retried(self, api_key: int, body: dict[str, Any]) -> dict[str, Any]:
        """``call``, again while the answer's error is a coordinator still loading or moving."""
        return self.settle(f"{schema.api_names()[api_key]}", lambda: (
            (res := self.call(api_key, body))["ErrorCode"] not in COORDINATOR_RETRIABLE, res))

    def settle(self, what: str, step: Callable[[], tuple[bool, Any]]) -> Any:
        """Repeat ``step`` (which says whether it is done) until done or ``SETTLE_S`` passed."""
        deadline = time.monotonic() + SETTLE_S
        last = None
        while True:
            done, last = step()
            if done:
                return last
            if time.monotonic() > deadline:
                raise SetupError(f"{self.name}: {what} not done after {SETTLE_S:g} s: {last}")
            time.sleep(0.05)

    def api_versions(self) -> None:
        conn = self.connection()
        out = conn.call(18, 3, {"ClientSoftwareName": "mockbroker-differential", "ClientSoftwareVersion": "1"})
        if out.kind != "answer" or out.body is None or out.body["ErrorCode"] != 0:
            raise SetupError(f"{self.name}: ApiVersions v3: {out}")
        self.versions = {a["ApiKey"]: (a["MinVersion"], a["MaxVersion"]) for a in out.body["ApiKeys"]}
        md = self.call(3, {"Topics": [], "AllowAutoTopicCreation": False})
        self.cluster_id = md["ClusterId"]
        self.ports = {b["Port"]: b["NodeId"] for b in md["Brokers"]}

    def warm_up(self) -> None:
        """The internal topics first: a fresh Kafka creates __consumer_offsets, __transaction_state and
        __share_group_state on the first FindCoordinator for a group, a transactional id and a share
        key, and answers COORDINATOR_NOT_AVAILABLE until they have leaders; mockbroker has no such
        topics and finds a coordinator at once (docs/differences.md).  Both start from coordinators
        that are there."""
        self.find_coordinator("dt-warm-up", 0)
        self.find_coordinator("dt-warm-up", 1)
        if self.top(10) >= 6:
            try:  # a broker that cannot place share keys shows it in the FindCoordinator cases
                self.find_coordinator("dt-warm-up:AAAAAAAAAAAAAAAAAAAAAA:0", 2)
            except SetupError:
                pass
        # the transaction coordinator answers COORDINATOR_LOAD_IN_PROGRESS to InitProducerId while it
        # loads its partition, after FindCoordinator found it: one producer of each kind first
        self.init_producer("dt-warm-up")
        self.init_producer(None)
        for kind in ("producer_id", "producer_epoch"):  # no case names them: not symbols to map back to
            for key in ("dt-warm-up", "idempotent"):
                self.values.pop((kind, key), None)

    # --- topics ------------------------------------------------------------------------------------
    def create_topics(self, topics: dict[str, int]) -> None:
        """Create ``{name: partitions}`` (one replica each) and wait until each partition has a leader."""
        names = list(topics)
        for i in range(0, len(names), 200):
            chunk = names[i:i + 200]
            body = {"Topics": [{"Name": n, "NumPartitions": topics[n], "ReplicationFactor": 1, "Assignments": [],
                                "Configs": []} for n in chunk], "timeoutMs": 60000, "validateOnly": False}
            res = self.call(19, body, wait=90)
            for t in res["Topics"]:
                if t["ErrorCode"] not in (0, 36):  # TOPIC_ALREADY_EXISTS: a retry of ours
                    raise SetupError(f"{self.name}: CreateTopics {t['Name']}: error {t['ErrorCode']}")
        self.wait_topics(topics)

    def wait_topics(self, topics: dict[str, int]) -> None:
        v = min(self.top(3), 12)

        def step() -> tuple[bool, Any]:
            md = self.call(3, {"Topics": [{"Name": n, "TopicId": uuid.UUID(int=0)} for n in topics],
                               "AllowAutoTopicCreation": False}, version=v)
            missing = []
            for t in md["Topics"]:
                ready = t["ErrorCode"] == 0 and len(t["Partitions"]) == topics.get(t["Name"], -1) and all(
                    p["ErrorCode"] == 0 and p["LeaderId"] >= 0 for p in t["Partitions"])
                if ready:
                    self.values[("topic_id", t["Name"])] = t["TopicId"]
                else:
                    missing.append((t["Name"], t["ErrorCode"]))
            return not missing, missing[:5]

        self.settle("topics' leaders", step)

    def produce(self, topic: str, partition: int, count: int, timestamp: int) -> None:
        batch = build_batch([(f"k{i}".encode(), f"value-{i}".encode(), []) for i in range(count)],
                            base_timestamp=timestamp)
        v = min(self.top(0), 12)

        def step() -> tuple[bool, Any]:
            res = self.call(0, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 10000, "TopicData": [
                {"Name": topic, "PartitionData": [{"Index": partition, "Records": batch}]}]}, version=v)
            err = res["Responses"][0]["PartitionResponses"][0]["ErrorCode"]
            if err and err not in RETRIABLE:
                raise SetupError(f"{self.name}: Produce to {topic}-{partition}: error {err}")
            return err == 0, err

        self.settle(f"produce to {topic}-{partition}", step)

    # --- groups -------------------------------------------------------------------------------------
    def find_coordinator(self, key: str, key_type: int) -> None:
        v = self.top(10)

        def step() -> tuple[bool, Any]:
            res = self.call(10, {"Key": key, "KeyType": key_type, "CoordinatorKeys": [key]}, version=v)
            err = res["Coordinators"][0]["ErrorCode"] if v >= 4 else res["ErrorCode"]
            return err == 0, err

        self.settle(f"FindCoordinator {key}", step)

    def commit_offsets(self, group: str, topic: str, offsets: dict[int, int]) -> None:
        """A simple (generation -1) commit: an Empty classic group with committed offsets."""
        self.find_coordinator(group, 0)
        v = self.top(8)
        topic_key = {"TopicId": ref("topic_id", topic)} if v >= 10 else {"Name": topic}

        def step() -> tuple[bool, Any]:
            res = self.call(8, {"GroupId": group, "GenerationIdOrMemberEpoch": -1, "MemberId": "",
                                "GroupInstanceId": None, "RetentionTimeMs": -1, "Topics": [
                                    {**topic_key, "Partitions": [
                                        {"PartitionIndex": p, "CommittedOffset": o, "CommittedLeaderEpoch": -1,
                                         "CommittedMetadata": ""} for p, o in offsets.items()]}]}, version=v)
            errs = {p["ErrorCode"] for t in res["Topics"] for p in t["Partitions"]}
            return errs == {0}, errs

        self.settle(f"OffsetCommit {group}", step)

    def join_classic(self, group: str, topic: str) -> None:
        """A classic group with one stable member (JoinGroup twice for its member id, SyncGroup).

        Its session (CLASSIC_SESSION_MS) outlasts the scope: a ListGroups case lists every group of the
        scope, and a member whose session ran out just then would be Empty on one broker and Stable on
        the other by milliseconds.  A fresh Kafka's coordinator may answer NOT_COORDINATOR while it
        loads the group's partition, after FindCoordinator found it: the JoinGroup is tried again."""
        self.find_coordinator(group, 0)
        v = self.top(11)
        body = {"GroupId": group, "SessionTimeoutMs": CLASSIC_SESSION_MS, "RebalanceTimeoutMs": 30000, "MemberId": "",
                "GroupInstanceId": None, "ProtocolType": "consumer", "Reason": None,
                "Protocols": [{"Name": "range", "Metadata": subscription([topic])}]}

        def step() -> tuple[bool, Any]:
            res = self.call(11, body, version=v)
            if res["ErrorCode"] == 79:  # MEMBER_ID_REQUIRED
                body["MemberId"] = res["MemberId"]
                res = self.call(11, body, version=v)
            if res["ErrorCode"] in RETRIABLE:
                body["MemberId"] = ""
                return False, res["ErrorCode"]
            return True, res

        res = self.settle(f"JoinGroup {group}", step)
        if res["ErrorCode"] != 0:
            raise SetupError(f"{self.name}: JoinGroup {group}: error {res['ErrorCode']}")
        member, gen = res["MemberId"], res["GenerationId"]
        sync = self.call(14, {"GroupId": group, "GenerationId": gen, "MemberId": member, "GroupInstanceId": None,
                              "ProtocolType": "consumer", "ProtocolName": "range",
                              "Assignments": [{"MemberId": member, "Assignment": assignment(topic, [0])}]})
        if sync["ErrorCode"] != 0:
            raise SetupError(f"{self.name}: SyncGroup {group}: error {sync['ErrorCode']}")
        self.values[("member_id", group)] = member
        self.values[("generation", group)] = gen

    def coordinator_knows(self, group: str, topic: str) -> None:
        """Wait until the coordinator of ``group`` knows ``topic``.  Kafka's group coordinator learns of
        a new topic from its own copy of the metadata image, a moment after the broker's Metadata shows
        it with leaders (BrokerMetadataPublisher updates the metadata cache first): a member joining in
        between subscribes to a topic its coordinator does not know, gets nothing, and the group epoch
        moves once the coordinator learns of it.  A throwaway consumer group whose group id falls on the
        same __consumer_offsets partition (the coordinator applies the image and requests of one
        partition in order) joins until its assignment has the topic, then leaves; its id starts outside
        every scope's prefix, so no listing compares it."""
        partition = offsets_partition(group)
        if (partition, topic) in self.known_topics:
            return
        topic_id = self.value("topic_id", topic)
        names = (f"dt-probe-{n}" for n in range(1_000_000))
        probes = (n for n in names if offsets_partition(n) == partition)

        def step() -> tuple[bool, Any]:
            probe = next(probes)
            res = self.call(68, {"GroupId": probe, "MemberId": "dt-probe", "MemberEpoch": 0, "InstanceId": None,
                                 "RackId": None, "RebalanceTimeoutMs": 30000, "SubscribedTopicNames": [topic],
                                 "SubscribedTopicRegex": None, "ServerAssignor": None, "TopicPartitions": []})
            if res["ErrorCode"] == 0:
                self.call(68, {"GroupId": probe, "MemberId": "dt-probe", "MemberEpoch": -1, "InstanceId": None,
                               "RackId": None, "RebalanceTimeoutMs": -1, "SubscribedTopicNames": None,
                               "SubscribedTopicRegex": None, "ServerAssignor": None, "TopicPartitions": None})
            assigned = {t["TopicId"] for t in (res.get("Assignment") or {}).get("TopicPartitions", [])}
            return topic_id in assigned, res["ErrorCode"]

        self.settle(f"the coordinator of {group} knowing {topic}", step)
        self.known_topics.add((partition, topic))

    def consumer_member(self, group: str, member: str, topic: str) -> None:
        """A KIP-848 member at the epoch of its first heartbeat (ConsumerGroupHeartbeat)."""
        self.find_coordinator(group, 0)
        self.coordinator_knows(group, topic)
        res = self.retried(68, {"GroupId": group, "MemberId": member, "MemberEpoch": 0, "InstanceId": None,
                                "RackId": None, "RebalanceTimeoutMs": 30000, "SubscribedTopicNames": [topic],
                                "SubscribedTopicRegex": None, "ServerAssignor": None, "TopicPartitions": []})
        if res["ErrorCode"] != 0:
            raise SetupError(f"{self.name}: ConsumerGroupHeartbeat {group}: error {res['ErrorCode']}")
        self.values[("member_id", group)] = res["MemberId"] or member
        self.values[("member_epoch", group)] = res["MemberEpoch"]

    def share_member(self, group: str, member: str, topic: str) -> None:
        self.find_coordinator(group, 0)
        self.coordinator_knows(group, topic)
        res = self.retried(76, {"GroupId": group, "MemberId": member, "MemberEpoch": 0, "RackId": None,
                                "SubscribedTopicNames": [topic]})
        if res["ErrorCode"] != 0:
            raise SetupError(f"{self.name}: ShareGroupHeartbeat {group}: error {res['ErrorCode']}")
        self.values[("member_id", group)] = res["MemberId"] or member
        self.values[("member_epoch", group)] = res["MemberEpoch"]
        if 90 in self.versions:
            # Kafka initializes the group's share-partitions after the heartbeat is answered (the
            # coordinator's InitializeShareGroupState, a few ms later); mockbroker while answering it.
            # The cases start from the initialized state on both: DescribeShareGroupOffsets of the
            # whole group lists the topic once it is.
            def initialized() -> tuple[bool, Any]:
                r = self.call(90, {"Groups": [{"GroupId": group, "Topics": None}]}, version=0)
                return any(t["TopicName"] == topic for g in r["Groups"] for t in g["Topics"]), r
            self.settle(f"share group {group} initialized", initialized)

    def streams_member(self, group: str, member: str, topic: str) -> None:
        self.find_coordinator(group, 0)
        self.coordinator_knows(group, topic)
        res = self.retried(88, streams_join(group, member, topic))
        if res["ErrorCode"] != 0:
            raise SetupError(f"{self.name}: StreamsGroupHeartbeat {group}: error {res['ErrorCode']}")
        self.values[("member_id", group)] = res["MemberId"] or member
        self.values[("member_epoch", group)] = res["MemberEpoch"]

    # --- producers ---------------------------------------------------------------------------------
    def init_producer(self, tid: str | None) -> None:
        """A producer id and epoch for transactional id ``tid`` (None: an idempotent producer)."""
        if tid is not None:
            self.find_coordinator(tid, 1)

        def step() -> tuple[bool, Any]:
            res = self.call(22, {"TransactionalId": tid, "TransactionTimeoutMs": 60000, "ProducerId": -1,
                                 "ProducerEpoch": -1, "Enable2Pc": False, "KeepPreparedTxn": False})
            return res["ErrorCode"] == 0, res

        res = self.settle(f"InitProducerId {tid}", step)
        key = tid or "idempotent"
        self.values[("producer_id", key)] = res["ProducerId"]
        self.values[("producer_epoch", key)] = res["ProducerEpoch"]

    def add_partitions(self, tid: str, topic: str, partitions: list[int]) -> None:
        v = min(self.top(24), 3)  # a client's AddPartitionsToTxn (v4+ is the brokers' batched form)

        def step() -> tuple[bool, Any]:
            res = self.call(24, {"V3AndBelowTransactionalId": tid,
                                 "V3AndBelowProducerId": self.value("producer_id", tid),
                                 "V3AndBelowProducerEpoch": self.value("producer_epoch", tid),
                                 "V3AndBelowTopics": [{"Name": topic, "Partitions": partitions}]}, version=v)
            errs = {p["PartitionErrorCode"] for t in res["ResultsByTopicV3AndBelow"] for p in t["ResultsByPartition"]}
            return errs == {0}, errs

        self.settle(f"AddPartitionsToTxn {tid}", step)

    def add_offsets(self, tid: str, group: str) -> None:
        def step() -> tuple[bool, Any]:
            res = self.call(25, {"TransactionalId": tid, "ProducerId": self.value("producer_id", tid),
                                 "ProducerEpoch": self.value("producer_epoch", tid), "GroupId": group})
            return res["ErrorCode"] == 0, res["ErrorCode"]

        self.settle(f"AddOffsetsToTxn {tid}", step)
        self.find_coordinator(group, 0)

    def telemetry(self, key: str) -> None:
        res = self.call(71, {"ClientInstanceId": uuid.UUID(int=0)})
        if res["ErrorCode"] != 0:
            raise SetupError(f"{self.name}: GetTelemetrySubscriptions: error {res['ErrorCode']}")
        self.values[("client_instance_id", key)] = res["ClientInstanceId"]
        self.values[("subscription_id", key)] = res["SubscriptionId"]

    def log_dir(self) -> str:
        if ("log_dir", "") not in self.values:
            res = self.call(35, {"Topics": None})
            self.values[("log_dir", "")] = res["Results"][0]["LogDir"] if res["Results"] else ""
        return self.values[("log_dir", "")]


def offsets_partition(group: str) -> int:
    """The group's __consumer_offsets partition: Utils.abs(groupId.hashCode()) % the partition count."""
    h = 0
    for unit in struct.unpack(f">{len(group.encode('utf-16-be')) // 2}H", group.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % OFFSETS_PARTITIONS


def streams_join(group: str, member: str, topic: str) -> dict[str, Any]:
    """A Kafka Streams member joining with a one-subtopology topology reading ``topic``."""
    return {"GroupId": group, "MemberId": member, "MemberEpoch": 0, "EndpointInformationEpoch": 0,
            "InstanceId": None, "RackId": None, "RebalanceTimeoutMs": 30000,
            "Topology": {"Epoch": 0, "Subtopologies": [{
                "SubtopologyId": "0", "SourceTopics": [topic], "SourceTopicRegex": [], "StateChangelogTopics": [],
                "RepartitionSinkTopics": [], "RepartitionSourceTopics": [], "CopartitionGroups": []}]},
            "ActiveTasks": [], "StandbyTasks": [], "WarmupTasks": [], "ProcessId": "process-0",
            "UserEndpoint": None, "ClientTags": [], "TaskOffsets": [], "TaskEndOffsets": [],
            "ShutdownApplication": False}
