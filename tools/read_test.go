package tools_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

func TestHealthAndQueueStats(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Kind: "email", Class: "SMTPError", Message: "421 try later"})

	h := healthOK(t, e, map[string]any{})
	if !slices.Contains([]string{ops.HealthOK, ops.HealthDegraded, ops.HealthStalled}, h.Status) {
		t.Errorf("health status %q", h.Status)
	}
	if counted(h.DeadMessages) < 2 || counted(h.Queues) < 1 {
		t.Errorf("health counts no dead messages or queues: %+v", h)
	}

	stats := callOK[ops.QueueStatsResult](t, e, "pgbus_queue_stats", map[string]any{"queue": q})
	if len(stats.Queues) != 1 || stats.Queues[0].Queue != q || stats.Queues[0].DLQDepth != 2 || stats.Queues[0].DLQ != q+"_dlq" {
		t.Fatalf("queue stats: %+v", stats)
	}
	all := callOK[ops.QueueStatsResult](t, e, "pgbus_queue_stats", nil)
	if !slices.ContainsFunc(all.Queues, func(s ops.QueueStats) bool { return s.Queue == q }) {
		t.Errorf("stats of all queues miss %s", q)
	}
	e.callErr(t, "pgbus_queue_stats", map[string]any{"queue": "no_such_queue_here"}, "no_such_queue_here", "does not exist")
}

func TestDLQSummaryListShow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	a := pgtest.DeadLetterN(t, e.st, q, 3, pgtest.DeadSpec{Kind: "webhook", Class: "HTTPError", Message: "http 503 from upstream", Trace: "main.go:1\nmain.go:2"})
	b := pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Kind: "charge", Reason: store.ReasonNonRetryable, Class: "ValidationError", Message: "bad input: amount missing"})

	sum := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{"queue": q})
	if sum.Total != 5 || len(sum.Groups) != 2 || sum.TotalGroups != 2 || sum.Truncated {
		t.Fatalf("summary: %+v", sum)
	}
	g := sum.Groups[0]
	if g.Count != 3 || g.Kind != "webhook" || g.ErrorClass != "HTTPError" || g.DLQ != q+"_dlq" || g.SourceQueue != q || len(g.SampleMsgIDs) != 3 {
		t.Errorf("largest group: %+v", g)
	}
	if sum.Groups[1].Count != 2 || !slices.Equal(sum.Groups[1].Reasons, []string{store.ReasonNonRetryable}) {
		t.Errorf("second group: %+v", sum.Groups[1])
	}
	// Next steps name the tools to call, with the largest group's arguments.
	if h, ok := findHint(sum.Next, "pgbus_dlq_show"); !ok || hintArg(h, "queue") != `"`+g.DLQ+`"` || hintArg(h, "msg_id") != fmt.Sprint(g.SampleMsgIDs[0]) {
		t.Errorf("summary next %+v: want pgbus_dlq_show of the largest group's first sample", sum.Next)
	}
	if h, ok := findHint(sum.Next, "pgbus_dlq_list"); !ok || hintArg(h, "group") != `"`+g.Group+`"` || g.Group == "" {
		t.Errorf("summary next %+v: want pgbus_dlq_list of the largest group", sum.Next)
	}
	only := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{"queue": q, "text": "AMOUNT"})
	if only.Total != 2 || only.Groups[0].Kind != "charge" {
		t.Errorf("summary by text: %+v", only)
	}

	// Pages of 2, newest first, with an age filter that must mean the same
	// instant on every page.
	var seen []int64
	cursor := ""
	for page := 0; ; page++ {
		args := map[string]any{"queue": q, "since": "1h", "limit": 2}
		if cursor != "" {
			args["cursor"] = cursor
		}
		out := callOK[ops.DLQList](t, e, "pgbus_dlq_list", args)
		for _, it := range out.Items {
			seen = append(seen, it.MsgID)
			if it.DLQ != q+"_dlq" || it.SourceQueue != q || it.ErrorClass == "" {
				t.Errorf("list item: %+v", it)
			}
		}
		if out.NextCursor == "" {
			break
		}
		if page > 5 {
			t.Fatal("list does not end")
		}
		cursor = out.NextCursor
	}
	want := append(slices.Clone(a), b...)
	slices.Reverse(want)
	if !slices.Equal(seen, want) {
		t.Errorf("listed %v, want newest first %v", seen, want)
	}
	def := callOK[ops.DLQList](t, e, "pgbus_dlq_list", map[string]any{"queue": q, "kind": "charge"})
	if len(def.Items) != 2 || def.NextCursor != "" {
		t.Errorf("list by kind: %+v", def)
	}

	// Show without queue: the id is in this DLQ only.
	show := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"msg_id": a[0]})
	if show.DLQ != q+"_dlq" || show.Queue != q || show.MsgID != a[0] || show.Kind != "webhook" {
		t.Fatalf("show: %+v", show)
	}
	if show.DeadLetter == nil || show.DeadLetter.ErrorClass != "HTTPError" || show.DeadLetter.Reason != store.ReasonMaxRetriesExceeded || show.DeadLetter.Backtrace == "" {
		t.Errorf("show block: %+v", show.DeadLetter)
	}
	if len(show.History) != 1 || show.History[0].ErrorMessage != "http 503 from upstream" {
		t.Errorf("show history: %+v", show.History)
	}
	if show.PayloadShown || show.Payload != nil || show.PayloadBytes == 0 || !hasNote(show.Notes, "does not show payloads") {
		t.Errorf("payload should be hidden with a note: %+v", show)
	}
	if h, ok := findHint(show.Next, "pgbus_dlq_retry"); !ok || hintArg(h, "ids") != fmt.Sprintf("[%d]", a[0]) || hintArg(h, "queue") != `"`+q+`_dlq"` {
		t.Errorf("show next %+v: want pgbus_dlq_retry of this message", show.Next)
	}
	if _, ok := findHint(show.Next, "pgbus_dlq_discard"); !ok {
		t.Errorf("show next %+v: want pgbus_dlq_discard", show.Next)
	}
	if strings.Contains(string(show.Headers), store.HeaderDeadLetter) || !strings.Contains(string(show.Headers), "webhook") {
		t.Errorf("headers should hold pgbus_kind and not the block: %s", show.Headers)
	}
	withQueue := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"queue": q, "msg_id": b[1]})
	if withQueue.Kind != "charge" {
		t.Errorf("show with queue: %+v", withQueue)
	}
}

