package tools_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Over MCP, refusals and next steps name the tools' arguments (by_field,
// expect, dry_run), as the command line names its flags instead.
func TestRefusalsNameArguments(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{SafeFields: []string{"tenant"}})
	q := newQueue(t, e.st)
	pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Payload: `{"tenant":"a"}`})

	e.callErr(t, "pgbus_dlq_summary", map[string]any{"queue": q, "by_field": "order_id"}, `by_field "order_id" is not a safe field of this server; use one of tenant`)
	for _, tool := range []string{"pgbus_dlq_discard", "pgbus_dlq_retry"} {
		text := e.callErr(t, tool, map[string]any{"queue": q, "expect": "2,3", "dry_run": true, "limit": 10}, "drop expect, or dry_run")
		if strings.Contains(text, "--") {
			t.Errorf("%s names a flag: %s", tool, text)
		}
	}

	if err := e.st.AddStats(testContext(t), []store.StatsDelta{{Minute: time.Now().UTC().Truncate(time.Minute), Queue: q, Kind: "k", DeadLettered: 2}}); err != nil {
		t.Fatal(err)
	}
	h := healthOK(t, e, nil)
	for _, r := range h.Reasons {
		if r.Code != "dead_letters_growing" || r.Queue != q {
			continue
		}
		s, ok := findHint(r.Next, "pgbus_dlq_summary")
		if !ok || s.Args["by_field"] != "tenant" || s.Args["queue"] != q || strings.Contains(s.Why, "--") {
			t.Fatalf("health's step to the summary: %+v; want by_field tenant as its argument", r.Next)
		}
		return
	}
	t.Fatalf("health has no dead_letters_growing reason for %s: %+v", q, h.Reasons)
}
