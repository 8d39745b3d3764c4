package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{Handlers: map[string]string{}}) // the command line's: its next steps start workers
	h, err := svc.Health(ctx)
	if err != nil || h.Status != ops.HealthOK || len(h.Reasons) != 0 || *h.Queues != 0 {
		t.Fatalf("empty system health = %+v, %v; want OK", h, err)
	}
	if err := s.CreateQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, "orders", store.NewMessage{Payload: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	h, _ = svc.Health(ctx)
	if h.Status != ops.HealthStalled || !hasReason(h, "no_workers", "orders", ops.OpWork) || *h.Backlog != 1 || *h.Queues != 1 {
		t.Fatalf("backlog without workers: %+v; want STALLED no_workers", h)
	}
	// A stale worker (heartbeat long ago, never stopped) and a paused queue.
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "w-stale", Hostname: "h", PID: 1, Queues: []string{"orders"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - interval '10 minutes' WHERE id = 'w-stale'`); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: "orders"}); err != nil {
		t.Fatal(err)
	}
	h, _ = svc.Health(ctx)
	if h.Status != ops.HealthDegraded || !hasReason(h, "stale_workers", "", ops.OpWorkers) || !hasReason(h, "queue_paused", "orders", ops.OpQueueResume) {
		t.Fatalf("stale worker and paused queue: %+v; want DEGRADED with both reasons", h)
	}
	ws, err := svc.Workers(ctx, ops.WorkersRequest{})
	if err != nil || len(ws.Workers) != 1 || ws.Workers[0].Status != ops.WorkerStale || ws.Workers[0].HeartbeatAgeSeconds < 500 || ws.Stale != 1 || ws.Running != 0 {
		t.Fatalf("workers = %+v, %v", ws, err)
	}
	// A running worker with an old backlog that nothing drains: STALLED.
	if _, err := svc.QueueResume(ctx, ops.QueueRequest{Queue: "orders"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "w-live", Hostname: "h", PID: 2, Queues: []string{"orders"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq.q_orders SET enqueued_at = now() - interval '1 hour', vt = now() - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	h, _ = svc.Health(ctx)
	if h.Status != ops.HealthStalled || !hasReason(h, "backlog_not_draining", "orders", ops.OpWorkers) || *h.Workers != 1 {
		t.Fatalf("old backlog: %+v; want STALLED backlog_not_draining", h)
	}
}

// hasReason reports whether h holds the reason code for queue, with a
// message and a hint pointing at next.
func hasReason(h ops.Health, code, queue, next string) bool {
	for _, r := range h.Reasons {
		if r.Code == code && r.Queue == queue && r.Message != "" && hasHint(r.Next, next, nil) {
			return true
		}
	}
	return false
}

// Workers tell running, stale and stopped processes apart by their
// heartbeats and StaleAfter.
func TestWorkersByHeartbeat(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	for i, id := range []string{"w-a", "w-b", "w-c"} {
		if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: id, Hostname: "h", PID: i + 1, Queues: []string{"q"}, Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - interval '2 minutes' WHERE id = 'w-b'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET stopped_at = now() WHERE id = 'w-c'`); err != nil {
		t.Fatal(err)
	}
	status := func(svc *ops.Service) map[string]string {
		ws, err := svc.Workers(ctx, ops.WorkersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, w := range ws.Workers {
			out[w.ID] = w.Status
		}
		if ws.Running+ws.Stale+ws.Stopped != len(ws.Workers) {
			t.Fatalf("counts %+v do not add up to %d workers", ws, len(ws.Workers))
		}
		return out
	}
	got := status(newService(t, s, ops.Options{}))
	if got["w-a"] != ops.WorkerRunning || got["w-b"] != ops.WorkerStale || got["w-c"] != ops.WorkerStopped {
		t.Fatalf("statuses = %v", got)
	}
	got = status(newService(t, s, ops.Options{StaleAfter: 10 * time.Minute}))
	if got["w-b"] != ops.WorkerRunning {
		t.Fatalf("with StaleAfter 10m, a 2-minute-old heartbeat is %q, want running", got["w-b"])
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = heartbeat_at - interval '1 hour', stopped_at = stopped_at - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	got = status(newService(t, s, ops.Options{}))
	if got["w-a"] != ops.WorkerStale || got["w-c"] != ops.WorkerStopped {
		t.Fatalf("an hour later: %v; want w-a stale, w-c still stopped", got)
	}
}

// A heartbeat is aged on the database's clock, which stamped it: a
// process whose clock runs an hour ahead of the database's, or behind it,
// sees a running process running and a crashed one stale all the same.
func TestWorkersByDatabaseClock(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	for i, id := range []string{"w-live", "w-crashed"} {
		if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: id, Hostname: "h", PID: i + 1, Queues: []string{"q"}, Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - interval '10 minutes' WHERE id = 'w-crashed'`); err != nil {
		t.Fatal(err)
	}
	for _, skew := range []time.Duration{time.Hour, -time.Hour} {
		svc := newService(t, s, ops.Options{Now: func() time.Time { return time.Now().Add(skew) }})
		ws, err := svc.Workers(ctx, ops.WorkersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, w := range ws.Workers {
			got[w.ID] = w.Status
			if w.HeartbeatAgeSeconds < 0 || w.HeartbeatAgeSeconds > 3600 {
				t.Errorf("clock %s off: %s's heartbeat is %.0fs old, want its age on the database's clock", skew, w.ID, w.HeartbeatAgeSeconds)
			}
		}
		if got["w-live"] != ops.WorkerRunning || got["w-crashed"] != ops.WorkerStale || ws.Running != 1 || ws.Stale != 1 {
			t.Errorf("clock %s off: %v (running %d, stale %d); want w-live running and w-crashed stale", skew, got, ws.Running, ws.Stale)
		}
		h, err := svc.Health(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if *h.Workers != 1 {
			t.Errorf("clock %s off: health counts %d running workers, want 1", skew, *h.Workers)
		}
	}
}

func TestCircuitsAndReset(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // a closed breaker may be left out of a long list
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	name := uniqueName("breaker")
	t.Cleanup(func() {
		_, _ = s.Pool().Exec(context.Background(), `DELETE FROM pgbus.circuit_breakers WHERE name = $1`, name)
	})
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: time.Minute, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	find := func() (ops.BreakerState, int) {
		all, err := svc.Circuits(ctx, ops.CircuitsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		one, err := svc.Circuits(ctx, ops.CircuitsRequest{Name: name})
		if err != nil || len(one.Circuits) != 1 || one.Circuits[0].Name != name {
			t.Fatalf("circuits named %s = %+v, %v; want that breaker alone", name, one, err)
		}
		for _, b := range all.Circuits {
			if b.Name == name {
				return b, all.Open
			}
		}
		t.Fatalf("circuits lack %s", name)
		return ops.BreakerState{}, 0
	}
	for range 2 {
		if _, err := s.BreakerFailure(ctx, name, "downstream timed out"); err != nil {
			t.Fatal(err)
		}
	}
	b, open := find()
	if b.State != store.BreakerOpen || b.ConsecutiveFailures != 2 || b.LastError != "downstream timed out" || open < 1 {
		t.Fatalf("breaker = %+v (open %d); want open after 2 failures", b, open)
	}
	client := uniqueName("client")
	r, err := svc.CircuitReset(ops.WithClient(ctx, client), ops.CircuitResetRequest{Name: name})
	if err != nil || r.State != store.BreakerClosed || r.Name != name || r.Was != store.BreakerOpen || r.FailuresBefore != 2 || !r.Changed {
		t.Fatalf("reset = %+v, %v; want it closed, and said to have been open with 2 failures", r, err)
	}
	// A second reset, as by a person who saw the breaker open a moment
	// ago, says it changed nothing.
	if r, err = svc.CircuitReset(ctx, ops.CircuitResetRequest{Name: name}); err != nil || r.Changed || r.Was != store.BreakerClosed || r.FailuresBefore != 0 {
		t.Fatalf("second reset = %+v, %v; want it to say nothing changed", r, err)
	}
	if b, _ := find(); b.State != store.BreakerClosed || b.ConsecutiveFailures != 0 {
		t.Fatalf("after reset: %+v", b)
	}
	missing := uniqueName("nope")
	if _, err := svc.Circuits(ctx, ops.CircuitsRequest{Name: missing}); !errors.Is(err, ops.ErrNotFound) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("circuits named %s = %v, want ErrNotFound naming it", missing, err)
	}
	if _, err := svc.Circuits(ctx, ops.CircuitsRequest{Name: "a\x00b"}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("circuits named with a NUL = %v, want ErrInvalid", err)
	}
	if _, err := svc.CircuitReset(ctx, ops.CircuitResetRequest{Name: uniqueName("nope")}); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("reset of a missing breaker = %v, want ErrNotFound", err)
	}
	if _, err := svc.CircuitReset(ctx, ops.CircuitResetRequest{}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("reset without a name = %v, want ErrInvalid", err)
	}
	long := strings.Repeat("breaker-", 1250)
	if _, err := svc.CircuitReset(ctx, ops.CircuitResetRequest{Name: long}); !errors.Is(err, ops.ErrInvalid) || len(err.Error()) > 400 {
		t.Fatalf("reset of a 10 KB name = %d characters: %.300v; want a short ErrInvalid", len(err.Error()), err)
	}
	if rows := auditRows(t, s, client); len(rows) != 1 || rows[0].Tool != ops.OpCircuitReset || rows[0].IsError {
		t.Fatalf("audit rows = %+v; want one circuit_reset", rows)
	}
}

// TestOverviewReadsTheQueuesOnce: the overview's verdict and its queue
// table come from one read, so they agree; its reasons are all listed,
// STALLED first, where Health for an agent leaves some out.
func TestOverviewReadsTheQueuesOnce(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	const total = 60
	for i := range total {
		q := fmt.Sprintf("overview_%02d", i)
		if err := s.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
		if i%20 == 0 {
			if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil {
				t.Fatal(err)
			}
		}
	}
	o, err := svc.Overview(ctx, ops.OverviewRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var backlog int64
	for _, q := range o.Queues {
		backlog += q.Visible
	}
	if len(o.Queues) != total || *o.Health.Queues != total || *o.Health.Backlog != backlog || backlog != total {
		t.Fatalf("overview: %d queues in the table, health counts %d queues and a backlog of %d; the table's backlog is %d", len(o.Queues), *o.Health.Queues, *o.Health.Backlog, backlog)
	}
	if len(o.Health.Reasons) != total || o.Health.Omitted != 0 || o.Health.Status != ops.HealthStalled {
		t.Fatalf("overview health: %s, %d reasons, %d omitted; want STALLED with all %d", o.Health.Status, len(o.Health.Reasons), o.Health.Omitted, total)
	}
	for i, r := range o.Health.Reasons {
		if stalled := i < total-3; (r.Status == ops.HealthStalled) != stalled {
			t.Fatalf("reason %d is %s %s: want the 57 STALLED ones before the 3 paused", i, r.Status, r.Code)
		}
	}
	h, err := svc.Health(ctx)
	if err != nil || h.Omitted == 0 || len(h.Reasons)+h.Omitted != total {
		t.Fatalf("health for an agent: %d reasons, %d omitted, %v; want some left out of %d", len(h.Reasons), h.Omitted, err, total)
	}
}

// TestOverviewBoundsItsLists: an overview bounded for a page lists the
// worst first and counts the rest: STALLED reasons before DEGRADED ones,
// queues with dead messages (the most first), then those with a backlog
// (the largest first) or a pause, then the quiet ones; its totals count
// every queue, and unbounded it lists everything in the same order.
func TestOverviewBoundsItsLists(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	for _, q := range []string{"ob_quiet_a", "ob_quiet_b", "ob_ready_1", "ob_ready_3", "ob_dead_1", "ob_dead_2", "ob_paused"} {
		pgtest.CreateQueue(t, s, q)
	}
	for q, n := range map[string]int{"ob_ready_1": 1, "ob_ready_3": 3} {
		msgs := slices.Repeat([]store.NewMessage{{Payload: json.RawMessage(`1`)}}, n)
		if _, err := s.SendBatch(ctx, q, msgs); err != nil {
			t.Fatal(err)
		}
	}
	minute := time.Now().UTC().Add(-5 * time.Minute).Truncate(time.Minute)
	for q, n := range map[string]int{"ob_dead_1": 1, "ob_dead_2": 2} {
		pgtest.DeadLetterN(t, s, q, n, pgtest.DeadSpec{Kind: "k", Message: "boom"})
		if err := s.AddStats(ctx, []store.StatsDelta{{Minute: minute, Queue: q, Kind: "k", DeadLettered: int64(n)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: "ob_paused"}); err != nil {
		t.Fatal(err)
	}
	order := []string{"ob_dead_2", "ob_dead_1", "ob_ready_3", "ob_ready_1", "ob_paused", "ob_quiet_a", "ob_quiet_b"}
	names := func(o ops.Overview) []string {
		var out []string
		for _, q := range o.Queues {
			out = append(out, q.Queue)
		}
		return out
	}
	all, err := svc.Overview(ctx, ops.OverviewRequest{})
	if err != nil || !slices.Equal(names(all), order) || all.QueuesOmitted != 0 || len(all.Health.Reasons) != 5 || all.Health.Omitted != 0 {
		t.Fatalf("unbounded: queues %v, %d omitted, %d reasons, %d omitted, %v; want %v, all 5 reasons", names(all), all.QueuesOmitted, len(all.Health.Reasons), all.Health.Omitted, err, order)
	}
	o, err := svc.Overview(ctx, ops.OverviewRequest{MaxReasons: 3, MaxQueues: 4})
	if err != nil || !slices.Equal(names(o), order[:4]) || o.QueuesOmitted != 3 || *o.Health.Queues != 7 || *o.Health.Backlog != 4 {
		t.Fatalf("bounded: queues %v, %d omitted, health counts %d queues and a backlog of %d, %v; want %v, 3 omitted, 7 and 4", names(o), o.QueuesOmitted, *o.Health.Queues, *o.Health.Backlog, err, order[:4])
	}
	r := o.Health.Reasons
	if len(r) != 3 || o.Health.Omitted != 2 || r[0].Status != ops.HealthStalled || r[1].Status != ops.HealthStalled || r[2].Status != ops.HealthDegraded || o.Health.Status != ops.HealthStalled {
		t.Fatalf("bounded reasons: %+v, %d omitted; want the 2 STALLED ones, one DEGRADED one, and 2 omitted", r, o.Health.Omitted)
	}
	if len(o.Health.Notes) != 1 || !strings.Contains(o.Health.Notes[0], "3 of the 5 reasons") {
		t.Fatalf("bounded reasons' notes: %q", o.Health.Notes)
	}
	if _, err := svc.Overview(ctx, ops.OverviewRequest{MaxQueues: -1}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("a negative bound: %v, want ErrInvalid", err)
	}
	// A name filter selects before the bound; the verdict stays whole.
	o, err = svc.Overview(ctx, ops.OverviewRequest{MaxQueues: 2, QueueNameContains: "_D"}) // names are lower case
	if err != nil || !slices.Equal(names(o), order[:2]) || o.QueuesOmitted != 0 || o.QueuesFiltered != 5 || len(o.Health.Reasons) != 5 {
		t.Fatalf("queues named *_d*: %v, %d omitted, %d filtered, %d reasons, %v; want %v, 0 omitted, 5 filtered, all 5 reasons", names(o), o.QueuesOmitted, o.QueuesFiltered, len(o.Health.Reasons), err, order[:2])
	}
	o, err = svc.Overview(ctx, ops.OverviewRequest{MaxQueues: 1, QueueNameContains: "ob_"})
	if err != nil || !slices.Equal(names(o), order[:1]) || o.QueuesOmitted != 6 || o.QueuesFiltered != 0 {
		t.Fatalf("queues named *ob_* bounded to 1: %v, %d omitted, %d filtered, %v", names(o), o.QueuesOmitted, o.QueuesFiltered, err)
	}
	if _, err := svc.Overview(ctx, ops.OverviewRequest{QueueNameContains: "a\x00b"}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("a NUL in the name filter: %v, want ErrInvalid", err)
	}
}

// TestWorkersPastTheListCap: past the processes a list holds, the oldest
// stopped ones are counted, not listed, and the result says so; the
// counts stay exact. A process stopped on an error, older than all of
// them, is listed after the running ones, before the stale ones that
// crowd a list cut to its response bound.
func TestWorkersPastTheListCap(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	const stopped, stale = store.MaxListedWorkers + 100, 300
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.workers (id, hostname, pid, queues, concurrency, started_at, heartbeat_at, stopped_at)
		SELECT 'cap-'||i, 'host-'||i, i, '{orders}', 1, now() - interval '2 hours' + i * interval '1 second', now() - interval '1 hour', now() - interval '1 hour'
		FROM generate_series(1, $1) i`, stopped); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.workers (id, hostname, pid, queues, concurrency, started_at, heartbeat_at)
		SELECT 'crashed-'||i, 'host-'||i, i, '{orders}', 1, now() - interval '90 minutes' + i * interval '1 second', now() - interval '1 hour'
		FROM generate_series(1, $1) i`, stale); err != nil {
		t.Fatal(err)
	}
	failed := store.WorkerProcess{ID: "cap-failed", Hostname: "failed", PID: 2, Queues: []string{"orders"}, Concurrency: 1}
	if err := s.StopWorkerOnError(ctx, failed, "permission denied for table q_orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET started_at = now() - interval '3 hours' WHERE id = 'cap-failed'`); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"cap-live-1", "cap-live-2"} {
		if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: id, Hostname: "live", PID: 1, Queues: []string{"orders"}, Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	}
	svc := newService(t, s, ops.Options{})
	for _, all := range []bool{true, false} {
		ws, err := svc.Workers(ctx, ops.WorkersRequest{All: all})
		if err != nil {
			t.Fatal(err)
		}
		if ws.Running != 2 || ws.Stale != stale || ws.Stopped != stopped+1 || len(ws.Workers)+ws.Omitted != stopped+stale+3 || len(ws.Workers) > store.MaxListedWorkers {
			t.Fatalf("All %t: %d listed, %d omitted, running %d, stale %d, stopped %d; want exact counts of 2 running, %d stale and %d stopped",
				all, len(ws.Workers), ws.Omitted, ws.Running, ws.Stale, ws.Stopped, stale, stopped+1)
		}
		if len(ws.Notes) == 0 || !strings.Contains(ws.Notes[0], "counted, not listed") {
			t.Fatalf("All %t: notes %q; want one saying the oldest stopped processes are counted, not listed", all, ws.Notes)
		}
		if ws.Workers[0].Status != ops.WorkerRunning || ws.Workers[1].Status != ops.WorkerRunning {
			t.Fatalf("All %t: the running processes are not listed first", all)
		}
		if w := ws.Workers[2]; w.ID != failed.ID || w.Status != ops.WorkerStopped || w.StopError == "" {
			t.Fatalf("All %t: third listed %s (%s), want %s, stopped on an error, before the stale processes", all, w.ID, w.Status, failed.ID)
		}
		if ws.Workers[3].Status != ops.WorkerStale {
			t.Fatalf("All %t: fourth listed is %s, want the stale processes after the one stopped on an error", all, ws.Workers[3].Status)
		}
	}
}

