// franz-go steered only over mockbroker's admin HTTP API, for tests/integration/test_control_franz_go.py.
//
//	groupconsumers control SCENARIO BOOTSTRAP ADMIN
//
// BOOTSTRAP is the broker's HOST:PORT, ADMIN the admin listener's HOST:PORT.  Everything the scenario
// does to the broker -- create its topic, add a fault rule, release a held request, set a quota, read
// the rule's firings, the request journal, the connections, the throttles -- goes over HTTP with
// net/http; kgo is the only Kafka client in the process.  Scenarios:
//
//	produce-retry  Produce answered NOT_LEADER_OR_FOLLOWER twice: the producer retries, succeeds.
//	hold-fetch     the consumer's first Fetch held until POST /faults/release: nothing is consumed
//	               while it is held, everything once it is released.
//	disconnect     the connection closed on a Produce before it took effect: the client reconnects
//	               (HookBrokerConnect/HookBrokerDisconnect) and the records are appended once.
//	quota          producer_byte_rate set with PUT /quotas: the next Produce responses carry
//	               throttle_time_ms, which kgo reports to HookBrokerThrottle and honours itself
//	               (KIP-219: no request to that broker before the throttle deadline).
//
// stdout gets exactly one line, a JSON object: {"scenario": ..., "ok": true, ...what was seen}; kgo
// logs nothing unless CONTROL_DEBUG is set (then its debug log goes to stderr).  Exit 0 on success, 1 on any error (the JSON line then has "error"), 2 on bad
// arguments.  Every wait is bounded (controlDeadline).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const controlDeadline = 30 * time.Second // any one wait; the whole scenario gets twice that

type result map[string]any

type controller struct {
	bootstrap string
	admin     string
	http      *http.Client
}

// ---- the admin API ------------------------------------------------------------------------------

