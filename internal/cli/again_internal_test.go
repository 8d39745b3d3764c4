package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// A bulk command stopped partway names the command that does the rest,
// with the limit left and the global flags it was given: it said to run
// "the same command again with --limit N", which the person had to
// rebuild, where --json gave the command as its next step.
func TestStoppedPartwayNamesTheCommand(t *testing.T) {
	again := ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "reports", "limit": 664, "confirm": true}}
	want := "run pgbus dlq retry-all --limit 664 --queue reports --yes --config pgbus.yaml: it retries the rest"
	a := &app{carry: " --config pgbus.yaml"}
	signal := fmt.Errorf("store: page through dead messages: %w", &ops.PartlyDone{Verb: "retrying", Done: 336, Limit: 1000, Err: context.Canceled, Again: again})
	if got := a.stoppedBySignal(nil, signal).Error(); !strings.Contains(got, want) {
		t.Errorf("retry stopped by a signal: %q; want it to say %q", got, want)
	}
	p := &ops.PartlyDone{Verb: "retrying", Done: 336, Limit: 1000, Err: ops.ErrUnavailable, Again: again}
	got := a.errorLine(a.partlyDone(p, p), "")
	// Cut off otherwise, it names the command among its next steps.
	if !strings.Contains(got, "pgbus dlq retry-all --limit 664 --queue reports --yes --config pgbus.yaml") {
		t.Errorf("retry cut off: %q; want it to name the command that does the rest", got)
	}
	if strings.Count(got, "pgbus dlq retry-all") != 1 {
		t.Errorf("retry cut off: %q; want the command named once", got)
	}
}

// A retry by filter cut off partway says to run the same command again up
// to where its selection ended, so that it retries the rest of the same
// messages and not those that died since.
func TestStoppedRetryNamesTheUntilOfTheRest(t *testing.T) {
	until := "2026-12-07T18:59:01.123456Z"
	p := &ops.PartlyDone{Verb: "retrying", Done: 336, Limit: 1000, Err: ops.ErrUnavailable, Until: until,
		Again: ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "reports", "limit": 664, "confirm": true, "until": until}}}
	if got, want := runAgain(p), "run the same command again with --limit 664 --until "+until; got != want {
		t.Errorf("runAgain = %q, want %q", got, want)
	}
}

// A discard by filter stopped by a signal names the command that does the
// rest up to where its selection ended, as a retry-all does, so that it
// discards none of the messages that died since, which nobody has looked
// at yet.
func TestStoppedDiscardNamesTheUntilOfTheRest(t *testing.T) {
	until := "2026-12-07T18:59:01.123456Z"
	again := ops.Hint{Op: ops.OpDLQDiscard, Args: map[string]any{"queue": "reports", "limit": 664, "confirm": true, "until": until}}
	a := &app{}
	signal := fmt.Errorf("store: page through dead messages: %w", &ops.PartlyDone{Verb: "discarding", Done: 336, Limit: 1000, Err: context.Canceled, Until: until, Again: again})
	if got, want := a.stoppedBySignal(nil, signal).Error(), "run pgbus dlq discard --limit 664 --queue reports --until "+until+" --yes: it discards the rest"; !strings.Contains(got, want) {
		t.Errorf("discard stopped by a signal: %q; want it to say %q", got, want)
	}
}
