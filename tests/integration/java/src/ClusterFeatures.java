// Kafka's Java Admin client (kafka-clients 4.4.0) reading and changing the cluster's features and
// describing its controller quorum, as kafka-features and kafka-metadata-quorum do
// (Admin.describeFeatures / updateFeatures / describeMetadataQuorum). Driven by
// tests/integration/test_cluster_ops_clients.py; usage: java ClusterFeatures <bootstrap-servers>...
// (one JVM for every cluster named, each in turn).
//
// Output per cluster, one line per fact (features sorted):
//   CLUSTER <bootstrap>
//   EPOCH <finalized features epoch>
//   SUPPORTED <name> <min>-<max>
//   FINALIZED <name> <level>
//   UPDATE <name>=<level> <upgrade type> [validate]: OK | <exception class>: <message>
//   AFTER <name> <level>  (the finalized level once the updates ran)
//   QUORUM leader=<id> epoch=<epoch> hw=<high watermark> voters=<ids> observers=<ids>
//   VOTER <id> leo=<log end offset> fetched=<whether a last fetch time is known>
//   NODE <id> <listener>
//   DONE

import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RaftVoterEndpoint;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;

public class ClusterFeatures {
    private static final long TIMEOUT_S = 30;

    private static void update(Admin admin, String name, int level, FeatureUpdate.UpgradeType type, boolean validate)
            throws InterruptedException {
        String what = "UPDATE " + name + "=" + level + " " + type + (validate ? " validate" : "") + ": ";
        try {
            admin.updateFeatures(Map.of(name, new FeatureUpdate((short) level, type)),
                                 new UpdateFeaturesOptions().validateOnly(validate)).all().get(TIMEOUT_S, TimeUnit.SECONDS);
            System.out.println(what + "OK");
        } catch (ExecutionException e) {
            System.out.println(what + e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
        } catch (java.util.concurrent.TimeoutException e) {
            System.out.println(what + "TIMEOUT");
        }
    }

    private static void cluster(String bootstrap) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "25000");
        System.out.println("CLUSTER " + bootstrap);
        try (Admin admin = Admin.create(props)) {
            FeatureMetadata fm = admin.describeFeatures().featureMetadata().get(TIMEOUT_S, TimeUnit.SECONDS);
            System.out.println("EPOCH " + fm.finalizedFeaturesEpoch().orElse(-1L));
            new TreeMap<>(fm.supportedFeatures()).forEach((n, r) ->
                System.out.println("SUPPORTED " + n + " " + r.minVersion() + "-" + r.maxVersion()));
            new TreeMap<>(fm.finalizedFeatures()).forEach((n, r) ->
                System.out.println("FINALIZED " + n + " " + r.maxVersionLevel()));

            update(admin, "transaction.version", 1, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE, false);
            update(admin, "share.version", 0, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE, true);
            update(admin, "transaction.version", 3, FeatureUpdate.UpgradeType.UPGRADE, false);
            update(admin, "share.version", 1, FeatureUpdate.UpgradeType.UPGRADE, false);
            update(admin, "metadata.version", 14, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE, false);
            update(admin, "no.such.feature", 1, FeatureUpdate.UpgradeType.UPGRADE, false);
            // the broker's view follows the controller's (a real broker after its metadata catches up)
            String after = "";
            for (int i = 0; i < 50; i++) {
                fm = admin.describeFeatures().featureMetadata().get(TIMEOUT_S, TimeUnit.SECONDS);
                after = fm.finalizedFeatures().get("transaction.version").maxVersionLevel()
                        + " " + fm.finalizedFeatures().get("share.version").maxVersionLevel();
                if (after.startsWith("1 ")) break;
                Thread.sleep(100);
            }
            System.out.println("AFTER transaction.version share.version " + after);
            update(admin, "transaction.version", 2, FeatureUpdate.UpgradeType.UPGRADE, false);

            QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get(TIMEOUT_S, TimeUnit.SECONDS);
            System.out.println("QUORUM leader=" + q.leaderId() + " epoch=" + q.leaderEpoch() + " hw=" + q.highWatermark()
                + " voters=" + q.voters().stream().map(v -> String.valueOf(v.replicaId())).collect(Collectors.joining(","))
                + " observers=" + q.observers().stream().map(v -> String.valueOf(v.replicaId())).collect(Collectors.joining(",")));
            for (QuorumInfo.ReplicaState v : q.voters()) {
                System.out.println("VOTER " + v.replicaId() + " leo=" + v.logEndOffset()
                    + " fetched=" + v.lastFetchTimestamp().isPresent());
            }
            new TreeMap<>(q.nodes()).forEach((id, node) -> {
                for (RaftVoterEndpoint e : node.endpoints()) {
                    System.out.println("NODE " + id + " " + e.listener() + " " + e.host() + ":" + e.port());
                }
            });
        }
    }

    public static void main(String[] args) throws Exception {
        for (String bootstrap : args) {
            cluster(bootstrap);
        }
        System.out.println("DONE");
    }
}
