package tools_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// pgbus_dlq_retry with a rate makes the messages visible one after
// another and says when the last one is; a rate below one a minute, of
// the wrong type or above the schema's maximum is a tool error, and
// nothing moves.
func TestDLQRetryAtARate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	pgtest.DeadLetterN(t, e.st, q, 3, pgtest.DeadSpec{})
	for _, bad := range []struct {
		rate any
		want string
	}{{0.001, "one a minute"}, {"fast", "rate"}, {1e9, "rate"}, {-2, "rate"}, {0, "rate"}, {0.0, "rate"}} {
		e.callErr(t, "pgbus_dlq_retry", map[string]any{"queue": q, "limit": 10, "rate": bad.rate}, bad.want)
	}
	if n := pgtest.Live(t, e.st, q+"_dlq"); n != 3 {
		t.Fatalf("%d messages left in the DLQ after refused calls, want 3", n)
	}
	out := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"queue": q, "limit": 10, "rate": 0.5})
	if out.Retried != 3 || out.VisibleUntil == nil {
		t.Fatalf("retry at 0.5 a second = %+v; want 3 retried and visible_until", out)
	}
	var first, last time.Time
	if err := e.st.Pool().QueryRow(testContext(t), `SELECT min(vt), max(vt) FROM pgmq."q_`+q+`"`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	if last.Sub(first) != 4*time.Second || !out.VisibleUntil.Equal(last) {
		t.Fatalf("visible from %s to %s, visible_until %s; want 4s between the first and the last, the last reported", first, last, out.VisibleUntil)
	}
}
