import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.utils.internals.Exit;

/**
 * Kafka's command-line tools, many runs in one JVM (tests/integration/test_kafka_cli_tools.py): each run
 * calls a tool's main class as its bin/ script would, with Exit's exit and halt procedures throwing
 * instead of ending the JVM, and System.out/System.err captured for that run alone.
 *
 * The script file (the one argument) holds the runs: a line "@@ <main class>" starts one, each following
 * line is one of its arguments.  The transcript on stdout, per run:
 *   #### RUN <n> EXIT <code>
 *   #### OUT        (the run's stdout follows)
 *   #### ERR        (its stderr follows)
 *   #### END
 * The exit code is the first one the tool asked for (0 when main returned without asking).
 */
public class CliTools {
    static final class ExitCalled extends RuntimeException {
        final int code;

        ExitCalled(int code) {
            super("Exit.exit(" + code + ")", null, false, false);
            this.code = code;
        }
    }

    static Integer firstExit;

    /** ``text`` as the next lines of the transcript (a newline added when it lacks its last). */
    static void print(PrintStream to, String text) {
        to.print(text);
        if (!text.isEmpty() && !text.endsWith("\n")) {
            to.println();
        }
    }

    public static void main(String[] args) throws Exception {
        List<String> main = new ArrayList<>();
        List<List<String>> runArgs = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            if (line.startsWith("@@ ")) {
                main.add(line.substring(3).trim());
                runArgs.add(new ArrayList<>());
            } else if (!runArgs.isEmpty()) {
                runArgs.get(runArgs.size() - 1).add(line);
            }
        }
        Exit.Procedure thrower = (code, message) -> {
            if (firstExit == null) {
                firstExit = code;
            }
            throw new ExitCalled(code);
        };
        Exit.setExitProcedure(thrower);
        Exit.setHaltProcedure(thrower);
        PrintStream realOut = System.out, realErr = System.err;
        for (int n = 0; n < main.size(); n++) {
            ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
            PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
            System.setOut(o);
            System.setErr(e);
            firstExit = null;
            try {
                Method m = Class.forName(main.get(n)).getMethod("main", String[].class);
                m.invoke(null, (Object) runArgs.get(n).toArray(new String[0]));
            } catch (InvocationTargetException ex) {
                if (!(ex.getCause() instanceof ExitCalled)) {
                    ex.getCause().printStackTrace(e);
                    if (firstExit == null) {
                        firstExit = 99;
                    }
                }
            } finally {
                o.flush();
                e.flush();
                System.setOut(realOut);
                System.setErr(realErr);
            }
            int code = firstExit == null ? 0 : firstExit;
            realOut.println("#### RUN " + n + " EXIT " + code);
            realOut.println("#### OUT");
            print(realOut, out.toString(StandardCharsets.UTF_8));
            realOut.println("#### ERR");
            // a tool that catches Throwable prints the exception that stands for its Exit.exit call
            print(realOut, err.toString(StandardCharsets.UTF_8)
                .replaceAll("(?m)^(Exit\\.exit\\(-?\\d+\\)|CliTools\\$ExitCalled: .*)\\R", ""));
            realOut.println("#### END");
            realOut.flush();
        }
        Exit.resetExitProcedure();
        Exit.resetHaltProcedure();
        // the tools' admin clients may leave non-daemon threads behind an early exit
        Runtime.getRuntime().halt(0);
    }
}
