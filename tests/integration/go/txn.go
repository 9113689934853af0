// franz-go transactions against mockbroker, for tests/integration/test_transactions_franz_go.py.
//
//	groupconsumers txn SCENARIO BOOTSTRAP TOPIC PARTITIONS
//
// The topic exists with PARTITIONS partitions (the Python test creates it).  Scenarios:
//
//	commit-abort  two kgo transactional producers (kgo.TransactionalID) run overlapping
//	              transactions over every partition, committing some and aborting others (each
//	              flushed first, so aborted records are in the log); a last committed transaction
//	              writes an "end" record to every partition.  A read_committed and a read_uncommitted
//	              consumer read every partition up to those "end" records.
//	fence         producers a, b, c share a transactional id.  a writes in a transaction; b
//	              initializes (fencing a: its transaction is aborted) and commits one of its own; a's
//	              EndTransaction(TryCommit) fails.  b writes in a new transaction, c fences it and
//	              commits; b's next produce and its EndTransaction(TryCommit) fail.  The errors kgo
//	              returns are reported.
//	timeout       a producer with kgo.TransactionTimeout(1500 ms) writes in a transaction and
//	              waits (polling kadm.DescribeTransactions) until the coordinator has aborted it; then
//	              its EndTransaction(TryCommit) fails: the error kgo returns.
//	admin         an empty id, a committed, an aborted and an open transaction, then kadm's
//	              DescribeTransactions, ListTransactions (all, a state filter, an id pattern) and
//	              DescribeProducers of the topic.
//	ctp           exactly-once consume-transform-produce: an idempotent producer writes ctpRecords
//	              records to TOPIC; a kgo.GroupTransactSession in a KIP-848 group
//	              (kgo.ServerSideBalancer, the uniform assignor) reads them read_committed, a poll at
//	              a time, and writes each as "out-VALUE" to the same partition of TOPIC-out (created
//	              by the test) in a transaction that commits the group's offsets with it.  Records are
//	              produced one by one (kgo.Produce) with franz-go's defaults (linger 10 ms, up to 5
//	              produce requests in flight per broker), so a partition's batches pipeline.  Then a
//	              last transaction writes an "end" record to every output partition, and a
//	              read_committed consumer reads TOPIC-out up to them.  Reported: the transactions,
//	              how many were aborted, every error a produce promise got, the output read, the
//	              group's committed offsets and the input's end offsets.
//
// stdout gets exactly one line, a JSON object: {"scenario": ..., "ok": true, ...what was seen}.
// Exit 0 on success, 1 on any error or when the scenario is not done within txnDeadline (the JSON
// line then has "error"), 2 on bad arguments.  kgo logs to stderr when TXN_DEBUG is set.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const txnDeadline = 60 * time.Second // the whole scenario

type txnRun struct {
	bootstrap  []string
	topic      string
	partitions int32
	ctx        context.Context
	out        result
}

var printOnce sync.Once

func emit(out result) {
	printOnce.Do(func() {
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
	})
}

func txnMain(args []string) int {
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: groupconsumers txn SCENARIO BOOTSTRAP TOPIC PARTITIONS")
		return 2
	}
	n, err := strconv.Atoi(args[3])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "bad PARTITIONS", args[3])
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), txnDeadline)
	defer cancel()
	r := &txnRun{bootstrap: strings.Split(args[1], ","), topic: args[2], partitions: int32(n), ctx: ctx,
		out: result{"scenario": args[0]}}
	// the deadline holds even if a kgo call ignores its context
	timer := time.AfterFunc(txnDeadline+5*time.Second, func() {
		r.out["ok"], r.out["error"] = false, "deadline passed"
		emit(r.out)
		os.Exit(1)
	})
	defer timer.Stop()
	scenarios := map[string]func() error{
		"commit-abort": r.commitAbort, "fence": r.fence, "timeout": r.timeout, "admin": r.admin, "ctp": r.ctp,
	}
	run, ok := scenarios[args[0]]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown scenario", args[0])
		return 2
	}
	if err := run(); err != nil {
		r.out["ok"], r.out["error"] = false, err.Error()
		emit(r.out)
		return 1
	}
	r.out["ok"] = true
	emit(r.out)
	return 0
}