// A breaker that is not closed, used by a running handler, makes health
// DEGRADED with a reason naming it, its queue and its redacted last error;
// one no process uses, or a closed one, says nothing.
func TestHealthNamesAnOpenBreakerInUse(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	const secret = "sk_live_BREAKERLEAK1234567890abc"
	breaker := func(name string, users []store.BreakerUser, failures int) {
		t.Helper()
		if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordBreakerUsers(ctx, name, users); err != nil {
			t.Fatal(err)
		}
		for range failures {
			if _, err := s.BreakerFailed(ctx, name, "503 from the bank; called with Authorization: Bearer "+secret); err != nil {
				t.Fatal(err)
			}
		}
	}
	breaker("http:bank", []store.BreakerUser{{Queue: "payments", Kind: "charge"}, {Queue: "payments", Kind: "refund"}}, 2)
	breaker("http:unused", nil, 2)
	breaker("http:mail", []store.BreakerUser{{Queue: "emails"}, {Queue: "digests"}}, 1)
	// Open, but its only user was last seen by a process hours ago: no
	// running handler waits on it.
	breaker("http:gone", []store.BreakerUser{{Queue: "legacy"}}, 2)
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breaker_users SET seen_at = now() - interval '3 hours' WHERE breaker = 'http:gone'`); err != nil {
		t.Fatal(err)
	}
	// Open, named lately, but no running worker serves its queue (its
	// processes stopped): nothing waits on it either.
	breaker("http:stopped", []store.BreakerUser{{Queue: "archive"}}, 2)
	// The running workers, of queues that exist; none serves archive or
	// legacy.
	for _, q := range []string{"payments", "refunds", "emails", "digests"} {
		if err := s.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "w-pay", Hostname: "h", PID: 1, Queues: []string{"payments", "refunds", "emails", "digests"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != ops.HealthDegraded || len(h.Reasons) != 1 {
		t.Fatalf("health = %+v; want DEGRADED for the one open breaker in use", h)
	}
	r := h.Reasons[0]
	if r.Code != "circuit_open" || r.Queue != "payments" || !strings.Contains(r.Message, `circuit breaker "http:bank" is open until`) ||
		!strings.Contains(r.Message, `after 2 consecutive failures`) || !strings.Contains(r.Message, `queue "payments" that use it are held (none now)`) ||
		strings.Contains(r.Message, secret) || !strings.Contains(r.Message, "503 from the bank") {
		t.Fatalf("reason = %+v", r)
	}
	if len(r.Next) != 1 || r.Next[0].Op != ops.OpCircuits || r.Next[0].Args["name"] != "http:bank" {
		t.Fatalf("next = %+v; want pgbus circuits of the breaker", r.Next)
	}

	// Half-open, and used by two queues: the reason says so, with no
	// queue of its own.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breakers SET state = 'half_open', probe_until = now() + interval '1 minute' WHERE name = 'http:bank'`); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordBreakerUsers(ctx, "http:bank", []store.BreakerUser{{Queue: "refunds"}}); err != nil {
		t.Fatal(err)
	}
	if h, err = svc.Health(ctx); err != nil || len(h.Reasons) != 1 || h.Reasons[0].Queue != "" ||
		!strings.Contains(h.Reasons[0].Message, "half-open") || !strings.Contains(h.Reasons[0].Message, `queues "payments" and "refunds"`) {
		t.Fatalf("half-open health = %+v, %v", h, err)
	}
	// Open with its cool-off over, no process has met it since.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breakers SET state = 'open', open_until = now() - interval '1 minute' WHERE name = 'http:bank'`); err != nil {
		t.Fatal(err)
	}
	if h, err = svc.Health(ctx); err != nil || len(h.Reasons) != 1 || !strings.Contains(h.Reasons[0].Message, "its cool-off over since") {
		t.Fatalf("health of a breaker past its cool-off = %+v, %v", h, err)
	}
	// pgbus_circuits says the same: its probe is due.
	if cs, err := svc.Circuits(ctx, ops.CircuitsRequest{Name: "http:bank"}); err != nil || len(cs.Circuits) != 1 || !cs.Circuits[0].ProbeDue {
		t.Fatalf("circuits of a breaker past its cool-off = %+v, %v; want probe_due", cs, err)
	}
	if _, err := s.ResetBreaker(ctx, "http:bank", false); err != nil {
		t.Fatal(err)
	}
	if h, err = svc.Health(ctx); err != nil || h.Status != ops.HealthOK {
		t.Fatalf("health once the breaker is reset = %+v, %v; want OK", h, err)
	}
}

