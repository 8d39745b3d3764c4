package tools_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// auditRows returns the audit entries of tool whose arguments mention
// marker, newest first.
func auditRows(t testing.TB, s *store.Store, tool, marker string) []store.AuditEntry {
	t.Helper()
	rows, err := s.Pool().Query(testContext(t), `SELECT id, at, client, tool, arguments, result, is_error FROM pgbus.audit_log
		WHERE tool = $1 AND NOT pending AND arguments::text LIKE '%' || $2 || '%' ORDER BY id DESC`, tool, marker)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []store.AuditEntry
	for rows.Next() {
		var e store.AuditEntry
		var args, res []byte
		if err := rows.Scan(&e.ID, &e.At, &e.Client, &e.Tool, &args, &res, &e.IsError); err != nil {
			t.Fatal(err)
		}
		e.Arguments, e.Result = args, res
		out = append(out, e)
	}
	return out
}

func TestRetryByIDs(t *testing.T) {
	t.Parallel()
	// Its retries by id alone read every DLQ, which the queues other tests
	// create and drop meanwhile would change under it, time after time.
	e := newIsolatedEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 4, pgtest.DeadSpec{Kind: "webhook", Class: "HTTPError", Message: "http 503"})

	dry := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"ids": ids[:2], "dry_run": true, "payload": nil})
	if !dry.DryRun || dry.Retried != 2 || len(dry.Moved) != 2 || dry.Moved[0].Queue != q || len(dry.Outcomes) != 2 || dry.Outcomes[0].Outcome != ops.OutcomeWouldRetry {
		t.Fatalf("dry run: %+v", dry)
	}
	if h, ok := findHint(dry.Next, "pgbus_dlq_retry"); !ok || !strings.Contains(h.Why, "not as a dry run") || hintArg(h, "ids") != fmt.Sprintf("[%d,%d]", ids[0], ids[1]) {
		t.Fatalf("dry run next: %+v", dry.Next)
	}
	if pgtest.Live(t, e.st, q) != 0 || pgtest.Live(t, e.st, q+"_dlq") != 4 {
		t.Fatal("a dry run moved messages")
	}

	rep := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"ids": ids[:2], "queue": q})
	if rep.Retried != 2 || rep.Failed != 0 || rep.NotFound != 0 || rep.Moved[0].MsgID == 0 {
		t.Fatalf("retry: %+v", rep)
	}
	for i, o := range rep.Outcomes {
		if o.ID != ids[i] || o.Outcome != ops.OutcomeRetried || o.DLQ != q+"_dlq" || o.Queue != q || o.NewMsgID == 0 {
			t.Errorf("outcome %d: %+v", i, o)
		}
	}
	if h, ok := findHint(rep.Next, "pgbus_queue_messages"); !ok || hintArg(h, "queue") != `"`+q+`"` {
		t.Errorf("retry next: %+v", rep.Next)
	}
	if pgtest.Live(t, e.st, q) != 2 || pgtest.Live(t, e.st, q+"_dlq") != 2 {
		t.Fatal("retried messages did not move back")
	}
	// Retrying an id that is gone moves nothing twice: that id is not_found,
	// the others are retried.
	mixed := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"ids": []int64{ids[0], ids[3]}})
	gone, moved := outcomeOf(t, mixed.Outcomes, ids[0]), outcomeOf(t, mixed.Outcomes, ids[3])
	if mixed.Retried != 1 || mixed.NotFound != 1 || gone.Outcome != ops.OutcomeNotFound || moved.Outcome != ops.OutcomeRetried ||
		!strings.Contains(gone.Error, "no DLQ holds message") || !strings.Contains(mixed.FirstError, "it was retried at ") || !strings.Contains(mixed.FirstError, "back into queue "+q) {
		t.Fatalf("retry of a gone id and a dead one: %+v; want the gone one said retried, into %s", mixed, q)
	}
	if _, ok := findHint(mixed.Next, "pgbus_dlq_list"); !ok {
		t.Errorf("retry with a gone id: next %+v does not point at pgbus_dlq_list", mixed.Next)
	}
	if pgtest.Live(t, e.st, q) != 3 || pgtest.Live(t, e.st, q+"_dlq") != 1 {
		t.Fatal("the retry of a gone id and a dead one did not move just the dead one")
	}
	again := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"ids": ids[:1], "queue": q})
	if again.Retried != 0 || again.NotFound != 1 || !strings.Contains(outcomeOf(t, again.Outcomes, ids[0]).Error, "it was retried at ") {
		t.Fatalf("retry of a gone id in its queue: %+v", again)
	}
	if pgtest.Live(t, e.st, q) != 3 {
		t.Fatal("retrying a gone id made a duplicate")
	}

	// A corrected payload: one id only; the original is kept in the archive.
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"ids": []int64{ids[2], ids[1]}, "payload": map[string]any{"n": 1}}, "exactly one message")
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"queue": q, "limit": 5, "payload": map[string]any{"n": 1}}, "exactly one message")
	fixed := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"ids": []int64{ids[2]}, "payload": map[string]any{"n": 2, "fixed": true}})
	if fixed.Retried != 1 {
		t.Fatalf("retry with payload: %+v", fixed)
	}
	if n := pgtest.Int(t, e.st, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE msg_id = $1 AND message = '{"n": 2, "fixed": true}'::jsonb`, fixed.Moved[0].MsgID); n != 1 {
		t.Error("the corrected payload is not in the queue")
	}
	if pgtest.Archived(t, e.st, q+"_dlq") != 1 {
		t.Error("the original of a corrected message is not in the DLQ's archive")
	}

	// The audit log holds the corrected retry, its payload by size only;
	// the refused one (two ids with a payload) was invalid and is not there.
	audit := auditRows(t, e.st, "dlq_retry", fmt.Sprint(ids[2]))
	if len(audit) != 1 {
		t.Fatalf("audit rows: %+v", audit)
	}
	var result struct {
		Retried int `json:"retried"`
	}
	_ = json.Unmarshal(audit[0].Result, &result)
	if audit[0].IsError || audit[0].Client != "mcp:tools-test/1.0" || result.Retried != 1 ||
		!strings.Contains(string(audit[0].Arguments), "payload_bytes") || strings.Contains(string(audit[0].Arguments), "fixed") {
		t.Errorf("audit of the corrected retry: %+v", audit[0])
	}
	// A retry with an id not found is recorded as not all done.
	partial := auditRows(t, e.st, "dlq_retry", fmt.Sprint(ids[3]))
	var partialResult struct {
		Retried  int `json:"retried"`
		NotFound int `json:"not_found"`
	}
	if len(partial) == 1 {
		_ = json.Unmarshal(partial[0].Result, &partialResult)
	}
	if len(partial) != 1 || !partial[0].IsError || partialResult != (struct {
		Retried  int `json:"retried"`
		NotFound int `json:"not_found"`
	}{1, 1}) {
		t.Errorf("audit of the partial retry: %+v", partial)
	}

	// The audit tool lists them, by tool or by operation name.
	for _, name := range []string{"pgbus_dlq_retry", "dlq_retry"} {
		page := callOK[ops.AuditPage](t, e, "pgbus_audit", map[string]any{"tool": name, "limit": 100})
		if len(page.Items) < 4 || page.Items[0].Op != "dlq_retry" {
			t.Errorf("pgbus_audit %s: %+v", name, page)
		}
	}
}

func TestRetryAndDiscardByFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	pgtest.DeadLetterN(t, e.st, q, 5, pgtest.DeadSpec{Kind: "webhook", Class: "HTTPError", Message: "http 503"})
	pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Kind: "charge", Reason: store.ReasonNonRetryable, Class: "ValidationError", Message: "bad input"})

	e.callErr(t, "pgbus_dlq_retry", map[string]any{"queue": q, "error_class": "HTTPError"}, "limit is required")
	e.callErr(t, "pgbus_dlq_retry", map[string]any{}, "pass ids, or filters")
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"limit": 5}, "pass ids, or filters")
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"ids": []int64{1}, "kind": "x"}, "not both")
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"ids": []int64{1}, "queue": q, "limit": 3}, "limit applies to a filter; with ids every id given is handled: drop limit")
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"queue": q, "limit": 5000}, "out of range")

	// A client that asks for progress gets it.
	var mu sync.Mutex
	var progress []mcp.JSONRPCNotification
	e.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			progress = append(progress, n)
			mu.Unlock()
		}
	})
	req := mcpCall("pgbus_dlq_retry", map[string]any{"queue": q, "error_class": "HTTPError", "limit": 100, "dry_run": true})
	req.Params.Meta = &mcp.Meta{ProgressToken: "retry-1"}
	if res, err := e.c.CallTool(testContext(t), req); err != nil || res.IsError {
		t.Fatalf("dry run with progress: %v %+v", err, res)
	}
	pgtest.Eventually(t, time.Minute, "a progress notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) > 0
	})
	mu.Lock()
	if p := progress[0].Params.AdditionalFields; p["progressToken"] != "retry-1" || fmt.Sprint(p["total"]) != "5" {
		t.Errorf("progress notification: %+v", progress[0].Params)
	}
	mu.Unlock()

	rep := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"queue": q, "error_class": "HTTPError", "limit": 3})
	if h, ok := findHint(rep.Next, "pgbus_dlq_retry"); rep.Retried != 3 || !rep.LimitReached || !ok || !strings.Contains(h.Why, "limit was reached") {
		t.Fatalf("retry by filter: %+v", rep)
	}
	rest := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"queue": q, "error_class": "HTTPError", "limit": 10})
	if _, ok := findHint(rest.Next, "pgbus_dlq_retry"); rest.Retried != 2 || rest.LimitReached || ok {
		t.Fatalf("retry the rest: %+v", rest)
	}
	if pgtest.Live(t, e.st, q) != 5 {
		t.Errorf("queue holds %d, want 5", pgtest.Live(t, e.st, q))
	}

	e.callErr(t, "pgbus_dlq_discard", map[string]any{"queue": q, "reason": store.ReasonNonRetryable}, "limit is required")
	e.callErr(t, "pgbus_dlq_discard", map[string]any{"queue": q, "reason": store.ReasonNonRetryable, "limit": 10}, `pgbus_dlq_discard {"confirm":true`)
	if pgtest.Live(t, e.st, q+"_dlq") != 2 {
		t.Fatal("a discard by filter without confirm moved messages")
	}
	d := callOK[ops.DLQDiscard](t, e, "pgbus_dlq_discard", map[string]any{"queue": q, "reason": store.ReasonNonRetryable, "limit": 10, "confirm": true})
	if _, ok := findHint(d.Next, "pgbus_dlq_summary"); d.Discarded != 2 || d.LimitReached || !ok {
		t.Fatalf("discard: %+v", d)
	}
	if pgtest.Live(t, e.st, q+"_dlq") != 0 || pgtest.Archived(t, e.st, q+"_dlq") != 2 {
		t.Error("discarded messages are not in the DLQ's archive")
	}
}

func TestDiscardByIDsAndPurge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 4, pgtest.DeadSpec{Kind: "charge", Reason: store.ReasonNonRetryable, Class: "ValidationError", Message: "bad input"})

	d := callOK[ops.DLQDiscard](t, e, "pgbus_dlq_discard", map[string]any{"ids": ids[:2]})
	if d.Discarded != 2 || len(d.Outcomes) != 2 || d.Outcomes[1].Outcome != ops.OutcomeDiscarded || d.Outcomes[1].DLQ != q+"_dlq" {
		t.Fatalf("discard: %+v", d)
	}
	// A discarded id is not_found the second time; the others are discarded.
	mixed := callOK[ops.DLQDiscard](t, e, "pgbus_dlq_discard", map[string]any{"ids": []int64{ids[0], ids[3]}, "queue": q})
	gone := outcomeOf(t, mixed.Outcomes, ids[0])
	if mixed.Discarded != 1 || mixed.NotFound != 1 || gone.Outcome != ops.OutcomeNotFound || !strings.Contains(gone.Error, "it was discarded at ") ||
		outcomeOf(t, mixed.Outcomes, ids[3]).Outcome != ops.OutcomeDiscarded {
		t.Fatalf("discard of a gone id and a dead one: %+v", mixed)
	}
	if _, ok := findHint(mixed.Next, "pgbus_dlq_list"); !ok {
		t.Errorf("discard with a gone id: next %+v", mixed.Next)
	}

	e.callErr(t, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s"}, "for good", "confirm", "dry_run", "pgbus_dlq_discarded")
	e.callErr(t, "pgbus_dlq_purge", map[string]any{"queue": q, "confirm": true}, "older_than is required")
	e.callErr(t, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "soon", "confirm": true}, "not an age")
	if pgtest.Archived(t, e.st, q+"_dlq") != 3 {
		t.Fatal("a refused purge deleted messages")
	}
	// A dry run needs no confirmation and deletes nothing.
	dry := callOK[ops.DLQPurge](t, e, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s", "dry_run": true})
	if !dry.DryRun || dry.Purged != 3 || pgtest.Archived(t, e.st, q+"_dlq") != 3 {
		t.Fatalf("purge dry run: %+v, %d archived left; want 3 counted and kept", dry, pgtest.Archived(t, e.st, q+"_dlq"))
	}
	kept := callOK[ops.DLQPurge](t, e, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "7d", "confirm": true})
	// The age comes back written as older_than takes it, as the audit
	// entry writes it, not as Go's 168h0m0s.
	if kept.Purged != 0 || kept.OlderThan != "7d" {
		t.Errorf("purge older than 7d: %+v; want 0 purged, older_than 7d", kept)
	}
	p := callOK[ops.DLQPurge](t, e, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s", "confirm": true})
	if p.Purged != 3 || p.Queue != q || pgtest.Archived(t, e.st, q+"_dlq") != 0 || pgtest.Live(t, e.st, q+"_dlq") != 1 {
		t.Fatalf("purge: %+v", p)
	}
	// The dry run and the two purges are audited; the refused calls,
	// rejected as invalid, are not.
	if rows := auditRows(t, e.st, "dlq_purge", q); len(rows) != 3 || rows[0].IsError || rows[1].IsError || rows[2].IsError {
		t.Errorf("want 3 audit rows of purges, got %+v", rows)
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	p := callOK[ops.QueuePaused](t, e, "pgbus_queue_pause", map[string]any{"queue": q})
	if !p.Paused || !p.Changed {
		t.Fatalf("pause: %+v", p)
	}
	again := callOK[ops.QueuePaused](t, e, "pgbus_queue_pause", map[string]any{"queue": q})
	if h, ok := findHint(again.Next, "pgbus_queue_resume"); again.Changed || !again.Paused || !ok || hintArg(h, "queue") != `"`+q+`"` {
		t.Errorf("pause again: %+v", again)
	}
	stats := callOK[ops.QueueStatsResult](t, e, "pgbus_queue_stats", map[string]any{"queue": q})
	if !stats.Queues[0].Paused {
		t.Error("stats do not show the queue paused")
	}
	// Health reports the paused queue, with the tool that resumes it.
	health := healthOK(t, e, nil)
	i := slices.IndexFunc(health.Reasons, func(r ops.HealthReason) bool { return r.Queue == q && r.Code == "queue_paused" })
	if i < 0 {
		t.Errorf("health does not report %s paused: %+v", q, health.Reasons)
	} else if h, ok := findHint(health.Reasons[i].Next, "pgbus_queue_resume"); !ok || hintArg(h, "queue") != `"`+q+`"` {
		t.Errorf("paused queue's next: %+v", health.Reasons[i].Next)
	}
	r := callOK[ops.QueuePaused](t, e, "pgbus_queue_resume", map[string]any{"queue": q})
	if _, ok := findHint(r.Next, "pgbus_queue_stats"); r.Paused || !r.Changed || !ok {
		t.Errorf("resume: %+v", r)
	}
	// No worker serves the queue: the result says so, and its first next
	// step is the command an operator runs to start one.
	if r.Workers == nil || r.Workers.Served() || r.Workers.Status != ops.CoverageNever || r.Next[0].Op != "cli" ||
		!strings.Contains(hintArg(r.Next[0], "command"), "pgbus work --queue "+q) {
		t.Errorf("resume into a queue no worker serves: %+v, workers %+v", r, r.Workers)
	}
	e.callErr(t, "pgbus_queue_pause", map[string]any{"queue": "nope_" + q}, "does not exist")
	e.callErr(t, "pgbus_queue_pause", map[string]any{}, "queue is required")
	rows := auditRows(t, e.st, "queue_pause", q)
	if len(rows) != 3 || !rows[0].IsError || rows[1].IsError {
		t.Errorf("pause audit rows: %+v", rows)
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{ReadOnly: true})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m"})
	// One in the archive, to restore; a breaker to reset and open: a
	// call on what is not there is refused as a writable server refuses
	// it.
	ctx := testContext(t)
	if n, err := e.st.DiscardDead(ctx, q+"_dlq", ids[1:]); err != nil || n != 1 {
		t.Fatalf("discard %d: %d, %v", ids[1], n, err)
	}
	ids = ids[:1]
	breaker := uniqueName("b")
	if err := e.st.EnsureBreaker(ctx, store.BreakerConfig{Name: breaker, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}

	list, err := e.c.ListTools(testContext(t), mcpListTools())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if !*tool.Annotations.ReadOnlyHint {
			t.Errorf("read-only server lists write tool %s", tool.Name)
		}
	}
	if len(names) != 10 {
		t.Errorf("read-only server lists %v", names)
	}
	// Called anyway, each write tool answers what to tell the user: the
	// command an operator can run.
	byIDs := map[string]any{"ids": ids, "queue": q}
	for name, args := range map[string]map[string]any{
		"pgbus_dlq_retry": byIDs, "pgbus_dlq_discard": byIDs, "pgbus_dlq_restore": {"ids": []int64{ids[0] + 1}, "queue": q},
		"pgbus_dlq_purge":   {"older_than": "0s", "confirm": true},
		"pgbus_queue_pause": {"queue": q}, "pgbus_queue_resume": {"queue": q}, "pgbus_queue_run_now": {"queue": q},
		"pgbus_circuit_reset": {"name": breaker}, "pgbus_circuit_open": {"name": breaker, "for": "1h"},
	} {
		command := strings.Replace("pgbus "+strings.ReplaceAll(strings.TrimPrefix(name, "pgbus_"), "_", " "), "run now", "run-now", 1)
		// Made read-only by the program that serves it, which need not be
		// pgbus serve: the refusal names no way it was started.
		if text := e.callErr(t, name, args, name+" is not available: this server is read-only, and nothing was changed", "an operator can run: "+command); strings.Contains(text, "pgbus serve") {
			t.Errorf("%s on a read-only server: %q names how the server was started", name, text)
		}
	}
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"ids": ids, "queue": q}, fmt.Sprintf("an operator can run: pgbus dlq retry %d --queue %s", ids[0], q))
	if pgtest.Live(t, e.st, q+"_dlq") != 1 || pgtest.Live(t, e.st, q) != 0 {
		t.Error("a read-only server changed the DLQ")
	}
	// The read tools still work.
	callOK[ops.DLQList](t, e, "pgbus_dlq_list", map[string]any{"queue": q})

	// Their next steps name no tool the server lacks: a write is a
	// command for an operator to run, where the full server names its tool.
	m := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "queue": q})
	full := callOK[ops.DeadMessage](t, newEnvOn(t, e.st, ops.Options{}), "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "queue": q})
	for label, c := range map[string]struct {
		next  []ops.Hint
		want  string
		wants string
	}{
		"read-only": {m.Next, "cli", "pgbus dlq retry"},
		"full":      {full.Next, "pgbus_dlq_retry", ""},
	} {
		found := false
		for _, h := range c.next {
			if h.Op == "pgbus_dlq_retry" && label == "read-only" {
				t.Errorf("the read-only server's next steps name pgbus_dlq_retry: %+v", c.next)
			}
			if h.Op == c.want && strings.Contains(fmt.Sprint(h.Args["command"]), c.wants) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s server: next steps %+v; want a retry as %s", label, c.next, c.want)
		}
	}
}

func TestPayloadGates(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	q := newQueue(t, st)
	payload := `{"user": "ann", "password": "hunter2", "card": {"number": "4111", "api_key": "k1", "cvv": 123},
		"items": [{"sku": "a", "Auth_Token": "zzz"}], "big": 12345678901234567890}`
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "signup", Class: "E", Message: "m", Payload: payload,
		Headers: `{"pgbus_kind": "signup", "Authorization": "Bearer abc", "x-trace": "t1"}`})

	cases := []struct {
		allow, include, shown bool
		note                  string
	}{
		{false, false, false, "does not show payloads"},
		{false, true, false, "does not show payloads"},
		{true, false, false, "ask for it with include_payload"},
		{true, true, true, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("allow=%v,include=%v", c.allow, c.include), func(t *testing.T) {
			e := newEnv(t, ops.Options{AllowPayloads: c.allow})
			out := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "include_payload": c.include})
			if strings.Contains(string(out.Headers), "Bearer") || !strings.Contains(string(out.Headers), "t1") {
				t.Errorf("headers not redacted: %s", out.Headers)
			}
			if out.PayloadShown != c.shown {
				t.Fatalf("payload_shown %v, want %v", out.PayloadShown, c.shown)
			}
			if !c.shown {
				if out.Payload != nil || out.PayloadPreview != "" || !hasNote(out.Notes, c.note) {
					t.Errorf("hidden payload: %+v", out)
				}
				return
			}
			var p map[string]any
			if err := json.Unmarshal(out.Payload, &p); err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{"hunter2", "4111", "k1", "zzz"} {
				if strings.Contains(string(out.Payload), secret) {
					t.Errorf("secret %q shown: %s", secret, out.Payload)
				}
			}
			// A card is hidden whole; values under other keys stay, at any
			// depth. Big integers stay exact in the text (the test client
			// decodes structured content into float64).
			text := resultText(e.call(t, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "include_payload": c.include}))
			if p["password"] != "[REDACTED]" || p["card"] != "[REDACTED]" || p["user"] != "ann" || !strings.Contains(text, "12345678901234567890") ||
				!strings.Contains(string(out.Payload), `[{"Auth_Token":"[REDACTED]","sku":"a"}]`) {
				t.Errorf("redacted payload: %s", out.Payload)
			}
			if out.RedactedValues != 4 {
				t.Errorf("redacted_values %d, want 4 (3 in the payload, 1 in the headers)", out.RedactedValues)
			}
		})
	}

	// Live messages follow the same gates.
	ctx := testContext(t)
	if _, err := st.Send(ctx, q, store.NewMessage{Payload: []byte(`{"secret": "s3", "x": 1}`)}); err != nil {
		t.Fatal(err)
	}
	hidden := callOK[ops.LiveMessages](t, newEnv(t, ops.Options{}), "pgbus_queue_messages", map[string]any{"queue": q, "include_payload": true})
	if len(hidden.Items) != 1 || hidden.Items[0].PayloadShown || !hasNote(hidden.Notes, "does not show payloads") {
		t.Errorf("live payload not hidden: %+v", hidden)
	}
	shown := callOK[ops.LiveMessages](t, newEnv(t, ops.Options{AllowPayloads: true}), "pgbus_queue_messages", map[string]any{"queue": q, "include_payload": true})
	if len(shown.Items) != 1 || string(shown.Items[0].Payload) != `{"secret":"[REDACTED]","x":1}` {
		t.Errorf("live payload: %+v", shown)
	}
}

func TestLargePayloadAndBacktrace(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	q := newQueue(t, st)
	big := `{"blob": "` + strings.Repeat("x", 70<<10) + `"}`
	var trace strings.Builder
	for i := range 40 {
		fmt.Fprintf(&trace, "goroutine frame %d: /src/app/handler.go:%d\n", i, i)
	}
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: strings.Repeat("e", 5000), Trace: trace.String(), Payload: big})
	e := newEnv(t, ops.Options{AllowPayloads: true})
	res := e.call(t, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "include_payload": true})
	if n := len([]rune(resultText(res))); n >= ops.ResponseBudget {
		t.Errorf("response is %d characters, want under %d", n, ops.ResponseBudget)
	}
	out := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "include_payload": true})
	if !out.PayloadShown || out.Payload != nil || len(out.PayloadPreview) == 0 || len(out.PayloadPreview) > ops.DefaultBounds.Payload || !hasNote(out.Notes, "payload truncated") {
		t.Errorf("large payload: shown %v, payload %d bytes, preview %d bytes, notes %v", out.PayloadShown, len(out.Payload), len(out.PayloadPreview), out.Notes)
	}
	h := out.History[0]
	if lines := strings.Count(h.Backtrace, "\n"); lines > 10 || len(h.Backtrace) > 2100 || len([]rune(h.ErrorMessage)) > 2000 {
		t.Errorf("history not shortened: %d lines, %d bytes of backtrace, %d of message", lines, len(h.Backtrace), len(h.ErrorMessage))
	}
	if !hasNote(out.Notes, "backtraces") {
		t.Errorf("no note about shortened backtraces: %v", out.Notes)
	}
}

// The small fields of a large payload reach an agent: the preview keeps
// the payload's structure and shortens the large value, marked.
func TestLargePayloadPreviewShowsSmallFields(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	q := newQueue(t, st)
	big := `{"blob": "` + strings.Repeat("x", 20<<10) + `", "order_id": 42, "tenant": "acme"}`
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Payload: big})
	out := callOK[ops.DeadMessage](t, newEnv(t, ops.Options{AllowPayloads: true}), "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "include_payload": true})
	var v struct {
		Blob    string `json:"blob"`
		OrderID int    `json:"order_id"`
		Tenant  string `json:"tenant"`
	}
	if err := json.Unmarshal([]byte(out.PayloadPreview), &v); err != nil || !out.PayloadPreviewJSON || !out.PayloadTruncated {
		t.Fatalf("preview JSON %v, truncated %v, %v: %.200s", out.PayloadPreviewJSON, out.PayloadTruncated, err, out.PayloadPreview)
	}
	if v.OrderID != 42 || v.Tenant != "acme" || !strings.HasSuffix(v.Blob, ops.ShortenedMark+"a string of 20480 bytes]") || !hasNote(out.Notes, "$.blob (a string of 20480 bytes)") {
		t.Errorf("order_id %d, tenant %q, blob ends %q, notes %v", v.OrderID, v.Tenant, v.Blob[max(0, len(v.Blob)-60):], out.Notes)
	}
}
