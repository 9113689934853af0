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
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID(group), kgo.ConsumeTopics(topic),
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
