package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// pgbus dlq summary --by error_class counts the dead messages of every
// DLQ by error class, a row a class with its reasons and queues, the
// largest first, names the summary of that class's groups next, prints
// the same classes as pgbus_dlq_summary with --json, and refuses a
// --cursor with it.
func TestDLQSummaryByErrorClass(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	pgtest.CreateQueue(t, s, "emails")
	pgtest.DeadLetterN(t, s, "orders", 3, pgtest.DeadSpec{Kind: "charge", Class: "net.Timeout", Message: "dial tcp: i/o timeout"})
	pgtest.DeadLetterN(t, s, "emails", 2, pgtest.DeadSpec{Kind: "mail", Class: "net.Timeout", Reason: store.ReasonNonRetryable, Message: "smtp"})
	pgtest.DeadLetterN(t, s, "emails", 1, pgtest.DeadSpec{Kind: "mail", Class: "smtp.Rejected", Message: "550"})

	out := d.ok(t, "dlq", "summary", "--by", "error_class")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "ERROR CLASS") {
		t.Fatalf("summary by error class:\n%s", out)
	}
	for i, want := range []string{"net.Timeout", "5", "max_retries_exceeded (3), non_retryable_error (2)", "orders_dlq (3), emails_dlq (2)"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("first row %q lacks %q (part %d)", lines[1], want, i)
		}
	}
	if !strings.HasPrefix(lines[2], "smtp.Rejected") || !strings.Contains(out, "6 dead messages in 2 error classes") {
		t.Errorf("summary by error class:\n%s", out)
	}
	if !strings.Contains(out, "pgbus dlq summary --error-class net.Timeout") {
		t.Errorf("no next step to the groups of net.Timeout:\n%s", out)
	}
	var sum ops.DLQSummary
	d.json(t, &sum, "dlq", "summary", "--by", "error_class")
	if len(sum.Classes) != 2 || sum.Classes[0].Count != 5 || len(sum.Classes[0].Queues) != 2 {
		t.Errorf("--json: %+v", sum.Classes)
	}
	if e := d.fails(t, 2, "dlq", "summary", "--by", "error_class", "--cursor", "x"); !strings.Contains(e, "--cursor") {
		t.Errorf("a cursor with --by error_class: %q, want --cursor named", e)
	}
}
