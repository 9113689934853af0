import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams 4.4 word count with a repartition step (split lines, group by word: the
 * repartition topic, count into a state store: the changelog), run once per group protocol given,
 * in this one JVM: produce the lines of a file to {@code <app>-in}, start the application, read
 * {@code <app>-out} (read_committed) until every word of the input has its final count, close.  A run
 * is {@code <protocol>} (at_least_once) or {@code <protocol>-eos} (exactly_once_v2: the counts and the
 * consumed offsets are committed in transactions) or {@code <protocol>-eos-failover}: two instances
 * of the application (one stream thread each) share the first half of the lines, one stops without
 * leaving the group ({@code REMAIN_IN_GROUP}, as a crashed instance would), the second half is
 * produced and the other instance takes over its tasks, restoring their counts from the changelog.
 * Prints per run one line {@code RESULT <run> <json>}: every count the output held per word, in order (the store's
 * cache is off, so each update is written), how long the application took from start to the last
 * count, and the state it reached.
 *
 * <p>Args: bootstrap, runs (comma-separated: classic,streams,streams-eos,streams-eos-failover), lines file,
 * state dir, and optionally StreamsTopologies' spec files (comma-separated), run after these in this JVM.
 */
public class StreamsWordCount {
  static final long TIMEOUT_MS = 30_000;

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    List<String> lines = Files.readAllLines(Path.of(args[2]));
    Map<String, Long> expected = new TreeMap<>();
    for (String line : lines) {
      for (String w : words(line)) {
        expected.merge(w, 1L, Long::sum);
      }
    }
    ObjectMapper json = new ObjectMapper();
    for (String run : args[1].split(",")) {
      String protocol = run.replaceAll("-.*", "");
      String app = "wc-" + run;
      boolean failover = run.endsWith("-failover");
      produce(bootstrap, app + "-in", failover ? lines.subList(0, lines.size() / 2) : lines);
      Properties p = new Properties();
      p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
      p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
      p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
      p.put(StreamsConfig.STATE_DIR_CONFIG, args[3] + "/" + protocol);
      p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
      p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
      p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
      if (run.contains("-eos")) {
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
      }
      p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
      p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
      p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
      StreamsBuilder builder = new StreamsBuilder();
      builder.<String, String>stream(app + "-in")
          .flatMapValues(StreamsWordCount::words)
          .groupBy((k, w) -> w)
          .count(Materialized.as("counts"))
          .toStream()
          .to(app + "-out", Produced.with(Serdes.String(), Serdes.Long()));
      long start = System.currentTimeMillis();
      Map<String, List<Long>> seen = new TreeMap<>();
      String state;
      if (failover) {
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        Properties second = new Properties();
        second.putAll(p);
        second.put(StreamsConfig.STATE_DIR_CONFIG, args[3] + "/" + run + "-b");
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[3] + "/" + run + "-a");
        try (KafkaStreams a = new KafkaStreams(builder.build(), p);
             KafkaStreams b = new KafkaStreams(builder.build(), second)) {
          a.start();
          b.start();
          Map<String, Long> half = new TreeMap<>();
          for (String line : lines.subList(0, lines.size() / 2)) {
            for (String w : words(line)) {
              half.merge(w, 1L, Long::sum);
            }
          }
          try (KafkaConsumer<String, Long> out = outputConsumer(bootstrap, app + "-out")) {
            readCounts(out, half, seen, start);
            // one instance stops as if it crashed: no leave, its tasks wait for its session to end
            a.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP)
                .withTimeout(Duration.ofSeconds(20)));
            produce(bootstrap, app + "-in", lines.subList(lines.size() / 2, lines.size()));
            readCounts(out, expected, seen, start);
          }
          state = b.state().toString();
          b.close(Duration.ofSeconds(20));
        }
      } else {
        try (KafkaStreams streams = new KafkaStreams(builder.build(), p);
             KafkaConsumer<String, Long> out = outputConsumer(bootstrap, app + "-out")) {
          streams.start();
          readCounts(out, expected, seen, start);
          state = streams.state().toString();
          streams.close(Duration.ofSeconds(20));
        }
      }
      Map<String, Object> result = new TreeMap<>();
      result.put("counts", seen);
      result.put("ms", System.currentTimeMillis() - start);
      result.put("state", state);
      System.out.println("RESULT " + run + " " + json.writeValueAsString(result));
    }
    if (args.length > 4) {
      StreamsTopologies.run(bootstrap, args[4].split(","), args[3] + "/topologies");
    }
  }

  static List<String> words(String line) {
    List<String> out = new ArrayList<>();
    for (String w : line.toLowerCase().split("\\W+")) {
      if (!w.isEmpty()) {
        out.add(w);
      }
    }
    return out;
  }

  static void produce(String bootstrap, String topic, List<String> lines) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      int i = 0;
      for (String line : lines) {
        producer.send(new ProducerRecord<>(topic, "line-" + i++, line));
      }
      producer.flush();
    }
  }

  /** A read_committed consumer of every partition of the output topic (created by the test), from the start. */
  static KafkaConsumer<String, Long> outputConsumer(String bootstrap, String topic) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class);
    KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(p);
    List<org.apache.kafka.common.TopicPartition> parts = new ArrayList<>();
    consumer.partitionsFor(topic, Duration.ofSeconds(5))
        .forEach(i -> parts.add(new org.apache.kafka.common.TopicPartition(topic, i.partition())));
    consumer.assign(parts);
    return consumer;
  }

  /** Reads the output until every word has reached its expected count (or the timeout). */
  static void readCounts(KafkaConsumer<String, Long> consumer, Map<String, Long> expected,
                         Map<String, List<Long>> seen, long start) {
    while (System.currentTimeMillis() - start < TIMEOUT_MS && !done(expected, seen)) {
      for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(200))) {
        seen.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
      }
    }
  }

  static boolean done(Map<String, Long> expected, Map<String, List<Long>> seen) {
    for (var e : expected.entrySet()) {
      List<Long> counts = seen.get(e.getKey());
      if (counts == null || !counts.contains(e.getValue())) {
        return false;
      }
    }
    return true;
  }
}
