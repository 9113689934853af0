// Kafka's Java producer or consumer under a client quota on mockbroker, for
// tests/integration/test_throttle_clients.py (the verdict on whether it waits out its throttles).
//
//   java Throttled producer <bootstrap-servers> <topic> <client-id> <records> <value-bytes>
//   java Throttled consumer <bootstrap-servers> <topic> <client-id> <records>
//
// producer: sends <records> values of <value-bytes> to partition 0 with acks=1 and one request in
//   flight (max.in.flight.requests.per.connection=1, so nothing is pipelined), then flushes.
// consumer: assigns partition 0 (no group), reads from the start until <records> records came, in
//   small fetches (max.partition.fetch.bytes=4096).
// Both print "DONE <n>" and exit 0; any error exits 1 (after 60 s at the most).
//
// NetworkClient honours KIP-219 itself: maybeThrottle() throttles the node connection when it handles
// a response with throttle_time_ms (shouldClientThrottle), and canSendRequest() is false until then.

import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class Throttled {
    private static final long DEADLINE_MS = 60_000;

    public static void main(String[] args) throws Exception {
        if (args.length < 5 || !(args[0].equals("producer") || args[0].equals("consumer"))
                || (args[0].equals("producer") && args.length != 6)) {
            System.err.println("usage: Throttled producer|consumer <bootstrap-servers> <topic> <client-id> <records> [<value-bytes>]");
            System.exit(2);
        }
        String bootstrap = args[1], topic = args[2], clientId = args[3];
        int records = Integer.parseInt(args[4]);
        int n = args[0].equals("producer") ? produce(bootstrap, topic, clientId, records, Integer.parseInt(args[5]))
                                           : consume(bootstrap, topic, clientId, records);
        System.out.println("DONE " + n);
        System.out.flush();
        System.exit(n == records ? 0 : 1);
    }

    private static int produce(String bootstrap, String topic, String clientId, int records, int size) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ProducerConfig.ACKS_CONFIG, "1");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "4096");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(DEADLINE_MS));
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        byte[] value = new byte[size];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, value));
            }
            producer.flush();
        }
        return records;
    }

    private static int consume(String bootstrap, String topic, String clientId, int records) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, "4096");
        p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, "4096");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        int seen = 0;
        long end = System.currentTimeMillis() + DEADLINE_MS;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            while (seen < records && System.currentTimeMillis() < end) {
                ConsumerRecords<byte[], byte[]> got = consumer.poll(Duration.ofMillis(200));
                seen += got.count();
            }
        }
        return seen;
    }
}
