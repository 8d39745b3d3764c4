package cli_test

import (
	"strconv"
	"strings"
	"testing"
)

// A --queue of the DLQ commands too long for a queue's name (44 to 47
// characters, which no queue pgbus makes has, and which do not end in
// _dlq) is refused as the queue name it is, too long with at most 43, not
// by the length of the DLQ name pgbus would have derived from it; a DLQ's
// own name passes that check.
func TestDLQCommandsSayTheQueueNameIsTooLong(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	for _, n := range []int{44, 45, 47, 48} {
		name := strings.Repeat("a", n)
		for _, args := range [][]string{
			{"dlq", "list", "--queue", name},
			{"dlq", "summary", "--queue", name},
			{"dlq", "show", "1", "--queue", name},
		} {
			msg := d.fails(t, 2, args...)
			want := `queue name "` + name + `" is ` + strconv.Itoa(n) + ` characters; a queue's name has at most 43`
			if !strings.Contains(msg, want) || strings.Contains(msg, "_dlq\"") {
				t.Errorf("pgbus %s %s --queue <%d characters>: %q\nwant %q, and no DLQ name", args[0], args[1], n, msg, want)
			}
		}
	}
	// A DLQ's name, 4 characters longer than its queue's, is no queue name.
	if msg := d.fails(t, 3, "dlq", "list", "--queue", strings.Repeat("a", 43)+"_dlq"); strings.Contains(msg, "characters") {
		t.Errorf("dlq list --queue <a DLQ's name of 47 characters>: %q; want it taken, not refused by its length", msg)
	}
}
