package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// cancelAfterFirst returns a context and a progress callback that cancels
// it once some work is done: a bulk call then stops after its first batch,
// as one interrupted by a signal does.
func cancelAfterFirst(parent context.Context) (context.Context, func(done, total int)) {
	ctx, cancel := context.WithCancel(parent)
	return ctx, func(done, _ int) {
		if done > 0 {
			cancel()
		}
	}
}

// partialAudit returns the result of client's last audit entry for op,
// which must be an error.
func partialAudit(t *testing.T, rows []auditRow, op string) map[string]any {
	t.Helper()
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Tool != op {
			continue
		}
		if !rows[i].IsError {
			t.Fatalf("the audit entry of the stopped %s is no error: %s", op, rows[i].Result)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(rows[i].Result), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Fatalf("no audit entry for %s in %+v", op, rows)
	return nil
}

// A bulk retry, discard, purge or run-now stopped partway keeps what it did: its
// result, its error and its audit entry count the messages handled before
// it stopped, not nothing; its next step is the same call again, which
// does the rest.
func TestStoppedBulkCallsCountWhatTheyDid(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	base := ops.WithClient(testContext(t), client)

	t.Run("retry", func(t *testing.T) {
		q := newQueue(t, s, nil)
		pgtest.DeadLetterN(t, s, q, 600, pgtest.DeadSpec{})
		ctx, progress := cancelAfterFirst(base)
		r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 100000, Progress: progress})
		var pd *ops.PartlyDone
		moved := pgtest.Live(t, s, q)
		if !errors.As(err, &pd) || !errors.Is(err, context.Canceled) || moved == 0 || moved == 600 || r.Retried != int(moved) || pd.Done != int64(moved) {
			t.Fatalf("stopped retry = %d retried, %v; want a PartlyDone counting the %d moved", r.Retried, err, moved)
		}
		if !strings.Contains(err.Error(), "stopped after retrying 500 of up to 100,000 dead messages") || pd.Until == "" || !strings.Contains(err.Error(), "the same call again with limit 99500 and until "+pd.Until+" retries the rest") {
			t.Errorf("error %q does not say how many moved and what to do", err)
		}
		if got, want := stepsJSON(t, ops.NextSteps(err)), `[{"op":"dlq_retry","args":{"limit":99500,"queue":"`+q+`","until":"`+pd.Until+`"},"why":"retries the rest"}]`; got != want {
			t.Errorf("next steps %s, want the same call again with the limit left, up to where its selection ended, %s", got, want)
		}
		m := partialAudit(t, auditRows(t, s, client), ops.OpDLQRetry)
		if m["retried"] != float64(moved) || !strings.Contains(m["error"].(string), "context canceled") {
			t.Errorf("audit entry %v, want retried %d and the error", m, moved)
		}
	})
	t.Run("discard", func(t *testing.T) {
		q := newQueue(t, s, nil)
		pgtest.DeadLetterN(t, s, q, 600, pgtest.DeadSpec{})
		ctx, progress := cancelAfterFirst(base)
		d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 1000, Confirm: true, Progress: progress})
		var pd *ops.PartlyDone
		gone := pgtest.Archived(t, s, q+"_dlq")
		if !errors.As(err, &pd) || gone == 0 || gone == 600 || d.Discarded != int(gone) || pd.Done != int64(gone) {
			t.Fatalf("stopped discard = %d discarded, %v; want a PartlyDone counting the %d archived", d.Discarded, err, gone)
		}
		if got, want := stepsJSON(t, ops.NextSteps(err)), `[{"op":"dlq_discard","args":{"confirm":true,"limit":500,"queue":"`+q+`","until":"`+pd.Until+`"},"why":"discards the rest"}]`; pd.Until == "" || got != want {
			t.Errorf("next steps %s, want the same call again with the limit left, up to where its selection ended, %s", got, want)
		}
		m := partialAudit(t, auditRows(t, s, client), ops.OpDLQDiscard)
		if m["discarded"] != float64(gone) || m["error"] == nil {
			t.Errorf("audit entry %v, want discarded %d and the error", m, gone)
		}
	})
	t.Run("run now", func(t *testing.T) {
		// Two priority levels: the call stops after the first level's
		// batch.
		q := uniqueName("runnow")
		if err := s.CreatePriorityQueue(base, q, 2); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.DropQueue(context.Background(), q) })
		pgtest.Retrying(t, s, q+"_p0")
		pgtest.Retrying(t, s, q+"_p1")
		ctx, progress := cancelAfterFirst(base)
		r, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q, Progress: progress})
		var pd *ops.PartlyDone
		if !errors.As(err, &pd) || !errors.Is(err, context.Canceled) || r.Visible != 1 || pd.Done != 1 {
			t.Fatalf("stopped run-now = %+v, %v; want a PartlyDone counting the 1 made visible", r, err)
		}
		if !strings.Contains(err.Error(), "stopped after running now 1 retrying message, which stays visible") || !strings.Contains(err.Error(), "again runs the rest now") {
			t.Errorf("error %q does not say how many were made visible and what to do", err)
		}
		if got, want := stepsJSON(t, ops.NextSteps(err)), `[{"op":"queue_run_now","args":{"queue":"`+q+`"},"why":"runs the rest now"}]`; got != want {
			t.Errorf("next steps %s, want the same call again, %s", got, want)
		}
		m := partialAudit(t, auditRows(t, s, client), ops.OpQueueRunNow)
		if m["visible"] != float64(1) || !strings.Contains(m["error"].(string), "context canceled") {
			t.Errorf("audit entry %v, want visible 1 and the error", m)
		}
		if left, err := svc.QueueRunNow(base, ops.QueueRunNowRequest{Queue: q, DryRun: true}); err != nil || left.Visible != 1 {
			t.Fatalf("retrying after the stopped call = %+v, %v; want level 1's message", left, err)
		}
	})
	t.Run("purge", func(t *testing.T) {
		q := newQueue(t, s, nil)
		pgtest.DeadLetterN(t, s, q, 1100, pgtest.DeadSpec{})
		if _, err := svc.DLQDiscard(base, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 2000, Confirm: true}); err != nil {
			t.Fatal(err)
		}
		ctx, progress := cancelAfterFirst(base)
		p, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q, Confirm: true, Progress: progress})
		var pd *ops.PartlyDone
		purged := 1100 - pgtest.Archived(t, s, q+"_dlq")
		if !errors.As(err, &pd) || purged == 0 || purged == 1100 || p.Purged != int64(purged) || pd.Done != int64(purged) {
			t.Fatalf("stopped purge = %d purged, %v; want a PartlyDone counting the %d deleted", p.Purged, err, purged)
		}
		if got, want := stepsJSON(t, ops.NextSteps(err)), `[{"op":"dlq_purge","args":{"confirm":true,"older_than":"0s","queue":"`+q+`"},"why":"purges the rest"}]`; got != want {
			t.Errorf("next steps %s, want the same call again, %s", got, want)
		}
		m := partialAudit(t, auditRows(t, s, client), ops.OpDLQPurge)
		if m["purged"] != float64(purged) || m["error"] == nil {
			t.Errorf("audit entry %v, want purged %d and the error", m, purged)
		}
	})
}

