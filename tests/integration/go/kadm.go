// franz-go's admin client (kadm) through the admin APIs, for tests/integration/test_admin_tour.py and
// test_admin_kafka44.py (the same program against mockbroker and a real Kafka 4.4.0):
//
//	groupconsumers kadm BOOTSTRAP
//
// One line per step, "<step>: <what the broker answered>" (an error as its Kafka name), then DONE:
// CreatePartitions/UpdatePartitions (CreatePartitions), DeleteRecords and ListStartOffsets,
// AlterTopicConfigs/AlterBrokerConfigs (IncrementalAlterConfigs), AlterTopicConfigsState
// (AlterConfigs, which replaces every dynamic config), DescribeTopicConfigs/DescribeBrokerConfigs,
// ElectLeaders, CommitOffsets/DeleteOffsets/FetchOffsets (OffsetDelete), DescribeAllLogDirs,
// UpdateFeatures, AlterPartitionAssignments/ListPartitionReassignments, DescribeProducers and
// WriteTxnMarkers (an ABORT for a transaction left open). kadm v1.19 has no DescribeFeatures or
// DescribeQuorum. Exit 1 after 60 s or when a step cannot go on.
package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const kadmTopic, kadmGroup = "kadm", "kadm-group"

// errName is an error's Kafka name ("OK" for none).
func errName(err error) string {
	if err == nil {
		return "OK"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func strp(s string) *string { return &s }

func configOf(rcs kadm.ResourceConfigs, key string) string {
	for _, rc := range rcs {
		if rc.Err != nil {
			return errName(rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key == key {
				v := "null"
				if c.Value != nil {
					v = *c.Value
				}
				return v + " " + c.Source.String()
			}
		}
	}
	return "absent"
}

func kadmMain(args []string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if len(args) != 1 {
		fmt.Println("usage: groupconsumers kadm BOOTSTRAP")
		return 2
	}
	seeds := strings.Split(args[0], ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		fmt.Println("client:", err)
		return 1
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	fail := func(step string, err error) int {
		fmt.Printf("%s: %s\n", step, errName(err))
		return 1
	}

	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		return fail("ListBrokers", err)
	}
	fmt.Printf("ListBrokers: %d\n", len(brokers))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, kadmTopic); err != nil {
		return fail("CreateTopic", err)
	}

	// CreatePartitions: grow by 2, then a shrink refused
	grown, err := adm.CreatePartitions(ctx, 2, kadmTopic)
	if err != nil {
		return fail("CreatePartitions", err)
	}
	fmt.Printf("CreatePartitions +2: %s\n", errName(grown[kadmTopic].Err))
	shrunk, err := adm.UpdatePartitions(ctx, 2, kadmTopic)
	if err != nil {
		return fail("UpdatePartitions", err)
	}
	fmt.Printf("UpdatePartitions 2: %s\n", errName(shrunk[kadmTopic].Err))
	var leader0 int32
	for { // Kafka: the new partitions reach the broker's metadata
		md, err := adm.Metadata(ctx, kadmTopic)
		if err != nil {
			return fail("Metadata", err)
		}
		if t := md.Topics[kadmTopic]; len(t.Partitions) == 3 {
			leader0 = t.Partitions[0].Leader
			break
		}
		if ctx.Err() != nil {
			return fail("Metadata", ctx.Err())
		}
		time.Sleep(100 * time.Millisecond)
	}

	// records on partition 0; a transaction left open on partition 1
	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return fail("producer", err)
	}
	defer producer.Close()
	for i := 0; i < 5; i++ {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: kadmTopic, Partition: 0,
			Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			return fail("produce", err)
		}
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID("kadm-txn"))
	if err != nil {
		return fail("txn producer", err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		return fail("BeginTransaction", err)
	}
	opened := &kgo.Record{Topic: kadmTopic, Partition: 1, Value: []byte("open")}
	if err := txn.ProduceSync(ctx, opened).FirstErr(); err != nil {
		return fail("txn produce", err)
	}

	// DeleteRecords
	var offsets kadm.Offsets
	offsets.AddOffset(kadmTopic, 0, 3, -1)
	deleted, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		return fail("DeleteRecords", err)
	}
	d, _ := deleted.Lookup(kadmTopic, 0)
	fmt.Printf("DeleteRecords: %s low=%d\n", errName(d.Err), d.LowWatermark)
	starts, err := adm.ListStartOffsets(ctx, kadmTopic)
	if err != nil {
		return fail("ListStartOffsets", err)
	}
	s, _ := starts.Lookup(kadmTopic, 0)
	fmt.Printf("ListStartOffsets: %d\n", s.Offset)

	// IncrementalAlterConfigs and AlterConfigs of the topic
	altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: strp("86400000")}}, kadmTopic)
	if err != nil {
		return fail("AlterTopicConfigs", err)
	}
	fmt.Printf("AlterTopicConfigs: %s\n", errName(altered[0].Err))
	// Kafka: a broker answers DescribeConfigs from its metadata, which the change reaches a moment later
	topicConfigs := func(done func(kadm.ResourceConfigs) bool) (kadm.ResourceConfigs, error) {
		for {
			rcs, err := adm.DescribeTopicConfigs(ctx, kadmTopic)
			if err != nil || done(rcs) || ctx.Err() != nil {
				return rcs, err
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	rcs, err := topicConfigs(func(rcs kadm.ResourceConfigs) bool {
		return strings.HasPrefix(configOf(rcs, "retention.ms"), "86400000 ")
	})
	if err != nil {
		return fail("DescribeTopicConfigs", err)
	}
	fmt.Printf("DescribeTopicConfigs retention.ms: %s\n", configOf(rcs, "retention.ms"))
	bad, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: strp("soon")}}, kadmTopic)
	if err != nil {
		return fail("AlterTopicConfigs", err)
	}
	fmt.Printf("AlterTopicConfigs bad value: %s\n", errName(bad[0].Err))
	replaced, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{
		{Name: "max.message.bytes", Value: strp("500000")}}, kadmTopic)
	if err != nil {
		return fail("AlterTopicConfigsState", err)
	}
	fmt.Printf("AlterTopicConfigsState: %s\n", errName(replaced[0].Err))
	if rcs, err = topicConfigs(func(rcs kadm.ResourceConfigs) bool {
		return strings.HasPrefix(configOf(rcs, "max.message.bytes"), "500000 ")
	}); err != nil {
		return fail("DescribeTopicConfigs", err)
	}
	fmt.Printf("DescribeTopicConfigs after: retention.ms %s, max.message.bytes %s\n",
		configOf(rcs, "retention.ms"), configOf(rcs, "max.message.bytes"))

	// IncrementalAlterConfigs of a broker (and back)
	broker := brokers[0].NodeID
	set, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "log.cleaner.backoff.ms", Value: strp("20000")}}, broker)
	if err != nil {
		return fail("AlterBrokerConfigs", err)
	}
	fmt.Printf("AlterBrokerConfigs: %s\n", errName(set[0].Err))
	var brcs kadm.ResourceConfigs
	for { // Kafka: the broker's value follows once it applied the change its metadata carried
		if brcs, err = adm.DescribeBrokerConfigs(ctx, broker); err != nil {
			return fail("DescribeBrokerConfigs", err)
		}
		if strings.HasPrefix(configOf(brcs, "log.cleaner.backoff.ms"), "20000 ") || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("DescribeBrokerConfigs log.cleaner.backoff.ms: %s\n", configOf(brcs, "log.cleaner.backoff.ms"))
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "log.cleaner.backoff.ms"}}, broker); err != nil {
		return fail("AlterBrokerConfigs delete", err)
	}

	// ElectLeaders
	var ps kadm.TopicsSet
	ps.Add(kadmTopic, 0)
	elected, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, ps)
	if err != nil {
		return fail("ElectLeaders", err)
	}
	fmt.Printf("ElectLeaders preferred: %s\n", errName(elected[kadmTopic][0].Err))

	// OffsetDelete: committed offsets of an empty group, one deleted
	var commit kadm.Offsets
	commit.AddOffset(kadmTopic, 0, 4, -1)
	commit.AddOffset(kadmTopic, 2, 0, -1)
	if err := adm.CommitAllOffsets(ctx, kadmGroup, commit); err != nil {
		return fail("CommitAllOffsets", err)
	}
	var del kadm.TopicsSet
	del.Add(kadmTopic, 0)
	dels, err := adm.DeleteOffsets(ctx, kadmGroup, del)
	if err != nil {
		return fail("DeleteOffsets", err)
	}
	fmt.Printf("DeleteOffsets: %s\n", errName(dels[kadmTopic][0]))
	fetched, err := adm.FetchOffsets(ctx, kadmGroup)
	if err != nil {
		return fail("FetchOffsets", err)
	}
	left := []string{}
	fetched.Each(func(o kadm.OffsetResponse) { left = append(left, fmt.Sprintf("%d=%d", o.Partition, o.At)) })
	sort.Strings(left)
	fmt.Printf("FetchOffsets after: %v\n", left)
	_, err = adm.DeleteOffsets(ctx, "kadm-nogroup", del)
	fmt.Printf("DeleteOffsets no group: %s\n", errName(err))

	// DescribeLogDirs
	dirs, err := adm.DescribeAllLogDirs(ctx, ps)
	if err != nil {
		return fail("DescribeAllLogDirs", err)
	}
	holding := 0
	dirs.Each(func(d kadm.DescribedLogDir) {
		if _, ok := d.Topics[kadmTopic][0]; ok && d.Err == nil {
			holding++
		}
	})
	fmt.Printf("DescribeAllLogDirs: dirs holding %s-0: %d\n", kadmTopic, holding)

	// UpdateFeatures (validate only)
	updated, err := adm.UpdateFeatures(ctx, true, kadm.FeatureUpdate{Feature: "transaction.version",
		MaxVersionLevel: 2, UpgradeType: 1})
	if err != nil {
		return fail("UpdateFeatures", err)
	}
	fmt.Printf("UpdateFeatures validate: %s\n", errName(updated["transaction.version"].Err))

	// AlterPartitionReassignments and ListPartitionReassignments
	moved, err := adm.AlterPartitionAssignments(ctx, kadm.AlterPartitionAssignmentsReq{kadmTopic: {0: {leader0}}})
	if err != nil {
		return fail("AlterPartitionAssignments", err)
	}
	fmt.Printf("AlterPartitionAssignments: %s\n", errName(moved[kadmTopic][0].Err))
	listed, err := adm.ListPartitionReassignments(ctx, nil)
	if err != nil {
		return fail("ListPartitionReassignments", err)
	}
	fmt.Printf("ListPartitionReassignments: %d\n", len(listed))

	// DescribeProducers and WriteTxnMarkers: abort the open transaction
	var p1 kadm.TopicsSet
	p1.Add(kadmTopic, 1)
	open := func() ([]kadm.DescribedProducer, error) {
		described, err := adm.DescribeProducers(ctx, p1)
		if err != nil {
			return nil, err
		}
		var out []kadm.DescribedProducer
		described.EachProducer(func(p kadm.DescribedProducer) {
			if p.CurrentTxnStartOffset >= 0 {
				out = append(out, p)
			}
		})
		return out, nil
	}
	producers, err := open()
	if err != nil || len(producers) != 1 {
		fmt.Printf("DescribeProducers: %s %d open\n", errName(err), len(producers))
		return 1
	}
	fmt.Printf("DescribeProducers: 1 open from offset %d\n", producers[0].CurrentTxnStartOffset)
	p := producers[0]
	written, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch,
		Commit: false, CoordinatorEpoch: p.CoordinatorEpoch, Topics: p1})
	if err != nil {
		return fail("WriteTxnMarkers", err)
	}
	fmt.Printf("WriteTxnMarkers abort: %s\n", errName(written[p.ProducerID].Topics[kadmTopic].Partitions[1].Err))
	if producers, err = open(); err != nil {
		return fail("DescribeProducers", err)
	}
	fmt.Printf("DescribeProducers after: %d open\n", len(producers))
	fmt.Println("DONE")
	return 0
}
