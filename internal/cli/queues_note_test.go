package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A PGMQ queue another client made under a name pgbus does not read is
// named on a note line after the table, where it was missing without a
// word; the queues pgbus reads are listed as before.
func TestQueuesNotesQueuesItCannotList(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate", "--install-pgmq", pgtest.PGMQScriptPath(t))
	d.ok(t, "queue", "create", "orders")
	var made string
	d.query(t, `SELECT 'made' FROM pgmq.create('Orders')`, &made)
	out := d.ok(t, "queues")
	if !strings.Contains(out, "orders") || !strings.Contains(out, `note: 1 PGMQ queue is not listed: "Orders"`) {
		t.Fatalf("pgbus queues:\n%s\nwant orders listed and a note naming Orders as not listed", out)
	}
}
