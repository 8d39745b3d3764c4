package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// The demo's queues.
const (
	DemoOrders = "demo_orders"
	DemoEmails = "demo_emails"
)

// demoSettings are the demo queues' retry settings: short, so that a run
// takes seconds.
func demoSettings() config.Settings {
	maxRetries, jitter := 4, 0.1
	vt, backoff, backoffMax := config.Duration(2*time.Second), config.Duration(50*time.Millisecond), config.Duration(time.Second)
	return config.Settings{MaxRetries: &maxRetries, VisibilityTimeout: &vt, Backoff: &backoff, BackoffMax: &backoffMax, Jitter: &jitter}
}

// demoHandler is the handler both demo queues run: the demo type, with an
// attempt timeout short enough for the simulated hangs to fail fast.
func demoHandler() handlers.Spec {
	return handlers.Spec{Type: handlers.TypeDemo, Timeout: handlers.Duration(300 * time.Millisecond)}
}

// demoGroup is a batch of alike jobs of the demo.
type demoGroup struct {
	queue, kind, simulate string
	count                 int
	badInput, expired     bool
}

// demoPlan is what pgbus demo sends: mostly jobs that succeed, some that
// succeed after retries, and some that die for different reasons.
var demoPlan = []demoGroup{
	{queue: DemoOrders, kind: "charge_card", simulate: handlers.SimulateOK, count: 160},
	{queue: DemoOrders, kind: "charge_card", simulate: handlers.SimulateFlaky, count: 40},
	{queue: DemoOrders, kind: "charge_card", simulate: handlers.SimulateOutage, count: 12},
	{queue: DemoOrders, kind: "charge_card", count: 6, badInput: true},
	{queue: DemoOrders, kind: "refund_order", simulate: handlers.SimulateOK, count: 20},
	{queue: DemoOrders, kind: "refund_order", simulate: handlers.SimulatePanic, count: 2},
	{queue: DemoEmails, kind: "send_receipt", simulate: handlers.SimulateOK, count: 90},
	{queue: DemoEmails, kind: "send_receipt", simulate: handlers.SimulateThrottled, count: 10},
	{queue: DemoEmails, kind: "send_receipt", simulate: handlers.SimulateTimeout, count: 4},
	{queue: DemoEmails, kind: "send_receipt", simulate: handlers.SimulateOK, count: 3, expired: true},
}

// demoMessages builds the demo's messages per queue, in a fixed shuffled
// order, so that every run is the same.
func demoMessages(now time.Time) (map[string][]store.NewMessage, int, error) {
	type job struct {
		g demoGroup
		i int
	}
	var jobs []job
	for _, g := range demoPlan {
		for i := range g.count {
			jobs = append(jobs, job{g, i})
		}
	}
	rng := rand.New(rand.NewPCG(2026, 11))
	rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	out := map[string][]store.NewMessage{}
	for n, j := range jobs {
		id := 1000 + n
		p := map[string]any{"order_id": id}
		if j.g.simulate != "" && j.g.simulate != handlers.SimulateOK {
			p["simulate"] = j.g.simulate
		}
		if j.g.simulate == handlers.SimulateFlaky {
			p["failures"] = 1 + j.i%2
		}
		opts := engine.SendOptions{Kind: j.g.kind, IdempotencyKey: fmt.Sprintf("demo-%s-%d", j.g.kind, id)}
		switch j.g.queue {
		case DemoOrders:
			p["amount_cents"] = 500 + (id*37)%9500
			if j.g.badInput {
				p["amount_cents"] = 0
			}
		case DemoEmails:
			p["email"] = fmt.Sprintf("customer%d@example.com", id)
		}
		if j.g.expired {
			opts.Deadline = now.Add(-time.Second) // the receipt was due before it could be sent
		}
		body, err := json.Marshal(p)
		if err != nil {
			return nil, 0, err
		}
		m, err := engine.NewMessage(json.RawMessage(body), opts)
		if err != nil {
			return nil, 0, err
		}
		out[j.g.queue] = append(out[j.g.queue], m)
	}
	return out, len(jobs), nil
}

