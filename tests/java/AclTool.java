// Topic ACLs through Apache Kafka's own Admin client, for tests/topic_sync.rs.
//
//   create BOOTSTRAP   reads lines NAME TAB PATTERN TAB PRINCIPAL TAB HOST TAB OPERATION TAB
//                      PERMISSION (Kafka's enum names: LITERAL, PREFIXED; READ, WRITE, ALL, ...;
//                      ALLOW, DENY) from stdin and creates them as topic ACLs; prints `created N`.
//   list BOOTSTRAP     prints every topic ACL as `acl` and the same six fields, tab-separated,
//                      sorted.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

public final class AclTool {
    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !(args[0].equals("create") || args[0].equals("list"))) {
            System.err.println("usage: create BOOTSTRAP | list BOOTSTRAP");
            System.exit(2);
        }
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[1]);
        try (Admin admin = Admin.create(props)) {
            if (args[0].equals("create")) {
                create(admin);
            } else {
                list(admin);
            }
        }
    }

    private static void create(Admin admin) throws Exception {
        List<AclBinding> bindings = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String l;
        while ((l = in.readLine()) != null) {
            if (l.isEmpty()) {
                continue;
            }
            String[] f = l.split("\t", -1);
            if (f.length != 6) {
                throw new IllegalArgumentException("want 6 tab-separated fields: " + Arrays.toString(f));
            }
            bindings.add(new AclBinding(
                new ResourcePattern(ResourceType.TOPIC, f[0], PatternType.valueOf(f[1])),
                new AccessControlEntry(f[2], f[3], AclOperation.valueOf(f[4]), AclPermissionType.valueOf(f[5]))));
        }
        admin.createAcls(bindings).all().get();
        System.out.println("created\t" + bindings.size());
    }

    private static void list(Admin admin) throws Exception {
        AclBindingFilter topics = new AclBindingFilter(
            new ResourcePatternFilter(ResourceType.TOPIC, null, PatternType.ANY), AccessControlEntryFilter.ANY);
        TreeSet<String> lines = new TreeSet<>();
        for (AclBinding b : admin.describeAcls(topics).values().get()) {
            lines.add(String.join("\t", "acl", b.pattern().name(), b.pattern().patternType().name(),
                b.entry().principal(), b.entry().host(), b.entry().operation().name(),
                b.entry().permissionType().name()));
        }
        for (String line : lines) {
            System.out.println(line);
        }
    }
}
