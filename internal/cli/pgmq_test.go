package cli_test

import (
	"encoding/json"
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
	if errOut := d.fails(t, 2, "migrate", "--install-pgmq", missing); !strings.Contains(errOut, missing) || !strings.Contains(errOut, "pass the path of PGMQ's pgmq.sql") || strings.Contains(errOut, "pgbus health") {
		t.Fatalf("migrate --install-pgmq with a missing file said %q", errOut)
	}
}

// A queue another PGMQ client made is listed by pgbus queues with its
// messages and the default settings, its DLQ made when a worker starts.
func TestQueuesListsAnotherClientsQueue(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	d := newDB(t)
	if err := pgtest.RunSQL(t, d.url, script+`; SELECT pgmq.create('payments'); SELECT pgmq.send('payments', '{"order": 1}')`); err != nil {
		t.Fatalf("PGMQ's script: %v", err)
	}
	d.ok(t, "migrate")
	table := d.ok(t, "queues")
	if !strings.Contains(table, "payments") {
		t.Fatalf("pgbus queues does not list payments:\n%s", table)
	}
	var stats struct {
		Queues []struct {
			Queue    string `json:"queue"`
			Depth    int64  `json:"depth"`
			Settings struct {
				MaxRetries int `json:"max_retries"`
			} `json:"settings"`
		} `json:"queues"`
	}
	if err := json.Unmarshal([]byte(d.ok(t, "queues", "payments", "--json")), &stats); err != nil {
		t.Fatal(err)
	}
	if len(stats.Queues) != 1 || stats.Queues[0].Queue != "payments" || stats.Queues[0].Depth != 1 || stats.Queues[0].Settings.MaxRetries != 5 {
		t.Fatalf("pgbus queues payments = %+v, want depth 1 and the default max_retries 5", stats)
	}
	d.ok(t, "work", "--queue", "payments", "--handler", "demo", "--until-idle")
	if n := d.count(t, `SELECT count(*) FROM pgmq.list_queues() WHERE queue_name = 'payments_dlq'`); n != 1 {
		t.Fatalf("payments_dlq made by the worker is not among PGMQ's queues")
	}
}
