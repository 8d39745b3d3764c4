package cli_test

import (
	"strings"
	"testing"
)

// --queue beside PGBUS_QUEUES works the queues of --queue, as flags win
// over the environment; the log says so, naming the variable left
// unused, rather than let its queues go unworked without a word.
func TestQueueFlagBesideTheVariableSaysWhichIsUsed(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"work", "serve"} {
		// An unknown handler stops the command once its queues are settled.
		r := usageRun(t, []string{"PGBUS_QUEUES=emails,invoices", "PGBUS_LOG_FORMAT=json"}, cmd, "--queue", "orders", "--handler", "nope")
		if r.code != 2 || !strings.Contains(r.stderr, "PGBUS_QUEUES") || !strings.Contains(r.stderr, "--queue") || !strings.Contains(r.stderr, "unused") || !strings.Contains(r.stderr, "emails,invoices") {
			t.Errorf("pgbus %s --queue orders beside PGBUS_QUEUES: exit %d, stderr %q; want a word that --queue is used and PGBUS_QUEUES unused", cmd, r.code, r.stderr)
		}
	}
}
