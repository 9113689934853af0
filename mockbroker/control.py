"""The control plane: everything a test steers or observes, in one place.

``MockBroker``'s Python methods and the admin HTTP API (``admin/http.py``,
described by ``admin/openapi.json``) call these same methods, on the
cluster's event loop, so a kafkajs suite steering over HTTP and a pytest
fixture calling Python get the same semantics.  Results are plain
JSON-able data (bytes are base64 strings in JSON; the Python side keeps
bytes).  Wrong input raises ``InvalidArgument`` naming the field (HTTP 400),
an unknown topic, partition, group, broker, rule or quota entity raises
``NotFound`` (HTTP 404).

Groups of calls: status; brokers (stop, start); topics (create, delete);
partitions (leader, ISR, high watermark, log end and start; elect, set ISR,
replication lag); quotas per entity (as Describe/AlterClientQuotas);
groups; connections; throttle events and KIP-219 violations; the memory
pool and purgatory gauges; the request journal; the clock; fault rules.

Over 500 lines on purpose: it is the one implementation of every control
method both front ends call, each a few lines over the cluster; splitting it by
topic would give the Python handle and the HTTP API several objects to route to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from protocol.codec import decode_consumer_assignment
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from .apis import supports_error_injection
from .security.authorizer import STANDARD_AUTHORIZER, StandardAuthorizer, acl_filter_from_spec, acl_from_spec, acl_view
from .common.channel import MuteReason
from .common.clock import ManualClock
from .common.faults import FaultRule, FaultRuleError, api_key_of
from .group.group import GroupType
from .state.metadata import Partition, Topic
from .quota.entities import QUOTA_KEYS, validate_quota
from .quota.verdict import verdict

if TYPE_CHECKING:
    from .broker import Broker
    from .cluster import Cluster
    from .group.streams_group import StreamsGroup  # built with the first streams group


MAX_ADVANCE_MS = 30 * 86_400_000  # one clock advance (periodic tasks fire at each of their instants)
log = logging.getLogger("mockbroker.group")


class ControlError(Exception):
    status = 400

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def as_dict(self) -> dict[str, Any]:
        return {"error": self.message, "field": self.field}


class InvalidArgument(ControlError, ValueError):
    status = 400


class NotFound(ControlError, LookupError):
    status = 404


def _int(value: Any, field: str, minimum: int | None = None, maximum: int = 2**31 - 1) -> int:
    if isinstance(value, bool) or value is None:
        raise InvalidArgument(f"{field} must be an integer", field)
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{field} must be an integer, got {value!r}", field) from None
    if isinstance(value, float) and value != n:
        raise InvalidArgument(f"{field} must be an integer, got {value!r}", field)
    if minimum is not None and n < minimum:
        raise InvalidArgument(f"{field} must be at least {minimum}", field)
    if n > maximum:
        raise InvalidArgument(f"{field} must be at most {maximum}", field)
    return n


def _opt_int(value: Any, field: str, minimum: int | None = None) -> int | None:
    return None if value is None else _int(value, field, minimum)


T = TypeVar("T")


def _from_table(spec: Any, parse: Callable[[dict[str, Any]], T], what: str) -> T:
    """``parse`` of a JSON object body; its ValueError as the body's InvalidArgument."""
    if not isinstance(spec, dict):
        raise InvalidArgument(f"{what} is a JSON object", "body")
    try:
        return parse(spec)
    except ValueError as e:
        raise InvalidArgument(str(e), "body") from None


