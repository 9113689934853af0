"""KIP-890 over a real socket: produce-time verification of transactional batches (part 1) and
transaction version 2 (part 2: the transaction.version feature in ApiVersions, partitions added
by Produce v12+, EndTxn v5 bumping the epoch), checked against Kafka 4.x's answers
(ReplicaManager.handleProduceAppend, AddPartitionsToTxnManager, TransactionCoordinator)."""

from __future__ import annotations

import select
import time

import pytest

from mockbroker import ManualClock, MockBroker
from mockbroker.config.broker_config import BrokerConfig, ConfigError
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.kafka_releases import RECORDED
from protocol.registry import ApiKey

from . import test_txn_wire as wire
from .test_txn_wire import partition_state

E = ErrorCode
NOT_ADDED = "Partition was not added to the transaction"


def init_pid(c, tid, version=5):
    err, pid, epoch = wire.init_pid(c, tid, version)
    assert err == E.none
    return pid, epoch


def add_partitions(c, tid, pid, epoch, topic, partition=0):
    return wire.add_partitions(c, tid, pid, epoch, {topic: [partition]})[(topic, partition)]


def end_txn(c, tid, pid, epoch, commit, version=5):
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": commit}
    r = c.request(ApiKey.END_TXN, version, body)
    return (r.error_code, r.producer_id, r.producer_epoch) if version >= 5 else (r.error_code,)


def produce(c, tid, topic, pid, epoch, seq, version, n=1, partition=0, acks=-1):
    """A transactional batch in a Produce naming ``tid`` (None: no transactional id in the request)."""
    return wire.produce(c, topic, pid, epoch, seq, n, True, partition, tid=tid, version=version, acks=acks)


def txn_of(b, tid):
    md = b.call(lambda cl: cl.txn.txn_manager.transactions.get(tid))
    return md.state.state_name, sorted(md.topic_partitions), md.producer_epoch


@pytest.fixture(scope="module")
def b():
    with MockBroker(clock=ManualClock()) as broker:  # defaults: verification on, Kafka 4.2, TV2
        yield broker


# -- KIP-890 part 1: verification ------------------------------------------------------------------
def test_a_partition_never_added_is_refused_then_accepted_once_added(b, c):
    b.create_topic("v-refused", 1)
    pid, epoch = init_pid(c, "v-refused")
    # Produce v0-10 (defaultError): INVALID_TXN_STATE; v11 (genericErrorSupported): TRANSACTION_ABORTABLE
    r = produce(c, "v-refused", "v-refused", pid, epoch, 0, version=9)
    assert (r.error_code, r.error_message) == (E.invalid_txn_state, NOT_ADDED)
    r = produce(c, "v-refused", "v-refused", pid, epoch, 0, version=11)
    assert (r.error_code, r.error_message) == (E.transaction_abortable, None)
    assert partition_state(b, "v-refused") == (0, 0, [])  # nothing appended
    assert txn_of(b, "v-refused") == ("Empty", [], epoch)  # verification changes nothing
    assert add_partitions(c, "v-refused", pid, epoch, "v-refused") == E.none
    for version, seq in ((9, 0), (11, 1)):
        r = produce(c, "v-refused", "v-refused", pid, epoch, seq, version=version)
        assert (r.error_code, r.base_offset) == (E.none, seq)
    assert partition_state(b, "v-refused") == (2, 0, [])  # an open transaction: the LSO holds


def test_coordinator_errors_as_the_producer_sees_them(b, c):
    b.create_topic("v-errors", 1)
    pid, epoch = init_pid(c, "v-errors")
    # the coordinator knows no such id / another producer id: INVALID_PRODUCER_ID_MAPPING
    assert produce(c, "v-unknown-id", "v-errors", pid, epoch, 0, 9).error_code == E.invalid_producer_id_mapping
    assert produce(c, "v-errors", "v-errors", pid + 1, 0, 0, 9).error_code == E.invalid_producer_id_mapping
    # a stale epoch: PRODUCER_FENCED at the coordinator, INVALID_PRODUCER_EPOCH to the producer
    init_pid(c, "v-errors")
    assert produce(c, "v-errors", "v-errors", pid, epoch, 0, 9).error_code == E.invalid_producer_epoch
    # the coordinator loading: retriable for every client, as NOT_ENOUGH_REPLICAS
    b.call(lambda cl: cl.txn.txn_manager.inject_loading("v-errors", 60_000))
    try:
        r = produce(c, "v-errors", "v-errors", pid, epoch + 1, 0, 12)
        assert r.error_code == E.not_enough_replicas
        assert r.error_message == ("Unable to verify the partition has been added to the transaction. "
                                   "Underlying error: COORDINATOR_LOAD_IN_PROGRESS")
    finally:
        b.call(lambda cl: cl.txn.txn_manager._loading_until.clear())
    assert partition_state(b, "v-errors") == (0, 0, [])


