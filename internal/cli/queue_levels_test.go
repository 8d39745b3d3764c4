package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// queue messages of a queue with priority levels lists every level, level
// 0 first, each message with its level, in JSON and in the table; the
// table's next-page commands run across the levels, showing each message
// once; --state applies to every level; a level named alone lists that
// level; and a cursor of another list, or none, is refused.
func TestQueueMessagesOfPriorityLevels(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "alerts", "--priorities", "3")
	// Sent lowest level first: the list's order is the levels', not the
	// order of sending.
	send := func(level int, args ...string) string {
		id := strings.TrimSpace(d.ok(t, append([]string{"send", "alerts", "{}", "--priority", fmt.Sprint(level)}, args...)...))
		return fmt.Sprintf("%d alerts_p%d %s", level, level, id)
	}
	c0 := send(2)
	b0 := send(1)
	a0 := send(0)
	b1 := send(1, "--delay", "1h")
	a1 := send(0)
	want := []string{a0, a1, b0, b1, c0}
	items := func(page ops.LiveMessages) []string {
		var out []string
		for _, m := range page.Items {
			level := "none"
			if m.Priority != nil {
				level = fmt.Sprint(*m.Priority)
			}
			out = append(out, fmt.Sprintf("%s %s %d", level, m.Queue, m.MsgID))
		}
		return out
	}

	var page ops.LiveMessages
	d.json(t, &page, "queue", "messages", "alerts")
	if got := items(page); !slices.Equal(got, want) || page.NextCursor != "" {
		t.Fatalf("queue messages alerts --json: %v (cursor %q), want %v", got, page.NextCursor, want)
	}

	// The table, two rows a page, following each page's command for the
	// next: the level, then the id, of every message once.
	var rows []string
	args, pages := []string{"queue", "messages", "alerts", "--limit", "2"}, 0
	for ; args != nil; pages++ {
		text := d.ok(t, args...)
		lines := strings.Split(strings.TrimSpace(text), "\n")
		if f := strings.Fields(lines[0]); len(f) < 2 || f[0] != "LEVEL" || f[1] != "ID" {
			t.Fatalf("pgbus %s: the table does not start with LEVEL and ID:\n%s", strings.Join(args, " "), text)
		}
		args = nil
		for _, l := range lines[1:] {
			if more, ok := strings.CutPrefix(l, "more: pgbus "); ok {
				args = strings.Fields(more)
				continue
			}
			f := strings.Fields(l)
			rows = append(rows, f[0]+" alerts_p"+f[0]+" "+f[1])
		}
		if pages > 5 {
			t.Fatalf("more than 5 pages: %v", rows)
		}
	}
	if !slices.Equal(rows, want) || pages != 3 {
		t.Fatalf("the table's pages of two: %v in %d pages, want %v in 3", rows, pages, want)
	}

	d.json(t, &page, "queue", "messages", "alerts", "--state", "scheduled", "--limit", "1")
	if got := items(page); !slices.Equal(got, []string{b1}) || page.NextCursor != "" {
		t.Errorf("--state scheduled: %v (cursor %q), want [%s] alone", got, page.NextCursor, b1)
	}
	var level ops.LiveMessages
	d.json(t, &level, "queue", "messages", "alerts_p1", "--limit", "1")
	if got := items(level); !slices.Equal(got, []string{b0}) || level.NextCursor == "" {
		t.Fatalf("queue messages alerts_p1 --limit 1: %v (cursor %q), want [%s] and a next page", got, level.NextCursor, b0)
	}
	if out := d.fails(t, 2, "queue", "messages", "alerts", "--cursor", level.NextCursor); !strings.Contains(out, "cursor was issued for another queue or state") {
		t.Errorf("a cursor of alerts_p1 given for alerts: %q", out)
	}
	if out := d.fails(t, 2, "queue", "messages", "alerts", "--cursor", "not-a-cursor"); !strings.Contains(out, "--cursor is not valid here (issued by another list or database, cut short or changed); start again without --cursor") {
		t.Errorf("a cursor that is none: %q", out)
	}

	// A queue without levels has no LEVEL column.
	d.ok(t, "queue", "create", "plain")
	d.ok(t, "send", "plain", "{}")
	if out := d.ok(t, "queue", "messages", "plain"); strings.Contains(out, "LEVEL") || !strings.Contains(out, "ID") {
		t.Errorf("queue messages of a plain queue:\n%s", out)
	}
}

// A configuration file that declares a priority level as a queue of its
// own is refused naming the file, the line and the key to change, as its
// other mistakes are; the refusal named neither.
func TestWorkConfigDeclaringALevelNamesItsKey(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "tiers", "--priorities", "2")
	cfg := filepath.Join(t.TempDir(), "pgbus.yaml")
	if err := os.WriteFile(cfg, []byte("queues:\n  tiers_p1:\n    handler: {type: demo}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	msg := d.fails(t, 2, "work", "--config", cfg, "--for", "1s")
	if !strings.Contains(msg, cfg+":2") || !strings.Contains(msg, "queues.tiers_p1") || !strings.Contains(msg, "priority level 1 of queue") {
		t.Errorf("work --config declaring level tiers_p1: %s; want the file, line 2, the key and what it is", msg)
	}
}
