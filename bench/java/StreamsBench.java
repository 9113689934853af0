import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Produced;

/**
 * bench/streams.py's application: a Kafka Streams 4.4 word count (a repartition, a changelog) under
 * {@code group.protocol=streams}, against the broker at args[0].  Creates {@code bench-in} and
 * {@code bench-out} (args[3] partitions), produces args[1] one-word records, starts one instance and
 * reads {@code bench-out} until every word has its final count; then starts a second instance of the
 * same application and waits until both hold active tasks.  Prints one line {@code RESULT <json>}:
 * {@code start_ms} (start() to the first output record), {@code process_ms} (first to last output
 * record), {@code records}, {@code rebalance_ms} (the second instance's start() to both holding
 * tasks), or {@code error}.  Args: bootstrap, records, state dir, partitions, guarantee.
 */
public class StreamsBench {
  static final long TIMEOUT_MS = 120_000;

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    int records = Integer.parseInt(args[1]);
    int partitions = Integer.parseInt(args[3]);
    int vocabulary = 1000;
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin.createTopics(List.of(new NewTopic("bench-in", partitions, (short) 1),
          new NewTopic("bench-out", partitions, (short) 1))).all().get();
    }
    Map<String, Long> expected = new HashMap<>();  // every word's final count
    try (KafkaProducer<String, String> p = new KafkaProducer<>(Map.of("bootstrap.servers", bootstrap,
        "linger.ms", 5), new StringSerializer(), new StringSerializer())) {
      for (int i = 0; i < records; i++) {
        String w = "w" + (i * 7919 % vocabulary);
        expected.merge(w, 1L, Long::sum);
        p.send(new ProducerRecord<>("bench-in", "k" + i, w));
      }
      p.flush();
    }
    StreamsBuilder builder = new StreamsBuilder();
    builder.<String, String>stream("bench-in").groupBy((k, w) -> w).count().toStream()
        .to("bench-out", Produced.with(Serdes.String(), Serdes.Long()));
    String result;
    try (KafkaStreams a = new KafkaStreams(builder.build(), props(bootstrap, args[2] + "/a", args[4]));
         KafkaStreams b = new KafkaStreams(builder.build(), props(bootstrap, args[2] + "/b", args[4]));
         KafkaConsumer<String, Long> out = consumer(bootstrap, partitions)) {
      long t0 = System.nanoTime();
      a.start();
      long first = -1;
      long lastSeen = -1;
      Map<String, Long> counts = new HashMap<>();
      int done = 0;
      int words = expected.size();
      while (done < words && System.nanoTime() - t0 < TIMEOUT_MS * 1_000_000) {
        for (ConsumerRecord<String, Long> r : out.poll(Duration.ofMillis(20))) {
          if (first < 0) {
            first = System.nanoTime();
          }
          Long before = counts.put(r.key(), r.value());
          if (r.value().equals(expected.get(r.key())) && !r.value().equals(before)) {
            done++;
          }
          lastSeen = System.nanoTime();
        }
      }
      if (done < words) {
        result = "{\"error\": \"" + done + " of " + words + " words counted in " + TIMEOUT_MS + " ms\"}";
      } else {
        long t1 = System.nanoTime();
        b.start();
        while (!(hasTasks(a) && hasTasks(b)) && System.nanoTime() - t1 < TIMEOUT_MS * 1_000_000) {
          Thread.sleep(10);
        }
        long t2 = System.nanoTime();
        result = String.format("{\"start_ms\": %.1f, \"process_ms\": %.1f, \"records\": %d, \"rebalance_ms\": %s}",
            (first - t0) / 1e6, (lastSeen - first) / 1e6, records,
            hasTasks(a) && hasTasks(b) ? String.format("%.1f", (t2 - t1) / 1e6) : "null");
      }
      a.close(Duration.ofSeconds(10));
      b.close(Duration.ofSeconds(10));
    }
    System.out.println("RESULT " + result);
  }

  static boolean hasTasks(KafkaStreams s) {
    return s.metadataForLocalThreads().stream().anyMatch(t -> !t.activeTasks().isEmpty());
  }

  static Properties props(String bootstrap, String stateDir, String guarantee) {
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, "bench");
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
    p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    return p;
  }

  static KafkaConsumer<String, Long> consumer(String bootstrap, int partitions) {
    KafkaConsumer<String, Long> c = new KafkaConsumer<>(Map.of("bootstrap.servers", bootstrap,
        "auto.offset.reset", "earliest", "isolation.level", "read_committed"),
        new StringDeserializer(), new LongDeserializer());
    List<TopicPartition> parts = new ArrayList<>();
    for (int i = 0; i < partitions; i++) {
      parts.add(new TopicPartition("bench-out", i));
    }
    c.assign(parts);
    return c;
  }
}