def _str(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgument(f"{field} must be a string", field)
    return value


class ControlPlane:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    # -- lookups -------------------------------------------------------------------------------
    def _broker(self, node_id: Any) -> Broker:
        nid = _int(node_id, "broker", 0)
        b = self.cluster.brokers.get(nid)
        if b is None:
            raise NotFound(f"no broker {nid} (brokers: {sorted(self.cluster.brokers)})", "broker")
        return b

    def _topic(self, name: Any) -> Topic:
        t = self.cluster.metadata.topics.get(_str(name, "topic"))
        if t is None:
            raise NotFound(f"no topic {name!r}", "topic")
        return t

    def _partition(self, topic: Any, partition: Any) -> Partition:
        t = self._topic(topic)
        idx = _int(partition, "partition", 0)
        if not 0 <= idx < len(t.partitions):
            raise NotFound(f"topic {t.name!r} has no partition {idx} (it has {len(t.partitions)})", "partition")
        return t.partitions[idx]

    # -- status --------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        c = self.cluster
        conns = self.connections()
        muted: dict[str, int] = {}
        for conn in conns:
            for reason in conn["muted"]:
                muted[reason] = muted.get(reason, 0) + 1
        return {
            "cluster_id": c.metadata.cluster_id, "controller_id": c.metadata.controller_id,
            "brokers": self.brokers(),
            "topics": [{"name": t.name, "partitions": len(t.partitions),
                        "replication_factor": len(t.partitions[0].replicas) if t.partitions else 0}
                       for t in c.metadata.topics.values()],
            "groups": [{"group_id": g["group_id"], "type": g["type"], "state": g["state"], "members": len(g["members"])}
                       for g in self.groups()],
            "connections": len(conns), "muted_connections": muted,
            "throttle_events": len(c.throttle_events), "journal_records": c.journal.recorded,
            "journal_written": None if c.journal_writer is None else c.journal_writer.written,
            "journal_dropped": None if c.journal_writer is None else c.journal_writer.dropped,
            "rebalances": c.groups.rebalances,
            "fault_rules": len(c.faults.rules), "held_requests": len(c.faults.held),
            "clock": self.clock(),
        }

    # -- brokers -------------------------------------------------------------------------------
    def brokers(self) -> list[dict[str, Any]]:
        out = []
        for b in self.cluster.brokers.values():
            node = self.cluster.metadata.brokers.get(b.node_id)
            listeners = []
            for lst in b.listeners:
                address = node.endpoint(lst.name) if node else None
                listeners.append({
                    "name": lst.name, "security_protocol": lst.protocol, "bind_host": lst.host,
                    "port": b.ports[lst.name], "advertised_host": address[0] if address else None,
                    "advertised_port": address[1] if address else None,
                    "connections": sum(1 for conn in b.connections if conn.listener_name == lst.name)})
            # host/port: the first advertised listener's address (the bound one before the first start)
            out.append({"id": b.node_id, "host": node.host if node else b.listeners[0].host,
                        "port": node.port if node else b.port, "rack": node.rack if node else None,
                        "alive": b.running, "connections": len(b.connections), "listeners": listeners})
        return out

    async def stop_broker(self, node_id: Any) -> dict[str, Any]:
        b = self._broker(node_id)
        if b.running:
            await self.cluster.stop_broker(b.node_id)
        return next(x for x in self.brokers() if x["id"] == b.node_id)

    async def start_broker(self, node_id: Any) -> dict[str, Any]:
        b = self._broker(node_id)
        if not b.running:
            await self.cluster.start_broker(b.node_id)
        return next(x for x in self.brokers() if x["id"] == b.node_id)

    # -- topics and partitions ------------------------------------------------------------------
    def topics(self) -> list[dict[str, Any]]:
        return [self._topic_view(t, partitions=False) for t in self.cluster.metadata.topics.values()]

    def topic(self, name: Any) -> dict[str, Any]:
        return self._topic_view(self._topic(name), partitions=True)

    def _topic_view(self, t: Topic, partitions: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"name": t.name, "topic_id": str(t.topic_id), "internal": t.internal,
                               "partition_count": len(t.partitions),
                               "replication_factor": len(t.partitions[0].replicas) if t.partitions else 0,
                               "configs": dict(t.overrides)}
        if partitions:
            out["partitions"] = [self._partition_view(p) for p in t.partitions]
        return out

    @staticmethod
    def _partition_view(p: Partition) -> dict[str, Any]:
        log = p.log
        return {"topic": p.topic.name, "partition": p.index, "leader": p.leader_id, "leader_epoch": p.leader_epoch,
                "replicas": list(p.replicas), "isr": list(p.isr), "high_watermark": log.high_watermark,
                "log_end_offset": log.log_end_offset, "log_start_offset": log.log_start_offset,
                "last_stable_offset": log.last_stable_offset}

    def create_topic(self, name: Any, partitions: Any = None, replication_factor: Any = None,
                     configs: Any = None) -> dict[str, Any]:
        """As CreateTopics: the broker defaults for a missing partition count or replication
        factor, Kafka's name and config checks; an existing topic is an error."""
        name = _str(name, "name")
        cfg = self.cluster.config
        n = cfg["num.partitions"] if partitions is None else _int(partitions, "partitions", 1, 10_000)
        rf = cfg["default.replication.factor"] if replication_factor is None else _int(
            replication_factor, "replication_factor", 1, 32767)
        if configs is None:
            configs = {}
        if not isinstance(configs, Mapping) or not all(isinstance(k, str) for k in configs):
            raise InvalidArgument("configs must map topic config names to strings", "configs")
        values = {k: None if v is None else str(v) for k, v in configs.items()}
        err, msg = self.cluster.metadata.check_new_topic(name, n, rf, values)
        if err is not ErrorCode.none:
            field = {ErrorCode.invalid_partitions: "partitions", ErrorCode.invalid_replication_factor:
                     "replication_factor", ErrorCode.invalid_config: "configs"}.get(err, "name")
            raise InvalidArgument(msg or err.name, field)
        t = self.cluster.controller.create_topic(name, n, rf, {k: v for k, v in values.items() if v is not None})
        return self._topic_view(t, partitions=True)

    def delete_topic(self, name: Any) -> None:
        self.cluster.controller.delete_topic(self._topic(name))

    def partition(self, topic: Any, partition: Any) -> dict[str, Any]:
        return self._partition_view(self._partition(topic, partition))

    def elect_leader(self, topic: Any, partition: Any, broker: Any) -> dict[str, Any]:
        """Move leadership to ``broker`` (an ISR member), as a preferred-replica election does;
        the old leader stays up and answers NOT_LEADER_OR_FOLLOWER."""
        p = self._partition(topic, partition)
        nid = _int(broker, "broker")
        if nid not in p.isr:
            raise InvalidArgument(f"broker {nid} is not in the ISR {p.isr} of {p.topic.name}-{p.index}", "broker")
        self.cluster.replication.elect_leader(p, preferred=nid)
        return self._partition_view(p)

    def set_isr(self, topic: Any, partition: Any, isr: Any) -> dict[str, Any]:
        """Force the ISR: replicas left out stay out until a later set_isr names them."""
        p = self._partition(topic, partition)
        if not isinstance(isr, (list, tuple)):
            raise InvalidArgument("isr must be a list of broker ids", "isr")
        ids = [_int(x, "isr") for x in isr]
        bad = [x for x in ids if x not in p.replicas]
        if bad:
            raise InvalidArgument(f"brokers {bad} are not replicas {p.replicas} of {p.topic.name}-{p.index}", "isr")
        self.cluster.replication.set_isr(p, ids)
        return self._partition_view(p)

    def replication_lag(self) -> dict[str, Any]:
        r = self.cluster.replication
        return {"default_ms": r.default_lag_ms, "by_broker": {str(k): v for k, v in r.lag_by_broker.items()},
                "by_topic": dict(r.lag_by_topic)}

    def set_replication_lag(self, lag_ms: Any, broker: Any = None, topic: Any = None) -> dict[str, Any]:
        """How long followers (on ``broker``, or of ``topic``, or all) take to catch up."""
        ms = _int(lag_ms, "lag_ms", 0)
        if broker is not None:
            broker = self._broker(broker).node_id
        if topic is not None:
            topic = self._topic(topic).name
        self.cluster.replication.set_lag(ms, broker, topic)
        return self.replication_lag()

    def partition_records(self, topic: Any, partition: Any) -> list[bytes]:
        """The stored batches of a partition, as served."""
        p = self._partition(topic, partition)
        return [batch for seg in p.log.segments for batch in seg.batches]

    # -- quotas --------------------------------------------------------------------------------
    @staticmethod
    def _entity(user: Any, client_id: Any) -> tuple[str | None, str | None]:
        if user is None and client_id is None:
            raise InvalidArgument("name a user, a client_id or both ('<default>' for the default entity)", "user")
        for value, field in ((user, "user"), (client_id, "client_id")):
            if value is not None and (not isinstance(value, str) or value == ""):
                raise InvalidArgument(f"{field} must be a non-empty string", field)
        return user, client_id

    def quotas(self, user: Any = None, client_id: Any = None) -> list[dict[str, Any]]:
        """The configured quotas (as DescribeClientQuotas), filtered by an exact user and/or client id."""
        out = []
        for (u, c), values in self.cluster.quota_store.describe():
            if (user is not None and u != user) or (client_id is not None and c != client_id):
                continue
            out.append({"entity": {"user": u, "client_id": c}, "values": dict(sorted(values.items()))})
        return out

    def set_quota(self, user: Any = None, client_id: Any = None, values: Any = None) -> dict[str, Any]:
        """Set (or with None remove) quotas of an entity, as AlterClientQuotas: every value is
        checked before any is applied; the next request sees them."""
        entity = self._entity(user, client_id)
        if not isinstance(values, Mapping) or not values:
            raise InvalidArgument("values must map quota keys to numbers (or null to remove)", "values")
        checked: dict[str, float | None] = {}
        for key, value in values.items():
            if key not in QUOTA_KEYS:
                raise InvalidArgument(f"unknown quota key {key!r} (keys: {', '.join(QUOTA_KEYS)})", f"values.{key}")
            if value is None:
                checked[key] = None
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidArgument(f"{key} must be a number", f"values.{key}")
            msg = validate_quota(key, float(value))
            if msg:
                raise InvalidArgument(msg, f"values.{key}")
            checked[key] = float(value)
        store = self.cluster.quota_store
        for key, value in checked.items():
            store.set(entity, key, value)
        return {"entity": {"user": entity[0], "client_id": entity[1]},
                "values": dict(sorted(store.quotas.get(entity, {}).items()))}

    def delete_quota(self, user: Any = None, client_id: Any = None, keys: Any = None) -> None:
        """Remove an entity's quotas (those named in ``keys``, or all)."""
        entity = self._entity(user, client_id)
        store = self.cluster.quota_store
        have = store.quotas.get(entity)
        if not have:
            raise NotFound(f"no quotas for user={entity[0]!r} client_id={entity[1]!r}", "user")
        names = list(have) if keys is None else [keys] if isinstance(keys, str) else keys
        if not isinstance(names, (list, tuple)) or not all(isinstance(k, str) for k in names):
            raise InvalidArgument("key must be a quota key", "key")
        missing = [k for k in names if k not in have]
        if missing:
            raise NotFound(f"the entity has no quota {missing[0]!r}", "key")
        for k in names:
            store.set(entity, k, None)

    def quota_metrics(self, node_id: Any = None) -> dict[str, dict[tuple[str, str], dict[str, float]]]:
        """Kafka's per-entity quota metrics of one broker (the first by default), keyed by
        (user, client-id) tags."""
        q = (self._broker(node_id) if node_id is not None else self.cluster.broker()).quotas
        return {"Produce": q.produce.metrics("byte-rate"), "Fetch": q.fetch.metrics("byte-rate"),
                "Request": q.request.metrics("request-time"), "RequestRate": q.request_rate.metrics("request-rate")}

    # -- transactions ----------------------------------------------------------------------------
    def transactions(self) -> list[dict[str, Any]]:
        """Every transactional id the coordinator holds, by id: state (Kafka's name), pending
        transition, producer id/epoch, timeout, start time (-1: none), partitions, coordinator."""
        mgr = self.cluster.txn.txn_manager
        return [{"transactional_id": tid, "state": md.state.state_name,
                 "pending_state": md.pending_state.state_name if md.pending_state is not None else None,
                 "producer_id": md.producer_id, "producer_epoch": md.producer_epoch,
                 "timeout_ms": md.txn_timeout_ms, "start_timestamp": md.txn_start_timestamp,
                 "partitions": sorted(md.topic_partitions), "coordinator": mgr.coordinator_id(tid)}
                for tid, md in sorted(mgr.transactions.items())]

    # -- groups --------------------------------------------------------------------------------
    def groups(self) -> list[dict[str, Any]]:
        return [self._group_view(gid) for gid in list(self.cluster.groups.registry.groups)]

    def group(self, group_id: Any) -> dict[str, Any]:
        gid = _str(group_id, "group_id")
        if self.cluster.groups.get_group(gid) is None:
            raise NotFound(f"no group {gid!r}", "group_id")
        return self._group_view(gid)

    def _group_view(self, gid: str) -> dict[str, Any]:
        service = self.cluster.groups
        g = service.get_group(gid)
        assert g is not None
        node = service.find_coordinator(gid)
        topic_names = {t.topic_id: name for name, t in self.cluster.metadata.topics.items()}
        out: dict[str, Any] = {
            "group_id": gid, "type": str(g.group_type), "state": g.state_as_string(),
            "protocol_type": g.protocol_type, "coordinator": node.node_id if node is not None else -1,
            "committed_offsets": [{"topic": t, "partition": p, "offset": om.offset, "leader_epoch": om.leader_epoch,
                                   "metadata": om.metadata} for (t, p), om in sorted(g.offsets.items())],
            "pending_transactional_offsets": [
                {"producer_id": pid, "topic": t, "partition": p, "offset": om.offset}
                for pid, (t, p), om in service.offsets.pending_transactional_offsets(gid)],
        }
        if g.group_type is GroupType.CLASSIC:
            c: Any = g  # the classic group (GroupMetadata)
            consumer = c.protocol_type == "consumer"
            out.update(generation_id=c.generation_id, protocol_name=c.protocol_name, leader_id=c.leader_id,
                       members=[{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                                 "client_id": m.client_id, "client_host": m.client_host,
                                 "assigned": decode_consumer_assignment(m.assignment) if consumer else None,
                                 "assignment": m.assignment} for m in c.members.values()])
        elif g.group_type is GroupType.STREAMS:
            out.update(self._streams_view(g))
        elif g.group_type is GroupType.SHARE:
            from .share.view import share_group_view  # loaded on a share group's first view, not at start

            sg: Any = g  # a share group (KIP-932)
            out.update(share_group_view(sg, self.cluster.metadata,
                                        (b.share_partitions for b in self.cluster.brokers.values()),
                                        self.cluster.share_persister))
        else:
            k: Any = g  # a KIP-848 ConsumerGroup
            out.update(group_epoch=k.group_epoch, assignment_epoch=k.assignment_epoch,
                       members=[{"member_id": m.member_id, "group_instance_id": m.instance_id,
                                 "client_id": m.client_id, "client_host": m.client_host,
                                 "member_epoch": m.member_epoch, "state": m.state.value,
                                 "assigned": {topic_names.get(tid, str(tid)): sorted(ps)
                                              for tid, ps in m.assigned.items()}}
                                for m in k.members.values()])
        return out

    def client_metrics(self, client_id: Any = None) -> list[dict[str, Any]]:
        """KIP-714: every client instance that pushed telemetry (mock.client.telemetry.enabled), per
        broker it pushed to, oldest push first: its attributes, subscription, pushes and the latest value
        of each metric (by name, one entry per attribute set); ``client_id`` keeps that client's."""
        cid = None if client_id is None else _str(client_id, "client_id")
        return [inst for b in self.cluster.brokers.values() for inst in b.client_metrics.snapshot()
                if cid is None or inst["client_id"] == cid]

    # -- ACLs ----------------------------------------------------------------------------------
    def _authorizer(self) -> StandardAuthorizer:
        authorizer = self.cluster.authorizer
        if authorizer is None:
            raise NotFound(f"no authorizer: set authorizer.class.name to {STANDARD_AUTHORIZER}", "authorizer")
        return authorizer

    def acls(self) -> list[dict[str, str]]:
        """Every ACL, in creation order (as DescribeAcls with a match-all filter gives them)."""
        return [acl_view(a) for a in self._authorizer().acls()]

    def add_acl(self, spec: Any) -> dict[str, str]:
        """Add one ACL (authorizer.acl_from_spec's fields), at once on every broker, as CreateAcls."""
        authorizer = self._authorizer()
        acl = _from_table(spec, acl_from_spec, "an ACL")
        authorizer.add(acl)
        return acl_view(acl)

    def remove_acls(self, spec: Any) -> list[dict[str, str]]:
        """Remove the ACLs a filter matches (the ACL fields, each optional), as DeleteAcls: those removed."""
        authorizer = self._authorizer()
        return [acl_view(a) for a in authorizer.remove_matching(_from_table(spec, acl_filter_from_spec, "a filter"))]

    def streams_group(self, group_id: Any) -> dict[str, Any]:
        """A KIP-1071 streams group: the group view with its topology, status and tasks per member."""
        gid = _str(group_id, "group_id")
        g = self.cluster.groups.get_group(gid)
        if g is None or g.group_type is not GroupType.STREAMS:
            raise NotFound(f"no streams group {gid!r}", "group_id")
        return self._group_view(gid)

    def share_group(self, group_id: Any) -> dict[str, Any]:
        """A KIP-932 share group: the group view with its members, assignments, every share-partition's
        in-flight records (state, delivery count, owner, lock deadline) and what the share coordinator keeps."""
        gid = _str(group_id, "group_id")
        g = self.cluster.groups.get_group(gid)
        if g is None or g.group_type is not GroupType.SHARE:
            raise NotFound(f"no share group {gid!r}", "group_id")
        return self._group_view(gid)

    @staticmethod
    def _streams_view(group: Any) -> dict[str, Any]:
        """StreamsGroup's part of the group view (tasks as {subtopology: [partitions]})."""
        g: StreamsGroup = group
        configured = g.configured_topology

        def tasks(t: Mapping[str, Iterable[int]]) -> dict[str, list[int]]:
            return {s: sorted(ps) for s, ps in sorted(t.items())}

        topology = None
        if configured is not None and configured.is_ready:
            topology = configured.describe()
        elif g.topology is not None:
            topology = g.topology.describe()
        error = configured.error if configured is not None else None
        return {
            "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
            "topology": topology, "topology_ready": configured is not None and configured.is_ready,
            "status": None if error is None else {"code": error.status.name, "detail": error.message},
            "shutdown_requested_by": g.shutdown_request_member_id,
            # what the members pushed with StreamsGroupTopologyDescriptionUpdate (KIP-1331), and its epoch
            "topology_description": g.topology_description,
            "topology_description_epoch": g.stored_description_topology_epoch,
            "members": [{"member_id": m.member_id, "group_instance_id": m.instance_id, "process_id": m.process_id,
                         "client_id": m.client_id, "client_host": m.client_host, "member_epoch": m.member_epoch,
                         "state": m.state.name, "topology_epoch": m.topology_epoch,
                         "user_endpoint": None if m.user_endpoint is None else "%s:%d" % m.user_endpoint,
                         "active": tasks(m.assigned.active), "standby": tasks(m.assigned.standby),
                         "warmup": tasks(m.assigned.warmup),
                         "target_active": tasks(g.target_of(m.member_id).active),
                         "target_standby": tasks(g.target_of(m.member_id).standby)}
                        for m in g.members.values()],
        }

    def expel_member(self, group_id: Any, member_id: Any) -> dict[str, Any]:
        """Expel a member as its session timeout would, at once: a classic member is removed and the
        group rebalances; a consumer (KIP-848), streams (KIP-1071) or share member is fenced and its
        partitions or tasks go to the others. Its next heartbeat is answered UNKNOWN_MEMBER_ID and it
        rejoins, as after a session timeout. The group view after it."""
        gid, mid = _str(group_id, "group_id"), _str(member_id, "member_id")
        g = self.cluster.groups.get_group(gid)
        if g is None:
            raise NotFound(f"no group {gid!r}", "group_id")
        expelled = (self.cluster.share_groups.expel(gid, mid) if g.group_type is GroupType.SHARE
                    else self.cluster.groups.expel_member(gid, mid))
        if not expelled:
            raise NotFound(f"no member {mid!r} in group {gid!r}", "member_id")
        log.info("[GroupId %s] Member %s expelled through the admin API (its session timeout brought forward).",
                 gid, mid)
        return self._group_view(gid)

    def move_coordinator(self, group_id: Any, broker: Any) -> dict[str, Any]:
        """Move the group's coordinator to ``broker`` while every broker stays up: the leadership of
        its ``__consumer_offsets`` partition moves to that replica (as a preferred-replica election or
        a reassignment would), with the partition's other groups; the old coordinator answers
        NOT_COORDINATOR and clients find the new one with FindCoordinator. The group view after it."""
        gid, nid = _str(group_id, "group_id"), _int(broker, "broker")
        if self.cluster.groups.get_group(gid) is None:
            raise NotFound(f"no group {gid!r}", "group_id")
        try:
            self.cluster.groups.move_coordinator(gid, nid)
        except ValueError as e:
            raise InvalidArgument(str(e), "broker") from None
        return self._group_view(gid)

    def inject_coordinator_loading(self, group_id: Any, duration_ms: Any) -> None:
        """The group's coordinator answers COORDINATOR_LOAD_IN_PROGRESS for ``duration_ms``."""
        self.cluster.groups.inject_loading(_str(group_id, "group_id"), _int(duration_ms, "duration_ms", 0))

    # -- connections ------------------------------------------------------------------------------
    def connections(self, broker: Any = None, client_id: Any = None) -> list[dict[str, Any]]:
        brokers = [self._broker(broker)] if broker is not None else list(self.cluster.brokers.values())
        now = self.cluster.clock.monotonic_ms()
        out = []
        for b in brokers:
            for conn in sorted(b.connections, key=lambda x: x.conn_id):
                if client_id is not None and conn.client_id != client_id:
                    continue
                software = conn.client_software
                muted = [r.name for r in MuteReason if r and r in conn.mute]
                waiting = b.apis.recorder.waiting(conn.conn_id)
                inflight = None if waiting is None else (waiting.ctx.api_key, waiting.ctx.version,
                                                         waiting.ctx.correlation_id, waiting.ctx.received_ns)
                out.append({
                    "id": conn.conn_id, "broker": b.node_id, "listener": conn.listener_name, "peer": conn.peer, "client_id": conn.client_id,
                    "client_software_name": software[0] if software else None,
                    "client_software_version": software[1] if software else None,
                    "principal": conn.principal, "muted": muted,
                    "in_flight": None if inflight is None else {
                        "api": ApiKey(inflight[0]).name, "api_key": inflight[0], "api_version": inflight[1],
                        "correlation_id": inflight[2], "waiting_ms": now - inflight[3] // 1_000_000},
                    "idle_ms": now - conn.last_active_ms, "memory_held_bytes": conn.memory_held,
                })
        return out

    # -- throttles ---------------------------------------------------------------------------------
    def throttle_events(self, client_id: Any = None, user: Any = None, connection: Any = None) -> list[dict[str, Any]]:
        """Every throttled response: when, how long, which API and version, whether that version
        makes clients back off (KIP-219), and when and how early the client sent its next request."""
        conn_id = _opt_int(connection, "connection", 0)
        return [e.as_dict() for e in self.cluster.throttle_events
                if (client_id is None or e.client_id == client_id) and (user is None or e.user == user)
                and (conn_id is None or e.conn_id == conn_id)]

    def violations(self, by: str = "connection") -> list[dict[str, Any]]:
        """KIP-219 conformance per connection or per entity, by ``quota.verdict``'s rule (the report's
        too): throttles; judged (a next request came, not pipelined) and early (it arrived more than
        the tolerance before the deadline), split by whether that response version obliged the client
        to back off; the worst early ms and the verdict, from the obliged ones."""
        if by not in ("connection", "entity"):
            raise InvalidArgument("by must be connection or entity", "by")
        rows: dict[Any, dict[str, Any]] = {}
        for e in self.cluster.throttle_events:
            key = (e.node_id, e.conn_id) if by == "connection" else (e.user, e.client_id)
            row: dict[str, Any] | None = rows.get(key)
            if row is None:
                new: dict[str, Any] = (
                    {"broker": e.node_id, "connection": e.conn_id, "peer": e.peer} if by == "connection" else {})
                new |= {"user": e.user, "client_id": e.client_id, "throttles": 0, "judged": 0,
                        "violations_obliged": 0, "violations_not_obliged": 0, "worst_early_ms": 0, "apis": {}}
                row = rows[key] = new
            row["throttles"] += 1
            if e.judged and e.client_should_throttle:
                row["judged"] += 1
            if e.violation:
                row["violations_obliged" if e.client_should_throttle else "violations_not_obliged"] += 1
                if e.client_should_throttle:
                    row["worst_early_ms"] = max(row["worst_early_ms"], e.early_ms or 0)
                api = f"{ApiKey(e.api_key).name} v{e.api_version}"
                row["apis"][api] = row["apis"].get(api, 0) + 1
        for row in rows.values():
            row["verdict"] = verdict(row["throttles"], row["judged"], row["violations_obliged"])
        return list(rows.values())

    # -- gauges --------------------------------------------------------------------------------
    def memory_pool(self, node_id: Any = None) -> dict[str, float]:
        """KIP-72 request memory pool of one broker (the first by default)."""
        b = self._broker(node_id) if node_id is not None else self.cluster.broker()
        return {**b.memory_pool.metrics(), "memory_muted": len(b.memory_mutes)}

    def purgatories(self, node_id: Any = None) -> dict[str, dict[str, int]]:
        """PurgatorySize and NumDelayedOperations of one broker's Produce and Fetch purgatories
        (the first broker by default) and of the group coordinator's Heartbeat and Rebalance ones."""
        b = self._broker(node_id) if node_id is not None else self.cluster.broker()
        return {**b.replica_manager.gauges(), **self.cluster.groups.gauges()}

    # -- journal -------------------------------------------------------------------------------
    def journal(self, api: Any = None, client_id: Any = None, since_ms: Any = None, until_ms: Any = None,
                limit: Any = None) -> list[dict[str, Any]]:
        """Requests as the journal recorded them, oldest first; ``since_ms``/``until_ms`` bound
        their arrival on the broker clock (``clock().monotonic_ms``), ``limit`` keeps the newest."""
        key = None
        if api is not None:
            try:
                key = api_key_of(api, "api")
            except FaultRuleError as e:
                raise InvalidArgument(e.message, "api") from None
        since = _opt_int(since_ms, "since_ms", 0)
        until = _opt_int(until_ms, "until_ms", 0)
        return [e.as_dict() for e in self.cluster.journal.select(
            key, client_id, None if since is None else since * 1_000_000, None if until is None else until * 1_000_000,
            _opt_int(limit, "limit", 0))]

    # -- clock ---------------------------------------------------------------------------------
    def clock(self) -> dict[str, Any]:
        c = self.cluster.clock
        return {"mode": "manual" if isinstance(c, ManualClock) else "system", "monotonic_ms": c.monotonic_ms(),
                "wall_ms": c.time_ms()}

    def advance_clock(self, ms: Any) -> dict[str, Any]:
        """Move a manual clock forward (``mock.clock=manual``); its timers fire on the way."""
        c = self.cluster.clock
        if not isinstance(c, ManualClock):
            raise InvalidArgument("the clock is the system clock: start with mock.clock=manual to drive it", "ms")
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms <= MAX_ADVANCE_MS:
            raise InvalidArgument(f"ms must be a number of milliseconds from 0 to {MAX_ADVANCE_MS} (30 days) "
                                  "per call: periodic tasks fire on the way", "ms")
        c.advance(float(ms))
        return self.clock()

    # -- faults --------------------------------------------------------------------------------
    def faults(self) -> list[dict[str, Any]]:
        return [r.describe() for r in self.cluster.faults.rules]

    def inject(self, spec: Any) -> dict[str, Any]:
        """Add a fault rule (``faults.py``: match by api, versions, broker, client_id, topic,
        partition; action error/delay/hold/drop/close; count)."""
        def check(rule: FaultRule) -> None:
            m = rule.match
            if rule.action == "error" and m.api_key is not None and not supports_error_injection(m.api_key):
                raise InvalidArgument(f"{ApiKey(m.api_key).name} cannot be answered with an injected error", "api")
            if m.broker is not None and m.broker not in self.cluster.brokers:
                raise NotFound(f"no broker {m.broker}", "broker")

        try:
            return self.cluster.faults.add(spec, check).describe()
        except FaultRuleError as e:
            raise InvalidArgument(e.message, e.field) from None

    def fault(self, rule_id: Any) -> dict[str, Any]:
        rule = self.cluster.faults.get(_int(rule_id, "rule", 1))
        if rule is None:
            raise NotFound(f"no fault rule {rule_id}", "rule")
        return rule.describe()

    def remove_fault(self, rule_id: Any) -> None:
        if self.cluster.faults.remove(_int(rule_id, "rule", 1)) is None:
            raise NotFound(f"no fault rule {rule_id}", "rule")

    def clear_faults(self) -> None:
        self.cluster.faults.clear()

    def held(self) -> list[dict[str, Any]]:
        return [{"rule": h.rule_id, "connection": h.conn_id, "api": ApiKey(h.api_key).name,
                 "correlation_id": h.correlation_id} for h in self.cluster.faults.held]

    def release(self, rule_id: Any = None) -> dict[str, int]:
        """Let held requests go on to their handlers (one rule's, or all); how many."""
        rid = _opt_int(rule_id, "rule", 1)
        if rid is not None and self.cluster.faults.get(rid) is None and not any(
                h.rule_id == rid for h in self.cluster.faults.held):
            raise NotFound(f"no fault rule {rid}", "rule")
        return {"released": self.cluster.faults.release(rid)}

