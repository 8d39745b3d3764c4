package tools_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tools"
)

// auditRows returns the audit entries of tool whose arguments mention
// marker, newest first.
func auditRows(t testing.TB, s *store.Store, tool, marker string) []store.AuditEntry {
	t.Helper()
	rows, err := s.Pool().Query(testContext(t), `SELECT id, at, client, tool, arguments, result, is_error FROM pgbus.audit_log
		WHERE tool = $1 AND arguments::text LIKE '%' || $2 || '%' ORDER BY id DESC`, tool, marker)
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
	e := newEnv(t, tools.Deps{})
	q := newQueue(t, e.st)
	ids := deadLetter(t, e.st, q, 3, deadSpec{kind: "webhook", class: "HTTPError", message: "http 503"})

	dry := callOK[tools.DLQRetryOutput](t, e, "pgbus_dlq_retry", map[string]any{"ids": ids[:2], "dry_run": true, "payload": nil})
	if !dry.DryRun || dry.Retried != 2 || len(dry.Moved) != 2 || dry.Moved[0].Queue != q || !strings.Contains(dry.Next, "without dry_run") {
		t.Fatalf("dry run: %+v", dry)
	}
	if live(t, e.st, q) != 0 || live(t, e.st, q+"_dlq") != 3 {
		t.Fatal("a dry run moved messages")
	}

	rep := callOK[tools.DLQRetryOutput](t, e, "pgbus_dlq_retry", map[string]any{"ids": ids[:2], "queue": q})
	if rep.Retried != 2 || rep.Failed != 0 || rep.Moved[0].MsgID == 0 {
		t.Fatalf("retry: %+v", rep)
	}
	if live(t, e.st, q) != 2 || live(t, e.st, q+"_dlq") != 1 {
		t.Fatal("retried messages did not move back")
	}
	// Retrying an id that is gone is a clear error, not a duplicate.
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"ids": ids[:1]}, "no DLQ holds message", "pgbus_dlq_list")
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"ids": ids[:1], "queue": q}, "retried or discarded already")

	// A corrected payload: one id only; the original is kept in the archive.
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"ids": []int64{ids[2], ids[1]}, "payload": map[string]any{"n": 1}}, "exactly one message")
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"queue": q, "limit": 5, "payload": map[string]any{"n": 1}}, "exactly one message")
	fixed := callOK[tools.DLQRetryOutput](t, e, "pgbus_dlq_retry", map[string]any{"ids": []int64{ids[2]}, "payload": map[string]any{"n": 2, "fixed": true}})
	if fixed.Retried != 1 {
		t.Fatalf("retry with payload: %+v", fixed)
	}
	if n := count(t, e.st, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE msg_id = $1 AND message = '{"n": 2, "fixed": true}'::jsonb`, fixed.Moved[0].MsgID); n != 1 {
		t.Error("the corrected payload is not in the queue")
	}
	if archived(t, e.st, q+"_dlq") != 1 {
		t.Error("the original of a corrected message is not in the DLQ's archive")
	}

	audit := auditRows(t, e.st, "pgbus_dlq_retry", fmt.Sprint(ids[2]))
	if len(audit) < 2 {
		t.Fatalf("audit rows: %+v", audit)
	}
	var result struct {
		Retried int `json:"retried"`
	}
	_ = json.Unmarshal(audit[0].Result, &result)
	if audit[0].IsError || audit[0].Client != "tools-test/1.0" || result.Retried != 1 || !strings.Contains(string(audit[0].Arguments), "fixed") {
		t.Errorf("audit of the corrected retry: %+v", audit[0])
	}
	if !audit[1].IsError || !strings.Contains(string(audit[1].Result), "exactly one message") {
		t.Errorf("audit of the refused retry: %+v", audit[1])
	}

	// The audit tool lists them.
	page := callOK[tools.AuditOutput](t, e, "pgbus_audit", map[string]any{"tool": "pgbus_dlq_retry", "limit": 100})
	if len(page.Items) < 2 || page.Items[0].Tool != "pgbus_dlq_retry" {
		t.Errorf("pgbus_audit: %+v", page)
	}
}

func TestRetryAndDiscardByFilter(t *testing.T) {
	e := newEnv(t, tools.Deps{})
	q := newQueue(t, e.st)
	deadLetter(t, e.st, q, 5, deadSpec{kind: "webhook", class: "HTTPError", message: "http 503"})
	deadLetter(t, e.st, q, 2, deadSpec{kind: "charge", reason: store.ReasonNonRetryable, class: "ValidationError", message: "bad input"})

	e.callErr(t, "pgbus_dlq_retry", map[string]any{"queue": q, "error_class": "HTTPError"}, "limit is required")
	e.callErr(t, "pgbus_dlq_retry", map[string]any{}, "pass ids, or filters")
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"limit": 5}, "pass ids, or filters")
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"ids": []int64{1}, "kind": "x"}, "not both")
	e.callErr(t, "pgbus_dlq_retry", map[string]any{"ids": []int64{1}, "queue": q, "limit": 3}, "drop limit")
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no progress notification")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if p := progress[0].Params.AdditionalFields; p["progressToken"] != "retry-1" || fmt.Sprint(p["total"]) != "5" {
		t.Errorf("progress notification: %+v", progress[0].Params)
	}
	mu.Unlock()

	rep := callOK[tools.DLQRetryOutput](t, e, "pgbus_dlq_retry", map[string]any{"queue": q, "error_class": "HTTPError", "limit": 3})
	if rep.Retried != 3 || !strings.Contains(rep.Next, "limit was reached") {
		t.Fatalf("retry by filter: %+v", rep)
	}
	rest := callOK[tools.DLQRetryOutput](t, e, "pgbus_dlq_retry", map[string]any{"queue": q, "error_class": "HTTPError", "limit": 10})
	if rest.Retried != 2 || strings.Contains(rest.Next, "limit was reached") {
		t.Fatalf("retry the rest: %+v", rest)
	}
	if live(t, e.st, q) != 5 {
		t.Errorf("queue holds %d, want 5", live(t, e.st, q))
	}

	e.callErr(t, "pgbus_dlq_discard", map[string]any{"queue": q, "reason": store.ReasonNonRetryable}, "limit is required")
	d := callOK[tools.DLQDiscardOutput](t, e, "pgbus_dlq_discard", map[string]any{"queue": q, "reason": store.ReasonNonRetryable, "limit": 10})
	if d.Discarded != 2 || !strings.Contains(d.Next, "pgbus_dlq_purge") {
		t.Fatalf("discard: %+v", d)
	}
	if live(t, e.st, q+"_dlq") != 0 || archived(t, e.st, q+"_dlq") != 2 {
		t.Error("discarded messages are not in the DLQ's archive")
	}
}

func TestDiscardByIDsAndPurge(t *testing.T) {
	e := newEnv(t, tools.Deps{})
	q := newQueue(t, e.st)
	ids := deadLetter(t, e.st, q, 3, deadSpec{kind: "charge", reason: store.ReasonNonRetryable, class: "ValidationError", message: "bad input"})

	d := callOK[tools.DLQDiscardOutput](t, e, "pgbus_dlq_discard", map[string]any{"ids": ids[:2]})
	if d.Discarded != 2 {
		t.Fatalf("discard: %+v", d)
	}
	e.callErr(t, "pgbus_dlq_discard", map[string]any{"ids": ids[:1], "queue": q}, "retried or discarded already")

	e.callErr(t, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s"}, "confirm: true", "pgbus_dlq_list")
	e.callErr(t, "pgbus_dlq_purge", map[string]any{"queue": q, "confirm": true}, "older_than is required")
	e.callErr(t, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "soon", "confirm": true}, "not an age")
	if archived(t, e.st, q+"_dlq") != 2 {
		t.Fatal("a refused purge deleted messages")
	}
	kept := callOK[tools.DLQPurgeOutput](t, e, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "7d", "confirm": true})
	if kept.Purged != 0 {
		t.Errorf("purge older than 7d: %+v", kept)
	}
	p := callOK[tools.DLQPurgeOutput](t, e, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s", "confirm": true})
	if p.Purged != 2 || archived(t, e.st, q+"_dlq") != 0 || live(t, e.st, q+"_dlq") != 1 {
		t.Fatalf("purge: %+v", p)
	}
	if rows := auditRows(t, e.st, "pgbus_dlq_purge", q); len(rows) != 5 {
		t.Errorf("want 5 audit rows of purge calls, got %d", len(rows))
	}
}

func TestPauseResume(t *testing.T) {
	e := newEnv(t, tools.Deps{})
	q := newQueue(t, e.st)
	p := callOK[tools.QueuePauseOutput](t, e, "pgbus_queue_pause", map[string]any{"queue": q})
	if !p.Paused || !p.Changed {
		t.Fatalf("pause: %+v", p)
	}
	again := callOK[tools.QueuePauseOutput](t, e, "pgbus_queue_pause", map[string]any{"queue": q})
	if again.Changed || !strings.Contains(again.Next, "already paused") {
		t.Errorf("pause again: %+v", again)
	}
	stats := callOK[tools.QueueStatsOutput](t, e, "pgbus_queue_stats", map[string]any{"queue": q})
	if !stats.Queues[0].Paused {
		t.Error("stats do not show the queue paused")
	}
	r := callOK[tools.QueuePauseOutput](t, e, "pgbus_queue_resume", map[string]any{"queue": q})
	if r.Paused || !r.Changed {
		t.Errorf("resume: %+v", r)
	}
	e.callErr(t, "pgbus_queue_pause", map[string]any{"queue": "nope_" + q}, "does not exist")
	e.callErr(t, "pgbus_queue_pause", map[string]any{}, "queue is required")
	rows := auditRows(t, e.st, "pgbus_queue_pause", q)
	if len(rows) != 3 || !rows[0].IsError || rows[1].IsError {
		t.Errorf("pause audit rows: %+v", rows)
	}
}

func TestReadOnly(t *testing.T) {
	e := newEnv(t, tools.Deps{ReadOnly: true})
	q := newQueue(t, e.st)
	ids := deadLetter(t, e.st, q, 1, deadSpec{kind: "k", class: "E", message: "m"})

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
	if len(names) != 9 {
		t.Errorf("read-only server lists %v", names)
	}
	for _, name := range []string{"pgbus_dlq_retry", "pgbus_dlq_discard", "pgbus_dlq_purge", "pgbus_queue_pause", "pgbus_queue_resume", "pgbus_circuit_reset"} {
		req := mcpCall(name, map[string]any{"ids": ids, "queue": q, "older_than": "0s", "confirm": true})
		res, err := e.c.CallTool(testContext(t), req)
		if err == nil && (res == nil || !res.IsError) {
			t.Errorf("%s is callable on a read-only server", name)
		}
		if err != nil && !strings.Contains(err.Error(), "not found") {
			t.Errorf("%s on a read-only server: %v", name, err)
		}
	}
	if live(t, e.st, q+"_dlq") != 1 || live(t, e.st, q) != 0 {
		t.Error("a read-only server changed the DLQ")
	}
	// The read tools still work.
	callOK[tools.DLQListOutput](t, e, "pgbus_dlq_list", map[string]any{"queue": q})
}

func TestPayloadGates(t *testing.T) {
	st := testStore(t)
	q := newQueue(t, st)
	payload := `{"user": "ann", "password": "hunter2", "card": {"number": "4111", "api_key": "k1", "cvv": 123},
		"items": [{"sku": "a", "Auth_Token": "zzz"}], "big": 12345678901234567890}`
	ids := deadLetter(t, st, q, 1, deadSpec{kind: "signup", class: "E", message: "m", payload: payload,
		headers: `{"pgbus_kind": "signup", "Authorization": "Bearer abc", "x-trace": "t1"}`})

	cases := []struct {
		allow, include, shown bool
		note                  string
	}{
		{false, false, false, "--allow-payloads"},
		{false, true, false, "--allow-payloads"},
		{true, false, false, "include_payload: true"},
		{true, true, true, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("allow=%v,include=%v", c.allow, c.include), func(t *testing.T) {
			e := newEnv(t, tools.Deps{AllowPayloads: c.allow})
			out := callOK[tools.DLQShowOutput](t, e, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "include_payload": c.include})
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
			for _, secret := range []string{"hunter2", "k1", "zzz"} {
				if strings.Contains(string(out.Payload), secret) {
					t.Errorf("secret %q shown: %s", secret, out.Payload)
				}
			}
			// Big integers stay exact in the text (the test client decodes
			// structured content into float64).
			text := resultText(e.call(t, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "include_payload": c.include}))
			if p["password"] != "[REDACTED]" || p["user"] != "ann" || !strings.Contains(text, "12345678901234567890") ||
				!strings.Contains(string(out.Payload), `"cvv":123`) {
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
	hidden := callOK[tools.QueueMessagesOutput](t, newEnv(t, tools.Deps{}), "pgbus_queue_messages", map[string]any{"queue": q, "include_payload": true})
	if len(hidden.Items) != 1 || hidden.Items[0].PayloadShown || !hasNote(hidden.Notes, "--allow-payloads") {
		t.Errorf("live payload not hidden: %+v", hidden)
	}
	shown := callOK[tools.QueueMessagesOutput](t, newEnv(t, tools.Deps{AllowPayloads: true}), "pgbus_queue_messages", map[string]any{"queue": q, "include_payload": true})
	if len(shown.Items) != 1 || string(shown.Items[0].Payload) != `{"secret":"[REDACTED]","x":1}` {
		t.Errorf("live payload: %+v", shown)
	}
}

func TestLargePayloadAndBacktrace(t *testing.T) {
	st := testStore(t)
	q := newQueue(t, st)
	big := `{"blob": "` + strings.Repeat("x", 70<<10) + `"}`
	var trace strings.Builder
	for i := range 40 {
		fmt.Fprintf(&trace, "goroutine frame %d: /src/app/handler.go:%d\n", i, i)
	}
	ids := deadLetter(t, st, q, 1, deadSpec{kind: "k", class: "E", message: strings.Repeat("e", 5000), trace: trace.String(), payload: big})
	e := newEnv(t, tools.Deps{AllowPayloads: true})
	res := e.call(t, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "include_payload": true})
	if len(resultText(res)) > 40<<10 {
		t.Errorf("response is %d bytes", len(resultText(res)))
	}
	out := callOK[tools.DLQShowOutput](t, e, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "include_payload": true})
	if !out.PayloadShown || out.Payload != nil || len(out.PayloadPreview) != 16<<10 || !hasNote(out.Notes, "pgbus dlq show") {
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
