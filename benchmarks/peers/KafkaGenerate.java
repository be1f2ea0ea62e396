// Kafka's own `kafka-reassign-partitions --generate` placement, run on a cluster read from a
// file instead of a live cluster: the tool's private calculateAssignment (the code --generate
// runs once it has asked the cluster for its brokers and topics) called through reflection.
//
// Input (stdin):  line 1 "id:rack id:rack ..." (the --broker-list, rack "-" for none), then
//                 one line per partition "topic partition r1,r2,r3".
// Output (stdout): one line per partition "topic partition r1,r2,r3" as --generate proposes.
// Run: java -cp '<kafka jars>/*' benchmarks/peers/KafkaGenerate.java [--disable-rack-aware]

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.metadata.placement.UsableBroker;
import org.apache.kafka.tools.reassign.ReassignPartitionsCommand;

public class KafkaGenerate {
    public static void main(String[] args) throws Exception {
        boolean rackAware = args.length == 0 || !args[0].equals("--disable-rack-aware");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        List<UsableBroker> brokers = new ArrayList<>();
        for (String token : in.readLine().trim().split("\\s+")) {
            String[] idRack = token.split(":", 2);
            Optional<String> rack = rackAware && !idRack[1].equals("-")
                ? Optional.of(idRack[1]) : Optional.empty();
            brokers.add(new UsableBroker(Integer.parseInt(idRack[0]), rack, false));
        }
        Map<TopicPartition, List<Integer>> current = new LinkedHashMap<>();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String[] cells = line.trim().split(" ");
            List<Integer> replicas = new ArrayList<>();
            for (String id : cells[2].split(",")) {
                replicas.add(Integer.parseInt(id));
            }
            current.put(new TopicPartition(cells[0], Integer.parseInt(cells[1])), replicas);
        }
        Method calculate = ReassignPartitionsCommand.class.getDeclaredMethod(
            "calculateAssignment", Map.class, List.class);
        calculate.setAccessible(true);
        @SuppressWarnings("unchecked")
        Map<TopicPartition, List<Integer>> proposed =
            (Map<TopicPartition, List<Integer>>) calculate.invoke(null, current, brokers);
        StringBuilder out = new StringBuilder();
        for (Map.Entry<TopicPartition, List<Integer>> e : proposed.entrySet()) {
            out.append(e.getKey().topic()).append(' ').append(e.getKey().partition()).append(' ');
            List<Integer> replicas = e.getValue();
            for (int i = 0; i < replicas.size(); i++) {
                out.append(i == 0 ? "" : ",").append(replicas.get(i));
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
