package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A discard is undone from the command line: dlq discarded lists the
// messages with the restore to run, dlq restore brings them back with
// their ids, and restoring one again exits 3 saying why.
func TestRestoreUndoesDiscard(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	ids := pgtest.DeadLetterN(t, s, "orders", 2, pgtest.DeadSpec{Kind: "charge", Class: "Timeout"})
	a, b := fmt.Sprint(ids[0]), fmt.Sprint(ids[1])
	d.ok(t, "dlq", "discard", a, b, "--queue", "orders", "--yes")

	out := d.ok(t, "dlq", "discarded", "--queue", "orders")
	want := "next: pgbus dlq restore " + b + " " + a + " --dry-run --queue orders"
	if !strings.Contains(out, "Timeout") || !strings.Contains(out, want) {
		t.Errorf("dlq discarded printed:\n%s\nwant both listed and %q", out, want)
	}
	out = d.ok(t, "dlq", "restore", a, b, "--queue", "orders", "--dry-run")
	if !strings.Contains(out, "would restore 2 discarded messages") || pgtest.Live(t, s, "orders_dlq") != 0 {
		t.Errorf("dlq restore --dry-run printed:\n%s\nand left %d in the DLQ; want 2 would restore, none moved", out, pgtest.Live(t, s, "orders_dlq"))
	}
	var res ops.DLQRestore
	d.json(t, &res, "dlq", "restore", a, b, "--queue", "orders")
	if res.Restored != 2 || pgtest.Live(t, s, "orders_dlq") != 2 {
		t.Fatalf("dlq restore = %+v, DLQ holds %d; want 2 restored", res, pgtest.Live(t, s, "orders_dlq"))
	}
	if n := d.count(t, "SELECT count(*) FROM pgmq.q_orders_dlq WHERE msg_id IN ("+a+", "+b+")"); n != 2 {
		t.Errorf("%d restored messages kept their ids, want 2", n)
	}
	if e := d.fails(t, 3, "dlq", "restore", a, "--queue", "orders"); !strings.Contains(e, "restored already") {
		t.Errorf("restoring again: %s; want it to say restored already", e)
	}
}

// Bad input stops before the database: ids that are not numbers or too
// large, no ids, no queue; an unknown queue is not found.
func TestRestoreRefusesBadInput(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	pgtest.OpenStore(t, d.url) // migrated: an unknown queue is one the schema lacks
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"dlq", "restore", "abc", "--queue", "orders"}, "ids are positive whole numbers"},
		{[]string{"dlq", "restore", "99999999999999999999", "--queue", "orders"}, "is too large: ids go up to 9223372036854775807"},
		{[]string{"dlq", "restore", "--queue", "orders"}, "give the ids"},
		{[]string{"dlq", "restore", "1"}, "--queue is required"},
		{[]string{"dlq", "restore", "1", "--queue", ""}, "--queue"},
		{[]string{"dlq", "discarded"}, "--queue is required"},
		{[]string{"dlq", "discarded", "--queue", "orders", "--limit", "0"}, "--limit 0"},
	} {
		if e := d.fails(t, 2, c.args...); !strings.Contains(e, c.says) {
			t.Errorf("pgbus %s: %s; want it to say %q", strings.Join(c.args, " "), e, c.says)
		}
	}
	if e := d.fails(t, 3, "dlq", "restore", "1", "--queue", "nosuch"); !strings.Contains(e, "nosuch") {
		t.Errorf("restore in an unknown queue: %s; want it named", e)
	}
}

// The messages a handler's rule discarded from a queue, which never reached
// its DLQ, are listed by dlq discarded --by-handler, with the error that
// discarded them and no restore to run; the DLQ's own list has none.
func TestDiscardedByHandlerListsTheQueuesDiscards(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	ids := pgtest.HandlerDiscard(t, s, "orders", 1, pgtest.DeadSpec{Kind: "mail", Class: "http.404", Message: "no such mailbox"})

	out := d.ok(t, "dlq", "discarded", "--queue", "orders", "--by-handler")
	for _, want := range []string{fmt.Sprint(ids[0]), "orders", "mail", "http.404", "no such mailbox", "never reached the DLQ"} {
		if !strings.Contains(out, want) {
			t.Errorf("dlq discarded --by-handler printed:\n%s\nwant %q", out, want)
		}
	}
	if strings.Contains(out, "pgbus dlq restore") {
		t.Errorf("dlq discarded --by-handler printed:\n%s\nwant no restore, which cannot bring them back", out)
	}
	var res ops.DLQDiscarded
	d.json(t, &res, "dlq", "discarded", "--queue", "orders", "--by-handler")
	if len(res.Items) != 1 || res.Items[0].Queue != "orders" || res.Items[0].Reason != ops.ReasonDiscardedByHandler || res.Items[0].Restorable {
		t.Errorf("dlq discarded --by-handler --json = %+v; want the one message of orders, discarded by its handler", res)
	}
	if out := d.ok(t, "dlq", "discarded", "--queue", "orders"); !strings.Contains(out, "no discarded messages match") {
		t.Errorf("dlq discarded printed:\n%s\nwant none: nothing was discarded from the DLQ", out)
	}
	if e := d.fails(t, 2, "dlq", "discarded", "--queue", "orders_dlq", "--by-handler"); !strings.Contains(e, "give its queue, orders") || !strings.Contains(e, "--by-handler lists") {
		t.Errorf("dlq discarded --by-handler of a DLQ: %s; want it refused, naming the queue and --by-handler", e)
	}
}
