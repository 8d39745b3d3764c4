package cli_test

import (
	"strings"
	"testing"
)

// The priority levels of a queue whose name is as long as allowed are
// named as those of any queue: NAME_p9 is 46 characters, and still a
// level's name, whose tables fit PostgreSQL's identifiers.
func TestLevelsOfLongestQueueName(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	name := "l" + strings.Repeat("o", 41) + "g"
	if len(name) != 43 {
		t.Fatalf("name is %d characters; want the longest, 43", len(name))
	}
	d.ok(t, "queue", "create", name, "--priorities", "10")
	d.ok(t, "send", name, `{"n":1}`, "--priority", "9")
	if out := d.ok(t, "queue", "messages", name+"_p9"); !strings.Contains(out, "\n9 ") || !strings.Contains(out, "waiting") {
		t.Errorf("queue messages %s_p9 does not list the message sent at priority 9:\n%s", name, out)
	}
	if out := d.ok(t, "queue", "run-now", name+"_p1", "--dry-run"); !strings.Contains(out, name+"_p1") {
		t.Errorf("queue run-now %s_p1 --dry-run does not name the level:\n%s", name, out)
	}
	for _, bad := range []string{name + "_p10", name + "x_p1"} {
		if msg := d.fails(t, 2, "queue", "messages", bad); !strings.Contains(msg, "characters; a queue's name has at most 43") {
			t.Errorf("queue messages %s: %q; want it refused as too long", bad, msg)
		}
	}
}
