"""Produce (key 0): v3-13 (advertised from v0 as Kafka 4.x does; v0-2 close the connection).

Behavior:
* acks must be -1, 0 or 1, else every partition gets INVALID_REQUIRED_ACKS
  and nothing is appended (``ReplicaManager.appendRecords``).
* Per partition, in Kafka's order: unknown topic (UNKNOWN_TOPIC_OR_PARTITION,
  or UNKNOWN_TOPIC_ID at v13), not the leader (NOT_LEADER_OR_FOLLOWER with the
  current leader at v10+), exactly one v2 batch (INVALID_RECORD), zstd below
  v7 (UNSUPPORTED_COMPRESSION_TYPE), baseOffset 0, size against
  max.message.bytes (MESSAGE_TOO_LARGE), CRC32C (CORRUPT_MESSAGE), record
  count (INVALID_RECORD), then idempotent-producer checks
  (``producer_state``).  A partition that fails appends nothing; others in
  the same request still append.
* The batch is stored as bytes with its offsets assigned; with
  message.timestamp.type=LogAppendTime the broker time is written and the CRC
  recomputed.  Records are never decoded.
* acks=0: no response at all; any partition error closes the connection, as
  Kafka does.  acks=1 answers once appended.  acks=-1 first needs an ISR of
  at least min.insync.replicas (NOT_ENOUGH_REPLICAS, nothing appended), then
  waits in the produce purgatory (``DelayedProduce``) until the high
  watermark passes its records, answering REQUEST_TIMED_OUT for partitions
  still waiting at the request's timeout.
* Transactional produce is not simulated: a transactional batch gets
  INVALID_TXN_STATE (no AddPartitionsToTxn has happened).

Version notes:
* v3 transactional id, magic 2 only.  v5 log_start_offset.  v6 clients back off (KIP-219).
* v7 zstd allowed.  v8 record_errors and error_message.  v9 flexible.
* v10 current_leader and node_endpoints on NOT_LEADER_OR_FOLLOWER (KIP-951).
* v11 no change on the broker (KIP-890 part 1).  v12 transaction version 2.  v13 topic ids.
"""

from __future__ import annotations

from typing import Any

from protocol.errors import CorruptRecordBatch, ErrorCode
from protocol.records import Compression, split_batches, validate_batch
from protocol.registry import ApiKey

from protocol.codec import timedelta_ms

from ..delayed_produce import DelayedProduce, ProducePartitionStatus
from ..kafka_apis import NO_RESPONSE, CloseConnection, Deferred
from .common import leader_info, node_endpoint, resolve_topic

API_KEY = ApiKey.PRODUCE


def _partition_result(index: int, error: ErrorCode, message: str | None = None, **kw: Any) -> dict:
    out = {
        "index": index,
        "error_code": error,
        "base_offset": -1,
        "log_append_time": -1,
        "log_start_offset": -1,
        "error_message": message,
        "record_errors": [],
    }
    out.update(kw)
    return out


