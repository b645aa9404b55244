// MirrorMaker 2's own client code pointed at a cluster strait replicated into (tests/mm2_interop.rs).
//
// Compiled by the test against Apache Kafka's jars (connect-mirror-client, connect-mirror,
// kafka-clients) and run with `java -cp`. It prints its answers one per line, fields separated by
// tabs, so the test can compare them with strait's own:
//
//   report BOOTSTRAP REMOTE_ALIAS GROUPS ALIASES [PROPS]   (GROUPS, ALIASES: comma-separated;
//     PROPS: comma-separated key=value settings of the MirrorMaker 2 client, e.g.
//     replication.policy.separator=_)
//     upstream      ALIAS                           RemoteClusterUtils.upstreamClusters
//     hops          ALIAS N                         RemoteClusterUtils.replicationHops
//     checkpoints   TOPIC                           RemoteClusterUtils.checkpointTopics
//     heartbeats    TOPIC                           RemoteClusterUtils.heartbeatTopics
//     offset        GROUP TOPIC PARTITION OFFSET METADATA   RemoteClusterUtils.translateOffsets
//     heartbeat     TOPIC SOURCE TARGET             each distinct pair, Heartbeat.deserializeRecord
//     offset-sync   SYNCS_TOPIC TOPIC PARTITION UPSTREAM DOWNSTREAM   OffsetSync.deserializeRecord
//     checkpoint    CHECKPOINTS_TOPIC GROUP TOPIC PARTITION UPSTREAM DOWNSTREAM
//                                                   every record, Checkpoint.deserializeRecord
//     undecodable   TOPIC COUNT                     records MM2's code could not read
//
//   write-checkpoints BOOTSTRAP SOURCE_ALIAS
//     reads lines GROUP TAB TOPIC TAB PARTITION TAB UPSTREAM TAB DOWNSTREAM TAB METADATA from
//     stdin and writes each as MirrorMaker 2's checkpoint connector does: the bytes of
//     Checkpoint.recordKey() / recordValue() into partition 0 of the single-partition compacted
//     topic ReplicationPolicy.checkpointsTopic(SOURCE_ALIAS); prints `wrote N`.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.connect.mirror.Checkpoint;
import org.apache.kafka.connect.mirror.DefaultReplicationPolicy;
import org.apache.kafka.connect.mirror.Heartbeat;
import org.apache.kafka.connect.mirror.OffsetSync;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;
import org.apache.kafka.connect.mirror.ReplicationPolicy;

public final class RemoteClusterCheck {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    public static void main(String[] args) throws Exception {
        if ((args.length == 5 || args.length == 6) && args[0].equals("report")) {
            report(args[1], args[2], list(args[3]), list(args[4]), args.length == 6 ? args[5] : "");
        } else if (args.length == 3 && args[0].equals("write-checkpoints")) {
            writeCheckpoints(args[1], args[2]);
        } else {
            System.err.println("usage: report BOOTSTRAP REMOTE_ALIAS GROUPS ALIASES | write-checkpoints BOOTSTRAP SOURCE_ALIAS");
            System.exit(2);
        }
    }

    private static List<String> list(String commaSeparated) {
        List<String> out = new ArrayList<>();
        for (String s : commaSeparated.split(",")) {
            if (!s.isEmpty()) {
                out.add(s);
            }
        }
        return out;
    }

