"""What legitimately differs between two brokers' answers, taken out before they are compared.

Each rule is (name, reason) in ``RULES``; docs/differences.md lists them.  Everything else in an
answer is compared as Kafka's schema reads it, field by field: error codes, offsets, epochs, the
order of entries, nulls against empty arrays, every tagged field.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from protocol.records import parse_header

from .state import Side

RULES: list[tuple[str, str]] = [
    ("throttle time", "`ThrottleTimeMs` depends on quotas and the moment, not on the request; the "
                      "throttle suites (tests/integration/test_throttle_clients.py) check it by Kafka's formula"),
    ("ports", "each broker listens on a port of its own: a `Port` that is a broker's is shown as that node's"),
    ("cluster id", "each cluster has its own: shown as `<cluster-id>`"),
    ("topic ids", "assigned by each broker: a topic id the setup learnt is shown as `<topic-id NAME>`, "
                  "any other broker-assigned uuid as `<uuid #n>` in order of appearance"),
    ("member ids", "assigned by each broker (a classic group's `MemberId`, `LeaderId`): shown as "
                   "`<member GROUP>` when the setup made it, `<assigned member id #n>` otherwise"),
    ("producer ids", "assigned by each broker: `<producer-id NAME>` for the setup's producers, "
                     "`<assigned producer id #n>` otherwise; epochs are compared as they are"),
    ("fetch session ids", "a new fetch session's id is random (`<session id #n>`); an id the request named is "
                          "compared as it is"),
    ("client instance ids", "GetTelemetrySubscriptions assigns a random uuid (`<uuid #n>`), and the "
                            "`SubscriptionId` it answers with one is a hash over that uuid (`<subscription id>`)"),
    ("timestamps", "wall-clock times (`LogAppendTimeMs`, a transaction's start, a token's issue and "
                   "expiry, a member's last heartbeat): -1 stays -1, any time is `<time>`"),
    ("error messages", "Kafka's message text is not part of the protocol's contract: compared for "
                       "presence (null or not), as `<message>`"),
    ("log directories", "each broker has its own path (`LogDir`, a `log.dirs` config value): `<log dir>`; "
                        "`TotalBytes`/`UsableBytes` of a disk are `<disk bytes>`"),
    ("metadata offsets", "the KRaft metadata log's offsets and epochs (`FinalizedFeaturesEpoch`, "
                         "DescribeQuorum's offsets) count every change either cluster ever made"),
    ("order of entries", "two arrays that hold the same entries in another order are equal: Kafka builds "
                         "many answers from hash maps, and no client reads meaning into their order"),
    ("APIs not served", "Kafka 4.4 advertises the share coordinator's state APIs (keys 83-87, "
                        "Initialize/Read/Write/Delete/ReadSummary ShareGroupState), which only brokers send to "
                        "one another; mockbroker has no inter-broker traffic and leaves them out of ApiVersions "
                        "(docs/apis.md): they are taken out of Kafka's ApiVersions answer"),
    ("listings", "ListGroups, ListTransactions and DescribeUserScramCredentials (of every user) list every "
                 "group, transactional id and SCRAM user the broker has: only "
                 "the running scope's own are compared, since earlier scopes' left-overs differ wherever an "
                 "earlier case differed (and that case is reported itself)"),
    ("internal topics", "`__consumer_offsets`, `__transaction_state` and `__share_group_state` are not topics on "
                        "mockbroker (docs/differences.md, Consumer groups, Transactions): entries about them are "
                        "taken out of every listing (Metadata of every topic, DescribeLogDirs, ElectLeaders, "
                        "ListConfigResources, DescribeTopicPartitions)"),
    ("record batches", "compared by their header fields and records' bytes; a batch's "
                       "`partitionLeaderEpoch` and CRC follow from the rest"),
]

WALL_CLOCK = re.compile(r"(LogAppendTime|TransactionStartTime|IssueTimestamp|ExpiryTimestamp|MaxTimestamp$|"
                        r"LastHeartbeat|LastSeen|LastCaughtUpTimestamp|LastFetchTimestamp|CreationTime)")
MESSAGE = re.compile(r"(ErrorMessage|ErrorMsg|BatchIndexErrorMessage)$")
ZERO_UUID = uuid.UUID(int=0)
NOT_SERVED = {83, 84, 85, 86, 87}  # the share coordinator's inter-broker state APIs
# Answers that list everything of a kind the broker has (ListGroups, ListTransactions): only the
# scope's own entries are compared (see RULES, "listings")
LISTINGS = {16: ("Groups", "GroupId"), 66: ("TransactionStates", "TransactionalId"), 50: ("Results", "User")}


class Normaliser:
    """Maps one side's answer for one request onto the symbols both sides share."""

    def __init__(self, side: Side, request: Any, scope: str = "") -> None:
        self.side = side
        self.scope = scope
        self.known_uuids: dict[uuid.UUID, str] = {}
        self.known_strings: dict[str, str] = {}
        self.known_ids: dict[int, str] = {}
        for (kind, name), value in side.values.items():
            if kind == "topic_id":
                self.known_uuids[value] = f"<topic-id {name}>"
            elif kind == "member_id":
                self.known_strings[value] = f"<member {name}>"
            elif kind == "producer_id":
                self.known_ids[value] = f"<producer-id {name}>"
            elif kind == "client_instance_id":
                self.known_uuids[value] = f"<client-instance {name}>"
            elif kind == "log_dir":
                self.known_strings[value] = "<log dir>"
        self.in_request = _leaves(request)
        self.fresh: dict[Any, str] = {}

    def _fresh(self, kind: str, value: Any) -> str:
        if value not in self.fresh:
            self.fresh[value] = f"<{kind} #{sum(1 for k in self.fresh.values() if k.startswith('<' + kind)) + 1}>"
        return self.fresh[value]

    def answer(self, api_key: int, tree: dict[str, Any]) -> dict[str, Any]:
        """The whole answer to a request of ``api_key``, normalised."""
        out = self(tree)
        if api_key == 71 and isinstance(out.get("ClientInstanceId"), str) and out["ClientInstanceId"].startswith(
                ("<uuid #", "<client-instance ")) and "SubscriptionId" in out:
            # KIP-714: the subscription id hashes the client instance id (CRC32C), so an id the broker
            # assigned makes it differ whatever the subscription is (see RULES, "client instance ids")
            out["SubscriptionId"] = "<subscription id>"
        if api_key == 18 and isinstance(out.get("ApiKeys"), list):
            out["ApiKeys"] = [a for a in out["ApiKeys"] if a.get("ApiKey") not in NOT_SERVED]
        out = _without_internal_topics(out)
        listing = LISTINGS.get(api_key)
        if listing is not None and self.scope:
            array, key = listing
            if isinstance(out.get(array), list):
                out[array] = [e for e in out[array] if str(e.get(key, "")).startswith(self.scope + "-")]
        return out

    def __call__(self, tree: Any, name: str = "") -> Any:
        if isinstance(tree, dict):
            return {k: self(v, k) for k, v in tree.items() if k != "ThrottleTimeMs"}
        if isinstance(tree, list):
            return [self(v, name) for v in tree]
        return self.leaf(name, tree)

    def leaf(self, name: str, value: Any) -> Any:
        side = self.side
        if isinstance(value, uuid.UUID):
            if value in self.known_uuids:
                return self.known_uuids[value]
            if value == ZERO_UUID or value in self.in_request:
                return str(value) if value != ZERO_UUID else "<zero uuid>"
            return self._fresh("uuid", value)
        if MESSAGE.search(name):
            return None if value is None else "<message>"
        if name == "ClusterId" and value == side.cluster_id:
            return "<cluster-id>"
        if name == "Port" and isinstance(value, int) and value in side.ports:
            return f"<port of node {side.ports[value]}>"
        if isinstance(value, str):
            if value in self.known_strings:
                return self.known_strings[value]
            if name in ("MemberId", "LeaderId", "Leader") and value and value not in self.in_request:
                return self._fresh("assigned member id", value)
            if name in ("LogDir", "Path") and value:
                return "<log dir>"
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            if "ProducerId" in name and value >= 0:
                if value in self.known_ids:
                    return self.known_ids[value]
                for delta in (1, -1):  # a mutation's "known id + 1", echoed back
                    if value - delta in self.known_ids:
                        return f"{self.known_ids[value - delta]}{delta:+d}"
                if value not in self.in_request:
                    return self._fresh("assigned producer id", value)
            if WALL_CLOCK.search(name) and value >= 0:
                return "<time>"
            if name in ("TotalBytes", "UsableBytes") and value >= 0:
                return "<disk bytes>"
            if name == "SessionId" and value != 0 and value not in self.in_request:
                return self._fresh("session id", value)
            if name == "FinalizedFeaturesEpoch" and value >= 0:
                return "<metadata offset>"
            return value
        if isinstance(value, (bytes, bytearray)) and name == "Records":
            return batches(bytes(value), self)
        return value


