// Kafka's Java Admin client (kafka-clients 4.4.0) electing leaders, as kafka-leader-election does
// (Admin.electLeaders). Driven by tests/integration/test_cluster_ops_clients.py;
// usage: java ElectLeaders <bootstrap-servers> <topic>
//
// Output, one line per election asked:
//   <ELECTION TYPE> <partitions or all>: <topic-partition>=OK|<exception class> ...  (sorted)
//   LEADER <topic>-0 <leader id>
//   DONE

import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;

public class ElectLeaders {
    private static final long TIMEOUT_S = 30;

    private static void elect(Admin admin, ElectionType type, Set<TopicPartition> partitions) throws Exception {
        StringBuilder line = new StringBuilder(type + " " + (partitions == null ? "all" : "asked") + ":");
        try {
            Map<TopicPartition, Optional<Throwable>> result =
                admin.electLeaders(type, partitions).partitions().get(TIMEOUT_S, TimeUnit.SECONDS);
            Map<String, String> sorted = new TreeMap<>();
            result.forEach((tp, error) -> sorted.put(tp.toString(), error.map(e -> e.getClass().getSimpleName()).orElse("OK")));
            sorted.forEach((tp, outcome) -> line.append(" ").append(tp).append("=").append(outcome));
        } catch (ExecutionException e) {
            line.append(" ").append(e.getCause().getClass().getSimpleName());
        }
        System.out.println(line);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            TopicPartition p0 = new TopicPartition(topic, 0), p9 = new TopicPartition(topic, 9);
            elect(admin, ElectionType.PREFERRED, Set.of(p0, p9));
            elect(admin, ElectionType.PREFERRED, Set.of(p0));
            elect(admin, ElectionType.UNCLEAN, Set.of(p0));
            elect(admin, ElectionType.PREFERRED, null);
            int leader = admin.describeTopics(Set.of(topic)).allTopicNames().get(TIMEOUT_S, TimeUnit.SECONDS)
                .get(topic).partitions().get(0).leader().id();
            System.out.println("LEADER " + topic + "-0 " + leader);
        }
        System.out.println("DONE");
    }
}
