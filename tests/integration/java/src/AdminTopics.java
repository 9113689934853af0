// Kafka's Java Admin client (kafka-clients 4.4.0) driving the topic and config admin APIs, as a user of
// Admin would: createPartitions, describeTopics by name (DescribeTopicPartitions) and by id (Metadata
// v12+), incrementalAlterConfigs / describeConfigs, deleteRecords / listOffsets, alterConsumerGroupOffsets
// / deleteConsumerGroupOffsets / listConsumerGroupOffsets, listConfigResources and describeCluster.
// Each of these failed with "The node does not support ..." before mockbroker served them.  Driven by
// tests/integration/test_admin_kafka44.py against mockbroker and a real Kafka 4.4.0, which compares the
// output; usage: java AdminTopics <bootstrap-servers>
//
// Output: one line per fact (an error as its exception's class name), then DONE.

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringSerializer;

public class AdminTopics {
    private static final long TIMEOUT_S = 30;
    private static final String TOPIC = "jadm";
    private static final String GROUP = "jadm-group";

    /** The outcome of a future: "ok", or its failure's exception class name. */
    private static String outcome(KafkaFuture<?> f) throws InterruptedException {
        try {
            f.get(TIMEOUT_S, TimeUnit.SECONDS);
            return "ok";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        } catch (java.util.concurrent.TimeoutException e) {
            return "TIMEOUT";
        }
    }

    private static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    private static String describeConfig(Admin admin, String name) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, TOPIC);
        Config config = get(admin.describeConfigs(List.of(r)).all()).get(r);
        ConfigEntry e = config.get(name);
        return e.value() + " " + e.source();
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(props)) {
            System.out.println("CREATE " + outcome(admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1))).all()));
            Map<String, NewPartitions> three = Map.of(TOPIC, NewPartitions.increaseTo(3));
            System.out.println("GROW validate " + outcome(admin.createPartitions(three,
                new CreatePartitionsOptions().validateOnly(true)).all()));
            System.out.println("GROW " + outcome(admin.createPartitions(three).all()));
            System.out.println("SHRINK " + outcome(admin.createPartitions(Map.of(TOPIC, NewPartitions.increaseTo(2))).all()));
            System.out.println("GROW unknown " + outcome(admin.createPartitions(Map.of("jadm-none", NewPartitions.increaseTo(2))).all()));

            // describeTopics by name (DescribeTopicPartitions) until the new partitions show, then by id
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
            TopicDescription byName;
            do {
                byName = get(admin.describeTopics(List.of(TOPIC)).allTopicNames()).get(TOPIC);
            } while (byName.partitions().size() < 3 && System.nanoTime() < deadline);
            System.out.println("DESCRIBE name partitions=" + byName.partitions().size());
            Uuid id = byName.topicId();
            Map<Uuid, TopicDescription> byId = get(admin.describeTopics(TopicCollection.ofTopicIds(List.of(id))).allTopicIds());
            System.out.println("DESCRIBE id name=" + byId.get(id).name() + " partitions=" + byId.get(id).partitions().size());
            System.out.println("DESCRIBE unknown id " + outcome(
                admin.describeTopics(TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).allTopicIds()));

            // incrementalAlterConfigs and describeConfigs
            ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, TOPIC);
            System.out.println("ALTER " + outcome(admin.incrementalAlterConfigs(Map.of(topic, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "86400000"), AlterConfigOp.OpType.SET)))).all()));
            System.out.println("CONFIG " + describeConfig(admin, "retention.ms"));
            System.out.println("ALTER bad " + outcome(admin.incrementalAlterConfigs(Map.of(topic, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET)))).all()));
            System.out.println("ALTER delete " + outcome(admin.incrementalAlterConfigs(Map.of(topic, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", null), AlterConfigOp.OpType.DELETE)))).all()));
            System.out.println("CONFIG " + describeConfig(admin, "retention.ms"));

            // five records on the new partition 2, then deleteRecords below offset 3
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
                for (int i = 0; i < 5; i++) {
                    producer.send(new ProducerRecord<>(TOPIC, 2, "k", "v" + i)).get(TIMEOUT_S, TimeUnit.SECONDS);
                }
            }
            TopicPartition p2 = new TopicPartition(TOPIC, 2);
            System.out.println("DELETE_RECORDS low=" + get(admin.deleteRecords(
                Map.of(p2, RecordsToDelete.beforeOffset(3))).lowWatermarks().get(p2)).lowWatermark());
            System.out.println("EARLIEST " + get(admin.listOffsets(Map.of(p2, OffsetSpec.earliest())).all()).get(p2).offset());
            System.out.println("DELETE_RECORDS beyond " + outcome(admin.deleteRecords(
                Map.of(p2, RecordsToDelete.beforeOffset(99))).all()));

            // offsets of a group without members: committed, deleted, gone
            System.out.println("COMMIT " + outcome(admin.alterConsumerGroupOffsets(GROUP,
                Map.of(p2, new OffsetAndMetadata(4))).all()));
            System.out.println("OFFSET_DELETE " + outcome(admin.deleteConsumerGroupOffsets(GROUP, Set.of(p2)).all()));
            Map<TopicPartition, OffsetAndMetadata> left = get(admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata());
            System.out.println("OFFSETS left=" + left.size());
            System.out.println("OFFSET_DELETE nogroup " + outcome(admin.deleteConsumerGroupOffsets("jadm-nogroup", Set.of(p2)).all()));

            // listConfigResources and describeCluster
            Collection<ConfigResource> resources = get(admin.listConfigResources(
                Set.of(ConfigResource.Type.TOPIC), new org.apache.kafka.clients.admin.ListConfigResourcesOptions()).all());
            Set<String> topics = new TreeSet<>();
            for (ConfigResource r : resources) {
                if (r.name().startsWith("jadm")) {
                    topics.add(r.type() + ":" + r.name());
                }
            }
            System.out.println("CONFIG_RESOURCES " + topics);
            System.out.println("CLUSTER nodes=" + get(admin.describeCluster().nodes()).size());
        }
        System.out.println("DONE");
    }
}