def test_transactional_records_without_a_transactional_id_are_refused(b, c):
    """KafkaApis.handleProduceRequest refuses transactional records when the Produce names no
    transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), before ReplicaManager could verify."""
    b.create_topic("v-noid", 1)
    assert produce(c, None, "v-noid", 4242, 0, 0, 9).error_code == E.transactional_id_authorization_failed
    assert b.log_end_offset("v-noid", 0) == 0


def test_verification_disabled_appends_without_asking():
    """transaction.partition.verification.enable=false: Produce v0-11 appends without asking the
    coordinator; v12+ still asks it to add the partition (ReplicaManager sends a transaction version 2
    client's partitions to the coordinator whatever the config says: nothing else would add them)."""
    with MockBroker(config={"transaction.partition.verification.enable": False}) as b:
        b.create_topic("v-off", 2)
        with RawKafkaClient.connect(b.bootstrap_servers) as c:
            pid, epoch = init_pid(c, "v-off")
            assert produce(c, "v-off", "v-off", pid, epoch, 0, 9).error_code == E.none
            assert produce(c, "v-off", "v-off", pid, epoch, 1, 12).error_code == E.none
            assert txn_of(b, "v-off") == ("Empty", [], epoch)  # open in the partition: not asked
            assert produce(c, "v-off", "v-off", pid, epoch, 0, 12, partition=1).error_code == E.none
            assert txn_of(b, "v-off") == ("Ongoing", [("v-off", 1)], epoch)
            assert end_txn(c, "v-off", pid, epoch, True) == (E.none, pid, epoch + 1)
            assert partition_state(b, "v-off", 1) == (2, 2, [])  # the record and its COMMIT marker


# -- CONCURRENT_TRANSACTIONS: retried inside the broker at Produce v12+ ------------------------------
# ReplicaManager.handleProduceAppend (maybeRetryOnConcurrentTransactions): while the last transaction's
# markers are written the coordinator answers CONCURRENT_TRANSACTIONS; at Produce v12+ the broker asks
# again every add.partitions.to.txn.retry.backoff.ms (20) until
# min(add.partitions.to.txn.retry.backoff.max.ms (100), request.timeout.ms) has passed, the request and
# those behind it on its connection waiting meanwhile.  The markers are held by
# mock.txn.marker.latency.ms on the manual clock.
class CountingVerifier:
    """Wraps every broker's txn_verifier to count the coordinator asks per producer epoch."""

    def __init__(self, inner):
        self.inner, self.asks = inner, []

    def __call__(self, tid, pid, epoch, partitions, version, callback):
        self.asks.append((epoch, sorted(partitions)))
        self.inner(tid, pid, epoch, partitions, version, callback)


def held_markers(latency_ms, **config):
    b = MockBroker(config={"mock.txn.marker.latency.ms": latency_ms, **config}, clock=ManualClock())
    b.start()
    counter = b.call(lambda cl: CountingVerifier(cl.brokers[min(cl.brokers)].replica_manager.txn_verifier))

    def install(cl):
        for broker in cl.brokers.values():
            broker.replica_manager.txn_verifier = counter

    b.call(install)
    return b, counter


def commit_first_transaction(b, c, tid, topic):
    """A TV2 transaction on partition 0 committed with EndTxn v5: PrepareCommit, its markers held.
    Returns (producer id, the bumped epoch the next transaction uses)."""
    b.create_topic(topic, 2)
    pid, epoch = init_pid(c, tid)
    assert produce(c, tid, topic, pid, epoch, 0, 12).error_code == E.none
    assert end_txn(c, tid, pid, epoch, True) == (E.none, pid, epoch + 1)
    assert txn_of(b, tid)[0] == "PrepareCommit"
    return pid, epoch + 1


