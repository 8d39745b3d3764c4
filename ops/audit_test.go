package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// Write operations are recorded with their client, and the audit log pages
// newest first, filtered by operation (under any of its names) or client.
func TestAuditRecordsWritesAndPages(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	ctx := ops.WithClient(testContext(t), client)
	for _, call := range []func() error{
		func() error { _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); return err },
		func() error { _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); return err },
		func() error { _, err := svc.QueueResume(ctx, ops.QueueRequest{Queue: q}); return err },
	} {
		if err := call(); err != nil {
			t.Fatal(err)
		}
	}
	// Reads and rejected requests leave no entry.
	if _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("pause without a queue = %v", err)
	}
	ro := newService(t, s, ops.Options{ReadOnly: true})
	if _, err := ro.QueuePause(ctx, ops.QueueRequest{Queue: q}); !errors.Is(err, ops.ErrReadOnly) {
		t.Fatalf("read-only pause = %v", err)
	}

	page, err := svc.Audit(ctx, ops.AuditRequest{Client: client, Limit: 2})
	if err != nil || len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("audit page = %+v, %v", page, err)
	}
	if page.Items[0].Op != ops.OpQueueResume || page.Items[1].Op != ops.OpQueuePause || page.Items[0].ID <= page.Items[1].ID {
		t.Fatalf("audit page is not newest first: %+v", page.Items)
	}
	var args struct{ Queue string }
	if err := json.Unmarshal(page.Items[0].Arguments, &args); err != nil || args.Queue != q || page.Items[0].Client != client || page.Items[0].IsError {
		t.Fatalf("newest entry = %+v (args %s)", page.Items[0], page.Items[0].Arguments)
	}
	var res struct{ Changed, Paused bool }
	if err := json.Unmarshal(page.Items[1].Result, &res); err != nil || res.Changed || !res.Paused {
		t.Fatalf("second pause's result = %s; want paused without change", page.Items[1].Result)
	}
	rest, err := svc.Audit(ctx, ops.AuditRequest{Client: client, Cursor: page.NextCursor, Limit: 2})
	if err != nil || len(rest.Items) != 1 || rest.NextCursor != "" || rest.Items[0].Op != ops.OpQueuePause {
		t.Fatalf("audit page 2 = %+v, %v", rest, err)
	}
	for _, name := range []string{ops.OpQueuePause, "pgbus_queue_pause", "queue pause"} {
		got, err := svc.Audit(ctx, ops.AuditRequest{Client: client, Op: name})
		if err != nil || len(got.Items) != 2 {
			t.Fatalf("audit by op %q = %d entries, %v; want the 2 pauses", name, len(got.Items), err)
		}
	}
	if _, err := svc.Audit(ctx, ops.AuditRequest{Cursor: "garbage"}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("bad cursor = %v, want ErrInvalid", err)
	}
	if _, err := svc.Audit(ctx, ops.AuditRequest{Limit: ops.MaxPageSize + 1}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("limit over the maximum = %v, want ErrInvalid", err)
	}
	// A call without a named client is recorded as unknown.
	if _, err := svc.QueuePause(testContext(t), ops.QueueRequest{Queue: q}); err != nil {
		t.Fatal(err)
	}
	got, err := svc.Audit(testContext(t), ops.AuditRequest{Client: "unknown", Op: ops.OpQueuePause, Limit: 100})
	if err != nil || !strings.Contains(mustJSON(t, got), q) {
		t.Fatalf("a pause without a client is not recorded as unknown: %v", err)
	}
}

// The audit leaves sends out unless asked for them (all, or send), and
// since leaves out older entries; a since it cannot read is refused.
func TestAuditSendsAndSince(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	ctx := ops.WithClient(testContext(t), client)
	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"n": 1}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil {
		t.Fatal(err)
	}
	listed := func(req ops.AuditRequest) []string {
		t.Helper()
		req.Client = client
		page, err := svc.Audit(ctx, req)
		if err != nil {
			t.Fatalf("audit %+v: %v", req, err)
		}
		var out []string
		for _, e := range page.Items {
			out = append(out, e.Op)
		}
		return out
	}
	for _, c := range []struct {
		req  ops.AuditRequest
		want string
	}{
		{ops.AuditRequest{}, "queue_pause"},
		{ops.AuditRequest{Op: ops.AuditAll}, "queue_pause send"},
		{ops.AuditRequest{Op: ops.OpSend}, "send"},
		{ops.AuditRequest{Op: ops.AuditAll, Since: "1h"}, "queue_pause send"},
		{ops.AuditRequest{Op: ops.AuditAll, Since: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, ""},
	} {
		if got := strings.Join(listed(c.req), " "); got != c.want {
			t.Errorf("audit %+v lists %q, want %q", c.req, got, c.want)
		}
	}
	// The log keeps microseconds: a since a fraction of one after the
	// pause leaves it out, where read to the microsecond it took it in.
	page, err := svc.Audit(ctx, ops.AuditRequest{Client: client})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("audit: %+v, %v; want the pause", page, err)
	}
	since := page.Items[0].At.Add(100 * time.Nanosecond).UTC().Format(time.RFC3339Nano)
	if got := listed(ops.AuditRequest{Op: ops.AuditAll, Since: since}); len(got) != 0 {
		t.Errorf("audit since %s, 100ns after the pause, lists %q; want nothing", since, got)
	}
	_, err = svc.Audit(ctx, ops.AuditRequest{Since: "last tuesday"})
	var oe *ops.Error
	if !errors.Is(err, ops.ErrInvalid) || !errors.As(err, &oe) || !strings.Contains(err.Error(), "since") {
		t.Errorf("since %q: %v, want a clear invalid-argument error", "last tuesday", err)
	}
}

