package ops_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A retry by filter writes its entry before its work and completes it at
// the end: the audit shows one entry, with its outcome, in the shape it
// always had. An entry written before its work that nothing completed (its
// process was killed partway) shows as not finished, its outcome unknown,
// with where to see what is there now.
func TestAuditUnfinishedEntries(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k", Class: "Down"})
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	ctx := ops.WithClient(testContext(t), client)

	out, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || out.Retried != 3 {
		t.Fatalf("retry by filter: %+v, %v", out, err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.audit_log WHERE client = $1 AND pending`, client); n != 1 {
		t.Fatalf("%d pending entries for the retry by filter, want the one written before its work", n)
	}
	page, err := svc.Audit(ctx, ops.AuditRequest{Client: client, Op: ops.AuditAll})
	if err != nil || len(page.Items) != 1 || page.Items[0].Unfinished || page.Items[0].IsError || len(page.Notes) != 0 || len(page.Next) != 0 {
		t.Fatalf("audit after a retry that finished: %+v, %v", page, err)
	}
	var res ops.DLQRetry
	if err := json.Unmarshal(page.Items[0].Result, &res); err != nil || res.Retried != 3 {
		t.Fatalf("result of the retry that finished: %s (%v)", page.Items[0].Result, err)
	}
	raw, _ := json.Marshal(page.Items[0])
	if strings.Contains(string(raw), "unfinished") {
		t.Fatalf("a finished entry names unfinished: %s", raw)
	}

	// The pending entry of a process killed partway.
	id, err := s.StartAudit(ctx, store.AuditEntry{Client: client, Transport: "cli", Tool: ops.OpDLQDiscard, Arguments: json.RawMessage(`{"filter":{"queue":"` + q + `"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	page, err = svc.Audit(ctx, ops.AuditRequest{Client: client, Op: ops.AuditAll})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("audit with an unfinished entry: %+v, %v", page, err)
	}
	e := page.Items[0]
	var result map[string]string
	if err := json.Unmarshal(e.Result, &result); err != nil || e.ID != id || !e.Unfinished || e.Op != ops.OpDLQDiscard ||
		result["outcome"] != "unknown" || !strings.Contains(result["not_finished"], "counts may be partial") {
		t.Fatalf("unfinished entry: %+v, result %s", e, e.Result)
	}
	if len(page.Notes) != 1 || !strings.Contains(page.Notes[0], "1 entry did not finish, outcome unknown") || !strings.Contains(page.Notes[0], "counts may be partial") ||
		len(page.Next) != 2 || page.Next[0].Op != ops.OpDLQSummary || page.Next[1].Op != ops.OpQueueStats {
		t.Fatalf("notes and next steps of a page with an unfinished entry: %q, %+v", page.Notes, page.Next)
	}
}
