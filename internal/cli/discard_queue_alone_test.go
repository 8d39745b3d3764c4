package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A runbook that pipes the ids of a list into a discard (… | xargs pgbus
// dlq discard --queue jobs --yes) runs it with no ids when the list came
// out empty: that is refused, and discards nothing, rather than read as a
// discard of the queue's whole DLQ. With --all it discards the DLQ.
func TestDiscardOfQueueAloneNeedsAll(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "jobs")
	pgtest.DeadLetterN(t, s, "jobs", 5, pgtest.DeadSpec{})
	r := pgbus(t, d.env, "dlq", "discard", "--queue", "jobs", "--yes")
	if r.code != 2 || !strings.Contains(r.stderr, "no ids, and --queue alone") || !strings.Contains(r.stderr, "add --all") {
		t.Errorf("discard --queue jobs --yes, no ids: exit %d, stderr %q; want 2 and --all asked for", r.code, r.stderr)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_jobs_dlq`); n != 5 {
		t.Fatalf("the DLQ holds %d messages after the refused discard, want its 5", n)
	}
	d.ok(t, "dlq", "discard", "--queue", "jobs", "--all", "--yes")
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_jobs_dlq`); n != 0 {
		t.Errorf("the DLQ holds %d messages after discard --queue jobs --all --yes, want none", n)
	}
}
