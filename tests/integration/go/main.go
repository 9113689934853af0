// franz-go consumers in one classic group, for tests/integration/test_franz_go_group.py.
//
//	groupconsumers BOOTSTRAP TOPIC GROUP MEMBERS PARTITIONS RECORDS
//	groupconsumers control SCENARIO BOOTSTRAP ADMIN   (control.go, for test_control_franz_go.py)
//	groupconsumers txn SCENARIO BOOTSTRAP TOPIC PARTITIONS   (txn.go, for test_transactions_franz_go.py)
//	groupconsumers throttled BOOTSTRAP TOPIC CLIENT_ID RECORDS VALUE_BYTES   (throttled.go, test_throttle_clients.py)
//	groupconsumers kadm BOOTSTRAP   (kadm.go, for test_admin_tour.py and test_admin_kafka44.py)
//
// Starts MEMBERS kgo clients in the group (franz-go's default balancer: cooperative-sticky, an
// incremental rebalance over the classic protocol), waits until the partitions are split evenly
// and every record "0".."RECORDS-1" was read, commits, prints "ASSIGNED <sizes> SEEN <n>"; closes the
// first client (it revokes, commits and sends LeaveGroup), waits until the others own every
// partition, prints "TAKEOVER <sizes>", closes the rest and prints "DONE". Exit 1 after 60 s.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type member struct {
	mu       sync.Mutex
	assigned map[int32]bool
	client   *kgo.Client
	cancel   context.CancelFunc
	done     chan struct{}
}

func (m *member) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.assigned)
}

func (m *member) parts() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []int32{}
	for p := range m.assigned {
		out = append(out, p)
	}
	return out
}

var (
	seenMu sync.Mutex
	seen   = map[string]bool{}
)

func balanced(ms []*member, partitions int) bool {
	all := map[int32]bool{}
	total, min, max := 0, 1<<30, 0
	for _, m := range ms {
		ps := m.parts()
		for _, p := range ps {
			all[p] = true
		}
		total += len(ps)
		if len(ps) < min {
			min = len(ps)
		}
		if len(ps) > max {
			max = len(ps)
		}
	}
	return len(all) == partitions && total == partitions && max-min <= 1
}

func sizes(ms []*member) string {
	s := []string{}
	for _, m := range ms {
		s = append(s, strconv.Itoa(m.size()))
	}
	return "[" + strings.Join(s, ",") + "]"
}

func await(what string, deadline time.Time, cond func() bool, ms []*member) {
	for !cond() {
		if time.Now().After(deadline) {
			seenMu.Lock()
			n := len(seen)
			seenMu.Unlock()
			fmt.Printf("TIMEOUT %s %s SEEN %d\n", what, sizes(ms), n)
			os.Exit(1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func start(bootstrap, topic, group string, i int) *member {
	m := &member{assigned: map[int32]bool{}, done: make(chan struct{})}
	onAssigned := func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
		m.mu.Lock()
		for _, p := range a[topic] {
			m.assigned[p] = true
		}
		m.mu.Unlock()
	}
	onRevoked := func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
		_ = cl.CommitMarkedOffsets(ctx)
		m.mu.Lock()
		for _, p := range r[topic] {
			delete(m.assigned, p)
		}
		m.mu.Unlock()
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ClientID(fmt.Sprintf("franz-%d", i)),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(200*time.Millisecond),
		kgo.OnPartitionsAssigned(onAssigned),
		kgo.OnPartitionsRevoked(onRevoked),
		kgo.OnPartitionsLost(onRevoked),
	)
	if err != nil {
		fmt.Println("FAILED", err)
		os.Exit(1)
	}
	m.client = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				seenMu.Lock()
				seen[string(r.Value)] = true
				seenMu.Unlock()
				cl.MarkCommitRecords(r)
			})
		}
	}()
	return m
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "control" {
		os.Exit(controlMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "txn" {
		os.Exit(txnMain(os.Args[2:])) // txn.go, for test_transactions_franz_go.py
	}
	if len(os.Args) > 1 && os.Args[1] == "share" {
		os.Exit(shareMain(os.Args[2:])) // share.go, for test_franz_go_share.py
	}
	if len(os.Args) > 1 && os.Args[1] == "share-acks" {
		os.Exit(shareAcksMain(os.Args[2:])) // share.go, for test_java_share_consumer.py
	}
	if len(os.Args) > 1 && os.Args[1] == "kadm" {
		os.Exit(kadmMain(os.Args[2:])) // kadm.go, for test_admin_tour.py and test_admin_kafka44.py
	}
	if len(os.Args) > 1 && os.Args[1] == "acl" {
		os.Exit(aclMain(os.Args[2:])) // acl.go, for test_acl_clients.py
	}
	if len(os.Args) > 1 && os.Args[1] == "tls" {
		os.Exit(tlsMain(os.Args[2:])) // tls.go, for test_tls_clients.py
	}
	if len(os.Args) > 1 && os.Args[1] == "throttled" {
		os.Exit(throttledMain(os.Args[2:])) // throttled.go, for test_throttle_clients.py
	}
	bootstrap, topic, group := os.Args[1], os.Args[2], os.Args[3]
	members, _ := strconv.Atoi(os.Args[4])
	partitions, _ := strconv.Atoi(os.Args[5])
	records, _ := strconv.Atoi(os.Args[6])
	deadline := time.Now().Add(60 * time.Second)
	ms := []*member{}
	for i := 0; i < members; i++ {
		ms = append(ms, start(bootstrap, topic, group, i))
	}
	await("assigning", deadline, func() bool {
		seenMu.Lock()
		n := len(seen)
		seenMu.Unlock()
		return n >= records && balanced(ms, partitions)
	}, ms)
	seenMu.Lock()
	n := len(seen)
	seenMu.Unlock()
	fmt.Printf("ASSIGNED %s SEEN %d\n", sizes(ms), n)
	for _, m := range ms {
		if err := m.client.CommitMarkedOffsets(context.Background()); err != nil {
			fmt.Println("FAILED commit", err)
			os.Exit(1)
		}
	}
	first := ms[0]
	first.cancel()
	<-first.done
	first.client.Close() // revokes, commits and leaves the group
	rest := ms[1:]
	await("taking over", deadline, func() bool { return balanced(rest, partitions) }, rest)
	fmt.Printf("TAKEOVER %s\n", sizes(rest))
	for _, m := range rest {
		m.cancel()
		<-m.done
		m.client.Close()
	}
	fmt.Println("DONE")
}