def send_produce(c, tid, topic, pid, epoch, seq, version=12, partition=0, n=1):
    from protocol.records import TRANSACTIONAL_FLAG, build_batch
    batch = build_batch([(b"k", b"v", [])] * n, base_timestamp=1, producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, attributes=TRANSACTIONAL_FLAG)
    body = {"acks": -1, "timeout": 5000, "transactional_id": tid,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    return c.send(ApiKey.PRODUCE, version, body), version


def answer(c, sent):
    corr, version = sent
    return c.response(ApiKey.PRODUCE, version, corr).responses[0].partition_responses[0]


def wait_for(predicate, what):
    deadline = time.monotonic() + 5
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def unanswered(c):
    return not select.select([c.sock], [], [], 0)[0]


def test_concurrent_transactions_is_retried_until_the_markers_are_written():
    b, counter = held_markers(50)
    try:
        with RawKafkaClient.connect(b.bootstrap_servers) as c:
            pid, epoch = commit_first_transaction(b, c, "r-ok", "r-ok")
            # the next transaction's first batch and a second one pipelined behind it on the connection
            first = send_produce(c, "r-ok", "r-ok", pid, epoch, 0)
            second = send_produce(c, "r-ok", "r-ok", pid, epoch, 1)
            wait_for(lambda: len(counter.asks) == 2, "the first batch was not verified")  # (+ the first txn's)
            for asks in (3, 4):
                b.advance(20)
                assert len(counter.asks) == asks and unanswered(c)  # CONCURRENT_TRANSACTIONS: asked again
            b.advance(10)  # 50 ms: the markers reach the partition, the transaction completes
            assert txn_of(b, "r-ok") == ("CompleteCommit", [], epoch)
            assert unanswered(c)
            b.advance(10)  # the retry at 60 ms adds the partition: appended after the COMMIT marker
            r = answer(c, first)
            assert (r.error_code, r.base_offset) == (E.none, 2)
            r = answer(c, second)  # read once the first was answered; the transaction is open here now
            assert (r.error_code, r.base_offset) == (E.none, 3)
            assert len(counter.asks) == 5 and txn_of(b, "r-ok") == ("Ongoing", [("r-ok", 0)], epoch)
    finally:
        b.stop()


def test_concurrent_transactions_once_the_retries_run_out_and_before_produce_v12():
    """After 100 ms of asking, Produce v12+ is answered CONCURRENT_TRANSACTIONS itself (common at TV2,
    ReplicaManager keeps it for those clients); Produce v11 and below are never retried and get
    NOT_ENOUGH_REPLICAS, which they retry without a metadata refresh."""
    b, counter = held_markers(1000)
    try:
        with RawKafkaClient.connect(b.bootstrap_servers) as c:
            pid, epoch = commit_first_transaction(b, c, "r-out", "r-out")
            r = produce(c, "r-out", "r-out", pid, epoch, 0, 9, partition=1)
            assert (r.error_code, r.error_message) == (E.not_enough_replicas, (
                "Unable to verify the partition has been added to the transaction. "
                "Underlying error: CONCURRENT_TRANSACTIONS"))
            assert len(counter.asks) == 2  # asked once
            sent = send_produce(c, "r-out", "r-out", pid, epoch, 0, partition=1)
            wait_for(lambda: len(counter.asks) == 3, "not verified")
            b.advance(99)
            assert len(counter.asks) == 7 and unanswered(c)  # asked at 0, 20, 40, 60 and 80 ms
            b.advance(1)  # the ask at 100 ms is the last
            r = answer(c, sent)
            assert (r.error_code, r.error_message) == (E.concurrent_transactions, None)
            assert len(counter.asks) == 8 and partition_state(b, "r-out", 1) == (0, 0, [])
    finally:
        b.stop()


def test_the_retry_configs_under_kafkas_names():
    """add.partitions.to.txn.retry.backoff.ms / .max.ms: a backoff of 30 up to 45 ms asks at 0, 30 and 60."""
    b, counter = held_markers(1000, **{"add.partitions.to.txn.retry.backoff.ms": 30,
                                       "add.partitions.to.txn.retry.backoff.max.ms": 45})
    try:
        with RawKafkaClient.connect(b.bootstrap_servers) as c:
            pid, epoch = commit_first_transaction(b, c, "r-cfg", "r-cfg")
            sent = send_produce(c, "r-cfg", "r-cfg", pid, epoch, 0)
            wait_for(lambda: len(counter.asks) == 2, "not verified")
            b.advance(59)
            assert len(counter.asks) == 3 and unanswered(c)
            b.advance(1)
            assert answer(c, sent).error_code == E.concurrent_transactions and len(counter.asks) == 4
            described = b.call(lambda cl: cl.config_catalog.describe(
                cl.config["node.id"], 4, str(cl.config["node.id"]),
                ["add.partitions.to.txn.retry.backoff.ms", "add.partitions.to.txn.retry.backoff.max.ms"],
                False, False))
            assert {x["name"]: x["value"] for x in described.configs} == {
                "add.partitions.to.txn.retry.backoff.ms": "30", "add.partitions.to.txn.retry.backoff.max.ms": "45"}
    finally:
        b.stop()
    with pytest.raises(ConfigError):
        BrokerConfig({"add.partitions.to.txn.retry.backoff.ms": 0})  # Kafka's atLeast(1)


def test_a_later_batch_verified_first_on_another_connection_is_out_of_order():
    """A batch of the same producer and partition with a higher sequence, verified while the first one
    still waits (here from another connection: on one connection it waits behind the first), is
    refused OUT_OF_ORDER_SEQUENCE_NUMBER (ProducerAppendInfo.checkSequence: a v12+ verification with
    no batch of the producer here wants sequence 0 first); the first one then appends at sequence 0."""
    b, counter = held_markers(45)
    try:
        with RawKafkaClient.connect(b.bootstrap_servers) as c, RawKafkaClient.connect(b.bootstrap_servers) as d:
            pid, epoch = commit_first_transaction(b, c, "r-two", "r-two")
            first = send_produce(c, "r-two", "r-two", pid, epoch, 0, n=2)
            wait_for(lambda: len(counter.asks) == 2, "not verified")
            b.advance(10)
            later = send_produce(d, "r-two", "r-two", pid, epoch, 2)
            wait_for(lambda: len(counter.asks) == 3, "not verified")
            b.advance(40)  # markers at 45; the later batch's retry at 50 succeeds first
            r = answer(d, later)
            assert r.error_code == E.out_of_order_sequence_number
            assert unanswered(c)
            b.advance(10)  # the first batch's retry at 60
            r = answer(c, first)
            assert (r.error_code, r.base_offset) == (E.none, 2)
            assert partition_state(b, "r-two")[0] == 4  # record, marker, the two records of the first batch
    finally:
        b.stop()


def test_a_new_epoch_must_start_at_sequence_0():
    """ProducerAppendInfo.checkSequence (OUT_OF_ORDER_SEQUENCE_NUMBER at every Produce version, with no
    error message: LogAppendResult has none for it; which check applies depends on the version): at the
    epoch a TV2 marker bumped to, no batch of the producer is left, so only sequence 0 follows; at
    Produce v12+ a producer the partition does not know must start at 0 too (its verification may bump
    the epoch: "Expected sequence 0 for transactions v2 ..."), where a Produce v0-11 of a TV1 client may
    start anywhere."""
    b = MockBroker(clock=ManualClock())
    b.start()
    try:
        with RawKafkaClient.connect(b.bootstrap_servers) as c:
            b.create_topic("seq0", 3)
            pid, epoch = init_pid(c, "seq0")
            assert produce(c, "seq0", "seq0", pid, epoch, 0, 12, n=3).error_code == E.none
            assert end_txn(c, "seq0", pid, epoch, True) == (E.none, pid, epoch + 1)  # the marker: epoch + 1
            assert produce(c, "seq0", "seq0", pid, epoch + 1, 3, 12).error_code == E.out_of_order_sequence_number
            r = produce(c, "seq0", "seq0", pid, epoch + 1, 0, 12)
            assert (r.error_code, r.base_offset) == (E.none, 4)
            # partition 1 has never seen the producer
            r = produce(c, "seq0", "seq0", pid, epoch + 1, 5, 12, partition=1)
            # (Kafka logs "Expected sequence 0 for transactions v2 ..." and sends no message)
            assert (r.error_code, r.error_message) == (E.out_of_order_sequence_number, None)
            assert partition_state(b, "seq0", 1) == (0, 0, [])
            # a TV1 client's Produce v9 (after AddPartitionsToTxn) to a partition that does not know it
            assert end_txn(c, "seq0", pid, epoch + 1, False) == (E.none, pid, epoch + 2)
            assert add_partitions(c, "seq0", pid, epoch + 2, "seq0", 2) == E.none
            assert produce(c, "seq0", "seq0", pid, epoch + 2, 5, 9, partition=2).error_code == E.none
    finally:
        b.stop()


# -- KIP-890 part 2: transaction version 2 ---------------------------------------------------------
def test_tv2_produce_adds_the_partition_and_end_txn_bumps_the_epoch(b, c):
    b.create_topic("tv2-flow", 2)
    pid, epoch = init_pid(c, "tv2-flow")
    # no AddPartitionsToTxn: Produce v12 adds each partition
    for p in (0, 1):
        r = produce(c, "tv2-flow", "tv2-flow", pid, epoch, 0, 12, n=2, partition=p)
        assert (r.error_code, r.base_offset) == (E.none, 0)
    assert txn_of(b, "tv2-flow") == ("Ongoing", [("tv2-flow", 0), ("tv2-flow", 1)], epoch)
    assert produce(c, "tv2-flow", "tv2-flow", pid, epoch, 2, 12).error_code == E.none  # already in
    # EndTxn v5 commits and answers the bumped epoch; the markers carry it
    assert end_txn(c, "tv2-flow", pid, epoch, True) == (E.none, pid, epoch + 1)
    assert txn_of(b, "tv2-flow") == ("CompleteCommit", [], epoch + 1)
    assert partition_state(b, "tv2-flow", 0) == (4, 4, [])
    assert partition_state(b, "tv2-flow", 1) == (3, 3, [])
    assert b.call(lambda cl: cl.metadata.partition("tv2-flow", 0).producers.producers[pid].epoch) == epoch + 1
    # a retry of that EndTxn (the epoch before the bump) answers the same
    assert end_txn(c, "tv2-flow", pid, epoch, True) == (E.none, pid, epoch + 1)
    # the old epoch is fenced at the partition; the next transaction goes on at the bumped one, sequence 0
    assert produce(c, "tv2-flow", "tv2-flow", pid, epoch, 3, 12).error_code == E.invalid_producer_epoch
    r = produce(c, "tv2-flow", "tv2-flow", pid, epoch + 1, 0, 12)
    assert (r.error_code, r.base_offset) == (E.none, 4)
    assert txn_of(b, "tv2-flow") == ("Ongoing", [("tv2-flow", 0)], epoch + 1)
    assert end_txn(c, "tv2-flow", pid, epoch + 1, False) == (E.none, pid, epoch + 2)
    assert partition_state(b, "tv2-flow", 0) == (6, 6, [pid])
    assert partition_state(b, "tv2-flow", 1) == (3, 3, [])  # not in the aborted transaction


def test_tv2_abort_of_an_empty_transaction_bumps_too(b, c):
    pid, epoch = init_pid(c, "tv2-empty")
    assert end_txn(c, "tv2-empty", pid, epoch, False) == (E.none, pid, epoch + 1)
    assert end_txn(c, "tv2-empty", pid, epoch + 1, True) == (E.invalid_txn_state, -1, -1)


def test_the_request_version_not_the_cluster_level_picks_the_rules():
    """Kafka 4.x: transactionVersionForEndTxn (v5+: TV2) and the fence's abort at the cluster's level.
    On a cluster at transaction.version 0 (clients are told so and send EndTxn <= v4), EndTxn v4
    keeps the epoch, v5 still bumps it; an InitProducerId fence aborts without the TV2 bump."""
    with MockBroker(config={"mock.transaction.version": "0"}) as b:
        b.create_topic("tv0", 1)
        with RawKafkaClient.connect(b.bootstrap_servers) as c:
            pid, epoch = init_pid(c, "tv0")
            assert add_partitions(c, "tv0", pid, epoch, "tv0") == E.none
            assert produce(c, "tv0", "tv0", pid, epoch, 0, 9).error_code == E.none
            assert end_txn(c, "tv0", pid, epoch, True, version=4) == (E.none,)  # TV0 rules: no bump
            assert txn_of(b, "tv0") == ("CompleteCommit", [], epoch)
            # the marker ended the partition's transaction: a batch of the same epoch is verified again
            assert produce(c, "tv0", "tv0", pid, epoch, 1, 9).error_code == E.invalid_txn_state
            assert add_partitions(c, "tv0", pid, epoch, "tv0") == E.none
            assert produce(c, "tv0", "tv0", pid, epoch, 1, 9).error_code == E.none
            assert end_txn(c, "tv0", pid, epoch, True) == (E.none, pid, epoch + 1)  # v5: TV2 rules
            # an ongoing transaction fenced by InitProducerId: fence + 1, the abort at level 0 adds nothing
            assert add_partitions(c, "tv0", pid, epoch + 1, "tv0") == E.none
            r = c.request(ApiKey.INIT_PRODUCER_ID, 5, {"transactional_id": "tv0", "transaction_timeout": 60000,
                                                       "producer_id": -1, "producer_epoch": -1})
            assert r.error_code == E.concurrent_transactions
            assert txn_of(b, "tv0") == ("CompleteAbort", [], epoch + 2)


# -- the transaction.version feature in ApiVersions ------------------------------------------------
def api_versions(c, version):
    body = {"client_software_name": "t", "client_software_version": "1"} if version >= 3 else {}
    r = c.request(ApiKey.API_VERSIONS, version, body)
    supported = {f.name: (f.min_version, f.max_version) for f in r.supported_features}
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in r.finalized_features}
    return supported, finalized, r.finalized_features_epoch


