// Several runs of one of Kafka's command-line tools in one JVM (a JVM start is ~1.5 s on the CI
// machine): each run is the tool's main(args) as bin/<tool>.sh would call it, with Kafka's
// Exit.exit turned into an exception so the batch goes on, and its stdout captured.  Compiled
// against kafka-clients; run with Kafka's tools on the classpath (tests/integration/realkafka.py's
// kafka_classpath).  Driven by tests/integration/test_acl_clients.py; usage:
//   java ToolBatch <main-class> <args of run 1...> -- <args of run 2...> -- ...
// A run "@wait-acls <n> <bootstrap-servers> <admin.properties>" is not the tool: it waits (10 s at
// most) until DescribeAcls answers n bindings, as Kafka's broker applies new ACLs only once it has
// replayed the controller's records.
//
// Output per run: "=== run <i> exit <code>", then what the run printed to stdout.

import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.utils.internals.Exit;

public class ToolBatch {
    /** Kafka's Exit.exit from inside a run. */
    static final class ToolExit extends RuntimeException {
        final int code;

        ToolExit(int code) {
            super("exit " + code, null, false, false);
            this.code = code;
        }
    }

    private static int waitAcls(String[] args) throws Exception {
        int expected = Integer.parseInt(args[1]);
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[3])) {
            props.load(in);
        }
        props.put("bootstrap.servers", args[2]);
        long deadline = System.currentTimeMillis() + 10_000;
        try (Admin admin = Admin.create(props)) {
            while (true) {
                int n = admin.describeAcls(AclBindingFilter.ANY).values().get(30, TimeUnit.SECONDS).size();
                if (n == expected) {
                    return 0;
                }
                if (System.currentTimeMillis() > deadline) {
                    System.out.println("DescribeAcls answers " + n + " bindings, not " + expected);
                    return 1;
                }
                Thread.sleep(100);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Method main = Class.forName(args[0]).getMethod("main", String[].class);
        List<List<String>> runs = new ArrayList<>();
        runs.add(new ArrayList<>());
        for (String a : Arrays.asList(args).subList(1, args.length)) {
            if (a.equals("--")) {
                runs.add(new ArrayList<>());
            } else {
                runs.get(runs.size() - 1).add(a);
            }
        }
        Exit.setExitProcedure((code, message) -> {
            throw new ToolExit(code);
        });
        PrintStream stdout = System.out;
        for (int i = 0; i < runs.size(); i++) {
            String[] run = runs.get(i).toArray(new String[0]);
            ByteArrayOutputStream captured = new ByteArrayOutputStream();
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            int code = 0;
            try {
                if (run.length > 0 && run[0].equals("@wait-acls")) {
                    code = waitAcls(run);
                } else {
                    main.invoke(null, (Object) run);
                }
            } catch (InvocationTargetException e) {
                if (e.getCause() instanceof ToolExit) {
                    code = ((ToolExit) e.getCause()).code;
                } else {
                    code = 99;
                    e.getCause().printStackTrace(System.out);
                }
            } finally {
                System.out.flush();
                System.setOut(stdout);
            }
            stdout.println("=== run " + i + " exit " + code);
            stdout.print(captured.toString(StandardCharsets.UTF_8));
        }
        stdout.flush();
        System.exit(0); // the tools' threads are not ours to wait for
    }
}