// The audit entry of a retry says whether it cleared deadlines, and of a
// move of every dead message that it was asked for all: both change what
// the call did.
func TestAuditRecordsClearDeadlineAndAll(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	ctx := ops.WithClient(testContext(t), client)
	ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{})
	if _, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}, ClearDeadline: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{All: true, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	rows := auditRows(t, s, client)
	if len(rows) != 2 || !strings.Contains(rows[0].Arguments, `"clear_deadline": true`) || !strings.Contains(rows[1].Arguments, `"all": true`) {
		t.Fatalf("audit rows %+v; want the retry's clear_deadline and the discard's all", rows)
	}
}

// A dry run is recorded, as the request of whoever asked for it, unless it
// shows a page (WithPageView: a dashboard GET, which nobody submitted);
// a real move made with such a context is recorded all the same.
func TestAuditLeavesOutTheDryRunsOfPageViews(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	asked := ops.WithClient(testContext(t), client)
	shown := ops.WithPageView(asked)
	ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{})
	f := ops.DeadFilter{Queue: q}
	for _, ctx := range []context.Context{shown, asked} {
		if _, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, DryRun: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids[:1], Filter: f, DryRun: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.DLQRetry(shown, ops.DLQRetryRequest{IDs: ids[1:], Filter: f}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range auditRows(t, s, client) {
		got = append(got, fmt.Sprintf("%s dry_run=%v", r.Tool, strings.Contains(r.Arguments, `"dry_run": true`)))
	}
	want := "dlq_retry dry_run=true, dlq_discard dry_run=true, dlq_retry dry_run=false"
	if strings.Join(got, ", ") != want {
		t.Fatalf("audit rows: %s\nwant the dry runs asked for and the retry: %s", strings.Join(got, ", "), want)
	}
}

// The audit entry of a retry or discard too big to list every message it
// moved keeps its counts, without the list or the count of what the list
// left out: "moved_omitted": 200 beside "moved": null read as 200 of the
// messages moved missing from the entry.
func TestAuditOfAMoveTooBigToList(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	ctx := ops.WithClient(testContext(t), uniqueName("agent"))
	pgtest.DeadLetterN(t, s, q, 400, pgtest.DeadSpec{})
	rep, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 200})
	if err != nil || rep.Retried != 200 || rep.MovedOmitted == 0 {
		t.Fatalf("retry of 200 = %d retried, %d listed, %d left out of the list, %v; want a list too long to give whole", rep.Retried, len(rep.Moved), rep.MovedOmitted, err)
	}
	dis, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 200, Confirm: true})
	if err != nil || dis.Discarded != 200 || dis.MovedOmitted == 0 {
		t.Fatalf("discard of 200 = %d discarded, %d left out of the list, %v; want a list too long to give whole", dis.Discarded, dis.MovedOmitted, err)
	}
	page, err := svc.Audit(ctx, ops.AuditRequest{Client: ops.CallerFrom(ctx).Client, Limit: 10})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("audit = %+v, %v; want the discard and the retry", page, err)
	}
	for _, e := range page.Items {
		var counts map[string]any
		if err := json.Unmarshal(e.Result, &counts); err != nil {
			t.Fatal(err)
		}
		if _, listed := counts["moved_omitted"]; listed || counts["moved"] != nil {
			t.Errorf("%s entry keeps part of the list of what moved: %s", e.Op, e.Result)
		}
		if counts["retried"] != float64(200) && counts["discarded"] != float64(200) {
			t.Errorf("%s entry does not count the 200 moved: %s", e.Op, e.Result)
		}
	}
}
