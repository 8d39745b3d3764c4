package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// pgbus_dlq_retry by filter into seven queues names a step to watch each
// of the first five, as tool calls, and the other two by name in a step
// that lists every queue.
func TestRetryIntoManyQueuesNamesEach(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	kind := uniqueName("spread")
	var queues []string
	for range 7 {
		q := newQueue(t, e.st)
		queues = append(queues, q)
		pgtest.DeadLetter(t, e.st, q, pgtest.DeadSpec{Kind: kind})
	}
	r := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"kind": kind, "limit": 100})
	watched := map[string]bool{}
	var rest string
	for _, h := range r.Next {
		switch h.Op {
		case "pgbus_queue_messages":
			watched[fmt.Sprint(h.Args["queue"])] = true
		case "pgbus_queue_stats":
			rest = h.Why
		}
	}
	for _, q := range queues {
		if watched[q] == strings.Contains(rest, q) {
			t.Errorf("queue %s: watched %v, named among the others %v; want exactly one (next %+v)", q, watched[q], strings.Contains(rest, q), r.Next)
		}
	}
	if len(watched) != 5 {
		t.Errorf("%d queues watched, want 5", len(watched))
	}
}
