package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// isolatedStore opens a migrated store on a database of its own, for tests
// of system-wide views that other tests' queues would disturb.
func isolatedStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := testContext(t)
	s, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestQueueStatsSplitsDepthByState(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 7 })
	ids, err := s.SendBatch(ctx, q, []store.NewMessage{
		{Payload: json.RawMessage(`1`)}, {Payload: json.RawMessage(`2`)}, {Payload: json.RawMessage(`3`)},
		{Payload: json.RawMessage(`4`), Delay: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	// ids[0] in flight, ids[1] failed and waiting to retry, ids[2] ready.
	if got, err := s.Read(ctx, q, time.Hour, 2); err != nil || len(got) != 2 {
		t.Fatalf("read: %v %v", got, err)
	}
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[1], Delay: time.Hour, Failure: store.Failure{Attempt: 1, ErrorClass: "x", ErrorMessage: "boom"}}}); err != nil {
		t.Fatal(err)
	}
	admin := engine.NewAdmin(s)
	stats, err := admin.QueueStats(ctx, q)
	if err != nil || len(stats) != 1 {
		t.Fatalf("stats = %v, %v", stats, err)
	}
	st := stats[0]
	if st.Depth != 4 || st.Visible != 1 || st.InFlight != 1 || st.WaitingRetry != 1 || st.Scheduled != 1 || st.TotalSent != 4 {
		t.Fatalf("stats = %+v; want depth 4 = 1 visible + 1 in flight + 1 retrying + 1 scheduled", st)
	}
	if st.DLQ != q+"_dlq" || st.Settings.MaxRetries != 7 || st.Settings.RetryBackoffSeconds != 0.1 || st.LatencyP50MS != nil {
		t.Fatalf("stats = %+v", st)
	}
	if _, err := admin.QueueStats(ctx, uniqueName("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("stats of a missing queue = %v, want ErrNotFound", err)
	}
	if _, err := admin.QueueStats(ctx, `x"; DROP TABLE pgmq.meta; --`); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("stats of a bad name = %v, want ErrInvalid", err)
	}
}

func TestQueueStatsCountsLastHour(t *testing.T) {
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 1 })
	c := newClient(t, s, q, nil)
	c.Handle("ok", func(context.Context, *engine.Job) error { return nil })
	c.Handle("bad", func(context.Context, *engine.Job) error { return errors.New("no") })
	stop := start(t, c)
	for i := range 5 {
		send(t, c, q, i, engine.SendOptions{Kind: "ok"})
	}
	send(t, c, q, 0, engine.SendOptions{Kind: "bad"})
	eventually(t, 20*time.Second, "all settled", func() bool { return archived(t, s, q) == 5 && len(deadMessages(t, s, q)) == 1 })
	stop()
	stats, err := engine.NewAdmin(s).QueueStats(testContext(t), q)
	if err != nil {
		t.Fatal(err)
	}
	st := stats[0]
	want := store.Counters{Succeeded: 5, Failed: 1, DeadLettered: 1}
	if st.LastHour != want || st.DLQDepth != 1 || st.Archived != 5 {
		t.Fatalf("last hour = %+v dlq=%d archived=%d; want %+v, 1, 5", st.LastHour, st.DLQDepth, st.Archived, want)
	}
	if st.LatencyP50MS == nil || st.LatencyP95MS == nil || *st.LatencyP95MS < *st.LatencyP50MS || st.ThroughputPerMinute != 6.0/5 {
		t.Fatalf("latency p50=%v p95=%v throughput=%v", st.LatencyP50MS, st.LatencyP95MS, st.ThroughputPerMinute)
	}
}

