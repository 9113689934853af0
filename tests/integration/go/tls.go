// franz-go over TLS, for tests/integration/test_tls_clients.py:
//
//	groupconsumers tls BOOTSTRAP TOPIC CLIENT_ID RECORDS CA_PEM [CERT_PEM KEY_PEM | scram USER PASSWORD]
//
// Trusts CA_PEM; with CERT_PEM and KEY_PEM presents that client certificate (mTLS), with "scram"
// authenticates with SCRAM-SHA-256 (SASL_SSL). Produces RECORDS values to partition 0 (acks=all,
// one at a time) and prints "OFFSETS o1 o2 ..."; exit 1 on any error or after 30 s.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func tlsMain(args []string) int {
	if len(args) != 5 && len(args) != 7 && len(args) != 8 {
		fmt.Println("usage: groupconsumers tls BOOTSTRAP TOPIC CLIENT_ID RECORDS CA_PEM [CERT_PEM KEY_PEM | scram USER PASSWORD]")
		return 2
	}
	bootstrap, topic, clientID := args[0], args[1], args[2]
	records, _ := strconv.Atoi(args[3])
	ca, err := os.ReadFile(args[4])
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ClientID(clientID), kgo.DialTLSConfig(cfg),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks())}
	if len(args) == 7 {
		cert, err := tls.LoadX509KeyPair(args[5], args[6])
		if err != nil {
			fmt.Println("ERROR", err)
			return 1
		}
		cfg.Certificates = []tls.Certificate{cert}
	} else if len(args) == 8 && args[5] == "scram" {
		opts = append(opts, kgo.SASL(scram.Auth{User: args[6], Pass: args[7]}.AsSha256Mechanism()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offsets := []string{}
	for i := 0; i < records; i++ {
		r, err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(fmt.Sprintf("v%d", i))}).First()
		if err != nil {
			fmt.Println("ERROR", err)
			return 1
		}
		offsets = append(offsets, strconv.FormatInt(r.Offset, 10))
	}
	fmt.Println("OFFSETS " + strings.Join(offsets, " "))
	return 0
}
