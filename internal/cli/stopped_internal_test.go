package cli

import (
	"context"
	"fmt"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// A bulk command a signal stops after some of its work says how much it
// did, which stays done, and that the same command does the rest; any
// other command says that what it did is kept.
func TestStoppedBySignalCountsWhatWasDone(t *testing.T) {
	partly := fmt.Errorf("store: page through dead messages: %w", &ops.PartlyDone{Verb: "retrying", Done: 2032, Limit: 100000, Err: context.Canceled})
	want := "stopped by a signal after retrying 2,032 of up to 100,000 dead messages, which stay retried; run the same command again: it retries the rest"
	if got := (&app{}).stoppedBySignal(nil, partly).Error(); got != want {
		t.Errorf("stopped retry: %q, want %q", got, want)
	}
	if got := (&app{}).stoppedBySignal(nil, context.Canceled).Error(); got != "stopped by a signal before finishing; what was done before is kept: run the command again to finish" {
		t.Errorf("stopped command: %q", got)
	}
}
