package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus queue drop and purge while another session holds the queue's
// table say once who holds it and how to end it, that nothing was
// changed, and the same command again as next step.
func TestQueueDropAndPurgeHeldByALock(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "cx")
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
	if _, err := tx.Exec(ctx, `LOCK TABLE pgmq.q_cx IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	end := fmt.Sprintf("pg_terminate_backend(%d)", conn.PgConn().PID())
	for _, args := range [][]string{{"queue", "drop", "cx", "--yes"}, {"queue", "purge", "cx", "--yes", "--json"}} {
		r := pgbus(t, append([]string{"PGBUS_DATABASE_CALL_TIMEOUT=10s"}, d.env...), args...)
		cmd := strings.Join(args, " ")
		if r.code == 0 || strings.Count(r.stderr, end) != 1 || !strings.Contains(r.stderr, "waited 3s for a lock") || !strings.Contains(r.stderr, "nothing was changed") ||
			strings.Contains(r.stderr, "check before calling again") || !strings.Contains(r.stderr, "pgbus queue "+args[1]+" cx --yes") {
			t.Errorf("%s while the table is held: exit %d\nstderr %s; want %s once, the 3s wait, nothing changed and the same command again", cmd, r.code, r.stderr, end)
		}
	}
}