# where the metadata log of a fresh Kafka 4.0.2 and 3.9.2 was when it first answered (recorded; a new
# recording may move it by the idle NoOpRecords of a slower start)
EPOCH_4_0, EPOCH_3_9 = (RECORDED[r]["finalized_features_epoch"] for r in ("4.0", "3.9"))


@pytest.mark.parametrize("config, v4, v3", [
    ({}, ({"transaction.version": (0, 2)}, {"transaction.version": (2, 2)}, 16),
     ({}, {"transaction.version": (2, 2)}, 16)),
    ({"mock.kafka.version": "4.0"}, ({"transaction.version": (0, 2)}, {"transaction.version": (2, 2)}, EPOCH_4_0),
     ({}, {"transaction.version": (2, 2)}, EPOCH_4_0)),
    ({"mock.transaction.version": "1"}, ({"transaction.version": (0, 2)}, {"transaction.version": (1, 1)}, 16),
     ({}, {"transaction.version": (1, 1)}, 16)),
    ({"mock.transaction.version": "0"}, ({"transaction.version": (0, 2)}, {}, 16), ({}, {}, 16)),
    ({"mock.kafka.version": "3.9"}, ({}, {}, EPOCH_3_9), ({}, {}, EPOCH_3_9)),
])
def test_api_versions_features(config, v4, v3):
    """transaction.version supported 0-2 and finalized at the cluster's level on 4.x; a minimum of 0
    is hidden from v0-3 (KAFKA-17492); level 0 is not finalized; 3.9 has none (its features are
    metadata.version and kraft.version).  The epoch is the metadata log's end offset of a freshly
    formatted cluster (where Kafka 4.4.0 first answered, 16; 4.0.2's and 3.9.2's as recorded); the other
    features are tests/unit/controller/test_features.py's and test_kafka_releases.py's."""
    def tv_only(answer):
        supported, finalized, epoch = answer
        return ({k: v for k, v in supported.items() if k == "transaction.version"},
                {k: v for k, v in finalized.items() if k == "transaction.version"}, epoch)

    with MockBroker(config=config, clock=ManualClock()) as b, RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert tv_only(api_versions(c, 4)) == v4
        assert tv_only(api_versions(c, 3)) == v3


def test_transaction_version_config():
    assert BrokerConfig().transaction_version == 2
    assert BrokerConfig({"mock.kafka.version": "4.0"}).transaction_version == 2
    assert BrokerConfig({"mock.transaction.version": 1}).transaction_version == 1
    assert BrokerConfig({"mock.kafka.version": "3.9"}).transaction_version == 0
    assert BrokerConfig({"mock.kafka.version": "3.9", "mock.transaction.version": "0"}).transaction_version == 0
    with pytest.raises(ConfigError, match="no transaction.version level 2"):
        BrokerConfig({"mock.kafka.version": "3.9", "mock.transaction.version": "2"})
    with pytest.raises(ConfigError):
        BrokerConfig({"mock.transaction.version": "3"})
