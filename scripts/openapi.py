"""Writes mockbroker/admin/openapi.json, the admin API's OpenAPI 3 document, from the tables below.

    python scripts/openapi.py            # rewrite the document
    python scripts/openapi.py --check    # exit 1 if the committed document differs

tests/unit/admin/test_admin_api.py checks the running server against the document (schemathesis) and
that the document is what this script writes.
"""

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "mockbroker" / "admin" / "openapi.json"
I = {"type": "integer"}
S = {"type": "string"}
B = {"type": "boolean"}
N = {"type": "number"}
def nul(t): return {**t, "nullable": True}
def arr(t): return {"type": "array", "items": t}
def obj(props, required=(), extra=True):
    o = {"type": "object", "properties": props}
    if required: o["required"] = list(required)
    if not extra: o["additionalProperties"] = False
    return o
TASKS = {"type": "object", "additionalProperties": arr(I), "description": "subtopology id -> partitions (task ids)"}
def ref(n): return {"$ref": f"#/components/schemas/{n}"}
def js(schema): return {"content": {"application/json": {"schema": schema}}}
ERR = {"description": "wrong input: the field is named", **js(ref("Error"))}
NF = {"description": "unknown broker, topic, partition, group, rule or quota entity", **js(ref("Error"))}

schemas = {
 "Error": obj({"error": S, "field": nul(S)}, ["error", "field"]),
 "Broker": obj({"id": I, "host": S, "port": I, "rack": nul(S), "alive": B, "connections": I,
                "listeners": arr(ref("Listener"))},
               ["id", "host", "port", "alive", "connections", "listeners"]),
 "Listener": obj({"name": S, "security_protocol": S, "bind_host": S, "port": I, "advertised_host": nul(S),
                  "advertised_port": nul(I), "connections": I},
                 ["name", "security_protocol", "bind_host", "port", "advertised_host", "advertised_port",
                  "connections"]),
 "Partition": obj({"topic": S, "partition": I, "leader": I, "leader_epoch": I, "replicas": arr(I), "isr": arr(I),
                   "high_watermark": I, "log_end_offset": I, "log_start_offset": I, "last_stable_offset": I},
                  ["topic", "partition", "leader", "leader_epoch", "replicas", "isr", "high_watermark",
                   "log_end_offset", "log_start_offset"]),
 "Topic": obj({"name": S, "topic_id": S, "internal": B, "partition_count": I, "replication_factor": I,
               "configs": {"type": "object", "additionalProperties": S},
               "partitions": arr(ref("Partition"))}, ["name", "topic_id", "partition_count", "replication_factor"]),
 "TopicCreate": obj({"name": {**S, "description": "Kafka's topic name rules apply"},
                     "partitions": nul({**I, "minimum": 1, "description": "default num.partitions"}),
                     "replication_factor": nul({**I, "minimum": 1, "description": "default default.replication.factor"}),
                     "configs": nul({"type": "object", "additionalProperties": S,
                                     "description": "topic configs by Kafka's names"})}, ["name"], extra=False),
 "ReplicationLag": obj({"default_ms": I, "by_broker": {"type": "object", "additionalProperties": I},
                        "by_topic": {"type": "object", "additionalProperties": I}},
                       ["default_ms", "by_broker", "by_topic"]),
 "ReplicationLagSet": obj({"lag_ms": {**I, "minimum": 0}, "broker": nul(I), "topic": nul(S)}, ["lag_ms"], extra=False),
 "QuotaEntity": obj({"user": nul(S), "client_id": nul(S)}, ["user", "client_id"]),
 "Quota": obj({"entity": ref("QuotaEntity"), "values": {"type": "object", "additionalProperties": N}},
              ["entity", "values"]),
 "QuotaSet": obj({"user": nul({**S, "description": "a user, or <default>"}),
                  "client_id": nul({**S, "description": "a client id, or <default>"}),
                  "values": {"type": "object", "description": "quota key -> value (null removes it): "
                             "producer_byte_rate, consumer_byte_rate, request_percentage, request_rate, "
                             "controller_mutation_rate", "additionalProperties": nul(N)}}, ["values"], extra=False),
 "GroupMember": obj({"member_id": S, "group_instance_id": nul(S), "client_id": S, "client_host": S,
                     "assigned": {"nullable": True, "type": "object", "additionalProperties": arr(I),
                                  "description": "topic -> partitions (a classic member's decoded when it uses "
                                                 "the consumer protocol)"},
                     "assignment": {**S, "format": "byte", "description": "classic: the bytes SyncGroup gave"},
                     "member_epoch": I, "state": S,
                     "process_id": {**S, "description": "streams: the Kafka Streams instance"},
                     "topology_epoch": I,
                     "user_endpoint": nul({**S, "description": "streams: host:port for interactive queries"}),
                     **{k: TASKS for k in ("active", "standby", "warmup", "target_active", "target_standby")}},
                    ["member_id", "client_id"]),
 "CommittedOffset": obj({"topic": S, "partition": I, "offset": I, "leader_epoch": I, "metadata": S},
                        ["topic", "partition", "offset"]),
 "PendingOffset": obj({"producer_id": I, "topic": S, "partition": I, "offset": I},
                     ["producer_id", "topic", "partition", "offset"]),
 "Group": obj({"group_id": S, "type": {"type": "string", "enum": ["classic", "consumer", "streams", "share"]}, "state": S,
               "protocol_type": nul(S), "coordinator": I, "generation_id": I, "protocol_name": nul(S),
               "leader_id": nul(S), "group_epoch": I, "assignment_epoch": I,
               "members": arr(ref("GroupMember")), "committed_offsets": arr(ref("CommittedOffset")),
               "pending_transactional_offsets": {**arr(ref("PendingOffset")), "description":
                                                 "TxnOffsetCommit offsets waiting for their transaction's marker"},
               "topology": nul({"type": "object", "description": "streams: its epoch and subtopologies (source, "
                                "repartition and changelog topics; partition counts as decided once ready)"}),
               "topology_ready": {**B, "description": "streams: every source and internal topic is as needed"},
               "status": nul({**obj({"code": S, "detail": S}), "description": "streams: why the topology is not "
                              "ready (MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS, INCORRECTLY_PARTITIONED_TOPICS)"}),
               "shutdown_requested_by": nul({**S, "description": "streams: the member that asked the application "
                                                                "to shut down"}),
               "topology_description": nul({"type": "object", "description": "streams: the topology description "
                                            "the members pushed (StreamsGroupTopologyDescriptionUpdate, KIP-1331)"}),
               "topology_description_epoch": {**I, "description": "streams: the topology epoch of the stored "
                                                                  "description; -1: none"},
               "share_partitions": arr({"type": "object", "description": "share: a share-partition on its leader: "
                                        "start and end offsets (SPSO/SPEO), every in-flight record's state, "
                                        "delivery count, owner and lock deadline"}),
               "acknowledgements": {"type": "object", "additionalProperties": I,
                                    "description": "share: the group's records acknowledged, by type"},
               "persisted": arr({"type": "object", "description": "share: what the share coordinator keeps per "
                                 "share-partition (start offset, state epoch, state batches)"}),
               "broker_metrics": {"type": "object", "additionalProperties": I,
                                  "description": "share: the brokers' share counters (every group's)"}},
              ["group_id", "type", "state", "coordinator", "members", "committed_offsets",
               "pending_transactional_offsets"]),
 "Transaction": obj({"transactional_id": S, "state": {**S, "description": "Kafka's name: Empty, Ongoing, "
                                                     "PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, "
                                                     "PrepareEpochFence, Dead"},
                     "pending_state": nul(S), "producer_id": I, "producer_epoch": I, "timeout_ms": I,
                     "start_timestamp": {**I, "description": "ms since the epoch; -1: no transaction started"},
                     "partitions": arr(arr({"oneOf": [S, I]})), "coordinator": I},
                    ["transactional_id", "state", "producer_id", "producer_epoch", "partitions", "coordinator"]),
 "ClientMetrics": obj({"client_instance_id": {**S, "description": "as the client's clientInstanceId() prints it"},
                       "broker": I, "client_id": S, "client_software_name": nul(S),
                       "client_software_version": nul(S), "client_source_address": nul(S),
                       "client_source_port": nul(S), "subscription_id": nul(I), "push_interval_ms": nul(I),
                       "requested_metrics": nul(arr(S)), "pushes": I,
                       "last_push_ms": {**I, "description": "broker clock, ms since the epoch"},
                       "terminated": B,
                       "resource": {"type": "object", "description": "the OTLP resource attributes"},
                       "metrics": {"type": "object", "description": "metric name -> the latest data point of each "
                                   "attribute set: type, attributes, value ({count, sum} for a histogram or "
                                   "summary), time_unix_nano",
                                   "additionalProperties": arr({"type": "object"})}},
                      ["client_instance_id", "broker", "client_id", "pushes", "last_push_ms", "metrics"]),
 "LoadingSet": obj({"duration_ms": {**I, "minimum": 0}}, ["duration_ms"], extra=False),
 "InFlight": obj({"api": S, "api_key": I, "api_version": I, "correlation_id": I, "waiting_ms": I}),
 "Connection": obj({"id": I, "broker": I, "listener": S, "peer": S, "client_id": S, "client_software_name": nul(S),
                    "client_software_version": nul(S), "principal": S, "muted": arr(S),
                    "in_flight": {"nullable": True, "allOf": [ref("InFlight")]}, "idle_ms": I, "memory_held_bytes": I},
                   ["id", "broker", "listener", "peer", "client_id", "principal", "muted", "in_flight"]),
 "ThrottleEvent": obj({"node_id": I, "conn_id": I, "peer": S, "user": S, "client_id": S, "api_key": I,
                       "api_version": I, "client_should_throttle": B, "mode": S, "quota_type": S, "start_ms": I,
                       "throttle_ms": I, "sent_ms": nul(I), "deadline_ms": I, "next_request_ms": nul(I),
                       "early_ms": nul(I), "held_while_muted": nul(B), "pipelined": B, "judged": B, "violation": B},
                      ["node_id", "conn_id", "client_id", "api_key", "api_version", "throttle_ms", "mode"]),
 "Violation": obj({"user": S, "client_id": S, "broker": I, "connection": I, "peer": S, "throttles": I,
                   "judged": I, "violations_obliged": I, "violations_not_obliged": I, "worst_early_ms": I,
                   "apis": {"type": "object", "additionalProperties": I},
                   "verdict": {**S, "enum": ["honours", "partly", "ignores", "not throttled",
                                             "no judged throttles"]}},
                  ["throttles", "judged", "violations_obliged", "violations_not_obliged", "worst_early_ms",
                   "verdict"]),
 "JournalRecord": obj({"schema_version": I, "broker": I, "connection": I, "peer": S, "client_id": S,
                       "principal": S, "api_key": I, "api": S, "api_version": I, "correlation_id": I,
                       "outcome": S, "throttle_time_ms": I, "received_clock_ns": I,
                       "partitions": arr(obj({"topic": S, "partition": I, "error_code": I, "bytes": I}))},
                      ["schema_version", "broker", "connection", "api_key", "api_version", "correlation_id",
                       "outcome"]),
 "Clock": obj({"mode": {"type": "string", "enum": ["system", "manual"]}, "monotonic_ms": I, "wall_ms": I},
              ["mode", "monotonic_ms", "wall_ms"]),
 "ClockAdvance": obj({"ms": {**N, "minimum": 0, "maximum": 2592000000}}, ["ms"], extra=False),
 "FaultRuleSpec": obj({
     "api": {"oneOf": [S, I], "description": "API name (Produce, FindCoordinator, ...) or key; required for errors"},
     "versions": {"description": "version range: 3-9, 7 or [3, 9]"},
     "min_version": nul({**I, "minimum": 0}), "max_version": nul({**I, "minimum": 0}),
     "broker": nul({**I, "minimum": 0}), "client_id": nul(S), "topic": nul(S), "partition": nul({**I, "minimum": 0}),
     "action": {"type": "string", "enum": ["error", "delay", "hold", "drop", "close"],
                "description": "default error when errors are given"},
     "errors": {"description": "error codes (names or numbers), one per matching request, or "
                "{error, delay_ms} entries"},
     "delay_ms": nul({**I, "minimum": 0}), "after": B,
     "count": nul({**I, "minimum": 1, "description": "firings (null: persistent); default: the stack's length, else 1"})},
     extra=False),
 "Acl": obj({"resource_type": {**S, "description": "TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER"},
              "name": S, "pattern_type": {**S, "description": "LITERAL (default) or PREFIXED"},
              "principal": {**S, "description": "User:name"}, "host": {**S, "description": "* (default), an address or a CIDR block"},
              "operation": {**S, "description": "READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, ALL, ..."},
              "permission": {**S, "description": "ALLOW (default) or DENY"}},
             ["resource_type", "name", "principal", "operation"]),
 "AclFilter": obj({"resource_type": S, "name": S, "pattern_type": S, "principal": S, "host": S, "operation": S,
                   "permission": S}, extra=False),
 "FaultRule": obj({"id": I, "action": S, "match": {"type": "object"},
                   "errors": arr(obj({"error": S, "code": I, "delay_ms": I})), "delay_ms": I, "after": B,
                   "count": nul(I), "fired": I}, ["id", "action", "match", "errors", "count", "fired"]),
 "HeldRequest": obj({"rule": I, "connection": I, "api": S, "correlation_id": I},
                    ["rule", "connection", "api", "correlation_id"]),
 "Release": obj({"rule": nul(I)}, extra=False),
 "Released": obj({"released": I}, ["released"]),
 "Elect": obj({"broker": I}, ["broker"], extra=False),
 "IsrSet": obj({"isr": arr(I)}, ["isr"], extra=False),
 "Status": obj({"cluster_id": S, "controller_id": I, "brokers": arr(ref("Broker")), "topics": arr({"type": "object"}),
                "groups": arr({"type": "object"}), "connections": I,
                "muted_connections": {"type": "object", "additionalProperties": I}, "throttle_events": I,
                "journal_records": I, "journal_written": nul(I), "journal_dropped": nul(I), "rebalances": I, "fault_rules": I, "held_requests": I, "clock": ref("Clock")},
               ["cluster_id", "brokers", "topics", "groups", "connections", "clock"]),
 "Gauges": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": I}},
 "MemoryPool": {"type": "object", "additionalProperties": N},
}