// A bulk retry cut off before it retried any message says so: none was
// retried and nothing was lost, and the same call, with its own limit,
// retries them.
func TestPartlyDoneOfNone(t *testing.T) {
	t.Parallel()
	p := &ops.PartlyDone{Verb: "retrying", Limit: 100000, Err: errors.New("the database does not answer"),
		Again: ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "orders"}}}
	want := "the database does not answer: stopped before retrying any of up to 100,000 dead messages, so none was retried and nothing was lost: they stay in their DLQ; the same call again retries them"
	if got := p.Error(); got != want {
		t.Errorf("error %q\nwant  %q", got, want)
	}
	if p.Left() != 0 {
		t.Errorf("Left = %d; want 0: the same call keeps its own limit", p.Left())
	}
}

// A retry by filter stopped partway names, as the call that does the
// rest, the same filter ending where its own selection ended: that call
// retries the rest of the same messages, and leaves the ones that died
// since, such as those the stopped call retried that died again, which a
// retry of "the rest" would otherwise retry a second time, spending its
// limit on them and leaving as many of the rest behind.
func TestStoppedRetryRestLeavesThoseDeadSince(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	svc := newService(t, s, ops.Options{})
	base := testContext(t)
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 600, pgtest.DeadSpec{})
	ctx, progress := cancelAfterFirst(base)
	_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 100000, Progress: progress})
	var pd *ops.PartlyDone
	if !errors.As(err, &pd) || pd.Done == 0 || pd.Done == 600 || pd.Again.Op != ops.OpDLQRetry {
		t.Fatalf("stopped retry: %v; want a PartlyDone with the call that does the rest", err)
	}
	rest := 600 - int(pd.Done)
	// Messages that die after the stopped call began, as those it retried
	// do when their downstream still fails.
	pgtest.DeadLetterN(t, s, q, 7, pgtest.DeadSpec{})

	until, _ := pd.Again.Args["until"].(string)
	if until == "" || !strings.Contains(err.Error(), "until "+until) {
		t.Fatalf("the call that does the rest, %+v (error %q), names no until: it would retry the messages that died since too", pd.Again, err)
	}
	limit, _ := pd.Again.Args["limit"].(int)
	r, err := svc.DLQRetry(base, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q, Until: until}, Limit: limit})
	if err != nil || r.Retried != rest {
		t.Fatalf("the rest = %d retried, %v; want the %d left of the stopped call's messages", r.Retried, err, rest)
	}
	if left, err := svc.DLQRetry(base, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 1000, DryRun: true}); err != nil || left.Retried != 7 {
		t.Fatalf("left in the DLQ: %d, %v; want the 7 that died since", left.Retried, err)
	}
}

