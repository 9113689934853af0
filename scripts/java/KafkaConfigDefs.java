/*
 * What Kafka's own classes say about its configurations, as JSON on stdout: for the topic (LogConfig),
 * broker (AbstractKafkaConfig.CONFIG_DEF), group (GroupConfig) and client-metrics (ClientMetricsConfigs)
 * config definitions each key's type, default (as DescribeConfigs prints it), validator, importance and
 * whether it is internal; the dynamic broker configs and their update mode (DynamicBrokerConfig), the
 * broker synonyms of each broker and topic config (DynamicBrokerConfig.brokerConfigSynonyms,
 * ServerTopicConfigSynonyms with their unit conversions) and of each group config (GroupConfig).
 * The keys of each definition are in its own order (the order ConfigDef.parse validates them in).
 *
 * Run by scripts/record_kafka_configs.py in Java's source-file mode against a Kafka release's classpath:
 *   java -cp "$(cat bench/realkafka/cp-4.4.0.txt)" scripts/java/KafkaConfigDefs.java > defs.json
 */

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.coordinator.group.GroupConfig;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.config.ConfigSynonym;
import org.apache.kafka.server.config.DynamicBrokerConfig;
import org.apache.kafka.server.config.ServerTopicConfigSynonyms;
import org.apache.kafka.server.metrics.ClientMetricsConfigs;
import org.apache.kafka.storage.internals.log.LogConfig;

public class KafkaConfigDefs {
    static Map<String, Object> keys(ConfigDef def) {
        Map<String, Object> out = new LinkedHashMap<>();  // in definition order, as ConfigDef.parse walks them
        for (ConfigDef.ConfigKey key : def.configKeys().values()) {
            Map<String, Object> k = new LinkedHashMap<>();
            k.put("type", key.type.name());
            k.put("default", key.hasDefault() ? ConfigDef.convertToString(key.defaultValue, key.type) : null);
            k.put("has_default", key.hasDefault());
            k.put("validator", key.validator == null ? null : key.validator.toString());
            k.put("importance", key.importance == null ? null : key.importance.name());
            k.put("internal", key.internalConfig);
            out.put(key.name, k);
        }
        return out;
    }

    static String converter(ConfigSynonym s) {
        if (s.converter() == ConfigSynonym.HOURS_TO_MILLISECONDS) return "hours";
        if (s.converter() == ConfigSynonym.MINUTES_TO_MILLISECONDS) return "minutes";
        return "identity";
    }

    public static void main(String[] args) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("topic", keys(LogConfig.configDefCopy()));
        out.put("broker", keys(AbstractKafkaConfig.CONFIG_DEF));
        out.put("group", keys(GroupConfig.CONFIG_DEF));
        out.put("client_metrics", keys(ClientMetricsConfigs.configDef()));
        out.put("dynamic_update_modes", new TreeMap<>(DynamicBrokerConfig.dynamicConfigUpdateModes()));
        Map<String, Object> brokerSynonyms = new TreeMap<>();
        for (String name : AbstractKafkaConfig.CONFIG_DEF.names()) {
            List<String> syn = DynamicBrokerConfig.brokerConfigSynonyms(name, true);
            if (syn.size() > 1 || !syn.get(0).equals(name)) brokerSynonyms.put(name, syn);
        }
        out.put("broker_synonyms", brokerSynonyms);
        Map<String, Object> topicSynonyms = new TreeMap<>();
        for (Map.Entry<String, List<ConfigSynonym>> e : ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS.entrySet()) {
            List<List<String>> list = new ArrayList<>();
            for (ConfigSynonym s : e.getValue()) list.add(List.of(s.name(), converter(s)));
            topicSynonyms.put(e.getKey(), list);
        }
        out.put("topic_synonyms", topicSynonyms);
        Map<String, Object> groupSynonyms = new TreeMap<>();
        for (Map.Entry<String, Optional<String>> e : GroupConfig.ALL_GROUP_CONFIG_SYNONYMS.entrySet()) {
            groupSynonyms.put(e.getKey(), e.getValue().orElse(null));
        }
        out.put("group_synonyms", groupSynonyms);
        ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        System.out.println(mapper.writeValueAsString(out));
    }
}
