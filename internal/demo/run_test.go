package demo_test

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/demo"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A run sends every job of the plan, reports each settled, and keeps only
// the demo's own dead-letter groups; a second run starts afresh.
func TestRun(t *testing.T) {
	ctx := pgtest.Context(t)
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var sent map[string]int
		var lastSettled, firstSettled atomic.Int64
		firstSettled.Store(-1)
		rep, err := demo.Run(ctx, st, svc, demo.Options{Timeout: time.Minute,
			Sent: func(perQueue map[string]int, _ int) { sent = perQueue },
			Progress: func(settled, _ int) {
				firstSettled.CompareAndSwap(-1, int64(settled))
				lastSettled.Store(int64(settled))
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		// The jobs that wait out their backoff keep the first look's count
		// below the total.
		if rep.Jobs != 347 || sent[demo.Orders]+sent[demo.Emails] != rep.Jobs || lastSettled.Load() != int64(rep.Jobs) || firstSettled.Load() < 0 || firstSettled.Load() >= int64(rep.Jobs) {
			t.Fatalf("report %d jobs, sent %v, progress from %d to %d", rep.Jobs, sent, firstSettled.Load(), lastSettled.Load())
		}
		if rep.Succeeded+rep.DeadLettered != int64(rep.Jobs) || rep.DeadLettered != 27 || rep.Dead.Total != 27 || len(rep.Queues) != 2 {
			t.Fatalf("report: %d succeeded, %d dead, summary total %d, %d queues", rep.Succeeded, rep.DeadLettered, rep.Dead.Total, len(rep.Queues))
		}
	}
}

// The next steps point an agent's server at the database the demo ran on.
func TestNextSteps(t *testing.T) {
	groups := []ops.DeadGroup{{SourceQueue: demo.Orders, SampleMsgIDs: []int64{42}}}
	for _, c := range []struct {
		where      demo.Where
		want, lack []string
	}{
		{demo.Where{}, []string{"pgbus dlq show 42 --queue demo_orders", "claude mcp add pgbus -- pgbus serve\n"}, []string{"DATABASE_URL", "PGBUS_DATA_DIR"}},
		{demo.Where{External: true}, []string{`"env":{"DATABASE_URL":"<the database URL of this run>"}`, "(with DATABASE_URL set as for this run)"}, []string{"--data-dir", `\u003c`}},
		{demo.Where{DataDir: "/tmp/my dir"}, []string{"export PGBUS_DATA_DIR='/tmp/my dir'", "pgbus serve --data-dir '/tmp/my dir'"}, []string{"DATABASE_URL"}},
	} {
		text, err := demo.NextSteps(c.where, groups)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range c.want {
			if !strings.Contains(text, s) {
				t.Errorf("%+v: next steps lack %q:\n%s", c.where, s, text)
			}
		}
		for _, s := range c.lack {
			if strings.Contains(text, s) {
				t.Errorf("%+v: next steps name %q:\n%s", c.where, s, text)
			}
		}
	}
}
