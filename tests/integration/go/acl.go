// franz-go as a user the authorizer refuses, for tests/integration/test_acl_clients.py (run against
// mockbroker and a Kafka 4.4.0, the outputs compared):
//
//	groupconsumers acl BOOTSTRAP USER PASSWORD DENIED_TOPIC READABLE_TOPIC GROUP TRANSACTIONAL_ID
//
// SASL/PLAIN over plaintext. Produces to DENIED_TOPIC, consumes READABLE_TOPIC in GROUP (the group's
// errors come through PollFetches), and produces to READABLE_TOPIC in a transaction with
// TRANSACTIONAL_ID; one line per case: "<case>: <Kafka's error name>" (NONE: no error within 15 s;
// the error's text when it is not one of Kafka's), then "DONE".
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

const aclWait = 15 * time.Second

func aclOutcome(err error) string {
	if err == nil {
		return "NONE"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "NONE"
	}
	return err.Error()
}

func aclMain(args []string) int {
	if len(args) != 7 {
		fmt.Println("usage: groupconsumers acl BOOTSTRAP USER PASSWORD DENIED_TOPIC READABLE_TOPIC GROUP TRANSACTIONAL_ID")
		return 2
	}
	bootstrap, user, password, denied, readable, group, txnID := args[0], args[1], args[2], args[3], args[4], args[5], args[6]
	base := []kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ClientID("acl-denied"),
		kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism()), kgo.RequestRetries(2)}

	run := func(label string, opts []kgo.Opt, fn func(context.Context, *kgo.Client) error) {
		cl, err := kgo.NewClient(append(append([]kgo.Opt{}, base...), opts...)...)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), aclWait)
			err = fn(ctx, cl)
			cancel()
			cl.Close()
		}
		fmt.Printf("%s: %s\n", label, aclOutcome(err))
	}

	run("produce", []kgo.Opt{kgo.DefaultProduceTopic(denied)}, func(ctx context.Context, cl *kgo.Client) error {
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
	})
	run("consume in a group", []kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(readable)},
		func(ctx context.Context, cl *kgo.Client) error {
			for ctx.Err() == nil {
				fetches := cl.PollFetches(ctx)
				for _, e := range fetches.Errors() {
					if !errors.Is(e.Err, context.DeadlineExceeded) && !errors.Is(e.Err, context.Canceled) {
						return e.Err
					}
				}
			}
			return nil
		})
	run("transaction", []kgo.Opt{kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(readable)},
		func(ctx context.Context, cl *kgo.Client) error {
			if err := cl.BeginTransaction(); err != nil {
				return err
			}
			return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
		})
	fmt.Println("DONE")
	return 0
}
