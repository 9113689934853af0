// A tour of Kafka's Java Admin (kafka-clients 4.4.0): every method of org.apache.kafka.clients.admin.Admin,
// called once against one cluster, in an order that gives each something to act on (a topic with
// records, a classic group with a static member, a share group, an open transaction). Driven by
// tests/integration/test_admin_tour.py; usage: java AdminTour <bootstrap-servers> (one JVM per cluster).
//
// Output, one line per Admin method (in the order called), then DONE:
//   <method>: OK <summary>              the call succeeded; the summary is what it answered
//   <method>: FAIL <exception>: <message>
//   <method>: SKIP <reason>             Kafka itself refuses it without an authorizer, SASL or a plugin,
//                                       or it sends no request
// Summaries hold only what a correct broker answers the same (no ids, times or paths).

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ClassicGroupDescription;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;

@SuppressWarnings("removal")
public class AdminTour {
    private static final long TIMEOUT_S = 30;
    private static final String TOPIC = "tour", GONE = "tour-gone", GROUP = "tour-cg", SHARE = "tour-sg",
        STREAMS = "tour-stg", TXN = "tour-txn", USER = "tour-user";
    private static final TopicPartition TP0 = new TopicPartition(TOPIC, 0);

    private static <T> T get(org.apache.kafka.common.KafkaFuture<T> f) throws Exception {
        return f.get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    /** Calls ``method`` and prints its line: OK and the summary it returns, or FAIL and why. */
    private static void step(String method, Callable<Object> call) {
        try {
            Object summary = call.call();
            System.out.println(method + ": OK" + (summary == null ? "" : " " + summary));
        } catch (Exception e) {
            Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            System.out.println(method + ": FAIL " + t.getClass().getSimpleName() + ": " + t.getMessage());
        }
        System.out.flush();
    }

    private static void skip(String method, String reason) {
        System.out.println(method + ": SKIP " + reason);
    }

    private static Properties props(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "25000");
        p.put(AdminClientConfig.ENABLE_METRICS_PUSH_CONFIG, "true");  // Admin's default is false
        return p;
    }

