import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Kafka's share consumer (kafka-clients KafkaShareConsumer, KIP-932) in two share groups at once, on two threads.
 *
 * Usage: ShareConsumers bootstrap topic records
 * "share-implicit" (share.acknowledgement.mode=implicit) reads until it saw every value (each poll accepting
 * what the one before gave), commits the last poll's and closes; "share-explicit" (explicit) releases each record on its first delivery
 * and accepts it on its redelivery, committing after each poll.
 * Prints "IMPLICIT <values seen> MAXDELIVERY <highest delivery count>" and
 * "EXPLICIT RELEASED <n> ACCEPTED <n> DELIVERIES <set of delivery counts accepted>", then "DONE".
 * Exits 1 with "TIMEOUT ..." after 60 s, or with the failure.
 */
public class ShareConsumers {
    static Properties props(String bootstrap, String group, String mode) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put("share.acknowledgement.mode", mode);
        return p;
    }

    static final class Implicit extends Thread {
        final Set<String> seen = ConcurrentHashMap.newKeySet();
        volatile int maxDelivery;
        volatile Throwable failure;
        final Properties props;
        final String topic;
        final int n;

        Implicit(String bootstrap, String topic, int n) {
            this.props = props(bootstrap, "share-implicit", "implicit");
            this.topic = topic;
            this.n = n;
        }

        @Override
        public void run() {
            try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(props)) {
                c.subscribe(List.of(topic));
                while (seen.size() < n && !isInterrupted()) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        seen.add(r.value());
                        maxDelivery = Math.max(maxDelivery, r.deliveryCount().orElse((short) 0));
                    }
                }
                c.commitSync();  // the last poll's records, accepted (close alone would release them)
            } catch (Throwable t) {
                failure = t;
            }
        }
    }

    static final class Explicit extends Thread {
        final Set<String> released = ConcurrentHashMap.newKeySet();
        final Set<String> accepted = ConcurrentHashMap.newKeySet();
        final Set<Short> deliveries = ConcurrentHashMap.newKeySet();
        volatile Throwable failure;
        final Properties props;
        final String topic;
        final int n;

        Explicit(String bootstrap, String topic, int n) {
            this.props = props(bootstrap, "share-explicit", "explicit");
            this.topic = topic;
            this.n = n;
        }

        @Override
        public void run() {
            try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(props)) {
                c.subscribe(List.of(topic));
                while (accepted.size() < n && !isInterrupted()) {
                    ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
                    for (ConsumerRecord<String, String> r : records) {
                        short count = r.deliveryCount().orElse((short) 0);
                        if (count == 1) {
                            c.acknowledge(r, AcknowledgeType.RELEASE);
                            released.add(r.value());
                        } else {
                            c.acknowledge(r, AcknowledgeType.ACCEPT);
                            accepted.add(r.value());
                            deliveries.add(count);
                        }
                    }
                    if (!records.isEmpty()) {
                        c.commitSync();
                    }
                }
            } catch (Throwable t) {
                failure = t;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int n = Integer.parseInt(args[2]);
        Implicit implicit = new Implicit(bootstrap, topic, n);
        Explicit explicit = new Explicit(bootstrap, topic, n);
        implicit.start();
        explicit.start();
        implicit.join(60_000);
        explicit.join(Math.max(1, 60_000));
        for (Thread t : List.of(implicit, explicit)) {
            if (t.isAlive()) {
                System.out.println("TIMEOUT implicit=" + implicit.seen.size() + " released=" + explicit.released.size()
                    + " accepted=" + explicit.accepted.size());
                System.exit(1);
            }
        }
        for (Throwable f : new Throwable[] {implicit.failure, explicit.failure}) {
            if (f != null) {
                f.printStackTrace();
                System.exit(1);
            }
        }
        System.out.println("IMPLICIT " + implicit.seen.size() + " MAXDELIVERY " + implicit.maxDelivery);
        System.out.println("EXPLICIT RELEASED " + explicit.released.size() + " ACCEPTED " + explicit.accepted.size()
            + " DELIVERIES " + explicit.deliveries);
        System.out.println("DONE");
    }
}
