package tools_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// responseLimit is the most characters a tool's answer (the JSON text of
// its result) may have, whatever the arguments: an agent reads every
// character of it.
const responseLimit = 16_000

// bigDLQ fills a queue's DLQ with 10,000 dead messages: 9,900 written in
// bulk (the store's bench loader, so the test stays fast), then the
// newest 100 with 20 KB payloads, 3 KB headers, 4,000-character errors,
// long backtraces and a history of 30 failures, identical ones in runs;
// and 40 live messages like them in retrying state. It returns the queue
// and the newest dead message's id.
func bigDLQ(t *testing.T, st *store.Store) (string, int64) {
	t.Helper()
	ctx := testContext(t)
	q := newQueue(t, st)
	longErr := "upstream refused the request: " + strings.Repeat("connection reset by peer while writing the body; ", 80)
	trace := strings.Repeat("github.com/acme/orders/internal/charge.(*Client).Do(0xc000123456)\n\t/src/charge/client.go:123 +0x1f\n", 15)
	if err := st.BulkLoadDead(ctx, q, 9_900, 50); err != nil {
		t.Fatal(err)
	}

	large := fmt.Sprintf(`{"order_id": "ord-2", "lines": %q}`, strings.Repeat("y", 20_000))
	msgs := make([]store.NewMessage, 140)
	for i := range msgs {
		msgs[i] = store.NewMessage{Payload: json.RawMessage(large), Headers: json.RawMessage(`{"pgbus_kind": "charge", "note": "` + strings.Repeat("h", 3000) + `"}`)}
	}
	ids, err := st.SendBatch(ctx, q, msgs)
	if err != nil {
		t.Fatal(err)
	}
	// 30 failures each: identical ones in runs, and some that differ.
	for attempt := 1; attempt <= 30; attempt++ {
		msg := longErr
		if attempt%10 == 0 {
			msg = fmt.Sprintf("attempt %d: %s", attempt, longErr)
		}
		items := make([]store.RetryItem, len(ids))
		for i, id := range ids {
			items[i] = store.RetryItem{MsgID: id, Failure: store.Failure{Attempt: attempt, Kind: "charge", ErrorClass: "net.OpError", ErrorMessage: msg, Backtrace: trace,
				Detail: store.FailureDetail{ElapsedMS: 1200, Output: strings.Repeat("stderr line\n", 100)}}}
		}
		if _, err := st.RetryMany(ctx, q, items); err != nil {
			t.Fatal(err)
		}
	}
	dead := make([]store.DeadLetterItem, 100)
	for i := range dead {
		dead[i] = store.DeadLetterItem{MsgID: ids[i], Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 30,
			Failure: &store.Failure{Attempt: 31, Kind: "charge", ErrorClass: "net.OpError", ErrorMessage: longErr, Backtrace: trace}}
	}
	moved, err := st.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, dead)
	if err != nil || len(moved) != 100 {
		t.Fatalf("dead-letter the large messages: %d moved, %v", len(moved), err)
	}
	return q, moved[len(moved)-1].DLQMsgID
}

// TestResponsesStayUnderBudget calls every tool with its default arguments
// and with its largest allowed ones on a DLQ of 10,000 messages with long
// errors and large payloads, payloads allowed and asked for, and checks
// every answer is under responseLimit characters.
func TestResponsesStayUnderBudget(t *testing.T) {
	e := newEnv(t, ops.Options{AllowPayloads: true})
	start := time.Now()
	q, newest := bigDLQ(t, e.st)
	t.Logf("fixture: %v", time.Since(start))
	all := make([]int64, 100)
	for i := range all {
		all[i] = newest - int64(i)
	}
	// Audit entries with long arguments and results, so that its largest
	// page is large.
	for range 30 {
		callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"queue": q, "ids": all, "dry_run": true})
		callOK[ops.QueuePaused](t, e, "pgbus_queue_pause", map[string]any{"queue": q})
	}
	t.Logf("audit entries: %v", time.Since(start))
	cases := []struct {
		tool string
		args map[string]any
	}{
		{"pgbus_health", nil},
		{"pgbus_queue_stats", nil},
		{"pgbus_queue_stats", map[string]any{"queue": q}},
		{"pgbus_dlq_summary", nil},
		{"pgbus_dlq_summary", map[string]any{"queue": q}},
		{"pgbus_dlq_list", nil},
		{"pgbus_dlq_list", map[string]any{"queue": q, "limit": 100}},
		{"pgbus_dlq_show", map[string]any{"msg_id": newest}},
		{"pgbus_dlq_show", map[string]any{"queue": q, "msg_id": newest, "include_payload": true}},
		{"pgbus_dlq_show", map[string]any{"queue": q, "msg_id": newest, "include_payload": true, "full_history": true}},
		{"pgbus_queue_messages", map[string]any{"queue": q}},
		{"pgbus_queue_messages", map[string]any{"queue": q, "limit": 100, "include_payload": true}},
		{"pgbus_queue_messages", map[string]any{"queue": q, "limit": 100, "include_payload": true, "full_history": true}},
		{"pgbus_workers", nil},
		{"pgbus_circuits", nil},
		{"pgbus_audit", nil},
		{"pgbus_audit", map[string]any{"limit": 100}},
		{"pgbus_audit", map[string]any{"limit": 100, "tool": "all", "since": "1h"}},
		{"pgbus_dlq_retry", map[string]any{"queue": q, "limit": 1000, "dry_run": true}},
		{"pgbus_dlq_retry", map[string]any{"queue": q, "ids": all, "dry_run": true}},
		{"pgbus_dlq_discard", map[string]any{"queue": q, "limit": 1000, "dry_run": true}},
		{"pgbus_dlq_discard", map[string]any{"queue": q, "ids": all, "dry_run": true}},
		{"pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "1h", "confirm": true}},
		{"pgbus_queue_resume", map[string]any{"queue": q}},
		{"pgbus_queue_pause", map[string]any{"queue": q}},
		{"pgbus_circuit_reset", map[string]any{"name": "budget-test-breaker"}},
	}
	for _, c := range cases {
		res := e.call(t, c.tool, c.args)
		text := resultText(res)
		n := utf8.RuneCountInString(text)
		t.Logf("%s %v: %d characters (%v)", c.tool, c.args, n, time.Since(start))
		if res.IsError && !strings.Contains(text, "breaker") {
			t.Errorf("%s(%v): tool error: %s", c.tool, c.args, text)
		}
		if n >= responseLimit {
			t.Errorf("%s(%v): %d characters, want under %d", c.tool, c.args, n, responseLimit)
		}
	}
}

// descriptionsLimit bounds the characters of the tools' descriptions in
// tools/list, every tool's: a client sends them to its model before the
// first call, so they cost every session. (The schemas, output schemas
// above all, are most of tools/list; they are checked by TestSchemas.)
const descriptionsLimit = 12_000

// TestToolDescriptionsAreTight checks that the descriptions of all tools,
// the write tools included, stay under descriptionsLimit characters.
func TestToolDescriptionsAreTight(t *testing.T) {
	e := newEnv(t, ops.Options{})
	res, err := e.c.ListTools(testContext(t), mcpListTools())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tool := range res.Tools {
		n += utf8.RuneCountInString(tool.Description)
	}
	whole, _ := json.Marshal(res)
	t.Logf("tools/list: %d tools, descriptions %d characters, all %d", len(res.Tools), n, utf8.RuneCount(whole))
	if len(res.Tools) < 15 || n >= descriptionsLimit {
		t.Errorf("tools/list: %d tools with %d characters of descriptions, want all 15 under %d", len(res.Tools), n, descriptionsLimit)
	}
}
