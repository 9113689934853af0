// franz-go's share consumer (kgo.ShareGroup, KIP-932), for tests/integration/test_franz_go_share.py:
//
//	groupconsumers share BOOTSTRAP TOPIC GROUP RECORDS
//
// Polls the share group until every one of RECORDS values was accepted: each record is released
// (AckRelease) on its first delivery and accepted on its redelivery, the acks flushed after each poll.
// Prints "RELEASED <n> ACCEPTED <n> DELIVERIES <sorted delivery counts accepted>"; exit 1 on any
// error or after 60 s.
package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func shareMain(args []string) int {
	if len(args) != 4 {
		fmt.Println("usage: groupconsumers share BOOTSTRAP TOPIC GROUP RECORDS")
		return 2
	}
	bootstrap, topic, group := args[0], args[1], args[2]
	records, _ := strconv.Atoi(args[3])
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ClientID(group), kgo.ConsumeTopics(topic),
		kgo.ShareGroup(group))
	if err != nil {
		fmt.Println("FAILED", err)
		return 1
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	released, accepted := map[string]bool{}, map[string]bool{}
	deliveries := map[int32]bool{}
	for len(accepted) < records {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			fmt.Printf("TIMEOUT released=%d accepted=%d\n", len(released), len(accepted))
			return 1
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			fmt.Println("FAILED", errs[0].Err)
			return 1
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if r.DeliveryCount() == 1 {
				cl.MarkAcks(kgo.AckRelease, r)
				released[string(r.Value)] = true
			} else {
				cl.MarkAcks(kgo.AckAccept, r)
				accepted[string(r.Value)] = true
				deliveries[r.DeliveryCount()] = true
			}
		})
		if err := cl.FlushAcks(ctx); err != nil {
			fmt.Println("FAILED", err)
			return 1
		}
	}
	counts := []int{}
	for n := range deliveries {
		counts = append(counts, int(n))
	}
	sort.Ints(counts)
	fmt.Printf("RELEASED %d ACCEPTED %d DELIVERIES %v\n", len(released), len(accepted), counts)
	return 0
}

// shareAcksMain is test_java_share_consumer.py's franz-go scenario:
//
//	groupconsumers share-acks BOOTSTRAP TOPIC
//
// Produces s0-s5 to TOPIC (one partition), consumes them in share group TOPIC and acknowledges each on
// its first delivery: s0, s1 AckAccept, s2, s3 AckRelease, s4, s5 AckReject; flushes the acks, produces
// "end" and polls, accepting everything, until "end" arrives; then produces "r0" and acknowledges it
// AckRenew (refused where the group has share.renew.acknowledge.enable=false). Prints the lines
// "first <value:deliveryCount ...>", "commit ok" (or each partition's ack error from ShareAckCallback),
// "then <value:deliveryCount ...>" and "renew <value:deliveryCount> | <ack errors>", deliveries in
// offset order; exit 1 on an error or
// after 30 s.
func shareAcksMain(args []string) int {
	if len(args) != 2 {
		fmt.Println("usage: groupconsumers share-acks BOOTSTRAP TOPIC")
		return 2
	}
	bootstrap, topic := args[0], args[1]
	firstAcks := map[string]kgo.AckStatus{"s0": kgo.AckAccept, "s1": kgo.AckAccept, "s2": kgo.AckRelease,
		"s3": kgo.AckRelease, "s4": kgo.AckReject, "s5": kgo.AckReject}
	var mu sync.Mutex
	ackErrors := []string{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ClientID(topic), kgo.ConsumeTopics(topic),
		kgo.ShareGroup(topic), kgo.DefaultProduceTopic(topic),
		kgo.ShareAckCallback(func(_ *kgo.Client, results kgo.ShareAckResults) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range results {
				if r.Err != nil {
					ackErrors = append(ackErrors, fmt.Sprintf("%d:%v", r.Partition, r.Err))
				}
			}
		}))
	if err != nil {
		fmt.Println("FAILED", err)
		return 1
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(values ...string) error {
		rs := []*kgo.Record{}
		for _, v := range values {
			rs = append(rs, kgo.StringRecord(v))
		}
		return cl.ProduceSync(ctx, rs...).FirstErr()
	}
	if err := produce("s0", "s1", "s2", "s3", "s4", "s5"); err != nil {
		fmt.Println("FAILED", err)
		return 1
	}
	poll := func(got *[]*kgo.Record, status func(*kgo.Record) kgo.AckStatus) error {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("TIMEOUT after %s", deliveries(*got))
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return errs[0].Err
		}
		fetches.EachRecord(func(r *kgo.Record) {
			*got = append(*got, r)
			cl.MarkAcks(status(r), r)
		})
		return nil
	}
	first, then := []*kgo.Record{}, []*kgo.Record{}
	for len(first) < len(firstAcks) {
		if err := poll(&first, func(r *kgo.Record) kgo.AckStatus { return firstAcks[string(r.Value)] }); err != nil {
			fmt.Println("FAILED", err)
			return 1
		}
	}
	if err := cl.FlushAcks(ctx); err != nil {
		fmt.Println("FAILED", err)
		return 1
	}
	mu.Lock()
	commit := "commit ok"
	if len(ackErrors) > 0 {
		commit = "commit " + strings.Join(ackErrors, " ")
	}
	mu.Unlock()
	if err := produce("end"); err != nil {
		fmt.Println("FAILED", err)
		return 1
	}
	for len(then) == 0 || string(then[len(then)-1].Value) != "end" {
		if err := poll(&then, func(*kgo.Record) kgo.AckStatus { return kgo.AckAccept }); err != nil {
			fmt.Println("FAILED", err)
			return 1
		}
	}
	if err := cl.FlushAcks(ctx); err != nil {
		fmt.Println("FAILED", err)
		return 1
	}
	// the group has share.renew.acknowledge.enable=false: a RENEW is refused for the partition
	if err := produce("r0"); err != nil {
		fmt.Println("FAILED", err)
		return 1
	}
	renewed := []*kgo.Record{}
	mu.Lock()
	ackErrors = ackErrors[:0]
	mu.Unlock()
	for len(renewed) == 0 {
		if err := poll(&renewed, func(*kgo.Record) kgo.AckStatus { return kgo.AckRenew }); err != nil {
			fmt.Println("FAILED", err)
			return 1
		}
	}
	if err := cl.FlushAcks(ctx); err != nil {
		fmt.Println("FAILED", err)
		return 1
	}
	mu.Lock()
	renew := "renew " + deliveries(renewed) + " | " + strings.Join(ackErrors, " ")
	mu.Unlock()
	fmt.Printf("first %s\n%s\nthen %s\n%s\n", deliveries(first), commit, deliveries(then), renew)
	return 0
}

// deliveries: "value:deliveryCount" of each record, in offset order.
func deliveries(rs []*kgo.Record) string {
	s := append([]*kgo.Record{}, rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].Offset < s[j].Offset })
	out := []string{}
	for _, r := range s {
		out = append(out, fmt.Sprintf("%s:%d", r.Value, r.DeliveryCount()))
	}
	return strings.Join(out, " ")
}