// TestOverviewLeavesArchivesUncounted: what probes, the dashboard and
// watchers read every few seconds does not count the archives, which grow
// with the queues' history; the queue's stats do unless told not to.
func TestOverviewLeavesArchivesUncounted(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids, err := s.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(`1`)}, {Payload: json.RawMessage(`2`)}, {Payload: json.RawMessage(`3`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ArchiveMany(ctx, q, ids[:2]); err != nil {
		t.Fatal(err)
	}
	stats, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q})
	if err != nil || len(stats.Queues) != 1 || stats.Queues[0].Archived != 2 || stats.Queues[0].TotalSent != 3 {
		t.Fatalf("stats: %+v, %v; want 2 archived of 3 sent", stats.Queues, err)
	}
	o, err := svc.Overview(ctx, ops.OverviewRequest{})
	if err != nil || len(o.Queues) != 1 {
		t.Fatalf("overview: %d queues, %v", len(o.Queues), err)
	}
	if got := o.Queues[0]; got.Archived != 0 || got.TotalSent != 0 || got.Visible != 1 || got.Depth != 1 {
		t.Fatalf("overview of %s: %d archived, %d sent, %d visible of %d; want 0 and 0 (not read), 1 and 1", q, got.Archived, got.TotalSent, got.Visible, got.Depth)
	}
	for _, req := range []ops.QueueStatsRequest{{Queue: q, NoArchive: true}, {All: true, NoArchive: true}} {
		stats, err := svc.QueueStats(ctx, req)
		if err != nil || len(stats.Queues) != 1 {
			t.Fatalf("stats %+v: %+v, %v", req, stats.Queues, err)
		}
		if got := stats.Queues[0]; got.Archived != 0 || got.TotalSent != 3 || got.Depth != 1 || got.Visible != 1 {
			t.Fatalf("stats %+v: %d archived of %d sent, %d visible of %d; want 0 (not read) of 3, 1 and 1", req, got.Archived, got.TotalSent, got.Visible, got.Depth)
		}
	}
}

