// Kafka's own code as the judge of tierflow's __remote_log_metadata records: one request a
// line on stdin, one answer a line on stdout, over the broker's jars
// (tests/kafka/test_remote_log_metadata_serde.py compiles and runs it).
//
//   decode HEX            -> "ok " + the record as Kafka's RemoteLogMetadataSerde reads it,
//                            or "refused " + why
//   partition ID P COUNT  -> the metadata partition RemoteLogMetadataTopicPartitioner gives
//   segment|update|delete FIELDS -> the hex of the record Kafka's serde writes (fields as
//                            the canonical form below prints them, space-separated)
//
// The canonical form is the same one the Python test prints for its own decoding, so the two
// readings are compared as text; a line break in a field (a damaged topic name) is a space on
// both sides, as an answer is one line.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.StringJoiner;
import java.util.TreeMap;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogMetadataTopicPartitioner;
import org.apache.kafka.server.log.remote.metadata.storage.serialization.RemoteLogMetadataSerde;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteState;

public final class RemoteLogMetadataCheck {
    private static final HexFormat HEX = HexFormat.of();
    private static final RemoteLogMetadataSerde SERDE = new RemoteLogMetadataSerde();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.split(" ");
            String answer;
            try {
                answer = switch (w[0]) {
                    case "decode" -> "ok " + canonical(SERDE.deserialize(HEX.parseHex(w[1])));
                    case "partition" -> Integer.toString(new RemoteLogMetadataTopicPartitioner(
                        Integer.parseInt(w[3])).metadataPartition(
                            new TopicIdPartition(Uuid.fromString(w[1]), new TopicPartition("t", Integer.parseInt(w[2])))));
                    case "segment", "update", "delete" -> HEX.formatHex(SERDE.serialize(build(w)));
                    default -> "refused unknown request " + w[0];
                };
            } catch (Exception e) {
                answer = "refused " + e.getClass().getSimpleName() + ": " + e.getMessage();
            }
            out.println(answer.replace('\n', ' ').replace('\r', ' '));  // one answer, one line
        }
    }

    private static String canonical(RemoteLogMetadata m) {
        StringJoiner j = new StringJoiner(" ");
        if (m instanceof RemoteLogSegmentMetadata s) {
            j.add("segment").add(partition(s.remoteLogSegmentId().topicIdPartition()));
            j.add(s.remoteLogSegmentId().id().toString());
            j.add(Long.toString(s.startOffset())).add(Long.toString(s.endOffset()));
            j.add(Integer.toString(s.brokerId())).add(Long.toString(s.maxTimestampMs()));
            j.add(Long.toString(s.eventTimestampMs()));
            StringJoiner epochs = new StringJoiner(",");
            s.segmentLeaderEpochs().forEach((e, o) -> epochs.add(e + ":" + o));
            j.add(epochs.toString()).add(Integer.toString(s.segmentSizeInBytes()));
            j.add(custom(s.customMetadata())).add(Byte.toString(s.state().id()));
            j.add(Boolean.toString(s.isTxnIdxEmpty()));
        } else if (m instanceof RemoteLogSegmentMetadataUpdate u) {
            j.add("update").add(partition(u.remoteLogSegmentId().topicIdPartition()));
            j.add(u.remoteLogSegmentId().id().toString()).add(Integer.toString(u.brokerId()));
            j.add(Long.toString(u.eventTimestampMs())).add(Byte.toString(u.state().id()));
            j.add(custom(u.customMetadata()));
        } else if (m instanceof RemotePartitionDeleteMetadata d) {
            j.add("delete").add(partition(d.topicIdPartition())).add(Integer.toString(d.brokerId()));
            j.add(Long.toString(d.eventTimestampMs())).add(Byte.toString(d.state().id()));
        } else {
            j.add("unexpected " + m.getClass().getName());
        }
        return j.toString();
    }

    private static String partition(TopicIdPartition p) {
        return p.topic() + " " + p.topicId() + " " + p.partition();
    }

    private static String custom(Optional<CustomMetadata> c) {
        return c.map(v -> HEX.formatHex(v.value())).map(h -> h.isEmpty() ? "empty" : h).orElse("-");
    }

    // The canonical form's fields back into Kafka's objects (w[0] is the kind).
    private static RemoteLogMetadata build(String[] w) {
        TopicIdPartition p = new TopicIdPartition(Uuid.fromString(w[2]), new TopicPartition(w[1], Integer.parseInt(w[3])));
        if (w[0].equals("delete")) {
            return new RemotePartitionDeleteMetadata(p, RemotePartitionDeleteState.forId(Byte.parseByte(w[6])),
                Long.parseLong(w[5]), Integer.parseInt(w[4]));
        }
        RemoteLogSegmentId id = new RemoteLogSegmentId(p, Uuid.fromString(w[4]));
        if (w[0].equals("update")) {
            return new RemoteLogSegmentMetadataUpdate(id, Long.parseLong(w[6]), parseCustom(w[8]),
                RemoteLogSegmentState.forId(Byte.parseByte(w[7])), Integer.parseInt(w[5]));
        }
        Map<Integer, Long> epochs = new TreeMap<>();
        for (String pair : w[10].split(",")) {
            String[] eo = pair.split(":");
            epochs.put(Integer.parseInt(eo[0]), Long.parseLong(eo[1]));
        }
        return new RemoteLogSegmentMetadata(id, Long.parseLong(w[5]), Long.parseLong(w[6]), Long.parseLong(w[8]),
            Integer.parseInt(w[7]), Long.parseLong(w[9]), Integer.parseInt(w[11]), parseCustom(w[12]),
            RemoteLogSegmentState.forId(Byte.parseByte(w[13])), epochs, Boolean.parseBoolean(w[14]));
    }

    private static Optional<CustomMetadata> parseCustom(String text) {
        if (text.equals("-")) {
            return Optional.empty();
        }
        return Optional.of(new CustomMetadata(text.equals("empty") ? new byte[0] : HEX.parseHex(text)));
    }
}
