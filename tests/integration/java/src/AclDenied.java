// Kafka's Java clients (4.4.0) as a user the authorizer refuses: producing to a topic, consuming in
// a group (on a topic the user may read) and initTransactions with a transactional id; then the Admin's
// authorized operations (includeAuthorizedOperations) of the readable topic, the cluster and a group the
// user may read (after committing an offset in it), describeTopics of the denied topic,
// listConfigResources, and alterShareGroupOffsets of the denied topic in a share group the user may read.  Driven by tests/integration/test_acl_clients.py,
// which runs it against mockbroker and a Kafka 4.4.0 and compares the output; usage:
//   java AclDenied <bootstrap-servers> <user> <password> <denied topic> <readable topic> <group> <transactional id>
//        <readable group>
//
// One line per case: the exception class the client surfaces (NONE: none within 15 s), e.g.
//   produce: TopicAuthorizationException
//   DONE

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class AclDenied {
    private static final long WAIT_MS = 15_000;

    private static Properties props(String bootstrap, String user, String password) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "PLAIN");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
            + user + "\" password=\"" + password + "\";");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("max.block.ms", String.valueOf(WAIT_MS));
        p.put("delivery.timeout.ms", String.valueOf(WAIT_MS));
        p.put("request.timeout.ms", "10000");
        return p;
    }

    private static String name(Throwable e) {
        Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        return cause.getClass().getSimpleName();
    }

    private static String ops(Set<AclOperation> ops) {
        if (ops == null) {
            return "null";
        }
        TreeSet<String> names = new TreeSet<>();
        ops.forEach(op -> names.add(op.name()));
        return names.toString();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 8) {
            System.err.println("usage: AclDenied <bootstrap> <user> <password> <denied topic> <readable topic> "
                + "<group> <transactional id> <readable group>");
            System.exit(2);
        }
        Properties base = props(args[0], args[1], args[2]);
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(base)) {
            p.send(new ProducerRecord<>(args[3], "v".getBytes())).get(WAIT_MS, TimeUnit.MILLISECONDS);
            System.out.println("produce: NONE");
        } catch (Exception e) {
            System.out.println("produce: " + name(e));
        }
        Properties consumer = (Properties) base.clone();
        consumer.put("group.id", args[5]);
        consumer.put("auto.offset.reset", "earliest");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumer)) {
            c.subscribe(List.of(args[4]));
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(500));
            }
            System.out.println("consume in a group: NONE");
        } catch (Exception e) {
            System.out.println("consume in a group: " + name(e));
        }
        Properties txn = (Properties) base.clone();
        txn.put("transactional.id", args[6]);
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(txn)) {
            p.initTransactions();
            System.out.println("initTransactions: NONE");
        } catch (Exception e) {
            System.out.println("initTransactions: " + name(e));
        }
        try (Admin admin = Admin.create(base)) {
            DescribeTopicsOptions withOps = new DescribeTopicsOptions().includeAuthorizedOperations(true);
            try {
                System.out.println("topic operations: " + ops(admin.describeTopics(List.of(args[4]), withOps)
                    .allTopicNames().get(WAIT_MS, TimeUnit.MILLISECONDS).get(args[4]).authorizedOperations()));
            } catch (Exception e) {
                System.out.println("topic operations: " + name(e));
            }
            try {
                admin.describeTopics(List.of(args[3]), withOps).allTopicNames().get(WAIT_MS, TimeUnit.MILLISECONDS);
                System.out.println("describe the denied topic: NONE");
            } catch (Exception e) {
                System.out.println("describe the denied topic: " + name(e));
            }
            try {
                System.out.println("cluster operations: " + ops(admin.describeCluster(
                    new DescribeClusterOptions().includeAuthorizedOperations(true)).authorizedOperations()
                    .get(WAIT_MS, TimeUnit.MILLISECONDS)));
            } catch (Exception e) {
                System.out.println("cluster operations: " + name(e));
            }
            try {  // the group exists once the user committed an offset in it
                admin.alterConsumerGroupOffsets(args[7], java.util.Map.of(new TopicPartition(args[4], 0),
                    new OffsetAndMetadata(0))).all().get(WAIT_MS, TimeUnit.MILLISECONDS);
                System.out.println("group operations: " + ops(admin.describeConsumerGroups(List.of(args[7]),
                    new DescribeConsumerGroupsOptions().includeAuthorizedOperations(true)).all()
                    .get(WAIT_MS, TimeUnit.MILLISECONDS).get(args[7]).authorizedOperations()));
            } catch (Exception e) {
                System.out.println("group operations: " + name(e));
            }
            try {
                admin.listConfigResources().all().get(WAIT_MS, TimeUnit.MILLISECONDS);
                System.out.println("list config resources: NONE");
            } catch (Exception e) {
                System.out.println("list config resources: " + name(e));
            }
            try {
                admin.alterShareGroupOffsets(args[7] + "-share", java.util.Map.of(new TopicPartition(args[3], 0), 0L)).all()
                    .get(WAIT_MS, TimeUnit.MILLISECONDS);
                System.out.println("alter share group offsets: NONE");
            } catch (Exception e) {
                System.out.println("alter share group offsets: " + name(e));
            }
        }
        System.out.println("DONE");
    }
}