func TestQueueMessagesAndWorkers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	ctx := testContext(t)
	for i := range 3 {
		if _, err := e.st.Send(ctx, q, store.NewMessage{Payload: []byte(fmt.Sprintf(`{"i": %d, "token": "t%d"}`, i, i)), Headers: []byte(`{"pgbus_kind": "sync"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	out := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q, "state": "waiting", "limit": 2})
	if len(out.Items) != 2 || out.NextCursor == "" {
		t.Fatalf("first page: %+v", out)
	}
	for _, it := range out.Items {
		if it.State != store.StateWaiting || it.Kind != "sync" || it.PayloadShown || it.Payload != nil || it.History == nil {
			t.Errorf("item: %+v", it)
		}
	}
	next := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q, "state": "waiting", "cursor": out.NextCursor})
	if len(next.Items) != 1 || next.NextCursor != "" {
		t.Errorf("second page: %+v", next)
	}
	none := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q, "state": "retrying"})
	if len(none.Items) != 0 {
		t.Errorf("retrying: %+v", none)
	}

	id := uniqueName("worker")
	if err := e.st.RegisterWorker(ctx, store.WorkerProcess{ID: id, Hostname: "host", PID: 42, Queues: []string{q}, Concurrency: 3, HeartbeatInterval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.st.StopWorker(ctx, id) })
	ws := callOK[ops.Workers](t, e, "pgbus_workers", nil)
	i := slices.IndexFunc(ws.Workers, func(w ops.WorkerStatus) bool { return w.ID == id })
	if i < 0 || ws.Workers[i].Status != ops.WorkerRunning || ws.Workers[i].PID != 42 || ws.Running < 1 {
		t.Fatalf("workers: %+v", ws)
	}
}

func hasNote(notes []string, want string) bool {
	return slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, want) })
}

// TestErrorTextRedacted: secrets in error messages and backtraces (a DSN's
// password, a key=value token, a bearer credential) are hidden wherever a
// tool shows them: the list, the dead-letter block and the history.
func TestErrorTextRedacted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 1, pgtest.DeadSpec{Kind: "sync", Class: "ConnError",
		Message: "dial postgres://app:pw-hunter2@db:5432/orders failed; api_key=ak-778899",
		Trace:   "client.go:10\nsent Authorization: Bearer tok-5566778899"})
	secrets := []string{"pw-hunter2", "ak-778899", "tok-5566778899"}

	list := callOK[ops.DLQList](t, e, "pgbus_dlq_list", map[string]any{"queue": q})
	if len(list.Items) != 1 || !strings.Contains(list.Items[0].ErrorMessage, "postgres://app:[REDACTED]@db") || !hasNote(list.Notes, "[REDACTED]") {
		t.Errorf("list: %+v", list)
	}
	show := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"msg_id": ids[0]})
	text := resultText(e.call(t, "pgbus_dlq_show", map[string]any{"msg_id": ids[0]}))
	for _, s := range secrets {
		if strings.Contains(text, s) || strings.Contains(fmt.Sprint(list), s) {
			t.Errorf("secret %q shown: %s", s, text)
		}
	}
	if show.DeadLetter == nil || !strings.Contains(show.DeadLetter.Backtrace, "client.go:10") || len(show.History) != 1 ||
		!strings.Contains(show.History[0].ErrorMessage, "failed") || show.RedactedValues < 6 {
		t.Errorf("show: block %+v, history %+v, redacted_values %d", show.DeadLetter, show.History, show.RedactedValues)
	}
}

// pgbus_workers says why a process stopped on an error, redacted as it
// was stored, and names the field in its output schema: an agent saw it
// stopped but not why.
func TestWorkersSayWhyOneStopped(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{}) // the processes of other tests would crowd it past the response bound
	ctx := testContext(t)
	q := newQueue(t, e.st)
	id := uniqueName("stopped")
	why := fmt.Sprintf("engine: queue %q: permission denied for table q_%s; dsn postgres://app:pw-hunter2@db/orders", q, q)
	if err := e.st.StopWorkerOnError(ctx, store.WorkerProcess{ID: id, Hostname: "host", PID: 43, Queues: []string{q}, Concurrency: 1, HeartbeatInterval: time.Hour}, why); err != nil {
		t.Fatal(err)
	}
	text := resultText(e.call(t, "pgbus_workers", nil))
	type worker struct {
		ID        string `json:"id"`
		Status    string `json:"status"`
		StopError string `json:"stop_error"`
	}
	var ws struct {
		Workers []worker `json:"workers"`
	}
	if err := json.Unmarshal([]byte(text), &ws); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ws.Workers, func(w worker) bool { return w.ID == id })
	if i < 0 {
		t.Fatalf("pgbus_workers lacks process %s:\n%s", id, text)
	}
	got := ws.Workers[i]
	if got.Status != ops.WorkerStopped || !strings.Contains(got.StopError, "permission denied for table") || !strings.Contains(got.StopError, "[REDACTED]") {
		t.Errorf("the process stopped on an error: %+v; want status stopped and its error, redacted", got)
	}
	if strings.Contains(text, "pw-hunter2") {
		t.Errorf("pgbus_workers shows the password:\n%s", text)
	}
	callOK[ops.Workers](t, e, "pgbus_workers", nil) // and the result fits its output schema
}
