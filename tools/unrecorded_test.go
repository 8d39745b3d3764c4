package tools_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// pgbus_dlq_show states an attempt that left no outcome (a claim whose
// worker never ran the job) in its output: which attempts, and what that
// means, so that 3 attempts beside failures 2 and 3 alone explain
// themselves.
func TestDLQShowStatesAnAttemptThatLeftNoOutcome(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	_, id := pgtest.DeadAfterLostClaim(t, e.st, q)
	for _, full := range []bool{false, true} {
		out := callOK[map[string]any](t, e, "pgbus_dlq_show", map[string]any{"queue": q, "msg_id": id, "full_history": full})
		attempts, _ := out["unrecorded_attempts"].([]any)
		words, _ := out["unrecorded"].(string)
		if len(attempts) != 1 || attempts[0] != float64(1) || out["unrecorded_count"] != float64(1) ||
			!strings.HasPrefix(words, "attempt 1 left no outcome: its worker stopped or lost its connection") || !strings.HasSuffix(words, "it still counts toward max_retries") {
			t.Errorf("full_history %v: unrecorded_attempts %v, unrecorded_count %v, unrecorded %q; want attempt 1 said to have left no outcome",
				full, out["unrecorded_attempts"], out["unrecorded_count"], words)
		}
	}
}

// pgbus_dlq_list counts, for each message, the attempts that left no
// outcome.
func TestDLQListCountsAttemptsThatLeftNoOutcome(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	_, id := pgtest.DeadAfterLostClaim(t, e.st, q)
	out := callOK[map[string]any](t, e, "pgbus_dlq_list", map[string]any{"queue": q})
	items, _ := out["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("items %v; want message %d", out["items"], id)
	}
	if it, _ := items[0].(map[string]any); it["msg_id"] != float64(id) || it["unrecorded_count"] != float64(1) {
		t.Errorf("item %v; want message %d with unrecorded_count 1", it, id)
	}
}
