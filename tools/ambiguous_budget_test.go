package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// Ids are per DLQ, so small ones are in every DLQ that had as many dead
// messages. A show, retry or discard of such ids without queue stays
// under the response budget however many DLQs hold them, and offers one
// call per DLQ, with the ids it holds, that does what it says.
func TestAmbiguousIDsStayUnderBudget(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	const many = 130
	names := make([]string, many)
	for i := range names {
		names[i] = fmt.Sprintf("customer_notification_webhooks_region_%03d", i)
		pgtest.CreateQueue(t, st, names[i])
		n := 1
		if i < 3 {
			n = 100 // ids 1 to 100 in three DLQs
		}
		pgtest.DeadLetterN(t, st, names[i], n, pgtest.DeadSpec{Kind: "notify", Message: "endpoint refused"})
	}
	e := newEnvOn(t, st, ops.Options{})
	size := func(tool string, args map[string]any) string {
		t.Helper()
		text := resultText(e.call(t, tool, args))
		if len(text) > responseLimit {
			t.Errorf("%s %v: %d characters, over %d: %.200s", tool, args, len(text), responseLimit, text)
		}
		return text
	}
	size("pgbus_dlq_show", map[string]any{"msg_id": 1})

	ids := make([]int64, 100)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	retry := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"ids": ids, "dry_run": true})
	size("pgbus_dlq_retry", map[string]any{"ids": ids, "dry_run": true})
	size("pgbus_dlq_discard", map[string]any{"ids": ids, "dry_run": true})
	if retry.Ambiguous != 100 {
		t.Fatalf("retry: %d ambiguous, want 100", retry.Ambiguous)
	}
	var calls int
	for _, h := range retry.Next {
		if h.Op != "pgbus_dlq_retry" {
			continue
		}
		calls++
		out := callOK[ops.DLQRetry](t, e, h.Op, h.Args)
		q, _ := h.Args["queue"].(string)
		n := len(h.Args["ids"].([]any))
		if out.Retried != n || out.Ambiguous != 0 || len(out.Outcomes) == 0 || out.Outcomes[0].DLQ != q {
			t.Errorf("hint %v (%s) would retry %d of its %d ids: %+v", h.Args, h.Why, out.Retried, n, out.Outcomes[:min(len(out.Outcomes), 2)])
		}
	}
	if calls == 0 || calls > 10 {
		t.Errorf("%d retry hints, want one per DLQ holding the ids, at most 10: %+v", calls, retry.Next)
	}

	// Rows another client wrote (no dead-letter block, so no source queue
	// in their group's key) share one group key across every DLQ: a move
	// by that key alone is refused under the budget, naming ten DLQs and
	// where to see the others.
	for _, q := range names {
		if _, err := st.Pool().Exec(testContext(t), `INSERT INTO pgmq."q_`+q+`_dlq" (vt, message) VALUES (clock_timestamp(), '{"job_class": "RubyJob"}')`); err != nil {
			t.Fatal(err)
		}
	}
	sum := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{"kind": "RubyJob"})
	if len(sum.Groups) == 0 || sum.TotalGroups != many {
		t.Fatalf("summary of the raw rows: %d groups listed of %d; want one per DLQ, %d", len(sum.Groups), sum.TotalGroups, many)
	}
	for _, tool := range []string{"pgbus_dlq_retry", "pgbus_dlq_discard"} {
		args := map[string]any{"group": sum.Groups[0].Group, "limit": 10, "dry_run": true}
		text := e.callErr(t, tool, args, fmt.Sprintf("in each of %d DLQs", many), fmt.Sprintf("and %d more", many-10), "pgbus_dlq_summary")
		if n := len(text); n > responseLimit {
			t.Errorf("%s %v: an error of %d characters, over %d: %.200s", tool, args, n, responseLimit, text)
		}
		if n := strings.Count(text, "pgbus_dlq_list"); n != 10 {
			t.Errorf("%s %v: %d lists offered, want 10: %.300s", tool, args, n, text)
		}
	}
}
