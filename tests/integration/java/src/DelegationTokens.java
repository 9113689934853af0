// Kafka's Java Admin client with delegation tokens (KIP-48), the same steps against any broker that
// has SASL/PLAIN users admin (a super user), bob, carol and dave, SCRAM-SHA-256 on the same listener
// with a SCRAM user erin (when erin's password is given), and delegation.token.secret.key set. Driven by tests/integration/test_acl_clients.py, which runs it
// against mockbroker and a Kafka 4.4.0 and compares the output; usage:
//   java DelegationTokens <bootstrap-servers> <user>:<password>...
//
// One line per client-visible outcome, with nothing that differs between brokers (no token ids,
// HMACs or timestamps; lifetimes as differences of timestamps):
//   create bob: owner=User:bob requester=User:bob renewers=[User:carol] life=3600000 expires=3600000
//   renew dave: DelegationTokenOwnerMismatchException
//   ...
//   DONE

import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.HashMap;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.security.token.delegation.TokenInformation;

public class DelegationTokens {
    private static final long TIMEOUT_S = 30;
    private static final long WAIT_MS = 10_000; // a token Kafka's broker has not replayed yet: retried this long
    private static String bootstrap;
    private static final Map<String, String> passwords = new HashMap<>();
    private static final Map<String, Admin> admins = new HashMap<>();
    private static final List<Admin> opened = new ArrayList<>();

