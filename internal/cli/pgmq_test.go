package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus first, then PGMQ through pgbus migrate --install-pgmq: the queue
// pgbus made becomes one of PGMQ's, its message kept, and pgbus goes on
// creating queues with pgmq.create.
func TestMigrateInstallPGMQAfterPgbus(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScriptPath(t)
	d := newDB(t)
	d.ok(t, "migrate")
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "send", "orders", `{"order_id": 1}`)

	out := d.ok(t, "migrate", "--install-pgmq", script)
	for _, want := range []string{"installed PGMQ from its script; 2 queues", "PGMQ installed from its SQL script"} {
		if !strings.Contains(out, want) {
			t.Fatalf("migrate --install-pgmq printed %q, want %q", out, want)
		}
	}
	var queues, message string
	d.query(t, `SELECT string_agg(queue_name, ',' ORDER BY queue_name) FROM pgmq.list_queues()`, &queues)
	d.query(t, `SELECT message::text FROM pgmq.read('orders', 30, 1)`, &message)
	if queues != "orders,orders_dlq" || message != `{"order_id": 1}` {
		t.Fatalf("after the install: pgmq.list_queues() = %s, pgmq.read('orders') = %s", queues, message)
	}
	if out := d.ok(t, "migrate", "--install-pgmq", script); !strings.Contains(out, "installed already; the script was not run") {
		t.Fatalf("second migrate --install-pgmq printed %q", out)
	}

	missing := filepath.Join(t.TempDir(), "pgmq.sql")
	if errOut := d.fails(t, 1, "migrate", "--install-pgmq", missing); !strings.Contains(errOut, missing) || !strings.Contains(errOut, "pass the path of PGMQ's pgmq.sql") {
		t.Fatalf("migrate --install-pgmq with a missing file said %q", errOut)
	}
}
