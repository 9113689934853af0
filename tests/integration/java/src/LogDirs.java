// Kafka's Java Admin client (kafka-clients 4.4.0) describing and moving replicas between log
// directories, as kafka-log-dirs and kafka-reassign-partitions --reassignment-json-file with log
// dirs do (Admin.describeLogDirs / describeReplicaLogDirs / alterReplicaLogDirs). Driven by
// tests/integration/test_cluster_ops_clients.py;
// usage: java LogDirs <bootstrap-servers> <topic> [<move-to-dir>]
//
// Creates <topic> (1 partition, 1 replica), produces three records one batch each, then prints:
//   DIRS <broker> <number of log dirs> totals=<whether total and usable bytes are given>
//   REPLICA <broker> <topic-partition> size=<bytes> lag=<offset lag> future=<bool>
//   CURRENT <topic-partition> <whether the replica's current dir is known> future=<future dir or null>
//   ALTER <dir>: OK | <exception class>
//   MOVED <topic-partition> <current dir> (after a move to <move-to-dir>, once it is there)
//   DONE

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.serialization.StringSerializer;

public class LogDirs {
    private static final long TIMEOUT_S = 30;

    private static String alter(Admin admin, TopicPartitionReplica replica, String dir) throws InterruptedException {
        try {
            admin.alterReplicaLogDirs(Map.of(replica, dir)).all().get(TIMEOUT_S, TimeUnit.SECONDS);
            return "OK";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        } catch (java.util.concurrent.TimeoutException e) {
            return "TIMEOUT";
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(TIMEOUT_S, TimeUnit.SECONDS);
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
            pp.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < 3; i++) {
                    // the producer's own timestamp: one of 1970 is past retention.ms, and both brokers delete it at
                    // their first retention check, 30 s after they start (log.initial.task.delay.ms)
                    producer.send(new ProducerRecord<>(topic, 0, "key-" + i, "value-" + i)).get(TIMEOUT_S, TimeUnit.SECONDS);
                }
            }
            List<Integer> brokers = admin.describeCluster().nodes().get(TIMEOUT_S, TimeUnit.SECONDS)
                .stream().map(Node::id).sorted().toList();
            int leader = admin.describeTopics(List.of(topic)).allTopicNames().get(TIMEOUT_S, TimeUnit.SECONDS)
                .get(topic).partitions().get(0).leader().id();
            Map<Integer, Map<String, LogDirDescription>> all =
                admin.describeLogDirs(brokers).allDescriptions().get(TIMEOUT_S, TimeUnit.SECONDS);
            for (int broker : brokers) {
                Map<String, LogDirDescription> dirs = all.get(broker);
                boolean totals = dirs.values().stream().allMatch(d -> d.totalBytes().isPresent() && d.usableBytes().isPresent()
                    && d.usableBytes().getAsLong() <= d.totalBytes().getAsLong());
                System.out.println("DIRS " + broker + " " + dirs.size() + " totals=" + totals);
                new TreeMap<String, LogDirDescription>(dirs).forEach((path, d) -> d.replicaInfos().forEach((tp, info) -> {
                    if (tp.topic().equals(topic)) {
                        System.out.println("REPLICA " + broker + " " + tp + " size=" + info.size() + " lag=" + info.offsetLag()
                            + " future=" + info.isFuture());
                    }
                }));
            }
            TopicPartitionReplica replica = new TopicPartitionReplica(topic, 0, leader);
            ReplicaLogDirInfo info = admin.describeReplicaLogDirs(List.of(replica)).all().get(TIMEOUT_S, TimeUnit.SECONDS).get(replica);
            String current = info.getCurrentReplicaLogDir();
            System.out.println("CURRENT " + topic + "-0 " + (current != null) + " future=" + info.getFutureReplicaLogDir());
            System.out.println("ALTER nowhere: " + alter(admin, replica, "/no/such/dir"));
            System.out.println("ALTER current: " + alter(admin, replica, current));
            if (args.length > 2) {
                System.out.println("ALTER other: " + alter(admin, replica, args[2]));
                for (int i = 0; i < 50; i++) {
                    info = admin.describeReplicaLogDirs(List.of(replica)).all().get(TIMEOUT_S, TimeUnit.SECONDS).get(replica);
                    if (args[2].equals(info.getCurrentReplicaLogDir()) && info.getFutureReplicaLogDir() == null) break;
                    Thread.sleep(100);
                }
                System.out.println("MOVED " + topic + "-0 " + info.getCurrentReplicaLogDir());
            }
        }
        System.out.println("DONE");
    }
}
