// Kafka's Java Admin client (kafka-clients 4.4.0) changing the cluster's membership, as
// kafka-cluster unregister and kafka-metadata-quorum add-controller/remove-controller do
// (Admin.unregisterBroker, addRaftVoter, removeRaftVoter). Driven by
// tests/integration/test_cluster_ops_clients.py; usage:
//   java ClusterMembership <bootstrap-servers> unregister <broker id>
//     UNREGISTER 7: <exception class>: <message>      (a broker that never was)
//     UNREGISTER <id>: OK | <exception class>: <message>
//   java ClusterMembership <bootstrap-servers> voters <voter id>
//     REMOVE <id>: <exception class>: <message>       (kraft.version 0, the static quorum)
//     KRAFT 1: OK                                     (UpdateFeatures kraft.version to 1)
//     REMOVE <id>: OK
//     QUORUM voters=[...] observers=[...]
//     ADD <lowest voter>: <exception class>: <message>   (already a voter)
//     ADD <id>: OK                                    (its directory id, on listener CONTROLLER)
//     QUORUM voters=[...] observers=[...]
//   DONE

import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RaftVoterEndpoint;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Uuid;

public class ClusterMembership {
    private static final long TIMEOUT_S = 30;

    private static String outcome(KafkaFuture<Void> f) throws Exception {
        try {
            f.get(TIMEOUT_S, TimeUnit.SECONDS);
            return "OK";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
        }
    }

    private static QuorumInfo quorum(Admin admin) throws Exception {
        return admin.describeMetadataQuorum().quorumInfo().get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    private static String ids(java.util.List<QuorumInfo.ReplicaState> replicas) {
        return replicas.stream().map(r -> r.replicaId()).sorted().map(String::valueOf)
            .collect(Collectors.joining(", ", "[", "]"));
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], mode = args[1];
        int id = Integer.parseInt(args[2]);
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            if (mode.equals("unregister")) {
                System.out.println("UNREGISTER 7: " + outcome(admin.unregisterBroker(7).all()));
                System.out.println("UNREGISTER " + id + ": " + outcome(admin.unregisterBroker(id).all()));
            } else {
                System.out.println("REMOVE " + id + ": " + outcome(admin.removeRaftVoter(id, Uuid.randomUuid()).all()));
                System.out.println("KRAFT 1: " + outcome(admin.updateFeatures(
                    Map.of("kraft.version", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                    new UpdateFeaturesOptions()).all()));
                QuorumInfo before = quorum(admin);
                Map<Integer, Uuid> dirs = before.voters().stream()
                    .collect(Collectors.toMap(QuorumInfo.ReplicaState::replicaId, QuorumInfo.ReplicaState::replicaDirectoryId));
                QuorumInfo.Node node = before.nodes().get(id);
                RaftVoterEndpoint endpoint = node.endpoints().get(0);  // CONTROLLER
                System.out.println("REMOVE " + id + ": " + outcome(admin.removeRaftVoter(id, dirs.get(id)).all()));
                QuorumInfo after = quorum(admin);
                System.out.println("QUORUM voters=" + ids(after.voters()) + " observers=" + ids(after.observers()));
                int lowest = after.voters().stream().mapToInt(QuorumInfo.ReplicaState::replicaId).min().orElseThrow();
                System.out.println("ADD " + lowest + ": "
                    + outcome(admin.addRaftVoter(lowest, dirs.get(lowest), Set.of(endpoint)).all()));
                System.out.println("ADD " + id + ": " + outcome(admin.addRaftVoter(id, dirs.get(id), Set.of(endpoint)).all()));
                QuorumInfo back = quorum(admin);
                System.out.println("QUORUM voters=" + ids(back.voters()) + " observers=" + ids(back.observers()));
            }
        }
        System.out.println("DONE");
    }
}
