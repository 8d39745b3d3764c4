package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// A stop whose jobs have all finished, one outcome still waiting to be
// written (the database does not answer the write; here a lock holds
// it), said nothing when it began, and at the drain timeout that the
// running jobs were cancelled, "running=0": it waited for no job. It says
// it waits for that outcome to be written, and at the timeout that the
// write is given up.
func TestStopWaitingForOutcomesSaysSo(t *testing.T) {
	t.Parallel()
	s, q, c, logs := lockableClient(t, "pgbus_drain", time.Second)
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	stop, done := runInBackground(c)
	defer stop()
	lock := pgtest.HoldLock(t, s, "a_"+q)
	defer lock.Release()
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the outcome's write to wait for the lock", func() bool { return len(lock.Waiting()) == 1 })
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	out := logs.String()
	t.Logf("log:\n%s", out)
	var stopping, timeout string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, "pgbus: stopping"):
			stopping = l
		case strings.Contains(l, "drain timeout reached"):
			timeout = l
		}
	}
	if !strings.Contains(stopping, "outcomes") || !strings.Contains(stopping, "unwritten_outcomes=1") {
		t.Errorf("the stop's first line is %q; want it to say it waits for 1 outcome to be written", stopping)
	}
	if !strings.Contains(timeout, "unwritten_outcomes=1") || strings.Contains(timeout, "running jobs are cancelled") || strings.Contains(timeout, "running=0") {
		t.Errorf("the drain timeout's line is %q; want it to speak of the 1 outcome not written, not of jobs cancelled", timeout)
	}
}
