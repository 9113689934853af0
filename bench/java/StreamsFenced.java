import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.common.serialization.Serdes;

/**
 * Fences one of two Kafka Streams 4.4 instances of a word count (group.protocol=streams,
 * exactly_once_v2, one stream thread each, records flowing) and records what its stream thread does
 * (issue 26: does it die with {@code IllegalStateException: Consumer is not subscribed to any topics
 * or assigned any partitions}?). bench/streams_fenced.py drives it.
 *
 * <p>Both instances reach the broker through bench/streams_fenced.py's proxy; instance B's clients
 * have client ids {@code fenB-...}. Mode {@code stall}: once both own active tasks, it prints
 * {@code STALL <ms>} on stderr and the proxy holds all of B's traffic for that long (longer than the
 * group's session timeout): B stops heartbeating without closing, the broker expires its session
 * and gives its tasks to A; then B's traffic flows again and B learns it was fenced ({@code
 * stall-heartbeat}: the proxy holds only the connection of B's heartbeats). Mode
 * {@code expel}: mockbroker's {@code DELETE /groups/{g}/members/{B's member}} instead.
 *
 * <p>Every thread death is recorded by the uncaught-exception handler, which answers REPLACE_THREAD.
 * Prints per run {@code RESULT <json>}: the deaths (instance, exception, message, top frames),
 * whether A held every active task while B was out (the broker fenced it), whether B went back to
 * REBALANCING after the fence, and the active tasks of each at the end.
 *
 * <p>Args: bootstrap (the proxy), mode (stall|expel), runs, stall ms, observe ms, state dir,
 * [admin url for expel], [first run number].
 */
public class StreamsFenced {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String mode = args[1];
    int runs = Integer.parseInt(args[2]);
    long stallMs = Long.parseLong(args[3]);
    long observeMs = Long.parseLong(args[4]);
    String stateDir = args[5];
    String admin = args.length > 6 ? args[6] : "";
    ObjectMapper json = new ObjectMapper();
    for (int run = 0; run < runs; run++) {
      Map<String, Object> res = oneRun(bootstrap, mode, "fenced-" + mode + "-" + run, stallMs, observeMs,
                                       stateDir + "/" + run, admin);
      res.put("run", run);
      System.out.println("RESULT " + json.writeValueAsString(res));
      System.out.flush();
    }
    System.exit(0);
  }

  static Map<String, Object> oneRun(String bootstrap, String mode, String app, long stallMs, long observeMs,
                                    String stateDir, String admin) throws Exception {
    try (Admin a = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      a.createTopics(List.of(new NewTopic(app + "-in", 4, (short) 1), new NewTopic(app + "-out", 4, (short) 1)))
          .all().get();
    }
    StreamsBuilder builder = new StreamsBuilder();
    builder.<String, String>stream(app + "-in").groupBy((k, w) -> w).count().toStream()
        .mapValues(String::valueOf).to(app + "-out");
    List<Map<String, Object>> deaths = Collections.synchronizedList(new ArrayList<>());
    AtomicBoolean feeding = new AtomicBoolean(true);
    Thread feeder = new Thread(() -> {
      try (KafkaProducer<String, String> p = new KafkaProducer<>(
          Map.<String, Object>of("bootstrap.servers", bootstrap, "linger.ms", 5),
          new StringSerializer(), new StringSerializer())) {
        for (int i = 0; feeding.get(); i++) {
          String w = "w" + (i % 97);
          p.send(new ProducerRecord<>(app + "-in", w, w));
          Thread.sleep(5);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    feeder.start();
    KafkaStreams sa = new KafkaStreams(builder.build(), props(app, bootstrap, "fenA", stateDir + "/a"));
    KafkaStreams sb = new KafkaStreams(builder.build(), props(app, bootstrap, "fenB", stateDir + "/b"));
    List<String> bStates = Collections.synchronizedList(new ArrayList<>());
    sb.setStateListener((now, before) -> bStates.add(now.toString()));
    for (var e : Map.of("A", sa, "B", sb).entrySet()) {
      String who = e.getKey();
      e.getValue().setUncaughtExceptionHandler(ex -> {
        Throwable t = ex;
        while (t.getCause() != null && !(t instanceof IllegalStateException)) {
          t = t.getCause();
        }
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("instance", who);
        d.put("exception", t.getClass().getName());
        d.put("message", String.valueOf(t.getMessage()));
        List<String> frames = new ArrayList<>();
        for (StackTraceElement f : t.getStackTrace()) {
          if (frames.size() < 4) {
            frames.add(f.getClassName().replaceAll(".*\\.", "") + "." + f.getMethodName());
          }
        }
        d.put("frames", frames);
        deaths.add(d);
        return StreamThreadExceptionResponse.REPLACE_THREAD;
      });
    }
    Map<String, Object> res = new LinkedHashMap<>();
    res.put("mode", mode);
    try {
      sa.start();
      sb.start();
      long deadline = System.currentTimeMillis() + 60_000;
      while ((active(sa).isEmpty() || active(sb).isEmpty()) && System.currentTimeMillis() < deadline) {
        Thread.sleep(100);
      }
      Set<String> all = new TreeSet<>(active(sa));
      all.addAll(active(sb));
      res.put("both_owned_tasks", !active(sa).isEmpty() && !active(sb).isEmpty());
      Thread.sleep(1000);   // commits under way on both
      int statesBefore = bStates.size();
      long fencedAt = System.currentTimeMillis();
      if (mode.startsWith("stall")) {
        System.err.println("STALL " + stallMs);
        System.err.flush();
      } else {
        String group = http(admin, "GET", "/streams-groups/" + app);
        String member = group.replaceAll("(?s).*\"member_id\": \"([^\"]+)\"[^{}]*\"client_id\": \"fenB-.*", "$1");
        http(admin, "DELETE", "/groups/" + app + "/members/" + member);
      }
      boolean aTookAll = false;
      long end = fencedAt + stallMs + observeMs;
      while (System.currentTimeMillis() < end) {
        Set<String> now = active(sa);
        aTookAll |= now.containsAll(all);
        Thread.sleep(50);
      }
      res.put("a_took_all_tasks", aTookAll);
      res.put("b_states_after", new ArrayList<>(bStates.subList(statesBefore, bStates.size())));
      res.put("a_active", active(sa).size());
      res.put("b_active", active(sb).size());
    } finally {
      feeding.set(false);
      feeder.join(10_000);
      sa.close(Duration.ofSeconds(10));
      sb.close(Duration.ofSeconds(10));
    }
    res.put("deaths", new ArrayList<>(deaths));
    return res;
  }

  static Set<String> active(KafkaStreams s) {
    Set<String> out = new TreeSet<>();
    try {
      for (ThreadMetadata t : s.metadataForLocalThreads()) {
        t.activeTasks().forEach(task -> out.add(task.taskId().toString()));
      }
    } catch (RuntimeException e) {
      // not running
    }
    return out;
  }

  static Properties props(String app, String bootstrap, String clientId, String stateDir) {
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
    p.put(StreamsConfig.CLIENT_ID_CONFIG, clientId);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
    p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    return p;
  }

  static String http(String admin, String method, String path) throws Exception {
    var r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(admin + path))
        .header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() / 100 != 2) {
      throw new IllegalStateException(method + " " + path + ": " + r.statusCode() + " " + r.body());
    }
    return r.body();
  }
}