func (c *controller) call(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+c.admin+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode >= 300 {
		return fmt.Errorf("%s %s: HTTP %d %s", method, path, res.StatusCode, data)
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	return json.Unmarshal(data, out)
}

func (c *controller) get(path string, out any) error { return c.call("GET", path, nil, out) }

type rule struct {
	ID    int  `json:"id"`
	Fired int  `json:"fired"`
	Count *int `json:"count"`
}

func (c *controller) inject(spec map[string]any) (rule, error) {
	var r rule
	err := c.call("POST", "/faults", spec, &r)
	return r, err
}

func (c *controller) fired(id int) (int, error) {
	var r rule
	err := c.get(fmt.Sprintf("/faults/%d", id), &r)
	return r.Fired, err
}

type journalRecord struct {
	Connection     int     `json:"connection"`
	Peer           string  `json:"peer"`
	CorrelationID  int     `json:"correlation_id"`
	APIVersion     int     `json:"api_version"`
	Outcome        string  `json:"outcome"`
	FaultRule      *int    `json:"fault_rule"`
	ThrottleTimeMs int     `json:"throttle_time_ms"`
	ArrivedNs      int64   `json:"arrived_clock_ns"`
	ReceivedNs     int64   `json:"received_clock_ns"`
	HandledNs      int64   `json:"handled_clock_ns"`
	SentNs         *int64  `json:"sent_clock_ns"`
	Partitions     []jpart `json:"partitions"`
}

type jpart struct {
	ErrorCode int `json:"error_code"`
	Bytes     int `json:"bytes"`
}

// attempt is the journal's view of a request, trimmed to what the test looks at.
func attempt(r journalRecord) result {
	errs, n := []int{}, 0
	for _, p := range r.Partitions {
		errs = append(errs, p.ErrorCode)
		n += p.Bytes
	}
	out := result{
		"connection": r.Connection, "peer": r.Peer, "correlation_id": r.CorrelationID, "api_version": r.APIVersion,
		"outcome": r.Outcome, "fault_rule": r.FaultRule, "errors": errs, "bytes": n,
		"throttle_time_ms": r.ThrottleTimeMs, "arrived_ms": float64(r.ArrivedNs) / 1e6,
		"received_ms": float64(r.ReceivedNs) / 1e6, "handled_ms": float64(r.HandledNs) / 1e6,
	}
	if r.SentNs != nil {
		out["sent_ms"] = float64(*r.SentNs) / 1e6
	}
	return out
}

func (c *controller) journal(api, clientID string) ([]result, error) {
	var recs []journalRecord
	if err := c.get("/journal?api="+api+"&client_id="+url.QueryEscape(clientID), &recs); err != nil {
		return nil, err
	}
	out := []result{}
	for _, r := range recs {
		out = append(out, attempt(r))
	}
	return out, nil
}

func (c *controller) createTopic(name string, partitions int) error {
	return c.call("POST", "/topics", map[string]any{"name": name, "partitions": partitions, "replication_factor": 1}, nil)
}

func (c *controller) logEndOffset(topic string) (int, error) {
	var p struct {
		LogEndOffset int `json:"log_end_offset"`
	}
	err := c.get("/topics/"+topic+"/partitions/0", &p)
	return p.LogEndOffset, err
}

func until(what string, cond func() (bool, error)) error {
	end := time.Now().Add(controlDeadline)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("timed out after %s waiting for %s", controlDeadline, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ---- kgo and its hooks --------------------------------------------------------------------------

// hooks records what kgo tells its hooks about the broker (the seed connection aside).
type hooks struct {
	mu          sync.Mutex
	connects    []string // local addresses of the connections kgo opened to the broker
	disconnects []string
	throttles   []result
}

func (h *hooks) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, conn net.Conn, err error) {
	if err != nil || meta.NodeID < 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.connects = append(h.connects, conn.LocalAddr().String())
}

func (h *hooks) OnBrokerDisconnect(meta kgo.BrokerMetadata, conn net.Conn) {
	if meta.NodeID < 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.disconnects = append(h.disconnects, conn.LocalAddr().String())
}

func (h *hooks) OnBrokerThrottle(_ kgo.BrokerMetadata, interval time.Duration, after bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.throttles = append(h.throttles, result{"ms": interval.Milliseconds(), "after_response": after,
		"at_ms": float64(time.Now().UnixNano()) / 1e6})
}

func (c *controller) client(clientID string, h *hooks, opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(c.bootstrap, ",")...),
		kgo.ClientID(clientID),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotent (kgo's default) with acks=all; kgo's 10 ms linger
	}
	if h != nil {
		base = append(base, kgo.WithHooks(h))
	}
	if os.Getenv("CONTROL_DEBUG") != "" { // kgo's debug log on stderr
		base = append(base, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil)))
	}
	return kgo.NewClient(append(base, opts...)...)
}

func records(topic string, n int, from int) []*kgo.Record {
	out := []*kgo.Record{}
	for i := from; i < from+n; i++ {
		out = append(out, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint(i))})
	}
	return out
}

func produced(rs kgo.ProduceResults) ([]int64, error) {
	offsets := []int64{}
	for _, r := range rs {
		if r.Err != nil {
			return nil, r.Err
		}
		offsets = append(offsets, r.Record.Offset)
	}
	return offsets, nil
}

// ---- scenarios ----------------------------------------------------------------------------------

