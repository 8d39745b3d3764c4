package cli

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// An id another call moved while this one ran was not retried by it: the
// exit code says so as for an id not found (3), and a failure outranks it.
func TestOutcomeOfAnIDMovedMeanwhile(t *testing.T) {
	t.Parallel()
	meanwhile := ops.IDOutcome{ID: 7, Outcome: ops.OutcomeAlreadyMoved, Error: "message 7 left q_dlq while this call ran"}
	for _, c := range []struct {
		outcomes []ops.IDOutcome
		code     int
		says     string
	}{
		{[]ops.IDOutcome{meanwhile}, ExitNotFound, "message 7 left"},
		{[]ops.IDOutcome{{ID: 6, Outcome: ops.OutcomeRetried}, meanwhile}, ExitNotFound, "moved by another call meanwhile: 7"},
		{[]ops.IDOutcome{{ID: 5, Outcome: ops.OutcomeFailed, Error: "boom"}, meanwhile}, ExitFailure, "failed: 5"},
	} {
		err := outcomeError("retried", c.outcomes, nil)
		if err == nil || exitCode(err) != c.code || !strings.Contains(err.Error(), c.says) {
			t.Errorf("outcomes %+v: %v (exit %d); want exit %d saying %q", c.outcomes, err, exitCode(err), c.code, c.says)
		}
	}
}