INTERNAL_TOPICS = {"__consumer_offsets", "__transaction_state", "__share_group_state"}
_TOPIC_KEYS = ("Name", "Topic", "TopicName", "ResourceName")


def _without_internal_topics(tree: Any) -> Any:
    """The tree with every array entry about an internal topic taken out (see RULES)."""
    if isinstance(tree, dict):
        return {k: _without_internal_topics(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_without_internal_topics(e) for e in tree
                if not (isinstance(e, dict) and any(e.get(k) in INTERNAL_TOPICS for k in _TOPIC_KEYS))]
    return tree


def batches(data: bytes, norm: Normaliser) -> Any:
    """A record set as its batches' header fields and records' bytes (partial batches as they are)."""
    out: list[Any] = []
    pos = 0
    while pos + 61 <= len(data):
        size = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        end = pos + 12 + size
        if size < 49 or end > len(data):
            break
        h = parse_header(data, pos)
        pid = norm.leaf("ProducerId", h.producer_id)
        out.append({"baseOffset": h.base_offset, "lastOffsetDelta": h.last_offset_delta, "magic": h.magic,
                    "attributes": h.attributes, "baseTimestamp": h.base_timestamp,
                    "maxTimestamp": h.max_timestamp, "producerId": pid, "producerEpoch": h.producer_epoch,
                    "baseSequence": h.base_sequence, "records": h.records_count, "body": data[pos + 61:end].hex()})
        pos = end
    if pos < len(data):
        out.append({"partial batch bytes": len(data) - pos})
    return out


def _leaves(tree: Any) -> set[Any]:
    out: set[Any] = set()

    def walk(t: Any) -> None:
        if isinstance(t, dict):
            for v in t.values():
                walk(v)
        elif isinstance(t, list):
            for v in t:
                walk(v)
        elif isinstance(t, (str, int, uuid.UUID)) and not isinstance(t, bool):
            out.add(t)

    walk(tree)
    return out


def diff(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """The places two normalised trees differ: (path, a's value, b's value)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                out.append((f"{path}.{k}".lstrip("."), a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                out += diff(a[k], b[k], f"{path}.{k}".lstrip("."))
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) == len(b) and a != b and sorted(map(repr, a)) == sorted(map(repr, b)):
            return []  # the same entries in another order
        if len(a) == len(b) and a and all(isinstance(x, dict) for x in a + b):
            a, b = sorted(a, key=_identity), sorted(b, key=_identity)  # entries side by side by what they are about
        if len(a) != len(b):
            return [(f"{path} (length)", _short(a), _short(b))]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f"{path}[{i}]")
        return out
    if a != b and not (isinstance(a, float) and isinstance(b, float) and a != a and b != b):
        return [(path, a, b)]
    return []


IDENTITY = ("Name", "TopicName", "Topic", "TopicId", "GroupId", "TransactionalId", "ResourceName", "ResourceType",
            "Index", "PartitionIndex", "Partition", "ApiKey", "NodeId", "BrokerId", "MemberId", "ProducerId", "ErrorCode")


def _identity(entry: dict[str, Any]) -> tuple[str, ...]:
    """What an array entry is about (its name, index, id), to put two answers' entries side by side."""
    return tuple(repr(entry.get(k)) for k in IDENTITY) + (repr(entry),)


def _short(v: Any, limit: int = 160) -> Any:
    text = repr(v)
    return v if len(text) <= limit else text[:limit] + "..."