    /** ``probe`` until ``done`` holds of its answer (Kafka: metadata propagates to the broker; a group
     *  exists once its first member joined), for at most 10 s; an exception on the last try is thrown. */
    private static <T> T await(Callable<T> probe, java.util.function.Predicate<T> done) throws Exception {
        for (int i = 0; ; i++) {
            try {
                T got = probe.call();
                if (done.test(got) || i >= 100) return got;
            } catch (ExecutionException e) {
                if (i >= 100) throw e;
            }
            Thread.sleep(100);
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        try (Admin admin = Admin.create(props(bootstrap))) {
            tour(admin, bootstrap);
        }
        System.out.println("DONE");
    }

    private static void tour(Admin admin, String bootstrap) throws Exception {
        // ---- topics and partitions
        step("createTopics", () -> {
            get(admin.createTopics(List.of(new NewTopic(TOPIC, 2, (short) 1), new NewTopic(GONE, 1, (short) 1))).all());
            return "2 topics";
        });
        step("createPartitions", () -> {
            get(admin.createPartitions(Map.of(TOPIC, NewPartitions.increaseTo(3))).all());
            return "to 3";
        });
        step("listTopics", () -> await(() -> get(admin.listTopics().names()),
                                       names -> names.contains(TOPIC) && names.contains(GONE))
             .stream().filter(n -> n.startsWith("tour")).sorted().collect(Collectors.toList()));
        step("describeTopics(names)", () -> {
            TopicDescription d = await(() -> get(admin.describeTopics(List.of(TOPIC)).allTopicNames()).get(TOPIC),
                                       t -> t.partitions().size() == 3);
            return d.name() + " partitions=" + d.partitions().size();
        });
        Uuid goneId = get(admin.describeTopics(List.of(GONE)).allTopicNames()).get(GONE).topicId();
        step("describeTopics(ids)", () -> {
            TopicDescription d = get(admin.describeTopics(TopicCollection.ofTopicIds(List.of(goneId))).allTopicIds())
                .get(goneId);
            return d.name() + " partitions=" + d.partitions().size();
        });
        step("deleteTopics", () -> {
            get(admin.deleteTopics(TopicCollection.ofTopicIds(List.of(goneId))).all());
            return "by id";
        });

        // ---- records: a transactional producer commits 4 records to each partition, then leaves a
        // transaction open on partition 1
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, TXN);
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        KafkaProducer<String, String> producer = new KafkaProducer<>(pp);
        producer.initTransactions();
        producer.beginTransaction();
        for (int p = 0; p < 3; p++)
            for (int i = 0; i < 4; i++) producer.send(new ProducerRecord<>(TOPIC, p, "k", "v" + i));
        producer.commitTransaction();  // offsets 0-3 and the marker at 4 on each partition
        producer.beginTransaction();
        producer.send(new ProducerRecord<>(TOPIC, 1, "k", "open")).get(TIMEOUT_S, TimeUnit.SECONDS);

        step("listOffsets", () -> {
            Map<TopicPartition, OffsetSpec> specs = Map.of(TP0, OffsetSpec.earliest(),
                new TopicPartition(TOPIC, 2), OffsetSpec.latest());
            return new TreeMap<>(get(admin.listOffsets(specs).all()).entrySet().stream()
                .collect(Collectors.toMap(e -> e.getKey().toString(), e -> e.getValue().offset())));
        });
        step("deleteRecords", () -> get(admin.deleteRecords(Map.of(TP0, RecordsToDelete.beforeOffset(2)))
                                        .lowWatermarks().get(TP0)).lowWatermark());

        // ---- transactions
        step("listTransactions", () -> get(admin.listTransactions().all()).stream()
             .filter(t -> t.transactionalId().startsWith("tour")).map(t -> t.transactionalId() + ":" + t.state())
             .sorted().collect(Collectors.toList()));
        step("describeTransactions", () -> {
            TransactionDescription d = get(admin.describeTransactions(List.of(TXN)).description(TXN));
            return d.state() + " " + d.topicPartitions();
        });
        TopicPartition tp1 = new TopicPartition(TOPIC, 1);
        List<ProducerState> producers = new ArrayList<>();
        step("describeProducers", () -> {
            producers.addAll(get(admin.describeProducers(List.of(tp1)).partitionResult(tp1)).activeProducers());
            return producers.stream().map(s -> "txnStart=" + s.currentTransactionStartOffset())
                .collect(Collectors.toList());
        });
        step("abortTransaction", () -> {
            ProducerState s = producers.get(0);
            get(admin.abortTransaction(new AbortTransactionSpec(tp1, s.producerId(), (short) s.producerEpoch(),
                                                                s.coordinatorEpoch().orElse(-1))).all());
            return get(admin.describeProducers(List.of(tp1)).partitionResult(tp1)).activeProducers().stream()
                .map(x -> "txnStart=" + x.currentTransactionStartOffset()).collect(Collectors.toList());
        });
        step("fenceProducers", () -> {
            get(admin.fenceProducers(List.of(TXN)).all());
            return TXN;
        });
        producer.close(Duration.ZERO);
        step("forceTerminateTransaction", () -> {
            get(admin.forceTerminateTransaction(TXN).result());
            return TXN;
        });

        // ---- configs
        ConfigResource topicRes = new ConfigResource(ConfigResource.Type.TOPIC, TOPIC);
        // and the streams group's (group config: the app below gets its tasks without the default 3 s delay)
        ConfigResource streamsRes = new ConfigResource(ConfigResource.Type.GROUP, STREAMS);
        step("incrementalAlterConfigs", () -> {
            get(admin.incrementalAlterConfigs(Map.of(topicRes, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "86400000"), AlterConfigOp.OpType.SET)),
                streamsRes, List.of(new AlterConfigOp(new ConfigEntry("streams.initial.rebalance.delay.ms", "0"),
                                                      AlterConfigOp.OpType.SET)))).all());
            return "retention.ms streams.initial.rebalance.delay.ms";
        });
        step("describeConfigs", () -> {
            var all = await(() -> get(admin.describeConfigs(List.of(topicRes, streamsRes)).all()),  // Kafka: the
                a -> "86400000".equals(a.get(topicRes).get("retention.ms").value())  // metadata reaches the broker
                    && a.get(streamsRes).get("streams.initial.rebalance.delay.ms").source()
                       == ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG);
            ConfigEntry e = all.get(topicRes).get("retention.ms");
            ConfigEntry g = all.get(streamsRes).get("streams.initial.rebalance.delay.ms");
            return e.value() + " " + e.source() + " " + g.value() + " " + g.source();
        });
        step("listConfigResources", () -> get(admin.listConfigResources(Set.of(ConfigResource.Type.TOPIC),
                new org.apache.kafka.clients.admin.ListConfigResourcesOptions()).all()).stream()
             .map(ConfigResource::name).filter(n -> n.startsWith("tour")).sorted().collect(Collectors.toList()));
        step("listClientMetricsResources", () -> {
            var all = get(admin.listClientMetricsResources().all());
            return all.size();
        });

        // ---- cluster, features, quorum
        List<Integer> brokerIds = new ArrayList<>();
        step("describeCluster", () -> {
            var c = admin.describeCluster();
            get(c.nodes()).forEach(n -> brokerIds.add(n.id()));
            brokerIds.sort(null);
            return "nodes=" + brokerIds.size() + " controller=" + (get(c.controller()) != null)
                + " clusterId=" + (get(c.clusterId()) != null);
        });
        step("describeFeatures", () -> {
            FeatureMetadata fm = get(admin.describeFeatures().featureMetadata());
            return new TreeSet<>(fm.finalizedFeatures().keySet());
        });
        step("updateFeatures", () -> {
            get(admin.updateFeatures(Map.of("transaction.version", new FeatureUpdate((short) 2,
                FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions().validateOnly(true)).all());
            return "transaction.version=2 validateOnly";
        });
        step("describeMetadataQuorum", () -> {
            QuorumInfo q = get(admin.describeMetadataQuorum().quorumInfo());
            return "voters=" + q.voters().size();
        });
        // a static quorum (controller.quorum.voters) has kraft.version 0: Kafka answers UnsupportedVersionException
        skip("addRaftVoter", "kraft.version 0 (a static quorum): Kafka refuses it");
        skip("removeRaftVoter", "kraft.version 0 (a static quorum): Kafka refuses it");

        // ---- log dirs, reassignments, leaders
        int leader = get(admin.describeTopics(List.of(TOPIC)).allTopicNames()).get(TOPIC)
            .partitions().get(0).leader().id();
        String[] dir = new String[1];
        step("describeLogDirs", () -> {
            Map<String, LogDirDescription> dirs = get(admin.describeLogDirs(List.of(leader)).allDescriptions())
                .get(leader);
            dir[0] = dirs.keySet().iterator().next();
            boolean holds = dirs.values().iterator().next().replicaInfos().containsKey(TP0);
            return "dirs=" + dirs.size() + " " + TP0 + "=" + holds;
        });
        TopicPartitionReplica replica = new TopicPartitionReplica(TOPIC, 0, leader);
        step("describeReplicaLogDirs", () -> {
            DescribeReplicaLogDirsResult.ReplicaLogDirInfo info =
                get(admin.describeReplicaLogDirs(List.of(replica)).all()).get(replica);
            return "current=" + dir[0].equals(info.getCurrentReplicaLogDir())
                + " future=" + info.getFutureReplicaLogDir();
        });
        step("alterReplicaLogDirs", () -> {
            get(admin.alterReplicaLogDirs(Map.of(replica, dir[0])).all());
            return "same dir";
        });
        step("alterPartitionReassignments", () -> {
            get(admin.alterPartitionReassignments(Map.of(TP0, Optional.of(
                new NewPartitionReassignment(List.of(leader))))).all());
            return "to the leader";
        });
        step("listPartitionReassignments", () -> get(admin.listPartitionReassignments().reassignments()).size());
        step("electLeaders", () -> {
            var r = get(admin.electLeaders(ElectionType.PREFERRED, Set.of(TP0)).partitions()).get(TP0);
            return r.map(t -> t.getClass().getSimpleName()).orElse("elected");
        });

        // ---- a classic group with a static member (left behind by close) and its offsets
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
        cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        cp.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "tour-static");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "45000");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of(TOPIC));
            long deadline = System.currentTimeMillis() + TIMEOUT_S * 1000;
            while (c.assignment().isEmpty() && System.currentTimeMillis() < deadline) c.poll(Duration.ofMillis(100));
            c.commitSync(Map.of(TP0, new OffsetAndMetadata(3)));
        }
        step("listConsumerGroups", () -> get(admin.listConsumerGroups().all()).stream()
             .map(g -> g.groupId()).filter(g -> g.startsWith("tour")).sorted().collect(Collectors.toList()));
        step("listGroups", () -> get(admin.listGroups().all()).stream().filter(g -> g.groupId().startsWith("tour"))
             .map(g -> g.groupId() + ":" + g.type().map(Object::toString).orElse("?")).sorted()
             .collect(Collectors.toList()));
        step("describeConsumerGroups", () -> {
            ConsumerGroupDescription d = get(admin.describeConsumerGroups(List.of(GROUP)).all()).get(GROUP);
            return d.groupState() + " " + d.type() + " members=" + d.members().size();
        });
        step("describeClassicGroups", () -> {
            ClassicGroupDescription d = get(admin.describeClassicGroups(List.of(GROUP)).all()).get(GROUP);
            return d.state() + " " + d.protocol() + " members=" + d.members().size();
        });
        step("removeMembersFromConsumerGroup", () -> {
            get(admin.removeMembersFromConsumerGroup(GROUP, new RemoveMembersFromConsumerGroupOptions(
                List.of(new MemberToRemove("tour-static")))).all());
            return get(admin.describeConsumerGroups(List.of(GROUP)).all()).get(GROUP).groupState();
        });
        step("alterConsumerGroupOffsets", () -> {
            get(admin.alterConsumerGroupOffsets(GROUP, Map.of(TP0, new OffsetAndMetadata(4),
                new TopicPartition(TOPIC, 2), new OffsetAndMetadata(1))).all());
            return "2 partitions";
        });
        step("listConsumerGroupOffsets", () -> new TreeMap<>(get(admin.listConsumerGroupOffsets(Map.of(GROUP,
                new ListConsumerGroupOffsetsSpec())).partitionsToOffsetAndMetadata(GROUP)).entrySet().stream()
            .collect(Collectors.toMap(e -> e.getKey().toString(), e -> e.getValue().offset()))));
        step("deleteConsumerGroupOffsets", () -> {
            get(admin.deleteConsumerGroupOffsets(GROUP, Set.of(TP0)).all());
            return TP0;
        });
        step("deleteConsumerGroups", () -> {
            get(admin.deleteConsumerGroups(List.of(GROUP)).all());
            return GROUP;
        });

        // ---- share groups
        step("alterShareGroupOffsets", () -> {
            get(admin.alterShareGroupOffsets(SHARE, Map.of(TP0, 2L)).all());
            return "1 partition";
        });
        step("describeShareGroups", () -> {
            ShareGroupDescription d = get(admin.describeShareGroups(List.of(SHARE)).all()).get(SHARE);
            return d.groupState() + " members=" + d.members().size();
        });
        step("listShareGroupOffsets", () -> new TreeMap<>(get(admin.listShareGroupOffsets(Map.of(SHARE,
                new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(SHARE)).entrySet().stream()
            .collect(Collectors.toMap(e -> e.getKey().toString(),
                                      e -> e.getValue() == null ? -1L : e.getValue().startOffset()))));
        step("deleteShareGroupOffsets", () -> {
            get(admin.deleteShareGroupOffsets(SHARE, Set.of(TOPIC)).all());
            return TOPIC;
        });
        step("deleteShareGroups", () -> {
            get(admin.deleteShareGroups(List.of(SHARE)).all());
            return SHARE;
        });

        // ---- streams groups: a Kafka Streams app (group.protocol=streams) joins, then closes (leaving)
        Properties sp = new Properties();
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, STREAMS);
        sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        sp.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        sp.put(StreamsConfig.STATE_DIR_CONFIG, java.nio.file.Files.createTempDirectory("tour-streams").toString());
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(TOPIC, Consumed.with(Serdes.String(), Serdes.String())).foreach((k, v) -> { });
        try (KafkaStreams streams = new KafkaStreams(builder.build(), sp)) {
            streams.start();
            step("describeStreamsGroups", () -> {  // once the app's member joined with its topology
                StreamsGroupDescription d = await(
                    () -> get(admin.describeStreamsGroups(List.of(STREAMS)).all()).get(STREAMS),
                    g -> g.members().size() == 1 && g.subtopologies().size() == 1);
                return "members=" + d.members().size() + " subtopologies=" + d.subtopologies().size();
            });
            streams.close(Duration.ofSeconds(TIMEOUT_S));
        }
        step("alterStreamsGroupOffsets", () -> {
            get(admin.alterStreamsGroupOffsets(STREAMS, Map.of(TP0, new OffsetAndMetadata(2))).all());
            return "1 partition";
        });
        step("listStreamsGroupOffsets", () -> get(admin.listStreamsGroupOffsets(Map.of(STREAMS,  // tour-0 altered
                new ListStreamsGroupOffsetsSpec())).partitionsToOffsetAndMetadata(STREAMS)).get(TP0).offset());
        step("deleteStreamsGroupOffsets", () -> {
            get(admin.deleteStreamsGroupOffsets(STREAMS, Set.of(TP0)).all());
            return TP0;
        });
        step("deleteStreamsGroups", () -> {
            get(admin.deleteStreamsGroups(List.of(STREAMS)).all());
            return STREAMS;
        });

        // ---- client quotas and SCRAM credentials
        ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, "tour-client"));
        step("alterClientQuotas", () -> {
            get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
                List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0))))).all());
            return "producer_byte_rate";
        });
        step("describeClientQuotas", () -> await(() -> get(admin.describeClientQuotas(ClientQuotaFilter.all())
             .entities()).get(entity), q -> q != null));
        step("alterUserScramCredentials", () -> {
            get(admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(USER,
                new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "tour-secret"))).all());
            return USER;
        });
        step("describeUserScramCredentials", () -> get(admin.describeUserScramCredentials(List.of(USER))
             .description(USER)).credentialInfos());

        // ---- client telemetry: without a metrics reporter a broker does not advertise
        // GetTelemetrySubscriptions, so the id is null (KIP-714) once the wait is over (the whole wait)
        step("clientInstanceId", () -> String.valueOf(admin.clientInstanceId(Duration.ofMillis(200))));

        // ---- refused by Kafka without an authorizer, SASL or plugin, or no request at all
        skip("describeAcls", "SecurityDisabledException without an authorizer");
        skip("createAcls", "SecurityDisabledException without an authorizer");
        skip("deleteAcls", "SecurityDisabledException without an authorizer");
        skip("createDelegationToken", "needs a SASL (non-token) authenticated connection");
        skip("renewDelegationToken", "needs a SASL (non-token) authenticated connection");
        skip("expireDelegationToken", "needs a SASL (non-token) authenticated connection");
        skip("describeDelegationToken", "needs a SASL (non-token) authenticated connection");
        skip("registerMetricForSubscription", "no request: client telemetry only");
        skip("unregisterMetricFromSubscription", "no request: client telemetry only");
        skip("metrics", "no request: the client's own metrics");
        skip("close", "no request");

        // ---- last: membership changes
        int last = brokerIds.get(brokerIds.size() - 1);
        skip("unregisterController", "Kafka refuses the active controller, a single node's only one");
        step("unregisterBroker", () -> {
            get(admin.unregisterBroker(last).all());
            return "the highest id";
        });
    }
}
