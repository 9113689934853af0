import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * N Java consumers (kafka-clients) in one group, each on its own thread, over a topic of P partitions.
 *
 * Usage: GroupConsumers bootstrap topic protocol(classic|consumer) members partitions records
 * Prints: "ASSIGNED <sizes> SEEN <n>" once the partitions are split evenly and every record was read,
 * then commits, closes the first member (LeaveGroup / leave heartbeat) and prints "TAKEOVER <sizes>"
 * once the others own every partition, then "DONE".  Exits 1 with "TIMEOUT ..." after 60 s.
 */
public class GroupConsumers {
    static final Set<String> SEEN = ConcurrentHashMap.newKeySet();

    static final class Member extends Thread {
        final Properties props = new Properties();
        final String topic;
        volatile Set<Integer> assigned = Set.of();
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicBoolean commit = new AtomicBoolean();
        volatile boolean committed;
        volatile Throwable failure;

        Member(String bootstrap, String topic, String protocol, String clientId) {
            this.topic = topic;
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ConsumerConfig.GROUP_ID_CONFIG, "java-" + protocol);
            props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
            props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            if (protocol.equals("classic")) {
                props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
                props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            }
        }

        @Override
        public void run() {
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
                c.subscribe(List.of(topic));
                while (!stop.get()) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                        SEEN.add(r.value());
                    }
                    Set<Integer> now = new TreeSet<>();
                    for (TopicPartition tp : c.assignment()) {
                        now.add(tp.partition());
                    }
                    assigned = now;
                    if (commit.getAndSet(false)) {
                        c.commitSync();
                        committed = true;
                    }
                }
            } catch (Throwable t) {
                failure = t;
            }
        }
    }

    static boolean balanced(List<Member> ms, int partitions) {
        Set<Integer> all = new TreeSet<>();
        int total = 0, min = Integer.MAX_VALUE, max = 0;
        for (Member m : ms) {
            Set<Integer> a = m.assigned;
            all.addAll(a);
            total += a.size();
            min = Math.min(min, a.size());
            max = Math.max(max, a.size());
        }
        return all.size() == partitions && total == partitions && max - min <= 1;
    }

    static String sizes(List<Member> ms) {
        List<Integer> out = new ArrayList<>();
        for (Member m : ms) {
            out.add(m.assigned.size());
        }
        return out.toString().replace(" ", "");
    }

    static void await(String what, long deadline, java.util.function.BooleanSupplier cond, List<Member> ms)
            throws InterruptedException {
        while (!cond.getAsBoolean()) {
            for (Member m : ms) {
                if (m.failure != null) {
                    System.out.println("FAILED " + m.failure);
                    System.exit(1);
                }
            }
            if (System.currentTimeMillis() > deadline) {
                System.out.println("TIMEOUT " + what + " " + sizes(ms) + " SEEN " + SEEN.size());
                System.exit(1);
            }
            Thread.sleep(20);
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], protocol = args[2];
        int members = Integer.parseInt(args[3]), partitions = Integer.parseInt(args[4]);
        int records = Integer.parseInt(args[5]);
        List<Member> ms = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            Member m = new Member(bootstrap, topic, protocol, "java-" + protocol + "-" + i);
            ms.add(m);
            m.start();
        }
        long deadline = System.currentTimeMillis() + 60_000;
        await("assigning", deadline, () -> SEEN.size() >= records && balanced(ms, partitions), ms);
        System.out.println("ASSIGNED " + sizes(ms) + " SEEN " + SEEN.size());
        for (Member m : ms) {
            m.commit.set(true);
        }
        await("committing", deadline, () -> ms.stream().allMatch(m -> m.committed), ms);
        Member first = ms.get(0);
        first.stop.set(true);
        first.join(30_000);
        List<Member> rest = ms.subList(1, ms.size());
        await("taking over", deadline, () -> balanced(rest, partitions), rest);
        System.out.println("TAKEOVER " + sizes(rest));
        for (Member m : rest) {
            m.stop.set(true);
        }
        for (Member m : rest) {
            m.join(30_000);
        }
        System.out.println("DONE");
        System.exit(0);
    }
}