def p(name, desc, schema=None, required=False, where="query"):
    return {"name": name, "in": where, "required": required or where == "path", "description": desc,
            "schema": schema or S}

broker_p = p("broker", "broker id", {**I, "minimum": 0}, where="path")
topic_p = p("topic", "topic name", where="path")
part_p = p("partition", "partition index", {**I, "minimum": 0}, where="path")
group_p = p("group", "group id", where="path")
rule_p = p("rule", "fault rule id", {**I, "minimum": 1}, where="path")

def op(summary, ok, params=(), body=None, errors=(400,), status="200", op_id=None, body_required=True):
    o = {"summary": summary, "operationId": op_id, "parameters": list(params), "responses": {}}
    if ok is None:
        o["responses"][status] = {"description": "done"}
    else:
        o["responses"][status] = {"description": "ok", **js(ok)}
    if body is not None:
        o["requestBody"] = {"required": body_required, **js(body)}
    for e in errors:
        o["responses"][str(e)] = ERR if e == 400 else NF
    return o

paths = {
 "/status": {"get": op("Brokers, topics, groups, connections and throttles at a glance", ref("Status"), op_id="status")},
 "/brokers": {"get": op("Simulated brokers", arr(ref("Broker")), op_id="listBrokers")},
 "/brokers/{broker}/stop": {"post": op("Stop a broker: listener closed, leadership moves, replicas leave the ISR",
                                       ref("Broker"), [broker_p], errors=(400, 404), op_id="stopBroker")},
 "/brokers/{broker}/start": {"post": op("Restart a stopped broker on its port", ref("Broker"), [broker_p],
                                        errors=(400, 404), op_id="startBroker")},
 "/topics": {"get": op("Topics", arr(ref("Topic")), op_id="listTopics"),
             "post": op("Create a topic (as CreateTopics)", ref("Topic"), body=ref("TopicCreate"), status="201",
                        op_id="createTopic")},
 "/topics/{topic}": {"get": op("A topic and its partitions", ref("Topic"), [topic_p], errors=(400, 404),
                               op_id="getTopic"),
                     "delete": op("Delete a topic (its committed offsets go too)", None, [topic_p], errors=(400, 404),
                                  status="204", op_id="deleteTopic")},
 "/topics/{topic}/partitions/{partition}": {"get": op("Leader, ISR, high watermark, log end and start offsets",
                                                      ref("Partition"), [topic_p, part_p], errors=(400, 404),
                                                      op_id="getPartition")},
 "/topics/{topic}/partitions/{partition}/elect": {"post": op("Move leadership to an ISR member", ref("Partition"),
                                                             [topic_p, part_p], ref("Elect"), errors=(400, 404),
                                                             op_id="electLeader")},
 "/topics/{topic}/partitions/{partition}/isr": {"put": op("Force the ISR", ref("Partition"), [topic_p, part_p],
                                                          ref("IsrSet"), errors=(400, 404), op_id="setIsr")},
 "/replication/lag": {"get": op("Followers' catch-up time", ref("ReplicationLag"), op_id="getReplicationLag"),
                      "put": op("Set the catch-up time (all, one broker's followers, or one topic's)",
                                ref("ReplicationLag"), body=ref("ReplicationLagSet"), errors=(400, 404),
                                op_id="setReplicationLag")},
 "/quotas": {"get": op("Configured client quotas (as DescribeClientQuotas)", arr(ref("Quota")),
                       [p("user", "exact user"), p("client_id", "exact client id")], op_id="listQuotas"),
             "put": op("Set or remove quotas of an entity (as AlterClientQuotas)", ref("Quota"), body=ref("QuotaSet"),
                       op_id="setQuota"),
             "delete": op("Remove an entity's quotas (one key, or all)", None,
                          [p("user", "user (or <default>)"), p("client_id", "client id (or <default>)"),
                           p("key", "one quota key")], errors=(400, 404), status="204", op_id="deleteQuota")},
 "/groups": {"get": op("Consumer groups", arr(ref("Group")), op_id="listGroups")},
 "/groups/{group}": {"get": op("A group: state, generation or epochs, members, assignments, committed offsets",
                               ref("Group"), [group_p], errors=(400, 404), op_id="getGroup")},
 "/streams-groups/{group}": {"get": op("A KIP-1071 streams group: topology, status, members with their tasks",
                                       ref("Group"), [group_p], errors=(400, 404), op_id="getStreamsGroup")},
 "/share-groups/{group}": {"get": op("A KIP-932 share group: members and assignments, every share-partition's "
                                     "in-flight records (state, delivery count, lock deadline), the share "
                                     "coordinator's persisted state", ref("Group"), [group_p], errors=(400, 404),
                                     op_id="getShareGroup")},
 "/transactions": {"get": op("Transactional ids: state, producer id and epoch, timeout, partitions, coordinator",
                              arr(ref("Transaction")), op_id="listTransactions")},
 "/client-metrics": {"get": op("KIP-714 client telemetry (mock.client.telemetry.enabled): every client instance "
                                "that pushed metrics, with its subscription and the latest value of each metric",
                                arr(ref("ClientMetrics")), [p("client_id", "only this client id")],
                                op_id="listClientMetrics")},
 "/groups/{group}/loading": {"post": op("Its coordinator answers COORDINATOR_LOAD_IN_PROGRESS for a while", None,
                                        [group_p], ref("LoadingSet"), status="204", op_id="injectLoading")},
 "/groups/{group}/coordinator": {"post": op(
     "Move the group's coordinator to a broker (a live replica of its __consumer_offsets partition), every "
     "broker staying up: the old coordinator answers NOT_COORDINATOR", ref("Group"), [group_p], ref("Elect"),
     errors=(400, 404), op_id="moveCoordinator")},
 "/groups/{group}/members/{member}": {"delete": op(
     "Expel a member as its session timeout would, at once: a classic member is removed and the group "
     "rebalances; a consumer, streams or share member is fenced and its partitions or tasks go to the others",
     ref("Group"), [group_p, p("member", "member id", where="path")], errors=(400, 404), op_id="expelMember")},
 "/connections": {"get": op("Client connections: peer, client id and software, principal, mute reasons, "
                            "in-flight request", arr(ref("Connection")),
                            [p("broker", "only this broker's", {**I, "minimum": 0}), p("client_id", "only this client id")],
                            errors=(400, 404), op_id="listConnections")},
 "/throttles": {"get": op("Throttled responses and what each client did next", arr(ref("ThrottleEvent")),
                          [p("client_id", "client id"), p("user", "user"),
                           p("connection", "connection id", {**I, "minimum": 0})], op_id="listThrottles")},
 "/throttles/violations": {"get": op("KIP-219 violations per connection or entity", arr(ref("Violation")),
                                     [p("by", "connection or entity", {"type": "string",
                                                                       "enum": ["connection", "entity"]})],
                                     op_id="listViolations")},
 "/memory-pool": {"get": op("KIP-72 memory pool of a broker", ref("MemoryPool"),
                            [p("broker", "broker id (default: the first)", {**I, "minimum": 0})], errors=(400, 404),
                            op_id="getMemoryPool")},
 "/purgatories": {"get": op("PurgatorySize and NumDelayedOperations", ref("Gauges"),
                            [p("broker", "broker id (default: the first)", {**I, "minimum": 0})], errors=(400, 404),
                            op_id="getPurgatories")},
 "/journal": {"get": op("Request journal records, oldest first", arr(ref("JournalRecord")),
                        [p("api", "API name or key"), p("client_id", "client id"),
                         p("since_ms", "received at or after (broker clock ms)", {**I, "minimum": 0}),
                         p("until_ms", "received before (broker clock ms)", {**I, "minimum": 0}),
                         p("limit", "keep the newest N", {**I, "minimum": 0})], op_id="getJournal")},
 "/clock": {"get": op("The broker clock", ref("Clock"), op_id="getClock")},
 "/clock/advance": {"post": op("Advance a manual clock (mock.clock=manual)", ref("Clock"), body=ref("ClockAdvance"),
                               op_id="advanceClock")},
 "/acls": {"get": op("Every ACL (authorizer.class.name set; else 404)", arr(ref("Acl")), errors=(400, 404),
                      op_id="listAcls"),
           "post": op("Add an ACL, at once on every broker (as CreateAcls)", ref("Acl"), body=ref("Acl"),
                      errors=(400, 404), status="201", op_id="addAcl"),
           "delete": op("Remove the ACLs a filter matches (absent fields: any; no body: every ACL)", arr(ref("Acl")),
                        body=ref("AclFilter"), errors=(400, 404), op_id="removeAcls", body_required=False)},
 "/faults": {"get": op("Fault rules and how often each fired", arr(ref("FaultRule")), op_id="listFaults"),
             "post": op("Add a fault rule", ref("FaultRule"), body=ref("FaultRuleSpec"), errors=(400, 404),
                        status="201", op_id="addFault"),
             "delete": op("Remove every fault rule", None, status="204", op_id="clearFaults")},
 "/faults/held": {"get": op("Requests held by hold rules", arr(ref("HeldRequest")), op_id="listHeld")},
 "/faults/release": {"post": op("Release held requests (one rule's, or all: no body)", ref("Released"),
                                body=ref("Release"), errors=(400, 404), op_id="release", body_required=False)},
 "/faults/{rule}": {"get": op("A fault rule", ref("FaultRule"), [rule_p], errors=(400, 404), op_id="getFault"),
                    "delete": op("Remove a fault rule", None, [rule_p], errors=(400, 404), status="204",
                                 op_id="removeFault")},
 "/metrics": {"get": {"summary": "Prometheus metrics (text format 0.0.4), named as the JMX exporter renders Kafka's",
                      "operationId": "metrics", "responses": {"200": {"description": "ok", "content": {
                          "text/plain": {"schema": S}}}, "400": ERR}}},
 "/openapi.json": {"get": {"summary": "This document", "operationId": "openapi",
                           "responses": {"200": {"description": "ok", **js({"type": "object"})}}}},
}
GUARD = {
    "401": {"description": "mock.admin.token is set and the request has no Authorization: Bearer TOKEN with it",
            **js(ref("Error"))},
    "403": {"description": "the Host is not a loopback name, the listener's address or one of mock.admin.hosts, "
                           "or the Origin is not this API's own", **js(ref("Error"))},
}
UNSUPPORTED = {"description": "a POST, PUT or DELETE without Content-Type: application/json", **js(ref("Error"))}
for path, ops in paths.items():
    for m, o in ops.items():
        if m in ("get",) and path not in ("/openapi.json",):
            o.setdefault("responses", {}).setdefault("400", ERR)
        if o.get("requestBody"):  # a body nested deeper than 32 levels, or no JSON: 400 naming it
            o["responses"].setdefault("400", ERR)
        o["responses"].update(GUARD)
        if m in ("post", "put", "delete"):
            o["responses"]["415"] = UNSUPPORTED
doc = {"openapi": "3.0.3",
       "info": {"title": "mockbroker admin API", "version": "1",
                "description": "Steer and observe a mockbroker cluster from any language: quotas, brokers, "
                               "partitions, topics, groups, connections, throttles and KIP-219 violations, the memory "
                               "pool, purgatories, the request journal, the clock and fault rules. Served when "
                               "mock.admin.listener is set, on loopback unless mock.admin.allow.remote=true (which "
                               "needs mock.admin.token). Every request needs a Host that is a loopback name or the "
                               "listener's address, no foreign Origin, the bearer token when one is set, and "
                               "Content-Type: application/json when it is a POST, PUT or DELETE."},
       "paths": paths,
       "components": {"schemas": schemas,
                      "securitySchemes": {"token": {"type": "http", "scheme": "bearer",
                                                    "description": "mock.admin.token, when it is set"}}},
       "security": [{}, {"token": []}]}


def render() -> str:
    return json.dumps(doc, indent=1)


if __name__ == "__main__":
    if "--check" in sys.argv:
        sys.exit(0 if OUT.read_text() == render() else 1)
    OUT.write_text(render())
