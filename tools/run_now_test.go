package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// pgbus_queue_run_now makes a queue's retrying messages visible after a
// dry run that only counts them, both audited with the client's name;
// pgbus_queue_messages offers it while a page shows retrying messages.
// Arguments of the wrong type, a missing, huge or injected queue name and
// a DLQ are tool errors saying what to pass, and move nothing.
func TestQueueRunNowTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	id := pgtest.Retrying(t, e.st, q)

	page := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q, "state": "retrying"})
	if h, ok := findHint(page.Next, "pgbus_queue_run_now"); len(page.Items) != 1 || page.Items[0].MsgID != id || !ok || hintArg(h, "queue") != `"`+q+`"` {
		t.Fatalf("retrying messages of %s: %+v; want message %d and pgbus_queue_run_now next", q, page, id)
	}
	for _, bad := range []struct {
		args any
		want string
	}{
		{map[string]any{}, "queue is required"},
		{map[string]any{"queue": 42}, "queue"},
		{map[string]any{"queue": q, "dry_run": "yes"}, "dry_run"},
		{map[string]any{"queue": q + "_dlq"}, "dead-letter queue of"},
		{map[string]any{"queue": q + "'; DROP TABLE pgmq.meta; --"}, "queue name"},
		{map[string]any{"queue": strings.Repeat("q", 100_000)}, "pass a shorter value"},
		{map[string]any{"queue": strings.Repeat("q", 48)}, "queue name"},
		{map[string]any{"queue": q, "ids": []int{1}}, "ids"},
		{[]any{q}, "object"},
	} {
		e.callErr(t, "pgbus_queue_run_now", bad.args, bad.want)
	}
	if got := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q, "state": "retrying"}); len(got.Items) != 1 {
		t.Fatalf("after refused calls %d retrying messages, want 1 still waiting", len(got.Items))
	}

	dry := callOK[ops.QueueRunNow](t, e, "pgbus_queue_run_now", map[string]any{"queue": q, "dry_run": true})
	if h, ok := findHint(dry.Next, "pgbus_queue_run_now"); dry.Visible != 1 || !dry.DryRun || !ok || strings.Contains(hintArg(h, "dry_run"), "true") {
		t.Fatalf("dry run = %+v; want 1 counted and the real call next", dry)
	}
	out := callOK[ops.QueueRunNow](t, e, "pgbus_queue_run_now", map[string]any{"queue": q})
	if out.Visible != 1 || out.DryRun || out.Workers == nil || out.Workers.Served() {
		t.Fatalf("run now = %+v; want 1 made visible and no worker serving %s said", out, q)
	}
	if got := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q}); len(got.Items) != 1 || got.Items[0].State != "waiting" {
		t.Fatalf("after run now: %+v; want the message waiting to be read", got.Items)
	}
	if again := callOK[ops.QueueRunNow](t, e, "pgbus_queue_run_now", map[string]any{"queue": q}); again.Visible != 0 {
		t.Errorf("run now again = %+v; want nothing left to run", again)
	}
	rows := auditRows(t, e.st, ops.OpQueueRunNow, q)
	if len(rows) != 3 || !strings.Contains(rows[2].Client, "tools-test") || !strings.Contains(string(rows[2].Arguments), `"dry_run": true`) {
		for _, r := range rows {
			t.Logf("audited: %s %s by %s", r.Arguments, r.Result, r.Client)
		}
		t.Errorf("%d audit entries of run now; want the dry run and both calls, by tools-test", len(rows))
	}
}

// pgbus_queue_run_now with a kind runs only that kind's retrying
// messages; a kind that is not a string is a tool error naming it.
func TestQueueRunNowToolOfOneKind(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	for _, kind := range []string{"mail", "sms"} {
		pgtest.RetryingMessage(t, e.st, q, store.NewMessage{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(`{"pgbus_kind": "` + kind + `"}`)})
	}
	e.callErr(t, "pgbus_queue_run_now", map[string]any{"queue": q, "kind": []string{"mail"}}, "kind")
	out := callOK[ops.QueueRunNow](t, e, "pgbus_queue_run_now", map[string]any{"queue": q, "kind": "mail"})
	if out.Visible != 1 || out.Kind != "mail" {
		t.Fatalf("run now of kind mail = %+v; want 1 made visible, of kind mail", out)
	}
	page := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q, "state": "retrying"})
	if len(page.Items) != 1 || page.Items[0].Kind != "sms" {
		t.Fatalf("retrying after run now of kind mail: %+v; want the sms message alone", page.Items)
	}
}