// TestHealthNamesTheDLQOfADroppedQueue: dead messages left in the DLQ of a
// queue dropped outside pgbus count among the dead messages, and a
// DEGRADED reason names the queue with hints that work: its summary finds
// them; the queue is not counted among the queues.
func TestHealthNamesTheDLQOfADroppedQueue(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	for _, q := range []string{"kept", "orphan"} {
		if err := s.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.DeadLetterN(t, s, "orphan", 3, pgtest.DeadSpec{Kind: "mail", Message: "smtp down"})
	if _, err := s.Pool().Exec(ctx, `DROP TABLE pgmq.q_orphan, pgmq.a_orphan; DELETE FROM pgmq.meta WHERE queue_name = 'orphan'; DELETE FROM pgbus.queues WHERE queue_name = 'orphan'`); err != nil {
		t.Fatal(err)
	}
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if *h.Queues != 1 || *h.DeadMessages != 3 || h.Status != ops.HealthDegraded || len(h.Reasons) != 1 {
		t.Fatalf("health: %s, %d queues, %d dead, reasons %+v; want DEGRADED, 1 queue, 3 dead and one reason", h.Status, *h.Queues, *h.DeadMessages, h.Reasons)
	}
	r := h.Reasons[0]
	if r.Code != "dlq_of_dropped_queue" || r.Queue != "orphan" || !strings.Contains(r.Message, "3 dead messages") ||
		!hasHint(r.Next, ops.OpQueueCreate, map[string]any{"queue": "orphan"}) || !hasHint(r.Next, ops.OpDLQDiscard, map[string]any{"queue": "orphan", "dry_run": true}) {
		t.Fatalf("reason %+v", r)
	}
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: findHint(t, r.Next, ops.OpDLQSummary).Args["queue"].(string)}})
	if err != nil || sum.Total != 3 {
		t.Fatalf("the summary the reason points at: %+v, %v; want the 3 dead messages", sum, err)
	}
	// The discard the reason previews, then the purge, leave nothing.
	dry, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: "orphan"}, DryRun: true})
	if err != nil || dry.Discarded != 3 {
		t.Fatalf("discard preview: %+v, %v; want 3", dry, err)
	}
	if d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: "orphan"}, Expect: dry.Expect, Confirm: true}); err != nil || d.Discarded != 3 {
		t.Fatalf("discard: %+v, %v; want 3", d, err)
	}
	if p, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: "orphan", Confirm: true}); err != nil || p.Purged != 3 {
		t.Fatalf("purge: %+v, %v; want 3", p, err)
	}
	if h, err := svc.Health(ctx); err != nil || h.Status != ops.HealthOK || *h.DeadMessages != 0 {
		t.Fatalf("health after the discard and purge: %s, %d dead, %v; want OK", h.Status, *h.DeadMessages, err)
	}
}

