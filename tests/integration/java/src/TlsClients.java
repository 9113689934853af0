// Kafka's Java producer and consumer over TLS on mockbroker, for tests/integration/test_tls_clients.py:
// several client configurations in one JVM (one JVM start for the module).
//
//   java TlsClients <topic> <records> <case.properties>...
//
// Each properties file is one case: bootstrap.servers and the client's security configs
// (security.protocol, ssl.*, sasl.*). For each, the producer sends <records> values to partition 0 of
// <topic>-<case> (acks=all, idempotent), then a consumer assigned to that partition reads them back
// (unless the file says x.consume=false: produce only).
// Prints "OK <case> <n> <ms>" when all came back, else "FAIL <case> <exception class>: <message>" (a
// refused handshake or authentication is a FAIL within 15 s); exits 0 once every case is done.

import java.io.FileReader;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TlsClients {
    private static final long CASE_DEADLINE_MS = 15_000;

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: TlsClients <topic> <records> <case.properties>...");
            System.exit(2);
        }
        int records = Integer.parseInt(args[1]);
        for (int i = 2; i < args.length; i++) {
            String name = Paths.get(args[i]).getFileName().toString().replace(".properties", "");
            Properties security = new Properties();
            try (FileReader r = new FileReader(args[i])) {
                security.load(r);
            }
            boolean consume = !"false".equals(security.remove("x.consume"));  // not a Kafka config
            String topic = args[0] + "-" + name;
            long t0 = System.currentTimeMillis();
            try {
                produce(security, topic, records);
                int n = consume ? consume(security, topic, records) : records;
                System.out.println((n == records ? "OK " : "FAIL ") + name + " " + n + " " + (System.currentTimeMillis() - t0) + " ms");
            } catch (Exception e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                System.out.println("FAIL " + name + " " + cause.getClass().getSimpleName() + ": " + cause.getMessage());
            }
            System.out.flush();
        }
        System.exit(0);
    }

    private static void produce(Properties security, String topic, int records) throws Exception {
        Properties p = new Properties();
        p.putAll(security);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(CASE_DEADLINE_MS));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(CASE_DEADLINE_MS));
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, ("v" + i).getBytes())).get();
            }
        }
    }

    private static int consume(Properties security, String topic, int records) {
        Properties c = new Properties();
        c.putAll(security);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        int n = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            long deadline = System.currentTimeMillis() + CASE_DEADLINE_MS;
            while (n < records && System.currentTimeMillis() < deadline) {
                n += consumer.poll(Duration.ofMillis(200)).count();
            }
        }
        return n;
    }
}
