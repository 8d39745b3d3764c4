package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Refusals and next steps that name a request field name it as the
// command's flag (--by-field, --expect, --dry-run), never as the MCP
// argument (by_field, expect, dry_run), wherever it stands in the words.
func TestRefusalsNameFlags(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	seedDLQ(t, d.url, "thumbs", `{"tenant":"a"}`, `{"tenant":"b"}`)
	d.env = append(d.env, "PGBUS_SAFE_FIELDS=tenant")
	argWords := []string{"by_field", "dry_run", " expect"}
	noArgWords := func(what, text string) {
		t.Helper()
		for _, w := range argWords {
			if strings.Contains(text, w) {
				t.Errorf("%s names the argument %q rather than its flag:\n%s", what, strings.TrimSpace(w), text)
			}
		}
	}

	msg := d.fails(t, 2, "dlq", "summary", "--by-field", "order_id")
	if !strings.Contains(msg, `--by-field "order_id" is not a safe field of this server; use one of tenant`) {
		t.Errorf("summary by an unsafe field says %q; want it to name --by-field", msg)
	}
	noArgWords("summary by an unsafe field", msg)
	for _, args := range [][]string{
		{"dlq", "discard", "--queue", "thumbs", "--expect", "2,3", "--dry-run"},
		{"dlq", "retry-all", "--queue", "thumbs", "--expect", "2,3", "--dry-run"},
	} {
		msg := d.fails(t, 2, args...)
		if !strings.Contains(msg, "drop --expect, or --dry-run") {
			t.Errorf("%v says %q; want it to name --expect and --dry-run", args, msg)
		}
		noArgWords(strings.Join(args, " "), msg)
	}

	// Dead letters this minute: health points at the summary, broken down
	// by the safe field.
	st := pgtest.OpenStore(t, d.url)
	if err := st.AddStats(t.Context(), []store.StatsDelta{{Minute: time.Now().UTC().Truncate(time.Minute), Queue: "thumbs", Kind: "k", DeadLettered: 2}}); err != nil {
		t.Fatal(err)
	}
	out := d.ok(t, "health")
	if !strings.Contains(out, "pgbus dlq summary --by-field tenant --queue thumbs") {
		t.Errorf("health does not name the summary by tenant as a next step:\n%s", out)
	}
	noArgWords("health", out)
	var h ops.Health
	d.json(t, &h, "health")
	var steps []string
	for _, r := range h.Reasons {
		for _, n := range r.Next {
			steps = append(steps, n.Why, n.Args["command"].(string))
		}
	}
	all := strings.Join(steps, "\n")
	if !strings.Contains(all, "pgbus dlq summary --by-field tenant --queue thumbs") {
		t.Errorf("health --json does not name the summary by tenant as a next step:\n%s", all)
	}
	noArgWords("health --json", all)
}
