import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.LagInfo;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * Kafka Streams 4.4 topologies beyond the word count, each under {@code group.protocol=streams} with
 * {@code exactly_once_v2} unless its spec says otherwise, one after the other in this one JVM
 * (StreamsWordCount runs them after its own runs, so that the JVM is warm).  A run is named by its
 * spec, a JSON file written by the test: {@code {"run": ..., "inputs": [{"topic", "partition", "key", "value", "ts"}], "outputs": [topic],
 * "expect": n}}; the inputs are produced in order (before the application {@code tp-<run>} starts,
 * except the kill run's second half), the application runs, and the outputs are read
 * (read_committed) until they hold {@code expect} records and then once more for {@link #SETTLE_MS},
 * so that a duplicate would show.  Runs:
 *
 * <ul>
 *   <li>{@code topologies}: one application of four sub-topologies (one application start for
 *       four: the JVM's time is the CI's), its clients under byte-rate quotas set by the test:
 *       a stream-table join, orders joined with the customers table (co-partitioned; Streams picks
 *       the record with the lowest timestamp across the task's partitions, so a customer's update
 *       between two orders is seen by the second only); a count per key in 10 s tumbling windows
 *       without grace, suppressed until the window closes (one final count per window, stream time
 *       driven by the record timestamps); purchases looked up in a global table of products; a word
 *       count with a repartition;
 *   <li>a matrix run ({@code "topology": "topologies"} in its spec): the same application of four
 *       sub-topologies, its topics under the spec's {@code "prefix"} ({@code tp-<run>-join-customers},
 *       ...), against the spec's {@code "bootstrap"} (the cluster of three), under its
 *       {@code "protocol"} ({@code group.protocol}) and {@code "guarantee"}
 *       ({@code processing.guarantee}), internal topics with replication factor {@code "replication"};
 *       no quotas and no fault;
 *   <li>{@code kill}: two instances of a stateless application ({@code a} and {@code b}, one thread
 *       each); once the first half is through, the second half is produced, and {@code a}'s thread
 *       hangs on its first record of that half right after sending its output: a transaction left
 *       open, the member gone silent.  {@code a} is then closed with {@code close(Duration.ZERO)}
 *       (the thread stays hung: nothing is committed or aborted by the client), its member leaves when
 *       its poll interval expires, {@code b} takes over its tasks and the transaction coordinator
 *       aborts {@code a}'s transaction when it times out; the hung thread is released once the
 *       output is complete (a zombie: its commit is fenced);
 *   <li>{@code restart}: the word count against a cluster of three ({@code "bootstrap"} and {@code "admin"}
 *       in the spec, internal topics with replication factor 3): once the first half is counted, the
 *       broker {@code "stop"} is stopped through the admin HTTP API ({@code POST /brokers/N/stop}),
 *       the second half is produced, and once half of it is counted the broker is started again;
 *   <li>{@code txnfaults}: the word count, one stream thread, its producer's first EndTxn and
 *       TxnOffsetCommit requests answered CONCURRENT_TRANSACTIONS by fault rules the test added (the
 *       producer retries them); once the first half is counted, the rule {@code "fence"} of the spec
 *       (PRODUCER_FENCED on EndTxn) is posted to {@code "admin"} ({@code POST /faults}) and the second
 *       half produced: Streams takes the fence for a missed rebalance (TaskMigratedException), closes
 *       its tasks dirty, makes a new producer and rejoins; the state transitions and thread names are
 *       reported;
 *   <li>{@code move}: the word count against the cluster of three (internal topics with replication
 *       factor 3): once the first half is counted, the group's coordinator moves to broker {@code "to"}
 *       ({@code POST /groups/{app}/coordinator}: its __consumer_offsets partition's leadership moves,
 *       every broker stays up) and the second half is produced;
 *   <li>{@code standby}: the word count at_least_once, {@code streams.num.standby.replicas} of the
 *       spec ({@code "standbys"}) set on the group through IncrementalAlterConfigs, two instances
 *       {@code a} and {@code b} purging the repartition topic every 200 ms: once the first half is
 *       counted and the standby stores have caught up, {@code a} stops without leaving and its member
 *       is expelled through {@code "admin"} ({@code DELETE /groups/{app}/members/{member}}); {@code b}
 *       takes over from its standby and counts the second half (see {@link #standby}).
 * </ul>
 *
 * Prints per run {@code RESULT <run> <json>}: the output records as [topic, partition, key, value] in the
 * order read, the milliseconds from start to the last record, the application's state.
 */
public class StreamsTopologies {
  static final long TIMEOUT_MS = 40_000;
  static final long SETTLE_MS = 500;
  static final long WINDOW_MS = 10_000;

  public static void main(String[] args) throws Exception {
    run(args[0], args[1].split(","), args[2]);
  }

  /** Runs each spec file (paths) against bootstrap, state under stateDir. */
  static void run(String bootstrap0, String[] specs, String stateDir) throws Exception {
    ObjectMapper json = new ObjectMapper();
    for (String path : specs) {
      JsonNode spec = json.readTree(new File(path));
      String run = spec.get("run").asText();
      String bootstrap = bootstrap0;
      String app = "tp-" + run;
      // the topologies' topics: tp-join-customers, ... (a matrix run's under its own prefix: tp-<run>-join-customers)
      String tp = spec.path("prefix").asText("tp-");
      List<List<Object>> seen = new ArrayList<>();
      Map<String, Object> result = new TreeMap<>();
      long start = System.currentTimeMillis();
      int expect = spec.get("expect").asInt();
      StreamsBuilder builder = new StreamsBuilder();
      CountDownLatch hang = new CountDownLatch(1);
      switch (spec.path("topology").asText(run)) {
        case "topologies" -> {
          // a stream-table join
          KTable<String, String> customers = builder.table(tp + "join-customers");
          builder.<String, String>stream(tp + "join-orders")
              .join(customers, (order, name) -> name + ":" + order)
              .to(tp + "join-out");
          // a windowed count, suppressed until its window closes
          builder.<String, String>stream(tp + "window-in")
              .groupByKey()
              .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(WINDOW_MS)))
              .count(Materialized.with(Serdes.String(), Serdes.Long()))  // suppress needs the key serde
              .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
              .toStream((w, c) -> w.key() + "@" + w.window().start())
              .mapValues(String::valueOf)
              .to(tp + "window-out");
          // a global table lookup
          GlobalKTable<String, String> products = builder.globalTable(tp + "global-products");
          builder.<String, String>stream(tp + "global-in")
              .join(products, (user, product) -> product, (product, name) -> name)
              .to(tp + "global-out");
          // a count with a repartition (the clients of the topologies run run under quotas)
          count(builder, tp + "throttle-in", tp + "throttle-out");
        }
        case "kill" -> {
          int half = expect / 2;
          KStream<String, String> in = builder.<String, String>stream("tp-kill-in").mapValues(v -> "out-" + v);
          in.to("tp-kill-out");
          // after the output was sent: instance a's thread hangs on its first record of the second half
          in.foreach((k, v) -> {
            if (Thread.currentThread().getName().startsWith(app + "-a-")
                && Integer.parseInt(v.substring(4)) >= half) {
              try {
                hang.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
          });
        }
        case "restart" -> count(builder, "tp-restart-in", "tp-restart-out");
        case "txnfaults" -> count(builder, "tp-txnfaults-in", "tp-txnfaults-out");
        case "standby" -> count(builder, "tp-standby-in", "tp-standby-out");
        case "move" -> count(builder, "tp-move-in", "tp-move-out");
        default -> throw new IllegalArgumentException(run);
      }
      List<JsonNode> inputs = new ArrayList<>();
      spec.get("inputs").forEach(inputs::add);
      List<String> outputs = new ArrayList<>();
      spec.get("outputs").forEach(t -> outputs.add(t.asText()));
      if (spec.has("bootstrap")) {
        bootstrap = spec.get("bootstrap").asText();
      }
      try (KafkaConsumer<String, String> out = outputConsumer(bootstrap, outputs)) {
        if (run.equals("restart")) {
          // one broker of three stopped (through the admin HTTP API) while the second half is processed
          int half = inputs.size() / 2;
          String node = spec.get("admin").asText() + "/brokers/" + spec.get("stop").asInt();
          produce(bootstrap, inputs.subList(0, half));
          Properties p = props(bootstrap, app, stateDir + "/" + run);
          p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
          try (KafkaStreams streams = streams(builder, p)) {
            streams.start();
            read(out, seen, half, start);
            post(node + "/stop", "{}");
            produce(bootstrap, inputs.subList(half, inputs.size()));
            read(out, seen, half + (inputs.size() - half) / 2, start);
            post(node + "/start", "{}");
            read(out, seen, expect, start);
            settle(out, seen);
            result.put("state", streams.state().toString());
            streams.close(Duration.ofSeconds(20));
          }
        } else if (run.equals("move")) {
          // the group's coordinator moves to broker "to" (every broker up) once the first half is counted
          int half = inputs.size() / 2;
          produce(bootstrap, inputs.subList(0, half));
          Properties p = props(bootstrap, app, stateDir + "/" + run);
          p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
          try (KafkaStreams streams = streams(builder, p)) {
            streams.start();
            read(out, seen, half, start);
            post(spec.get("admin").asText() + "/groups/" + app + "/coordinator", "{\"broker\": " + spec.get("to").asInt() + "}");
            produce(bootstrap, inputs.subList(half, inputs.size()));
            read(out, seen, expect, start);
            settle(out, seen);
            result.put("state", streams.state().toString());
            streams.close(Duration.ofSeconds(20));
          }
        } else if (run.equals("txnfaults")) {
          // CONCURRENT_TRANSACTIONS at the first commits (rules the test added), then, once the first
          // half is counted, PRODUCER_FENCED at a commit: the rule posted here through the admin HTTP API
          int half = inputs.size() / 2;
          produce(bootstrap, inputs.subList(0, half));
          List<String> transitions = java.util.Collections.synchronizedList(new ArrayList<>());
          try (KafkaStreams streams = streams(builder, props(bootstrap, app, stateDir + "/" + run))) {
            streams.setStateListener((now, before) -> transitions.add(before + "->" + now));
            streams.start();
            read(out, seen, half, start);
            result.put("before_fence", List.copyOf(transitions));
            post(spec.get("admin").asText() + "/faults", spec.get("fence").toString());
            produce(bootstrap, inputs.subList(half, inputs.size()));
            read(out, seen, expect, start);
            settle(out, seen);
            result.put("state", streams.state().toString());
            result.put("transitions", List.copyOf(transitions));
            List<String> threads = new ArrayList<>();
            streams.metadataForLocalThreads().forEach(t -> threads.add(t.threadName().replaceAll(".*-StreamThread", "StreamThread")));
            result.put("threads", threads);
            streams.close(Duration.ofSeconds(20));
          }
        } else if (run.equals("standby")) {
          standby(spec, app, bootstrap, builder, inputs, stateDir + "/" + run, out, seen, result, start);
        } else if (run.equals("kill")) {
          int half = expect / 2;
          produce(bootstrap, inputs.subList(0, half));
          Properties pa = props(bootstrap, app, stateDir + "/" + run + "-a");
          pa.put(StreamsConfig.CLIENT_ID_CONFIG, app + "-a");
          Properties pb = props(bootstrap, app, stateDir + "/" + run + "-b");
          pb.put(StreamsConfig.CLIENT_ID_CONFIG, app + "-b");
          KafkaStreams a = streams(builder, pa);
          try (KafkaStreams b = streams(builder, pb)) {
            a.start();
            b.start();
            read(out, seen, half, start);
            // both hold a task before the second half arrives (the assignor balances 2 tasks over 2)
            long until = System.currentTimeMillis() + 10_000;
            while (System.currentTimeMillis() < until && !(hasTasks(a) && hasTasks(b))) {
              Thread.sleep(50);
            }
            result.put("both_had_tasks", hasTasks(a) && hasTasks(b));
            produce(bootstrap, inputs.subList(half, inputs.size()));
            Thread.sleep(500);  // a's thread is hung with its transaction open
            result.put("hung", hang.getCount() == 1);
            a.close(Duration.ZERO);
            read(out, seen, expect, start);
            hang.countDown();  // the zombie wakes up: its producer was fenced
            settle(out, seen);
            result.put("state", b.state().toString());
            b.close(Duration.ofSeconds(20));
            a.close(Duration.ofSeconds(10));
            result.put("zombie_state", a.state().toString());
          }
        } else {
          produce(bootstrap, inputs);
          Properties p = props(bootstrap, app, stateDir + "/" + run);
          // a matrix run's group protocol and processing guarantee (else streams, exactly_once_v2)
          p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, spec.path("protocol").asText("streams"));
          p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, spec.path("guarantee").asText(StreamsConfig.EXACTLY_ONCE_V2));
          if (spec.has("replication")) {
            p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, spec.get("replication").asInt());
          }
          try (KafkaStreams streams = streams(builder, p)) {
            streams.start();
            read(out, seen, expect, start);
            settle(out, seen);
            result.put("state", streams.state().toString());
            streams.close(Duration.ofSeconds(20));
          }
        }
      }
      result.put("out", seen);
      result.put("ms", System.currentTimeMillis() - start);
      System.out.println("RESULT " + run + " " + json.writeValueAsString(result));
    }
  }

  /**
   * The standby run: {@code streams.num.standby.replicas=1} set on the group (IncrementalAlterConfigs
   * on the GROUP resource, as Kafka 4.4's kafka-configs.sh --group does), two instances a and b of the
   * word count (one thread each), repartition topics purged every 200 ms.  Once the first half is
   * counted and each instance's standby stores have caught up (lag 0), the broker's view of the group
   * is taken ({@code GET /streams-groups}), a stops as if it crashed (no leave) and its member is
   * expelled ({@code DELETE /groups/{app}/members/{member}}); b takes over a's tasks from its standbys
   * and counts the second half.  Reports the standby tasks each instance held, b's store lags when
   * caught up, a's changelog end offsets, and what b's restore listener saw after the expel.
   */
  static void standby(JsonNode spec, String app, String bootstrap, StreamsBuilder builder, List<JsonNode> inputs,
                      String stateDir, KafkaConsumer<String, String> out, List<List<Object>> seen,
                      Map<String, Object> result, long start) throws Exception {
    String admin = spec.get("admin").asText();
    try (Admin client = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      client.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, app), List.of(
          new AlterConfigOp(new ConfigEntry("streams.num.standby.replicas", spec.get("standbys").asText()),
              AlterConfigOp.OpType.SET)))).all().get();
    }
    int half = inputs.size() / 2;
    produce(bootstrap, inputs.subList(0, half));
    Map<String, KafkaStreams> instances = new TreeMap<>();
    Map<String, Long> restored = new java.util.concurrent.ConcurrentHashMap<>();
    for (String name : List.of("a", "b")) {
      Properties p = props(bootstrap, app, stateDir + "-" + name);
      p.put(StreamsConfig.CLIENT_ID_CONFIG, app + "-" + name);
      p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 200);
      // at_least_once: no transaction markers in the changelogs, so a standby that has every record
      // is at lag 0 (under exactly_once_v2 the end offset counts the last commit marker: lag 1)
      p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
      KafkaStreams s = streams(builder, p);
      if (name.equals("b")) {
        s.setGlobalStateRestoreListener(new StateRestoreListener() {
          @Override
          public void onRestoreStart(TopicPartition tp, String store, long from, long to) {
          }

          @Override
          public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
            restored.merge(tp.topic() + "-" + tp.partition(), n, Long::sum);
          }

          @Override
          public void onRestoreEnd(TopicPartition tp, String store, long total) {
          }
        });
      }
      instances.put(name, s);
    }
    KafkaStreams a = instances.get("a");
    KafkaStreams b = instances.get("b");
    try {
      a.start();
      b.start();
      read(out, seen, half, start);
      // each instance holds standby tasks and its standby stores have caught up with the changelogs
      long until = System.currentTimeMillis() + 15_000;
      while (System.currentTimeMillis() < until && !(caughtUp(a) && caughtUp(b))) {
        Thread.sleep(50);
      }
      result.put("standby_a", tasks(a, false));
      result.put("standby_b", tasks(b, false));
      result.put("active_a", tasks(a, true));
      result.put("lags_b", lags(b));
      result.put("lags_a", lags(a));
      JsonNode group = new ObjectMapper().readTree(call("GET", admin + "/streams-groups/" + app, null));
      result.put("group", group.get("members"));
      Map<String, Long> before = new TreeMap<>(restored);
      result.put("restored_before", before);
      String member = null;
      for (JsonNode m : group.get("members")) {
        if (m.get("client_id").asText().startsWith(app + "-a-")) {
          member = m.get("member_id").asText();
        }
      }
      // a crashes (no leave) and is expelled at once: b takes over its tasks
      a.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP)
          .withTimeout(Duration.ofSeconds(20)));
      call("DELETE", admin + "/groups/" + app + "/members/" + member, null);
      produce(bootstrap, inputs.subList(half, inputs.size()));
      read(out, seen, spec.get("expect").asInt(), start);
      settle(out, seen);
      result.put("active_b", tasks(b, true));
      result.put("restored_after", new TreeMap<>(restored));
      result.put("state", b.state().toString());
    } finally {
      b.close(Duration.ofSeconds(20));
      a.close(Duration.ofSeconds(20));
    }
  }

  /** The instance's active (or standby) task ids, sorted. */
  static List<String> tasks(KafkaStreams s, boolean active) {
    List<String> out = new ArrayList<>();
    s.metadataForLocalThreads().forEach(t ->
        (active ? t.activeTasks() : t.standbyTasks()).forEach(task -> out.add(task.taskId().toString())));
    java.util.Collections.sort(out);
    return out;
  }

  /** Standby tasks held and every local store partition's lag 0 (of a changelog that has records). */
  static boolean caughtUp(KafkaStreams s) {
    if (tasks(s, false).isEmpty()) {
      return false;
    }
    Map<String, Map<Integer, LagInfo>> lags = s.allLocalStorePartitionLags();
    return !lags.isEmpty() && lags.values().stream().flatMap(m -> m.values().stream())
        .allMatch(l -> l.offsetLag() == 0 && l.endOffsetPosition() > 0);
  }

  /** Every local store partition's [position, end offset, lag]: {store: {partition: [...]}}. */
  static Map<String, Map<Integer, List<Long>>> lags(KafkaStreams s) {
    Map<String, Map<Integer, List<Long>>> out = new TreeMap<>();
    s.allLocalStorePartitionLags().forEach((store, parts) -> parts.forEach((p, l) ->
        out.computeIfAbsent(store, k -> new TreeMap<>())
            .put(p, List.of(l.currentOffsetPosition(), l.endOffsetPosition(), l.offsetLag()))));
    return out;
  }

  /** Counts the words of {@code in} (the values) into {@code out}: a repartition and a changelog. */
  static void count(StreamsBuilder builder, String in, String out) {
    builder.<String, String>stream(in)
        .groupBy((k, w) -> w)
        .count()
        .toStream()
        .mapValues(String::valueOf)
        .to(out);
  }

  static void post(String url, String body) throws Exception {
    call("POST", url, body);
  }

  /** An admin HTTP API call (body: JSON or null); its answer's body, or an exception unless 2xx. */
  static String call(String method, String url, String body) throws Exception {
    HttpResponse<String> r = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create(url)).header("Content-Type", "application/json")
            .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() / 100 != 2) {
      throw new IllegalStateException(method + " " + url + ": " + r.statusCode() + " " + r.body());
    }
    return r.body();
  }

  static Properties props(String bootstrap, String app, String stateDir) {
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
    p.put(StreamsConfig.CLIENT_ID_CONFIG, app);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    // a hung thread's member leaves after this; its open transaction is aborted after the next
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG), 2_000);
    p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 3_000);
    return p;
  }

  /** The application; an exception that kills a stream thread is printed (to stderr) and stops it. */
  static KafkaStreams streams(StreamsBuilder builder, Properties p) {
    KafkaStreams s = new KafkaStreams(builder.build(), p);
    s.setUncaughtExceptionHandler(e -> {
      e.printStackTrace();
      return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    return s;
  }

  static boolean hasTasks(KafkaStreams s) {
    return s.metadataForLocalThreads().stream().anyMatch(t -> !t.activeTasks().isEmpty());
  }

  static void produce(String bootstrap, List<JsonNode> inputs) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      for (JsonNode r : inputs) {
        producer.send(new ProducerRecord<>(r.get("topic").asText(), r.get("partition").asInt(),
            r.get("ts").asLong(), r.get("key").asText(), r.get("value").asText()));
      }
      producer.flush();
    }
  }

  /** A read_committed consumer of every partition of the output topics (created by the test), from the start. */
  static KafkaConsumer<String, String> outputConsumer(String bootstrap, List<String> topics) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
    KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p);
    List<TopicPartition> parts = new ArrayList<>();
    for (String topic : topics) {
      consumer.partitionsFor(topic, Duration.ofSeconds(5))
          .forEach(i -> parts.add(new TopicPartition(topic, i.partition())));
    }
    consumer.assign(parts);
    return consumer;
  }

  /** Reads until seen holds n records (or the timeout). */
  static void read(KafkaConsumer<String, String> consumer, List<List<Object>> seen, int n, long start) {
    while (System.currentTimeMillis() - start < TIMEOUT_MS && seen.size() < n) {
      for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
        seen.add(List.of(r.topic(), r.partition(), r.key(), r.value()));
      }
    }
  }

  /** Reads for SETTLE_MS more: whatever else the output gets (a duplicate) shows. */
  static void settle(KafkaConsumer<String, String> consumer, List<List<Object>> seen) {
    long until = System.currentTimeMillis() + SETTLE_MS;
    while (System.currentTimeMillis() < until) {
      for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
        seen.add(List.of(r.topic(), r.partition(), r.key(), r.value()));
      }
    }
  }
}
