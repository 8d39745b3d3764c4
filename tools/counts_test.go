package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A tool's words count one in the singular: the health of a queue with
// one message ready and no worker, and the refusal of a discard of up to
// one dead message that was not confirmed.
func TestToolWordsCountOneInTheSingular(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	if _, err := e.st.SendBatch(testContext(t), q, []store.NewMessage{{Payload: json.RawMessage(`{"n": 1}`)}}); err != nil {
		t.Fatal(err)
	}
	h := healthOK(t, e, map[string]any{})
	var msg string
	for _, r := range h.Reasons {
		if r.Code == "no_workers" && r.Queue == q {
			msg = r.Message
		}
	}
	if !strings.Contains(msg, ": 1 message ready, 0 waiting to retry;") {
		t.Errorf("pgbus_health with one message ready and no worker: reasons %+v; want 1 message ready", h.Reasons)
	}

	pgtest.DeadLetterN(t, e.st, q, 1, pgtest.DeadSpec{})
	e.callErr(t, "pgbus_dlq_discard", map[string]any{"queue": q, "limit": 1}, "moves up to 1 dead message out of its DLQ")
}
