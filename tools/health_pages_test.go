package tools_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// When more queues have problems than fit, pgbus_health lists the reasons
// of one code a page at a time: it listed some and said only that the
// command line lists them all. Each reason of the code comes once, in the
// order of its queue, and the verdict still counts every reason.
func TestHealthPagesTheReasonsOfACode(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	const total = 120
	// Each step has a context of its own: on a busy machine, making the
	// queues alone may take longer than one context's two minutes.
	for range total {
		q := newQueue(t, e.st)
		if _, err := e.st.SendBatch(testContext(t), q, []store.NewMessage{{Payload: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	first := healthOK(t, e, nil)
	if first.Omitted == 0 {
		t.Fatalf("%d reasons listed, none omitted; want more than fit", len(first.Reasons))
	}
	code := first.Reasons[0].Code
	all, err := newDeps(t, e.st, ops.Options{Bounds: ops.FullBounds}).Ops.Health(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range all.Reasons {
		if r.Code == code {
			want = append(want, r.Queue)
		}
	}
	slices.Sort(want)
	var got []string
	args := map[string]any{"code": code}
	for pages := 1; ; pages++ {
		h := healthOK(t, e, args)
		if h.Status != first.Status || counted(h.Queues) != total {
			t.Fatalf("page %d: %s over %d queues; want the verdict %s over all %d", pages, h.Status, counted(h.Queues), first.Status, total)
		}
		for _, r := range h.Reasons {
			if r.Code != code {
				t.Fatalf("page %d lists a %s reason; want %s only", pages, r.Code, code)
			}
			got = append(got, r.Queue)
		}
		if h.NextCursor == "" {
			break
		}
		if !strings.Contains(strings.Join(h.Notes, " "), "pass next_cursor as cursor") || pages > total {
			t.Fatalf("page %d: notes %q, %d pages; want a note that says how to ask for the next page", pages, h.Notes, pages)
		}
		args["cursor"] = h.NextCursor
	}
	if !slices.Equal(got, want) || len(got) <= len(first.Reasons) {
		t.Errorf("pages listed %d %s reasons, %v; want all %d, each once by queue: %v", len(got), code, got, len(want), want)
	}
	e.callErr(t, "pgbus_health", map[string]any{"code": "no_such_code"}, "no_such_code", "no_workers")
	e.callErr(t, "pgbus_health", map[string]any{"code": code, "cursor": "%%"}, "cursor")
}
