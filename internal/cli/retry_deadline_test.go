package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// pgbus dlq retry leaves a message whose deadline has passed in its DLQ,
// saying why and naming --clear-deadline; with it, the message goes back
// without its deadline, so that it runs.
func TestRetryPastTheDeadlineFromTheCLI(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	st := pgtest.OpenStore(t, d.url)
	ids := pgtest.DeadLetter(t, st, "orders", pgtest.DeadSpec{Kind: "charge", Reason: store.ReasonDeadlineExceeded,
		Headers: `{"pgbus_kind": "charge", "pgbus_deadline": "2020-01-01T00:00:00Z"}`})
	id := fmt.Sprint(ids[0])
	if out := d.ok(t, "dlq", "show", id, "--queue", "orders"); !strings.Contains(out, "deadline:") || !strings.Contains(out, "2020-01-01") || !strings.Contains(out, "--clear-deadline") {
		t.Errorf("dlq show of a message past its deadline does not say so:\n%s", out)
	}
	r := pgbus(t, d.env, "dlq", "retry", id, "--queue", "orders")
	if r.code != 1 || !strings.Contains(r.stderr, "deadline") {
		t.Fatalf("retry past the deadline: exit %d, stderr %q; want 1, saying why", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "pgbus dlq retry "+id+" --clear-deadline --queue orders") {
		t.Errorf("retry past the deadline: stdout %q; want the command that clears it", r.stdout)
	}
	d.ok(t, "dlq", "retry", id, "--queue", "orders", "--clear-deadline")
	var n int
	var headers string
	d.query(t, `SELECT count(*), coalesce(max(headers::text), '') FROM pgmq.q_orders`, &n, &headers)
	if n != 1 || strings.Contains(headers, "pgbus_deadline") || !strings.Contains(headers, "charge") {
		t.Fatalf("orders after the retry: %d messages, headers %s; want one, without its deadline", n, headers)
	}
}