def append_partition(ctx: Any, partition: Any, records: Any, version: int, acks: int) -> dict:
    """Validate and append one partition's records; the partition's response entry."""
    topic = partition.topic
    cluster = ctx.cluster
    idx = partition.index
    if records is None:
        return _partition_result(idx, ErrorCode.invalid_record, "Produce request has no records")
    try:
        batches = split_batches(records)
        if len(batches) != 1:
            return _partition_result(
                idx, ErrorCode.invalid_record,
                "Produce requests with version 3 and above must have exactly one record batch per partition",
            )
        batch = batches[0]
        if len(batch) > 21 and batch[16] == 2 and version < 7 and (batch[22] & 0x07) == Compression.ZSTD:
            return _partition_result(
                idx, ErrorCode.unsupported_compression_type,
                "Produce requests with version below 7 cannot use ZStandard compression",
            )
        header = validate_batch(batch, cluster.topic_config(topic, "max.message.bytes"))
    except CorruptRecordBatch as e:
        return _partition_result(idx, e.error, str(e))
    if header.is_transactional:
        return _partition_result(
            idx, ErrorCode.invalid_txn_state,
            "mockbroker does not simulate transactions: no AddPartitionsToTxn preceded this batch",
        )
    log = partition.log
    if acks == -1 and len(partition.isr) < cluster.topic_config(topic, "min.insync.replicas"):
        # Partition.appendRecordsToLeader: refuse before appending
        return _partition_result(
            idx, ErrorCode.not_enough_replicas,
            f"The size of the current ISR {sorted(partition.isr)} is insufficient to satisfy the min.isr "
            f"requirement of {cluster.topic_config(topic, 'min.insync.replicas')} for partition {topic.name}-{idx}",
            log_start_offset=log.log_start_offset,
        )
    err, duplicate, message = partition.producers.check(header)
    if err is not ErrorCode.none:
        return _partition_result(idx, err, message, log_start_offset=log.log_start_offset)
    log_append = cluster.topic_config(topic, "message.timestamp.type") == "LogAppendTime"
    now = ctx.broker.clock.time_ms()
    if duplicate is not None:
        # ProducerStateManager found the batch among the last 5: answer with the original offsets.
        return _partition_result(
            idx, ErrorCode.none, base_offset=duplicate.first_offset,
            log_append_time=duplicate.timestamp if log_append else -1,
            log_start_offset=log.log_start_offset, _last_offset=duplicate.last_offset,
        )
    base, last = log.append(
        batch, header, now,
        cluster.topic_config(topic, "segment.bytes"),
        cluster.topic_config(topic, "segment.ms"),
        log_append,
    )
    partition.producers.update(header, base, last, now)
    ctx.broker.on_append(partition)
    return _partition_result(
        idx, ErrorCode.none, base_offset=base,
        log_append_time=now if log_append else -1,
        log_start_offset=log.log_start_offset, _last_offset=last,
    )


def handle(ctx: Any, req: Any) -> Any:
    v = ctx.version
    acks = req.acks
    by_id = v >= 13
    responses = []
    leaders: dict[int, Any] = {}
    waiting: list[ProducePartitionStatus] = []
    any_error = False
    for td in req.topic_data:
        name = getattr(td, "name", None)
        topic_id = getattr(td, "topic_id", None)
        topic, terr = resolve_topic(ctx, name, topic_id, by_id)
        parts = []
        for pd in td.partition_data:
            if acks not in (-1, 0, 1):
                parts.append(_partition_result(pd.index, ErrorCode.invalid_required_acks))
            elif topic is None:
                parts.append(_partition_result(pd.index, terr))
            elif not 0 <= pd.index < len(topic.partitions):
                parts.append(_partition_result(pd.index, ErrorCode.unknown_topic_or_partition))
            else:
                p = topic.partitions[pd.index]
                if p.leader_id != ctx.node_id:
                    entry = _partition_result(pd.index, ErrorCode.not_leader_or_follower)
                    if v >= 10:
                        entry["current_leader"] = leader_info(p)
                        node = ctx.cluster.brokers.get(p.leader_id)
                        if node is not None and node.alive:
                            leaders[node.node_id] = node
                    parts.append(entry)
                else:
                    entry = append_partition(ctx, p, pd.records, v, acks)
                    parts.append(entry)
                    if entry["error_code"] is ErrorCode.none and acks == -1:
                        waiting.append(ProducePartitionStatus(p, entry.pop("_last_offset") + 1, entry, ctx.node_id))
                    entry.pop("_last_offset", None)
            if parts[-1]["error_code"] is not ErrorCode.none:
                any_error = True
        responses.append(
            {"name": name if topic is None else topic.name,
             "topic_id": topic_id if topic is None else topic.topic_id,
             "partition_responses": parts}
        )
    if acks == 0:
        if any_error:
            return CloseConnection("a partition of a produce request with acks=0 failed")
        return NO_RESPONSE
    response = {"responses": responses, "node_endpoints": [node_endpoint(n) for n in leaders.values()]}
    if not waiting:
        return response
    # acks=-1: wait in the purgatory until the ISR has the records or the timeout passes
    deferred = Deferred()
    op = DelayedProduce(timedelta_ms(req.timeout), waiting, response, ctx.cluster, deferred)
    keys = [(st.partition.topic.name, st.partition.index) for st in waiting]
    ctx.broker.produce_purgatory.try_complete_else_watch(op, keys)
    return deferred
