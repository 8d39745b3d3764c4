package ops_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// QueueRunNow makes a queue's retrying messages visible at once, after a
// dry run that only counts them, both audited; a read-only service, a
// DLQ's name and a queue that does not exist are refused, saying what to
// give instead.
func TestQueueRunNow(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.Retrying(t, s, q)

	dry, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q, DryRun: true})
	if err != nil || dry.Visible != 1 || !hasHint(dry.Next, ops.OpQueueRunNow, map[string]any{"queue": q}) {
		t.Fatalf("dry run = %+v, %v; want 1 and the real call next", dry, err)
	}
	out, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q})
	if err != nil || out.Visible != 1 || !hasHint(out.Next, ops.OpQueueMessages, map[string]any{"queue": q}) {
		t.Fatalf("run now = %+v, %v; want 1 made visible", out, err)
	}
	// No worker serves the queue: the result says so, and how to start one.
	if out.Workers == nil || out.Workers.Served() || !hasHint(out.Next, ops.OpWork, map[string]any{"queue": q}) {
		t.Errorf("run now with no worker: workers %+v, next %+v; want it said, with a worker to start", out.Workers, out.Next)
	}
	// Paused, the queue is resumed first.
	paused := newQueue(t, s, nil)
	pgtest.Retrying(t, s, paused)
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: paused}); err != nil {
		t.Fatal(err)
	}
	if out, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: paused}); err != nil || out.Visible != 1 || len(out.Next) == 0 ||
		out.Next[0].Op != ops.OpQueueResume || !strings.Contains(out.Next[0].Why, "is paused") {
		t.Errorf("run now of a paused queue = %+v, %v; want its resume first", out, err)
	}
	if got, err := s.Read(ctx, q, time.Minute, 1); err != nil || len(got) != 1 || got[0].ReadCount != 2 {
		t.Fatalf("a read after run now = %+v, %v; want the message, at its second attempt", got, err)
	}
	var audited, dryRuns int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE arguments->>'dry_run' = 'true') FROM pgbus.audit_log WHERE tool = $1 AND arguments->>'queue' = $2`,
		ops.OpQueueRunNow, q).Scan(&audited, &dryRuns); err != nil || audited != 2 || dryRuns != 1 {
		t.Errorf("%d audit entries of run now for %s, %d dry runs (%v); want the dry run and the real call, as for every write", audited, q, dryRuns, err)
	}

	ro := newService(t, s, ops.Options{ReadOnly: true})
	if _, err := ro.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q}); !errors.Is(err, ops.ErrReadOnly) {
		t.Errorf("read-only run now: %v; want ErrReadOnly", err)
	}
	for queue, want := range map[string]string{q + "_dlq": "dead-letter queue of", q + "_gone": "does not exist", "": "queue is required", "Bad;Name": "lowercase"} {
		_, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: queue})
		if err == nil || !strings.Contains(err.Error(), want) || len(ops.NextSteps(err)) == 0 {
			t.Errorf("run now of %q: %v (next %v); want it refused saying %q, with a next step", queue, err, ops.NextSteps(err), want)
		}
	}
}
