package cli_test

import (
	"strings"
	"testing"
)

// A queue name no queue can have is refused in the words of the way each
// command takes the queue: as --queue by every dlq command that takes the
// flag (show, purge and retry by ids as list and summary do), as the
// queue by a command that takes it as its argument.
func TestBadQueueNameNamedAsGiven(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	const bad = "Orders X"
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"dlq", "list", "--queue", bad}, `--queue name "Orders X"`},
		{[]string{"dlq", "summary", "--queue", bad}, `--queue name "Orders X"`},
		{[]string{"dlq", "show", "1", "--queue", bad}, `--queue name "Orders X"`},
		{[]string{"dlq", "purge", "--queue", bad, "--yes"}, `--queue name "Orders X"`},
		{[]string{"dlq", "purge", "--queue", bad, "--dry-run"}, `--queue name "Orders X"`},
		{[]string{"dlq", "retry", "1", "--queue", bad}, `--queue name "Orders X"`},
		{[]string{"dlq", "retry-all", "--queue", bad, "--dry-run"}, `--queue name "Orders X"`},
		{[]string{"dlq", "discard", "1", "--queue", bad}, `--queue name "Orders X"`},
		{[]string{"dlq", "discarded", "--queue", bad}, `--queue name "Orders X"`},
		{[]string{"dlq", "restore", "1", "--queue", bad}, `--queue name "Orders X"`},
		{[]string{"queue", "pause", bad}, `queue name "Orders X"`},
	} {
		msg := d.fails(t, 2, c.args...)
		if !strings.Contains(msg, c.says) || strings.HasPrefix(c.says, "queue") && strings.Contains(msg, "--queue") {
			t.Errorf("pgbus %q: %q; want it to say %q", c.args, msg, c.says)
		}
	}
}