// TestHealthNamesADroppedPriorityQueue: a priority queue whose level
// tables were all dropped outside pgbus, its entry left, is named with
// one dead message; the create it offers has its levels, and works.
func TestHealthNamesADroppedPriorityQueue(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	if err := s.CreatePriorityQueue(ctx, "prio", 2); err != nil {
		t.Fatal(err)
	}
	ids, err := s.SendBatch(ctx, "prio_p1", []store.NewMessage{{Payload: json.RawMessage(`1`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeadLetterMany(ctx, "prio_p1", store.DLQName("prio"), store.SourceWorker, []store.DeadLetterItem{{MsgID: ids[0],
		Reason: store.ReasonNonRetryable, Failure: &store.Failure{Attempt: 1, ErrorClass: "E"}}}); err != nil {
		t.Fatal(err)
	}
	pgtest.DropOutside(t, s, "prio_p0", "prio_p1")
	h, err := svc.Health(ctx)
	if err != nil || len(h.Reasons) != 1 {
		t.Fatalf("health: %+v, %v", h, err)
	}
	r := h.Reasons[0]
	create := findHint(t, r.Next, ops.OpQueueCreate)
	if r.Code != "dlq_of_dropped_queue" || !strings.Contains(r.Message, "holds 1 dead message") || fmt.Sprint(create.Args["priorities"]) != "2" {
		t.Fatalf("reason %+v; want one dead message and a create with 2 priorities", r)
	}
	// The messages of a level of it name the queue, whose DLQ the
	// summary takes (a level's name it refuses).
	_, err = svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: "prio_p1"})
	if steps := ops.NextSteps(err); ops.ErrorKind(err) != ops.KindNotFound || !strings.Contains(err.Error(), `queue "prio" was dropped`) ||
		!hasHint(steps, ops.OpDLQSummary, map[string]any{"queue": "prio"}) {
		t.Fatalf("messages of a level of the dropped queue: %v, next %+v; want it not found, naming prio and its summary", err, steps)
	}
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: "prio", Priorities: 2}); err != nil {
		t.Fatalf("the create the reason offers: %v", err)
	}
	if h, err := svc.Health(ctx); err != nil || len(h.Reasons) != 0 || *h.DeadMessages != 1 || *h.Queues != 1 {
		t.Fatalf("health after the create: %+v, %v; want the queue back, its dead message counted, no reason", h, err)
	}
}

