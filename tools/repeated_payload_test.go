package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// The real call a dry run with a corrected payload names, followed as its
// arguments are, never retries the payload that failed: a payload holding
// a secret comes back redacted and one too large to repeat as a stand-in,
// each refused by the retry, with a why that says to pass it again; a
// small one without secrets comes back whole and retries with it.
func TestDryRunHintWithCorrectedPayloadIsSafeToFollow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{AllowPayloads: true})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetter(t, e.st, q, pgtest.DeadSpec{Payload: `{"order_id": 1}`}, pgtest.DeadSpec{Payload: `{"order_id": 2}`}, pgtest.DeadSpec{Payload: `{"order_id": 3}`})
	for _, c := range []struct {
		id      int64
		payload map[string]any
		why     string
	}{
		{ids[0], map[string]any{"order_id": 1, "password": "hunter3"}, "put the real one back"},
		{ids[1], map[string]any{"order_id": 2, "blob": strings.Repeat("a", 4096)}, "pass the corrected payload again"},
	} {
		dry := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"ids": []int64{c.id}, "queue": q, "payload": c.payload, "dry_run": true})
		h, ok := findHint(dry.Next, "pgbus_dlq_retry")
		if !ok || !strings.Contains(h.Why, c.why) || strings.Contains(fmt.Sprint(h), "hunter3") {
			t.Fatalf("dry run next %+v; want a retry saying %q, without the secret", dry.Next, c.why)
		}
		if _, ok := h.Args["payload"]; !ok {
			t.Fatalf("the hint %+v has no payload: followed, it retries the payload that failed", h)
		}
		e.callErr(t, "pgbus_dlq_retry", h.Args, "corrected payload still holds")
	}
	if n := pgtest.Live(t, e.st, q+"_dlq"); n != 3 {
		t.Fatalf("the DLQ holds %d after following the hints, want 3", n)
	}
	dry := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"ids": ids[2:], "queue": q, "payload": map[string]any{"order_id": 33}, "dry_run": true})
	h, _ := findHint(dry.Next, "pgbus_dlq_retry")
	if r := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", h.Args); r.Retried != 1 {
		t.Fatalf("the hint %+v followed: %+v; want it retried", h, r)
	}
	if n := pgtest.Live(t, e.st, q); n != 1 {
		t.Fatalf("the queue holds %d, want the one retried", n)
	}
}