func TestHealth(t *testing.T) {
	s := isolatedStore(t)
	ctx := testContext(t)
	admin := engine.NewAdmin(s)
	h, err := admin.Health(ctx)
	if err != nil || h.Status != engine.HealthOK || len(h.Reasons) != 0 {
		t.Fatalf("empty system health = %+v, %v; want OK", h, err)
	}
	if err := s.CreateQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, "orders", store.NewMessage{Payload: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	h, _ = admin.Health(ctx)
	if h.Status != engine.HealthStalled || !hasReason(h, "no_running_workers", "orders") || h.Backlog != 1 {
		t.Fatalf("backlog without workers: %+v; want STALLED no_running_workers", h)
	}
	// A stale worker (heartbeat long ago, never stopped) and a paused queue.
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "w-stale", Hostname: "h", PID: 1, Queues: []string{"orders"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - interval '10 minutes' WHERE id = 'w-stale'`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Pause(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	h, _ = admin.Health(ctx)
	if h.Status != engine.HealthDegraded || !hasReason(h, "stale_workers", "") || !hasReason(h, "queue_paused", "orders") {
		t.Fatalf("stale worker and paused queue: %+v; want DEGRADED with both reasons", h)
	}
	ws, err := admin.Workers(ctx)
	if err != nil || len(ws) != 1 || ws[0].Status != engine.WorkerStale || ws[0].HeartbeatAgeSeconds < 500 {
		t.Fatalf("workers = %+v, %v", ws, err)
	}
	// A running worker with an old backlog that nothing drains: STALLED.
	if _, err := admin.Resume(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "w-live", Hostname: "h", PID: 2, Queues: []string{"orders"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq.q_orders SET enqueued_at = now() - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	h, _ = admin.Health(ctx)
	if h.Status != engine.HealthStalled || !hasReason(h, "backlog_not_draining", "orders") || h.Workers != 1 {
		t.Fatalf("old backlog: %+v; want STALLED backlog_not_draining", h)
	}
}

func hasReason(h engine.Health, code, queue string) bool {
	for _, r := range h.Reasons {
		if r.Code == code && r.Queue == queue && r.Message != "" {
			return true
		}
	}
	return false
}

func TestQueueMessagesWithHistoryAndPages(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	admin := engine.NewAdmin(s)
	var ids []int64
	for i := range 5 {
		id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"n":1}`), Headers: json.RawMessage(`{"pgbus_kind":"k"}`), Delay: time.Duration(i/4) * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if got, err := s.Read(ctx, q, time.Hour, 1); err != nil || len(got) != 1 {
		t.Fatal(err)
	}
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[0], Delay: time.Hour, Failure: store.Failure{Attempt: 1, Kind: "k", ErrorClass: "E", ErrorMessage: "first failure"}}}); err != nil {
		t.Fatal(err)
	}
	page, err := admin.QueueMessages(ctx, store.LiveFilter{Queue: q}, "", 2)
	if err != nil || len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("page 1 = %+v, %v", page, err)
	}
	first := page.Items[0]
	if first.MsgID != ids[0] || first.State != store.StateRetrying || first.Kind != "k" || len(first.History) != 1 || first.History[0].ErrorMessage != "first failure" {
		t.Fatalf("first item = %+v", first)
	}
	seen := len(page.Items)
	for page.NextCursor != "" {
		if page, err = admin.QueueMessages(ctx, store.LiveFilter{Queue: q}, page.NextCursor, 2); err != nil {
			t.Fatal(err)
		}
		seen += len(page.Items)
	}
	if seen != 5 {
		t.Fatalf("pages held %d messages, want 5", seen)
	}
	sched, err := admin.QueueMessages(ctx, store.LiveFilter{Queue: q, State: store.StateScheduled}, "", 10)
	if err != nil || len(sched.Items) != 1 || sched.Items[0].MsgID != ids[4] {
		t.Fatalf("scheduled = %+v, %v", sched, err)
	}
	for label, call := range map[string]func() error{
		"bad state": func() error {
			_, err := admin.QueueMessages(ctx, store.LiveFilter{Queue: q, State: "dead"}, "", 10)
			return err
		},
		"bad cursor": func() error {
			_, err := admin.QueueMessages(ctx, store.LiveFilter{Queue: q}, "'; DROP TABLE x; --", 10)
			return err
		},
		"limit":     func() error { _, err := admin.QueueMessages(ctx, store.LiveFilter{Queue: q}, "", 101); return err },
		"neg limit": func() error { _, err := admin.QueueMessages(ctx, store.LiveFilter{Queue: q}, "", -1); return err },
		"bad queue": func() error { _, err := admin.QueueMessages(ctx, store.LiveFilter{Queue: "Q;"}, "", 10); return err },
	} {
		if err := call(); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", label, err)
		}
	}
}

func TestPauseResumeAndAudit(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	admin := engine.NewAdmin(s)
	if changed, err := admin.Pause(ctx, q); err != nil || !changed {
		t.Fatalf("pause = %v, %v", changed, err)
	}
	if changed, err := admin.Pause(ctx, q); err != nil || changed {
		t.Fatalf("second pause = %v, %v; want no change", changed, err)
	}
	if changed, err := admin.Resume(ctx, q); err != nil || !changed {
		t.Fatalf("resume = %v, %v", changed, err)
	}
	if _, err := admin.Pause(ctx, uniqueName("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("pause of a missing queue = %v, want ErrNotFound", err)
	}
	tool := uniqueName("tool")
	for i := range 3 {
		err := admin.RecordAudit(ctx, store.AuditEntry{Client: "claude", Tool: tool, Arguments: json.RawMessage(`{"i":` + itoa(int64(i)) + `}`), Result: json.RawMessage(`{"ok":true}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	page, err := admin.Audit(ctx, store.AuditFilter{Tool: tool}, "", 2)
	if err != nil || len(page.Items) != 2 || page.NextCursor == "" || string(page.Items[0].Arguments) != `{"i": 2}` {
		t.Fatalf("audit page = %+v, %v", page, err)
	}
	rest, err := admin.Audit(ctx, store.AuditFilter{Tool: tool}, page.NextCursor, 2)
	if err != nil || len(rest.Items) != 1 || rest.NextCursor != "" || rest.Items[0].Client != "claude" {
		t.Fatalf("audit page 2 = %+v, %v", rest, err)
	}
	if _, err := admin.Audit(ctx, store.AuditFilter{}, "garbage", 2); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad cursor = %v, want ErrInvalid", err)
	}
	if err := admin.RecordAudit(ctx, store.AuditEntry{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("audit without tool = %v, want ErrInvalid", err)
	}
}