// TestDroppedQueueStatsAndDrop: the stats of a queue dropped outside pgbus
// with dead messages left are those of its DLQ, asked for alone as in the
// list; dropping it then deletes the DLQ, once confirmed.
func TestDroppedQueueStatsAndDrop(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	if err := s.CreateQueue(ctx, "orphan"); err != nil {
		t.Fatal(err)
	}
	pgtest.DeadLetterN(t, s, "orphan", 2, pgtest.DeadSpec{})
	pgtest.DropOutside(t, s, "orphan")
	st, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: "orphan"})
	if err != nil || len(st.Queues) != 1 || !st.Queues[0].Dropped || st.Queues[0].DLQDepth != 2 {
		t.Fatalf("stats of the dropped queue: %+v, %v; want it dropped with 2 dead", st.Queues, err)
	}
	if _, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: "orphan"}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "2 dead messages") {
		t.Fatalf("drop unconfirmed: %v; want a refusal counting the 2 dead messages", err)
	}
	if _, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: "orphan", Confirm: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: "orphan"}); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("stats after the drop: %v; want not found", err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq.meta WHERE queue_name = 'orphan_dlq'`); n != 0 {
		t.Fatalf("the DLQ is still listed after the drop")
	}
}

// A process that beats once a minute (engine.Config.ProcessHeartbeat) is
// running 45 seconds after a beat, and stale only once it missed three;
// one at the default pace is stale then.
func TestWorkersStaleAtTheirOwnPace(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	for i, w := range []store.WorkerProcess{
		{ID: "w-slow", HeartbeatInterval: time.Minute},
		{ID: "w-slow-gone", HeartbeatInterval: time.Minute},
		{ID: "w-default"},
	} {
		w.Hostname, w.PID, w.Queues, w.Concurrency = "h", i+1, []string{"q"}, 1
		if err := s.RegisterWorker(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - CASE id WHEN 'w-slow-gone' THEN interval '4 minutes' ELSE interval '45 seconds' END`); err != nil {
		t.Fatal(err)
	}
	ws, err := newService(t, s, ops.Options{}).Workers(ctx, ops.WorkersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, w := range ws.Workers {
		got[w.ID] = w.Status
	}
	if got["w-slow"] != ops.WorkerRunning || got["w-slow-gone"] != ops.WorkerStale || got["w-default"] != ops.WorkerStale {
		t.Fatalf("statuses = %v; want w-slow running, w-slow-gone and w-default stale", got)
	}
}

