package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus health while another session holds a queue's table gives the
// verdict the MCP tool gives, DEGRADED with health_check_slow naming that
// session, where it ended in an error (exit 1): the database answers, and
// a cron job watching for STALLED paged for a lock.
func TestHealthHeldByALockIsAVerdict(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	ctx := pgtest.Context(t)
	conn, err := pgx.Connect(ctx, d.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE pgmq.q_orders IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	pid := conn.PgConn().PID()
	r := pgbus(t, append([]string{"PGBUS_DATABASE_CALL_TIMEOUT=1s"}, d.env...), "health", "--json", "--fail-on", "stalled")
	var h struct {
		Status  string `json:"status"`
		Reasons []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || r.code != 0 {
		t.Fatalf("health while pid %d holds the table: exit %d, %v\nstdout %s\nstderr %s; want a verdict, exit 0", pid, r.code, err, r.stdout, r.stderr)
	}
	if h.Status != "DEGRADED" || len(h.Reasons) != 1 || h.Reasons[0].Code != "health_check_slow" || !strings.Contains(h.Reasons[0].Message, fmt.Sprintf("pg_terminate_backend(%d)", pid)) {
		t.Fatalf("health while pid %d holds the table: %+v; want DEGRADED, health_check_slow naming the session", pid, h)
	}
	// The counts the check could not read are unknown, not 0.
	var fields map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"queues", "backlog", "dead_messages", "workers_running"} {
		if v, ok := fields[k]; ok {
			t.Errorf("health --json while the table is held: %s is %v; want it absent, as the check could not count it", k, v)
		}
	}
	r = pgbus(t, append([]string{"PGBUS_DATABASE_CALL_TIMEOUT=1s"}, d.env...), "health", "--fail-on", "degraded")
	if r.code != 1 || !strings.Contains(r.stdout, "health_check_slow") {
		t.Fatalf("health --fail-on degraded while the table is held: exit %d\n%s%s; want the report and exit 1", r.code, r.stdout, r.stderr)
	}
	if first, _, _ := strings.Cut(r.stdout, "\n"); first != "DEGRADED: counts unknown: the check could not read them" {
		t.Errorf("health while the table is held begins %q; want the verdict with its counts unknown, not 0", first)
	}
}
