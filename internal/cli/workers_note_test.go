package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A retry and a resume into a queue no worker serves say so and say to
// start one; dlq show prints how long each attempt ran, its timeout, and
// the downstream's output, redacted.
func TestWorkersNoteAndFailureContext(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	s := pgtest.OpenStore(t, d.url)
	ctx := pgtest.Context(t)
	id, err := s.Send(ctx, "orders", store.NewMessage{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(`{"pgbus_kind": "charge"}`)})
	if err != nil {
		t.Fatal(err)
	}
	f := &store.Failure{Attempt: 1, Kind: "charge", ErrorClass: "exec.timeout", ErrorMessage: "still running at its timeout",
		Detail: store.FailureDetail{ElapsedMS: ptr(int64(1500)), TimeoutMS: 1000, Output: "…connecting\nboom: password=hunter2", OutputSource: "stderr", OutputTruncated: true}}
	dead, err := s.DeadLetterMany(ctx, "orders", "orders_dlq", store.SourceWorker, []store.DeadLetterItem{{MsgID: id, Reason: store.ReasonNonRetryable, MaxRetries: 5, Failure: f}})
	if err != nil || len(dead) != 1 {
		t.Fatalf("dead-letter: %v, %v", dead, err)
	}
	dlqID := fmt.Sprint(dead[0].DLQMsgID)

	show := d.ok(t, "dlq", "show", dlqID, "--queue", "orders")
	for _, want := range []string{"RAN", "1.5s (timeout 1s)", "attempt 1 stderr, cut:", "    boom: password=[REDACTED]"} {
		if !strings.Contains(show, want) {
			t.Errorf("dlq show lacks %q:\n%s", want, show)
		}
	}
	if strings.Contains(show, "hunter2") {
		t.Errorf("dlq show shows the password:\n%s", show)
	}

	const note = "note: no worker process has served queue orders in the last 24 hours"
	retry := d.ok(t, "dlq", "retry", dlqID, "--queue", "orders")
	if !strings.Contains(retry, note) || !strings.Contains(retry, "next: pgbus work --queue orders") {
		t.Errorf("retry without workers:\n%s", retry)
	}
	d.ok(t, "queue", "pause", "orders")
	resume := d.ok(t, "queue", "resume", "orders")
	if !strings.HasPrefix(resume, "queue orders is running now\n") || !strings.Contains(resume, note) || !strings.Contains(resume, "next: pgbus work --queue orders") {
		t.Errorf("resume without workers:\n%s", resume)
	}
}

func ptr[T any](v T) *T { return &v }

// A retry into more queues than a note each reads well lists those no
// worker serves in one table, all of them, and names a worker to start
// for ten: the next steps do not repeat one command per queue.
func TestRetryIntoManyQueuesWithoutWorkers(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	const many = 12
	for i := range many {
		q := fmt.Sprintf("webhooks_%02d", i)
		d.ok(t, "queue", "create", q)
		pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "notify"})
	}
	for _, dry := range []bool{true, false} {
		args := []string{"dlq", "retry-all", "--kind", "notify", "--yes"}
		if dry {
			args = []string{"dlq", "retry-all", "--kind", "notify", "--dry-run"}
		}
		out := d.ok(t, args...)
		if n := strings.Count(out, "note: no worker process has served"); n != 0 {
			t.Errorf("%v: %d notes of one queue each; want the queues in a table:\n%s", args, n, out)
		}
		for _, want := range []string{
			fmt.Sprintf("note: no running worker serves these %d queues", many),
			"webhooks_00  never",
			"webhooks_11  never",
			fmt.Sprintf("note: no running worker serves %d of the %d queues", many, many),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%v lacks %q:\n%s", args, want, out)
			}
		}
		if n := strings.Count(out, "next: pgbus work --queue"); n != 10 {
			t.Errorf("%v: %d workers to start in the next steps, want 10:\n%s", args, n, out)
		}
	}
}
