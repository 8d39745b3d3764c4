package dashboard

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A next step about one queue's stats or live messages (a health reason's
// "what the queue holds", the stats of a DLQ's queue) links the queue's
// page, keeping a state and cursor but not the limit, which the page does
// not take; without a queue, the stats are the overview's.
func TestHintsOfAQueueLinkItsPage(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := pgtest.NewQueue(t, st, "dash_hint")
	_, err = svc.QueueStats(pgtest.Context(t), ops.QueueStatsRequest{Queue: q + "_dlq"})
	hints := append(ops.HintsOf(err),
		ops.Hint{Op: ops.OpQueueMessages, Why: "what the queue holds", Args: map[string]any{"queue": q, "state": "retrying", "cursor": "c1", "limit": 5}},
		ops.Hint{Op: ops.OpQueueStats, Why: "lists the queues there are"})
	got := hintLinks(hints)
	want := []link{{"/queues/" + q, "The stats of its queue"}, {"/dlq?queue=" + q, "Its dead messages by cause"},
		{"/queues/" + q + "?cursor=c1&state=retrying", "What the queue holds"}, {"/", "Lists the queues there are"}}
	if len(got) != len(want) {
		t.Fatalf("links %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("link %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if cmds := hintCommands(hints, " --config pgbus.yaml"); len(cmds) != 0 {
		t.Errorf("the hints the dashboard links are given as commands too: %+v", cmds)
	}
}

// A next step to restore discarded messages links the preview of that
// restore, with one id= per id as the page's selection sends them, and
// one to list them links the page of the queue's discarded messages.
func TestHintsOfARestoreLinkItsPages(t *testing.T) {
	t.Parallel()
	got := hintLinks([]ops.Hint{
		{Op: ops.OpDLQRestore, Why: "see what restoring them would do", Args: map[string]any{"queue": "orders", "ids": []int64{42, 7}, "dry_run": true}},
		{Op: ops.OpDLQDiscarded, Why: "lists the discarded messages there are", Args: map[string]any{"queue": "orders"}},
	})
	want := []link{{"/dlq/restore?id=42&id=7&queue=orders", "See what restoring them would do"}, {"/dlq/discarded?queue=orders", "Lists the discarded messages there are"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("links %+v, want %+v", got, want)
	}
}

// A next step to retry or discard given messages links the preview of
// exactly those ids, not the preview by filter, which takes no ids and
// would offer every dead message of the queue.
func TestHintsByIDsLinkTheSelectionsPreview(t *testing.T) {
	t.Parallel()
	got := hintLinks([]ops.Hint{
		{Op: ops.OpDLQDiscard, Why: "first: discards this message", Args: map[string]any{"queue": "orders_dlq", "ids": []int64{42}}},
		{Op: ops.OpDLQRetry, Why: "retry them without their deadlines", Args: map[string]any{"queue": "orders", "ids": []int64{7, 9}, "dry_run": true, "clear_deadline": true}},
		{Op: ops.OpDLQRetry, Why: "retry what this filter selects", Args: map[string]any{"queue": "orders", "kind": "k"}},
	})
	want := []link{
		{"/dlq/selected?id=42&queue=orders_dlq&verb=discard", "First: discards this message"},
		{"/dlq/selected?clear_deadline=true&id=7&id=9&queue=orders&verb=retry", "Retry them without their deadlines"},
		{"/dlq/retry?kind=k&queue=orders", "Retry what this filter selects"},
	}
	if len(got) != len(want) {
		t.Fatalf("links %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("link %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A command the dashboard names for a person to run carries the global
// flags the server was started with; its help line does not need them.
func TestHintCommandsCarryServerFlags(t *testing.T) {
	t.Parallel()
	cmds := hintCommands([]ops.Hint{{Op: ops.OpMigrate, Why: "create the schema"}}, " --config /etc/pgbus.yaml")
	if len(cmds) != 1 || cmds[0].Line != "pgbus migrate --config /etc/pgbus.yaml" || cmds[0].Help != "pgbus migrate --help" {
		t.Fatalf("commands %+v, want pgbus migrate with the server's --config", cmds)
	}
}

// A next step to the summary broken down by a safe payload field links
// the groups page without the field, which the page does not break groups
// down by, and its words promise no breakdown either.
func TestSummaryHintByFieldLinksTheGroups(t *testing.T) {
	t.Parallel()
	got := hintLinks([]ops.Hint{{Op: ops.OpDLQSummary, Why: "groups them by cause", Args: map[string]any{"queue": "orders", "by_field": "tenant"}}})
	if want := (link{"/dlq?queue=orders", "Groups them by cause"}); len(got) != 1 || got[0] != want {
		t.Errorf("links %+v, want %+v", got, want)
	}
}
