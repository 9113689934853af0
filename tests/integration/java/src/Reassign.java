// Kafka's Java Admin client (kafka-clients 4.4.0) reassigning partitions, as kafka-reassign-partitions
// does (Admin.alterPartitionReassignments / listPartitionReassignments). Driven by
// tests/integration/test_cluster_ops_clients.py; usage: java Reassign <bootstrap-servers> <topic> [<replicas,...>]
//
// Creates <topic> (1 partition, 1 replica) and prints:
//   UNREGISTERED: <exception class>: <message>   (a move to broker 7)
//   CANCEL: <exception class>: <message>         (a cancel with none in progress)
//   LIST <number of partitions being reassigned>
//   MOVE [<replicas>]: OK | <exception class>     (when replicas are given)
//   CREATED on <the broker the topic was created on>
//   REPLICAS <topic>-0 [<replicas>] leader=<id>  (once the move completed)
//   DONE

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;

public class Reassign {
    private static final long TIMEOUT_S = 30;

    private static String alter(Admin admin, TopicPartition tp, Optional<NewPartitionReassignment> target)
            throws Exception {
        try {
            admin.alterPartitionReassignments(Map.of(tp, target)).all().get(TIMEOUT_S, TimeUnit.SECONDS);
            return "OK";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(TIMEOUT_S, TimeUnit.SECONDS);
            TopicPartition tp = new TopicPartition(topic, 0);
            int created = admin.describeTopics(Set.of(topic)).allTopicNames().get(TIMEOUT_S, TimeUnit.SECONDS)
                .get(topic).partitions().get(0).leader().id();
            System.out.println("UNREGISTERED: " + alter(admin, tp, Optional.of(new NewPartitionReassignment(List.of(7)))));
            System.out.println("CANCEL: " + alter(admin, tp, Optional.empty()));
            System.out.println("LIST " + admin.listPartitionReassignments().reassignments().get(TIMEOUT_S, TimeUnit.SECONDS).size());
            if (args.length > 2) {
                List<Integer> replicas = Arrays.stream(args[2].split(",")).map(Integer::valueOf).toList();
                System.out.println("MOVE " + replicas + ": " + alter(admin, tp, Optional.of(new NewPartitionReassignment(replicas))));
                TopicPartitionInfo info = null;
                for (int i = 0; i < 100; i++) {
                    boolean moving = !admin.listPartitionReassignments(Set.of(tp)).reassignments()
                        .get(TIMEOUT_S, TimeUnit.SECONDS).isEmpty();
                    TopicDescription d = admin.describeTopics(Set.of(topic)).allTopicNames().get(TIMEOUT_S, TimeUnit.SECONDS).get(topic);
                    info = d.partitions().get(0);
                    if (!moving && info.replicas().size() == replicas.size()) break;
                    Thread.sleep(50);
                }
                System.out.println("CREATED on " + created);
                System.out.println("REPLICAS " + tp + " " + info.replicas().stream().map(n -> n.id()).collect(Collectors.toList())
                    + " leader=" + info.leader().id());
            }
        }
        System.out.println("DONE");
    }
}
