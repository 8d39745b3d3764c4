package dbopen_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// A worker started as an operator's role, over a DLQ that another client
// made without pgbus's statistics, starts and warns which DLQ lacks what
// and which role's pgbus migrate adds it; the owner's start repairs it and
// says so.
func TestPrepareWarnsOfADLQItMayNotRepair(t *testing.T) {
	ctx := pgtest.Context(t)
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	if err := owner.CreateQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, `DROP STATISTICS pgmq.q_orders_dlq_filter_stats`)
	var ownerRole string
	if err := owner.Pool().QueryRow(ctx, `SELECT current_user::text`).Scan(&ownerRole); err != nil {
		t.Fatal(err)
	}
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role+"; "+
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)

	logs := migratedLogs(t, roleURL)
	for _, want := range []string{"level=WARN", "dlq=orders_dlq", "the planner statistics of its filters",
		"next=\"migrate as role " + ownerRole} {
		if !strings.Contains(logs, want) {
			t.Errorf("the operator's start logged no %q:\n%s", want, logs)
		}
	}
	if logs := migratedLogs(t, url); !strings.Contains(logs, "level=INFO") || !strings.Contains(logs, "dlq=orders_dlq") || strings.Contains(logs, "WARN") {
		t.Errorf("the owner's start logged:\n%s\nwant orders_dlq repaired, no warning", logs)
	}
	if n := pgtest.Int(t, owner, `SELECT count(*) FROM pg_statistic_ext WHERE stxname = 'q_orders_dlq_filter_stats'`); n != 1 {
		t.Fatalf("the DLQ has %d filter statistics after the owner's start, want 1", n)
	}
}

// migratedLogs connects to url as a process that migrates on start does,
// prepares the schema, and returns what it logged.
func migratedLogs(t *testing.T, url string) string {
	t.Helper()
	ctx := pgtest.Context(t)
	var logs pgtest.SyncBuffer
	db, err := dbopen.Connect(ctx, dbopen.Options{URL: url, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Prepare(ctx, true); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	return logs.String()
}
