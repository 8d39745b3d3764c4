package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A message retried out of its DLQ whose new trip recorded no failure
// (every claim lost) shows no error of its own in dlq show, and the
// previous trip's apart, labelled so.
func TestDLQShowLabelsThePreviousTripsError(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	st := pgtest.OpenStore(t, d.url)
	q := pgtest.NewQueue(t, st, "lost")
	_, dead := pgtest.DeadAfterLostClaim(t, st, q)
	d.ok(t, "dlq", "retry", fmt.Sprint(dead), "--queue", q)
	back := int64(pgtest.Int(t, st, `SELECT msg_id FROM pgmq."q_`+q+`"`))
	for range 3 {
		pgtest.LostClaim(t, st, q, back)
	}
	dead = pgtest.FailUntilDead(t, st, q, back)
	out := d.ok(t, "dlq", "show", fmt.Sprint(dead), "--queue", q)
	if !strings.Contains(out, "none recorded on this trip") || !strings.Contains(out, "previous trip's error:") ||
		!strings.Contains(out, "downstream refused the call (attempt 3 at ") || strings.Contains(out, "error class:") {
		t.Errorf("dlq show:\n%s\nwant no error of this trip and the previous trip's labelled so", out)
	}
}