func (c *controller) produceRetry(ctx context.Context) (result, error) {
	topic, clientID := "ctl-produce", "franz-produce"
	if err := c.createTopic(topic, 1); err != nil {
		return nil, err
	}
	r, err := c.inject(map[string]any{"api": "Produce", "client_id": clientID,
		"errors": []string{"NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_OR_FOLLOWER"}})
	if err != nil {
		return nil, err
	}
	cl, err := c.client(clientID, nil, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	offsets, err := produced(cl.ProduceSync(ctx, records(topic, 10, 0)...))
	cl.Close()
	if err != nil {
		return nil, err
	}
	out := result{"rule": r.ID, "offsets": offsets}
	if out["fired"], err = c.fired(r.ID); err != nil {
		return nil, err
	}
	if out["attempts"], err = c.journal("Produce", clientID); err != nil {
		return nil, err
	}
	if out["metadata"], err = c.journal("Metadata", clientID); err != nil {
		return nil, err
	}
	if out["log_end_offset"], err = c.logEndOffset(topic); err != nil {
		return nil, err
	}
	return out, nil
}

type held struct {
	Rule int    `json:"rule"`
	API  string `json:"api"`
}

func (c *controller) heldBy(id int) ([]held, error) {
	var hs []held
	if err := c.get("/faults/held", &hs); err != nil {
		return nil, err
	}
	out := []held{}
	for _, h := range hs {
		if h.Rule == id {
			out = append(out, h)
		}
	}
	return out, nil
}

func (c *controller) holdFetch(ctx context.Context) (result, error) {
	topic, clientID := "ctl-hold", "franz-hold"
	if err := c.createTopic(topic, 1); err != nil {
		return nil, err
	}
	seed, err := c.client("franz-seed", nil, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	_, err = produced(seed.ProduceSync(ctx, records(topic, 10, 0)...))
	seed.Close()
	if err != nil {
		return nil, err
	}
	r, err := c.inject(map[string]any{"api": "Fetch", "client_id": clientID, "action": "hold"})
	if err != nil {
		return nil, err
	}
	cl, err := c.client(clientID, nil, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	seen := []string{}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	pollCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pollCtx.Err() == nil {
			cl.PollFetches(pollCtx).EachRecord(func(rec *kgo.Record) {
				mu.Lock()
				seen = append(seen, string(rec.Value))
				mu.Unlock()
			})
		}
	}()
	defer func() { stop(); <-done; cl.Close() }()

	var hs []held
	if err := until("a held Fetch", func() (bool, error) {
		var err error
		hs, err = c.heldBy(r.ID)
		return len(hs) > 0, err
	}); err != nil {
		return nil, err
	}
	// the consumer has nothing while its Fetch is held: look again once it has waited 300 ms
	time.Sleep(300 * time.Millisecond)
	still, err := c.heldBy(r.ID)
	if err != nil {
		return nil, err
	}
	var conns []struct {
		InFlight *struct {
			API string `json:"api"`
		} `json:"in_flight"`
	}
	if err := c.get("/connections?client_id="+clientID, &conns); err != nil {
		return nil, err
	}
	inFlight := []string{}
	for _, cn := range conns {
		if cn.InFlight != nil {
			inFlight = append(inFlight, cn.InFlight.API)
		}
	}
	seenWhileHeld := count()
	var released struct {
		Released int `json:"released"`
	}
	if err := c.call("POST", "/faults/release", map[string]any{"rule": r.ID}, &released); err != nil {
		return nil, err
	}
	if err := until("every record consumed", func() (bool, error) { return count() >= 10, nil }); err != nil {
		return nil, err
	}
	mu.Lock()
	got := append([]string{}, seen...)
	mu.Unlock()
	out := result{"rule": r.ID, "held": hs, "still_held_after_300ms": len(still), "in_flight_while_held": inFlight,
		"seen_while_held": seenWhileHeld, "released": released.Released, "seen": got}
	if out["fired"], err = c.fired(r.ID); err != nil {
		return nil, err
	}
	if out["fetches"], err = c.journal("Fetch", clientID); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *controller) disconnect(ctx context.Context) (result, error) {
	topic, clientID := "ctl-close", "franz-close"
	if err := c.createTopic(topic, 1); err != nil {
		return nil, err
	}
	r, err := c.inject(map[string]any{"api": "Produce", "client_id": clientID, "action": "close"})
	if err != nil {
		return nil, err
	}
	h := &hooks{}
	// kgo retries a request lost with its connection once it has refreshed its metadata, and refreshes
	// at most once per MetadataMinAge (5 s by default): shortened here to keep the test short
	cl, err := c.client(clientID, h, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	offsets, err := produced(cl.ProduceSync(ctx, records(topic, 5, 0)...))
	var conns []struct {
		ID int `json:"id"`
	}
	if err == nil {
		err = c.get("/connections?client_id="+clientID, &conns)
	}
	cl.Close()
	if err != nil {
		return nil, err
	}
	ids := []int{}
	for _, cn := range conns {
		ids = append(ids, cn.ID)
	}
	h.mu.Lock()
	out := result{"rule": r.ID, "offsets": offsets, "connections_after": ids,
		"client_connects": append([]string{}, h.connects...), "client_disconnects": append([]string{}, h.disconnects...)}
	h.mu.Unlock()
	if out["fired"], err = c.fired(r.ID); err != nil {
		return nil, err
	}
	if out["attempts"], err = c.journal("Produce", clientID); err != nil {
		return nil, err
	}
	if out["metadata"], err = c.journal("Metadata", clientID); err != nil {
		return nil, err
	}
	if out["log_end_offset"], err = c.logEndOffset(topic); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *controller) quota(ctx context.Context) (result, error) {
	topic, clientID := "ctl-quota", "franz-quota"
	const rate = 10000 // bytes/s
	if err := c.createTopic(topic, 1); err != nil {
		return nil, err
	}
	var set any
	if err := c.call("PUT", "/quotas", map[string]any{"client_id": clientID,
		"values": map[string]any{"producer_byte_rate": rate}}, &set); err != nil {
		return nil, err
	}
	h := &hooks{}
	// uncompressed, so that the bytes charged are the bytes sent (kgo compresses by default)
	cl, err := c.client(clientID, h, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return nil, err
	}
	big := bytes.Repeat([]byte("x"), 1000)
	sends := []result{}
	for batch := 0; batch < 3; batch++ { // 8 KB a send, one after another
		rs := []*kgo.Record{}
		for i := 0; i < 8; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: big})
		}
		start := time.Now()
		if _, err := produced(cl.ProduceSync(ctx, rs...)); err != nil {
			cl.Close()
			return nil, err
		}
		sends = append(sends, result{"started_ms": float64(start.UnixNano()) / 1e6,
			"took_ms": float64(time.Since(start).Microseconds()) / 1e3})
	}
	cl.Close()
	h.mu.Lock()
	out := result{"quota": set, "client_throttles": append([]result{}, h.throttles...), "sends": sends}
	h.mu.Unlock()
	if out["journal"], err = c.journal("Produce", clientID); err != nil {
		return nil, err
	}
	var events []struct {
		APIKey               int    `json:"api_key"`
		ThrottleMs           int    `json:"throttle_ms"`
		ClientShouldThrottle bool   `json:"client_should_throttle"`
		Mode                 string `json:"mode"`
		EarlyMs              *int   `json:"early_ms"`
		HeldWhileMuted       *bool  `json:"held_while_muted"`
	}
	if err := c.get("/throttles?client_id="+clientID, &events); err != nil {
		return nil, err
	}
	evs := []result{}
	for _, e := range events {
		evs = append(evs, result{"api_key": e.APIKey, "throttle_ms": e.ThrottleMs, "client_should_throttle": e.ClientShouldThrottle,
			"mode": e.Mode, "early_ms": e.EarlyMs, "held_while_muted": e.HeldWhileMuted})
	}
	out["throttle_events"] = evs
	if out["log_end_offset"], err = c.logEndOffset(topic); err != nil {
		return nil, err
	}
	return out, nil
}

