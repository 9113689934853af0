// A step between Kafka's tool runs in one CliTools JVM (tests/integration/test_acl_clients.py): waits
// (10 s at most) until DescribeAcls answers <n> bindings, as Kafka's broker applies new ACLs only once
// it has replayed the controller's records (mockbroker: at once).  Prints nothing when it got there,
// else the count it last saw.  Usage (a CliTools run):
//   @@ WaitAcls
//   <n>
//   <bootstrap-servers>
//   <admin client properties file>

import java.io.FileInputStream;
import java.io.InputStream;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.acl.AclBindingFilter;

public class WaitAcls {
    public static void main(String[] args) throws Exception {
        int expected = Integer.parseInt(args[0]);
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[2])) {
            props.load(in);
        }
        props.put("bootstrap.servers", args[1]);
        long deadline = System.currentTimeMillis() + 10_000;
        try (Admin admin = Admin.create(props)) {
            while (true) {
                int n = admin.describeAcls(AclBindingFilter.ANY).values().get(30, TimeUnit.SECONDS).size();
                if (n == expected) {
                    return;
                }
                if (System.currentTimeMillis() > deadline) {
                    System.out.println("DescribeAcls answers " + n + " bindings, not " + expected);
                    return;
                }
                Thread.sleep(100);
            }
        }
    }
}