func (r *txnRun) opts(extra ...kgo.Opt) []kgo.Opt {
	o := []kgo.Opt{kgo.SeedBrokers(r.bootstrap...), kgo.MetadataMinAge(100 * time.Millisecond)}
	if os.Getenv("TXN_DEBUG") != "" {
		o = append(o, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil)))
	}
	return append(o, extra...)
}

func (r *txnRun) producer(txnID string, extra ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(r.opts(append([]kgo.Opt{
		kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(r.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
	}, extra...)...)...)
}

// txn runs one transaction of cl: the records to the given partitions, flushed, then committed or aborted.
func (r *txnRun) txn(cl *kgo.Client, values map[int32][]string) error {
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	return r.produce(cl, values)
}

func (r *txnRun) produce(cl *kgo.Client, values map[int32][]string) error {
	var recs []*kgo.Record
	for p, vs := range values {
		for _, v := range vs {
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte(v)})
		}
	}
	if err := cl.ProduceSync(r.ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	return nil
}

func (r *txnRun) end(cl *kgo.Client, commit bool) error {
	if err := cl.Flush(r.ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	how := kgo.TryAbort
	if commit {
		how = kgo.TryCommit
	}
	if err := cl.EndTransaction(r.ctx, how); err != nil {
		return fmt.Errorf("end (commit=%v): %w", commit, err)
	}
	return nil
}

func (r *txnRun) spread(prefix string, n int) map[int32][]string {
	out := map[int32][]string{}
	for i := 0; i < n; i++ {
		p := int32(i) % r.partitions
		out[p] = append(out[p], fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

// consume reads every partition from the start until an "end" record came from each; returns the
// values seen (sorted) and whether any record was a control record or came twice.
func (r *txnRun) consume(committed bool) ([]string, error) {
	return r.consumeTopic(r.topic, committed)
}

func (r *txnRun) consumeTopic(topic string, committed bool) ([]string, error) {
	starts := map[int32]kgo.Offset{}
	for p := int32(0); p < r.partitions; p++ {
		starts[p] = kgo.NewOffset().AtStart()
	}
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(r.opts(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}),
		kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	seen := []string{}
	ended := map[int32]bool{}
	offsets := map[int32]map[int64]bool{}
	for int32(len(ended)) < r.partitions {
		fs := cl.PollFetches(r.ctx)
		if r.ctx.Err() != nil {
			return nil, fmt.Errorf("consume (read_committed=%v): %d partitions ended, %d records: %w",
				committed, len(ended), len(seen), r.ctx.Err())
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("fetch: %v", errs[0].Err)
		}
		var bad error
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Attrs.IsControl() {
				bad = fmt.Errorf("a control record at %d/%d", rec.Partition, rec.Offset)
			}
			if offsets[rec.Partition] == nil {
				offsets[rec.Partition] = map[int64]bool{}
			}
			if offsets[rec.Partition][rec.Offset] {
				bad = fmt.Errorf("offset %d/%d delivered twice", rec.Partition, rec.Offset)
			}
			offsets[rec.Partition][rec.Offset] = true
			v := string(rec.Value)
			seen = append(seen, v)
			if v == fmt.Sprintf("end-%d", rec.Partition) {
				ended[rec.Partition] = true
			}
		})
		if bad != nil {
			return nil, bad
		}
	}
	sort.Strings(seen)
	return seen, nil
}

func sortedValues(m map[int32][]string) []string {
	out := []string{}
	for _, vs := range m {
		out = append(out, vs...)
	}
	sort.Strings(out)
	return out
}

func (r *txnRun) commitAbort() error {
	a, err := r.producer("fg-txn-a")
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := r.producer("fg-txn-b")
	if err != nil {
		return err
	}
	defer b.Close()
	committed, aborted := []string{}, []string{}
	// rounds of two overlapping transactions: a's opens, b's opens, then they end in the order given
	rounds := []struct{ aCommit, bCommit, aFirst bool }{
		{true, false, false}, {false, true, true}, {true, true, false}, {false, false, true}}
	for i, rd := range rounds {
		av, bv := r.spread(fmt.Sprintf("a%d", i), 3*int(r.partitions)), r.spread(fmt.Sprintf("b%d", i), 2*int(r.partitions))
		if err := r.txn(a, av); err != nil {
			return fmt.Errorf("a round %d: %w", i, err)
		}
		if err := r.txn(b, bv); err != nil {
			return fmt.Errorf("b round %d: %w", i, err)
		}
		ends := []struct {
			cl     *kgo.Client
			commit bool
			vs     map[int32][]string
		}{{a, rd.aCommit, av}, {b, rd.bCommit, bv}}
		if !rd.aFirst {
			ends[0], ends[1] = ends[1], ends[0]
		}
		for _, e := range ends {
			if err := r.end(e.cl, e.commit); err != nil {
				return fmt.Errorf("round %d: %w", i, err)
			}
			if e.commit {
				committed = append(committed, sortedValues(e.vs)...)
			} else {
				aborted = append(aborted, sortedValues(e.vs)...)
			}
		}
	}
	last := map[int32][]string{}
	for p := int32(0); p < r.partitions; p++ {
		last[p] = []string{fmt.Sprintf("end-%d", p)}
	}
	if err := r.txn(a, last); err != nil {
		return err
	}
	if err := r.end(a, true); err != nil {
		return err
	}
	committed = append(committed, sortedValues(last)...)
	sort.Strings(committed)
	sort.Strings(aborted)
	r.out["committed"], r.out["aborted"] = committed, aborted
	if r.out["read_committed"], err = r.consume(true); err != nil {
		return err
	}
	if r.out["read_uncommitted"], err = r.consume(false); err != nil {
		return err
	}
	return nil
}

// errInfo names the error kgo returned: its text and the Kafka error code it wraps, if any.
func errInfo(err error) result {
	if err == nil {
		return nil
	}
	out := result{"text": err.Error()}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		out["kafka"] = ke.Message
	}
	return out
}

func (r *txnRun) fence() error {
	clients := map[string]*kgo.Client{}
	for _, name := range []string{"a", "b", "c"} {
		cl, err := r.producer("fg-fence")
		if err != nil {
			return err
		}
		defer cl.Close()
		clients[name] = cl
	}
	a, b, c := clients["a"], clients["b"], clients["c"]
	if err := r.txn(a, map[int32][]string{0: {"a-0"}}); err != nil {
		return fmt.Errorf("a: %w", err)
	}
	if err := a.Flush(r.ctx); err != nil {
		return err
	}
	// b's first produce initializes its producer id: InitProducerId fences a (a's transaction is aborted)
	if err := r.txn(b, map[int32][]string{1: {"b-0"}}); err != nil {
		return fmt.Errorf("b: %w", err)
	}
	if err := r.end(b, true); err != nil {
		return fmt.Errorf("b: %w", err)
	}
	// a ends its transaction: EndTxn with the fenced epoch
	err := a.EndTransaction(r.ctx, kgo.TryCommit)
	r.out["a_end_error"] = errInfo(err)
	if err == nil {
		return errors.New("the fenced producer a committed")
	}
	// b opens another transaction and is fenced by c in turn; b then produces to the partition
	// its aborted transaction had (Produce with the fenced epoch) and tries to commit
	if err := r.txn(b, map[int32][]string{0: {"b-1"}}); err != nil {
		return fmt.Errorf("b: %w", err)
	}
	if err := b.Flush(r.ctx); err != nil {
		return err
	}
	if err := r.txn(c, map[int32][]string{2: {"c-0"}}); err != nil {
		return fmt.Errorf("c: %w", err)
	}
	if err := r.end(c, true); err != nil {
		return fmt.Errorf("c: %w", err)
	}
	perr := r.produce(b, map[int32][]string{0: {"b-2"}})
	r.out["b_produce_error"] = errInfo(perr)
	eerr := b.EndTransaction(r.ctx, kgo.TryCommit)
	r.out["b_end_error"] = errInfo(eerr)
	if perr == nil || eerr == nil {
		return errors.New("the fenced producer b produced or committed")
	}
	adm := kadm.NewClient(c)
	d, err := adm.DescribeTransactions(r.ctx, "fg-fence")
	if err != nil {
		return err
	}
	t := d["fg-fence"]
	r.out["state"], r.out["producer_epoch"], r.out["producer_id"] = t.State, t.ProducerEpoch, t.ProducerID
	return nil
}

func (r *txnRun) timeout() error {
	cl, err := r.producer("fg-timeout", kgo.TransactionTimeout(1500*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := r.txn(cl, map[int32][]string{0: {"t-0", "t-1"}}); err != nil {
		return err
	}
	if err := cl.Flush(r.ctx); err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	states := []string{}
	for {
		d, err := adm.DescribeTransactions(r.ctx, "fg-timeout")
		if err != nil {
			return err
		}
		st := d["fg-timeout"].State
		if len(states) == 0 || states[len(states)-1] != st {
			states = append(states, st)
		}
		if st == "CompleteAbort" {
			r.out["producer_epoch_after_abort"] = d["fg-timeout"].ProducerEpoch
			break
		}
		select {
		case <-r.ctx.Done():
			return fmt.Errorf("the transaction was not aborted (states %v): %w", states, r.ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	r.out["states"] = states
	err = cl.EndTransaction(r.ctx, kgo.TryCommit)
	r.out["end_error"] = errInfo(err)
	if err == nil {
		return errors.New("EndTransaction committed a transaction the coordinator aborted")
	}
	return nil
}

func (r *txnRun) admin() error {
	ids := map[string]*kgo.Client{}
	for _, id := range []string{"fg-adm-empty", "fg-adm-commit", "fg-adm-abort", "fg-adm-open"} {
		cl, err := r.producer(id)
		if err != nil {
			return err
		}
		defer cl.Close()
		ids[id] = cl
	}
	// an empty transaction: the producer id is initialized only (kgo does it on a first produce, so
	// the transaction is ended with nothing in it: TryAbort of nothing sends no EndTxn)
	if err := ids["fg-adm-empty"].BeginTransaction(); err != nil {
		return err
	}
	if err := ids["fg-adm-empty"].EndTransaction(r.ctx, kgo.TryAbort); err != nil {
		return err
	}
	for id, commit := range map[string]bool{"fg-adm-commit": true, "fg-adm-abort": false} {
		if err := r.txn(ids[id], map[int32][]string{0: {id}, 1: {id}}); err != nil {
			return err
		}
		if err := r.end(ids[id], commit); err != nil {
			return err
		}
	}
	if err := r.txn(ids["fg-adm-open"], map[int32][]string{1: {"open-0", "open-1"}, 2: {"open-2"}}); err != nil {
		return err
	}
	adm := kadm.NewClient(ids["fg-adm-commit"])
	described, err := adm.DescribeTransactions(r.ctx, "fg-adm-empty", "fg-adm-commit", "fg-adm-abort", "fg-adm-open",
		"fg-adm-unknown")
	if err != nil {
		return fmt.Errorf("describe transactions: %w", err)
	}
	desc := result{}
	for id, d := range described {
		parts := map[string][]int32{}
		for t, ps := range d.Topics {
			for p := range ps {
				parts[t] = append(parts[t], p)
			}
			sort.Slice(parts[t], func(i, j int) bool { return parts[t][i] < parts[t][j] })
		}
		desc[id] = result{"coordinator": d.Coordinator, "state": d.State, "timeout_ms": d.TimeoutMillis,
			"start": d.StartTimestamp, "producer_id": d.ProducerID, "producer_epoch": d.ProducerEpoch,
			"partitions": parts, "error": errInfo(d.Err)}
	}
	r.out["described"] = desc
	listed := func(states []string, pattern string) (result, error) {
		l, err := adm.ListTransactionsByTxPattern(r.ctx, nil, states, pattern)
		if err != nil {
			return nil, err
		}
		out := result{}
		for id, t := range l {
			if strings.HasPrefix(id, "fg-adm-") {
				out[id] = result{"coordinator": t.Coordinator, "producer_id": t.ProducerID, "state": t.State}
			}
		}
		return out, nil
	}
	if r.out["listed"], err = listed(nil, ""); err != nil {
		return fmt.Errorf("list transactions: %w", err)
	}
	if r.out["listed_ongoing"], err = listed([]string{"Ongoing"}, ""); err != nil {
		return err
	}
	if r.out["listed_complete"], err = listed([]string{"CompleteCommit", "CompleteAbort"}, ""); err != nil {
		return err
	}
	if r.out["listed_pattern"], err = listed(nil, "fg-adm-(empty|open)"); err != nil {
		return err
	}
	producers, err := adm.DescribeProducers(r.ctx, kadm.TopicsSet{r.topic: {}})
	if err != nil {
		return fmt.Errorf("describe producers: %w", err)
	}
	prods := result{}
	for _, p := range producers.SortedPartitions() {
		ps := []result{}
		for _, d := range p.ActiveProducers.Sorted() {
			ps = append(ps, result{"producer_id": d.ProducerID, "epoch": d.ProducerEpoch, "last_sequence": d.LastSequence,
				"coordinator_epoch": d.CoordinatorEpoch, "txn_start_offset": d.CurrentTxnStartOffset,
				"last_timestamp": d.LastTimestamp})
		}
		prods[strconv.Itoa(int(p.Partition))] = result{"leader": p.Leader, "error": errInfo(p.Err), "producers": ps}
	}
	r.out["producers"] = prods
	return nil
}

const (
	ctpRecords    = 400
	ctpPoll       = 100  // records a transaction reads at most
	ctpPad        = 200  // bytes of padding in each output record
	ctpBatchBytes = 2048 // kgo.ProducerBatchMaxBytes: a transaction's records of a partition take several batches
)

// ctp: see the scenario list at the top.
func (r *txnRun) ctp() error {
	in, out, group := r.topic, r.topic+"-out", "fg-ctp"
	input, err := kgo.NewClient(r.opts(kgo.DefaultProduceTopic(in), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return err
	}
	var recs []*kgo.Record
	for i := 0; i < ctpRecords; i++ {
		recs = append(recs, &kgo.Record{Partition: int32(i) % r.partitions, Value: []byte(fmt.Sprintf("in-%03d", i))})
	}
	err = input.ProduceSync(r.ctx, recs...).FirstErr()
	input.Close()
	if err != nil {
		return fmt.Errorf("input: %w", err)
	}
	sess, err := kgo.NewGroupTransactSession(r.opts(
		kgo.TransactionalID("fg-ctp"), kgo.DefaultProduceTopic(out), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ProducerBatchMaxBytes(ctpBatchBytes),
	)...)
	if err != nil {
		return err
	}
	defer sess.Close()
	var mu sync.Mutex
	produceErrors := []string{}
	txns, aborted, done := 0, 0, 0
	for done < ctpRecords {
		if r.ctx.Err() != nil {
			return fmt.Errorf("ctp: %d of %d records done in %d transactions: %w", done, ctpRecords, txns, r.ctx.Err())
		}
		fs := sess.PollRecords(r.ctx, ctpPoll)
		if errs := fs.Errors(); len(errs) > 0 {
			return fmt.Errorf("poll: %v", errs[0].Err)
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		n := 0
		fs.EachRecord(func(rec *kgo.Record) {
			n++
			sess.Produce(r.ctx, &kgo.Record{Partition: rec.Partition, Value: append([]byte("out-"), rec.Value...),
				Headers: []kgo.RecordHeader{{Key: "pad", Value: make([]byte, ctpPad)}}},
				func(_ *kgo.Record, err error) {
					if err != nil {
						mu.Lock()
						produceErrors = append(produceErrors, err.Error())
						mu.Unlock()
					}
				})
		})
		committed, err := sess.End(r.ctx, kgo.TryCommit)
		if err != nil {
			return fmt.Errorf("end after %d transactions: %w (produce errors %v)", txns, err, produceErrors)
		}
		txns++
		if committed {
			done += n
		} else {
			aborted++
		}
	}
	// the end records: one committed transaction of the same producer to every output partition
	cl := sess.Client()
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin end records: %w", err)
	}
	last := []*kgo.Record{}
	for p := int32(0); p < r.partitions; p++ {
		last = append(last, &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("end-%d", p))})
	}
	if err := cl.ProduceSync(r.ctx, last...).FirstErr(); err != nil {
		return fmt.Errorf("end records: %w", err)
	}
	if err := cl.EndTransaction(r.ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit end records: %w", err)
	}
	r.out["transactions"], r.out["aborted"], r.out["produce_errors"] = txns, aborted, produceErrors
	if r.out["output"], err = r.consumeTopic(out, true); err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	offsets, err := adm.FetchOffsets(r.ctx, group)
	if err != nil {
		return fmt.Errorf("fetch offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(r.ctx, in)
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	committedOffsets, endOffsets := result{}, result{}
	for p := int32(0); p < r.partitions; p++ {
		o, _ := offsets.Lookup(in, p)
		committedOffsets[strconv.Itoa(int(p))] = o.At
		e, _ := ends.Lookup(in, p)
		endOffsets[strconv.Itoa(int(p))] = e.Offset
	}
	r.out["committed_offsets"], r.out["end_offsets"] = committedOffsets, endOffsets
	return nil
}
