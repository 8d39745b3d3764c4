package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// deadInQueues creates the queues named, in parallel and without dropping
// them one by one (their database is dropped whole), and dead-letters one
// message of kind in each.
func deadInQueues(t *testing.T, st *store.Store, names []string, kind string) {
	t.Helper()
	ctx := testContext(t)
	work := make(chan string)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for q := range work {
				errs <- deadInQueue(ctx, st, q, kind)
			}
		})
	}
	for _, q := range names {
		work <- q
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func deadInQueue(ctx context.Context, st *store.Store, q, kind string) error {
	if err := st.CreateQueue(ctx, q); err != nil {
		return fmt.Errorf("create %s: %w", q, err)
	}
	ids, err := st.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(fmt.Sprintf(`{"pgbus_kind": %q}`, kind))}})
	if err != nil {
		return fmt.Errorf("send to %s: %w", q, err)
	}
	_, err = st.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{{MsgID: ids[0], Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 5,
		Failure: &store.Failure{Attempt: 5, Kind: kind, ErrorClass: "E", ErrorMessage: "endpoint refused"}}})
	if err != nil {
		return fmt.Errorf("dead-letter in %s: %w", q, err)
	}
	return nil
}

// A retry by filter whose messages go back to many queues (200: most with
// no worker, a few served, 12 paused, 12 using an open breaker) answers
// under the response budget, dry run or not. It lists the worker coverage
// of every queue it can, those no worker serves first, and counts the
// rest (all 200 queues, not only those of the 100 messages listed in
// moved); it names a worker to start, a queue to resume and a breaker for
// ten queues at most, says in notes how many there are, and where to see
// them all.
func TestRetryToManyQueuesStaysUnderBudget(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	const many, served, paused, broken = 200, 5, 12, 12
	kind := "notify_" + strings.ReplaceAll(uniqueName("k"), "-", "_")
	names := make([]string, many)
	for i := range names {
		names[i] = fmt.Sprintf("customer_notification_webhooks_region_%03d", i)
	}
	start := time.Now()
	deadInQueues(t, st, names, kind)
	t.Logf("fixture: %v", time.Since(start))
	// The served queues are named first, so that a list in the order
	// the messages moved would list them first. The worker says it beats
	// hourly: it never beats here, and must stay running however long the
	// calls below take on a busy machine.
	if err := st.RegisterWorker(ctx, store.WorkerProcess{ID: uniqueName("w"), Hostname: "live", PID: 1, Queues: names[:served], Concurrency: 1,
		HeartbeatInterval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, q := range names[served : served+paused] {
		s, err := st.QueueSettingsOf(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		s.Paused = true
		if err := st.SetQueueSettings(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for i, q := range names[served+paused : served+paused+broken] {
		name := fmt.Sprintf("http:partner-%02d.example.com", i)
		if err := st.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if err := st.RecordBreakerUsers(ctx, name, []store.BreakerUser{{Queue: q, Kind: kind}}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.BreakerFailure(ctx, name, "503 Service Unavailable"); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnvOn(t, st, ops.Options{})

	for _, dry := range []bool{true, false} {
		args := map[string]any{"kind": kind, "limit": 1000, "dry_run": dry}
		if !dry {
			// The retry all of its kind ran before returns: the dry run's
			// expect holds the real one to the same messages.
			args["expect"] = callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"kind": kind, "limit": 1000, "dry_run": true}).Expect
		}
		text := resultText(e.call(t, "pgbus_dlq_retry", args))
		n := utf8.RuneCountInString(text)
		t.Logf("pgbus_dlq_retry %v: %d characters", args, n)
		if n >= responseLimit {
			t.Fatalf("pgbus_dlq_retry %v: %d characters, want under %d: %.300s", args, n, responseLimit, text)
		}
		var r ops.DLQRetry
		if err := json.Unmarshal([]byte(text), &r); err != nil {
			t.Fatal(err)
		}
		if r.Retried != many {
			t.Fatalf("dry run %v: retried %d, want %d", dry, r.Retried, many)
		}
		if len(r.Workers) == 0 || r.WorkersOmitted == 0 || len(r.Workers)+r.WorkersOmitted != many {
			t.Errorf("dry run %v: %d queues listed in workers, %d omitted; want some of the %d listed and the rest counted", dry, len(r.Workers), r.WorkersOmitted, many)
		}
		for _, w := range r.Workers {
			if w.Served() {
				t.Errorf("dry run %v: workers lists served queue %s while %d unserved ones were left out", dry, w.Queue, r.WorkersOmitted)
			}
		}
		counts := map[string]int{}
		for _, h := range r.Next {
			op := h.Op
			if op == "cli" && strings.HasPrefix(fmt.Sprint(h.Args["command"]), "pgbus work ") {
				op = "work"
			}
			counts[op]++
		}
		if counts["work"] != 10 || counts["pgbus_queue_resume"] != 10 || counts["pgbus_circuits"] != 11 {
			t.Errorf("dry run %v: next steps %v; want 10 workers to start, 10 queues to resume, 10 breakers and the list of all", dry, counts)
		}
		if counts["pgbus_health"] != 1 {
			t.Errorf("dry run %v: %d health checks in next; want the one that lists the paused queues and those no worker serves", dry, counts["pgbus_health"])
		}
		notes := strings.Join(r.Notes, "\n")
		for _, want := range []string{
			fmt.Sprintf("no running worker serves %d of the %d queues", many-served, many),
			fmt.Sprintf("%d of the queues the messages", paused),
			fmt.Sprintf("%d breakers", broken),
			fmt.Sprintf("%d of the %d queues the messages", len(r.Workers), many),
		} {
			if !strings.Contains(notes, want) {
				t.Errorf("dry run %v: notes do not say %q:\n%s", dry, want, notes)
			}
		}
		if dry && !strings.Contains(notes, "pgbus dlq retry-all --dry-run") {
			t.Errorf("dry run: notes do not say where to see every queue:\n%s", notes)
		}
		if !dry && !strings.Contains(notes, "(no_workers); pgbus health on the command line lists them all") {
			t.Errorf("retry: notes do not say where to see every queue:\n%s", notes)
		}
	}
}
