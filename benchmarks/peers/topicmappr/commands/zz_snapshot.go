package commands

// This file is the benchmark's own: build.sh drops it into a copy of kafka-kit's
// cmd/topicmappr/commands package. It runs topicmappr's scale, rebalance and rebuild steps on a
// kafka-rebalance snapshot instead of a live cluster. Two stand-ins replace the services
// topicmappr reads: a KafkaAdmin that describes the snapshot's brokers and topics, and a
// ZooKeeper handler that serves the storage metrics topicmappr's metricsfetcher would have
// written (free bytes per broker, size per partition).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/DataDog/kafka-kit/v4/kafkaadmin"
	"github.com/DataDog/kafka-kit/v4/kafkazk"
	"github.com/DataDog/kafka-kit/v4/mapper"
)

type snapshotBroker struct {
	ID       int    `json:"id"`
	Rack     string `json:"rack"`
	Alive    *bool  `json:"alive"`
	Capacity struct {
		DiskBytes float64 `json:"disk_bytes"`
	} `json:"capacity"`
}

type snapshotPartition struct {
	Topic     string  `json:"topic"`
	Partition int     `json:"partition"`
	Replicas  []int   `json:"replicas"`
	SizeBytes float64 `json:"size_bytes"`
}

type snapshotFile struct {
	Brokers    []snapshotBroker    `json:"brokers"`
	Partitions []snapshotPartition `json:"partitions"`
}

// snapshotAdmin answers the two KafkaAdmin calls topicmappr's planning makes; the embedded nil
// interface makes any other call panic, which would mean a stand-in is missing.
type snapshotAdmin struct {
	kafkaadmin.KafkaAdmin
	brokers kafkaadmin.BrokerStates
	topics  kafkaadmin.TopicStates
}

func (a snapshotAdmin) DescribeBrokers(context.Context, bool) (kafkaadmin.BrokerStates, error) {
	return a.brokers, nil
}

func (a snapshotAdmin) DescribeTopics(context.Context, []string) (kafkaadmin.TopicStates, error) {
	return a.topics, nil
}

// snapshotMetrics answers the ZooKeeper reads of the storage metrics, always fresh.
type snapshotMetrics struct {
	kafkazk.Handler
	free  mapper.BrokerMetricsMap
	sizes mapper.PartitionMetaMap
}

func (z snapshotMetrics) MaxMetaAge() (time.Duration, error) { return 0, nil }

func (z snapshotMetrics) GetBrokerMetrics() (mapper.BrokerMetricsMap, error) {
	return z.free, nil
}

func (z snapshotMetrics) GetAllPartitionMeta() (mapper.PartitionMetaMap, error) {
	return z.sizes, nil
}

func readSnapshot(path string) (snapshotAdmin, snapshotMetrics, []int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return snapshotAdmin{}, snapshotMetrics{}, nil, err
	}
	var snap snapshotFile
	if err := json.Unmarshal(raw, &snap); err != nil {
		return snapshotAdmin{}, snapshotMetrics{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	admin := snapshotAdmin{brokers: kafkaadmin.BrokerStates{}, topics: kafkaadmin.TopicStates{}}
	metrics := snapshotMetrics{free: mapper.BrokerMetricsMap{}, sizes: mapper.PartitionMetaMap{}}
	var live []int
	for _, b := range snap.Brokers {
		if b.Alive != nil && !*b.Alive {
			continue
		}
		live = append(live, b.ID)
		admin.brokers[b.ID] = kafkaadmin.BrokerState{Host: "snapshot", Port: 9092, Rack: b.Rack}
		metrics.free[b.ID] = &mapper.BrokerMetrics{StorageFree: b.Capacity.DiskBytes}
	}
	for _, p := range snap.Partitions {
		for _, id := range p.Replicas {
			if m, ok := metrics.free[id]; ok {
				m.StorageFree -= p.SizeBytes
			}
		}
		topic, ok := admin.topics[p.Topic]
		if !ok {
			topic = kafkaadmin.NewTopicState(p.Topic)
			topic.PartitionStates = map[int]kafkaadmin.PartitionState{}
		}
		replicas := make([]int32, len(p.Replicas))
		for i, id := range p.Replicas {
			replicas[i] = int32(id)
		}
		topic.PartitionStates[p.Partition] = kafkaadmin.PartitionState{
			ID: int32(p.Partition), Leader: replicas[0], Replicas: replicas, ISR: replicas}
		topic.Partitions = int32(len(topic.PartitionStates))
		topic.ReplicationFactor = int32(len(replicas))
		admin.topics[p.Topic] = topic
		if metrics.sizes[p.Topic] == nil {
			metrics.sizes[p.Topic] = map[int]*mapper.PartitionMeta{}
		}
		metrics.sizes[p.Topic][p.Partition] = &mapper.PartitionMeta{Size: p.SizeBytes}
	}
	sort.Ints(live)
	return admin, metrics, live, nil
}

func idList(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, ",")
}

// RunOnSnapshot runs `topicmappr <scale|rebalance|rebuild> FLAGS` with topicmappr's own flag
// definitions and defaults, reading the cluster from --snapshot and writing Kafka's reassignment
// JSON of every partition to --out. --brokers defaults to every live broker of the snapshot
// except those named by --remove.
func RunOnSnapshot(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: SUBCOMMAND --snapshot FILE --out FILE [topicmappr flags]")
	}
	switch args[0] {
	case "scale", "rebalance", "rebuild":
	default:
		return fmt.Errorf("unknown subcommand %q: give scale, rebalance or rebuild", args[0])
	}
	sub, _, err := rootCmd.Find(args[:1])
	if err != nil {
		return err
	}
	sub.Flags().String("snapshot", "", "kafka-rebalance snapshot to read")
	sub.Flags().String("out", "", "where to write Kafka's reassignment JSON")
	sub.Flags().String("remove", "", "broker ids to move every replica off (rebuild)")
	if err := sub.ParseFlags(args[1:]); err != nil {
		return err
	}
	admin, metrics, live, err := readSnapshot(sub.Flag("snapshot").Value.String())
	if err != nil {
		return err
	}
	removed := map[int]bool{}
	if text := sub.Flag("remove").Value.String(); text != "" {
		for _, id := range brokerStringToSlice(text) {
			removed[id] = true
		}
	}
	if !sub.Flags().Changed("brokers") {
		var keep []int
		for _, id := range live {
			if !removed[id] {
				keep = append(keep, id)
			}
		}
		if err := sub.Flags().Set("brokers", idList(keep)); err != nil {
			return err
		}
	}
	if !sub.Flags().Changed("topics") {
		if err := sub.Flags().Set("topics", ".*"); err != nil {
			return err
		}
	}
	sanitizeInput(sub)
	var maps []*mapper.PartitionMap
	switch args[0] {
	case "rebuild":
		params := rebuildParamsFromCmd(sub)
		if err := params.validate(); err != nil {
			return err
		}
		maps, _ = runRebuild(params, admin, metrics)
	default:
		params := reassignParamsFromCmd(sub)
		params.requireNewBrokers = args[0] == "scale"
		maps, _ = reassign(params, admin, metrics)
	}
	out := mapper.NewPartitionMap()
	if len(maps) > 0 {
		out = maps[len(maps)-1]
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(sub.Flag("out").Value.String(), raw, 0o644)
}
