package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// DLQOptions shape `pgbus bench dlq`.
type DLQOptions struct {
	// Messages dead messages over Queues queues and Classes error classes.
	// Defaults 1,000,000, 10 and 50.
	Messages int
	Queues   int
	Classes  int
	// Calls is how often each operation is timed. Default 30.
	Calls int
	// DeepPages is how far down the cursor chain the deep page is. Default 200.
	DeepPages int
}

func (o DLQOptions) withDefaults() DLQOptions {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Messages, 1_000_000)
	def(&o.Queues, 10)
	def(&o.Classes, 50)
	def(&o.Calls, 30)
	def(&o.DeepPages, 200)
	return o
}

// Limits of DLQOptions: each field takes 1 to its limit.
const (
	MaxDLQMessages  = 50_000_000
	MaxDLQQueues    = 100
	MaxDLQClasses   = 1000
	MaxDLQCalls     = 10_000
	MaxDLQDeepPages = 100_000
)

// Validate checks the options.
func (o DLQOptions) Validate() error {
	if o.Messages < 1 || o.Messages > MaxDLQMessages || o.Queues < 1 || o.Queues > MaxDLQQueues || o.Classes < 1 || o.Classes > MaxDLQClasses ||
		o.Calls < 1 || o.Calls > MaxDLQCalls || o.DeepPages < 1 || o.DeepPages > MaxDLQDeepPages {
		return fmt.Errorf("%w: bench dlq: messages 1..50M, queues 1..100, classes 1..1000, calls 1..10000, deep pages 1..100000", store.ErrInvalid)
	}
	return nil
}

// OpTiming is one operation's latency over repeated calls.
type OpTiming struct {
	Operation string  `json:"operation"`
	Calls     int     `json:"calls"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
}

// DLQResult is a `pgbus bench dlq` run.
type DLQResult struct {
	Messages    int        `json:"messages"`
	Queues      int        `json:"queues"`
	Classes     int        `json:"classes"`
	LoadSeconds float64    `json:"load_seconds"`
	Operations  []OpTiming `json:"operations"`
}

// RunDLQ fills DLQs of fresh queues with dead messages, times the
// operations behind the MCP tools (package ops) and the dashboard's pages
// served by its handler (server time, no network), and drops the queues.
func RunDLQ(ctx context.Context, st *store.Store, opts DLQOptions) (DLQResult, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return DLQResult{}, err
	}
	res := DLQResult{Messages: opts.Messages, Queues: opts.Queues, Classes: opts.Classes}
	queues := make([]string, opts.Queues)
	defer func() { dropQueues(ctx, st, queues) }()
	began := time.Now()
	for i := range queues {
		q, err := freshQueue(ctx, st, fmt.Sprintf("dlq%d", i))
		if err != nil {
			return res, err
		}
		queues[i] = q
		n := opts.Messages / opts.Queues
		if i < opts.Messages%opts.Queues {
			n++
		}
		if err := st.BulkLoadDead(ctx, q, n, opts.Classes); err != nil {
			return res, err
		}
	}
	res.LoadSeconds = time.Since(began).Seconds()
	ops, err := dlqOperations(ctx, st, queues, opts)
	if err != nil {
		return res, err
	}
	for _, op := range ops {
		t, err := timeOp(ctx, op.name, opts.Calls, op.fn)
		if err != nil {
			return res, err
		}
		res.Operations = append(res.Operations, t)
	}
	return res, nil
}

type namedOp struct {
	name string
	fn   func(context.Context) error
}

func dlqOperations(ctx context.Context, st *store.Store, queues []string, opts DLQOptions) ([]namedOp, error) {
	// The operations as the MCP tools run them: through the operations
	// layer, payloads allowed and asked for, so that redaction is timed too.
	svc, err := ops.New(st, ops.Options{AllowPayloads: true, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	deep, err := deepCursor(ctx, svc, queues[0], opts.DeepPages)
	if err != nil {
		return nil, err
	}
	perQueue := max(opts.Messages/opts.Queues, 1)
	pages, err := dashboardPages(ctx, st, queues, perQueue)
	if err != nil {
		return nil, err
	}
	list := func(f ops.DeadFilter, cursor string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f, Cursor: cursor, Limit: 25})
			return err
		}
	}
	return append([]namedOp{
		{"dlq list first page (all DLQs)", list(ops.DeadFilter{}, "")},
		{"dlq list first page (one queue)", list(ops.DeadFilter{Queue: queues[0]}, "")},
		{fmt.Sprintf("dlq list page %d (one queue)", opts.DeepPages+1), list(ops.DeadFilter{Queue: queues[0]}, deep)},
		{"dlq list filtered by error class", list(ops.DeadFilter{ErrorClass: "bench.Error7"}, "")},
		{"dlq show", func(ctx context.Context) error {
			_, err := svc.DLQShow(ctx, ops.DLQShowRequest{
				Queue: store.DLQName(queues[rand.IntN(len(queues))]), MsgID: int64(1 + rand.IntN(perQueue)), IncludePayload: true,
			})
			return err
		}},
		{"dlq summary", func(ctx context.Context) error {
			_, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{})
			return err
		}},
		{"queue stats (all queues)", func(ctx context.Context) error {
			_, err := svc.QueueStats(ctx, ops.QueueStatsRequest{})
			return err
		}},
	}, pages...), nil
}

func deepCursor(ctx context.Context, svc *ops.Service, queue string, pages int) (string, error) {
	cursor := ""
	for range pages {
		page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: queue}, Cursor: cursor, Limit: 25})
		if err != nil {
			return "", err
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	return cursor, nil
}

func timeOp(ctx context.Context, name string, calls int, fn func(context.Context) error) (OpTiming, error) {
	if err := fn(ctx); err != nil { // warm up
		return OpTiming{}, fmt.Errorf("bench dlq: %s: %w", name, err)
	}
	ms := make([]float64, calls)
	for i := range ms {
		began := time.Now()
		if err := fn(ctx); err != nil {
			return OpTiming{}, fmt.Errorf("bench dlq: %s: %w", name, err)
		}
		ms[i] = float64(time.Since(began)) / float64(time.Millisecond)
	}
	slices.Sort(ms)
	return OpTiming{Operation: name, Calls: calls, P50MS: *pct(ms, 0.5), P99MS: *pct(ms, 0.99)}, nil
}
