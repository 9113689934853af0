// A step between Kafka's tool runs in one CliTools JVM (tests/integration/test_kafka_cli_tools.py):
// waits (10 s at most) until DescribeConfigs of broker <id> answers <key>=<value>, as Kafka's broker
// takes a dynamic broker config into its live configuration a moment after the alteration returns
// (its synonyms show the new value first; mockbroker: at once).  Prints nothing when it got there,
// else the value it last saw.  Usage (a CliTools run):
//   @@ WaitConfig
//   <bootstrap-servers>
//   <broker id>
//   <key>
//   <value>

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.common.config.ConfigResource;

public class WaitConfig {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, args[1]);
        long deadline = System.currentTimeMillis() + 10_000;
        try (Admin admin = Admin.create(props)) {
            while (true) {
                Map<ConfigResource, Config> got = admin.describeConfigs(List.of(broker)).all().get(30, TimeUnit.SECONDS);
                String value = got.get(broker).get(args[2]).value();
                if (args[3].equals(value)) {
                    return;
                }
                if (System.currentTimeMillis() > deadline) {
                    System.out.println(args[2] + "=" + value + ", not " + args[3]);
                    return;
                }
                Thread.sleep(100);
            }
        }
    }
}
