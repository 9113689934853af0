"""One exactly-once consume-transform-produce member (confluent-kafka / librdkafka), run as its own
process by tests/integration/test_transactions_eos.py so that it can be killed mid-transaction.

    eos_member.py BOOTSTRAP GROUP TXN_ID INPUT OUTPUT CRASH_AFTER

Subscribes to INPUT in GROUP (read_committed), and per poll of up to 10 records: begins a
transaction, produces each value upper-cased to OUTPUT (same partition), sends the consumed positions
with the consumer's group metadata (KIP-447), commits.  Prints "COMMITTED <n>" after each commit.
CRASH_AFTER > 0: once that many records are committed, the next transaction is produced and its
offsets sent but not committed; prints "HANGING" and waits to be killed.  CRASH_AFTER = 0: stops when
its positions reach INPUT's end offsets, prints "DONE <n>".  Exits 1 after 60 s.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def main(bootstrap: str, group: str, txn_id: str, input_topic: str, output: str, crash_after: int) -> int:
    deadline = time.monotonic() + 60
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "max.poll.interval.ms": 10000})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5,
                         "transaction.timeout.ms": 60000})
    producer.init_transactions(30)
    consumer.subscribe([input_topic])
    done = 0
    while time.monotonic() < deadline:
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if m.error() is None]
        if not msgs:
            assignment = consumer.assignment()
            if crash_after == 0 and assignment:
                ends = [consumer.get_watermark_offsets(tp, timeout=5, cached=False)[1] for tp in assignment]
                positions = consumer.position(assignment)
                if all(p.offset == end or (p.offset < 0 and end == 0) for p, end in zip(positions, ends)):
                    print(f"DONE {done}", flush=True)
                    consumer.close()
                    return 0
            continue
        producer.begin_transaction()
        for m in msgs:
            producer.produce(output, m.value().upper(), key=m.key(), partition=m.partition())
        positions = consumer.position(consumer.assignment())
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        if crash_after and done >= crash_after:
            producer.flush(30)
            print("HANGING", flush=True)
            time.sleep(120)
            return 1
        try:
            producer.commit_transaction(30)
        except KafkaException as e:
            print(f"COMMIT-FAILED {e.args[0].name()}", flush=True)
            return 1
        done += len(msgs)
        print(f"COMMITTED {done}", flush=True)
    print(f"TIMEOUT {done}", flush=True)
    return 1


if __name__ == "__main__":
    b, g, t, i, o, c = sys.argv[1:7]
    sys.exit(main(b, g, t, i, o, int(c)))
