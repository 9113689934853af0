// KIP-714 client telemetry from Kafka's Java clients (kafka-clients 4.4.0; enable.metrics.push is on by
// default for the producer, set here for the Admin): an Admin sets a client-metrics subscription, a producer sends records while it pushes its
// metrics, both report the client instance id the broker assigned. Driven by
// tests/integration/test_client_telemetry_clients.py; usage: java ClientTelemetry <bootstrap>:<wait-ms>...
// (one JVM for every cluster named, each in turn; <wait-ms> bounds clientInstanceId).
//
// Output per cluster, one line per fact:
//   CLUSTER <bootstrap>
//   SUBSCRIBE OK | <exception class>: <message>
//   ADMIN <client instance id> | null
//   PRODUCER <client instance id> | null
//   WAITING     (then it keeps producing, one record per 50 ms, until a line on stdin, at most 20 s)
//   CLOSED <records sent>
//   DONE

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringSerializer;

public class ClientTelemetry {
    private static final long TIMEOUT_S = 30;

    private static void cluster(String bootstrap, long waitMs, BufferedReader stdin) throws Exception {
        System.out.println("CLUSTER " + bootstrap);
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.CLIENT_ID_CONFIG, "telemetry-admin");
        ap.put(AdminClientConfig.ENABLE_METRICS_PUSH_CONFIG, "true");  // the Admin's default is false
        try (Admin admin = Admin.create(ap)) {
            ConfigResource sub = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, "java-producers");
            List<AlterConfigOp> ops = List.of(
                new AlterConfigOp(new ConfigEntry("metrics", "org.apache.kafka.producer."), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("interval.ms", "100"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("match", "client_id=telemetry-.*"), AlterConfigOp.OpType.SET));
            try {
                admin.incrementalAlterConfigs(Map.of(sub, ops)).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                System.out.println("SUBSCRIBE OK");
            } catch (ExecutionException e) {
                System.out.println("SUBSCRIBE " + e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
            }
            Uuid adminId = admin.clientInstanceId(Duration.ofMillis(waitMs));
            System.out.println("ADMIN " + adminId);
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.CLIENT_ID_CONFIG, "telemetry-producer");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        int sent = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            producer.send(new ProducerRecord<>("telemetry", "k", "v" + sent++)).get(TIMEOUT_S, TimeUnit.SECONDS);
            System.out.println("PRODUCER " + producer.clientInstanceId(Duration.ofMillis(waitMs)));
            System.out.println("WAITING");
            System.out.flush();
            long deadline = System.currentTimeMillis() + 20_000;
            while (!stdin.ready() && System.currentTimeMillis() < deadline) {
                producer.send(new ProducerRecord<>("telemetry", "k", "v" + sent++));
                Thread.sleep(50);
            }
            if (stdin.ready()) stdin.readLine();
            producer.flush();
        }
        System.out.println("CLOSED " + sent);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        for (String arg : args) {
            int colon = arg.lastIndexOf(':');
            cluster(arg.substring(0, colon), Long.parseLong(arg.substring(colon + 1)), stdin);
        }
        System.out.println("DONE");
    }
}
