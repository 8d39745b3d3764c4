//go:build unix

package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// signalScript is run by /bin/sh with what to do as its argument.
const signalScript = `cat > /dev/null
echo "attempt $PGBUS_ATTEMPT: $1" >&2
case "$1" in
self) kill -KILL $$ ;;
shell) /bin/sh -c 'kill -KILL $$'; exit $? ;;
term) kill -TERM $$ ;;
once) [ "$PGBUS_ATTEMPT" -lt 2 ] && kill -KILL $$; exit 0 ;;
bad) exit 3 ;;
esac
exit 2
`

// A command killed by a signal, or whose shell reports that a signal
// killed it (128+N), is retried under the queue's policy, not
// dead-lettered at once: the OOM killer or a supervisor stopped it, not its
// payload. What the file says of the code wins: on_exit, discard_exit_codes,
// retry_signals: false; and a plain exit code is still dead-lettered at
// once.
func TestExecHandlerRetriesKilledCommands(t *testing.T) {
	t.Parallel()
	s := sharedStore(t)
	script := writeScript(t, t.TempDir(), "signal.sh", signalScript)
	q := fastQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = 3 })
	c := quickClient(t, s, q, 4)
	kinds := []struct{ kind, arg, extra string }{
		{"killed", "self", ""},
		{"shell", "shell", ""},
		{"term", "term", ""},
		{"once", "once", ""},
		{"bad", "bad", ""},
		{"dead", "self", "on_exit: {137: dead_letter}"},
		{"discard", "self", "discard_exit_codes: [137]"},
		{"off", "term", "retry_signals: false"},
	}
	ids := map[string]int64{}
	for _, k := range kinds {
		fn, opts := mustBuild(t, specFromYAML(t, fmt.Sprintf("type: exec\ncommand: [/bin/sh, %s, %s]\nbreaker: {enabled: false}\n%s", script, k.arg, k.extra)))
		c.Handle(k.kind, fn, opts)
	}
	pgtest.Start(t, c)
	for _, k := range kinds {
		ids[k.kind] = pgtest.Send(t, c, q, map[string]string{"case": k.kind}, engine.SendOptions{Kind: k.kind})
	}
	pgtest.Eventually(t, time.Minute, "every message to settle", func() bool { return pgtest.Live(t, s, q) == 0 })

	archived := archivedOf(t, s, q)
	blocks, dlqIDs := deadBlocksOf(t, s, q)
	dlq := store.DLQName(q)
	retried := "; retried, as a command killed by a signal did not choose to fail"
	oom := "the kernel's OOM killer is a common cause of signal 9: check the command's memory use"
	for _, tc := range []struct {
		kind, class string
		want        []string
	}{
		{"killed", "exec.exit_137", []string{"killed by signal 9 (killed), taken as exit code 137" + retried, oom}},
		{"shell", "exec.exit_137", []string{"exit code 137, as a shell reports a child killed by signal 9 (killed)" + retried, oom}},
		{"term", "exec.exit_143", []string{"killed by signal 15 (terminated), taken as exit code 143" + retried}},
	} {
		checkDeadBlock(t, blocks[ids[tc.kind]], tc.kind, store.ReasonMaxRetriesExceeded, 3, tc.class)
		fs := failuresOf(t, s, dlq, dlqIDs[ids[tc.kind]])
		if len(fs) != 3 {
			t.Errorf("%s: %d failures %+v; want one for each of 3 attempts", tc.kind, len(fs), fs)
		}
		for _, f := range fs {
			for _, want := range tc.want {
				if f.Class != tc.class || !strings.Contains(f.Message, want) {
					t.Errorf("%s: failure %+v; want class %s and a message saying %q", tc.kind, f, tc.class, want)
				}
			}
		}
	}
	// Killed once, done on attempt 2.
	if a, ok := archived[ids["once"]]; !ok || a.ReadCount != 2 {
		t.Errorf("once: archived %v after %d runs; want after 2", ok, a.ReadCount)
	}
	// What the file says of the code wins over the default.
	checkDeadBlock(t, blocks[ids["bad"]], "bad", store.ReasonNonRetryable, 1, "exec.exit_3")
	checkDeadBlock(t, blocks[ids["dead"]], "dead", store.ReasonNonRetryable, 1, "exec.exit_137")
	checkDeadBlock(t, blocks[ids["off"]], "off", store.ReasonNonRetryable, 1, "exec.exit_143")
	for _, kind := range []string{"bad", "dead", "off"} {
		if msg, _ := blocks[ids[kind]]["error_message"].(string); strings.Contains(msg, "retried") {
			t.Errorf("%s: message %q says it is retried", kind, msg)
		}
	}
	if a, ok := archived[ids["discard"]]; !ok || a.ReadCount != 1 || a.Headers[store.HeaderDiscarded] == nil {
		t.Errorf("discard: archived %v after %d runs with headers %v; want discarded after 1", ok, a.ReadCount, a.Headers)
	}
}

// A boolean option quoted, "false" or "true", means what it says, as the
// words YAML also takes for them (no, off, yes, on) do, quoted or not:
// neither is refused as "not true or false".
func TestQuotedBooleanOptions(t *testing.T) {
	t.Parallel()
	script := writeScript(t, t.TempDir(), "signal.sh", signalScript)
	for _, v := range []string{`"false"`, `'False'`, `off`, `"no"`, `false`} {
		fn, opts := mustBuild(t, specFromYAML(t, fmt.Sprintf("type: exec\ncommand: [/bin/sh, %s, term]\nretry_signals: %s\nretry_unknown_exit_codes: %s\nbreaker: {enabled: %s}", script, v, v, v)))
		if opts.Breaker != nil {
			t.Errorf("enabled: %s left the breaker on", v)
		}
		// A retried failure comes back as a plain ExitError, a dead-lettered
		// one marked.
		err := fn(context.Background(), &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: []byte(`{}`), IdempotencyKey: "q:1"})
		var ee *handlers.ExitError
		if _, plain := err.(*handlers.ExitError); plain || !errors.As(err, &ee) || ee.ExitCode != 143 {
			t.Errorf("retry_signals: %s: %v (%T); want a command killed by SIGTERM dead-lettered, not retried", v, err, err)
		}
	}
	for _, v := range []string{`"true"`, `'TRUE'`, `on`, `"yes"`, `true`} {
		_, opts := mustBuild(t, specFromYAML(t, fmt.Sprintf("type: exec\ncommand: [/bin/sh, -c, 'exit 0']\nbreaker: {enabled: %s}", v)))
		if opts.Breaker == nil {
			t.Errorf("enabled: %s turned the breaker off", v)
		}
	}
}
