package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A discard given the expect of a retry's dry run (or a retry given a
// discard's) is refused with this call's own dry run as the step to take,
// its filters and limit kept: the step was the summary of the DLQs, which
// gives no expect.
func TestExpectOfTheOtherMoveNamesThisCallsDryRun(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "reports")
	pgtest.DeadLetter(t, s, "reports", pgtest.DeadSpec{Class: "X"}, pgtest.DeadSpec{Class: "X"})
	var retry ops.DLQRetry
	d.json(t, &retry, "dlq", "retry-all", "--queue", "reports", "--error-class", "X", "--limit", "1000", "--dry-run")
	var discard ops.DLQDiscard
	d.json(t, &discard, "dlq", "discard", "--queue", "reports", "--error-class", "X", "--limit", "1000", "--dry-run")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dlq", "discard", "--error-class", "X", "--expect", retry.Expect, "--limit", "1000", "--queue", "reports", "--yes"}, "pgbus dlq discard --dry-run"},
		{[]string{"dlq", "retry-all", "--error-class", "X", "--expect", discard.Expect, "--limit", "1000", "--queue", "reports", "--yes"}, "pgbus dlq retry-all --dry-run"},
	} {
		msg := d.fails(t, 2, c.args...)
		_, see, _ := strings.Cut(msg, "own dry run")
		for _, w := range []string{c.want, "--error-class X", "--limit 1000", "--queue reports"} {
			if !strings.Contains(see, w) {
				t.Errorf("pgbus %s: %q; want its own dry run as the step, with %q", strings.Join(c.args, " "), msg, w)
			}
		}
		if strings.Contains(see, "dlq summary") || strings.Contains(see, "--expect") || strings.Contains(see, "--yes") {
			t.Errorf("pgbus %s: %q; want its own dry run alone as the step", strings.Join(c.args, " "), msg)
		}
	}
	if st := d.stats(t, "reports"); st.DLQDepth != 2 {
		t.Errorf("after the refused calls the DLQ holds %d, want 2", st.DLQDepth)
	}
}