// controlMain runs one scenario: os.Args[2:] are SCENARIO BOOTSTRAP ADMIN.
func controlMain(args []string) int {
	scenarios := map[string]func(*controller, context.Context) (result, error){
		"produce-retry": (*controller).produceRetry, "hold-fetch": (*controller).holdFetch,
		"disconnect": (*controller).disconnect, "quota": (*controller).quota,
	}
	if len(args) != 3 || scenarios[args[0]] == nil {
		fmt.Fprintln(os.Stderr, "usage: groupconsumers control {produce-retry|hold-fetch|disconnect|quota} BOOTSTRAP ADMIN")
		return 2
	}
	name := args[0]
	c := &controller{bootstrap: args[1], admin: args[2], http: &http.Client{Timeout: 10 * time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*controlDeadline)
	defer cancel()
	out, err := scenarios[name](c, ctx)
	if err == nil && ctx.Err() != nil {
		err = errors.New("the scenario ran out of time")
	}
	if err != nil {
		out = result{"error": err.Error()}
	}
	out["scenario"], out["ok"] = name, err == nil
	line, jerr := json.Marshal(out)
	if jerr != nil {
		line, _ = json.Marshal(result{"scenario": name, "ok": false, "error": jerr.Error()})
		err = jerr
	}
	fmt.Println(string(line))
	if err != nil {
		return 1
	}
	return 0
}