// A paced retry stopped partway leaves the messages it moved waiting their
// turns: the call that does the rest says to make it once they are all
// visible, at the same rate, as the next call of a paced retry that reached
// its limit does; made at once, the two would reach the downstream at
// twice the rate asked for.
func TestStoppedPacedRetrySaysWhenTheRestBelongs(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 600, pgtest.DeadSpec{})
	ctx, progress := cancelAfterFirst(testContext(t))
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 100000, Rate: 1, Progress: progress})
	var pd *ops.PartlyDone
	if !errors.As(err, &pd) || pd.Done == 0 || pd.Again.Op != ops.OpDLQRetry || r.VisibleUntil == nil {
		t.Fatalf("stopped paced retry = %+v, %v; want a PartlyDone with the call that does the rest, and when the last it moved becomes visible", r, err)
	}
	when := r.VisibleUntil.Format(time.RFC3339)
	for _, said := range []string{err.Error(), pd.Again.Why} {
		if !strings.Contains(said, "once the messages it moved are all visible (at "+when+")") || !strings.Contains(said, "twice the rate") {
			t.Errorf("%q does not say that the rest belongs after %s, when the messages moved are all visible", said, when)
		}
	}
	if rate, _ := pd.Again.Args["rate"].(float64); rate != 1 {
		t.Errorf("the call that does the rest, %+v, is not at the same rate", pd.Again)
	}
}

// A discard by filter stopped partway names, as the call that does the
// rest, the same filter ending where its own selection ended, as a retry
// does: that call discards the rest of the same messages, and leaves the
// ones that died since, which nobody has looked at yet.
func TestStoppedDiscardRestLeavesThoseDeadSince(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	svc := newService(t, s, ops.Options{})
	base := testContext(t)
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 600, pgtest.DeadSpec{})
	ctx, progress := cancelAfterFirst(base)
	_, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 100000, Confirm: true, Progress: progress})
	var pd *ops.PartlyDone
	if !errors.As(err, &pd) || pd.Done == 0 || pd.Done == 600 || pd.Again.Op != ops.OpDLQDiscard {
		t.Fatalf("stopped discard: %v; want a PartlyDone with the call that does the rest", err)
	}
	rest := 600 - int(pd.Done)
	// Messages that die after the stopped call began, which nobody has
	// looked at.
	pgtest.DeadLetterN(t, s, q, 7, pgtest.DeadSpec{})

	until, _ := pd.Again.Args["until"].(string)
	if until == "" || pd.Until != until || !strings.Contains(err.Error(), "until "+until) {
		t.Fatalf("the call that does the rest, %+v (error %q), names no until: it would discard the messages that died since too", pd.Again, err)
	}
	if _, perr := time.Parse(time.RFC3339Nano, until); perr != nil {
		t.Fatalf("the until %q of the call that does the rest is no time: %v", until, perr)
	}
	limit, _ := pd.Again.Args["limit"].(int)
	d, err := svc.DLQDiscard(base, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q, Until: until}, Limit: limit, Confirm: true})
	if err != nil || d.Discarded != rest {
		t.Fatalf("the rest = %d discarded, %v; want the %d left of the stopped call's messages", d.Discarded, err, rest)
	}
	if left, err := svc.DLQDiscard(base, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 1000, DryRun: true}); err != nil || left.Discarded != 7 {
		t.Fatalf("left in the DLQ: %d, %v; want the 7 that died since", left.Discarded, err)
	}
}
