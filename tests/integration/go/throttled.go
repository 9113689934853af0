// franz-go producing under a client quota, for tests/integration/test_throttle_clients.py (the
// verdict on whether it waits out its throttles):
//
//	groupconsumers throttled BOOTSTRAP TOPIC CLIENT_ID RECORDS VALUE_BYTES
//
// Produces RECORDS values of VALUE_BYTES to partition 0, one ProduceSync at a time (acks=1, not
// idempotent), so one Produce is in flight.  kgo honours KIP-219 itself: after a response whose
// version makes the client throttle, the connection sleeps before its next write (broker.go).
// Prints "DONE <n> THROTTLED <hooked throttles>"; exit 1 on any error or after 60 s.
package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type throttleCount struct{ n atomic.Int64 }

func (t *throttleCount) OnBrokerThrottle(_ kgo.BrokerMetadata, interval time.Duration, _ bool) {
	if interval > 0 {
		t.n.Add(1)
	}
}

func throttledMain(args []string) int {
	if len(args) != 5 {
		fmt.Println("usage: groupconsumers throttled BOOTSTRAP TOPIC CLIENT_ID RECORDS VALUE_BYTES")
		return 2
	}
	bootstrap, topic, clientID := args[0], args[1], args[2]
	records, _ := strconv.Atoi(args[3])
	size, _ := strconv.Atoi(args[4])
	hooks := &throttleCount{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ClientID(clientID), kgo.WithHooks(hooks),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		fmt.Println("FAILED", err)
		return 1
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	value := make([]byte, size)
	for i := 0; i < records; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: value}).FirstErr(); err != nil {
			fmt.Println("FAILED", err)
			return 1
		}
	}
	fmt.Printf("DONE %d THROTTLED %d\n", records, hooks.n.Load())
	return 0
}
