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
	again := ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"limit": 97968}}
	partly := fmt.Errorf("store: page through dead messages: %w", &ops.PartlyDone{Verb: "retrying", Done: 2032, Limit: 100000, Err: context.Canceled, Again: again})
	want := "stopped by a signal after retrying 2,032 of up to 100,000 dead messages, which stay retried; run pgbus dlq retry-all --limit 97968 --yes: it retries the rest"
	if got := (&app{}).stoppedBySignal(nil, partly).Error(); got != want {
		t.Errorf("stopped retry: %q, want %q", got, want)
	}
	// One that did all its limit allowed has no rest to do.
	full := &ops.PartlyDone{Verb: "retrying", Done: 100, Limit: 100, Err: context.Canceled}
	if got, want := (&app{}).stoppedBySignal(nil, full).Error(), "stopped by a signal after retrying 100 of up to 100 dead messages, which stay retried"; got != want {
		t.Errorf("stopped retry at its limit: %q, want %q", got, want)
	}
	purge := &ops.PartlyDone{Verb: "purging", Done: 7, Err: context.Canceled, Again: ops.Hint{Op: ops.OpDLQPurge}}
	if got, want := (&app{}).stoppedBySignal(nil, purge).Error(), "stopped by a signal after purging 7 dead messages, which are gone; run pgbus dlq purge --yes: it purges the rest"; got != want {
		t.Errorf("stopped purge: %q, want %q", got, want)
	}
	if got := (&app{}).stoppedBySignal(nil, context.Canceled).Error(); got != "stopped by a signal before finishing; what was done before is kept: run the command again to finish" {
		t.Errorf("stopped command: %q", got)
	}
}
