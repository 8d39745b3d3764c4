package cli_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A claim whose worker never ran the job (its reply lost, its worker
// killed) used attempt 1 and recorded nothing: dlq show says so beside the
// attempts, in words and in its JSON, rather than showing 3 attempts and
// failures 2 and 3 alone.
func TestDLQShowStatesAnAttemptThatLeftNoOutcome(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	st := pgtest.OpenStore(t, d.url)
	q := pgtest.NewQueue(t, st, "lost")
	_, id := pgtest.DeadAfterLostClaim(t, st, q)
	for _, args := range [][]string{{}, {"--full-history"}} {
		out := d.ok(t, append([]string{"dlq", "show", fmt.Sprint(id), "--queue", q}, args...)...)
		if !strings.Contains(out, "attempts:") || !strings.Contains(out, "3 (max_retries 3)") ||
			!strings.Contains(out, "attempt 1 left no outcome: its worker stopped or lost its connection after taking the message, or another PGMQ client read it (pgmq.read); it still counts toward max_retries") {
			t.Errorf("dlq show %v:\n%s\nwant attempt 1 said to have left no outcome", args, out)
		}
	}
	var m ops.DeadMessage
	d.json(t, &m, "dlq", "show", fmt.Sprint(id), "--queue", q)
	if !slices.Equal(m.UnrecordedAttempts, []int{1}) || m.UnrecordedCount != 1 || !strings.HasPrefix(m.Unrecorded, "attempt 1 left no outcome") {
		t.Errorf("dlq show --json: unrecorded %v (%d) %q; want attempt 1", m.UnrecordedAttempts, m.UnrecordedCount, m.Unrecorded)
	}
}

// dlq list says beside a message's attempts how many left no outcome,
// and what they are, in its table and in its JSON.
func TestDLQListCountsAttemptsThatLeftNoOutcome(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	st := pgtest.OpenStore(t, d.url)
	q := pgtest.NewQueue(t, st, "lost")
	_, id := pgtest.DeadAfterLostClaim(t, st, q)
	const said = "1 read ended without an outcome (a crash or lost claim)"
	if out := d.ok(t, "dlq", "list", "--queue", q); !strings.Contains(out, "3/3 ("+said+")") {
		t.Errorf("dlq list:\n%s\nwant its attempts as 3/3 (%s)", out, said)
	}
	var page ops.DLQList
	d.json(t, &page, "dlq", "list", "--queue", q)
	if len(page.Items) != 1 || page.Items[0].MsgID != id || page.Items[0].UnrecordedCount != 1 || page.Items[0].Unrecorded != said {
		t.Errorf("dlq list --json: %+v; want message %d with 1 unrecorded attempt", page.Items, id)
	}
}