// pgbus_queue_run_now tells a client that asks for progress how many
// messages it made visible, after each level's batch, without a total
// (none is counted first).
func TestQueueRunNowToolProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := pgtest.Name("levels")
	if err := e.st.CreatePriorityQueue(testContext(t), q, 2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.st.DropQueue(context.Background(), q) })
	pgtest.Retrying(t, e.st, store.PriorityQueueName(q, 0))
	pgtest.Retrying(t, e.st, store.PriorityQueueName(q, 1))
	var mu sync.Mutex
	var progress []map[string]any
	e.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			progress = append(progress, n.Params.AdditionalFields)
			mu.Unlock()
		}
	})
	req := mcpCall("pgbus_queue_run_now", map[string]any{"queue": q})
	req.Params.Meta = &mcp.Meta{ProgressToken: "run-1"}
	if res, err := e.c.CallTool(testContext(t), req); err != nil || res.IsError {
		t.Fatalf("run now with progress: %v %+v", err, res)
	}
	pgtest.Eventually(t, time.Minute, "two progress notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) == 2
	})
	mu.Lock()
	defer mu.Unlock()
	for i, p := range progress {
		if _, total := p["total"]; p["progressToken"] != "run-1" || fmt.Sprint(p["progress"]) != fmt.Sprint(i+1) || total {
			t.Errorf("progress notification %d: %v; want progress %d and no total", i, p, i+1)
		}
	}
}

// pgbus_dlq_summary says of a group how often its newest message had
// been retried out of a DLQ before, and leaves it out of one that died
// once; pgbus_dlq_retry counts the messages that came back.
func TestDLQSummarySaysGroupsCameBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	pgtest.DeadLetter(t, e.st, q, pgtest.DeadSpec{Kind: "once"},
		pgtest.DeadSpec{Kind: "thrice", Headers: `{"pgbus_kind": "thrice", "pgbus_dlq_retries": 2}`})
	res := e.call(t, "pgbus_dlq_summary", map[string]any{"queue": q})
	sum := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{"queue": q})
	trips := map[string]int{}
	for _, g := range sum.Groups {
		trips[g.Kind] = g.RetriesFromDLQ
	}
	if len(trips) != 2 || trips["thrice"] != 2 || trips["once"] != 0 || strings.Count(resultText(res), `"retries_from_dlq"`) != 1 {
		t.Fatalf("groups' retries_from_dlq: %v in %s; want 2 for thrice and none said for once", trips, resultText(res))
	}
	// A retry's dry run counts the messages that came back.
	dry := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"queue": q, "limit": 10, "dry_run": true})
	if dry.Retried != 2 || dry.CameBack != 1 {
		t.Errorf("retry dry run = %d retried, %d came back; want 2 and 1", dry.Retried, dry.CameBack)
	}
}

// pgbus_queue_run_now with in_flight makes the messages in flight visible
// now, not the retrying ones, after a dry run whose next call keeps
// in_flight and warns that a job still running runs twice; the audit
// records it.
func TestQueueRunNowToolInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	pgtest.Retrying(t, e.st, q)
	ctx := testContext(t)
	if _, err := e.st.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.st.Read(ctx, q, time.Hour, 1); err != nil || len(got) != 1 {
		t.Fatalf("read: %+v, %v", got, err)
	}
	dry := callOK[ops.QueueRunNow](t, e, "pgbus_queue_run_now", map[string]any{"queue": q, "in_flight": true, "dry_run": true})
	h, ok := findHint(dry.Next, "pgbus_queue_run_now")
	if dry.Visible != 1 || !dry.InFlight || !ok || hintArg(h, "in_flight") != "true" || !strings.Contains(h.Why, "twice") {
		t.Fatalf("dry run with in_flight = %+v; want 1 counted and the same call next, in_flight kept, warning", dry)
	}
	out := callOK[ops.QueueRunNow](t, e, "pgbus_queue_run_now", map[string]any{"queue": q, "in_flight": true})
	if out.Visible != 1 || !out.InFlight {
		t.Fatalf("run now with in_flight = %+v; want 1 made visible", out)
	}
	if got := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q, "state": "retrying"}); len(got.Items) != 1 {
		t.Errorf("retrying messages after run now with in_flight: %+v; want the one still waiting", got.Items)
	}
	if rows := auditRows(t, e.st, ops.OpQueueRunNow, q); len(rows) != 2 || !strings.Contains(string(rows[0].Arguments), `"in_flight": true`) {
		t.Errorf("audit of run now with in_flight: %+v", rows)
	}
}
