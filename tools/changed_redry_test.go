package tools_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A guarded retry refused because its selection changed names, in its
// _meta, the dry run of the same call with every argument that shapes it:
// an agent following it keeps clearing deadlines and its pace.
func TestChangedRetryRedoKeepsPaceAndDeadlines(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	pgtest.DeadLetterN(t, e.st, q, 3, pgtest.DeadSpec{Kind: "charge", Class: "E", Message: "m"})
	call := map[string]any{"queue": q + "_dlq", "kind": "charge", "clear_deadline": true, "rate": 2}
	dry := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", with(with(call, "limit", 1), "dry_run", true))
	if dry.Expect == "" {
		t.Fatalf("the dry run gives no expect: %+v", dry)
	}
	m := e.metaOf(t, "pgbus_dlq_retry", with(with(call, "limit", 2), "expect", dry.Expect))
	want := with(with(call, "limit", 2), "dry_run", true)
	if m.Kind != ops.KindChanged || !hasCall(m.Next, "pgbus_dlq_retry", want) {
		t.Fatalf("a retry whose selection changed: %+v, want kind changed and pgbus_dlq_retry %v next", m, want)
	}
}