func (a *app) demoCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the quick-start demo: flaky jobs, retries, dead letters, then what to do next",
		Long: `Run a self-contained demo on the embedded PostgreSQL (or --database-url):

 1. (re)create the queues demo_orders and demo_emails, with short retries:
    max_retries 4, backoff 50ms doubling to 1s;
 2. send a few hundred jobs for the built-in demo handler, a simulated flaky
    downstream whose behaviour each payload decides, so every run is the same:
    most succeed, bursts of 503s and 429s succeed on retry, and some die:
    an outage that outlasts the retries (demo.Unavailable), bad input
    (demo.ValidationError, at once), a handler bug (panic), hangs
    (context.DeadlineExceeded) and receipts past their deadline;
 3. run workers until every job has settled, then print the queue stats, the
    dead-letter summary, and how to connect an AI agent.

Running it again starts over: the demo queues are dropped and recreated.
The outage is over once a dead message is retried: pgbus dlq retry-all
--queue demo_orders --yes, then pgbus work --queue demo_orders --handler demo
--until-idle, and only the messages that cannot succeed are left.`,
		Example: `  pgbus demo
  go run . demo
  pgbus demo --database-url postgres://localhost/pgbus_demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkDuration("timeout", timeout, time.Hour); err != nil {
				return err
			}
			return a.demo(cmd.Context(), timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up when the jobs have not settled after this long")
	return cmd
}

func (a *app) demo(ctx context.Context, timeout time.Duration) error {
	started := time.Now()
	ctx, s, err := a.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	db := s.db
	out := a.stdout
	fmt.Fprintf(out, "pgbus demo on %s\n\n", db.Where())

	queues := []workQueue{
		{Name: DemoOrders, Concurrency: 8, Handler: demoHandler(), Settings: demoSettings()},
		{Name: DemoEmails, Concurrency: 8, Handler: demoHandler(), Settings: demoSettings()},
	}
	for _, q := range queues {
		// A fresh start: the demo's queues of an earlier run go.
		if _, err := s.ops.QueueStats(ctx, ops.QueueStatsRequest{Queue: q.Name}); err == nil {
			if _, err := s.ops.QueueDrop(ctx, ops.QueueDropRequest{Queue: q.Name, Confirm: true}); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if _, err := s.ops.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q.Name, Settings: settingsChange(q.Settings)}); err != nil {
			return err
		}
	}
	msgs, total, err := demoMessages(time.Now())
	if err != nil {
		return err
	}
	for _, q := range queues {
		if _, err := s.ops.SendBatch(ctx, q.Name, msgs[q.Name]); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "sent %d jobs: %d to %s, %d to %s; working them (max_retries 4, backoff 50ms..1s)...\n",
		total, len(msgs[DemoOrders]), DemoOrders, len(msgs[DemoEmails]), DemoEmails)

	client, err := a.newWorkers(db, queues, engine.Config{PollInterval: 100 * time.Millisecond, DrainTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- client.Run(runCtx) }()

	bar := a.newProgress(total, "settling")
	waitCtx, cancelWait := context.WithTimeout(runCtx, timeout)
	waitErr := a.waitIdle(waitCtx, s.ops, queues, func(stats []ops.QueueStats) {
		settled := 0
		for _, s := range stats {
			settled += int(s.Archived + s.DLQDepth)
		}
		bar.set(min(settled, total), total)
	})
	cancelWait()
	bar.finish()
	stop()
	if err := <-done; err != nil {
		return err
	}
	if waitErr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("demo: the jobs did not settle within %s; see pgbus queues", timeout)
	}
	took := time.Since(started)

	var stats []ops.QueueStats
	for _, q := range queues {
		res, err := s.ops.QueueStats(ctx, ops.QueueStatsRequest{Queue: q.Name})
		if err != nil {
			return err
		}
		stats = append(stats, res.Queues...)
	}
	sum, err := s.ops.DLQSummary(ctx, ops.DLQSummaryRequest{})
	if err != nil {
		return err
	}
	groups := demoGroups(sum)
	var ok, dead int64
	for _, st := range stats {
		ok += st.Archived
		dead += st.DLQDepth
	}
	fmt.Fprintf(out, "all %d jobs settled in %.1fs: %d succeeded (some after retries), %d dead-lettered\n\n", total, took.Seconds(), ok, dead)
	fmt.Fprintln(out, "Queues (pgbus queues):")
	if err := writeQueueStats(out, stats); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nDead letters (pgbus dlq summary):")
	if err := writeDeadSummary(out, groups); err != nil {
		return err
	}
	return a.demoNextSteps(out, db, groups.Groups)
}

// demoGroups keeps the summary groups of the demo's queues.
func demoGroups(sum ops.DLQSummary) ops.DLQSummary {
	out := ops.DLQSummary{Groups: []ops.DeadGroup{}}
	for _, g := range sum.Groups {
		if g.DLQ == store.DLQName(DemoOrders) || g.DLQ == store.DLQName(DemoEmails) {
			out.Groups = append(out.Groups, g)
			out.Total += g.Count
		}
	}
	out.TotalGroups = len(out.Groups)
	return out
}

// mcpServer is pgbus's entry in an MCP client's configuration file.
type mcpServer struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

func (a *app) demoNextSteps(w io.Writer, db *database, groups []ops.DeadGroup) error {
	server := mcpServer{Command: "pgbus", Args: []string{"serve"}}
	setup := ""
	switch {
	case db.Embedded == nil:
		server.Env = map[string]string{EnvDatabaseURL: "<the database URL of this run>"}
		setup = "  (with DATABASE_URL set as for this run)\n"
	case a.sources["data-dir"] != "":
		dir := db.Embedded.DataDir()
		server.Args = append(server.Args, "--data-dir", dir)
		setup = "  export " + EnvDataDir + "=" + vocab.ShellQuote(dir) + "\n"
	}
	mcp, err := mcpConfigHints(server)
	if err != nil {
		return err
	}
	sample := "ID"
	for _, g := range groups {
		if g.SourceQueue == DemoOrders && len(g.SampleMsgIDs) > 0 {
			sample = fmt.Sprint(g.SampleMsgIDs[0])
			break
		}
	}
	_, err = fmt.Fprintf(w, `
Try next:
%[5]s  pgbus dlq list --queue %[1]s
  pgbus dlq show %[4]s --queue %[1]s
  # The outage is over: retry its victims, then work the queue until it is empty.
  pgbus dlq retry-all --queue %[1]s --error-class %[2]s --yes
  pgbus work --queue %[1]s --handler demo --until-idle
  pgbus dlq summary

Connect an AI agent (MCP) to investigate and repair these dead letters:
  pgbus serve%[6]s
      MCP over stdio; the agent's client starts it. For Claude Code:
  claude mcp add pgbus -- pgbus serve%[6]s
%[3]s  Then ask: "Why are jobs dying in %[1]s? Retry the ones that can succeed now."
  (pgbus must be on PATH: go build -o pgbus . or go install.)
`, DemoOrders, handlers.ClassDemoUnavailable, mcp, sample, setup, argsSuffix(server.Args[1:]))
	return err
}

func argsSuffix(args []string) string {
	if len(args) == 0 {
		return ""
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = vocab.ShellQuote(a)
	}
	return " " + strings.Join(quoted, " ")
}