// A queue with priority levels whose oldest ready message waits at a
// lower level is starved by the levels above, which workers read first:
// health says at which level it waits and why, and says nothing of levels
// when it waits at level 0.
func TestHealthNamesTheStarvedPriorityLevel(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	if err := s.CreatePriorityQueue(ctx, "jobs", 3); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "w-jobs", Hostname: "h", PID: 3, Queues: []string{"jobs"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	for _, level := range []int{0, 2} {
		if _, err := s.Send(ctx, store.PriorityQueueName("jobs", level), store.NewMessage{Payload: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
	}
	age := func(level int, ago string) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, `UPDATE pgmq.`+fmt.Sprintf("q_jobs_p%d", level)+` SET enqueued_at = now() - $1::interval, vt = now() - $1::interval`, ago); err != nil {
			t.Fatal(err)
		}
	}
	message := func() string {
		t.Helper()
		h, err := svc.Health(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range h.Reasons {
			if r.Queue == "jobs" && (r.Code == "backlog_not_draining" || r.Code == "backlog_growing_old") {
				return r.Message
			}
		}
		t.Fatalf("health = %+v; want a reason about the old backlog of queue jobs", h)
		return ""
	}
	age(0, "2 minutes")
	age(2, "10 minutes")
	// The wait is read a moment after it was set, which a busy machine
	// may make seconds.
	if m := message(); !regexp.MustCompile(`has waited 10m\d+s at priority level 2`).MatchString(m) || !strings.Contains(m, "levels 0 to 1") {
		t.Fatalf("reason for a message waiting at level 2: %q; want it to name level 2 and the levels read before it", m)
	}
	age(0, "20 minutes")
	if m := message(); !regexp.MustCompile(`has waited 20m\d+s`).MatchString(m) || strings.Contains(m, "priority level") {
		t.Fatalf("reason for a message waiting at level 0: %q; want no word of levels", m)
	}
}

// TestHealthNamesWorkersOfADroppedQueue: running worker processes that
// serve a queue dropped while they ran (they wait for it) make health
// DEGRADED with a reason naming the queue, how many serve it, and the
// create that brings it back; once it is made again, or once they stop,
// the reason goes.
func TestHealthNamesWorkersOfADroppedQueue(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	for _, q := range []string{"kept", "gone"} {
		if err := s.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []string{"w-1", "w-2"} {
		if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: id, Hostname: "h", PID: i + 1, Queues: []string{"kept", "gone"}, Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if h, err := svc.Health(ctx); err != nil || h.Status != ops.HealthOK {
		t.Fatalf("health before the drop: %+v, %v; want OK", h, err)
	}
	if _, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: "gone", Confirm: true}); err != nil {
		t.Fatal(err)
	}
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != ops.HealthDegraded || len(h.Reasons) != 1 || *h.Workers != 2 || *h.Queues != 1 {
		t.Fatalf("health after the drop: %s, %d workers, %d queues, reasons %+v; want DEGRADED, 2, 1 and one reason", h.Status, *h.Workers, *h.Queues, h.Reasons)
	}
	r := h.Reasons[0]
	if r.Code != "workers_of_dropped_queue" || r.Queue != "gone" || !strings.Contains(r.Message, `queue "gone" does not exist, but 2 running worker processes serve it`) ||
		!hasHint(r.Next, ops.OpQueueCreate, map[string]any{"queue": "gone"}) || !hasHint(r.Next, ops.OpWorkers, nil) {
		t.Fatalf("reason %+v", r)
	}
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: "gone"}); err != nil {
		t.Fatalf("the create the reason offers: %v", err)
	}
	if h, err := svc.Health(ctx); err != nil || h.Status != ops.HealthOK || len(h.Reasons) != 0 {
		t.Fatalf("health after the create: %+v, %v; want OK", h, err)
	}
	// Dropped again, with its workers stopped: nothing waits for it.
	if _, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: "gone", Confirm: true}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"w-1", "w-2"} {
		if err := s.StopWorker(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if h, err := svc.Health(ctx); err != nil || h.Status != ops.HealthOK || len(h.Reasons) != 0 {
		t.Fatalf("health with the queue dropped and its workers stopped: %+v, %v; want OK", h, err)
	}
}

// HealthAtLeast orders the verdicts OK, DEGRADED, STALLED, UNREACHABLE;
// a level that is no verdict is met by none.
func TestHealthAtLeast(t *testing.T) {
	t.Parallel()
	verdicts := []string{ops.HealthOK, ops.HealthDegraded, ops.HealthStalled, ops.HealthUnreachable}
	for i, status := range verdicts {
		for j, level := range verdicts {
			if got := ops.HealthAtLeast(status, level); got != (i >= j) {
				t.Errorf("HealthAtLeast(%s, %s) = %v", status, level, got)
			}
		}
		for _, level := range []string{"", "stalled", ops.HealthNotice, "STALLED; DROP TABLE x"} {
			if ops.HealthAtLeast(status, level) {
				t.Errorf("HealthAtLeast(%s, %q) is true for a level that is no verdict", status, level)
			}
		}
	}
}

// Dead letters of the last hour make the verdict DEGRADED while some are in
// the DLQ, pointing at its summary; once every one was retried or discarded
// they are a NOTICE pointing at the audit log, and the verdict is OK: the
// summary would show nothing.
func TestHealthOfDeadLettersDealtWith(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{})
	// As the workers that dead-lettered them would count them.
	if err := s.AddStats(ctx, []store.StatsDelta{{Minute: time.Now().UTC().Truncate(time.Minute), Queue: q, Kind: "k", DeadLettered: 2}}); err != nil {
		t.Fatal(err)
	}
	reason := func() ops.HealthReason {
		t.Helper()
		r, verdict := growingReason(t, svc, q)
		if r.Status == ops.HealthNotice && verdict != ops.HealthOK {
			t.Errorf("verdict %s with dead letters dealt with: %+v", verdict, r)
		}
		return r
	}
	if r := reason(); r.Status != ops.HealthDegraded || !strings.Contains(r.Message, "(2 in its DLQ)") || !hasHint(r.Next, ops.OpDLQSummary, nil) {
		t.Fatalf("two dead letters in the DLQ: %+v; want DEGRADED pointing at the summary", r)
	}
	if _, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	r := reason()
	if r.Status != ops.HealthNotice || !strings.Contains(r.Message, "and its DLQ is empty now") || !hasHint(r.Next, ops.OpAudit, nil) || hasHint(r.Next, ops.OpDLQSummary, nil) {
		t.Fatalf("every dead letter discarded: %+v; want a NOTICE pointing at the audit log", r)
	}
}

// Dead letters that stopped coming a quarter of an hour ago leave the
// verdict as it is, with a NOTICE that still points at the DLQ: DEGRADED
// for the rest of the hour would hide that a fix worked, and the next
// burst. A new dead letter makes it DEGRADED again.
func TestHealthOfDeadLettersThatStopped(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{})
	count := func(ago time.Duration, n int64) {
		t.Helper()
		minute := time.Now().UTC().Add(-ago).Truncate(time.Minute)
		if err := s.AddStats(ctx, []store.StatsDelta{{Minute: minute, Queue: q, Kind: "k", DeadLettered: n}}); err != nil {
			t.Fatal(err)
		}
	}
	count(20*time.Minute, 1)
	count(40*time.Minute, 1)
	r, verdict := growingReason(t, svc, q)
	if r.Status != ops.HealthNotice || verdict != ops.HealthOK || !strings.Contains(r.Message, "2 messages dead-lettered in the last hour, none in the last 15 minutes (2 in its DLQ)") || !hasHint(r.Next, ops.OpDLQSummary, nil) {
		t.Fatalf("dead letters 20 and 40 minutes ago: %+v, verdict %s; want a NOTICE pointing at the summary, verdict OK", r, verdict)
	}
	count(0, 1)
	if r, verdict := growingReason(t, svc, q); r.Status != ops.HealthDegraded || verdict != ops.HealthDegraded || !strings.Contains(r.Message, "3 messages dead-lettered in the last hour (2 in its DLQ)") {
		t.Fatalf("a dead letter this minute: %+v, verdict %s; want DEGRADED", r, verdict)
	}
}

