package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// pgbus dlq list over every DLQ, whose every read found a DLQ dropped
// meanwhile, says that the queues changed during the read and to run it
// again, of kind unavailable, rather than as a failure of the database.
func TestDLQListWhileQueuesChange(t *testing.T) {
	t.Parallel()
	const tries = 8 // the reads of every DLQ a command makes
	url, drops := pgtest.DroppedUnderDeadReads(t, tries)
	// Each read waits for a drop, which a busy machine may take seconds
	// to make: a call timeout of two minutes keeps the default's 30s from
	// cutting the command short before its last read.
	r := pgbus(t, []string{"DATABASE_URL=" + url, "PGBUS_DATABASE_CALL_TIMEOUT=2m"}, "dlq", "list", "--json")
	if n := drops(); n != tries {
		t.Errorf("dlq list: %d DLQs dropped under its reads; want %d", n, tries)
	}
	var e struct {
		Error string `json:"error"`
		Kind  string `json:"kind"`
		Next  []struct {
			Command string `json:"command"`
		} `json:"next"`
	}
	if r.code != 1 || json.Unmarshal([]byte(r.stderr), &e) != nil {
		t.Fatalf("dlq list under a drop at each read: exit %d, stderr %q; want exit 1 and a JSON error", r.code, r.stderr)
	}
	for _, w := range []string{"the queues changed during the read (queues were created or dropped meanwhile)", "try again"} {
		if !strings.Contains(e.Error, w) {
			t.Errorf("dlq list under a drop at each read: %q does not say %q", e.Error, w)
		}
	}
	if e.Kind != ops.KindUnavailable {
		t.Errorf("dlq list under a drop at each read: kind %q; want %q", e.Kind, ops.KindUnavailable)
	}
	if len(e.Next) != 1 || !strings.HasPrefix(e.Next[0].Command, "pgbus dlq list") {
		t.Errorf("dlq list under a drop at each read: next %+v; want the same command again", e.Next)
	}
}
