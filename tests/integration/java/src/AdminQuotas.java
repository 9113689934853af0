// Kafka's Java Admin client setting and reading client quotas on mockbroker, as
// `kafka-configs --alter --add-config producer_byte_rate=... --entity-type clients` does
// (Admin.alterClientQuotas / Admin.describeClientQuotas). Driven by
// tests/integration/test_java_admin_quotas.py; usage: java AdminQuotas <bootstrap-servers>
//
// Output, one line per fact (entities and quota keys sorted, so it is deterministic):
//   DESCRIBE all
//   ENTITY client-id=java-app consumer_byte_rate=2048.0 producer_byte_rate=1024.0
//   ENTITY user=<default> request_percentage=50.0
//   INVALID InvalidRequestException: <broker's message>
//   DESCRIBE client-id=java-app
//   ENTITY client-id=java-app producer_byte_rate=1024.0
//   DONE

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

public class AdminQuotas {
    private static final long TIMEOUT_S = 30;

    private static ClientQuotaEntity entity(String type, String name) {
        // a null name is the default entity (<default> in kafka-configs)
        Map<String, String> m = new HashMap<>();
        m.put(type, name);
        return new ClientQuotaEntity(m);
    }

    private static String format(ClientQuotaEntity e, Map<String, Double> values) {
        StringBuilder sb = new StringBuilder("ENTITY");
        for (Map.Entry<String, String> kv : new TreeMap<>(e.entries()).entrySet()) {
            String name = kv.getValue() == null ? "<default>" : kv.getValue();
            sb.append(' ').append(kv.getKey()).append('=').append(name);
        }
        for (Map.Entry<String, Double> kv : new TreeMap<>(values).entrySet()) {
            sb.append(' ').append(kv.getKey()).append('=').append(kv.getValue());
        }
        return sb.toString();
    }

    private static void describe(Admin admin, String label, ClientQuotaFilter filter) throws Exception {
        Map<ClientQuotaEntity, Map<String, Double>> result =
            admin.describeClientQuotas(filter).entities().get(TIMEOUT_S, TimeUnit.SECONDS);
        System.out.println("DESCRIBE " + label);
        List<String> lines = new ArrayList<>();
        for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e : result.entrySet()) {
            lines.add(format(e.getKey(), e.getValue()));
        }
        Collections.sort(lines);
        for (String line : lines) {
            System.out.println(line);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: AdminQuotas <bootstrap-servers>");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "mockbroker-admin-quotas");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");

        try (Admin admin = Admin.create(props)) {
            ClientQuotaEntity javaApp = entity(ClientQuotaEntity.CLIENT_ID, "java-app");
            ClientQuotaEntity defaultUser = entity(ClientQuotaEntity.USER, null);

            // 1. set quotas on two entities in one AlterClientQuotas request
            admin.alterClientQuotas(List.of(
                new ClientQuotaAlteration(javaApp, List.of(
                    new ClientQuotaAlteration.Op("producer_byte_rate", 1024.0),
                    new ClientQuotaAlteration.Op("consumer_byte_rate", 2048.0))),
                new ClientQuotaAlteration(defaultUser, List.of(
                    new ClientQuotaAlteration.Op("request_percentage", 50.0)))
            )).all().get(TIMEOUT_S, TimeUnit.SECONDS);

            // 2. read everything back
            describe(admin, "all", ClientQuotaFilter.all());

            // 3. a byte rate must be a whole number: the broker rejects the entity
            try {
                admin.alterClientQuotas(List.of(
                    new ClientQuotaAlteration(javaApp, List.of(
                        new ClientQuotaAlteration.Op("producer_byte_rate", 1.5))))
                ).values().get(javaApp).get(TIMEOUT_S, TimeUnit.SECONDS);
                System.out.println("INVALID accepted");
                System.exit(1);
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                System.out.println("INVALID " + cause.getClass().getSimpleName() + ": " + cause.getMessage());
            }

            // 4. remove one key (a null value) and read back that entity only
            admin.alterClientQuotas(List.of(
                new ClientQuotaAlteration(javaApp, List.of(
                    new ClientQuotaAlteration.Op("consumer_byte_rate", null))))
            ).all().get(TIMEOUT_S, TimeUnit.SECONDS);
            describe(admin, "client-id=java-app", ClientQuotaFilter.containsOnly(
                List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, "java-app"))));
        }
        System.out.println("DONE");
        System.out.flush();
        System.exit(0);
    }
}
