"""InitProducerId, AddPartitionsToTxn, WriteTxnMarkers and TxnOffsetCommit answer the edge cases as
Kafka 4.4.0 does: each expected answer here is what the differential tester (tests/differential/)
saw a real Kafka 4.4.0 give for the same request.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

E = ErrorCode


def init_pid(c, tid, pid=-1, epoch=-1, version=5):
    r = c.request(ApiKey.INIT_PRODUCER_ID, version, {"transactional_id": tid, "transaction_timeout": 60000,
                                                    "producer_id": pid, "producer_epoch": epoch})
    return r.error_code, r.producer_id, r.producer_epoch


def test_init_producer_id_refuses_half_a_producer_id_and_epoch_without_a_transactional_id(raw):
    assert init_pid(raw(), None, pid=-1, epoch=7) == (E.invalid_request, -1, -1)
    assert init_pid(raw(), None, pid=12, epoch=-1) == (E.invalid_request, -1, -1)


def begin(c, broker, tid, topic):
    broker.create_topic(topic, 2)
    err, pid, epoch = init_pid(c, tid)
    assert err == E.none
    return pid, epoch


def add_v3(c, tid, pid, epoch, topics):
    """topics: [(name, [partitions])] as listed."""
    r = c.request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid, "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": n, "partitions": ps} for n, ps in topics]})
    return [(t.name, [(p.partition_index, p.partition_error_code) for p in t.results_by_partition])
            for t in r.results_by_topic_v3_and_below]


class TestAddPartitionsToTxn:
    def test_the_answer_echoes_the_request_as_listed(self, raw, broker):
        """AddPartitionsToTxnRequest.errorResponseForTransaction: a partition listed twice is answered
        twice, a topic listed twice twice, a topic with no partitions with none."""
        c = raw()
        pid, epoch = begin(c, broker, "apt-echo", "apt-echo-t")
        assert add_v3(c, "apt-echo", pid, epoch, [("apt-echo-t", [0, 1, 0])]) == [
            ("apt-echo-t", [(0, E.none), (1, E.none), (0, E.none)])]
        assert add_v3(c, "apt-echo", pid, epoch, [("apt-echo-t", [0]), ("apt-echo-t", [0])]) == [
            ("apt-echo-t", [(0, E.none)]), ("apt-echo-t", [(0, E.none)])]
        assert add_v3(c, "apt-echo", pid, epoch, [("apt-echo-t", [])]) == [("apt-echo-t", [])]

    def test_unknown_partitions_are_answered_once_each(self, raw, broker):
        c = raw()
        pid, epoch = begin(c, broker, "apt-unknown", "apt-unknown-t")
        assert sorted(add_v3(c, "apt-unknown", pid, epoch, [("apt-unknown-t", [0, 0, 9])])[0][1]) == [
            (0, E.operation_not_attempted), (9, E.unknown_topic_or_partition)]

    def test_a_transactional_id_given_twice_is_served_twice(self, raw, broker):
        c = raw()
        pid, epoch = begin(c, broker, "apt-twice", "apt-twice-t")
        txn = {"transactional_id": "apt-twice", "producer_id": pid, "producer_epoch": epoch, "verify_only": False,
               "topics": [{"name": "apt-twice-t", "partitions": [0]}]}
        r = c.request(ApiKey.ADD_PARTITIONS_TO_TXN, 5, {"transactions": [txn, txn]})
        assert [(x.transactional_id, [p.partition_error_code for t in x.topic_results for p in t.results_by_partition])
                for x in r.results_by_transaction] == [("apt-twice", [E.none]), ("apt-twice", [E.none])]


def markers(c, *entries, version=2, transaction_version=0):
    """entries: (pid, epoch, coordinator epoch, [(topic, [partitions])])."""
    r = c.request(ApiKey.WRITE_TXN_MARKERS, version, {"markers": [
        {"producer_id": pid, "producer_epoch": epoch, "transaction_result": False, "coordinator_epoch": ce,
         "transaction_version": transaction_version, "topics": [{"name": n, "partition_indexes": ps} for n, ps in topics]}
        for pid, epoch, ce, topics in entries]})
    return sorted((m.producer_id, t.name, p.partition_index, p.error_code)
                  for m in r.markers for t in m.topics for p in t.partitions), len(r.markers)


class TestWriteTxnMarkers:
    def test_no_producer_id_or_epoch_cannot_be_written(self, raw, broker):
        broker.create_topic("wtm-minus", 1)
        c = raw()
        assert markers(c, (-1, 0, 0, [("wtm-minus", [0])]))[0] == [(-1, "wtm-minus", 0, E.unknown_server_error)]
        assert markers(c, (5, -1, 0, [("wtm-minus", [0])]))[0] == [(5, "wtm-minus", 0, E.unknown_server_error)]

    def test_an_unknown_transaction_version_writes_no_marker(self, raw, broker):
        """Kafka 4.4.0 fails a marker at a negative transaction version (3 and above are written)."""
        broker.create_topic("wtm-tv", 2)
        c = raw()
        for tv in (-1, -128):
            assert markers(c, (90, 0, 0, [("wtm-tv", [0, 1])]), transaction_version=tv)[0] == [
                (90, "wtm-tv", 0, E.unknown_server_error), (90, "wtm-tv", 1, E.unknown_server_error)]
        assert broker.call(lambda cl: cl.metadata.partition("wtm-tv", 0).log.log_end_offset) == 0
        for tv in (2, 3, 127):
            assert markers(c, (90, 0, 0, [("wtm-tv", [0])]), transaction_version=tv)[0] == [(90, "wtm-tv", 0, E.none)]

    def test_a_coordinator_epoch_below_a_new_producers_is_fenced(self, raw, broker):
        """ProducerStateEntry.empty has coordinator epoch -1."""
        broker.create_topic("wtm-fenced", 1)
        assert markers(raw(), (77, 0, -2, [("wtm-fenced", [0])]))[0] == [
            (77, "wtm-fenced", 0, E.transaction_coordinator_fenced)]

    def test_answers_are_one_entry_per_producer_and_none_for_no_partitions(self, raw, broker):
        broker.create_topic("wtm-merge", 2)
        c = raw()
        answered, entries = markers(c, (80, 0, 0, [("wtm-merge", [0])]), (80, 0, 0, [("wtm-merge", [1])]))
        assert (answered, entries) == ([(80, "wtm-merge", 0, E.none), (80, "wtm-merge", 1, E.none)], 1)
        assert markers(c, (81, 0, 0, [])) == ([], 0)
        assert markers(c, (82, 0, 0, [("wtm-merge", [])])) == ([], 0)


def test_txn_offset_commit_leaves_out_a_topic_asked_with_no_partitions(raw, broker):
    broker.create_topic("toc-empty", 1)
    c = raw()
    err, pid, epoch = init_pid(c, "toc-empty-tx")
    assert c.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, {"transactional_id": "toc-empty-tx", "producer_id": pid,
                                                    "producer_epoch": epoch, "group_id": "toc-g"}).error_code == 0
    r = c.request(ApiKey.TXN_OFFSET_COMMIT, 3, {
        "transactional_id": "toc-empty-tx", "group_id": "toc-g", "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": "toc-empty", "partitions": []}, {"name": "toc-unknown", "partitions": []}]})
    assert [(t.name, t.partitions) for t in r.topics] == [("toc-unknown", ())]


def test_describe_transactions_of_an_unknown_id_has_the_schemas_zeros(raw):
    (s,) = raw().request(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["dtx-unknown"]}).transaction_states
    assert (s.error_code, s.producer_id, s.producer_epoch, s.transaction_timeout.total_seconds()) == (
        E.transactional_id_not_found, 0, 0, 0)
    assert s.transaction_start_time.timestamp() == 0
