import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Kafka's Java transactional producer (kafka-clients 4.4.0) and read_committed consumer, one scenario a
 * subcommand.  Every observation is a line on stdout that tests/integration/test_transactions_java.py
 * parses; a value never contains a space.  Every subcommand exits 1 with "TIMEOUT <what>" once its
 * deadline (DEADLINE_MS) passes, and "FAILED <exception class> <message>" on an unexpected exception.
 *
 * Subcommands (first argument; then bootstrap servers):
 *   interleaved bootstrap topic partitions txnId
 *       Transactions c1 a1 c2 a2 c3 (c: committed, a: aborted after a flush, so their records are in
 *       the log), each with 4 records per partition, values "<txn>-<partition>-<i>".
 *       Prints "TXN <name> COMMITTED|ABORTED" per transaction, then "DONE".
 *   consume bootstrap topic partitions isolation(read_committed|read_uncommitted)
 *       Reads every partition from the beginning until position() reaches endOffsets() (the LSO for
 *       read_committed) for all of them; prints "RECORDS <p> <v>..." and "POSITION <p> <offset>" per
 *       partition, then "DONE".
 *   fence bootstrap topic txnId
 *       Producer A opens a transaction with "a-open" on partition 0 (flushed); producer B with the same
 *       id calls initTransactions (INIT_B), sends "b-committed" to partition 1 and commits (COMMIT_B).
 *       A then sends "a-late" to partition 0, commits and aborts (what an application does after a
 *       failed commit): "SEND_A <outcome>", "COMMIT_A <outcome>", "ABORT_A <outcome>",
 *       where an outcome is OK or the exception's class simple name (its cause's after a "/").
 *   timeout bootstrap topic partitions txnId transactionTimeoutMs
 *       Opens a transaction with transaction.timeout.ms, one record per partition, flushes and prints
 *       "OPEN"; waits for a line "GO" on stdin, then commits: "COMMIT <outcome>".
 *   move bootstrap topic partitions txnId
 *       Opens a transaction, sends "m1-<p>" to every partition, flushes, prints "SENT"; waits for "GO"
 *       on stdin (the test stops the transaction's coordinator meanwhile), sends "m2-<p>" to every
 *       partition and commits: "COMMIT <outcome>".
 *   ctp bootstrap inputTopic outputTopic group txnId instanceId(- for none) perTxn crashAfter transactionTimeoutMs
 *       [classic|consumer]
 *       Consume-transform-produce: a group member (classic protocol, static member instanceId,
 *       read_committed, max.poll.records=perTxn) uppercases every input record to the output topic's
 *       partition of the same number, one transaction per poll with sendOffsetsToTransaction(offsets,
 *       consumer.groupMetadata()), printing "TXN <records>" per commit.  With crashAfter >= 0, after
 *       that many commits it sends the next poll's records, flushes, prints "MIDTXN <records>" and
 *       waits to be killed.  Otherwise it stops once it owns every input partition and its position
 *       reached the end of each: "DONE <records transformed>".
 */
public class Transactions {
    static final long DEADLINE_MS = 60_000;
    static final long START = System.currentTimeMillis();

    static void deadline(String what) {
        if (System.currentTimeMillis() - START > DEADLINE_MS) {
            System.out.println("TIMEOUT " + what);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
    }

    static Properties producerProps(String bootstrap, String txnId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        return p;
    }

    static KafkaProducer<String, String> producer(String bootstrap, String txnId) {
        return new KafkaProducer<>(producerProps(bootstrap, txnId));
    }

    static Properties consumerProps(String bootstrap, String isolation) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        return c;
    }

    /** OK, or the simple class name of what the action threw (and of its cause, after a "/"). */
    static String outcome(Runnable action) {
        try {
            action.run();
            return "OK";
        } catch (Exception e) {
            return describe(e);
        }
    }

    static String describe(Throwable e) {
        Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        String out = t.getClass().getSimpleName();
        if (t.getCause() != null && t.getCause() != t) {
            out += "/" + t.getCause().getClass().getSimpleName();
        }
        return out;
    }

    static String futureOutcome(Future<?> f) {
        try {
            f.get(30, TimeUnit.SECONDS);
            return "OK";
        } catch (Exception e) {
            return describe(e);
        }
    }

    static void awaitGo() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (true) {
            deadline("waiting for GO");
            if (in.ready()) {
                String line = in.readLine();
                if (line == null || line.trim().equals("GO")) {
                    return;
                }
            } else {
                Thread.sleep(20);
            }
        }
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < n; p++) {
            tps.add(new TopicPartition(topic, p));
        }
        return tps;
    }

    // -- subcommands ---------------------------------------------------------------------------------
    static void interleaved(String bootstrap, String topic, int partitions, String txnId) {
        try (KafkaProducer<String, String> p = producer(bootstrap, txnId)) {
            p.initTransactions();
            for (String name : new String[]{"c1", "a1", "c2", "a2", "c3"}) {
                deadline("transaction " + name);
                p.beginTransaction();
                for (int i = 0; i < 4; i++) {
                    for (int q = 0; q < partitions; q++) {
                        p.send(new ProducerRecord<>(topic, q, null, name + "-" + q + "-" + i));
                    }
                }
                if (name.startsWith("c")) {
                    p.commitTransaction();
                    System.out.println("TXN " + name + " COMMITTED");
                } else {
                    p.flush();  // the records are in the log before the abort: read_uncommitted sees them
                    p.abortTransaction();
                    System.out.println("TXN " + name + " ABORTED");
                }
            }
        }
        System.out.println("DONE");
    }

    static void consume(String bootstrap, String topic, int partitions, String isolation) {
        List<TopicPartition> tps = partitions(topic, partitions);
        Map<Integer, List<String>> seen = new TreeMap<>();
        for (TopicPartition tp : tps) {
            seen.put(tp.partition(), new ArrayList<>());
        }
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(bootstrap, isolation))) {
            c.assign(tps);
            c.seekToBeginning(tps);
            while (true) {
                deadline("consuming " + isolation + " " + seen);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                    seen.get(r.partition()).add(r.value());
                }
                Map<TopicPartition, Long> end = c.endOffsets(tps);
                boolean done = true;
                for (TopicPartition tp : tps) {
                    done &= c.position(tp) >= end.get(tp);
                }
                if (done) {
                    break;
                }
            }
            for (TopicPartition tp : tps) {
                System.out.println("RECORDS " + tp.partition() + " " + String.join(" ", seen.get(tp.partition())));
                System.out.println("POSITION " + tp.partition() + " " + c.position(tp));
            }
        }
        System.out.println("DONE");
    }

    static void fence(String bootstrap, String topic, String txnId) {
        KafkaProducer<String, String> a = producer(bootstrap, txnId);
        KafkaProducer<String, String> b = producer(bootstrap, txnId);
        a.initTransactions();
        a.beginTransaction();
        a.send(new ProducerRecord<>(topic, 0, null, "a-open"));
        a.flush();
        System.out.println("OPEN_A");
        System.out.println("INIT_B " + outcome(b::initTransactions));
        b.beginTransaction();
        b.send(new ProducerRecord<>(topic, 1, null, "b-committed"));
        System.out.println("COMMIT_B " + outcome(b::commitTransaction));
        String send;
        try {
            send = futureOutcome(a.send(new ProducerRecord<>(topic, 0, null, "a-late")));
        } catch (Exception e) {  // send() itself throws once the producer is in a fatal state
            send = describe(e);
        }
        System.out.println("SEND_A " + send);
        System.out.println("COMMIT_A " + outcome(a::commitTransaction));
        System.out.println("ABORT_A " + outcome(a::abortTransaction));
        a.close(Duration.ofSeconds(5));
        b.close(Duration.ofSeconds(5));
        System.out.println("DONE");
    }

    static void timeout(String bootstrap, String topic, int partitions, String txnId, String timeoutMs)
            throws Exception {
        Properties props = producerProps(bootstrap, txnId);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, timeoutMs);
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
            p.initTransactions();
            p.beginTransaction();
            for (int q = 0; q < partitions; q++) {
                p.send(new ProducerRecord<>(topic, q, null, "t-" + q));
            }
            p.flush();
            System.out.println("OPEN");
            System.out.flush();
            awaitGo();
            System.out.println("COMMIT " + outcome(p::commitTransaction));
            p.close(Duration.ofSeconds(5));
        }
        System.out.println("DONE");
    }

    static void move(String bootstrap, String topic, int partitions, String txnId) throws Exception {
        try (KafkaProducer<String, String> p = producer(bootstrap, txnId)) {
            p.initTransactions();
            p.beginTransaction();
            for (int q = 0; q < partitions; q++) {
                p.send(new ProducerRecord<>(topic, q, null, "m1-" + q));
            }
            p.flush();
            System.out.println("SENT");
            System.out.flush();
            awaitGo();
            for (int q = 0; q < partitions; q++) {
                p.send(new ProducerRecord<>(topic, q, null, "m2-" + q));
            }
            System.out.println("COMMIT " + outcome(p::commitTransaction));
        }
        System.out.println("DONE");
    }

    static void ctp(String bootstrap, String input, String output, String group, String txnId, String instanceId,
                    int perTxn, int crashAfter, String transactionTimeoutMs, String groupProtocol) throws Exception {
        Properties cp = consumerProps(bootstrap, "read_committed");
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        if (!instanceId.equals("-")) {
            cp.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId);
        }
        cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, groupProtocol);
        if (groupProtocol.equals("classic")) {  // KIP-848: the broker owns these for the consumer protocol
            cp.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            cp.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        }
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(perTxn));
        int committed = 0, transformed = 0;
        Properties pp = producerProps(bootstrap, txnId);
        pp.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, transactionTimeoutMs);
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp);
             KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            p.initTransactions();
            c.subscribe(List.of(input));
            while (true) {
                deadline("transforming after " + committed + " transactions");
                ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(100));
                if (records.isEmpty()) {
                    int owned = c.assignment().size();
                    int total = c.partitionsFor(input).size();
                    if (owned == total && owned > 0) {
                        Map<TopicPartition, Long> end = c.endOffsets(c.assignment());
                        boolean done = true;
                        for (TopicPartition tp : c.assignment()) {
                            done &= c.position(tp) >= end.get(tp);
                        }
                        if (done) {
                            break;
                        }
                    }
                    continue;
                }
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    p.send(new ProducerRecord<>(output, r.partition(), r.key(), r.value().toUpperCase(Locale.ROOT)));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                p.sendOffsetsToTransaction(offsets, c.groupMetadata());
                if (committed == crashAfter) {
                    p.flush();
                    System.out.println("MIDTXN " + records.count());
                    System.out.flush();
                    while (true) {  // killed here by the test
                        deadline("being killed");
                        Thread.sleep(20);
                    }
                }
                p.commitTransaction();
                committed++;
                transformed += records.count();
                System.out.println("TXN " + records.count());
            }
        }
        System.out.println("DONE " + transformed);
    }

    public static void main(String[] args) throws Exception {
        try {
            switch (args[0]) {
                case "interleaved" -> interleaved(args[1], args[2], Integer.parseInt(args[3]), args[4]);
                case "consume" -> consume(args[1], args[2], Integer.parseInt(args[3]), args[4]);
                case "fence" -> fence(args[1], args[2], args[3]);
                case "timeout" -> timeout(args[1], args[2], Integer.parseInt(args[3]), args[4], args[5]);
                case "move" -> move(args[1], args[2], Integer.parseInt(args[3]), args[4]);
                case "ctp" -> ctp(args[1], args[2], args[3], args[4], args[5], args[6], Integer.parseInt(args[7]),
                        Integer.parseInt(args[8]), args[9], args.length > 10 ? args[10] : "classic");
                default -> throw new IllegalArgumentException("unknown subcommand " + args[0]);
            }
        } catch (Exception e) {
            System.out.println("FAILED " + describe(e) + " " + e.getMessage());
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