// growingReason is the dead_letters_growing reason of health about queue
// q, and the verdict, failing the test when there is none.
func growingReason(t *testing.T, svc *ops.Service, q string) (ops.HealthReason, string) {
	t.Helper()
	h, err := svc.Health(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.Reasons {
		if r.Code == "dead_letters_growing" && r.Queue == q {
			return r, h.Status
		}
	}
	t.Fatalf("health has no dead_letters_growing for %s: %+v", q, h)
	return ops.HealthReason{}, ""
}

// The create that brings back a queue with priority levels, dropped
// outside pgbus under its workers, names its levels: created without them
// it is refused.
func TestHealthNamesTheLevelsOfADroppedQueueItsWorkersWaitFor(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	if err := s.CreatePriorityQueue(ctx, "tiers", 2); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "w-1", Hostname: "h", PID: 1, Queues: []string{"tiers"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	pgtest.DropOutside(t, s, "tiers_p0", "tiers_p1")
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(h.Reasons, func(r ops.HealthReason) bool { return r.Code == "workers_of_dropped_queue" })
	if i < 0 || !hasHint(h.Reasons[i].Next, ops.OpQueueCreate, map[string]any{"queue": "tiers", "priorities": 2}) {
		t.Fatalf("health: %+v; want the workers' dropped queue created again with its 2 levels", h.Reasons)
	}
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: "tiers", Priorities: 2}); err != nil {
		t.Fatalf("the create the reason offers: %v", err)
	}
}

// A paused queue's reason counts as waiting only the ready messages, as
// pgbus queues and the queue's messages do, and names the scheduled apart.
func TestHealthPausedCountsReady(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	if err := s.CreateQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		m := store.NewMessage{Payload: json.RawMessage(`1`)}
		if i == 5 {
			m.Delay = time.Hour
		}
		if _, err := s.Send(ctx, "q", m); err != nil {
			t.Fatal(err)
		}
	}
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(h.Reasons, func(r ops.HealthReason) bool { return r.Code == "queue_paused" })
	if want := `queue "q" is paused with 5 messages waiting and 1 scheduled`; i < 0 || h.Reasons[i].Message != want {
		t.Fatalf("reasons = %+v; want queue_paused saying %q", h.Reasons, want)
	}
}

// A breaker opened by a downstream that limits its rate (429 Too Many
// Requests, or a 503 with a Retry-After) cycles: each time it closes,
// every job it held runs at once and opens it again. Health's circuit_open
// reason and the circuits view say so, and name the setting that bounds
// the requests in flight, as a field and not only in words; a 503 without
// a Retry-After, a downstream that is down, names none.
func TestHealthNamesTheBoundOfARateLimitedBreaker(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: uniqueName("w"), Hostname: "h", PID: 1, Queues: []string{q}, Concurrency: 10}); err != nil {
		t.Fatal(err)
	}
	breaker := func(name string, f store.FailedCall) {
		t.Helper()
		if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordBreakerUsers(ctx, name, []store.BreakerUser{{Queue: q}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.BreakerFailedWith(ctx, name, f); err != nil {
			t.Fatal(err)
		}
	}
	limited, slowed, down := uniqueName("http:limited"), uniqueName("http:slowed"), uniqueName("http:down")
	breaker(limited, store.FailedCall{Error: "POST https://api.example.com/x: 429 Too Many Requests", Class: "http.429"})
	breaker(slowed, store.FailedCall{Error: "POST https://b.example.com/x: 503 Service Unavailable (Retry-After 30s)", Class: "http.503", RetryAfter: 30 * time.Second})
	breaker(down, store.FailedCall{Error: "POST https://c.example.com/x: 503 Service Unavailable", Class: "http.503"})
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ops.HealthReason{}
	for _, r := range h.Reasons {
		if r.Code == "circuit_open" {
			got[r.Key().Subject] = r
		}
	}
	for name, want := range map[string]int{limited: 429, slowed: 503} {
		r, ok := got[name]
		if !ok {
			t.Fatalf("health names no circuit_open for %s: %+v", name, h.Reasons)
		}
		if r.RateLimited == nil || r.RateLimited.Status != want || r.RateLimited.Setting != "max_concurrency" || r.RateLimited.Where == "" {
			t.Errorf("circuit_open of %s: rate_limited %+v; want status %d and the setting max_concurrency", name, r.RateLimited, want)
		}
		if !strings.Contains(r.Message, "limits its rate or concurrency") || !strings.Contains(r.Message, "bound the requests in flight with max_concurrency") {
			t.Errorf("circuit_open of %s says %q; want it to say the downstream limits its rate and name max_concurrency", name, r.Message)
		}
	}
	if r := got[slowed]; r.RateLimited != nil && r.RateLimited.RetryAfterSeconds != 30 {
		t.Errorf("rate_limited of %s: %+v; want its Retry-After of 30 seconds", slowed, r.RateLimited)
	}
	if r, ok := got[down]; !ok || r.RateLimited != nil || strings.Contains(r.Message, "max_concurrency") {
		t.Errorf("circuit_open of %s (a 503 without a Retry-After) = %+v; want no rate limit named", down, r)
	}
	c, err := svc.Circuits(ctx, ops.CircuitsRequest{Name: limited})
	if err != nil || len(c.Circuits) != 1 || c.Circuits[0].RateLimited == nil || c.Circuits[0].RateLimited.Setting != "max_concurrency" {
		t.Fatalf("circuits of %s = %+v, %v; want rate_limited naming max_concurrency", limited, c, err)
	}
}
