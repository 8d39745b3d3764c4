package ops_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// QueueRunNow makes a queue's retrying messages visible at once, after a
// dry run that only counts them, both audited; a read-only service, a
// DLQ's name and a queue that does not exist are refused, saying what to
// give instead.
func TestQueueRunNow(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{Handlers: map[string]string{}}) // the command line's: its next steps start workers
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
	if err := s.Pool().QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE arguments->>'dry_run' = 'true') FROM pgbus.audit_log WHERE tool = $1 AND arguments->>'queue' = $2 AND NOT arguments ? 'kind'`,
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

// QueueRunNow with a kind takes only that kind's retrying messages, says
// which kind it took, keeps the kind in its next step and its audit
// entry; a kind with a NUL character or longer than a kind can be is
// refused, naming the field, and nothing moves.
func TestQueueRunNowOfOneKind(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	for _, kind := range []string{"mail", "sms"} {
		pgtest.RetryingMessage(t, s, q, store.NewMessage{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(`{"pgbus_kind": "` + kind + `"}`)})
	}
	for kind, field := range map[string]string{"ma\x00il": "kind", strings.Repeat("k", store.MaxDeadFilterName+1): "kind"} {
		_, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q, Kind: kind})
		var e *ops.Error
		if !errors.As(err, &e) || !errors.Is(err, ops.ErrInvalid) || e.Field != field {
			t.Errorf("run now of kind %.20q: %v; want it refused as invalid, naming %s", kind, err, field)
		}
	}
	dry, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q, Kind: "mail", DryRun: true})
	if err != nil || dry.Visible != 1 || dry.Kind != "mail" || !hasHint(dry.Next, ops.OpQueueRunNow, map[string]any{"queue": q, "kind": "mail"}) {
		t.Fatalf("dry run of kind mail = %+v, %v; want 1, and the real call of the same kind next", dry, err)
	}
	out, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q, Kind: "mail"})
	if err != nil || out.Visible != 1 {
		t.Fatalf("run now of kind mail = %+v, %v; want 1", out, err)
	}
	if rest, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q, DryRun: true}); err != nil || rest.Visible != 1 {
		t.Fatalf("dry run of the whole queue after = %+v, %v; want the sms message still retrying", rest, err)
	}
	// A kind no retrying message has, with others waiting, points at the
	// listing that shows their kinds.
	none, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q, Kind: "mial"})
	if err != nil || none.Visible != 0 || !hasHint(none.Next, ops.OpQueueMessages, map[string]any{"queue": q, "state": "retrying"}) ||
		!strings.Contains(none.Next[0].Why, `no message of kind "mial" waits to retry, while other kinds have 1 waiting`) {
		t.Errorf("run now of a kind none has = %+v, %v; want the retrying messages listed next, saying why", none, err)
	}
	var kinds int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pgbus.audit_log WHERE tool = $1 AND arguments->>'queue' = $2 AND arguments->>'kind' = 'mail'`,
		ops.OpQueueRunNow, q).Scan(&kinds); err != nil || kinds != 2 {
		t.Errorf("%d audit entries of run now of kind mail (%v); want the dry run and the call", kinds, err)
	}
}