    private static Admin open(String jaas, String mechanism) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "mockbroker-delegation-tokens");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        props.put("security.protocol", "SASL_PLAINTEXT");
        props.put("sasl.mechanism", mechanism);
        props.put("sasl.jaas.config", jaas);
        Admin admin = Admin.create(props);
        opened.add(admin);
        return admin;
    }

    /** An Admin logged in with SASL/PLAIN as ``user`` (one per user). */
    private static Admin as(String user) {
        return admins.computeIfAbsent(user, u -> open(
            "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + u
                + "\" password=\"" + passwords.get(u) + "\";", "PLAIN"));
    }

    /** An Admin logged in with SASL/SCRAM-SHA-256 as ``user`` with ``password``. */
    private static Admin scram(String user, String password) {
        return open("org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + user
            + "\" password=\"" + password + "\";", "SCRAM-SHA-256");
    }

    /** An Admin logged in with SASL/SCRAM-SHA-256 with ``token`` (tokenauth=true). */
    private static Admin withToken(DelegationToken token) {
        return open("org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
            + token.tokenInfo().tokenId() + "\" password=\"" + token.hmacAsBase64String()
            + "\" tokenauth=\"true\";", "SCRAM-SHA-256");
    }

    private static String error(Throwable e) {
        Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        return cause.getClass().getSimpleName();
    }

    private static String describe(TokenInformation info) {
        List<String> renewers = new ArrayList<>();
        for (KafkaPrincipal p : info.renewers()) {
            renewers.add(p.toString());
        }
        Collections.sort(renewers);
        return "owner=" + info.owner() + " requester=" + info.tokenRequester() + " renewers=" + renewers;
    }

    private static DelegationToken create(String label, String user, CreateDelegationTokenOptions options) {
        try {
            DelegationToken token = as(user).createDelegationToken(options).delegationToken()
                .get(TIMEOUT_S, TimeUnit.SECONDS);
            TokenInformation info = token.tokenInfo();
            System.out.println("create " + label + ": " + describe(info)
                + " life=" + (info.maxTimestamp() - info.issueTimestamp())
                + " expires=" + (info.expiryTimestamp() - info.issueTimestamp()));
            return token;
        } catch (Exception e) {
            System.out.println("create " + label + ": " + error(e));
            return null;
        }
    }

    private static void describeAs(String label, Admin admin, List<KafkaPrincipal> owners) {
        try {
            List<DelegationToken> tokens = admin.describeDelegationToken(
                new DescribeDelegationTokenOptions().owners(owners)).delegationTokens().get(TIMEOUT_S, TimeUnit.SECONDS);
            List<String> lines = new ArrayList<>();
            for (DelegationToken t : tokens) {
                lines.add("[" + describe(t.tokenInfo()) + "]");
            }
            Collections.sort(lines);
            System.out.println("describe " + label + ": " + lines);
        } catch (Exception e) {
            System.out.println("describe " + label + ": " + error(e));
        }
    }

    private static void renew(String label, String user, byte[] hmac) {
        try {
            as(user).renewDelegationToken(hmac, new RenewDelegationTokenOptions().renewTimePeriodMs(60_000))
                .expiryTimestamp().get(TIMEOUT_S, TimeUnit.SECONDS);
            System.out.println("renew " + label + ": NONE");
        } catch (Exception e) {
            System.out.println("renew " + label + ": " + error(e));
        }
    }

    private static void expire(String label, String user, byte[] hmac, long period) {
        try {
            as(user).expireDelegationToken(hmac, new ExpireDelegationTokenOptions().expiryTimePeriodMs(period))
                .expiryTimestamp().get(TIMEOUT_S, TimeUnit.SECONDS);
            System.out.println("expire " + label + ": NONE");
        } catch (Exception e) {
            System.out.println("expire " + label + ": " + error(e));
        }
    }

    /** Wait (WAIT_MS at most) until the super user's describe lists ``token`` or not: Kafka's broker
     *  knows of a token's creation or removal once it has replayed the controller's record. */
    private static void await(DelegationToken token, boolean listed) throws Exception {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        String id = token.tokenInfo().tokenId();
        while (System.currentTimeMillis() < deadline && as("admin").describeDelegationToken().delegationTokens()
                .get(TIMEOUT_S, TimeUnit.SECONDS).stream().anyMatch(t -> t.tokenInfo().tokenId().equals(id)) != listed) {
            Thread.sleep(100);
        }
    }

    /** Log in with ``token`` and list topics: the topics bob may see, or the error (retried while
     *  Kafka's broker has not yet replayed the token, or -- once expired -- has not removed it). */
    private static void login(String label, DelegationToken token, boolean expectOk) throws InterruptedException {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        String outcome;
        while (true) {
            Admin admin = withToken(token);
            try {
                List<String> names = new ArrayList<>();
                for (String t : admin.listTopics(new ListTopicsOptions().timeoutMs(10_000)).names()
                        .get(TIMEOUT_S, TimeUnit.SECONDS)) {
                    if (!t.startsWith("_")) {
                        names.add(t);
                    }
                }
                Collections.sort(names);
                outcome = "topics " + names;
                if (expectOk) {
                    // a connection logged in with a token may not create or describe tokens
                    try {
                        admin.createDelegationToken().delegationToken().get(TIMEOUT_S, TimeUnit.SECONDS);
                        outcome += ", create NONE";
                    } catch (Exception e) {
                        outcome += ", create " + error(e);
                    }
                    try {
                        admin.describeDelegationToken().delegationTokens().get(TIMEOUT_S, TimeUnit.SECONDS);
                        outcome += ", describe NONE";
                    } catch (Exception e) {
                        outcome += ", describe " + error(e);
                    }
                }
            } catch (Exception e) {
                outcome = error(e);
            } finally {
                admin.close();
                opened.remove(admin);
            }
            if (outcome.startsWith("topics") == expectOk || System.currentTimeMillis() > deadline) {
                break;
            }
            Thread.sleep(200);
        }
        System.out.println("login " + label + ": " + outcome);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: DelegationTokens <bootstrap-servers> <user>:<password>...");
            System.exit(2);
        }
        bootstrap = args[0];
        for (int i = 1; i < args.length; i++) {
            String[] pair = args[i].split(":", 2);
            passwords.put(pair[0], pair[1]);
        }
        KafkaPrincipal bob = new KafkaPrincipal("User", "bob");
        KafkaPrincipal carol = new KafkaPrincipal("User", "carol");
        try {
            DelegationToken mine = create("bob", "bob", new CreateDelegationTokenOptions()
                .renewers(List.of(carol)).maxlifeTimeMs(3_600_000));
            DelegationToken forBob = create("admin for bob", "admin", new CreateDelegationTokenOptions().owner(bob));
            create("carol for bob", "carol", new CreateDelegationTokenOptions().owner(bob));
            create("bob, a group renewer", "bob", new CreateDelegationTokenOptions()
                .renewers(List.of(new KafkaPrincipal("Group", "g"))));
            create("bob, a longer life than allowed", "bob", new CreateDelegationTokenOptions()
                .maxlifeTimeMs(Long.MAX_VALUE / 2));
            // Kafka's broker describes a token once it has replayed the controller's record: wait
            // until the super user sees the three created (mockbroker: at once)
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (as("admin").describeDelegationToken().delegationTokens().get(TIMEOUT_S, TimeUnit.SECONDS).size() < 3
                    && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            // null owners: every token the requester may see
            describeAs("bob", as("bob"), null);
            describeAs("carol", as("carol"), null);
            describeAs("dave", as("dave"), null);
            describeAs("admin", as("admin"), null);
            describeAs("carol owners [User:bob]", as("carol"), List.of(bob));
            describeAs("bob owners [User:carol]", as("bob"), List.of(carol));
            describeAs("bob owners []", as("bob"), List.of());
            if (mine == null || forBob == null) {
                System.out.println("DONE");
                return;
            }
            renew("owner", "bob", mine.hmac());
            renew("renewer", "carol", mine.hmac());
            renew("other", "dave", mine.hmac());
            renew("super user", "admin", mine.hmac());
            renew("unknown hmac", "bob", Base64.getDecoder().decode("bm90LWEtdG9rZW4="));
            login("with bob's token", mine, true);
            expire("other", "dave", mine.hmac(), -1);
            expire("renewer", "carol", mine.hmac(), -1);
            await(mine, false);
            describeAs("bob after expiry", as("bob"), null);
            renew("expired", "bob", mine.hmac());
            expire("expired", "bob", mine.hmac(), -1);
            login("with the expired token", mine, false);
            expire("owner, in a minute", "bob", forBob.hmac(), 60_000);
            describeAs("bob at last", as("bob"), null);
            // erin has a SCRAM credential only (Kafka: from kafka-storage format --add-scram)
            String erinPassword = passwords.get("erin");
            if (erinPassword != null) {
                admins.put("erin", scram("erin", erinPassword));
                DelegationToken erins = create("erin over SCRAM", "erin", new CreateDelegationTokenOptions()
                    .renewers(List.of(bob)));
                if (erins != null) {
                    await(erins, true);
                    renew("erin's, by bob", "bob", erins.hmac());
                }
                describeAs("erin", as("erin"), null);
                describeAs("erin with a wrong password", scram("erin", erinPassword + "-not"), null);
            }
            System.out.println("DONE");
        } finally {
            for (Admin admin : opened) {
                admin.close();
            }
        }
    }
}
