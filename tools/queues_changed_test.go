package tools_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A tool that reads every DLQ, whose every read found a DLQ dropped
// meanwhile, says that the queues changed during the read and to call it
// again, of kind unavailable: not a server-side problem to check the
// database for.
func TestToolReadingEveryDLQWhileQueuesChange(t *testing.T) {
	t.Parallel()
	const tries = 8 // the reads of every DLQ a call makes
	url, drops := pgtest.DroppedUnderDeadReads(t, tries)
	// Each read waits for a drop, which a busy machine may take seconds
	// to make: a call timeout as long as the call's context keeps the
	// default's 30s from cutting the call short before its last read.
	e := newEnvOn(t, pgtest.OpenStore(t, url), ops.Options{DatabaseCallTimeout: 2 * time.Minute})
	res := e.call(t, "pgbus_dlq_list", map[string]any{})
	text := resultText(res)
	if n := drops(); n != tries {
		t.Errorf("pgbus_dlq_list: %d DLQs dropped under its reads; want %d", n, tries)
	}
	if !res.IsError {
		t.Fatalf("pgbus_dlq_list under a drop at each read: %s; want a tool error", text)
	}
	for _, w := range []string{"the queues changed during the read (queues were created or dropped meanwhile)", "try again", "see pgbus_dlq_list"} {
		if !strings.Contains(text, w) {
			t.Errorf("pgbus_dlq_list under a drop at each read: %q does not say %q", text, w)
		}
	}
	if strings.Contains(text, "server-side problem") {
		t.Errorf("pgbus_dlq_list under a drop at each read: %q calls it a server-side problem", text)
	}
	m := metaOfResult(t, "pgbus_dlq_list", res)
	if m.Kind != ops.KindUnavailable {
		t.Errorf("pgbus_dlq_list under a drop at each read: kind %q; want %q", m.Kind, ops.KindUnavailable)
	}
	if len(m.Next) != 1 || m.Next[0].Tool != "pgbus_dlq_list" {
		t.Errorf("pgbus_dlq_list under a drop at each read: next %+v; want the same call again", m.Next)
	}
}
