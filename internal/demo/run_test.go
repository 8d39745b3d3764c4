package demo_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/demo"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
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
		{demo.Where{External: true}, []string{`"env":{"DATABASE_URL":"<the database URL of this run>"}`, "(with DATABASE_URL set as for this run)",
			"claude mcp add pgbus -e DATABASE_URL='<the database URL of this run>' -- pgbus serve\n"}, []string{"--data-dir", `\u003c`}},
		// The file's queues may run real handlers: the agent's server runs none.
		{demo.Where{Config: "/etc/pgbus.yaml"}, []string{"claude mcp add pgbus -- pgbus serve --config /etc/pgbus.yaml --no-workers\n",
			`"args":["serve","--config","/etc/pgbus.yaml","--no-workers"]`}, []string{"DATABASE_URL"}},
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

// On a busy database, whose other queues hold more dead-letter groups
// than a summary lists (store.MaxDeadGroups), each larger than all the
// demo's dead messages together, the demo still reports its own groups,
// all 27 of its dead messages, and its next step shows a real message of
// them: it used to keep its groups from the summary of every queue, which
// listed none of them, and its next step said "pgbus dlq show ID".
func TestRunOnABusyDatabase(t *testing.T) {
	ctx := pgtest.Context(t)
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const perGroup = 28 // more than the demo's dead messages, 27
	groups := store.MaxDeadGroups + 10
	for q, queue := range []string{pgtest.NewQueue(t, st, "busy_a"), pgtest.NewQueue(t, st, "busy_b")} {
		var specs []pgtest.DeadSpec
		for g := q; g < groups; g += 2 {
			for range perGroup {
				specs = append(specs, pgtest.DeadSpec{Kind: fmt.Sprintf("kind_%d", g%25), Class: fmt.Sprintf("Class%d", g/25)})
			}
		}
		pgtest.DeadLetter(t, st, queue, specs...)
	}
	if sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{All: true}); err != nil || !sum.Truncated || sum.TotalGroups < groups {
		t.Fatalf("the other queues' summary: %d of %d groups, truncated %v, %v; want more groups than one summary lists", len(sum.Groups), sum.TotalGroups, sum.Truncated, err)
	}

	rep, err := demo.Run(ctx, st, svc, demo.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if rep.DeadLettered != 27 || rep.Dead.Total != 27 || len(rep.Dead.Groups) == 0 {
		t.Fatalf("report on a busy database: %d dead, summary total %d in %d groups; want the demo's 27 in its own groups", rep.DeadLettered, rep.Dead.Total, len(rep.Dead.Groups))
	}
	for _, g := range rep.Dead.Groups {
		if g.SourceQueue != demo.Orders && g.SourceQueue != demo.Emails {
			t.Errorf("the demo's summary lists a group of %s: %+v", g.SourceQueue, g)
		}
	}
	next, err := demo.NextSteps(demo.Where{}, rep.Dead.Groups)
	if err != nil {
		t.Fatal(err)
	}
	_, show, ok := strings.Cut(next, "pgbus dlq show ")
	id, _, _ := strings.Cut(show, " ")
	msgID, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil {
		t.Fatalf("the next steps show no message by its id (%q):\n%s", id, next)
	}
	if m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: demo.Orders, MsgID: msgID}); err != nil || m.MsgID != msgID {
		t.Fatalf("the next step's message %d of %s: %+v, %v", msgID, demo.Orders, m, err)
	}
}