    private static void line(Object... fields) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < fields.length; i++) {
            if (i > 0) {
                b.append('\t');
            }
            b.append(fields[i]);
        }
        System.out.println(b);
    }

    private static void report(String bootstrap, String remoteAlias, List<String> groups, List<String> aliases,
            String settings) throws Exception {
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", bootstrap);
        for (String setting : list(settings)) {
            String[] kv = setting.split("=", 2);
            props.put(kv[0], kv.length == 2 ? kv[1] : "");
        }
        for (String alias : new TreeSet<>(RemoteClusterUtils.upstreamClusters(props))) {
            line("upstream", alias);
        }
        for (String alias : aliases) {
            line("hops", alias, RemoteClusterUtils.replicationHops(props, alias));
        }
        Set<String> checkpointTopics = new TreeSet<>(RemoteClusterUtils.checkpointTopics(props));
        for (String topic : checkpointTopics) {
            line("checkpoints", topic);
        }
        Set<String> heartbeatTopics = new TreeSet<>(RemoteClusterUtils.heartbeatTopics(props));
        for (String topic : heartbeatTopics) {
            line("heartbeats", topic);
        }
        for (String group : groups) {
            Map<TopicPartition, OffsetAndMetadata> offsets =
                RemoteClusterUtils.translateOffsets(props, remoteAlias, group, TIMEOUT);
            List<TopicPartition> keys = new ArrayList<>(offsets.keySet());
            keys.sort((a, b) -> a.topic().equals(b.topic())
                ? Integer.compare(a.partition(), b.partition())
                : a.topic().compareTo(b.topic()));
            for (TopicPartition tp : keys) {
                line("offset", group, tp.topic(), tp.partition(), offsets.get(tp).offset(), offsets.get(tp).metadata());
            }
        }
        Map<String, Object> adminProps = new HashMap<>();
        adminProps.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            Set<String> all = new TreeSet<>(admin.listTopics().names().get());
            for (String topic : heartbeatTopics) {
                Set<String> pairs = new TreeSet<>();
                decodeAll(bootstrap, topic, Heartbeat::deserializeRecord,
                    h -> pairs.add(h.sourceClusterAlias() + "\t" + h.targetClusterAlias()));
                for (String pair : pairs) {
                    line("heartbeat", topic, pair);
                }
            }
            for (String topic : all) {
                if (topic.startsWith("mm2-offset-syncs") && topic.endsWith("internal")) {
                    decodeAll(bootstrap, topic, OffsetSync::deserializeRecord,
                        s -> line("offset-sync", topic, s.topicPartition().topic(), s.topicPartition().partition(),
                            s.upstreamOffset(), s.downstreamOffset()));
                }
            }
            for (String topic : checkpointTopics) {
                decodeAll(bootstrap, topic, Checkpoint::deserializeRecord,
                    c -> line("checkpoint", topic, c.consumerGroupId(), c.topicPartition().topic(),
                        c.topicPartition().partition(), c.upstreamOffset(), c.downstreamOffset()));
            }
        }
    }

    /// Reads every record of `topic` from the beginning to its current end, decoding each with
    /// MirrorMaker 2's `decode`; the records it cannot decode are counted.
    private static <T> void decodeAll(String bootstrap, String topic,
            Function<ConsumerRecord<byte[], byte[]>, T> decode, java.util.function.Consumer<T> sink) {
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", bootstrap);
        props.put("enable.auto.commit", "false");
        long undecodable = 0;
        try (KafkaConsumer<byte[], byte[]> consumer =
                 new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic, TIMEOUT)) {
                parts.add(new TopicPartition(topic, p.partition()));
            }
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            Map<TopicPartition, Long> end = consumer.endOffsets(parts, TIMEOUT);
            long deadline = System.currentTimeMillis() + TIMEOUT.toMillis();
            while (parts.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("could not read " + topic + " to its end within " + TIMEOUT);
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    T value;
                    try {
                        value = decode.apply(r);
                    } catch (RuntimeException e) {
                        undecodable++;
                        continue;
                    }
                    sink.accept(value);
                }
            }
        }
        line("undecodable", topic, undecodable);
    }

    private static void writeCheckpoints(String bootstrap, String sourceAlias) throws Exception {
        ReplicationPolicy policy = new DefaultReplicationPolicy();
        String topic = policy.checkpointsTopic(sourceAlias);
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", bootstrap);
        // As MirrorUtils.createSinglePartitionCompactedTopic does for MirrorMaker 2.
        try (Admin admin = Admin.create(props)) {
            NewTopic nt = new NewTopic(topic, 1, (short) 1)
                .configs(Collections.singletonMap("cleanup.policy", "compact"));
            admin.createTopics(Collections.singleton(nt)).all().get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
        // Checkpoint.recordKey()/recordValue() are what MirrorCheckpointTask puts in its records;
        // they are package-private, hence the reflection.
        Method recordKey = Checkpoint.class.getDeclaredMethod("recordKey");
        Method recordValue = Checkpoint.class.getDeclaredMethod("recordValue");
        recordKey.setAccessible(true);
        recordValue.setAccessible(true);
        props.put("acks", "all");
        int written = 0;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
            String l;
            while ((l = in.readLine()) != null) {
                if (l.isEmpty()) {
                    continue;
                }
                String[] f = l.split("\t", -1);
                if (f.length != 6) {
                    throw new IllegalArgumentException("want 6 tab-separated fields: " + Arrays.toString(f));
                }
                Checkpoint c = new Checkpoint(f[0], new TopicPartition(f[1], Integer.parseInt(f[2])),
                    Long.parseLong(f[3]), Long.parseLong(f[4]), f[5]);
                byte[] key = (byte[]) recordKey.invoke(c);
                byte[] value = (byte[]) recordValue.invoke(c);
                producer.send(new ProducerRecord<>(topic, 0, key, value)).get();
                written++;
            }
        }
        line("wrote", written);
    }
}
