import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Kafka's share consumer (kafka-clients KafkaShareConsumer, KIP-932) in ten share groups at once, one topic
 * (one partition) each, every scenario on its own thread(s) so the members' first assignments (a share member
 * gets its partitions on its second heartbeat, share.heartbeat.interval.ms apart) overlap.
 *
 * Usage: ShareScenarios bootstrap [clockBootstrap]
 * Creates the topics, sets the groups' configs with Admin incrementalAlterConfigs (share.auto.offset.reset
 * earliest and share.heartbeat.interval.ms 1000, which needs the broker's group.share.min.heartbeat.interval.ms
 * at 1000; share.delivery.count.limit 2 on sbs-limit), produces, then prints one line per scenario, each
 * deliveries as "value:deliveryCount" sorted by count then offset:
 * <ul>
 * <li>"REJECT ..." (explicit): r0-r4 rejected and r5-r9 released on their first delivery, accepted on the next:
 *     a rejected record is Archived, never delivered again;</li>
 * <li>"LIMIT ..." (explicit): l0-l4 released on every delivery: at the group's delivery-count limit (2) they are
 *     Archived, so the record produced after them ("l-end") is the next and only one delivered;</li>
 * <li>"RENEW ..." (explicit, KIP-1222): n0-n4 acknowledged RENEW, then the poll gives them back under a new
 *     lock with the same delivery count, then accepted; "n-end" produced after is the next delivered;</li>
 * <li>"NORENEW ... | failures: ..." (explicit, share.renew.acknowledge.enable false on sbs-norenew): x0-x2
 *     acknowledged RENEW, commitSync's failure for the partition (InvalidRecordStateException);</li>
 * <li>"EXPIRE lock=... | late: ... | again: ... lock=..." (explicit, share.record.lock.duration.ms 1000 on sbs-expire, which
 *     needs the broker's group.share.min.record.lock.duration.ms at 1000; the lock the consumer was told):
 *     e0-e2 held 2 s, their locks expire,
 *     the late ACCEPT fails (InvalidRecordStateException); the group's lock altered to 30 s, the next poll gives
 *     them again (delivery 2) under that lock;</li>
 * <li>"CLOSE ... | ..." (explicit): a member rejects c0, leaves c1 and c2 unacknowledged and closes; the next
 *     member of the group gets c1 and c2 again (delivery 2), never c0;</li>
 * <li>"BATCH polls=[...]" (implicit, max.poll.records 10, share.acquire.mode batch_optimized): the records each
 *     poll gave from one batch of 50 (whole batches are acquired, past max.poll.records);</li>
 * <li>"TXN-RC ..." and "TXN-RU ..." (implicit): a transaction of a0-a2 aborted, then one of k0-k1 committed,
 *     read by a group with share.isolation.level read_committed (k0, k1) and one with read_uncommitted (all);</li>
 * <li>"MANY union=<n> deliveries=<n> maxDelivery=<c>" (implicit, share.acquire.mode record_limit,
 *     max.poll.records 10): three members of one group on one partition until every one of 300 records was
 *     delivered; deliveries == union means no record went to two members (the split itself differs run to run,
 *     it goes to stderr).</li>
 * </ul>
 * With a clockBootstrap (a second mockbroker, on its manual clock), "CLOCK lock=... ... | before: ... | again: ..."
 * (explicit): member A holds k0-k2 unacknowledged, member B is given nothing, the test advances that broker's clock
 * by A's lock duration when asked ("ADVANCE ms" on stdout, any line back on stdin), then B gets k0-k2 with
 * delivery count 2 (no sleeping through the lock).
 * Then, every member gone, "OFFSETS <group>=<start offset>/lag=<lag> ..." from Admin listShareGroupOffsets (the
 * share coordinator's persisted start offsets, DescribeShareGroupOffsets v1; sbs-many's lag only), then "DONE". Exits 1 with "TIMEOUT ..." after 60 s, or with the failure.
 */
public class ShareScenarios {
    static final Duration POLL = Duration.ofMillis(200);
    static final long DEADLINE_MS = 60_000;
    static final int MANY = 300;
    static final long EXPIRE_HOLD_MS = 2_000;
    static final List<String> GROUPS =
        List.of("sbs-reject", "sbs-limit", "sbs-renew", "sbs-norenew", "sbs-expire", "sbs-close", "sbs-batch", "sbs-txn-rc", "sbs-txn-ru",
                "sbs-many");

    static Properties consumerProps(String bootstrap, String group, String mode) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put("share.acknowledgement.mode", mode);
        return p;
    }

    static String delivery(ConsumerRecord<String, String> r) {
        return r.value() + ":" + r.deliveryCount().orElse((short) 0);
    }

    /** Deliveries sorted by delivery count, then offset (the order a poll may split differently). */
    static String sorted(List<ConsumerRecord<String, String>> got) {
        List<ConsumerRecord<String, String>> s = new ArrayList<>(got);
        s.sort((a, b) -> a.deliveryCount().orElse((short) 0) != b.deliveryCount().orElse((short) 0)
            ? Short.compare(a.deliveryCount().orElse((short) 0), b.deliveryCount().orElse((short) 0))
            : Long.compare(a.offset(), b.offset()));
        List<String> out = new ArrayList<>();
        for (ConsumerRecord<String, String> r : s) {
            out.add(delivery(r));
        }
        return String.join(" ", out);
    }

    static void check(long deadline, String what) {
        if (System.currentTimeMillis() > deadline) {
            throw new IllegalStateException("TIMEOUT " + what);
        }
    }

    static String failures(Map<?, Optional<org.apache.kafka.common.KafkaException>> commit) {
        StringBuilder s = new StringBuilder();
        for (Map.Entry<?, Optional<org.apache.kafka.common.KafkaException>> e : commit.entrySet()) {
            if (e.getValue().isPresent()) {
                s.append(" ").append(e.getValue().get().getClass().getSimpleName());
            }
        }
        return s.toString();
    }

    /** Polls until a record with value {@code end} arrives (accepting it), adding every delivery to {@code got}. */
    static void pollUntil(KafkaShareConsumer<String, String> c, String end, List<ConsumerRecord<String, String>> got,
                          long deadline) {
        while (true) {
            check(deadline, "waiting for " + end + " after " + sorted(got));
            ConsumerRecords<String, String> records = c.poll(POLL);
            boolean done = false;
            for (ConsumerRecord<String, String> r : records) {
                got.add(r);
                c.acknowledge(r, AcknowledgeType.ACCEPT);
                done |= r.value().equals(end);
            }
            if (!records.isEmpty()) {
                c.commitSync();
            }
            if (done) {
                return;
            }
        }
    }

    static String reject(String bootstrap, long deadline) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        Set<String> accepted = new HashSet<>();
        try (KafkaShareConsumer<String, String> c =
                 new KafkaShareConsumer<>(consumerProps(bootstrap, "sbs-reject", "explicit"))) {
            c.subscribe(List.of("sbs-reject"));
            while (accepted.size() < 5) {
                check(deadline, "reject " + sorted(got));
                ConsumerRecords<String, String> records = c.poll(POLL);
                for (ConsumerRecord<String, String> r : records) {
                    got.add(r);
                    int i = Integer.parseInt(r.value().substring(1));
                    if (r.deliveryCount().orElse((short) 0) > 1) {
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        accepted.add(r.value());
                    } else {
                        c.acknowledge(r, i < 5 ? AcknowledgeType.REJECT : AcknowledgeType.RELEASE);
                    }
                }
                if (!records.isEmpty()) {
                    c.commitSync();
                }
            }
        }
        return "REJECT " + sorted(got);
    }

    static String limit(String bootstrap, KafkaProducer<String, String> producer, long deadline) throws Exception {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        Set<String> atLimit = new HashSet<>();
        try (KafkaShareConsumer<String, String> c =
                 new KafkaShareConsumer<>(consumerProps(bootstrap, "sbs-limit", "explicit"))) {
            c.subscribe(List.of("sbs-limit"));
            while (atLimit.size() < 5) {
                check(deadline, "limit " + sorted(got));
                ConsumerRecords<String, String> records = c.poll(POLL);
                for (ConsumerRecord<String, String> r : records) {
                    got.add(r);
                    c.acknowledge(r, AcknowledgeType.RELEASE);
                    if (r.deliveryCount().orElse((short) 0) >= 2) {
                        atLimit.add(r.value());
                    }
                }
                if (!records.isEmpty()) {
                    c.commitSync();
                }
            }
            producer.send(new ProducerRecord<>("sbs-limit", "l-end"));
            producer.flush();
            pollUntil(c, "l-end", got, deadline);
        }
        return "LIMIT " + sorted(got);
    }

    static String renew(String bootstrap, KafkaProducer<String, String> producer, long deadline) throws Exception {
        List<ConsumerRecord<String, String>> first = new ArrayList<>();
        List<ConsumerRecord<String, String>> renewed = new ArrayList<>();
        String commitFailures;
        try (KafkaShareConsumer<String, String> c =
                 new KafkaShareConsumer<>(consumerProps(bootstrap, "sbs-renew", "explicit"))) {
            c.subscribe(List.of("sbs-renew"));
            while (first.size() < 5) {
                check(deadline, "renew " + sorted(first));
                for (ConsumerRecord<String, String> r : c.poll(POLL)) {
                    first.add(r);
                    c.acknowledge(r, AcknowledgeType.RENEW);
                }
            }
            commitFailures = failures(c.commitSync());
            while (renewed.size() < 5) {
                check(deadline, "renewed " + sorted(renewed));
                ConsumerRecords<String, String> records = c.poll(POLL);
                for (ConsumerRecord<String, String> r : records) {
                    renewed.add(r);
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                if (!records.isEmpty()) {
                    commitFailures += failures(c.commitSync());
                }
            }
            producer.send(new ProducerRecord<>("sbs-renew", "n-end"));
            producer.flush();
            pollUntil(c, "n-end", renewed, deadline);
        }
        return "RENEW " + sorted(first) + " | " + sorted(renewed) + " | failures:" + commitFailures;
    }

    static String noRenew(String bootstrap, long deadline) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        String commitFailures;
        try (KafkaShareConsumer<String, String> c =
                 new KafkaShareConsumer<>(consumerProps(bootstrap, "sbs-norenew", "explicit"))) {
            c.subscribe(List.of("sbs-norenew"));
            while (got.size() < 3) {
                check(deadline, "norenew " + sorted(got));
                for (ConsumerRecord<String, String> r : c.poll(POLL)) {
                    got.add(r);
                    c.acknowledge(r, AcknowledgeType.RENEW);
                }
            }
            commitFailures = failures(c.commitSync());
        }
        return "NORENEW " + sorted(got) + " | failures:" + commitFailures;
    }

    static String expire(String bootstrap, long deadline) throws Exception {
        List<ConsumerRecord<String, String>> first = new ArrayList<>();
        List<ConsumerRecord<String, String>> again = new ArrayList<>();
        String commitFailures;
        String lock;
        String lock2;
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap);
             KafkaShareConsumer<String, String> c =
                 new KafkaShareConsumer<>(consumerProps(bootstrap, "sbs-expire", "explicit"))) {
            c.subscribe(List.of("sbs-expire"));
            ConsumerRecords<String, String> records = ConsumerRecords.empty();
            while (first.size() < 3) {
                check(deadline, "expire " + sorted(first));
                records = c.poll(POLL);
                records.forEach(first::add);
            }
            long acquired = System.currentTimeMillis();
            lock = c.acquisitionLockTimeoutMs().map(String::valueOf).orElse("-");
            // the redelivery under a 30 s lock (a group config is read at each acquisition, so the records
            // held now keep their 1 s lock): set while they are held, by an Admin already connected, so
            // the consumer's background ShareFetch cannot take them again under the old 1 s lock once
            // they expire, however slow this machine is between that fetch and the commit
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, "sbs-expire"),
                List.of(new AlterConfigOp(new ConfigEntry("share.record.lock.duration.ms", "30000"),
                    AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);
            // held past the group's 1 s lock (with 1 s to spare for the broker's timer): back to Available
            Thread.sleep(Math.max(0, acquired + EXPIRE_HOLD_MS - System.currentTimeMillis()));
            for (ConsumerRecord<String, String> r : records) {
                c.acknowledge(r, AcknowledgeType.ACCEPT);
            }
            commitFailures = failures(c.commitSync()) + " | again:";
            while (again.size() < 3) {
                check(deadline, "expired " + sorted(again));
                ConsumerRecords<String, String> next = c.poll(POLL);
                for (ConsumerRecord<String, String> r : next) {
                    again.add(r);
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                if (!next.isEmpty()) {
                    commitFailures += failures(c.commitSync());
                }
            }
            lock2 = c.acquisitionLockTimeoutMs().map(String::valueOf).orElse("-");
        }
        return "EXPIRE lock=" + lock + " " + sorted(first) + " | late:" + commitFailures + " " + sorted(again)
            + " lock=" + lock2;
    }

    static String close(String bootstrap, long deadline) {
        List<ConsumerRecord<String, String>> first = new ArrayList<>();
        List<ConsumerRecord<String, String>> second = new ArrayList<>();
        try (KafkaShareConsumer<String, String> c =
                 new KafkaShareConsumer<>(consumerProps(bootstrap, "sbs-close", "explicit"))) {
            c.subscribe(List.of("sbs-close"));
            while (first.size() < 3) {
                check(deadline, "close " + sorted(first));
                for (ConsumerRecord<String, String> r : c.poll(POLL)) {
                    first.add(r);
                    if (r.value().equals("c0")) {
                        c.acknowledge(r, AcknowledgeType.REJECT);  // c1 and c2 left unacknowledged
                    }
                }
            }
        }  // close: the REJECT sent, c1 and c2 released as the share session ends
        try (KafkaShareConsumer<String, String> c =
                 new KafkaShareConsumer<>(consumerProps(bootstrap, "sbs-close", "explicit"))) {
            c.subscribe(List.of("sbs-close"));
            while (second.size() < 2) {
                check(deadline, "closed " + sorted(second));
                ConsumerRecords<String, String> records = c.poll(POLL);
                for (ConsumerRecord<String, String> r : records) {
                    second.add(r);
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                if (!records.isEmpty()) {
                    c.commitSync();
                }
            }
        }
        return "CLOSE " + sorted(first) + " | " + sorted(second);
    }

    static String txn(String bootstrap, String group, int n, long deadline) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(consumerProps(bootstrap, group, "implicit"))) {
            c.subscribe(List.of("sbs-txn"));
            while (got.size() < n) {
                check(deadline, group + " " + sorted(got));
                c.poll(POLL).forEach(got::add);
            }
            c.commitSync();
        }
        return (group.equals("sbs-txn-rc") ? "TXN-RC " : "TXN-RU ") + sorted(got);
    }

    static String batch(String bootstrap, long deadline) {
        Properties p = consumerProps(bootstrap, "sbs-batch", "implicit");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10");  // share.acquire.mode batch_optimized (the default)
        List<Integer> polls = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of("sbs-batch"));
            while (seen.size() < 50) {
                check(deadline, "batch " + polls);
                ConsumerRecords<String, String> records = c.poll(POLL);
                if (!records.isEmpty()) {
                    polls.add(records.count());
                }
                records.forEach(r -> seen.add(r.value()));
            }
            c.commitSync();
        }
        return "BATCH polls=" + polls;
    }

    static String many(String bootstrap, long deadline) throws Exception {
        Set<String> union = ConcurrentHashMap.newKeySet();
        List<List<String>> perMember = new ArrayList<>();
        List<Thread> members = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        short[] maxDelivery = new short[1];
        for (int m = 0; m < 3; m++) {
            List<String> mine = new ArrayList<>();
            perMember.add(mine);
            Properties p = consumerProps(bootstrap, "sbs-many", "implicit");
            p.put("share.acquire.mode", "record_limit");
            p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10");
            members.add(new Thread(() -> {
                try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
                    c.subscribe(List.of("sbs-many"));
                    while (union.size() < MANY && System.currentTimeMillis() < deadline) {
                        for (ConsumerRecord<String, String> r : c.poll(POLL)) {
                            synchronized (mine) {
                                mine.add(r.value());
                            }
                            union.add(r.value());
                            synchronized (maxDelivery) {
                                maxDelivery[0] = (short) Math.max(maxDelivery[0], r.deliveryCount().orElse((short) 0));
                            }
                        }
                    }
                    c.commitSync();
                } catch (Throwable t) {
                    synchronized (failures) {
                        failures.add(t);
                    }
                }
            }));
        }
        members.forEach(Thread::start);
        for (Thread t : members) {
            t.join(Math.max(1, deadline - System.currentTimeMillis()));
        }
        if (!failures.isEmpty()) {
            throw new IllegalStateException("a member failed", failures.get(0));
        }
        int deliveries = 0;
        List<Integer> split = new ArrayList<>();
        for (List<String> mine : perMember) {
            synchronized (mine) {
                deliveries += mine.size();
                split.add(mine.size());
            }
        }
        System.err.println("MANY split " + split);
        return "MANY union=" + union.size() + " deliveries=" + deliveries + " maxDelivery=" + maxDelivery[0];
    }

    /**
     * Lock expiry on mockbroker's manual clock ({@code clockBootstrap}, a broker started with mock.clock=manual):
     * member A acquires k0-k2 and holds them unacknowledged; member B of the same group polls for a while and is
     * given nothing; then "ADVANCE <A's lock duration>" asks the test to move the broker's clock past the lock
     * (a line on stdout, answered by a line on stdin once done), and B gets k0-k2 again with delivery count 2.
     */
    static String clock(String clockBootstrap, BufferedReader advanced, long deadline) throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, clockBootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic("sbs-clock", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, "sbs-clock"), List.of(
                new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("share.heartbeat.interval.ms", "1000"), AlterConfigOp.OpType.SET))))
                .all().get(30, TimeUnit.SECONDS);
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, clockBootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 3; i++) {
                producer.send(new ProducerRecord<>("sbs-clock", "k" + i));
            }
        }
        List<ConsumerRecord<String, String>> held = new ArrayList<>();
        List<ConsumerRecord<String, String>> before = new ArrayList<>();
        List<ConsumerRecord<String, String>> again = new ArrayList<>();
        String commitFailures = "";
        try (KafkaShareConsumer<String, String> a =
                 new KafkaShareConsumer<>(consumerProps(clockBootstrap, "sbs-clock", "explicit"));
             KafkaShareConsumer<String, String> b =
                 new KafkaShareConsumer<>(consumerProps(clockBootstrap, "sbs-clock", "explicit"))) {
            a.subscribe(List.of("sbs-clock"));
            while (held.size() < 3) {
                check(deadline, "clock " + sorted(held));
                a.poll(POLL).forEach(held::add);  // held: never acknowledged, A polls no more
            }
            long lock = a.acquisitionLockTimeoutMs().orElseThrow();
            b.subscribe(List.of("sbs-clock"));
            for (int i = 0; i < 10; i++) {  // B joins and fetches while A's locks hold: nothing for B
                b.poll(POLL).forEach(before::add);
            }
            synchronized (System.out) {
                System.out.println("ADVANCE " + lock);
                System.out.flush();
            }
            if (advanced.readLine() == null) {
                throw new IllegalStateException("stdin closed before the clock advanced");
            }
            while (again.size() < 3) {
                check(deadline, "clock again " + sorted(again));
                ConsumerRecords<String, String> records = b.poll(POLL);
                for (ConsumerRecord<String, String> r : records) {
                    again.add(r);
                    b.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                if (!records.isEmpty()) {
                    commitFailures += failures(b.commitSync());
                }
            }
            return "CLOCK lock=" + lock + " " + sorted(held) + " | before:" + (before.isEmpty() ? "" : " " + sorted(before))
                + " | again: " + sorted(again) + " | failures:" + commitFailures;
        }
    }

    public static void main(String[] args) {
        try {
            run(args[0], args.length > 1 ? args[1] : null);
        } catch (Throwable t) {  // a scenario's TIMEOUT or failure: the consumers' threads must not keep the JVM
            t.printStackTrace();
            System.out.println("FAILED " + t);
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(String bootstrap, String clockBootstrap) throws Exception {
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            List<NewTopic> topics = new ArrayList<>();
            for (String t : GROUPS) {
                if (!t.startsWith("sbs-txn")) {
                    topics.add(new NewTopic(t, 1, (short) 1));
                }
            }
            topics.add(new NewTopic("sbs-txn", 1, (short) 1));
            admin.createTopics(topics).all().get(30, TimeUnit.SECONDS);
            Map<ConfigResource, Collection<AlterConfigOp>> configs = new HashMap<>();
            for (String g : GROUPS) {
                List<AlterConfigOp> ops = new ArrayList<>();
                ops.add(new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET));
                ops.add(new AlterConfigOp(new ConfigEntry("share.heartbeat.interval.ms", "1000"), AlterConfigOp.OpType.SET));
                if (g.equals("sbs-limit")) {
                    ops.add(new AlterConfigOp(new ConfigEntry("share.delivery.count.limit", "2"), AlterConfigOp.OpType.SET));
                }
                if (g.equals("sbs-expire")) {
                    ops.add(new AlterConfigOp(new ConfigEntry("share.record.lock.duration.ms", "1000"),
                        AlterConfigOp.OpType.SET));
                }
                if (g.equals("sbs-txn-rc")) {
                    ops.add(new AlterConfigOp(new ConfigEntry("share.isolation.level", "read_committed"),
                        AlterConfigOp.OpType.SET));
                }
                if (g.equals("sbs-norenew")) {
                    ops.add(new AlterConfigOp(new ConfigEntry("share.renew.acknowledge.enable", "false"),
                        AlterConfigOp.OpType.SET));
                }
                configs.put(new ConfigResource(ConfigResource.Type.GROUP, g), ops);
            }
            admin.incrementalAlterConfigs(configs).all().get(30, TimeUnit.SECONDS);
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "1000");  // batches end at a flush
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>("sbs-reject", "r" + i));
            }
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>("sbs-limit", "l" + i));
                producer.send(new ProducerRecord<>("sbs-renew", "n" + i));
            }
            for (int i = 0; i < 3; i++) {
                producer.send(new ProducerRecord<>("sbs-norenew", "x" + i));
                producer.send(new ProducerRecord<>("sbs-expire", "e" + i));
                producer.send(new ProducerRecord<>("sbs-close", "c" + i));
            }
            producer.flush();
            for (int i = 0; i < 50; i++) {  // one batch (linger.ms 1 s, then flush)
                producer.send(new ProducerRecord<>("sbs-batch", "b" + i));
            }
            producer.flush();
            for (int i = 0; i < MANY; i++) {
                producer.send(new ProducerRecord<>("sbs-many", "m" + i));
            }
            producer.flush();
            Properties tp = new Properties();
            tp.putAll(pp);
            tp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
            tp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "sbs-txn");
            try (KafkaProducer<String, String> txn = new KafkaProducer<>(tp)) {  // a0-a2 aborted, k0-k1 committed
                txn.initTransactions();
                txn.beginTransaction();
                for (int i = 0; i < 3; i++) {
                    txn.send(new ProducerRecord<>("sbs-txn", "a" + i));
                }
                txn.flush();  // in the log before the abort (unsent records would be dropped by the producer)
                txn.abortTransaction();
                txn.beginTransaction();
                for (int i = 0; i < 2; i++) {
                    txn.send(new ProducerRecord<>("sbs-txn", "k" + i));
                }
                txn.commitTransaction();
            }
            List<Callable<String>> scenarios = List.of(
                () -> reject(bootstrap, deadline),
                () -> limit(bootstrap, producer, deadline),
                () -> renew(bootstrap, producer, deadline),
                () -> noRenew(bootstrap, deadline),
                () -> expire(bootstrap, deadline),
                () -> close(bootstrap, deadline),
                () -> batch(bootstrap, deadline),
                () -> txn(bootstrap, "sbs-txn-rc", 2, deadline),
                () -> txn(bootstrap, "sbs-txn-ru", 5, deadline),
                () -> many(bootstrap, deadline));
            if (clockBootstrap != null) {
                BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                scenarios = new ArrayList<>(scenarios);
                scenarios.add(() -> clock(clockBootstrap, stdin, deadline));
            }
            ExecutorService pool = Executors.newFixedThreadPool(scenarios.size());
            List<Future<String>> results = new ArrayList<>();
            long started = System.currentTimeMillis();
            for (Callable<String> s : scenarios) {
                results.add(pool.submit(() -> {
                    String line = s.call();
                    System.err.println((System.currentTimeMillis() - started) + " ms: " + line.split(" ")[0]);
                    return line;
                }));
            }
            List<String> lines = new ArrayList<>();
            for (Future<String> f : results) {
                lines.add(f.get(Math.max(1, deadline + 5_000 - System.currentTimeMillis()), TimeUnit.MILLISECONDS));
            }
            pool.shutdownNow();
            synchronized (System.out) {
                lines.forEach(System.out::println);
            }
        }
        try (Admin admin = Admin.create(ap)) {
            StringBuilder offsets = new StringBuilder("OFFSETS");
            for (String g : GROUPS) {
                Map<String, ListShareGroupOffsetsSpec> spec = Map.of(g, new ListShareGroupOffsetsSpec());
                SharePartitionOffsetInfo info = admin.listShareGroupOffsets(spec).partitionsToOffsetInfo(g)
                    .get(30, TimeUnit.SECONDS).get(new TopicPartition(g.startsWith("sbs-txn") ? "sbs-txn" : g, 0));
                // the start offset is written before it moves past the records just acknowledged: with three
                // members acknowledging at once, where sbs-many's trails differs run to run (its lag does not)
                String start = g.equals("sbs-many") ? "" : String.valueOf(info.startOffset());
                offsets.append(" ").append(g).append("=").append(start).append("/lag=")
                    .append(info.lag().map(String::valueOf).orElse("-"));
            }
            System.out.println(offsets);
        }
        System.out.println("DONE");
    }
}
